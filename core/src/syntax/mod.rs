//! The tolerant parsers for JSON and DUST, and the tree they share.
//!
//! A parse yields two parallel structures: the data as a [`serde_json::Value`] (exactly the
//! JSON data model, ready for schema validation and queries without a conversion), and a
//! light [`Node`] tree that gives every key and value its byte [`Span`]. Parsing never fails:
//! it returns whatever tree it could recover plus every [`SyntaxError`] it found.
//!
//! Invariants the rest of the core relies on:
//! - every `Node` corresponds to the `Value` at the same place: an `Array` node's items are
//!   the array's elements in order; an `Object` node's members that are not `duplicate` are
//!   the object's entries in order; an `Error` node corresponds to `Value::Null`;
//! - of repeated keys, the first occurrence is kept in the `Value`; later ones are members
//!   with `duplicate: true` and a `duplicate-key` error (reported by the parser);
//! - nesting deeper than [`MAX_DEPTH`] is reported and the deeper part skipped, so nothing
//!   downstream (validation, drop, formatting) recurses without bound.

mod dust;
mod json;
mod lex;

use serde_json::Value;

use crate::diagnostics::DiagnosticCode;
use crate::text::Span;

pub use dust::parse_dust;
pub use json::{parse_json, parse_jsonc};

/// Containers nested deeper than this are a syntax error; their content is skipped.
pub const MAX_DEPTH: usize = 256;

/// The notation of a document.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Lang {
    Json,
    /// JSON with comments and trailing commas (SPEC §23).
    Jsonc,
    Dust,
}

impl Lang {
    /// The notation of a path by its extension alone, if it is a document at all. A store's
    /// `[store] jsonc` globs make some `.json` documents JSONC: `scan::lang_of` decides that.
    pub fn from_path(path: &str) -> Option<Lang> {
        if path.ends_with(".json") {
            Some(Lang::Json)
        } else if path.ends_with(".dust") {
            Some(Lang::Dust)
        } else if path.ends_with(".jsonc") {
            Some(Lang::Jsonc)
        } else {
            None
        }
    }

    /// Its name, which is also the extension of its files and its LSP `languageId`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Json => "json",
            Lang::Jsonc => "jsonc",
            Lang::Dust => "dust",
        }
    }

    /// Whether it is written in JSON's grammar (JSON or JSONC).
    pub fn is_json(self) -> bool {
        matches!(self, Lang::Json | Lang::Jsonc)
    }
}

/// Parse `text` in `lang`.
pub fn parse(text: &str, lang: Lang) -> Parse {
    match lang {
        Lang::Json => parse_json(text),
        Lang::Jsonc => parse_jsonc(text),
        Lang::Dust => parse_dust(text),
    }
}

/// The result of parsing one document.
#[derive(Clone, Debug, PartialEq)]
pub struct Parse {
    /// The data. `Value::Null` when there was no value at all (an empty or unreadable JSON
    /// text); an empty DUST text is the empty object.
    pub value: Value,
    /// The syntax tree; `None` exactly when the text holds no value.
    pub root: Option<Node>,
    /// Whether the root is a DUST top-level object written without braces.
    pub implicit_object: bool,
    /// Comments in source order: DUST's and JSONC's (plain JSON has none: a comment there is
    /// a syntax error).
    pub comments: Vec<Span>,
    /// Syntax errors in source order. Duplicate keys are reported here too.
    pub errors: Vec<SyntaxError>,
}

impl Parse {
    /// Whether the text parsed without any error (duplicate keys included).
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty()
    }
}

/// One key or value's place in the text.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The value's text: from its first to its last byte (quotes and brackets included). For
    /// the implicit DUST top-level object, the span of all its members.
    pub span: Span,
    pub kind: NodeKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum NodeKind {
    Null,
    Bool,
    Number,
    /// A string. In DUST, `quoted` tells whether it was written quoted or as a bareword.
    String {
        quoted: bool,
    },
    Array(Vec<Node>),
    Object(Vec<Member>),
    /// Where a value was expected and none could be read; the `Value` there is `Null`.
    Error,
}

/// A key and its value inside an object.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The key's text, quotes included.
    pub key: Span,
    pub value: Node,
    /// Whether this key repeats an earlier key of the same object (and so is not in the `Value`).
    pub duplicate: bool,
}

/// A problem the parser found; `code` tells whether it is a plain syntax error or a duplicate key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
    pub kind: SyntaxErrorKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    Syntax,
    DuplicateKey,
}

impl SyntaxErrorKind {
    /// The diagnostic code (SPEC §5) a problem of this kind is reported with, everywhere.
    pub fn code(self) -> DiagnosticCode {
        match self {
            SyntaxErrorKind::Syntax => DiagnosticCode::Syntax,
            SyntaxErrorKind::DuplicateKey => DiagnosticCode::DuplicateKey,
        }
    }
}

impl Node {
    /// The members of an object node paired with their keys and values, skipping duplicates.
    /// `value` must be the `Value` at this node's place.
    pub fn entries<'a>(
        &'a self,
        value: &'a Value,
    ) -> impl Iterator<Item = (&'a str, &'a Member, &'a Value)> + 'a {
        let members: &[Member] = match &self.kind {
            NodeKind::Object(members) => members,
            _ => &[],
        };
        let map = value.as_object();
        members
            .iter()
            .filter(|m| !m.duplicate)
            .zip(map.into_iter().flat_map(|m| m.iter()))
            .map(|(member, (key, value))| (key.as_str(), member, value))
    }

    /// The member of an object node with key `key`, and its value.
    pub fn member<'a>(&'a self, value: &'a Value, key: &str) -> Option<(&'a Member, &'a Value)> {
        self.entries(value).find(|(k, _, _)| *k == key).map(|(_, m, v)| (m, v))
    }

    /// The items of an array node, paired with their values.
    pub fn items<'a>(
        &'a self,
        value: &'a Value,
    ) -> impl Iterator<Item = (&'a Node, &'a Value)> + 'a {
        let items: &[Node] = match &self.kind {
            NodeKind::Array(items) => items,
            _ => &[],
        };
        items.iter().zip(value.as_array().into_iter().flat_map(|a| a.iter()))
    }

    /// Item `index` of an array node and its value, in constant time.
    pub fn item<'a>(&'a self, value: &'a Value, index: usize) -> Option<(&'a Node, &'a Value)> {
        match &self.kind {
            NodeKind::Array(items) => Some((items.get(index)?, value.as_array()?.get(index)?)),
            _ => None,
        }
    }

    /// Follow a JSON Pointer's reference tokens (already unescaped) from this node.
    /// Returns the node reached, its value, and the member whose value it is (if any).
    pub fn at_pointer<'a, S: AsRef<str>>(
        &'a self,
        value: &'a Value,
        tokens: &[S],
    ) -> Option<(&'a Node, &'a Value, Option<&'a Member>)> {
        let mut node = self;
        let mut value = value;
        let mut member = None;
        for token in tokens {
            let token = token.as_ref();
            match &node.kind {
                NodeKind::Object(_) => {
                    let (m, v) = node.member(value, token)?;
                    member = Some(m);
                    node = &m.value;
                    value = v;
                }
                NodeKind::Array(_) => {
                    let index: usize = token.parse().ok()?;
                    let (n, v) = node.item(value, index)?;
                    member = None;
                    node = n;
                    value = v;
                }
                _ => return None,
            }
        }
        Some((node, value, member))
    }
}

#[cfg(test)]
mod tests;

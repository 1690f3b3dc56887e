//! Semantic tokens of a DUST or JSON document: keys, strings, barewords, numbers, literals,
//! references (dangling ones marked) and comments, in source order, as lines and columns in the
//! client's encoding; their relative encoding and the edit from one result to the next.
//!
//! Invariants (checked by property tests): tokens are in source order, never overlap, never
//! span a line unless multi-line tokens are asked for, and [`apply_delta`] of [`delta`] of two
//! encodings gives back the newer one. Computed from the parse tree the analysis already
//! holds, so it costs one walk of the tree; nothing here fails on a broken document (an
//! unreadable value has no token).

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::analysis::{Analysis, Document};
use crate::syntax::{Lang, Node, NodeKind};
use crate::text::{Encoding, Span};

/// What a token is. The names are the protocol's standard token types, so that every theme
/// colours them without configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// An object key.
    Key,
    /// A quoted string.
    String,
    /// A number.
    Number,
    /// `true`, `false`, `null`.
    Literal,
    /// A DUST bareword that reads as a string (`book`, `sci-fi`).
    Bareword,
    /// A reference (`@person/x`), or an entity's `id` value (with [`DECLARATION`]).
    Reference,
    /// A comment (DUST `;`; in JSON, the comments the parser reports as errors).
    Comment,
}

impl TokenKind {
    /// Every kind, in legend order: a kind's index here is its number on the wire.
    pub const ALL: [TokenKind; 7] = [
        TokenKind::Key,
        TokenKind::String,
        TokenKind::Number,
        TokenKind::Literal,
        TokenKind::Bareword,
        TokenKind::Reference,
        TokenKind::Comment,
    ];

    /// The token type's name in the legend.
    pub fn name(self) -> &'static str {
        match self {
            TokenKind::Key => "property",
            TokenKind::String => "string",
            TokenKind::Number => "number",
            TokenKind::Literal => "keyword",
            TokenKind::Bareword => "enumMember",
            TokenKind::Reference => "variable",
            TokenKind::Comment => "comment",
        }
    }

    /// The kind's number on the wire (its index in [`TokenKind::ALL`]).
    pub fn index(self) -> u32 {
        TokenKind::ALL.iter().position(|k| *k == self).unwrap_or(0) as u32
    }
}

/// Modifier bit: the `id` value of an entity (where the references lead).
pub const DECLARATION: u32 = 1 << 0;
/// Modifier bit: a reference to an id no entity of the store has.
pub const DANGLING: u32 = 1 << 1;
/// The modifiers' names in the legend, bit `i` named by entry `i`.
pub const MODIFIERS: [&str; 2] = ["declaration", "dangling"];

/// The token types every editor's theme knows (the protocol's predefined ones, 3.17): what a
/// language server of a code file may name its tokens with, and what the editor's legend
/// holds beside the kinds of [`TokenKind`] (a server's other names are not shown).
pub const STANDARD_TYPES: [&str; 23] = [
    "namespace",
    "type",
    "class",
    "enum",
    "interface",
    "struct",
    "typeParameter",
    "parameter",
    "variable",
    "property",
    "enumMember",
    "event",
    "function",
    "method",
    "macro",
    "keyword",
    "modifier",
    "comment",
    "string",
    "number",
    "regexp",
    "operator",
    "decorator",
];

/// The predefined token modifiers, likewise.
pub const STANDARD_MODIFIERS: [&str; 10] = [
    "declaration",
    "definition",
    "readonly",
    "static",
    "deprecated",
    "abstract",
    "async",
    "modification",
    "documentation",
    "defaultLibrary",
];

/// One token as a byte span of the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenSpan {
    pub span: Span,
    pub kind: TokenKind,
    /// [`DECLARATION`] and [`DANGLING`] bits.
    pub modifiers: u32,
}

/// One token as the protocol places it: a zero-based line, a start column and a length, both
/// counted in the client's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemanticToken {
    pub line: u32,
    pub start: u32,
    pub length: u32,
    pub kind: TokenKind,
    pub modifiers: u32,
}

/// The tokens of document `path` overlapping `within` (all of them for `None`), in source order.
pub fn token_spans(analysis: &Analysis, path: &str, within: Option<Span>) -> Vec<TokenSpan> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    let touches = |span: Span| within.is_none_or(|w| overlaps(span, w));
    // Each reference's string start, with whether it leads nowhere; each entity's id value.
    let mut references: HashMap<u32, bool> = HashMap::with_capacity(doc.references.len());
    for r in &doc.references {
        if touches(r.span) {
            references.insert(r.span.start, analysis.entity(&r.target).is_empty());
        }
    }
    let mut ids: HashSet<u32> = HashSet::with_capacity(doc.entities.len());
    for e in &doc.entities {
        if e.id.is_some() && touches(e.id_span) {
            ids.insert(e.id_span.start);
        }
    }
    let mut walk = Walk { within, references, ids, dust: doc.lang == Lang::Dust, out: Vec::new() };
    if let Some(root) = &doc.parse.root {
        walk.node(root, 0);
    }
    let comments = comments(doc);
    merge(walk.out, comments.into_iter().filter(|c| touches(*c)))
}

/// Whether `span` shares a byte with range `w`: a token that only touches a range's edge is
/// not in it (an empty range holds no token).
fn overlaps(span: Span, w: Span) -> bool {
    span.start < w.end && w.start < span.end
}

/// The comments of a document. Plain JSON has none in its grammar; the parser reports each as
/// an error whose span is the comment (`//` to the line's end, `/* ... */`), and those are
/// shown as comments all the same, so a commented JSON file reads as the user wrote it.
fn comments(doc: &Document) -> Vec<Span> {
    match doc.lang {
        Lang::Dust | Lang::Jsonc => doc.parse.comments.clone(),
        Lang::Json => doc
            .parse
            .errors
            .iter()
            .filter(|e| {
                let text = doc.text.get(e.span.range()).unwrap_or("");
                text.starts_with("//") || text.starts_with("/*")
            })
            .map(|e| e.span)
            .collect(),
    }
}

/// The tree's tokens and the comments, both in source order, merged into one sequence.
fn merge(tree: Vec<TokenSpan>, comments: impl Iterator<Item = Span>) -> Vec<TokenSpan> {
    let mut out = Vec::with_capacity(tree.len());
    let mut comments = comments.peekable();
    for token in tree {
        while let Some(c) = comments.next_if(|c| c.start < token.span.start) {
            out.push(TokenSpan { span: c, kind: TokenKind::Comment, modifiers: 0 });
        }
        out.push(token);
    }
    out.extend(comments.map(|c| TokenSpan { span: c, kind: TokenKind::Comment, modifiers: 0 }));
    out
}

struct Walk {
    within: Option<Span>,
    references: HashMap<u32, bool>,
    ids: HashSet<u32>,
    dust: bool,
    out: Vec<TokenSpan>,
}

impl Walk {
    fn touches(&self, span: Span) -> bool {
        self.within.is_none_or(|w| overlaps(span, w))
    }

    fn push(&mut self, span: Span, kind: TokenKind, modifiers: u32) {
        if !span.is_empty() && self.touches(span) {
            self.out.push(TokenSpan { span, kind, modifiers });
        }
    }

    /// The tokens of `node` in source order. The parser bounds nesting (`MAX_DEPTH`), so the
    /// recursion is bounded too.
    fn node(&mut self, node: &Node, depth: usize) {
        if !self.touches(node.span) && depth > 0 {
            return;
        }
        match &node.kind {
            NodeKind::Null | NodeKind::Bool => self.push(node.span, TokenKind::Literal, 0),
            NodeKind::Number => self.push(node.span, TokenKind::Number, 0),
            NodeKind::String { quoted } => {
                let (kind, modifiers) =
                    if let Some(&dangling) = self.references.get(&node.span.start) {
                        (TokenKind::Reference, if dangling { DANGLING } else { 0 })
                    } else if self.ids.contains(&node.span.start) {
                        (TokenKind::Reference, DECLARATION)
                    } else if self.dust && !quoted {
                        (TokenKind::Bareword, 0)
                    } else {
                        (TokenKind::String, 0)
                    };
                self.push(node.span, kind, modifiers);
            }
            NodeKind::Array(items) => {
                for item in items {
                    self.node(item, depth + 1);
                }
            }
            NodeKind::Object(members) => {
                for member in members {
                    self.push(member.key, TokenKind::Key, 0);
                    self.node(&member.value, depth + 1);
                }
            }
            NodeKind::Error => {}
        }
    }
}

/// The tokens of document `path` overlapping `within`, placed in `encoding`. A token that spans
/// lines (a JSON block comment) is cut into one token a line unless `multiline`, since a
/// client that did not say it supports multi-line tokens may not draw them.
pub fn semantic_tokens(
    analysis: &Analysis,
    path: &str,
    within: Option<Span>,
    encoding: Encoding,
    multiline: bool,
) -> Vec<SemanticToken> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    let spans = token_spans(analysis, path, within);
    let mut out = Vec::with_capacity(spans.len());
    for t in spans {
        place(doc, t, encoding, multiline, &mut out);
    }
    out
}

/// `token` placed in lines and columns: one token, or one a line when it spans lines and
/// the client draws single-line tokens only. Line terminators are never part of a piece.
fn place(
    doc: &Document,
    token: TokenSpan,
    encoding: Encoding,
    multiline: bool,
    out: &mut Vec<SemanticToken>,
) {
    let (text, index) = (&*doc.text, &doc.line_index);
    let start = index.position(text, token.span.start, encoding);
    let piece = |line, start, length| SemanticToken {
        line,
        start,
        length,
        kind: token.kind,
        modifiers: token.modifiers,
    };
    let body = &text[token.span.range()];
    // Nearly every token lies on one line: its length is counted from its own text, without
    // a second search of the line index.
    if !body.bytes().any(|b| b == b'\n' || b == b'\r') {
        out.push(piece(start.line, start.column, crate::text::count_units(body, encoding)));
        return;
    }
    let end = index.position(text, token.span.end, encoding);
    if multiline {
        let length = crate::text::count_units(body, encoding);
        out.push(piece(start.line, start.column, length));
        return;
    }
    for line in start.line..=end.line {
        let Some(line_span) = index.line_span(text, line) else { break };
        let from = if line == start.line { start.column } else { 0 };
        let to = if line == end.line {
            end.column
        } else {
            index.position(text, line_span.end, encoding).column
        };
        if to > from {
            out.push(piece(line, from, to - from));
        }
    }
}

/// The protocol's relative encoding: five numbers a token (line delta, start delta from the
/// previous token on the same line or from 0, length, type index, modifier bits).
pub fn encode(tokens: &[SemanticToken]) -> Vec<u32> {
    let mut out = Vec::with_capacity(tokens.len() * 5);
    let (mut line, mut start) = (0u32, 0u32);
    for t in tokens {
        let delta_line = t.line - line;
        let delta_start = if delta_line == 0 { t.start - start } else { t.start };
        out.extend_from_slice(&[delta_line, delta_start, t.length, t.kind.index(), t.modifiers]);
        line = t.line;
        start = t.start;
    }
    out
}

/// Replace `delete` numbers at `start` of an encoding with `data`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokensEdit {
    pub start: u32,
    pub delete: u32,
    pub data: Vec<u32>,
}

/// The edits that turn encoding `old` into `new`: none when they are equal, else one edit
/// covering what lies between their common prefix and common suffix (counted in whole
/// tokens). An edit inside one value changes few tokens, and the relative encoding keeps the
/// tokens after it equal, so the edit stays small.
pub fn delta(old: &[u32], new: &[u32]) -> Vec<TokensEdit> {
    let tokens = |n: usize| n / 5 * 5;
    let prefix = tokens(old.iter().zip(new).take_while(|(a, b)| a == b).count());
    let room = old.len().min(new.len()) - prefix;
    let suffix = tokens(old.iter().rev().zip(new.iter().rev()).take_while(|(a, b)| a == b).count())
        .min(tokens(room));
    if prefix == old.len() && prefix == new.len() {
        return Vec::new();
    }
    vec![TokensEdit {
        start: prefix as u32,
        delete: (old.len() - suffix - prefix) as u32,
        data: new[prefix..new.len() - suffix].to_vec(),
    }]
}

/// `edits` (in increasing, non-overlapping order of `start`) applied to encoding `old`: what a
/// client does with a delta.
pub fn apply_delta(old: &[u32], edits: &[TokensEdit]) -> Vec<u32> {
    let mut out = Vec::with_capacity(old.len());
    let mut at = 0usize;
    for e in edits {
        let start = e.start as usize;
        out.extend_from_slice(&old[at..start]);
        out.extend_from_slice(&e.data);
        at = start + e.delete as usize;
    }
    out.extend_from_slice(&old[at..]);
    out
}

//! The layout of a parsed document with its comments and blank lines attached: a DUST or JSONC
//! parse, laid out as DUST or as JSON (with comments: JSONC).
//!
//! Each comment is attached to one place, decided by where it sits among the entries of the
//! innermost container holding it:
//! - on the line where the previous entry ends: that entry's trailing comment;
//! - on the line of the opening bracket, before any entry: the container's open comment;
//! - before an entry (or between its key and value): a comment line before that entry;
//! - after the last entry: a comment line before the closing bracket.
//!
//! Every comment lands in exactly one place, so none is lost or doubled. A blank line is kept
//! where the source has one or more between two elements of the same container.
//!
//! A comment is written in the notation of the layout: DUST's `;` and JSONC's `//` line
//! comments become each other, and a JSONC `/* */` comment becomes one `;` line per line of
//! its text. One that then spans several lines cannot follow an entry or an opening bracket
//! on its line: it goes on its own lines before the next entry (or before the closing
//! bracket) instead.

use serde_json::Value;

use super::from_value::{self, Spelling};
use super::layout::{Container, Document, Element, Entry, Kind, Tree};
use crate::syntax::{Node, NodeKind, Parse};
use crate::text::{Encoding, LineIndex, Span};

/// The layout of a clean parse of `text` in `spelling`'s notation. `None` when the top-level
/// value is a scalar and the layout is DUST's, which cannot write one.
pub(crate) fn document(text: &str, parse: &Parse, spelling: Spelling) -> Option<Document> {
    let source = Source { text, index: LineIndex::new(text), spelling };
    let mut comments = parse.comments.clone();
    comments.sort_by_key(|c| c.start);
    let Some(root) = &parse.root else {
        return from_value_with_comments(&source, &parse.value, &comments);
    };
    match &parse.value {
        // DUST writes the top-level object without braces, so every comment is inside it; so
        // is every comment of a DUST text's implicit object written as JSON.
        Value::Object(_) if spelling == Spelling::Dust => {
            Some(Document::Object(source.container(root, &parse.value, &comments, None)))
        }
        Value::Object(_) if parse.implicit_object => Some(Document::Bracketed {
            header: Vec::new(),
            root: Tree::Container(source.container(root, &parse.value, &comments, None)),
            trailing: None,
            footer: Vec::new(),
        }),
        Value::Object(_) | Value::Array(_) => {
            let split = comments.partition_point(|c| c.start < root.span.start);
            let (before, rest) = comments.split_at(split);
            let split = rest.partition_point(|c| c.start < root.span.end);
            let (inside, after) = rest.split_at(split);
            let open_line = source.line(root.span.start);
            let container = source.container(root, &parse.value, inside, Some(open_line));
            Some(source.bracketed(root, Tree::Container(container), before, after))
        }
        scalar if spelling == Spelling::Json => {
            let split = comments.partition_point(|c| c.start < root.span.start);
            let (before, after) = comments.split_at(split);
            let tree = from_value::tree(scalar, spelling);
            Some(source.bracketed(root, tree, before, after))
        }
        _ => None,
    }
}

/// The canonical text of a JSONC text that holds no value: its comments, each on its own
/// line(s) as written; nothing for an empty text.
pub(crate) fn comments_only(text: &str, parse: &Parse) -> String {
    let mut comments = parse.comments.clone();
    comments.sort_by_key(|c| c.start);
    let mut out = String::new();
    for comment in comments {
        out.push_str(text.get(comment.range()).unwrap_or_default().trim_end());
        out.push('\n');
    }
    out
}

/// Without a tree (no value was read), the value's canonical layout with every comment after
/// its content.
fn from_value_with_comments(source: &Source, value: &Value, comments: &[Span]) -> Option<Document> {
    let spelling = source.spelling;
    let extra = comments.iter().flat_map(|c| source.comment_lines(*c)).map(Element::Comment);
    match value {
        Value::Object(map) if spelling == Spelling::Dust => {
            Some(Document::Object(from_value::object(map, spelling).with_extra(extra)))
        }
        Value::Object(_) | Value::Array(_) => Some(Document::Bracketed {
            header: Vec::new(),
            root: from_value::tree(value, spelling),
            trailing: None,
            footer: extra.collect(),
        }),
        _ => None,
    }
}

/// The text being formatted and its line starts, to tell which comments share a line.
struct Source<'a> {
    text: &'a str,
    index: LineIndex,
    /// The notation the layout is written in.
    spelling: Spelling,
}

/// One key-value member or array item of a container, with its place in the text.
struct Slot<'a> {
    key: Option<&'a str>,
    node: &'a Node,
    value: &'a Value,
    start: u32,
}

impl Slot<'_> {
    fn end(&self) -> u32 {
        self.node.span.end
    }

    /// Whether the value is a container (in the tree and in the data alike).
    fn is_container(&self) -> bool {
        matches!(
            (&self.node.kind, self.value),
            (NodeKind::Object(_), Value::Object(_)) | (NodeKind::Array(_), Value::Array(_))
        )
    }

    /// Whether `offset` lies inside this slot's value between its brackets.
    fn holds_in_container(&self, offset: u32) -> bool {
        self.is_container() && self.node.span.start < offset && offset < self.node.span.end
    }
}

impl Source<'_> {
    fn line(&self, offset: u32) -> u32 {
        self.index.position(self.text, offset, Encoding::Utf8).line
    }

    /// A comment's text without trailing whitespace, in the layout's notation: one line, or
    /// several for a JSONC block comment written as DUST.
    fn comment_lines(&self, span: Span) -> Vec<String> {
        let text = self.text.get(span.range()).unwrap_or_default().trim_end();
        match (self.spelling, text.as_bytes().first()) {
            (Spelling::Dust, Some(b'/')) => match text.strip_prefix("/*") {
                Some(block) => block_lines(block.strip_suffix("*/").unwrap_or(block)),
                None => vec![format!(";{}", text.strip_prefix("//").unwrap_or(text))],
            },
            (Spelling::Json, Some(b';')) => vec![format!("//{}", &text[1..])],
            _ => vec![text.to_owned()],
        }
    }

    /// The comment as one line, when it can follow something on its line.
    fn comment_line(&self, span: Span) -> Option<String> {
        let mut lines = self.comment_lines(span);
        (lines.len() == 1).then(|| lines.remove(0))
    }

    /// The layout of a top-level value written with its brackets (a DUST array, any JSON
    /// value), given the comments before and after it.
    fn bracketed(&self, root: &Node, tree: Tree, before: &[Span], after: &[Span]) -> Document {
        let close_line = self.line(root.span.end.saturating_sub(1));
        let (trailing, footer) = match after.split_first() {
            Some((first, rest)) if self.line(first.start) == close_line => {
                match self.comment_line(*first) {
                    Some(line) => (Some(line), rest),
                    None => (None, after),
                }
            }
            _ => (None, after),
        };
        Document::Bracketed {
            header: self.loose_lines(0, before, Some(root.span.start)),
            root: tree,
            trailing,
            footer: self.loose_lines(root.span.end, footer, None),
        }
    }

    /// Whether the text between `from` and `to` holds a blank line: a whole line (between two
    /// line breaks) of nothing but whitespace and commas. A line holding a JSON text's opening
    /// bracket is not blank.
    fn blank_between(&self, from: u32, to: u32) -> bool {
        let Some(gap) = self.text.get(from as usize..to as usize) else { return false };
        let parts: Vec<&str> = gap.split('\n').collect();
        let last = parts.len() - 1;
        let lines: Vec<&str> = parts
            .iter()
            .enumerate()
            .map(|(i, part)| if i < last { part.strip_suffix('\r').unwrap_or(part) } else { part })
            .flat_map(|part| part.split('\r'))
            .collect();
        lines.len() > 2
            && lines[1..lines.len() - 1]
                .iter()
                .any(|line| line.trim_matches([' ', '\t', ',']).is_empty())
    }

    /// Comments outside the root array, with the blank lines between them. They lie between
    /// `from` and `to` (the root's `[`, for the comments before it).
    fn loose_lines(&self, from: u32, comments: &[Span], to: Option<u32>) -> Vec<Element> {
        let mut elements = Vec::new();
        let mut prev_end = from;
        for comment in comments {
            if self.blank_between(prev_end, comment.start) {
                elements.push(Element::Blank);
            }
            elements.extend(self.comment_lines(*comment).into_iter().map(Element::Comment));
            prev_end = comment.end;
        }
        if to.is_some_and(|to| !comments.is_empty() && self.blank_between(prev_end, to)) {
            elements.push(Element::Blank);
        }
        elements
    }

    /// The layout of the container `node` (whose value is `value`), given the comments that
    /// lie in its region and the line of its opening bracket (none for the top-level object,
    /// which is written without braces).
    fn container(
        &self,
        node: &Node,
        value: &Value,
        comments: &[Span],
        open_line: Option<u32>,
    ) -> Container {
        let spelling = self.spelling;
        let (kind, slots): (Kind, Vec<Slot>) = match (&node.kind, value) {
            (NodeKind::Object(members), Value::Object(map)) if members.len() == map.len() => (
                Kind::Object,
                node.entries(value)
                    .map(|(key, member, value)| Slot {
                        key: Some(key),
                        node: &member.value,
                        value,
                        start: member.key.start,
                    })
                    .collect(),
            ),
            (NodeKind::Array(items), Value::Array(values)) if items.len() == values.len() => (
                Kind::Array,
                node.items(value)
                    .map(|(node, value)| Slot { key: None, node, value, start: node.span.start })
                    .collect(),
            ),
            // The tree always matches a clean parse's value; should it not, the data wins
            // and the comments follow it.
            _ => {
                let container = match value {
                    Value::Object(map) => from_value::object(map, spelling),
                    Value::Array(items) => from_value::array(items, spelling),
                    _ => Container::new(Kind::Array, None, Vec::new()),
                };
                let lines = comments.iter().flat_map(|c| self.comment_lines(*c));
                return container.with_extra(lines.map(Element::Comment));
            }
        };

        let n = slots.len();
        let mut inner: Vec<Vec<Span>> = vec![Vec::new(); n];
        let mut leading: Vec<Vec<Span>> = vec![Vec::new(); n];
        let mut trailing: Vec<Option<(Span, String)>> = vec![None; n];
        let mut dangling: Vec<Span> = Vec::new();
        let mut open_comment: Option<(Span, String)> = None;
        for &comment in comments {
            // The first slot not yet finished when the comment starts.
            let i = slots.partition_point(|slot| slot.end() <= comment.start);
            let one_line = || self.comment_line(comment);
            if i < n && slots[i].holds_in_container(comment.start) {
                inner[i].push(comment);
            } else if i > 0
                && trailing[i - 1].is_none()
                && self.line(comment.start) == self.line(slots[i - 1].end())
                && let Some(line) = one_line()
            {
                trailing[i - 1] = Some((comment, line));
            } else if i == 0
                && open_comment.is_none()
                && open_line.is_some_and(|line| line == self.line(comment.start))
                && let Some(line) = one_line()
            {
                open_comment = Some((comment, line));
            } else if i < n {
                leading[i].push(comment);
            } else {
                dangling.push(comment);
            }
        }

        let mut elements = Vec::with_capacity(n);
        // Where the text before the first element starts: comments of the top-level object
        // may lie before its first member.
        let region_start = if open_line.is_some() { node.span.start } else { 0 };
        let mut prev_end = open_comment.as_ref().map_or(region_start, |(c, _)| c.end);
        let push_comment = |elements: &mut Vec<Element>, prev_end: &mut u32, c: Span| {
            if self.blank_between(*prev_end, c.start) {
                elements.push(Element::Blank);
            }
            elements.extend(self.comment_lines(c).into_iter().map(Element::Comment));
            *prev_end = c.end;
        };
        for (i, slot) in slots.iter().enumerate() {
            for &comment in &leading[i] {
                push_comment(&mut elements, &mut prev_end, comment);
            }
            if self.blank_between(prev_end, slot.start) {
                elements.push(Element::Blank);
            }
            let value = if slot.is_container() {
                let line = self.line(slot.node.span.start);
                Tree::Container(self.container(slot.node, slot.value, &inner[i], Some(line)))
            } else {
                from_value::tree(slot.value, spelling)
            };
            let trailing = trailing[i].take();
            prev_end = prev_end.max(trailing.as_ref().map_or(slot.end(), |(c, _)| c.end));
            elements.push(Element::Entry(Entry {
                key: slot.key.map(|key| spelling.key(key)),
                value,
                trailing: trailing.map(|(_, line)| line),
            }));
        }
        for &comment in &dangling {
            push_comment(&mut elements, &mut prev_end, comment);
        }
        Container::new(kind, open_comment.map(|(_, line)| line), elements)
    }
}

/// The text inside a `/* */` comment as `;` lines: each line without its indentation and the
/// `*` that often begins a continuation line (and the second star of a `/**` opener); blank
/// first and last lines dropped.
fn block_lines(inner: &str) -> Vec<String> {
    let inner = inner.strip_prefix('*').unwrap_or(inner);
    let lines: Vec<&str> = inner
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let line = line.trim();
            if i > 0 { line.strip_prefix('*').unwrap_or(line).trim() } else { line }
        })
        .collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    let (Some(first), Some(last)) = (first, last) else { return vec![";".to_owned()] };
    lines[first..=last]
        .iter()
        .map(|line| if line.is_empty() { ";".to_owned() } else { format!("; {line}") })
        .collect()
}

//! The layout of a parsed DUST document with its comments and blank lines attached.
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

use serde_json::Value;

use super::from_value;
use super::layout::{Container, Document, Element, Entry, Kind, Text, Tree};
use crate::syntax::{Node, NodeKind, Parse};
use crate::text::{Encoding, LineIndex, Span};

/// The layout of a clean parse of `text`; `None` when the top-level value is a scalar.
pub(crate) fn document(text: &str, parse: &Parse) -> Option<Document> {
    let source = Source { text, index: LineIndex::new(text) };
    let mut comments = parse.comments.clone();
    comments.sort_by_key(|c| c.start);
    let Some(root) = &parse.root else {
        return from_value_with_comments(&source, &parse.value, &comments);
    };
    match &parse.value {
        Value::Object(_) => {
            Some(Document::Object(source.container(root, &parse.value, &comments, None)))
        }
        Value::Array(_) => {
            let split = comments.partition_point(|c| c.start < root.span.start);
            let (before, rest) = comments.split_at(split);
            let split = rest.partition_point(|c| c.start < root.span.end);
            let (inside, after) = rest.split_at(split);
            let open_line = source.line(root.span.start);
            let array = source.container(root, &parse.value, inside, Some(open_line));
            let close_line = source.line(root.span.end.saturating_sub(1));
            let (trailing, footer) = match after.split_first() {
                Some((first, rest)) if source.line(first.start) == close_line => {
                    (Some(source.comment(*first)), rest)
                }
                _ => (None, after),
            };
            Some(Document::Array {
                header: source.loose_lines(0, before, Some(root.span.start)),
                array,
                trailing,
                footer: source.loose_lines(root.span.end, footer, None),
            })
        }
        _ => None,
    }
}

/// Without a tree (no value was read), the value's canonical layout with every comment after
/// its content.
fn from_value_with_comments(source: &Source, value: &Value, comments: &[Span]) -> Option<Document> {
    let extra = comments.iter().map(|c| Element::Comment(source.comment(*c)));
    match value {
        Value::Object(map) => Some(Document::Object(from_value::object(map).with_extra(extra))),
        Value::Array(items) => Some(Document::Array {
            header: Vec::new(),
            array: from_value::array(items),
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

    /// A comment's text without trailing whitespace.
    fn comment(&self, span: Span) -> String {
        self.text.get(span.range()).unwrap_or_default().trim_end().to_owned()
    }

    /// Whether the text between `from` and `to` holds a blank line (two line breaks or more).
    fn blank_between(&self, from: u32, to: u32) -> bool {
        let Some(gap) = self.text.get(from as usize..to as usize) else { return false };
        let bytes = gap.as_bytes();
        let breaks = bytes
            .iter()
            .enumerate()
            .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
            .count();
        breaks >= 2
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
            elements.push(Element::Comment(self.comment(*comment)));
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
                    Value::Object(map) => from_value::object(map),
                    Value::Array(items) => from_value::array(items),
                    _ => Container::new(Kind::Array, None, Vec::new()),
                };
                return container
                    .with_extra(comments.iter().map(|c| Element::Comment(self.comment(*c))));
            }
        };

        let n = slots.len();
        let mut inner: Vec<Vec<Span>> = vec![Vec::new(); n];
        let mut leading: Vec<Vec<Span>> = vec![Vec::new(); n];
        let mut trailing: Vec<Option<Span>> = vec![None; n];
        let mut dangling: Vec<Span> = Vec::new();
        let mut open_comment: Option<Span> = None;
        for &comment in comments {
            // The first slot not yet finished when the comment starts.
            let i = slots.partition_point(|slot| slot.end() <= comment.start);
            if i < n && slots[i].holds_in_container(comment.start) {
                inner[i].push(comment);
            } else if i > 0
                && trailing[i - 1].is_none()
                && self.line(comment.start) == self.line(slots[i - 1].end())
            {
                trailing[i - 1] = Some(comment);
            } else if i == 0
                && open_comment.is_none()
                && open_line.is_some_and(|line| line == self.line(comment.start))
            {
                open_comment = Some(comment);
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
        let mut prev_end = open_comment.map_or(region_start, |c| c.end);
        let push_comment = |elements: &mut Vec<Element>, prev_end: &mut u32, c: Span| {
            if self.blank_between(*prev_end, c.start) {
                elements.push(Element::Blank);
            }
            elements.push(Element::Comment(self.comment(c)));
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
                from_value::tree(slot.value)
            };
            elements.push(Element::Entry(Entry {
                key: slot.key.map(|key| Text::new(super::scalar::key(key))),
                value,
                trailing: trailing[i].map(|c| self.comment(c)),
            }));
            prev_end = prev_end.max(trailing[i].map_or(slot.end(), |c| c.end));
        }
        for &comment in &dangling {
            push_comment(&mut elements, &mut prev_end, comment);
        }
        Container::new(kind, open_comment.map(|c| self.comment(c)), elements)
    }
}

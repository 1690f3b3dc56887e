//! The shape of one document as an editor folds, selects and highlights it: folding ranges
//! (multi-line objects and arrays, groups of comment lines), selection ranges (value → member
//! → container → … → entity → document) and the occurrences of an entity id.

use serde_json::Value;

use super::{Target, target};
use crate::analysis::Document;
use crate::syntax::{Node, NodeKind};
use crate::text::{Encoding, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldKind {
    /// An object or an array.
    Region,
    /// Consecutive lines that hold only a comment.
    Comment,
}

/// One foldable range. Lines are 0-based; `start` and `end` are the byte offsets the fold
/// hides between (after an opening bracket and before its closing one, or a comment group's
/// first and last byte), for clients that fold at characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub start_line: u32,
    pub end_line: u32,
    pub start: u32,
    pub end: u32,
    pub kind: FoldKind,
}

/// The folding ranges of a document in source order of their start.
///
/// With `line_only` (a client that folds whole lines only, LSP's `lineFoldingOnly`), a
/// container's fold ends on the line before its closing bracket, so that the bracket stays
/// visible, and a container that then spans a single line is not foldable. Otherwise a fold
/// runs from its opening to its closing bracket. The implicit top-level DUST object is the
/// whole document and is not a fold.
pub fn folding_ranges(doc: &Document, line_only: bool) -> Vec<Fold> {
    let mut out = Vec::new();
    let line = |offset: u32| doc.line_index.position(&doc.text, offset, Encoding::Utf8).line;
    if let Some(root) = &doc.parse.root {
        let mut stack: Vec<(&Node, bool)> = vec![(root, doc.parse.implicit_object)];
        // Depth is bounded by the parser's MAX_DEPTH; the explicit stack keeps it off the
        // call stack all the same.
        while let Some((node, implicit)) = stack.pop() {
            let children: Vec<&Node> = match &node.kind {
                NodeKind::Object(members) => members.iter().map(|m| &m.value).collect(),
                NodeKind::Array(items) => items.iter().collect(),
                _ => continue,
            };
            if !implicit && node.span.len() >= 2 {
                let (open, close) = (node.span.start, node.span.end - 1);
                let (start_line, close_line) = (line(open), line(close));
                let end_line = if line_only { close_line.saturating_sub(1) } else { close_line };
                if end_line > start_line {
                    out.push(Fold {
                        start_line,
                        end_line,
                        start: open + 1,
                        end: close,
                        kind: FoldKind::Region,
                    });
                }
            }
            stack.extend(children.into_iter().rev().map(|c| (c, false)));
        }
    }
    out.extend(comment_groups(doc, &line));
    out.sort_by_key(|f| (f.start_line, f.end_line));
    out
}

/// Runs of two or more consecutive lines that each hold nothing but a comment.
fn comment_groups(doc: &Document, line: &dyn Fn(u32) -> u32) -> Vec<Fold> {
    let text = doc.text.as_bytes();
    let alone = |c: &Span| {
        text[..c.start as usize]
            .iter()
            .rev()
            .take_while(|b| **b != b'\n')
            .all(|b| *b == b' ' || *b == b'\t')
    };
    let mut out = Vec::new();
    let mut group: Option<(Span, u32, u32)> = None;
    for comment in doc.parse.comments.iter().filter(|c| alone(c)) {
        let at = line(comment.start);
        group = match group {
            Some((first, start_line, last_line)) if at == last_line + 1 => {
                Some((first.cover(*comment), start_line, at))
            }
            previous => {
                out.extend(previous.and_then(comment_fold));
                Some((*comment, at, at))
            }
        };
    }
    out.extend(group.and_then(comment_fold));
    out
}

fn comment_fold((span, start_line, end_line): (Span, u32, u32)) -> Option<Fold> {
    (end_line > start_line).then_some(Fold {
        start_line,
        end_line,
        start: span.start,
        end: span.end,
        kind: FoldKind::Comment,
    })
}

/// For each offset, the spans a selection grows through, innermost first: the key or value
/// under the cursor, its member (key and value), the object or array holding it, and so on
/// out to the entity and the whole document. Each span holds the one before it; none repeats.
pub fn selection_ranges(doc: &Document, offsets: &[u32]) -> Vec<Vec<Span>> {
    offsets.iter().map(|offset| selection_chain(doc, *offset)).collect()
}

fn selection_chain(doc: &Document, offset: u32) -> Vec<Span> {
    let whole = Span::new(0, crate::text::to_u32(doc.text.len()));
    let offset = offset.min(whole.end);
    // Outermost first while descending; reversed at the end.
    let mut outward = vec![whole];
    let push = |span: Span, out: &mut Vec<Span>| {
        let last = *out.last().expect("the document span is first");
        if span != last && last.start <= span.start && span.end <= last.end {
            out.push(span);
        }
    };
    if let Some(root) = &doc.parse.root {
        let mut node = root;
        let mut value: &Value = &doc.parse.value;
        push(root.span, &mut outward);
        // The parser bounds nesting, so this loop ends within `MAX_DEPTH` steps.
        'descend: loop {
            match &node.kind {
                NodeKind::Object(_) => {
                    for (_, member, v) in node.entries(value) {
                        let whole_member = member.key.cover(member.value.span);
                        if !whole_member.contains_inclusive(offset) {
                            continue;
                        }
                        push(whole_member, &mut outward);
                        if member.key.contains_inclusive(offset) {
                            push(member.key, &mut outward);
                            break 'descend;
                        }
                        node = &member.value;
                        value = v;
                        push(node.span, &mut outward);
                        continue 'descend;
                    }
                    break;
                }
                NodeKind::Array(_) => {
                    for (n, v) in node.items(value) {
                        if n.span.contains_inclusive(offset) {
                            node = n;
                            value = v;
                            push(node.span, &mut outward);
                            continue 'descend;
                        }
                    }
                    break;
                }
                _ => break,
            }
        }
    }
    // An entity's span is one of the container spans (the top-level object or an item of the
    // top-level array), so the chain passes through it when the cursor is inside it.
    outward.reverse();
    outward
}

/// Whether an occurrence of an id is its definition or a use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HighlightKind {
    /// An entity's `id` value.
    Definition,
    /// A `@id` reference.
    Reference,
}

/// Every occurrence in this document of the entity id under the cursor (at an entity's `id`
/// value or at a reference): `id` values and references, in source order.
pub fn highlights(doc: &Document, offset: u32) -> Vec<(Span, HighlightKind)> {
    let id = match target(doc, offset) {
        Some(Target::Reference { id, .. } | Target::EntityId { id, .. }) => id,
        _ => return Vec::new(),
    };
    let mut out: Vec<(Span, HighlightKind)> = doc
        .entities
        .iter()
        .filter(|e| e.id.as_deref() == Some(id))
        .map(|e| (e.id_span, HighlightKind::Definition))
        .chain(
            doc.references
                .iter()
                .filter(|r| r.target == id)
                .map(|r| (r.span, HighlightKind::Reference)),
        )
        .collect();
    out.sort_by_key(|(span, _)| (span.start, span.end));
    out
}

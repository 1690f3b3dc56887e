//! Taking an edit of a large document by re-parsing only the top-level item it falls in.
//!
//! A clean JSON document whose top level is an array (an entity array) is edited in place
//! when the edit stays inside one item: that item's text is parsed alone, the other items keep
//! their nodes and values (those after it move by the edit's change of length), and what is
//! known per item (its entity, references and local problems) is replaced for that item only.
//! The result equals a fresh parse of the new text; `core/tests/analysis.rs` (`splice`)
//! checks that on random edits. Anything else (DUST, syntax errors, an edit across items) is re-parsed whole
//! by the caller.

use std::sync::Arc;

use crate::model::{self, Entity, Reference};
use crate::syntax::{self, Lang, MAX_DEPTH, Node, NodeKind};
use crate::text::Span;
use crate::text::diff::{common_prefix, common_suffix};

use super::{Document, entity_problems, version_of};

/// What a splice changed, for updating the indexes and the validation of the document.
#[derive(Debug)]
pub(super) struct Splice {
    /// The edited item's span before the edit.
    pub(super) old: Span,
    /// The new length of the text minus the old.
    pub(super) delta: i64,
    /// The entity the item held before the edit and its index in the entity list, which the
    /// edited item keeps (a splice never makes an entity of a non-entity or the reverse).
    pub(super) entity: Option<(usize, Entity)>,
    /// The item's references before the edit.
    pub(super) old_refs: Vec<Reference>,
}

impl Document {
    /// Take `shared` as this document's content by re-parsing one top-level item, and keep it
    /// as the document's text without copying it. Returns `None`, with the document untouched,
    /// when the edit cannot be taken that way.
    pub(super) fn splice(&mut self, shared: &Arc<String>) -> Option<Splice> {
        let new = shared.as_str();
        if self.lang != Lang::Json
            || !self.parse.is_clean()
            || self.text.len() as u64 != self.byte_len
            || new.len() > u32::MAX as usize / 2
        {
            return None;
        }
        let old = self.text.as_str();
        let root = self.parse.root.as_ref()?;
        let NodeKind::Array(items) = &root.kind else { return None };

        // The changed region of the old text, [start, old_end).
        let start = common_prefix(old.as_bytes(), new.as_bytes());
        let suffix =
            common_suffix(old.as_bytes(), new.as_bytes()).min(old.len().min(new.len()) - start);
        let old_end = old.len() - suffix;
        // The first item ending at or after the region's end must also start before it.
        let i = items.partition_point(|n| (n.span.end as usize) < old_end);
        let item = items.get(i)?;
        if item.span.start as usize > start {
            return None;
        }
        let old_span = item.span;
        let delta = new.len() as i64 - old.len() as i64;
        let new_end = usize::try_from(i64::from(old_span.end) + delta).ok()?;
        let text = new.get(old_span.start as usize..new_end)?;
        // Alone, a leading BOM would be skipped; inside the array it is an error.
        if text.starts_with('\u{feff}') {
            return None;
        }
        let mut parse = syntax::parse(text, Lang::Json);
        if !parse.is_clean() {
            return None;
        }
        let mut node = parse.root.take()?;
        // Alone the item nests one level less deep than inside the array.
        if depth(&node) + 1 >= MAX_DEPTH {
            return None;
        }
        shift(&mut node, i64::from(old_span.start));
        let value = parse.value;

        // Entity indexes stay put only if the item is an entity before and after, or neither.
        let first_after = self.entities.partition_point(|e| e.index.is_some_and(|x| x < i));
        let held =
            self.entities.get(first_after).filter(|e| e.index == Some(i)).map(|_| first_after);
        let new_entity = model::item_entity(&node, &value, i);
        if held.is_some() != new_entity.is_some() {
            return None;
        }
        // A view's local problems read its whole entity (views.rs): parse the document again.
        let is_view = |e: &model::Entity| e.ty == crate::builtin::VIEW;
        if new_entity.as_ref().is_some_and(is_view)
            || held.is_some_and(|j| is_view(&self.entities[j]))
        {
            return None;
        }
        let new_refs = match held {
            Some(j) => model::entity_references(&node, &value, j),
            None => Vec::new(),
        };

        // Every check passed: change the document.
        let entity = match (held, new_entity) {
            (Some(j), Some(e)) => Some((j, std::mem::replace(&mut self.entities[j], e))),
            _ => None,
        };
        let after = held.map_or(first_after, |j| j + 1);
        for entity in &mut self.entities[after..] {
            shift_entity(entity, delta);
        }
        let old_refs =
            splice_by_span(&mut self.references, old_span, delta, new_refs, |r| &mut r.span);
        let problems = held.map_or_else(Vec::new, |j| entity_problems(&self.entities[j]));
        splice_by_span(&mut self.local, old_span, delta, problems, |d| &mut d.span);

        let root = self.parse.root.as_mut().expect("checked above");
        root.span.end = moved(root.span.end, delta);
        let NodeKind::Array(items) = &mut root.kind else { unreachable!("checked above") };
        for later in &mut items[i + 1..] {
            shift(later, delta);
        }
        items[i] = node;
        if let Some(values) = self.parse.value.as_array_mut() {
            values[i] = value;
        }
        self.line_index.splice(new, start, old_end, delta);
        self.version = version_of(new.as_bytes());
        self.byte_len = new.len() as u64;
        // The new text as it came: an editor's buffer shares it.
        self.text = shared.clone();
        Some(Splice { old: old_span, delta, entity, old_refs })
    }
}

/// Replace the entries of `list` that start inside `old` by `new`, and move the ones after it
/// by `delta`. Returns the entries replaced. `list` holds each item's entries together, items
/// in order (references, local problems, validation diagnostics); the only diagnostics with
/// related locations, duplicate ids, are computed on demand and never spliced.
pub(super) fn splice_by_span<T>(
    list: &mut Vec<T>,
    old: Span,
    delta: i64,
    new: Vec<T>,
    span: impl Fn(&mut T) -> &mut Span,
) -> Vec<T> {
    let from = list.iter_mut().position(|x| span(x).start >= old.start).unwrap_or(list.len());
    let to = list[from..]
        .iter_mut()
        .position(|x| span(x).start >= old.end)
        .map_or(list.len(), |n| from + n);
    for x in &mut list[to..] {
        let s = span(x);
        *s = moved_span(*s, delta);
    }
    list.splice(from..to, new).collect()
}

/// The deepest nesting of containers in `node`, itself included.
fn depth(node: &Node) -> usize {
    match &node.kind {
        NodeKind::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        NodeKind::Object(members) => 1 + members.iter().map(|m| depth(&m.value)).max().unwrap_or(0),
        _ => 0,
    }
}

/// Depth is bounded by the parser's `MAX_DEPTH`, so recursion is safe here.
fn shift(node: &mut Node, by: i64) {
    node.span = moved_span(node.span, by);
    match &mut node.kind {
        NodeKind::Array(items) => items.iter_mut().for_each(|n| shift(n, by)),
        NodeKind::Object(members) => {
            for member in members {
                member.key = moved_span(member.key, by);
                shift(&mut member.value, by);
            }
        }
        _ => {}
    }
}

fn shift_entity(entity: &mut Entity, by: i64) {
    entity.span = moved_span(entity.span, by);
    entity.id_span = moved_span(entity.id_span, by);
    entity.type_span = moved_span(entity.type_span, by);
    entity.anchor = moved_span(entity.anchor, by);
}

fn moved_span(span: Span, by: i64) -> Span {
    Span::new(moved(span.start, by), moved(span.end, by))
}

/// Offsets stay within the new text, which `splice` keeps under `u32::MAX`.
fn moved(offset: u32, by: i64) -> u32 {
    u32::try_from(i64::from(offset) + by).expect("a moved offset stays inside the new text")
}

#[cfg(test)]
mod tests {
    use super::super::Document;
    use crate::syntax::Lang;
    use std::sync::Arc;

    const TEXT: &str = "[\n  {\"id\": \"x/1\", \"type\": \"a\", \"n\": 1},\n  {\"id\": \"x/2\", \"type\": \"a\", \"n\": 2}\n]\n";

    fn splice(new: &str) -> Option<(u32, u32, i64, Option<usize>)> {
        let mut doc = Document::new("list.json".to_owned(), Lang::Json, TEXT.into());
        doc.splice(&Arc::new(new.to_owned()))
            .map(|s| (s.old.start, s.old.end, s.delta, s.entity.map(|e| e.0)))
    }

    #[test]
    fn an_edit_inside_one_item_is_spliced() {
        assert_eq!(splice(&TEXT.replace("\"n\": 2", "\"n\": 20")), Some((42, 76, 1, Some(1))));
        assert_eq!(splice(&TEXT.replace("\"n\": 1", "\"n\": \"one\"")), Some((4, 38, 4, Some(0))));
        // A space after an item's closing brace still belongs to it.
        assert_eq!(splice(&TEXT.replacen('}', "} ", 1)), Some((4, 38, 1, Some(0))));
    }

    #[test]
    fn other_edits_are_left_to_a_full_parse() {
        // Across two items, a new item, a syntax error, a non-entity made of an entity.
        assert_eq!(splice(&TEXT.replace("1},\n  {\"id\": \"x/2\"", "1}, {\"id\": \"x/3\"")), None);
        assert_eq!(splice(&TEXT.replacen('}', "}, 3", 1)), None);
        assert_eq!(splice(&TEXT.replace("\"n\": 2", "\"n\": ")), None);
        assert_eq!(splice(&TEXT.replace("\"id\": \"x/1\", ", "")), None);
        // DUST is always parsed whole.
        let mut dust = Document::new("a.dust".to_owned(), Lang::Dust, b"id x/1\ntype a\n".to_vec());
        assert!(dust.splice(&Arc::new("id x/1\ntype b\n".to_owned())).is_none());
    }
}

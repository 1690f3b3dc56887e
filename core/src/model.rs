//! The entity model (SPEC §3): which values are entities, what an id may be, what a reference is.

use serde_json::Value;

use crate::syntax::{Node, NodeKind, Parse};
use crate::text::Span;

/// The longest id allowed.
pub const MAX_ID_LEN: usize = 200;

/// Why `id` is not a valid entity id, or `None` if it is.
pub fn id_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        return Some("an id must not be empty".to_owned());
    }
    if id.chars().count() > MAX_ID_LEN {
        return Some(format!(
            "an id is at most {MAX_ID_LEN} characters, this one has {}",
            id.chars().count()
        ));
    }
    if let Some(bad) = id.chars().find(|c| !is_id_char(*c)) {
        return Some(format!(
            "'{}' is not allowed in an id; use letters, digits and . _ ~ : / -",
            bad.escape_default()
        ));
    }
    if id.starts_with('/') || id.ends_with('/') {
        return Some("an id must not start or end with '/'".to_owned());
    }
    None
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | ':' | '/' | '-')
}

/// The target id of a reference string `"@<id>"`; `None` for any other string, including
/// the escaped literal `"@@..."`.
pub fn reference_target(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('@')?;
    if rest.starts_with('@') { None } else { Some(rest) }
}

/// One entity found in a document.
#[derive(Clone, Debug, PartialEq)]
pub struct Entity {
    /// The `id` if it is a string (valid or not).
    pub id: Option<String>,
    /// The `type`: always a string, or the object is no entity.
    pub ty: String,
    /// The entity object's span.
    pub span: Span,
    /// Span of the `id` value.
    pub id_span: Span,
    /// Span of the `type` value.
    pub type_span: Span,
    /// The span a diagnostic about the whole object should use: the object's `{`, or for the
    /// implicit DUST top-level object (which has no brace) the `type` key, else its first key.
    pub anchor: Span,
    /// Index in the document's top-level array, `None` when the document is the entity.
    pub index: Option<usize>,
}

/// A reference string inside an entity.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// The referenced id (without the `@`).
    pub target: String,
    /// Span of the string value, quotes included.
    pub span: Span,
    /// Index of the entity (in the document's entity list) holding the reference.
    pub entity: usize,
}

/// The entities of a parsed document: the top-level object if it is one, else each object
/// of a top-level array. An object is an entity when its `type` is a string and it has an
/// `id` field (SPEC §23): an `id` that is not a valid id string (`"id": 12`) is still
/// diagnosed as the entity's (`invalid-id`), but an object with only an `id` (a fixture, a
/// dashboard's `"id": 1`) or only a `type` (most JSON Schemas, many configuration files) is
/// data of some other kind, not Stardust's.
pub fn entities(parse: &Parse) -> Vec<Entity> {
    let Some(root) = &parse.root else { return Vec::new() };
    match &root.kind {
        NodeKind::Object(_) => {
            let anchor = if parse.implicit_object {
                root.member(&parse.value, "type")
                    .map(|(m, _)| m.key)
                    .or_else(|| match &root.kind {
                        NodeKind::Object(members) => members.first().map(|m| m.key),
                        _ => None,
                    })
                    .unwrap_or(Span::empty(root.span.start))
            } else {
                brace(root.span)
            };
            entity(root, &parse.value, anchor, None).into_iter().collect()
        }
        NodeKind::Array(_) => root
            .items(&parse.value)
            .enumerate()
            .filter(|(_, (node, _))| matches!(node.kind, NodeKind::Object(_)))
            .filter_map(|(i, (node, value))| entity(node, value, brace(node.span), Some(i)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The entity held by item `index` of a top-level array, if that item is one.
pub(crate) fn item_entity(node: &Node, value: &Value, index: usize) -> Option<Entity> {
    match node.kind {
        NodeKind::Object(_) => entity(node, value, brace(node.span), Some(index)),
        _ => None,
    }
}

/// The references inside one entity's tree, in source order; `entity` is its index in the
/// document's entity list.
pub(crate) fn entity_references(node: &Node, value: &Value, entity: usize) -> Vec<Reference> {
    let mut out = Vec::new();
    collect_refs(node, value, entity, &mut out);
    out
}

fn brace(span: Span) -> Span {
    Span::new(span.start, (span.start + 1).min(span.end))
}

fn entity(node: &Node, value: &Value, anchor: Span, index: Option<usize>) -> Option<Entity> {
    let (id_member, id) = node.member(value, "id")?;
    let (type_member, ty) = node.member(value, "type")?;
    Some(Entity {
        id: id.as_str().map(str::to_owned),
        ty: ty.as_str()?.to_owned(),
        span: node.span,
        id_span: id_member.value.span,
        type_span: type_member.value.span,
        anchor,
        index,
    })
}

/// Every reference inside the entities of a document, in source order.
pub fn references(parse: &Parse, entities: &[Entity]) -> Vec<Reference> {
    let Some(root) = &parse.root else { return Vec::new() };
    let mut out = Vec::new();
    for (i, entity) in entities.iter().enumerate() {
        let found = match entity.index {
            None => Some((root, &parse.value)),
            Some(index) => root.item(&parse.value, index),
        };
        if let Some((node, value)) = found {
            collect_refs(node, value, i, &mut out);
        }
    }
    out
}

/// Depth is bounded by the parser's `MAX_DEPTH`, so recursion is safe here.
fn collect_refs(node: &Node, value: &Value, entity: usize, out: &mut Vec<Reference>) {
    match &node.kind {
        NodeKind::String { .. } => {
            if let Some(target) = value.as_str().and_then(reference_target) {
                out.push(Reference { target: target.to_owned(), span: node.span, entity });
            }
        }
        NodeKind::Array(_) => {
            for (n, v) in node.items(value) {
                collect_refs(n, v, entity, out);
            }
        }
        NodeKind::Object(_) => {
            for (_, m, v) in node.entries(value) {
                collect_refs(&m.value, v, entity, out);
            }
        }
        _ => {}
    }
}

/// A value's kind as messages name it: "a string", "an array", "null".
pub fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Levenshtein distance over characters, for "did you mean" suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_rule() {
        assert_eq!(id_problem("book/dune"), None);
        assert_eq!(id_problem("a.b_c~d:e-f/G9"), None);
        assert!(id_problem("").is_some());
        assert!(id_problem("/book").is_some());
        assert!(id_problem("book/").is_some());
        assert_eq!(
            id_problem("book dune").as_deref(),
            Some("' ' is not allowed in an id; use letters, digits and . _ ~ : / -")
        );
        assert!(id_problem("é").is_some());
        assert_eq!(id_problem(&"a".repeat(200)), None);
        assert!(id_problem(&"a".repeat(201)).is_some());
    }

    #[test]
    fn reference_strings() {
        assert_eq!(reference_target("@book/dune"), Some("book/dune"));
        assert_eq!(reference_target("@@handle"), None);
        assert_eq!(reference_target("book/dune"), None);
        assert_eq!(reference_target("@"), Some(""));
    }

    #[test]
    fn distance() {
        assert_eq!(edit_distance("person/frank-herbrt", "person/frank-herbert"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}

//! What is under the cursor: the innermost key or value at a byte offset of a document.

use serde_json::Value;

use crate::analysis::Document;
use crate::syntax::{Node, NodeKind};
use crate::text::Span;

/// The key or value at an offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Cursor<'a> {
    /// The JSON Pointer tokens of the value from the document's root.
    pub pointer: Vec<String>,
    /// The tokens from the enclosing entity (empty when the cursor is on the entity itself or
    /// outside every entity).
    pub entity_pointer: Vec<String>,
    /// The entity (index into `Document::entities`) the cursor is in.
    pub entity: Option<usize>,
    /// Whether the cursor is on the key of the member at `pointer` rather than on its value.
    pub on_key: bool,
    /// The span of the key or value under the cursor.
    pub span: Span,
    pub node: &'a Node,
    pub value: &'a Value,
}

/// The innermost key or value at `offset` (a cursor just after a token still touches it).
pub fn locate(doc: &Document, offset: u32) -> Option<Cursor<'_>> {
    let root = doc.parse.root.as_ref()?;
    if !root.span.contains_inclusive(offset) {
        return None;
    }
    let mut pointer = Vec::new();
    let mut node = root;
    let mut value = &doc.parse.value;
    let mut on_key = None;
    // The parser bounds nesting, so this loop ends within `MAX_DEPTH` steps.
    'descend: loop {
        match &node.kind {
            NodeKind::Object(_) => {
                for (key, member, v) in node.entries(value) {
                    if member.key.contains_inclusive(offset) {
                        pointer.push(key.to_owned());
                        on_key = Some(member.key);
                        node = &member.value;
                        value = v;
                        break 'descend;
                    }
                    if member.value.span.contains_inclusive(offset) {
                        pointer.push(key.to_owned());
                        node = &member.value;
                        value = v;
                        continue 'descend;
                    }
                }
                break;
            }
            NodeKind::Array(_) => {
                for (i, (n, v)) in node.items(value).enumerate() {
                    if n.span.contains_inclusive(offset) {
                        pointer.push(i.to_string());
                        node = n;
                        value = v;
                        continue 'descend;
                    }
                }
                break;
            }
            _ => break,
        }
    }
    let (entity, entity_pointer) = match doc.entities.iter().position(|e| e.index.is_none()) {
        Some(i) => (Some(i), pointer.clone()),
        None => {
            let index: Option<usize> = pointer.first().and_then(|t| t.parse().ok());
            match index.and_then(|index| doc.entities.iter().position(|e| e.index == Some(index))) {
                Some(i) => (Some(i), pointer[1..].to_vec()),
                None => (None, Vec::new()),
            }
        }
    };
    Some(Cursor {
        span: on_key.unwrap_or(node.span),
        on_key: on_key.is_some(),
        pointer,
        entity_pointer,
        entity,
        node,
        value,
    })
}

//! Document symbols (entities by id with their members) and workspace symbols (entities by
//! id and title, matched fuzzily).

use serde_json::Value;

use super::{FileSpan, entity_title};
use crate::analysis::{Analysis, Document};
use crate::syntax::{Node, NodeKind};
use crate::text::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Entity,
    Object,
    Array,
    String,
    Number,
    Boolean,
    Null,
}

/// One entry of a document's outline.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    pub name: String,
    /// The entity's type, or a short form of a scalar value.
    pub detail: Option<String>,
    pub kind: SymbolKind,
    /// Everything the symbol covers.
    pub span: Span,
    /// What to select when the symbol is picked: an entity's id value, a member's key.
    pub selection: Span,
    pub children: Vec<Symbol>,
}

/// The outline of a document: its entities by id, each with its members; for a document
/// without entities, the members of its top-level object.
pub fn document_symbols(doc: &Document) -> Vec<Symbol> {
    let Some(root) = &doc.parse.root else { return Vec::new() };
    if doc.entities.is_empty() {
        return members(root, &doc.parse.value);
    }
    doc.entities
        .iter()
        .enumerate()
        .filter_map(|(i, entity)| {
            let (node, value) = doc.entity_node(i)?;
            Some(Symbol {
                name: entity.id.clone().unwrap_or_else(|| "(entity without an id)".to_owned()),
                detail: Some(entity.ty.clone()),
                kind: SymbolKind::Entity,
                span: entity.span,
                selection: entity.id_span,
                children: members(node, value),
            })
        })
        .collect()
}

/// Depth is bounded by the parser's `MAX_DEPTH`, so recursion is safe here.
fn members(node: &Node, value: &Value) -> Vec<Symbol> {
    match &node.kind {
        NodeKind::Object(_) => node
            .entries(value)
            .map(|(key, member, v)| {
                symbol(
                    key.to_owned(),
                    member.key.cover(member.value.span),
                    member.key,
                    &member.value,
                    v,
                )
            })
            .collect(),
        NodeKind::Array(_) => node
            .items(value)
            .enumerate()
            .map(|(i, (n, v))| symbol(i.to_string(), n.span, n.span, n, v))
            .collect(),
        _ => Vec::new(),
    }
}

fn symbol(name: String, span: Span, selection: Span, node: &Node, value: &Value) -> Symbol {
    let kind = match value {
        Value::Object(_) => SymbolKind::Object,
        Value::Array(_) => SymbolKind::Array,
        Value::String(_) => SymbolKind::String,
        Value::Number(_) => SymbolKind::Number,
        Value::Bool(_) => SymbolKind::Boolean,
        Value::Null => SymbolKind::Null,
    };
    let detail = match value {
        Value::String(s) => Some(short(s)),
        Value::Number(_) | Value::Bool(_) | Value::Null => Some(value.to_string()),
        _ => None,
    };
    Symbol { name, detail, kind, span, selection, children: members(node, value) }
}

fn short(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// An entity found by a workspace symbol search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceSymbol {
    pub id: String,
    pub ty: String,
    pub title: Option<String>,
    /// The entity's `id` value.
    pub location: FileSpan,
}

/// Entities whose id or title matches `query` fuzzily (its characters in order, ignoring
/// case), best first: contiguous and early matches beat scattered ones, ids beat titles. At
/// most `limit` results; an empty query lists entities by id.
pub fn workspace_symbols(analysis: &Analysis, query: &str, limit: usize) -> Vec<WorkspaceSymbol> {
    let query: Vec<char> =
        query.chars().flat_map(char::to_lowercase).filter(|c| !c.is_whitespace()).collect();
    let mut found: Vec<(u32, WorkspaceSymbol)> = Vec::new();
    for doc in analysis.documents() {
        for (i, entity) in doc.entities.iter().enumerate() {
            let Some(id) = &entity.id else { continue };
            let title = doc.entity_node(i).and_then(|(_, v)| entity_title(v)).map(str::to_owned);
            let by_id = fuzzy_score(&query, id);
            let by_title = title.as_deref().and_then(|t| fuzzy_score(&query, t)).map(|s| s + 1);
            let Some(score) = by_id.into_iter().chain(by_title).min() else { continue };
            found.push((
                score,
                WorkspaceSymbol {
                    id: id.clone(),
                    ty: entity.ty.clone(),
                    title,
                    location: FileSpan { path: doc.path.clone(), span: entity.id_span },
                },
            ));
        }
    }
    found.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.id.cmp(&b.1.id))
            .then_with(|| a.1.location.cmp(&b.1.location))
    });
    found.into_iter().take(limit).map(|(_, s)| s).collect()
}

/// Lower is better; `None` when `query` is not a subsequence of `text`. The score counts the
/// characters skipped before and between the matched ones, so contiguous and early matches win.
pub(crate) fn fuzzy_score(query: &[char], text: &str) -> Option<u32> {
    let mut score = 0u32;
    let mut chars = text.chars().flat_map(char::to_lowercase);
    for q in query {
        loop {
            let c = chars.next()?;
            if c == *q {
                break;
            }
            score = score.saturating_add(1);
        }
    }
    Some(score)
}

//! Code lenses: the count of references on each entity's `id` (resolved when the editor shows
//! it), and "run" on a query document (SPEC §8).

use serde_json::{Value, json};

use super::FileSpan;
use crate::analysis::{Analysis, Document};
use crate::query::Query;
use crate::text::Span;

/// The command that runs a query document (SPEC §7).
pub const RUN_QUERY: &str = "stardust.query.execute";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LensKind {
    /// The references to entity `id`, counted by [`references_lens`].
    References { id: String },
    /// Run this document as a query.
    RunQuery,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lens {
    pub span: Span,
    pub kind: LensKind,
}

/// The lenses of document `path`: one on each entity's `id` value; on a query document one at
/// its start.
pub fn code_lenses(analysis: &Analysis, path: &str) -> Vec<Lens> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    let mut out: Vec<Lens> = doc
        .entities
        .iter()
        .filter_map(|e| {
            Some(Lens { span: e.id_span, kind: LensKind::References { id: e.id.clone()? } })
        })
        .collect();
    if is_query_document(doc) {
        let start = doc.parse.root.as_ref().map_or(0, |r| r.span.start);
        out.push(Lens { span: Span::empty(start), kind: LensKind::RunQuery });
    }
    out.sort_by_key(|l| (l.span.start, l.span.end));
    out
}

/// A query document holds no entity, and its top-level value is an object with `find` that
/// reads as a query (SPEC §8). One with a mistake gets no lens until it reads again.
pub fn is_query_document(doc: &Document) -> bool {
    doc.entities.is_empty()
        && doc.parse.value.get("find").is_some()
        && Query::from_json(&doc.parse.value).is_ok()
}

/// A references lens, resolved: its title and the references it opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferencesLens {
    pub title: String,
    pub references: Vec<FileSpan>,
}

/// The references to `id` across the store, in path and source order, with the lens title
/// ("no references", "1 reference", "3 references").
pub fn references_lens(analysis: &Analysis, id: &str) -> ReferencesLens {
    let mut references = Vec::new();
    for path in analysis.referrers(id) {
        let Some(doc) = analysis.document(path) else { continue };
        references.extend(
            doc.references
                .iter()
                .filter(|r| r.target == id)
                .map(|r| FileSpan { path: doc.path.clone(), span: r.span }),
        );
    }
    let title = match references.len() {
        0 => "no references".to_owned(),
        1 => "1 reference".to_owned(),
        n => format!("{n} references"),
    };
    ReferencesLens { title, references }
}

/// The run lens's title, command and arguments: the registry's query command with the
/// document's current text as the query, so that an unsaved buffer runs as shown.
pub fn run_query_command(doc: &Document) -> (String, &'static str, Value) {
    ("▶ run query".to_owned(), RUN_QUERY, json!({"document": &*doc.text}))
}

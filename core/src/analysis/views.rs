//! Views as the analysis sees them (SPEC §19): which entities are views, and their
//! diagnostics. A view's query is read with the query reader (`qlang`), so a bad query is a
//! diagnostic at its range with the reader's message; its path must stay inside the store,
//! off the private folders and off every stored document; two views may not claim one path.
//!
//! What a document says alone (the query, the path's shape) is local to the document; what
//! depends on the store (a stored document at the path, another view claiming it) is
//! computed from the snapshot's [`Views`], built once per snapshot on first use.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Analysis, Document};
use crate::builtin;
use crate::diagnostics::{Diagnostic, DiagnosticCode, Related};
use crate::qlang::Query;
use crate::text::Span;

/// One view entity of a snapshot, as written (unchecked: its diagnostics say what is wrong).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDef {
    pub id: String,
    /// The document holding it.
    pub doc: String,
    /// The entity's index in the document's entity list.
    pub entity: usize,
    /// `path` when it is a string.
    pub path: Option<String>,
    pub path_span: Option<Span>,
    /// `format` when it is a string; `None` means the default, `json`.
    pub format: Option<String>,
    /// The `query` value, if present.
    pub query: Option<Value>,
}

impl ViewDef {
    /// The format the result is rendered in.
    pub fn format(&self) -> &str {
        self.format.as_deref().unwrap_or("json")
    }
}

/// Every view of a snapshot, by id order, and which views claim each path.
#[derive(Debug, Default)]
pub struct Views {
    pub list: Vec<ViewDef>,
    /// Indexes into `list` of the views claiming each path.
    by_path: BTreeMap<String, Vec<usize>>,
}

impl Views {
    fn build(analysis: &Analysis) -> Views {
        Views::of(analysis.documents().flat_map(|doc| defs(doc)).collect())
    }

    /// The views of `analysis`, made from these (a snapshot's before the documents at
    /// `changed` changed): the changed documents' views replace what they held, the others
    /// are kept. Costs the changed documents and the views, not the store's documents.
    pub(super) fn carry<'a>(
        &self,
        analysis: &Analysis,
        changed: impl IntoIterator<Item = &'a str>,
    ) -> Views {
        let changed: std::collections::BTreeSet<&str> = changed.into_iter().collect();
        let mut list: Vec<ViewDef> =
            self.list.iter().filter(|def| !changed.contains(def.doc.as_str())).cloned().collect();
        for path in changed {
            if let Some(doc) = analysis.docs.get(path) {
                list.extend(defs(doc));
            }
        }
        Views::of(list)
    }

    fn of(mut list: Vec<ViewDef>) -> Views {
        list.sort_by(|a, b| a.id.cmp(&b.id).then(a.doc.cmp(&b.doc)));
        let mut by_path: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, def) in list.iter().enumerate() {
            if let Some(path) = &def.path {
                by_path.entry(path.clone()).or_default().push(i);
            }
        }
        Views { list, by_path }
    }

    /// The views claiming `path`, by id.
    pub fn claiming(&self, path: &str) -> impl Iterator<Item = &ViewDef> {
        self.by_path.get(path).into_iter().flatten().map(|&i| &self.list[i])
    }

    pub fn get(&self, id: &str) -> Option<&ViewDef> {
        self.list.iter().find(|def| def.id == id)
    }
}

impl Analysis {
    /// The views of this snapshot, found on first use.
    pub fn views(&self) -> std::sync::Arc<Views> {
        self.derived(Views::build)
    }

    /// The view whose result the mount shows at `path`, if one may: among the views claiming
    /// it whose path is usable, the one with the smallest id.
    pub fn view_at(&self, path: &str) -> Option<ViewDef> {
        let views = self.views();
        let def = views.claiming(path).find(|def| self.view_path_usable(def))?;
        Some(def.clone())
    }

    /// Whether a view's path may show its result: well-formed and no stored document's.
    pub fn view_path_usable(&self, def: &ViewDef) -> bool {
        def.path.as_deref().is_some_and(|path| {
            builtin::view_path_problem(path).is_none() && self.document_in_the_way(path).is_none()
        })
    }

    /// A stored document at `path` or at a folder above it.
    fn document_in_the_way(&self, path: &str) -> Option<String> {
        let mut prefix = path;
        loop {
            if self.docs.contains_key(prefix) {
                return Some(prefix.to_owned());
            }
            prefix = &prefix[..prefix.rfind('/')?];
        }
    }

    /// The diagnostics of `doc`'s views that depend on the rest of the store.
    pub(super) fn view_problems(&self, doc: &Document) -> Vec<Diagnostic> {
        if !doc.entities.iter().any(|e| e.ty == builtin::VIEW) {
            return Vec::new();
        }
        let views = self.views();
        let mut out = Vec::new();
        for def in defs(doc) {
            let (Some(path), Some(span)) = (&def.path, def.path_span) else { continue };
            if builtin::view_path_problem(path).is_some() {
                continue;
            }
            if let Some(stored) = self.document_in_the_way(path) {
                let what = if stored == *path {
                    format!("the view path '{path}' is the path of a stored document")
                } else {
                    format!("the view path '{path}' is inside '{stored}', a stored document")
                };
                out.push(
                    Diagnostic::new(
                        DiagnosticCode::ViewPath,
                        span,
                        format!("{what}; choose a path no document has"),
                    )
                    .with_data(json!({"id": def.id, "path": path})),
                );
            }
            let others: Vec<&ViewDef> = views
                .claiming(path)
                .filter(|other| !(other.doc == def.doc && other.entity == def.entity))
                .collect();
            if others.is_empty() {
                continue;
            }
            let related = others
                .iter()
                .filter_map(|other| {
                    Some(Related {
                        path: other.doc.clone(),
                        span: other.path_span?,
                        message: format!("'{}' also claims '{path}'", other.id),
                    })
                })
                .collect();
            let names: Vec<String> = others.iter().map(|o| format!("'{}'", o.id)).collect();
            out.push(
                Diagnostic::new(
                    DiagnosticCode::DuplicateViewPath,
                    span,
                    format!(
                        "the view path '{path}' is also claimed by {}; give each view its own path",
                        names.join(", ")
                    ),
                )
                .with_related(related)
                .with_data(json!({"id": def.id, "path": path})),
            );
        }
        out
    }
}

/// The view entities of one document.
fn defs(doc: &Document) -> Vec<ViewDef> {
    let mut out = Vec::new();
    for (i, entity) in doc.entities.iter().enumerate() {
        if entity.ty != builtin::VIEW {
            continue;
        }
        let Some(id) = &entity.id else { continue };
        let Some((node, value)) = doc.entity_node(i) else { continue };
        let path = node.member(value, "path");
        let format = value.get("format").and_then(Value::as_str).map(str::to_owned);
        out.push(ViewDef {
            id: id.clone(),
            doc: doc.path.clone(),
            entity: i,
            path: path.and_then(|(_, v)| v.as_str()).map(str::to_owned),
            path_span: path.map(|(m, _)| m.value.span),
            format,
            query: value.get("query").cloned(),
        });
    }
    out
}

/// What a document's views say wrong on their own: an unreadable query, a path that leaves
/// the store.
pub(super) fn local_problems(doc: &Document) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, entity) in doc.entities.iter().enumerate() {
        if entity.ty != builtin::VIEW {
            continue;
        }
        let Some((node, value)) = doc.entity_node(i) else { continue };
        let id = entity.id.as_deref().unwrap_or_default();
        if let Some((member, query)) = node.member(value, "query")
            && let Err((span, message)) = Query::read_in(query, &member.value)
        {
            out.push(
                Diagnostic::new(DiagnosticCode::InvalidQuery, span, message)
                    .with_data(json!({"id": id})),
            );
        }
        if let Some((member, Value::String(path))) = node.member(value, "path")
            && let Some(problem) = builtin::view_path_problem(path)
        {
            out.push(
                Diagnostic::new(DiagnosticCode::ViewPath, member.value.span, problem)
                    .with_data(json!({"id": id, "path": path})),
            );
        }
    }
    out
}

impl Analysis {
    /// The documents holding views that claim a path a view of a changed document claims,
    /// before or after the change: their `duplicate-view-path` can appear or go. Only
    /// changes of documents holding views pay for it.
    pub(super) fn views_affected_by(
        &self,
        before: &Analysis,
        changed: &[String],
        out: &mut std::collections::BTreeSet<String>,
    ) {
        let holds_views = |a: &Analysis, path: &str| {
            a.docs.get(path).is_some_and(|doc| doc.entities.iter().any(|e| e.ty == builtin::VIEW))
        };
        if !changed.iter().any(|p| holds_views(self, p) || holds_views(before, p)) {
            return;
        }
        let (now, then) = (self.views(), before.views());
        let mut paths = Vec::new();
        for views in [&now, &then] {
            for def in &views.list {
                if changed.contains(&def.doc) {
                    paths.extend(def.path.clone());
                }
            }
        }
        for path in paths {
            for views in [&now, &then] {
                out.extend(views.claiming(&path).map(|def| def.doc.clone()));
            }
        }
    }
}

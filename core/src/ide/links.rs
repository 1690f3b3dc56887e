//! What a document points at: links (a reference to its target entity, `$schema` and a
//! schema's `$ref`s to the schema document) and inlay hints (a reference's target title after
//! it, with the details an editor asks for later).

use serde_json::Value;

use super::{FileSpan, entity_summary, entity_title, id_locations};
use crate::analysis::{Analysis, Document};
use crate::syntax::Node;
use crate::text::Span;

/// Where a link leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkTarget {
    /// A place in a document of the store.
    Store(FileSpan),
    /// A web address the document names (a JSON Schema meta-schema), never fetched by us.
    Url(String),
}

/// A span of the document that leads somewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub span: Span,
    pub target: LinkTarget,
    /// What following the link does, in a few words.
    pub tooltip: String,
}

/// The links of document `path`, in source order: every reference whose target exists (to the
/// target's `id` value; the first one of a duplicate id), the `$schema` value (to the store's
/// copy of the schema it names by path or URI, or the meta-schema's address), and in a schema
/// every `$ref` that names a schema of the store by path or URI (to the place its subschema or
/// JSON Pointer fragment names, else the document's start). Dangling references, and
/// `$schema`/`$ref`s that name nothing in the store, get no link.
pub fn document_links(analysis: &Analysis, path: &str) -> Vec<Link> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    let mut out = Vec::new();
    for r in &doc.references {
        if let Some(target) = id_locations(analysis, &r.target).into_iter().next() {
            out.push(Link {
                span: r.span,
                target: LinkTarget::Store(target),
                tooltip: format!("open {}", r.target),
            });
        }
    }
    if let Some(link) = schema_link(analysis, doc) {
        out.push(link);
    }
    if analysis.is_schema(path)
        && let Some(root) = &doc.parse.root
    {
        schema_refs(analysis, doc, root, &doc.parse.value, &mut out);
    }
    out.sort_by_key(|l| (l.span.start, l.span.end));
    out.dedup_by_key(|l| l.span);
    out
}

fn schema_link(analysis: &Analysis, doc: &Document) -> Option<Link> {
    let root = doc.parse.root.as_ref()?;
    let (member, value) = root.member(&doc.parse.value, "$schema")?;
    let written = value.as_str()?;
    if let Some((uri, span)) = doc.named_schema() {
        let target = store_target(analysis, uri)?;
        return Some(Link {
            span,
            tooltip: format!("open the schema {}", target.path),
            target: LinkTarget::Store(target),
        });
    }
    let meta = ["http://json-schema.org/", "https://json-schema.org/"];
    meta.iter().any(|p| written.starts_with(p)).then(|| Link {
        span: member.value.span,
        target: LinkTarget::Url(written.to_owned()),
        tooltip: "open the JSON Schema meta-schema".to_owned(),
    })
}

/// Every `$ref` (and `$dynamicRef`, `$recursiveRef`) of a schema document that names a schema
/// of the store, by path or by URI, each resolved against the base in force where it stands.
fn schema_refs(
    analysis: &Analysis,
    doc: &Document,
    root: &Node,
    value: &Value,
    out: &mut Vec<Link>,
) {
    for (pointer, keyword, uri) in crate::schema::references(&doc.path, value) {
        if keyword == "$schema" {
            continue;
        }
        let (Some((node, written, _)), Some(target)) =
            (root.at_pointer(value, &pointer), store_target(analysis, &uri))
        else {
            continue;
        };
        out.push(Link {
            span: node.span,
            tooltip: format!("open {}", written.as_str().unwrap_or(&uri)),
            target: LinkTarget::Store(target),
        });
    }
}

/// The place of the store a resolved schema URI names: its document (by path, `[[schema]]
/// url` or `$id`), at the value its subschema or JSON Pointer fragment names (else the
/// document's start).
fn store_target(analysis: &Analysis, uri: &str) -> Option<FileSpan> {
    let (path, tokens) = analysis.schema_at(uri)?;
    let target = analysis.document(&path)?;
    let span = (!tokens.is_empty())
        .then(|| {
            let root = target.parse.root.as_ref()?;
            let (node, _, member) = root.at_pointer(&target.parse.value, &tokens)?;
            Some(member.map_or(node.span, |m| m.key))
        })
        .flatten()
        .unwrap_or(Span::empty(0));
    Some(FileSpan { path, span })
}

/// A hint shown after a reference: its target's title.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlayHint {
    /// Where the hint stands: just after the reference.
    pub offset: u32,
    pub label: String,
    /// The referenced id, for [`inlay_hint_details`].
    pub id: String,
}

/// After each reference of document `path` that starts inside `range`, its target entity's
/// title (else its name). References whose target is missing or untitled get no hint.
pub fn inlay_hints(analysis: &Analysis, path: &str, range: Span) -> Vec<InlayHint> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    doc.references
        .iter()
        .filter(|r| range.contains_inclusive(r.span.start))
        .filter_map(|r| {
            let loc = analysis.entity(&r.target).first()?;
            let (_, value) = analysis.document(&loc.path)?.entity_node(loc.index)?;
            Some(InlayHint {
                offset: r.span.end,
                label: entity_title(value)?.to_owned(),
                id: r.target.clone(),
            })
        })
        .collect()
}

/// What a hint's details show when the editor asks for them (lazily): the target's summary
/// (Markdown) and the place of its `id` value; `None` when the entity is gone.
pub fn inlay_hint_details(analysis: &Analysis, id: &str) -> Option<(String, FileSpan)> {
    let target = id_locations(analysis, id).into_iter().next()?;
    Some((entity_summary(analysis, id), target))
}

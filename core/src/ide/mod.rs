//! Editor features over an [`Analysis`]: hover, definition, references, document and
//! workspace symbols. Protocol-free: byte offsets in, store paths and byte spans out; the
//! fronts convert positions and render the results. [`Buffers`]: an editor's open buffers
//! overlaid on the store, analysed once per (generation, seq).
//!
//! Every feature works on a partial tree, so it answers while a document is half-typed, and
//! none fails: "nothing under the cursor" is an empty answer.

mod actions;
mod address;
mod buffers;
mod completion;
mod cursor;
mod describe;
mod format_range;
mod lenses;
mod links;
mod structure;
mod symbols;
mod tokens;

#[cfg(test)]
mod structure_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tokens;

use serde_json::Value;

use crate::analysis::{Analysis, Document};
use crate::model;
use crate::text::Span;

pub use actions::{Action, ActionKind, code_actions, convert, rename, rename_target};
pub use address::{
    Resolved, Root, Roots, entity_at, entity_place, file_uri, mount_store, position_offset,
    store_path, uri_path,
};
pub use buffers::{Buffer, Buffers, Edit, Edited, Opened, Overlay};
pub use completion::{CompletionItem, CompletionKind, completion};
pub use cursor::{Cursor, locate};
pub use describe::describe_type;
pub use format_range::{align_values, format_range};
pub use lenses::{
    Lens, LensKind, RUN_QUERY, ReferencesLens, code_lenses, is_query_document, references_lens,
    run_query_command,
};
pub use links::{InlayHint, Link, LinkTarget, document_links, inlay_hint_details, inlay_hints};
pub use structure::{Fold, FoldKind, HighlightKind, folding_ranges, highlights, selection_ranges};
pub use symbols::{Symbol, SymbolKind, WorkspaceSymbol, document_symbols, workspace_symbols};
pub use tokens::{
    DANGLING, DECLARATION, MODIFIERS, STANDARD_MODIFIERS, STANDARD_TYPES, SemanticToken, TokenKind,
    TokenSpan, TokensEdit, apply_delta, delta, encode, semantic_tokens, token_spans,
};

/// A range in one document of the store.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileSpan {
    /// Store-relative path.
    pub path: String,
    pub span: Span,
}

/// What hovering shows: Markdown, and the span it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hover {
    pub span: Span,
    pub markdown: String,
}

/// What the cursor designates, once the syntax under it is understood.
enum Target<'a> {
    /// A reference string naming `id`.
    Reference { id: &'a str, span: Span },
    /// The `id` value of an entity.
    EntityId { id: &'a str, span: Span },
    /// The `type` value of an entity.
    EntityType { ty: &'a str, span: Span },
    /// Any other key or value, with its JSON Pointer inside its entity and the entity's type.
    Member { ty: &'a str, pointer: Vec<String>, span: Span },
}

fn target<'a>(doc: &'a Document, offset: u32) -> Option<Target<'a>> {
    let cursor = locate(doc, offset)?;
    let entity = cursor.entity.and_then(|i| doc.entities.get(i));
    if !cursor.on_key
        && let Some(id) = cursor.value.as_str().and_then(model::reference_target)
    {
        return Some(Target::Reference { id, span: cursor.span });
    }
    let entity = entity?;
    let top_level = cursor.entity_pointer.len() == 1;
    if top_level && !cursor.on_key {
        match cursor.entity_pointer[0].as_str() {
            "id" => return Some(Target::EntityId { id: entity.id.as_deref()?, span: cursor.span }),
            "type" => {
                return Some(Target::EntityType { ty: entity.ty.as_str(), span: cursor.span });
            }
            _ => {}
        }
    }
    if cursor.entity_pointer.is_empty() {
        return None;
    }
    Some(Target::Member {
        ty: entity.ty.as_str(),
        pointer: cursor.entity_pointer,
        span: cursor.span,
    })
}

/// What to show for the key or value at `offset` of document `path`: the schema's title,
/// description and type; for a reference, the target entity's summary.
pub fn hover(analysis: &Analysis, path: &str, offset: u32) -> Option<Hover> {
    let doc = analysis.document(path)?;
    match target(doc, offset)? {
        Target::Reference { id, span } => {
            Some(Hover { span, markdown: entity_summary(analysis, id) })
        }
        Target::EntityId { id, span } => {
            Some(Hover { span, markdown: entity_summary(analysis, id) })
        }
        Target::EntityType { ty, span } => {
            let (schema_path, _) = analysis.type_schema(ty)?;
            let schema = &analysis.document(&schema_path)?.parse.value;
            let mut markdown = describe(schema, &format!("type `{ty}`"));
            markdown.push_str(&format!("\n\nSchema: `{schema_path}`"));
            Some(Hover { span, markdown })
        }
        Target::Member { ty, pointer, span } => {
            let (schema_path, _) = analysis.type_schema(ty)?;
            let root = &analysis.document(&schema_path)?.parse.value;
            let schema = schema_at(root, &pointer)?;
            let name = format!("`{}`", pointer.join("/"));
            Some(Hover { span, markdown: describe(schema, &name) })
        }
    }
}

/// Where the reference or `type` at `offset` leads: the target entity's `id` value (several
/// places for a duplicate id), or the type's schema document.
pub fn definition(analysis: &Analysis, path: &str, offset: u32) -> Vec<FileSpan> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    match target(doc, offset) {
        Some(Target::Reference { id, .. }) => id_locations(analysis, id),
        Some(Target::EntityType { ty, .. }) => match analysis.type_schema(ty) {
            Some((schema_path, _)) if analysis.document(&schema_path).is_some() => {
                vec![FileSpan { path: schema_path, span: Span::empty(0) }]
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Every reference to the entity whose id or reference is at `offset`, in path and source
/// order; with `include_declaration`, the entity's own `id` values first.
pub fn references(
    analysis: &Analysis,
    path: &str,
    offset: u32,
    include_declaration: bool,
) -> Vec<FileSpan> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    let id = match target(doc, offset) {
        Some(Target::Reference { id, .. } | Target::EntityId { id, .. }) => id.to_owned(),
        _ => return Vec::new(),
    };
    let mut out = if include_declaration { id_locations(analysis, &id) } else { Vec::new() };
    for doc in analysis.documents() {
        out.extend(
            doc.references
                .iter()
                .filter(|r| r.target == id)
                .map(|r| FileSpan { path: doc.path.clone(), span: r.span }),
        );
    }
    out
}

/// The `id` values of the entities with `id`, in path order.
fn id_locations(analysis: &Analysis, id: &str) -> Vec<FileSpan> {
    let mut out: Vec<FileSpan> = analysis
        .entity(id)
        .iter()
        .filter_map(|loc| {
            let entity = analysis.document(&loc.path)?.entities.get(loc.index)?;
            Some(FileSpan { path: loc.path.to_string(), span: entity.id_span })
        })
        .collect();
    out.sort();
    out
}

/// The name people know an entity by: its `title`, else its `name`.
pub(crate) fn entity_title(value: &Value) -> Option<&str> {
    value.get("title").or_else(|| value.get("name")).and_then(Value::as_str)
}

/// Id, type, title and path of entity `id`, or why there is none.
fn entity_summary(analysis: &Analysis, id: &str) -> String {
    let locs = analysis.entity(id);
    let Some(loc) = locs.first() else {
        return format!("**@{id}**: no entity has this id");
    };
    let mut out = format!("**{id}**");
    if let Some(ty) = analysis.type_of(id) {
        out.push_str(&format!(" ({ty})"));
    }
    let value =
        analysis.document(&loc.path).and_then(|doc| doc.entity_node(loc.index)).map(|(_, v)| v);
    if let Some(title) = value.and_then(entity_title) {
        out.push_str(&format!("\n\n{title}"));
    }
    let paths: Vec<String> = locs.iter().map(|l| format!("`{}`", l.path)).collect();
    out.push_str(&format!("\n\n{}", paths.join(", ")));
    if locs.len() > 1 {
        out.push_str(" (duplicate id)");
    }
    out
}

/// Title, description and type of a schema, under a heading naming what it describes.
fn describe(schema: &Value, name: &str) -> String {
    let mut out = match schema.get("title").and_then(Value::as_str) {
        Some(title) => format!("**{title}** ({name})"),
        None => format!("**{name}**"),
    };
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        out.push_str(&format!("\n\n{description}"));
    }
    let mut facts = Vec::new();
    if let Some(ty) = schema.get("type") {
        facts.push(format!("type: {}", compact(ty)));
    }
    if let Some(value) = schema.get("const") {
        facts.push(format!("always {}", compact(value)));
    }
    if let Some(values) = schema.get("enum") {
        facts.push(format!("one of {}", compact(values)));
    }
    if let Some(target) = schema.get("x-stardust-ref") {
        facts.push(format!("a reference to {}", compact(target)));
    }
    if !facts.is_empty() {
        out.push_str(&format!("\n\n{}", facts.join("; ")));
    }
    out
}

fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => format!("`{s}`"),
        Value::Array(items) => items.iter().map(compact).collect::<Vec<_>>().join(", "),
        other => format!("`{other}`"),
    }
}

/// The subschema describing the value at `pointer` inside an instance of `root`: through
/// `properties`, `items`, `prefixItems`, `additionalProperties` and local `$ref`s.
fn schema_at<'a>(root: &'a Value, pointer: &[String]) -> Option<&'a Value> {
    let mut schema = resolve(root, root);
    for token in pointer {
        let next = schema
            .get("properties")
            .and_then(|p| p.get(token))
            .or_else(|| {
                let index: usize = token.parse().ok()?;
                schema.get("prefixItems").and_then(|p| p.get(index)).or_else(|| schema.get("items"))
            })
            .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))?;
        schema = resolve(root, next);
    }
    Some(schema)
}

/// Follow local `$ref`s (`#/...`), at most a few times so that a cycle cannot loop.
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..8 {
        let Some(target) =
            schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#'))
        else {
            break;
        };
        let tokens: Vec<String> =
            target.split('/').skip(1).map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
        let Some(found) = tokens.iter().try_fold(root, |v, t| v.get(t.as_str())) else { break };
        schema = found;
    }
    schema
}

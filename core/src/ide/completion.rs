//! Completion: schema property names (as snippets), enum and const values, and `@` ids of
//! the entity types a reference may name. Works on the tolerant parser's partial tree.

use serde_json::Value;

use super::cursor::locate;
use super::{entity_title, resolve, schema_at};
use crate::analysis::{Analysis, Document};
use crate::model;
use crate::syntax::{Lang, NodeKind};
use crate::text::Span;

/// At most this many ids are offered for a reference; the client filters as the user types.
const MAX_IDS: usize = 2000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Property,
    Value,
    Reference,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionItem {
    pub label: String,
    pub kind: CompletionKind,
    /// A short fact: the property's type, the reference's entity type.
    pub detail: Option<String>,
    /// Markdown: the property's description, the entity's title.
    pub documentation: Option<String>,
    /// The text replacing `replace`; an LSP snippet (`$1`, `$0`) when `snippet` is set.
    pub insert: String,
    pub snippet: bool,
    /// What the insertion replaces: the partial key or value under the cursor.
    pub replace: Span,
}

/// What may be written at `offset` of document `path`.
pub fn completion(analysis: &Analysis, path: &str, offset: u32) -> Vec<CompletionItem> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    if offset as usize > doc.text.len() {
        return Vec::new();
    }
    let Some(cursor) = locate(doc, offset) else {
        // Past the last member of a DUST top level (a new line at the end): a new key.
        if doc.parse.implicit_object && doc.entities.first().is_some_and(|e| e.index.is_none()) {
            let Some(root) = schema_of(analysis, doc, 0) else { return Vec::new() };
            if let Some(node) = &doc.parse.root
                && let Some(key) = pending_key(doc, node, &doc.parse.value, offset)
            {
                return value_items(analysis, doc, root, &[key], "", Span::empty(offset));
            }
            let keys = object_keys(&doc.parse.value);
            return schema_of(analysis, doc, 0)
                .map(|root| properties(doc, root, &[], &keys, Span::empty(offset), false))
                .unwrap_or_default();
        }
        return Vec::new();
    };
    let Some(i) = cursor.entity else { return Vec::new() };
    let Some(root) = schema_of(analysis, doc, i) else { return Vec::new() };
    // A half-typed member (a key whose value is missing) reads as a key being written.
    let key_without_value = !cursor.on_key && matches!(cursor.node.kind, NodeKind::Error);
    if cursor.on_key || key_without_value {
        let mut object = cursor.entity_pointer.clone();
        object.pop();
        let replace = if cursor.on_key { cursor.span } else { Span::empty(offset) };
        let keep_value = cursor.on_key && !matches!(cursor.node.kind, NodeKind::Error);
        let Some((_, parent)) = cursor.pointer.split_last() else { return Vec::new() };
        let keys = doc
            .parse
            .root
            .as_ref()
            .and_then(|r| r.at_pointer(&doc.parse.value, parent))
            .map(|(_, v, _)| object_keys(v))
            .unwrap_or_default();
        // The key being edited is offered again; the object's other keys are not.
        let editing = if cursor.on_key { cursor.pointer.last().cloned() } else { None };
        let keys: Vec<String> = keys.into_iter().filter(|k| Some(k) != editing.as_ref()).collect();
        return properties(doc, root, &object, &keys, replace, keep_value);
    }
    let inside_braces =
        offset > cursor.node.span.start || doc.parse.implicit_object && cursor.pointer.is_empty();
    if matches!(cursor.node.kind, NodeKind::Object(_)) && inside_braces {
        if let Some(key) = pending_key(doc, cursor.node, cursor.value, offset) {
            let mut pointer = cursor.entity_pointer.clone();
            pointer.push(key);
            return value_items(analysis, doc, root, &pointer, "", Span::empty(offset));
        }
        // Inside an object but on no member: a new key goes here.
        return properties(
            doc,
            root,
            &cursor.entity_pointer,
            &object_keys(cursor.value),
            Span::empty(offset),
            false,
        );
    }
    let replace =
        if matches!(cursor.node.kind, NodeKind::Error) { Span::empty(offset) } else { cursor.span };
    let typed = cursor.value.as_str().unwrap_or("");
    value_items(analysis, doc, root, &cursor.entity_pointer, typed, replace)
}

/// The values that may go at `pointer` of the entity, where `typed` has been written so far.
fn value_items(
    analysis: &Analysis,
    doc: &Document,
    root: &Value,
    pointer: &[String],
    typed: &str,
    replace: Span,
) -> Vec<CompletionItem> {
    // A value the schema does not describe may still be a reference being typed.
    let schema = schema_at(root, pointer).unwrap_or(&Value::Bool(true));
    let mut out = values(doc.lang, root, schema, replace);
    if let Some(targets) = ref_targets(schema).or_else(|| typed.starts_with('@').then(Vec::new)) {
        out.extend(references(analysis, doc.lang, &targets, replace));
    }
    out
}

/// The key of a member of the object `node` whose value is missing and which the cursor
/// follows with only blanks (or JSON's `:`) in between: its value is being written.
fn pending_key(
    doc: &Document,
    node: &crate::syntax::Node,
    value: &Value,
    offset: u32,
) -> Option<String> {
    let NodeKind::Object(members) = &node.kind else { return None };
    let member = members.iter().rev().find(|m| m.key.end <= offset)?;
    if !matches!(member.value.kind, NodeKind::Error) || member.duplicate {
        return None;
    }
    let between = doc.text.get(member.key.end as usize..offset as usize)?;
    if !between.chars().all(|c| matches!(c, ' ' | '\t' | ':')) {
        return None;
    }
    node.entries(value).find(|(_, m, _)| m.key == member.key).map(|(k, _, _)| k.to_owned())
}

fn object_keys(value: &Value) -> Vec<String> {
    value.as_object().into_iter().flat_map(|m| m.keys().cloned()).collect()
}

/// The schema document of the type of entity `i` of `doc`.
fn schema_of<'a>(analysis: &'a Analysis, doc: &Document, i: usize) -> Option<&'a Value> {
    let ty = doc.entities.get(i)?.ty.as_str();
    let (schema_path, _) = analysis.type_schema(ty)?;
    analysis.document(&schema_path).map(|d| &d.parse.value)
}

/// The properties of the object schema at `object` not yet in `present`, in schema order.
fn properties(
    doc: &Document,
    root: &Value,
    object: &[String],
    present: &[String],
    replace: Span,
    keep_value: bool,
) -> Vec<CompletionItem> {
    let Some(schema) = schema_at(root, object) else { return Vec::new() };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    props
        .iter()
        .filter(|(name, _)| !present.iter().any(|p| p == *name))
        .map(|(name, prop)| {
            let prop = resolve(root, prop);
            let ty = prop.get("type").and_then(Value::as_str);
            let key = match doc.lang {
                Lang::Json | Lang::Jsonc => serde_json::to_string(name).unwrap_or_default(),
                Lang::Dust => crate::format::dust_key(name),
            };
            let (insert, snippet) = if keep_value {
                (key, false)
            } else {
                let value = match (ty, doc.lang) {
                    (Some("object"), _) => "{$1}",
                    (Some("array"), _) => "[$1]",
                    (Some("string"), Lang::Json | Lang::Jsonc) => "\"$1\"",
                    _ => "$1",
                };
                let separator = if doc.lang.is_json() { ": " } else { " " };
                (format!("{}{separator}{value}", escape_snippet(&key)), true)
            };
            let mut detail = ty.map(str::to_owned);
            if required.contains(&name.as_str()) {
                detail = Some(format!("{} (required)", detail.as_deref().unwrap_or("value")));
            }
            CompletionItem {
                label: name.clone(),
                kind: CompletionKind::Property,
                detail,
                documentation: prop.get("description").and_then(Value::as_str).map(str::to_owned),
                insert,
                snippet,
                replace,
            }
        })
        .collect()
}

/// The `enum` and `const` values a schema allows, and `true`/`false` for a boolean.
fn values(lang: Lang, root: &Value, schema: &Value, replace: Span) -> Vec<CompletionItem> {
    let schema = resolve(root, schema);
    let mut allowed: Vec<Value> =
        schema.get("enum").and_then(Value::as_array).cloned().unwrap_or_default();
    allowed.extend(schema.get("const").cloned());
    if schema.get("type").and_then(Value::as_str) == Some("boolean") {
        allowed.extend([Value::Bool(true), Value::Bool(false)]);
    }
    allowed
        .into_iter()
        .filter(|v| !v.is_object() && !v.is_array())
        .map(|v| {
            let text = match (&v, lang) {
                (Value::String(s), Lang::Dust) => crate::format::dust_string(s),
                _ => v.to_string(),
            };
            CompletionItem {
                label: v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                kind: CompletionKind::Value,
                detail: None,
                documentation: None,
                insert: text,
                snippet: false,
                replace,
            }
        })
        .collect()
}

/// The entity types a reference at this schema may name (`x-stardust-ref`), if it is one.
fn ref_targets(schema: &Value) -> Option<Vec<String>> {
    match schema.get("x-stardust-ref")? {
        Value::String(ty) => Some(vec![ty.clone()]),
        Value::Array(types) => {
            Some(types.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        }
        _ => None,
    }
}

/// `@id` of every entity of one of `types` (of any type when `types` is empty), by id.
fn references(
    analysis: &Analysis,
    lang: Lang,
    types: &[String],
    replace: Span,
) -> Vec<CompletionItem> {
    let mut out: Vec<CompletionItem> = Vec::new();
    for doc in analysis.documents() {
        for (i, entity) in doc.entities.iter().enumerate() {
            let (Some(id), ty) = (&entity.id, entity.ty.as_str()) else { continue };
            if model::id_problem(id).is_some()
                || !(types.is_empty() || types.iter().any(|x| x == ty))
            {
                continue;
            }
            let title = doc.entity_node(i).and_then(|(_, v)| entity_title(v)).map(str::to_owned);
            let insert = match lang {
                Lang::Json | Lang::Jsonc => format!("\"@{id}\""),
                Lang::Dust => format!("@{id}"),
            };
            out.push(CompletionItem {
                label: format!("@{id}"),
                kind: CompletionKind::Reference,
                detail: Some(ty.to_owned()),
                documentation: title,
                insert,
                snippet: false,
                replace,
            });
        }
    }
    out.sort_by(|a, b| a.label.cmp(&b.label));
    out.dedup_by(|a, b| a.label == b.label);
    out.truncate(MAX_IDS);
    out
}

/// Escape the characters that mean something in an LSP snippet.
fn escape_snippet(s: &str) -> String {
    s.replace('\\', "\\\\").replace('$', "\\$").replace('}', "\\}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dust_strings_are_bare_only_when_they_read_back() {
        assert_eq!(crate::format::dust_string("book/dune"), "book/dune");
        assert_eq!(crate::format::dust_string("1965"), "'1965'");
        assert_eq!(crate::format::dust_string("true"), "'true'");
        assert_eq!(crate::format::dust_string("a b"), "'a b'");
        assert_eq!(crate::format::dust_string("it's"), "'it\\'s'");
        assert_eq!(crate::format::dust_string(""), "''");
        assert_eq!(crate::format::dust_key("1965"), "1965");
        assert_eq!(crate::format::dust_key("my key"), "'my key'");
        assert_eq!(escape_snippet("a$b}"), "a\\$b\\}");
    }
}

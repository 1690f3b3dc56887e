//! What an agent needs to write a valid entity of a type: its fields, which are required,
//! their types, allowed values, reference targets and descriptions, read from the type's
//! JSON Schema.

use serde_json::{Map, Value, json};

use super::resolve;
use crate::analysis::Analysis;
use crate::error::Error;

/// How deep nested object fields are described; deeper ones show only their own facts.
const MAX_NESTING: usize = 4;

/// The description of entity type `ty`: `{type, schema, title?, description?, required,
/// additionalProperties, fields: [{name, required, types, enum?, const?, default?, reference?,
/// items?, fields?, title?, description?}]}`. Fields are in the schema's order.
pub fn describe_type(analysis: &Analysis, ty: &str) -> Result<Value, Error> {
    let not_found = || {
        let known = known_types(analysis);
        Error::NotFound(if known.is_empty() {
            format!("the store has no schema for the type '{ty}' (and no schema at all)")
        } else {
            format!(
                "the store has no schema for the type '{ty}'; known types: {}",
                known.join(", ")
            )
        })
    };
    let (path, _) = analysis.type_schema(ty).ok_or_else(not_found)?;
    let root = &analysis.document(&path).ok_or_else(not_found)?.parse.value;
    let schema = resolve(root, root);
    let mut out = Map::new();
    out.insert("type".into(), json!(ty));
    out.insert("schema".into(), json!(path));
    copy_text(schema, &mut out);
    out.insert("required".into(), json!(required(schema)));
    out.insert(
        "additionalProperties".into(),
        json!(!matches!(schema.get("additionalProperties"), Some(Value::Bool(false)))),
    );
    out.insert("fields".into(), Value::Array(fields(root, schema, 0)));
    Ok(Value::Object(out))
}

/// The types with a schema in the store's schema folder, sorted.
fn known_types(analysis: &Analysis) -> Vec<String> {
    let mut types: Vec<String> = analysis
        .documents()
        .filter_map(|doc| {
            let name = doc.path.rsplit('/').next()?.strip_suffix(".schema.json")?;
            analysis.type_schema(name).filter(|(p, _)| *p == *doc.path).map(|_| name.to_owned())
        })
        .collect();
    types.sort();
    types
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn copy_text(schema: &Value, out: &mut Map<String, Value>) {
    for key in ["title", "description"] {
        if let Some(text) = schema.get(key).and_then(Value::as_str) {
            out.insert(key.into(), json!(text));
        }
    }
}

fn fields(root: &Value, schema: &Value, depth: usize) -> Vec<Value> {
    let required = required(schema);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, field)| {
            let mut out = Map::new();
            out.insert("name".into(), json!(name));
            out.insert("required".into(), json!(required.contains(&name.as_str())));
            facts(root, resolve(root, field), depth, &mut out);
            Value::Object(out)
        })
        .collect()
}

/// Types, allowed values, reference target, default, items and nested fields of a schema.
fn facts(root: &Value, schema: &Value, depth: usize, out: &mut Map<String, Value>) {
    out.insert("types".into(), json!(types(root, schema)));
    for key in ["enum", "const", "default", "format", "pattern", "minimum", "maximum"] {
        if let Some(value) = schema.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(target) = reference(root, schema) {
        out.insert("reference".into(), target);
    }
    copy_text(schema, out);
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        let mut item = Map::new();
        facts(root, resolve(root, items), depth + 1, &mut item);
        out.insert("items".into(), Value::Object(item));
    }
    if depth < MAX_NESTING && schema.get("properties").is_some() {
        out.insert("fields".into(), Value::Array(fields(root, schema, depth + 1)));
    }
}

/// The JSON types a schema allows: its `type`, else those of its `anyOf`/`oneOf` branches,
/// else what its `enum` or `const` values are. Empty means anything.
fn types(root: &Value, schema: &Value) -> Vec<String> {
    let mut out: Vec<String> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => {
            let branches = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| schema.get(*k).and_then(Value::as_array))
                .flatten();
            let mut found: Vec<String> =
                branches.flat_map(|b| types(root, resolve(root, b))).collect();
            let values = schema
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .chain(schema.get("const"));
            found.extend(values.map(|v| json_type(v).to_owned()));
            found
        }
    };
    out.sort();
    out.dedup();
    out
}

/// The entity types a reference field may point at (`x-stardust-ref`, on the field or on a
/// branch of it): a type name, a list of them, or `true` for any type.
fn reference(root: &Value, schema: &Value) -> Option<Value> {
    if let Some(target) = schema.get("x-stardust-ref") {
        return Some(target.clone());
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .find_map(|b| resolve(root, b).get("x-stardust-ref").cloned())
}

/// The JSON Schema type name of a value.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

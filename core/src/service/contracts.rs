//! The command registry (SPEC §7): every command's contract, the one source both fronts render.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{Value, json};

/// Whether a command only reads, or proposes a change (and so answers with a preview).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Read,
    Mutation,
    /// The preview commands themselves (SPEC §7 shows "—"): they act on a preview;
    /// `stardust.preview.confirm` is the one command that writes.
    Preview,
}

/// Whether the change a command proposes needs `stardust.preview.confirm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confirmation {
    None,
    Required,
}

/// A command's contract.
#[derive(Debug, Serialize)]
pub struct Contract {
    pub name: &'static str,
    pub title: &'static str,
    pub effect: Effect,
    pub confirmation: Confirmation,
    /// JSON Schema of the one argument object.
    pub arguments: Value,
    /// JSON Schema of the result.
    pub result: Value,
    /// Argument validator, compiled once.
    #[serde(skip)]
    pub(crate) validator: jsonschema::Validator,
}

/// Every command, in the order of SPEC §7.
pub fn registry() -> &'static [Contract] {
    static REGISTRY: OnceLock<Vec<Contract>> = OnceLock::new();
    REGISTRY.get_or_init(build)
}

/// The contract of `name`.
pub fn contract(name: &str) -> Option<&'static Contract> {
    registry().iter().find(|c| c.name == name)
}

/// Every contract as JSON, for `stardust.commands.describe` and capability advertisements.
pub fn describe() -> Value {
    json!({ "commands": registry() })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// A query, patch or entity: an object, or its DUST or JSON text.
fn document(what: &str) -> Value {
    json!({
        "description": format!("the {what}, as an object or as DUST or JSON text"),
        "type": ["object", "string"],
    })
}

fn id() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 200})
}

fn preview_result() -> Value {
    let ids = json!({"type": "array", "items": {"type": "string"}});
    let version = json!({"type": ["string", "null"]});
    json!({
        "type": "object",
        "required": ["previewId", "expiresAt", "documents", "entities", "resolved", "diagnostics", "committable"],
        "properties": {
            "previewId": {"type": "string"},
            "expiresAt": {"type": "string", "format": "date-time"},
            "documents": {"type": "array", "items": {
                "type": "object",
                "required": ["path", "change", "before", "after", "diff"],
                "properties": {
                    "path": {"type": "string"},
                    "change": {"enum": ["created", "changed", "deleted"]},
                    "before": version, "after": version,
                    "diff": {"type": "string"},
                },
            }},
            "entities": {"type": "object", "properties": {"created": ids, "changed": ids, "deleted": ids}},
            "resolved": {"type": "object", "additionalProperties": {"type": "string"}},
            "diagnostics": {"type": "object", "properties": {
                "new": {"type": "array"}, "resolved": {"type": "array"},
            }},
            "committable": {"type": "boolean"},
            "reasons": {"type": "array", "items": {"type": "string"}},
        },
    })
}

fn page(limit_max: u64) -> (Value, Value) {
    (
        json!({"type": "integer", "minimum": 0, "maximum": limit_max}),
        json!({"type": "integer", "minimum": 0}),
    )
}

fn build() -> Vec<Contract> {
    let (limit, offset) = page(crate::query::MAX_LIMIT);
    let any_object = json!({"type": "object"});
    let rows = json!({
        "type": "object",
        "required": ["columns", "rows", "total", "nextOffset"],
        "properties": {
            "columns": {"type": "array", "items": {"type": "string"}},
            "rows": {"type": "array", "items": {"type": "array"}},
            "total": {"type": "integer"},
            "nextOffset": {"type": ["integer", "null"]},
        },
    });
    let changes = json!({
        "type": "object",
        "required": ["seq"],
        "properties": {
            "seq": {"type": "integer"},
            "overflow": {"type": "boolean"},
            "documents": {"type": "array"},
            "entities": {"type": "array"},
            "more": {"type": "boolean"},
        },
    });
    let specs: Vec<(&'static str, &'static str, Effect, Value, Value)> = vec![
        (
            "stardust.commands.describe",
            "Describe every command",
            Effect::Read,
            object(json!({}), &[]),
            json!({"type": "object", "required": ["commands"], "properties": {"commands": {"type": "array"}}}),
        ),
        (
            "stardust.status",
            "Show the store's status",
            Effect::Read,
            object(json!({}), &[]),
            json!({"type": "object", "required": ["store", "seq", "documents", "entities", "sessions", "decisions"]}),
        ),
        (
            "stardust.expression.evaluate",
            "Evaluate an expression",
            Effect::Read,
            object(
                json!({"expression": {"type": "string", "minLength": 1}, "entity": id()}),
                &["expression"],
            ),
            json!({"type": "object", "required": ["value"]}),
        ),
        (
            "stardust.query.execute",
            "Run a query",
            Effect::Read,
            object(
                json!({"document": document("query"), "limit": limit, "offset": offset}),
                &["document"],
            ),
            rows,
        ),
        (
            "stardust.entity.get",
            "Get an entity",
            Effect::Read,
            object(json!({"id": id()}), &["id"]),
            json!({
                "type": "object",
                "required": ["id", "value", "path", "range", "version"],
                "properties": {
                    "id": {"type": "string"}, "value": any_object, "path": {"type": "string"},
                    "range": {"type": "object"}, "version": {"type": "string"},
                },
            }),
        ),
        (
            "stardust.entity.validate",
            "Validate an entity without committing it",
            Effect::Read,
            object(json!({"entity": document("entity")}), &["entity"]),
            json!({"type": "object", "required": ["valid", "diagnostics"],
                   "properties": {"valid": {"type": "boolean"}, "diagnostics": {"type": "array"}}}),
        ),
        (
            "stardust.entity.create",
            "Create entities",
            Effect::Mutation,
            object(
                json!({"entities": {"type": "array", "minItems": 1, "items": document("entity")}}),
                &["entities"],
            ),
            preview_result(),
        ),
        (
            "stardust.mutation.execute",
            "Set or unset fields of the entities a query finds",
            Effect::Mutation,
            object(
                json!({
                    "document": document("query"),
                    "set": {"type": "object", "description": "fields to set (dotted keys set nested fields)"},
                    "unset": {"type": "array", "items": {"type": "string", "minLength": 1}},
                }),
                &["document"],
            ),
            preview_result(),
        ),
        (
            "stardust.patch.apply",
            "Apply a patch",
            Effect::Mutation,
            object(json!({"document": document("patch")}), &["document"]),
            preview_result(),
        ),
        (
            "stardust.entity.rename",
            "Rename an entity and every reference to it",
            Effect::Mutation,
            object(json!({"id": id(), "newId": id()}), &["id", "newId"]),
            preview_result(),
        ),
        (
            "stardust.backup.define",
            "Define a backup",
            Effect::Mutation,
            object(
                json!({
                    "id": id(),
                    "include": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    "target": {"type": "string", "minLength": 1},
                    "keep": {"type": "integer", "minimum": 1},
                }),
                &["id", "target"],
            ),
            preview_result(),
        ),
        (
            "stardust.preview.confirm",
            "Confirm a preview",
            Effect::Preview,
            object(json!({"previewId": {"type": "string", "minLength": 1}}), &["previewId"]),
            json!({"type": "object", "required": ["seq", "resolved"],
                   "properties": {"seq": {"type": "integer"}, "resolved": {"type": "object"}}}),
        ),
        (
            "stardust.preview.discard",
            "Discard a preview",
            Effect::Preview,
            object(json!({"previewId": {"type": "string", "minLength": 1}}), &["previewId"]),
            json!({"type": "object", "required": ["discarded"], "properties": {"discarded": {"type": "boolean"}}}),
        ),
        (
            "stardust.changes.since",
            "List what changed after a seq",
            Effect::Read,
            object(json!({"seq": {"type": "integer", "minimum": 0}}), &["seq"]),
            changes,
        ),
    ];
    specs
        .into_iter()
        .map(|(name, title, effect, arguments, result)| {
            let validator = jsonschema::options()
                .build(&arguments)
                .unwrap_or_else(|e| panic!("the argument schema of {name} is invalid: {e}"));
            let confirmation = if effect == Effect::Mutation {
                Confirmation::Required
            } else {
                Confirmation::None
            };
            Contract { name, title, effect, confirmation, arguments, result, validator }
        })
        .collect()
}

//! The built-in entity types (SPEC §10) and their schemas: what a store knows without a
//! schema of its own.
//!
//! This sits below `analysis`, which validates entities of a built-in type against these
//! schemas when the store has none, and below `backup`, which reads the definitions.

use std::sync::LazyLock;

use serde_json::{Value, json};

/// The built-in entity type of backup definitions.
pub const BACKUP: &str = "backup";

/// How many archives a backup definition keeps when it does not say.
pub const DEFAULT_BACKUP_KEEP: u64 = 7;

static BACKUP_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "backup",
        "description": "A backup definition: which files of the store `stardust backup run` archives, where it writes the archives, and how many it keeps.",
        "type": "object",
        "required": ["id", "type", "target"],
        "properties": {
            "id": {"type": "string", "description": "The definition's id, e.g. backup/nightly."},
            "type": {"const": BACKUP},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "include": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "default": ["**"],
                "description": "Globs of store-relative paths to archive; '**' is every file. .stardust/ is never archived."
            },
            "target": {
                "type": "string",
                "minLength": 1,
                "description": "The folder the archives are written to: absolute, or relative to the store root; it must be outside the store."
            },
            "keep": {
                "type": "integer",
                "minimum": 1,
                "default": DEFAULT_BACKUP_KEEP,
                "description": "How many of this definition's newest archives to keep in the target."
            }
        },
        "additionalProperties": false
    })
});

/// The JSON Schema of backup definitions, used when a store has no `backup` schema of its own.
pub fn backup_schema() -> &'static Value {
    &BACKUP_SCHEMA
}

/// Every built-in type with its schema. A store's own schema for one of these types takes
/// precedence over the built-in one.
pub fn types() -> [(&'static str, &'static Value); 1] {
    [(BACKUP, backup_schema())]
}

//! The built-in entity types (SPEC §10) and their schemas: what a store knows without a
//! schema of its own.
//!
//! This sits below `analysis`, which validates entities of a built-in type against these
//! schemas when the store has none, and below `backup` and `views`, which read the
//! definitions.

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

/// The built-in entity type of views (SPEC §19): a saved query whose result the mount shows
/// as a file.
pub const VIEW: &str = "view";

/// The formats a view's result is rendered in.
pub const VIEW_FORMATS: [&str; 4] = ["json", "jsonl", "csv", "dust"];

static VIEW_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "view",
        "description": "A view: a query whose result the mount shows, read-only, at `path`, recomputed when what the query reads changes; `stardust view STORE ID` prints it.",
        "type": "object",
        "required": ["id", "type", "query", "path"],
        "properties": {
            "id": {"type": "string", "description": "The view's id, e.g. view/books-by-year."},
            "type": {"const": VIEW},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "query": {
                "anyOf": [{"type": "object"}, {"type": "string"}],
                "description": "The query: find, where, filter, order, limit, offset, pull; or its DUST or JSON text."
            },
            "format": {
                "enum": VIEW_FORMATS,
                "default": "json",
                "description": "How the result is written: json (an array of row objects), jsonl (one row object a line), csv (a header of the columns, RFC 4180), dust (an array of row objects)."
            },
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "Where the mount shows the result: a store-relative path, not a stored document's, not under .stardust/."
            }
        },
        "additionalProperties": false
    })
});

/// The JSON Schema of views, used when a store has no `view` schema of its own.
pub fn view_schema() -> &'static Value {
    &VIEW_SCHEMA
}

/// Why `path` cannot be where a view's result is shown, if it cannot: it must name a file
/// inside the store, outside its private folders.
pub fn view_path_problem(path: &str) -> Option<String> {
    if path.is_empty() {
        return Some(
            "a view's path is empty; give a store-relative path such as 'views/x.json'".into(),
        );
    }
    if path.starts_with('/') || path.contains('\\') {
        return Some(format!(
            "the view path '{path}' is not store-relative; write it with '/' and without a leading '/', such as 'views/x.json'"
        ));
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
        return Some(format!(
            "the view path '{path}' leaves the store or has an empty, '.' or '..' segment; give a path inside the store such as 'views/x.json'"
        ));
    }
    if crate::scan::PRIVATE_DIRS.contains(&segments[0]) {
        return Some(format!(
            "the view path '{path}' is under {}/, which the store keeps for itself; choose a path outside it",
            segments[0]
        ));
    }
    None
}

/// Every built-in type with its schema. A store's own schema for one of these types takes
/// precedence over the built-in one.
pub fn types() -> [(&'static str, &'static Value); 2] {
    [(BACKUP, backup_schema()), (VIEW, view_schema())]
}

//! Views (SPEC §19): a view's result as of one snapshot, rendered in its format, and
//! ([`live`]) every view's latest result kept fresh off the commit path.
//!
//! A result is all or nothing: the rows of the whole query as of one seq, or an error
//! object `{"error": {"code", "message"}, "_seq": N}` when the view's query cannot be read,
//! fails, exceeds the executor's bounds, or has more rows than a view shows. Stale rows are
//! never shown as fresh: a failing view shows its error, not its previous rows.
//!
//! Renderings (docs/DECISIONS.md, "Views"): a row is an object whose keys are the columns
//! with a plain variable's `?` dropped (`?title` -> `title`, `count(?b)` as written); `json`
//! is an array of row objects, one a line; `jsonl` one row object a line; `csv` a header of
//! the keys and one line per row (RFC 4180: CRLF, fields quoted when they hold `,`, `"`, CR
//! or LF, quotes doubled; null empty, strings raw, other values as JSON); `dust` the array of
//! row objects in canonical DUST. The error object is JSON in every format.

pub mod live;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::analysis::{Analysis, ViewDef};
use crate::error::Code;
use crate::query::{self, MAX_LIMIT, Query, QueryOptions};

pub use crate::analysis::Views;
pub use live::{Live, ViewEvent, ViewState};

/// One view's result as of one seq: the bytes of its file.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    pub id: String,
    /// The path the mount shows it at, when the path is usable.
    pub path: Option<String>,
    pub format: String,
    /// The seq of the snapshot it was computed from.
    pub seq: u64,
    pub bytes: Arc<[u8]>,
    /// The error the file holds instead of rows.
    pub error: Option<(Code, String)>,
    /// How many rows it holds (0 with an error).
    pub rows: u64,
    /// When it was computed: the file's mtime.
    pub time: std::time::SystemTime,
}

/// Compute the view `def` on `analysis`, the snapshot of `seq`. `max_bindings` bounds the
/// query's work as for any query.
pub fn compute(analysis: &Analysis, def: &ViewDef, seq: u64, max_bindings: u64) -> Rendered {
    let format = def.format().to_owned();
    let path = analysis.view_path_usable(def).then(|| def.path.clone()).flatten();
    let (bytes, error, rows) = match rows_of(analysis, def, max_bindings) {
        Ok((columns, rows)) => {
            let count = rows.len() as u64;
            (render(&format, &columns, &rows), None, count)
        }
        Err((code, message)) => (error_bytes(code, &message, seq), Some((code, message)), 0),
    };
    let time = std::time::SystemTime::now();
    Rendered { id: def.id.clone(), path, format, seq, bytes: bytes.into(), error, rows, time }
}

/// A view's columns (as row keys) and rows.
type Table = (Vec<String>, Vec<Vec<Value>>);

/// The view's columns (as row keys) and rows, or why there are none.
fn rows_of(analysis: &Analysis, def: &ViewDef, max_bindings: u64) -> Result<Table, (Code, String)> {
    let Some(value) = &def.query else {
        return Err((
            Code::InvalidArguments,
            format!(
                "the view '{}' has no query; add a query such as {{find [?b] where [[?b type book]]}}",
                def.id
            ),
        ));
    };
    if !crate::builtin::VIEW_FORMATS.contains(&def.format()) {
        return Err((
            Code::InvalidArguments,
            format!(
                "the view '{}' has the format '{}'; use one of json, jsonl, csv, dust",
                def.id,
                def.format()
            ),
        ));
    }
    let parsed = Query::from_json(value).map_err(|e| (e.code(), e.to_string()))?;
    let explicit = parsed.limit.is_some();
    let options =
        QueryOptions { limit: Some(parsed.limit.unwrap_or(MAX_LIMIT)), offset: None, max_bindings };
    let result =
        query::execute(analysis, &parsed, &options).map_err(|e| (e.code(), e.to_string()))?;
    if !explicit && result.total > result.rows.len() as u64 {
        return Err((
            Code::InvalidArguments,
            format!(
                "the view '{}' has {} rows, more than the {MAX_LIMIT} a view shows without a limit; narrow the query or give it a limit (and offset)",
                def.id, result.total
            ),
        ));
    }
    let keys = result.columns.iter().map(|c| key_of(c)).collect();
    Ok((keys, result.rows))
}

/// A column's key in a row object: a plain variable without its `?`, an aggregate as written.
fn key_of(column: &str) -> String {
    column.strip_prefix('?').unwrap_or(column).to_owned()
}

fn object(columns: &[String], row: &[Value]) -> Value {
    let map: Map<String, Value> = columns.iter().cloned().zip(row.iter().cloned()).collect();
    Value::Object(map)
}

/// The rows in `format` (one of `builtin::VIEW_FORMATS`).
pub fn render(format: &str, columns: &[String], rows: &[Vec<Value>]) -> Vec<u8> {
    let mut out = String::new();
    match format {
        "jsonl" => {
            for row in rows {
                out.push_str(&object(columns, row).to_string());
                out.push('\n');
            }
        }
        "csv" => {
            let line = |cells: Vec<String>| {
                cells.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(",") + "\r\n"
            };
            out.push_str(&line(columns.to_vec()));
            for row in rows {
                out.push_str(&line(row.iter().map(csv_cell).collect()));
            }
        }
        "dust" => {
            let array = Value::Array(rows.iter().map(|r| object(columns, r)).collect());
            out = crate::format::value_to_dust(&array).unwrap_or_else(|_| array.to_string());
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        _ => {
            if rows.is_empty() {
                out.push_str("[]\n");
            } else {
                out.push_str("[\n");
                for (i, row) in rows.iter().enumerate() {
                    out.push_str("  ");
                    out.push_str(&object(columns, row).to_string());
                    out.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
                }
                out.push_str("]\n");
            }
        }
    }
    out.into_bytes()
}

/// A cell's text in CSV: null empty, a string as it is, any other value as JSON.
fn csv_cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// RFC 4180: a field holding a comma, a quote, CR or LF is quoted, its quotes doubled.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The error object a view's file holds instead of rows.
pub fn error_bytes(code: Code, message: &str, seq: u64) -> Vec<u8> {
    let value = json!({"error": {"code": code, "message": message}, "_seq": seq});
    crate::format::value_to_json(&value).into_bytes()
}

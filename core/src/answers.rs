//! The JSON renderings every JSON answer shares (the CLI's `check --format json`, the
//! commands, the MCP tools): ranges, diagnostics and locations.
//!
//! Ranges are 1-based lines with columns counted in characters (what `grep -n` and editors
//! show), end exclusive. This module sits above `analysis` and `ide` (a location names the
//! entity holding it) so that the modules below it, which only name spans and codes, never
//! depend on how answers are written.

use serde_json::{Value, json};

use crate::analysis::{Analysis, Document};
use crate::diagnostics::Diagnostic;
use crate::ide::entity_at;
use crate::text::{Encoding, Span};

/// A range as every JSON answer writes it: 1-based lines, columns counted in characters (what
/// `grep -n` and editors show), end exclusive.
pub fn range_json(doc: &Document, span: Span) -> Value {
    let start = doc.line_index.position(&doc.text, span.start, Encoding::Utf32);
    let end = doc.line_index.position(&doc.text, span.end, Encoding::Utf32);
    json!({
        "line": start.line + 1,
        "column": start.column + 1,
        "endLine": end.line + 1,
        "endColumn": end.column + 1,
    })
}

/// A diagnostic of `doc` as JSON answers (CLI, commands, MCP) write it.
pub fn diagnostic_json(analysis: &Analysis, doc: &Document, d: &Diagnostic) -> Value {
    let related: Vec<Value> = d
        .related
        .iter()
        .filter_map(|r| {
            let other = analysis.document(&r.path)?;
            Some(json!({"path": r.path, "range": range_json(other, r.span), "message": r.message}))
        })
        .collect();
    json!({
        "path": doc.path,
        "range": range_json(doc, d.span),
        "severity": d.severity,
        "code": d.code,
        "message": d.message,
        "source": "stardust",
        "related": related,
        "data": d.data,
    })
}

/// A location as JSON answers write it: `{path, range, entity?}`, the range 1-based with
/// columns in characters, and the id of the innermost entity holding it.
pub fn location_json(analysis: &Analysis, path: &str, span: Span) -> Value {
    let Some(doc) = analysis.document(path) else {
        return json!({"path": path});
    };
    let mut out = json!({"path": path, "range": range_json(doc, span)});
    if let Some(id) = entity_at(doc, span.start) {
        out["entity"] = json!(id);
    }
    out
}

/// The unified diff (3 lines of context) of a file from `before` to `after` (`None`: absent),
/// as previews, `stardust diff` and `stardust.transaction.diff` show it.
pub fn unified_diff(path: &str, before: Option<&str>, after: Option<&str>) -> String {
    similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(
            &if before.is_some() { format!("a/{path}") } else { "/dev/null".into() },
            &if after.is_some() { format!("b/{path}") } else { "/dev/null".into() },
        )
        .to_string()
}

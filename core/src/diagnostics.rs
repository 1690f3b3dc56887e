//! Diagnostics: what is wrong in a document, where, and the data its repairs need.
//!
//! Ranges are byte spans into the document they belong to; lines and columns are computed at
//! the edges. The codes and their severities are the contract of SPEC §5.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::text::{Encoding, Span};

/// The stable code of a diagnostic (SPEC §5).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiagnosticCode {
    Syntax,
    DuplicateKey,
    Schema,
    UnknownType,
    InvalidId,
    DuplicateId,
    DanglingRef,
    RefType,
}

impl DiagnosticCode {
    pub const ALL: [DiagnosticCode; 8] = [
        DiagnosticCode::Syntax,
        DiagnosticCode::DuplicateKey,
        DiagnosticCode::Schema,
        DiagnosticCode::UnknownType,
        DiagnosticCode::InvalidId,
        DiagnosticCode::DuplicateId,
        DiagnosticCode::DanglingRef,
        DiagnosticCode::RefType,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticCode::Syntax => "syntax",
            DiagnosticCode::DuplicateKey => "duplicate-key",
            DiagnosticCode::Schema => "schema",
            DiagnosticCode::UnknownType => "unknown-type",
            DiagnosticCode::InvalidId => "invalid-id",
            DiagnosticCode::DuplicateId => "duplicate-id",
            DiagnosticCode::DanglingRef => "dangling-ref",
            DiagnosticCode::RefType => "ref-type",
        }
    }

    pub fn parse(s: &str) -> Option<DiagnosticCode> {
        DiagnosticCode::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The severity every diagnostic of this code has.
    pub fn severity(self) -> Severity {
        match self {
            DiagnosticCode::UnknownType => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A place in another (or the same) document that explains a diagnostic.
#[derive(Clone, PartialEq, Debug)]
pub struct Related {
    /// Store-relative path of the document.
    pub path: String,
    pub span: Span,
    pub message: String,
}

#[derive(Clone, PartialEq, Debug)]
pub struct Diagnostic {
    pub code: DiagnosticCode,
    pub severity: Severity,
    /// Byte range in the document the diagnostic belongs to.
    pub span: Span,
    pub message: String,
    pub related: Vec<Related>,
    /// What the code actions of this diagnostic need (closest ids, allowed values, ...).
    pub data: Value,
}

impl Diagnostic {
    pub fn new(code: DiagnosticCode, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            span,
            message: message.into(),
            related: Vec::new(),
            data: Value::Null,
        }
    }

    pub fn with_data(mut self, data: Value) -> Diagnostic {
        self.data = data;
        self
    }

    pub fn with_related(mut self, related: Vec<Related>) -> Diagnostic {
        self.related = related;
        self
    }
}

/// A range as every JSON answer writes it: 1-based lines, columns counted in characters (what
/// `grep -n` and editors show), end exclusive.
pub fn range_json(doc: &crate::analysis::Document, span: Span) -> Value {
    let start = doc.line_index.position(&doc.text, span.start, Encoding::Utf32);
    let end = doc.line_index.position(&doc.text, span.end, Encoding::Utf32);
    serde_json::json!({
        "line": start.line + 1,
        "column": start.column + 1,
        "endLine": end.line + 1,
        "endColumn": end.column + 1,
    })
}

/// A diagnostic of `doc` as JSON answers (CLI, commands, MCP) write it.
pub fn to_json(
    analysis: &crate::analysis::Analysis,
    doc: &crate::analysis::Document,
    d: &Diagnostic,
) -> Value {
    let related: Vec<Value> = d
        .related
        .iter()
        .filter_map(|r| {
            let other = analysis.document(&r.path)?;
            Some(serde_json::json!({"path": r.path, "range": range_json(other, r.span), "message": r.message}))
        })
        .collect();
    serde_json::json!({
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

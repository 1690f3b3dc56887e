//! Diagnostics: what is wrong in a document, where, and the data its repairs need.
//!
//! Ranges are byte spans into the document they belong to; lines and columns are computed at
//! the edges. The codes and their severities are the contract of SPEC §5. How diagnostics are
//! written in JSON answers is `crate::answers`.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::text::Span;

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
    /// A view's query cannot be read (SPEC §19); the view's file holds the error.
    InvalidQuery,
    /// A view's path leaves the store, is under a private folder, or is a stored document's.
    ViewPath,
    /// Two views claim one path.
    DuplicateViewPath,
    /// A document's schema cannot be used, so the document was not validated (SPEC §23).
    SchemaUnavailable,
}

impl DiagnosticCode {
    pub const ALL: [DiagnosticCode; 12] = [
        DiagnosticCode::Syntax,
        DiagnosticCode::DuplicateKey,
        DiagnosticCode::Schema,
        DiagnosticCode::UnknownType,
        DiagnosticCode::InvalidId,
        DiagnosticCode::DuplicateId,
        DiagnosticCode::DanglingRef,
        DiagnosticCode::RefType,
        DiagnosticCode::InvalidQuery,
        DiagnosticCode::ViewPath,
        DiagnosticCode::DuplicateViewPath,
        DiagnosticCode::SchemaUnavailable,
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
            DiagnosticCode::InvalidQuery => "invalid-query",
            DiagnosticCode::ViewPath => "view-path",
            DiagnosticCode::DuplicateViewPath => "duplicate-view-path",
            DiagnosticCode::SchemaUnavailable => "schema-unavailable",
        }
    }

    pub fn parse(s: &str) -> Option<DiagnosticCode> {
        DiagnosticCode::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The severity every diagnostic of this code has.
    pub fn severity(self) -> Severity {
        match self {
            DiagnosticCode::UnknownType | DiagnosticCode::SchemaUnavailable => Severity::Warning,
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

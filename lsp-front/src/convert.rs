//! Conversions between the core's byte spans and store paths and the protocol's positions,
//! ranges and URIs, in the position encoding negotiated with the client.

use std::path::{Path, PathBuf};

use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString,
    PositionEncodingKind, Range, Url,
};
use serde_json::{Value, json};
use stardust_core::analysis::{Analysis, Document};
use stardust_core::diagnostics::{Diagnostic, Severity};
use stardust_core::text::{Encoding, LineIndex, Position, Span};

/// The first encoding the client offers that we speak, else UTF-16 (the protocol default).
pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
    offered
        .unwrap_or(&[])
        .iter()
        .find_map(|kind| match kind.as_str() {
            "utf-8" => Some(Encoding::Utf8),
            "utf-16" => Some(Encoding::Utf16),
            "utf-32" => Some(Encoding::Utf32),
            _ => None,
        })
        .unwrap_or(Encoding::Utf16)
}

pub fn encoding_kind(encoding: Encoding) -> PositionEncodingKind {
    match encoding {
        Encoding::Utf8 => PositionEncodingKind::UTF8,
        Encoding::Utf16 => PositionEncodingKind::UTF16,
        Encoding::Utf32 => PositionEncodingKind::UTF32,
    }
}

pub fn position(
    index: &LineIndex,
    text: &str,
    offset: u32,
    encoding: Encoding,
) -> lsp_types::Position {
    let p = index.position(text, offset, encoding);
    lsp_types::Position { line: p.line, character: p.column }
}

pub fn range(index: &LineIndex, text: &str, span: Span, encoding: Encoding) -> Range {
    Range {
        start: position(index, text, span.start, encoding),
        end: position(index, text, span.end, encoding),
    }
}

/// The byte offset of a protocol position, `None` when it is not inside the text.
pub fn offset(
    index: &LineIndex,
    text: &str,
    p: lsp_types::Position,
    encoding: Encoding,
) -> Option<u32> {
    index.offset(text, Position { line: p.line, column: p.character }, encoding)
}

pub fn doc_range(doc: &Document, span: Span, encoding: Encoding) -> Range {
    range(&doc.line_index, &doc.text, span, encoding)
}

/// Maps between file URIs and store-relative paths.
#[derive(Clone, Debug)]
pub struct Paths {
    pub root: PathBuf,
}

impl Paths {
    /// The store-relative, `/`-separated path of a `file:` URI inside the store.
    pub fn relative(&self, uri: &Url) -> Option<String> {
        let path = uri.to_file_path().ok()?;
        let rel = match path.strip_prefix(&self.root) {
            Ok(rel) => rel.to_owned(),
            Err(_) => {
                // The client may name the store through a symbolic link.
                let real = canonical(&path)?;
                real.strip_prefix(&self.root).ok()?.to_owned()
            }
        };
        let parts: Vec<&str> = rel.components().filter_map(|c| c.as_os_str().to_str()).collect();
        (!parts.is_empty()).then(|| parts.join("/"))
    }

    pub fn uri(&self, rel: &str) -> Option<Url> {
        Url::from_file_path(self.root.join(rel)).ok()
    }

    pub fn location(
        &self,
        analysis: &Analysis,
        rel: &str,
        span: Span,
        encoding: Encoding,
    ) -> Option<Location> {
        let doc = analysis.document(rel)?;
        Some(Location { uri: self.uri(rel)?, range: doc_range(doc, span, encoding) })
    }
}

/// The canonical form of `path`, or of its parent joined with its name when it does not exist.
pub fn canonical(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = path.canonicalize() {
        return Some(real);
    }
    let parent = path.parent()?.canonicalize().ok()?;
    Some(parent.join(path.file_name()?))
}

/// A core diagnostic as the protocol's: code, severity, range, message, `source`, related
/// information and `data` always present.
pub fn diagnostic(
    paths: &Paths,
    analysis: &Analysis,
    doc: &Document,
    d: &Diagnostic,
    encoding: Encoding,
) -> lsp_types::Diagnostic {
    let related = d
        .related
        .iter()
        .filter_map(|r| {
            Some(DiagnosticRelatedInformation {
                location: paths.location(analysis, &r.path, r.span, encoding)?,
                message: r.message.clone(),
            })
        })
        .collect();
    let data = match &d.data {
        Value::Null => json!({}),
        other => other.clone(),
    };
    lsp_types::Diagnostic {
        range: doc_range(doc, d.span, encoding),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.as_str().to_owned())),
        code_description: None,
        source: Some("stardust".to_owned()),
        message: d.message.clone(),
        related_information: Some(related),
        tags: None,
        data: Some(data),
    }
}

//! Conversions between the core's byte spans and store paths and the protocol's positions,
//! ranges and URIs, in the position encoding negotiated with the client.

use std::path::Path;

use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString,
    PositionEncodingKind, Range, Url,
};
use serde_json::{Value, json};
use stardust_core::analysis::{Analysis, Document};
use stardust_core::diagnostics::{Diagnostic, Severity};
use stardust_core::ide::{Root, Roots};
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

/// Maps between file URIs and store-relative paths. URIs under the store or any mount of it
/// are read; answers name documents under the client's root (the core decides both, in
/// `ide::Roots`).
#[derive(Clone, Debug)]
pub struct Paths {
    roots: Roots,
    client: Root,
}

impl Paths {
    /// The paths of a client whose root folder is `client_dir` (the store's folder, a mount
    /// of it, or neither: then answers name the store's folder).
    pub fn new(roots: Roots, client_dir: Option<&Path>) -> Paths {
        let client = client_dir.and_then(|dir| roots.root_of(dir)).unwrap_or(Root::Store);
        let roots = match &client {
            Root::Mount(dir) => roots.with_mount(dir),
            Root::Store => roots,
        };
        Paths { roots, client }
    }

    /// The store-relative, `/`-separated path of a `file:` URI inside the store or a mount.
    pub fn relative(&self, uri: &Url) -> Option<String> {
        self.resolve(uri).ok()
    }

    /// As [`Paths::relative`], with the core's error (`outside-store`, `invalid-arguments`).
    pub fn resolve(&self, uri: &Url) -> Result<String, stardust_core::Error> {
        self.resolved(uri).map(|r| r.path)
    }

    /// As [`Paths::resolve`], with the root the URI is under.
    pub fn resolved(
        &self,
        uri: &Url,
    ) -> Result<stardust_core::ide::Resolved, stardust_core::Error> {
        self.roots.uri_to_store_path(uri.as_str())
    }

    /// The URI of store path `rel` under the client's root.
    pub fn uri(&self, rel: &str) -> Option<Url> {
        Url::parse(&self.roots.uri(&self.client, rel)).ok()
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

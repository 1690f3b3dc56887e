//! The editor features of the core (hover, definition, references, symbols, formatting),
//! registered on the router as requests that run on a snapshot off the main loop.

use async_lsp::router::Router;
use async_lsp::{ErrorCode, ResponseError};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, References,
    WorkspaceSymbolRequest,
};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionOptions, CompletionParams, CompletionResponse,
    CompletionTextEdit, DocumentFormattingParams, DocumentSymbol, DocumentSymbolParams,
    DocumentSymbolResponse, Documentation, GotoDefinitionParams, GotoDefinitionResponse, Hover,
    HoverContents, HoverParams, InsertTextFormat, Location, MarkupContent, MarkupKind, OneOf,
    ReferenceParams, ServerCapabilities, SymbolInformation, SymbolKind, TextDocumentPositionParams,
    TextEdit, WorkspaceSymbolParams, WorkspaceSymbolResponse,
};
use stardust_core::Code;
use stardust_core::analysis::Document;
use stardust_core::ide::{self, FileSpan, Symbol};
use stardust_core::text::Span;

use crate::convert;
use crate::state::{Snapshot, State, error, with_snapshot};

/// Workspace symbol answers are cut here; the client asks again as the user types more.
const MAX_WORKSPACE_SYMBOLS: usize = 256;

/// The capabilities of the features registered by [`register`].
pub(crate) fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        workspace_symbol_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["@".to_owned(), "\"".to_owned()]),
            ..CompletionOptions::default()
        }),
        ..ServerCapabilities::default()
    }
}

pub(crate) fn register(router: &mut Router<State>) {
    router
        .request::<HoverRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| hover(snap, params))
        })
        .request::<GotoDefinition, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| definition(snap, params))
        })
        .request::<References, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| references(snap, params))
        })
        .request::<DocumentSymbolRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| document_symbols(snap, params))
        })
        .request::<WorkspaceSymbolRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| workspace_symbols(snap, params))
        })
        .request::<Completion, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| completion(snap, params))
        })
        .request::<Formatting, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| formatting(snap, params))
        });
}

/// The document and byte offset of a text position.
fn at<'a>(
    snap: &'a Snapshot,
    params: &TextDocumentPositionParams,
) -> Result<(&'a Document, u32), ResponseError> {
    let path = snap.path_of(&params.text_document.uri)?;
    let doc = snap.analysis.document(&path).ok_or_else(|| {
        error(
            ErrorCode::INVALID_PARAMS,
            Code::NotFound,
            format!("{path} is not a document of the store"),
        )
    })?;
    let offset = convert::offset(&doc.line_index, &doc.text, params.position, snap.encoding).ok_or_else(|| {
        error(
            ErrorCode::INVALID_PARAMS,
            Code::InvalidArguments,
            format!(
                "line {} column {} is not a position in {path}; positions are zero-based, columns in {:?}",
                params.position.line, params.position.character, snap.encoding
            ),
        )
    })?;
    Ok((doc, offset))
}

fn locations(snap: &Snapshot, spans: Vec<FileSpan>) -> Vec<Location> {
    spans
        .into_iter()
        .filter_map(|f| snap.paths.location(&snap.analysis, &f.path, f.span, snap.encoding))
        .collect()
}

fn hover(snap: &Snapshot, params: HoverParams) -> Result<Option<Hover>, ResponseError> {
    let (doc, offset) = at(snap, &params.text_document_position_params)?;
    Ok(ide::hover(&snap.analysis, &doc.path, offset).map(|h| Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: h.markdown,
        }),
        range: Some(convert::doc_range(doc, h.span, snap.encoding)),
    }))
}

fn definition(
    snap: &Snapshot,
    params: GotoDefinitionParams,
) -> Result<Option<GotoDefinitionResponse>, ResponseError> {
    let (doc, offset) = at(snap, &params.text_document_position_params)?;
    let found = locations(snap, ide::definition(&snap.analysis, &doc.path, offset));
    Ok((!found.is_empty()).then_some(GotoDefinitionResponse::Array(found)))
}

fn references(
    snap: &Snapshot,
    params: ReferenceParams,
) -> Result<Option<Vec<Location>>, ResponseError> {
    let (doc, offset) = at(snap, &params.text_document_position)?;
    let found =
        ide::references(&snap.analysis, &doc.path, offset, params.context.include_declaration);
    Ok(Some(locations(snap, found)))
}

fn document_symbols(
    snap: &Snapshot,
    params: DocumentSymbolParams,
) -> Result<Option<DocumentSymbolResponse>, ResponseError> {
    let path = snap.path_of(&params.text_document.uri)?;
    let Some(doc) = snap.analysis.document(&path) else { return Ok(None) };
    let symbols =
        ide::document_symbols(doc).iter().map(|s| document_symbol(doc, s, snap)).collect();
    Ok(Some(DocumentSymbolResponse::Nested(symbols)))
}

fn document_symbol(doc: &Document, s: &Symbol, snap: &Snapshot) -> DocumentSymbol {
    #[allow(deprecated)]
    DocumentSymbol {
        name: s.name.clone(),
        detail: s.detail.clone(),
        kind: symbol_kind(s.kind),
        tags: None,
        deprecated: None,
        range: convert::doc_range(doc, s.span, snap.encoding),
        selection_range: convert::doc_range(doc, s.selection, snap.encoding),
        children: Some(s.children.iter().map(|c| document_symbol(doc, c, snap)).collect()),
    }
}

fn symbol_kind(kind: ide::SymbolKind) -> SymbolKind {
    match kind {
        ide::SymbolKind::Entity => SymbolKind::CLASS,
        ide::SymbolKind::Object => SymbolKind::OBJECT,
        ide::SymbolKind::Array => SymbolKind::ARRAY,
        ide::SymbolKind::String => SymbolKind::STRING,
        ide::SymbolKind::Number => SymbolKind::NUMBER,
        ide::SymbolKind::Boolean => SymbolKind::BOOLEAN,
        ide::SymbolKind::Null => SymbolKind::NULL,
    }
}

fn workspace_symbols(
    snap: &Snapshot,
    params: WorkspaceSymbolParams,
) -> Result<Option<WorkspaceSymbolResponse>, ResponseError> {
    let found = ide::workspace_symbols(&snap.analysis, &params.query, MAX_WORKSPACE_SYMBOLS);
    #[allow(deprecated)]
    let symbols = found
        .into_iter()
        .filter_map(|s| {
            Some(SymbolInformation {
                name: s.id,
                kind: SymbolKind::CLASS,
                tags: None,
                deprecated: None,
                location: snap.paths.location(
                    &snap.analysis,
                    &s.location.path,
                    s.location.span,
                    snap.encoding,
                )?,
                container_name: Some(match s.title {
                    Some(title) => format!("{}: {title}", s.ty),
                    None => s.ty,
                }),
            })
        })
        .collect();
    Ok(Some(WorkspaceSymbolResponse::Flat(symbols)))
}

fn completion(
    snap: &Snapshot,
    params: CompletionParams,
) -> Result<Option<CompletionResponse>, ResponseError> {
    let (doc, offset) = at(snap, &params.text_document_position)?;
    let items = ide::completion(&snap.analysis, &doc.path, offset)
        .into_iter()
        .map(|c| CompletionItem {
            label: c.label,
            kind: Some(match c.kind {
                ide::CompletionKind::Property => CompletionItemKind::PROPERTY,
                ide::CompletionKind::Value => CompletionItemKind::VALUE,
                ide::CompletionKind::Reference => CompletionItemKind::REFERENCE,
            }),
            detail: c.detail,
            documentation: c.documentation.map(|d| {
                Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: d })
            }),
            insert_text_format: Some(if c.snippet {
                InsertTextFormat::SNIPPET
            } else {
                InsertTextFormat::PLAIN_TEXT
            }),
            text_edit: Some(CompletionTextEdit::Edit(TextEdit {
                range: convert::doc_range(doc, c.replace, snap.encoding),
                new_text: c.insert,
            })),
            ..CompletionItem::default()
        })
        .collect();
    Ok(Some(CompletionResponse::Array(items)))
}

/// One edit replacing the whole document with its canonical text; none when it is canonical.
/// A document with syntax errors is refused with the formatter's error code.
fn formatting(
    snap: &Snapshot,
    params: DocumentFormattingParams,
) -> Result<Option<Vec<TextEdit>>, ResponseError> {
    let path = snap.path_of(&params.text_document.uri)?;
    let Some(doc) = snap.analysis.document(&path) else { return Ok(None) };
    let formatted = stardust_core::format::format(&doc.text, doc.lang)
        .map_err(|err| error(ErrorCode::REQUEST_FAILED, err.code(), err.to_string()))?;
    if formatted == *doc.text {
        return Ok(Some(Vec::new()));
    }
    let whole = Span::new(0, u32::try_from(doc.text.len()).unwrap_or(u32::MAX));
    Ok(Some(vec![TextEdit {
        range: convert::doc_range(doc, whole, snap.encoding),
        new_text: formatted,
    }]))
}

//! Semantic tokens (full, delta, range) and range / on-type formatting: the core's
//! `ide::semantic_tokens`, `ide::delta`, `ide::format_range` and `ide::align_values` spoken
//! as LSP. The last full result of each document is kept, per connection, by its result id,
//! so that `full/delta` sends only the edit from it.

use std::sync::Arc;

use async_lsp::router::Router;
use async_lsp::{ErrorCode, ResponseError};
use lsp_types::request::{
    OnTypeFormatting, RangeFormatting, SemanticTokensFullDeltaRequest, SemanticTokensFullRequest,
    SemanticTokensRangeRequest,
};
use lsp_types::{
    ClientCapabilities, DocumentOnTypeFormattingOptions, DocumentOnTypeFormattingParams,
    DocumentRangeFormattingParams, OneOf, SemanticToken, SemanticTokenModifier, SemanticTokenType,
    SemanticTokens, SemanticTokensDelta, SemanticTokensDeltaParams, SemanticTokensEdit,
    SemanticTokensFullDeltaResult, SemanticTokensFullOptions, SemanticTokensLegend,
    SemanticTokensOptions, SemanticTokensParams, SemanticTokensRangeParams,
    SemanticTokensRangeResult, SemanticTokensResult, SemanticTokensServerCapabilities,
    ServerCapabilities, TextEdit, Url, WorkDoneProgressOptions,
};
use stardust_core::Code;
use stardust_core::analysis::Document;
use stardust_core::edit;
use stardust_core::ide;
use stardust_core::sync::lock;
use stardust_core::text::Span;

use crate::convert;
use crate::state::{Results, Shared, Snapshot, State, error, with_snapshot};

/// Full results kept for deltas, per connection; past this many documents the oldest goes
/// (its next delta request is answered in full).
const KEPT_RESULTS: usize = 64;

/// The semantic tokens, range and on-type formatting capabilities; records whether the
/// client draws multi-line tokens.
pub(crate) fn extend_capabilities(
    capabilities: &mut ServerCapabilities,
    client: &ClientCapabilities,
    shared: &Shared,
) {
    let multiline = client
        .text_document
        .as_ref()
        .and_then(|t| t.semantic_tokens.as_ref())
        .and_then(|s| s.multiline_token_support)
        .unwrap_or(false);
    let _ = shared.multiline_tokens.set(multiline);
    capabilities.semantic_tokens_provider =
        Some(SemanticTokensServerCapabilities::SemanticTokensOptions(SemanticTokensOptions {
            work_done_progress_options: WorkDoneProgressOptions::default(),
            // The core's kinds first (their indices are `TokenKind::index`), then the names
            // code files' servers use (`code_tokens`).
            legend: SemanticTokensLegend {
                token_types: crate::code_tokens::types()
                    .into_iter()
                    .map(SemanticTokenType::new)
                    .collect(),
                token_modifiers: crate::code_tokens::modifiers()
                    .into_iter()
                    .map(SemanticTokenModifier::new)
                    .collect(),
            },
            range: Some(true),
            full: Some(SemanticTokensFullOptions::Delta { delta: Some(true) }),
        }));
    capabilities.document_range_formatting_provider = Some(OneOf::Left(true));
    capabilities.document_on_type_formatting_provider = Some(DocumentOnTypeFormattingOptions {
        first_trigger_character: "\n".to_owned(),
        more_trigger_character: Some(vec!["}".to_owned(), "]".to_owned()]),
    });
}

impl Results {
    /// Keep `data` as `uri`'s newest result; its id.
    fn keep(&mut self, uri: Url, data: Arc<Vec<u32>>) -> String {
        self.next_id += 1;
        let id = self.next_id;
        self.by_uri.insert(uri, (id, data));
        if self.by_uri.len() > KEPT_RESULTS
            && let Some(oldest) =
                self.by_uri.iter().min_by_key(|(_, (id, _))| *id).map(|(u, _)| u.clone())
        {
            self.by_uri.remove(&oldest);
        }
        id.to_string()
    }

    fn previous(&self, uri: &Url, result_id: &str) -> Option<Arc<Vec<u32>>> {
        let (id, data) = self.by_uri.get(uri)?;
        (id.to_string() == result_id).then(|| data.clone())
    }

    /// Forget `uri`'s result (the document was closed: a delta against it is never asked).
    pub(crate) fn forget(&mut self, uri: &Url) {
        self.by_uri.remove(uri);
    }
}

pub(crate) fn register(router: &mut Router<State>) {
    router
        .request::<SemanticTokensFullRequest, _>(|st, params| {
            let shared = st.shared();
            with_snapshot(st.shared(), move |snap| full(snap, &shared, params))
        })
        .request::<SemanticTokensFullDeltaRequest, _>(|st, params| {
            let shared = st.shared();
            with_snapshot(st.shared(), move |snap| full_delta(snap, &shared, params))
        })
        .request::<SemanticTokensRangeRequest, _>(|st, params| {
            let shared = st.shared();
            with_snapshot(st.shared(), move |snap| range(snap, &shared, params))
        })
        .request::<RangeFormatting, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| range_formatting(snap, params))
        })
        .request::<OnTypeFormatting, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| on_type_formatting(snap, params))
        });
}

fn document<'a>(snap: &'a Snapshot, uri: &Url) -> Result<&'a Document, ResponseError> {
    let path = snap.path_of(uri)?;
    snap.analysis.document(&path).map(|d| &**d).ok_or_else(|| {
        error(ErrorCode::INVALID_PARAMS, Code::NotFound, format!("{path} is not a document"))
    })
}

/// The encoded tokens of `doc` touching `within`.
fn encoded(snap: &Snapshot, shared: &Shared, doc: &Document, within: Option<Span>) -> Vec<u32> {
    let multiline = shared.multiline_tokens.get().copied().unwrap_or(false);
    let tokens = ide::semantic_tokens(&snap.analysis, &doc.path, within, snap.encoding, multiline);
    ide::encode(&tokens)
}

/// Five numbers a token, as `lsp_types` holds them.
fn wire(data: &[u32]) -> Vec<SemanticToken> {
    data.chunks_exact(5)
        .map(|t| SemanticToken {
            delta_line: t[0],
            delta_start: t[1],
            length: t[2],
            token_type: t[3],
            token_modifiers_bitset: t[4],
        })
        .collect()
}

fn full(
    snap: &Snapshot,
    shared: &Shared,
    params: SemanticTokensParams,
) -> Result<Option<SemanticTokensResult>, ResponseError> {
    let uri = params.text_document.uri;
    let doc = document(snap, &uri)?;
    let data = Arc::new(encoded(snap, shared, doc, None));
    let tokens = wire(&data);
    let result_id = lock(&shared.token_results).keep(uri, data);
    Ok(Some(SemanticTokensResult::Tokens(SemanticTokens {
        result_id: Some(result_id),
        data: tokens,
    })))
}

/// The edit from the result the client holds, when it is the one kept; else the full tokens.
fn full_delta(
    snap: &Snapshot,
    shared: &Shared,
    params: SemanticTokensDeltaParams,
) -> Result<Option<SemanticTokensFullDeltaResult>, ResponseError> {
    let uri = params.text_document.uri;
    let doc = document(snap, &uri)?;
    let data = Arc::new(encoded(snap, shared, doc, None));
    let mut results = lock(&shared.token_results);
    let previous = results.previous(&uri, &params.previous_result_id);
    let result_id = Some(results.keep(uri, data.clone()));
    drop(results);
    Ok(Some(match previous {
        Some(old) => SemanticTokensFullDeltaResult::TokensDelta(SemanticTokensDelta {
            result_id,
            edits: ide::delta(&old, &data)
                .into_iter()
                .map(|e| SemanticTokensEdit {
                    start: e.start,
                    delete_count: e.delete,
                    data: Some(wire(&e.data)),
                })
                .collect(),
        }),
        None => {
            SemanticTokensFullDeltaResult::Tokens(SemanticTokens { result_id, data: wire(&data) })
        }
    }))
}

fn range(
    snap: &Snapshot,
    shared: &Shared,
    params: SemanticTokensRangeParams,
) -> Result<Option<SemanticTokensRangeResult>, ResponseError> {
    let doc = document(snap, &params.text_document.uri)?;
    let span = span_of(snap, doc, params.range)?;
    let data = encoded(snap, shared, doc, Some(span));
    Ok(Some(SemanticTokensRangeResult::Tokens(SemanticTokens {
        result_id: None,
        data: wire(&data),
    })))
}

/// The byte span of a protocol range; a position past the end of the text is its end.
fn span_of(
    snap: &Snapshot,
    doc: &Document,
    range: lsp_types::Range,
) -> Result<Span, ResponseError> {
    let end_of_text = u32::try_from(doc.text.len()).unwrap_or(u32::MAX);
    let offset = |p: lsp_types::Position| {
        convert::offset(&doc.line_index, &doc.text, p, snap.encoding)
            .or_else(|| (p.line >= doc.line_index.line_count()).then_some(end_of_text))
    };
    match (offset(range.start), offset(range.end)) {
        (Some(start), Some(end)) if start <= end => Ok(Span::new(start, end)),
        _ => Err(error(
            ErrorCode::INVALID_PARAMS,
            Code::InvalidArguments,
            format!(
                "{}:{}-{}:{} is not a range of {}; positions are zero-based, columns in {:?}",
                range.start.line,
                range.start.character,
                range.end.line,
                range.end.character,
                doc.path,
                snap.encoding
            ),
        )),
    }
}

fn edits(snap: &Snapshot, doc: &Document, edits: Vec<edit::TextEdit>) -> Vec<TextEdit> {
    edits
        .into_iter()
        .map(|e| TextEdit {
            range: convert::doc_range(doc, e.span, snap.encoding),
            new_text: e.text,
        })
        .collect()
}

/// Edits inside the range only; a document with syntax errors is refused as `formatting`
/// refuses it.
fn range_formatting(
    snap: &Snapshot,
    params: DocumentRangeFormattingParams,
) -> Result<Option<Vec<TextEdit>>, ResponseError> {
    let doc = document(snap, &params.text_document.uri)?;
    let span = span_of(snap, doc, params.range)?;
    let found = ide::format_range(&doc.text, doc.lang, span)
        .map_err(|err| error(ErrorCode::REQUEST_FAILED, err.code(), err.to_string()))?;
    Ok(Some(edits(snap, doc, found)))
}

/// The top-level values aligned in one column (DUST), whichever trigger was typed.
fn on_type_formatting(
    snap: &Snapshot,
    params: DocumentOnTypeFormattingParams,
) -> Result<Option<Vec<TextEdit>>, ResponseError> {
    let doc = document(snap, &params.text_document_position.text_document.uri)?;
    Ok(Some(edits(snap, doc, ide::align_values(&doc.text, doc.lang, &doc.parse))))
}

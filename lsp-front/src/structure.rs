//! The structure features of the core (folding, selection ranges, document links, highlights,
//! inlay hints, code lenses), registered on the router: positions and URIs converted in the
//! client's encoding and root, every answer computed by `stardust_core::ide`.

use std::sync::Arc;

use async_lsp::router::Router;
use async_lsp::{ErrorCode, ResponseError};
use lsp_types::request::{
    CodeLensRequest, CodeLensResolve, DocumentHighlightRequest, DocumentLinkRequest,
    FoldingRangeRequest, InlayHintRequest, InlayHintResolveRequest, SelectionRangeRequest,
};
use lsp_types::{
    ClientCapabilities, CodeLens, CodeLensOptions, CodeLensParams, Command, DocumentHighlight,
    DocumentHighlightKind, DocumentHighlightParams, DocumentLink, DocumentLinkOptions,
    DocumentLinkParams, FoldingRange, FoldingRangeKind, FoldingRangeParams,
    FoldingRangeProviderCapability, InlayHint, InlayHintLabel, InlayHintLabelPart,
    InlayHintOptions, InlayHintParams, InlayHintServerCapabilities, InlayHintTooltip, Location,
    MarkupContent, MarkupKind, OneOf, SelectionRange, SelectionRangeParams,
    SelectionRangeProviderCapability, ServerCapabilities, Url, WorkDoneProgressOptions,
};
use serde_json::{Value, json};
use stardust_core::Code;
use stardust_core::analysis::Document;
use stardust_core::ide::{self, FoldKind, HighlightKind, LensKind, LinkTarget};
use stardust_core::text::Span;

use crate::convert;
use crate::state::{Choices, Shared, Snapshot, State, error, with_snapshot};

/// The VS Code command that shows a list of locations in a peek view; clients without it
/// (Neovim, Helix) still show the lens's title. Recorded in docs/DECISIONS.md.
const SHOW_REFERENCES: &str = "editor.action.showReferences";

/// Advertise this module's methods and record the client's folding choices.
pub(crate) fn extend_capabilities(
    capabilities: &mut ServerCapabilities,
    client: &ClientCapabilities,
    shared: &Arc<Shared>,
) {
    let folding = client.text_document.as_ref().and_then(|t| t.folding_range.as_ref());
    let choices = Choices {
        line_folding_only: folding.and_then(|f| f.line_folding_only).unwrap_or(false),
        range_limit: folding.and_then(|f| f.range_limit).map(|n| n as usize),
    };
    // A second `initialize` is refused before it gets here; the first choice stands.
    let _ = shared.structure.set(choices);
    capabilities.folding_range_provider = Some(FoldingRangeProviderCapability::Simple(true));
    capabilities.selection_range_provider = Some(SelectionRangeProviderCapability::Simple(true));
    capabilities.document_link_provider = Some(DocumentLinkOptions {
        resolve_provider: Some(false),
        work_done_progress_options: WorkDoneProgressOptions::default(),
    });
    capabilities.document_highlight_provider = Some(OneOf::Left(true));
    capabilities.inlay_hint_provider =
        Some(OneOf::Right(InlayHintServerCapabilities::Options(InlayHintOptions {
            resolve_provider: Some(true),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        })));
    capabilities.code_lens_provider = Some(CodeLensOptions { resolve_provider: Some(true) });
}

pub(crate) fn register(router: &mut Router<State>) {
    router
        .request::<FoldingRangeRequest, _>(|st, params| {
            let shared = st.shared();
            let choices = shared.structure.get().copied().unwrap_or_default();
            with_snapshot(shared, move |snap| folding_ranges(snap, choices, params))
        })
        .request::<SelectionRangeRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| selection_ranges(snap, params))
        })
        .request::<DocumentLinkRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| document_links(snap, params))
        })
        .request::<DocumentHighlightRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| highlights(snap, params))
        })
        .request::<InlayHintRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| inlay_hints(snap, params))
        })
        .request::<InlayHintResolveRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| Ok(resolve_inlay_hint(snap, params)))
        })
        .request::<CodeLensRequest, _>(|st, params| {
            let shared = st.shared();
            with_snapshot(shared.clone(), move |snap| {
                let path = snap.path_of(&params.text_document.uri)?;
                let mut lenses = code_lenses(snap, params)?.unwrap_or_default();
                lenses.extend(preview_lenses(&shared, &path));
                Ok(Some(lenses))
            })
        })
        .request::<CodeLensResolve, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| Ok(resolve_code_lens(snap, params)))
        });
}

/// The document a request names.
fn document<'a>(snap: &'a Snapshot, uri: &Url) -> Result<&'a Arc<Document>, ResponseError> {
    let path = snap.path_of(uri)?;
    snap.analysis.document(&path).ok_or_else(|| {
        error(ErrorCode::INVALID_PARAMS, Code::NotFound, format!("{path} is not a document"))
    })
}

fn offset_of(
    snap: &Snapshot,
    doc: &Document,
    p: lsp_types::Position,
) -> Result<u32, ResponseError> {
    convert::offset(&doc.line_index, &doc.text, p, snap.encoding).ok_or_else(|| {
        error(
            ErrorCode::INVALID_PARAMS,
            Code::InvalidArguments,
            format!(
                "line {} column {} is not a position in {}; positions are zero-based, columns in {:?}",
                p.line, p.character, doc.path, snap.encoding
            ),
        )
    })
}

fn folding_ranges(
    snap: &Snapshot,
    choices: Choices,
    params: FoldingRangeParams,
) -> Result<Option<Vec<FoldingRange>>, ResponseError> {
    let doc = document(snap, &params.text_document.uri)?;
    let folds = ide::folding_ranges(doc, choices.line_folding_only);
    let limit = choices.range_limit.unwrap_or(usize::MAX);
    let ranges = folds
        .into_iter()
        .take(limit)
        .map(|f| {
            let kind = match f.kind {
                FoldKind::Region => FoldingRangeKind::Region,
                FoldKind::Comment => FoldingRangeKind::Comment,
            };
            let (start_character, end_character) = if choices.line_folding_only {
                (None, None)
            } else {
                let range = convert::doc_range(doc, Span::new(f.start, f.end), snap.encoding);
                (Some(range.start.character), Some(range.end.character))
            };
            FoldingRange {
                start_line: f.start_line,
                start_character,
                end_line: f.end_line,
                end_character,
                kind: Some(kind),
                collapsed_text: None,
            }
        })
        .collect();
    Ok(Some(ranges))
}

fn selection_ranges(
    snap: &Snapshot,
    params: SelectionRangeParams,
) -> Result<Option<Vec<SelectionRange>>, ResponseError> {
    let doc = document(snap, &params.text_document.uri)?;
    let offsets = params
        .positions
        .iter()
        .map(|p| offset_of(snap, doc, *p))
        .collect::<Result<Vec<u32>, _>>()?;
    let ranges = ide::selection_ranges(doc, &offsets)
        .into_iter()
        .filter_map(|chain| {
            // The chain is innermost first: build it from the outside in.
            chain.iter().rev().fold(None, |parent, span| {
                Some(SelectionRange {
                    range: convert::doc_range(doc, *span, snap.encoding),
                    parent: parent.map(Box::new),
                })
            })
        })
        .collect();
    Ok(Some(ranges))
}

/// A link into the store is the target document's URI under the client's root with a
/// `#L<line>,<column>` fragment (1-based), the form VS Code's link opener reads.
fn document_links(
    snap: &Snapshot,
    params: DocumentLinkParams,
) -> Result<Option<Vec<DocumentLink>>, ResponseError> {
    let doc = document(snap, &params.text_document.uri)?;
    let links = ide::document_links(&snap.analysis, &doc.path)
        .into_iter()
        .filter_map(|link| {
            let target = match &link.target {
                LinkTarget::Store(place) => {
                    let target = snap.analysis.document(&place.path)?;
                    let at = convert::doc_range(target, place.span, snap.encoding).start;
                    let mut uri = snap.paths.uri(&place.path)?;
                    uri.set_fragment(Some(&format!("L{},{}", at.line + 1, at.character + 1)));
                    uri
                }
                LinkTarget::Url(url) => Url::parse(url).ok()?,
            };
            Some(DocumentLink {
                range: convert::doc_range(doc, link.span, snap.encoding),
                target: Some(target),
                tooltip: Some(link.tooltip),
                data: None,
            })
        })
        .collect();
    Ok(Some(links))
}

fn highlights(
    snap: &Snapshot,
    params: DocumentHighlightParams,
) -> Result<Option<Vec<DocumentHighlight>>, ResponseError> {
    let at = &params.text_document_position_params;
    let doc = document(snap, &at.text_document.uri)?;
    let offset = offset_of(snap, doc, at.position)?;
    let found = ide::highlights(doc, offset)
        .into_iter()
        .map(|(span, kind)| DocumentHighlight {
            range: convert::doc_range(doc, span, snap.encoding),
            kind: Some(match kind {
                HighlightKind::Definition => DocumentHighlightKind::WRITE,
                HighlightKind::Reference => DocumentHighlightKind::READ,
            }),
        })
        .collect();
    Ok(Some(found))
}

/// Hints carry the referenced id; the tooltip and the label's location come on resolve.
fn inlay_hints(
    snap: &Snapshot,
    params: InlayHintParams,
) -> Result<Option<Vec<InlayHint>>, ResponseError> {
    let doc = document(snap, &params.text_document.uri)?;
    let start = offset_of(snap, doc, params.range.start)?;
    // A range that runs past the end (clients send the whole buffer loosely) stops there.
    let end = offset_of(snap, doc, params.range.end).unwrap_or(doc.text.len() as u32);
    let hints = ide::inlay_hints(&snap.analysis, &doc.path, Span::new(start, end.max(start)))
        .into_iter()
        .map(|hint| InlayHint {
            position: convert::position(&doc.line_index, &doc.text, hint.offset, snap.encoding),
            label: InlayHintLabel::LabelParts(vec![InlayHintLabelPart {
                value: hint.label,
                tooltip: None,
                location: None,
                command: None,
            }]),
            kind: None,
            text_edits: None,
            tooltip: None,
            padding_left: Some(true),
            padding_right: None,
            data: Some(json!({"id": hint.id})),
        })
        .collect();
    Ok(Some(hints))
}

/// The target's summary as the tooltip, and its `id` value as the label's location; a hint
/// whose target has gone comes back as it was.
fn resolve_inlay_hint(snap: &Snapshot, mut hint: InlayHint) -> InlayHint {
    let id = hint.data.as_ref().and_then(|d| d.get("id")).and_then(Value::as_str);
    let Some((summary, place)) = id.and_then(|id| ide::inlay_hint_details(&snap.analysis, id))
    else {
        return hint;
    };
    hint.tooltip = Some(InlayHintTooltip::MarkupContent(MarkupContent {
        kind: MarkupKind::Markdown,
        value: summary,
    }));
    if let InlayHintLabel::LabelParts(parts) = &mut hint.label {
        let location = snap.paths.location(&snap.analysis, &place.path, place.span, snap.encoding);
        for part in parts {
            part.location = location.clone();
        }
    }
    hint
}

/// Reference lenses carry their document and id and are counted on resolve; a run lens comes
/// with its command.
fn code_lenses(
    snap: &Snapshot,
    params: CodeLensParams,
) -> Result<Option<Vec<CodeLens>>, ResponseError> {
    let doc = document(snap, &params.text_document.uri)?;
    let uri = params.text_document.uri;
    let lenses = ide::code_lenses(&snap.analysis, &doc.path)
        .into_iter()
        .map(|lens| {
            let range = convert::doc_range(doc, lens.span, snap.encoding);
            match lens.kind {
                LensKind::References { id } => {
                    CodeLens { range, command: None, data: Some(json!({"uri": uri, "id": id})) }
                }
                LensKind::RunQuery => {
                    let (title, command, arguments) = ide::run_query_command(doc);
                    CodeLens {
                        range,
                        command: Some(Command {
                            title,
                            command: command.to_owned(),
                            arguments: Some(vec![arguments]),
                        }),
                        data: None,
                    }
                }
            }
        })
        .collect();
    Ok(Some(lenses))
}

/// The open previews touching the file at store path `path` that this session may act on
/// (SPEC §18: its own; every session's while previews are shared): "preview by <client>:
/// confirm" and "discard" at the line where the change starts, running
/// `stardust.preview.confirm` / `stardust.preview.discard`. For documents and code files alike.
pub(crate) fn preview_lenses(shared: &Shared, path: &str) -> Vec<CodeLens> {
    let Ok((service, session)) = shared.service() else { return Vec::new() };
    let mut lenses = Vec::new();
    for lens in service.preview_lenses(&session, path) {
        let at = lsp_types::Position { line: lens.line, character: 0 };
        let range = lsp_types::Range { start: at, end: at };
        let who = if lens.mine { "you".to_owned() } else { lens.client.clone() };
        let arguments = Some(vec![json!({"previewId": lens.preview_id})]);
        lenses.push(CodeLens {
            range,
            command: Some(Command {
                title: format!("preview by {who} ({}): confirm", lens.command),
                command: "stardust.preview.confirm".to_owned(),
                arguments: arguments.clone(),
            }),
            data: None,
        });
        lenses.push(CodeLens {
            range,
            command: Some(Command {
                title: "discard".to_owned(),
                command: "stardust.preview.discard".to_owned(),
                arguments,
            }),
            data: None,
        });
    }
    lenses
}

/// "N references", opening them with [`SHOW_REFERENCES`] at the lens.
fn resolve_code_lens(snap: &Snapshot, mut lens: CodeLens) -> CodeLens {
    if lens.command.is_some() {
        return lens;
    }
    let data = lens.data.clone().unwrap_or(Value::Null);
    let (Some(uri), Some(id)) = (
        data.get("uri").and_then(Value::as_str).and_then(|u| Url::parse(u).ok()),
        data.get("id").and_then(Value::as_str),
    ) else {
        return lens;
    };
    let resolved = ide::references_lens(&snap.analysis, id);
    let locations: Vec<Location> = resolved
        .references
        .iter()
        .filter_map(|r| snap.paths.location(&snap.analysis, &r.path, r.span, snap.encoding))
        .collect();
    lens.command = Some(Command {
        title: resolved.title,
        command: SHOW_REFERENCES.to_owned(),
        arguments: Some(vec![json!(uri), json!(lens.range.start), json!(locations)]),
    });
    lens
}

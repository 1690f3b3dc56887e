//! Code actions (with resolve) and entity renames: the core's repairs and rename plans
//! converted into `CodeAction`s and `WorkspaceEdit`s. Nothing is written here: the client
//! applies the edits to its buffers (SPEC §12 never uses `workspace/applyEdit`).

use std::collections::HashMap;

use async_lsp::router::Router;
use async_lsp::{ErrorCode, ResponseError};
use lsp_types::request::{
    CodeActionRequest, CodeActionResolveRequest, PrepareRenameRequest, Rename,
};
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOptions, CodeActionOrCommand, CodeActionParams,
    CodeActionProviderCapability, CodeActionResponse, DocumentChangeOperation, DocumentChanges,
    OneOf, OptionalVersionedTextDocumentIdentifier, PrepareRenameResponse, RenameFile,
    RenameOptions, RenameParams, ResourceOp, ServerCapabilities, TextDocumentEdit,
    TextDocumentPositionParams, TextEdit, WorkDoneProgressOptions, WorkspaceEdit,
};
use serde_json::{Value, json};
use stardust_core::Code;
use stardust_core::analysis::Document;
use stardust_core::ide::{self, ActionKind};
use stardust_core::text::Span;

use crate::convert;
use crate::state::{Snapshot, State, error, with_snapshot};

/// The kind of the conversion action (a source action on the whole document).
const CONVERT_KIND: &str = "source.convert.stardust";

pub fn extend_capabilities(capabilities: &mut ServerCapabilities) {
    capabilities.code_action_provider =
        Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![
                CodeActionKind::QUICKFIX,
                CodeActionKind::new(CONVERT_KIND),
            ]),
            work_done_progress_options: WorkDoneProgressOptions::default(),
            resolve_provider: Some(true),
        }));
    capabilities.rename_provider = Some(OneOf::Right(RenameOptions {
        prepare_provider: Some(true),
        work_done_progress_options: WorkDoneProgressOptions::default(),
    }));
}

pub fn register(router: &mut Router<State>) {
    router
        .request::<CodeActionRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| code_actions(snap, params))
        })
        .request::<CodeActionResolveRequest, _>(|st, action| {
            with_snapshot(st.shared(), move |snap| resolve(snap, action))
        })
        .request::<PrepareRenameRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| prepare_rename(snap, params))
        })
        .request::<Rename, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| rename(snap, params))
        });
}

fn document<'a>(
    snap: &'a Snapshot,
    uri: &lsp_types::Url,
) -> Result<(String, &'a Document), ResponseError> {
    let path = snap.path_of(uri)?;
    let doc = snap.analysis.document(&path).ok_or_else(|| {
        error(
            ErrorCode::INVALID_PARAMS,
            Code::NotFound,
            format!("{path} is not a document of the store"),
        )
    })?;
    Ok((path, doc))
}

fn bad_position(path: &str) -> ResponseError {
    error(
        ErrorCode::INVALID_PARAMS,
        Code::InvalidArguments,
        format!(
            "the range is not inside {path}; positions are zero-based in the negotiated encoding"
        ),
    )
}

fn text_edits(
    doc: &Document,
    edits: &[stardust_core::edit::TextEdit],
    snap: &Snapshot,
) -> Vec<TextEdit> {
    edits
        .iter()
        .map(|e| TextEdit {
            range: convert::doc_range(doc, e.span, snap.encoding),
            new_text: e.text.clone(),
        })
        .collect()
}

fn code_actions(
    snap: &Snapshot,
    params: CodeActionParams,
) -> Result<Option<CodeActionResponse>, ResponseError> {
    let uri = params.text_document.uri;
    let (path, doc) = document(snap, &uri)?;
    let start = convert::offset(&doc.line_index, &doc.text, params.range.start, snap.encoding)
        .ok_or_else(|| bad_position(&path))?;
    let end = convert::offset(&doc.line_index, &doc.text, params.range.end, snap.encoding)
        .ok_or_else(|| bad_position(&path))?;
    let only = params.context.only;
    let wanted = |kind: &CodeActionKind| {
        only.as_ref().is_none_or(|only| {
            only.iter().any(|o| {
                kind.as_str() == o.as_str()
                    || kind.as_str().starts_with(&format!("{}.", o.as_str()))
            })
        })
    };
    let mut out = Vec::new();
    for action in
        ide::code_actions(&snap.analysis, &path, Span::new(start.min(end), end.max(start)))
    {
        match action.kind {
            ActionKind::QuickFix if wanted(&CodeActionKind::QUICKFIX) => {
                let diagnostics = action
                    .diagnostic
                    .iter()
                    .map(|d| {
                        convert::diagnostic(&snap.paths, &snap.analysis, doc, d, snap.encoding)
                    })
                    .collect();
                let edit = WorkspaceEdit {
                    changes: Some(HashMap::from([(
                        uri.clone(),
                        text_edits(doc, &action.edits, snap),
                    )])),
                    ..WorkspaceEdit::default()
                };
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: action.title,
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(diagnostics),
                    edit: Some(edit),
                    is_preferred: Some(action.preferred),
                    ..CodeAction::default()
                }));
            }
            // Converting renames the file: offered only to clients that can apply that, and
            // computed on resolve (it rewrites the whole document).
            ActionKind::Convert
                if snap.renames_files && wanted(&CodeActionKind::new(CONVERT_KIND)) =>
            {
                out.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: action.title,
                    kind: Some(CodeActionKind::new(CONVERT_KIND)),
                    data: Some(json!({"convert": uri, "version": doc.version})),
                    ..CodeAction::default()
                }));
            }
            _ => {}
        }
    }
    Ok(Some(out))
}

/// Fill in the edit of a conversion action: rename the file, then replace its text.
fn resolve(snap: &Snapshot, mut action: CodeAction) -> Result<CodeAction, ResponseError> {
    if action.edit.is_some() {
        return Ok(action);
    }
    let data = action.data.clone().unwrap_or(Value::Null);
    let uri: lsp_types::Url =
        data.get("convert").cloned().and_then(|u| serde_json::from_value(u).ok()).ok_or_else(
            || {
                error(
                    ErrorCode::INVALID_PARAMS,
                    Code::InvalidArguments,
                    "this code action was not made by this server; ask for code actions again",
                )
            },
        )?;
    let (path, doc) = document(snap, &uri)?;
    if data.get("version").and_then(Value::as_str) != Some(doc.version.as_str()) {
        return Err(error(
            ErrorCode::CONTENT_MODIFIED,
            Code::Conflict,
            format!("{path} changed since the code action was offered; ask for code actions again"),
        ));
    }
    let (new_path, conversion) = ide::convert(&snap.analysis, &path)
        .map_err(|err| error(ErrorCode::REQUEST_FAILED, err.code(), err.to_string()))?;
    let new_uri = snap.paths.uri(&new_path).ok_or_else(|| {
        error(ErrorCode::INTERNAL_ERROR, Code::Internal, format!("cannot name {new_path} as a URI"))
    })?;
    let whole = Span::new(0, u32::try_from(doc.text.len()).unwrap_or(u32::MAX));
    action.edit = Some(WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(vec![
            DocumentChangeOperation::Op(ResourceOp::Rename(RenameFile {
                old_uri: uri,
                new_uri: new_uri.clone(),
                options: None,
                annotation_id: None,
            })),
            DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri: new_uri,
                    version: None,
                },
                edits: vec![OneOf::Left(TextEdit {
                    range: convert::doc_range(doc, whole, snap.encoding),
                    new_text: conversion.text,
                })],
            }),
        ])),
        ..WorkspaceEdit::default()
    });
    if conversion.lost_comments > 0 {
        action.title = format!(
            "{} (drops {} comments: JSON has none)",
            action.title, conversion.lost_comments
        );
    }
    Ok(action)
}

fn rename_target(
    snap: &Snapshot,
    at: &TextDocumentPositionParams,
) -> Result<Option<(String, lsp_types::Range)>, ResponseError> {
    let (path, doc) = document(snap, &at.text_document.uri)?;
    let offset = convert::offset(&doc.line_index, &doc.text, at.position, snap.encoding)
        .ok_or_else(|| bad_position(&path))?;
    Ok(ide::rename_target(&snap.analysis, &path, offset)
        .map(|(id, span)| (id, convert::doc_range(doc, span, snap.encoding))))
}

fn prepare_rename(
    snap: &Snapshot,
    params: TextDocumentPositionParams,
) -> Result<Option<PrepareRenameResponse>, ResponseError> {
    Ok(rename_target(snap, &params)?
        .map(|(id, range)| PrepareRenameResponse::RangeWithPlaceholder { range, placeholder: id }))
}

/// Every place naming the entity, as one edit per document; nothing is committed.
fn rename(snap: &Snapshot, params: RenameParams) -> Result<Option<WorkspaceEdit>, ResponseError> {
    let Some((id, _)) = rename_target(snap, &params.text_document_position)? else {
        return Err(error(
            ErrorCode::INVALID_PARAMS,
            Code::InvalidArguments,
            "there is no entity id here; rename at an entity's id value or at a reference",
        ));
    };
    let planned = ide::rename(&snap.analysis, &id, &params.new_name)
        .map_err(|err| error(ErrorCode::INVALID_PARAMS, err.code(), err.to_string()))?;
    let mut changes = HashMap::new();
    for (path, edits) in planned {
        let (Some(doc), Some(uri)) = (snap.analysis.document(&path), snap.paths.uri(&path)) else {
            continue;
        };
        changes.insert(uri, text_edits(doc, &edits, snap));
    }
    Ok(Some(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }))
}

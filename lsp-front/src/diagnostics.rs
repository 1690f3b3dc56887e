//! Diagnostics: published after changes (push) or answered to `textDocument/diagnostic` and
//! `workspace/diagnostic` (pull), converted from the core's analysis of the buffers.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_lsp::router::Router;
use async_lsp::{ClientSocket, LanguageClient, ResponseError};
use lsp_types::request::{DocumentDiagnosticRequest, WorkspaceDiagnosticRequest};
use lsp_types::{
    DocumentDiagnosticParams, DocumentDiagnosticReport, DocumentDiagnosticReportResult,
    FullDocumentDiagnosticReport, PublishDiagnosticsParams, RelatedFullDocumentDiagnosticReport,
    WorkspaceDiagnosticReport, WorkspaceDiagnosticReportResult, WorkspaceDocumentDiagnosticReport,
    WorkspaceFullDocumentDiagnosticReport,
};

use crate::convert;
use crate::state::{Shared, Snapshot, State, with_snapshot};

/// The pull requests, answered on a snapshot off the main loop.
pub(crate) fn register(router: &mut Router<State>) {
    router
        .request::<DocumentDiagnosticRequest, _>(|st, params| {
            with_snapshot(st.shared(), move |snap| pull_diagnostics(snap, params))
        })
        .request::<WorkspaceDiagnosticRequest, _>(|st, params| {
            let progress = crate::progress::Progress::start(
                st.client(),
                params.work_done_progress_params.work_done_token.clone(),
                "Diagnosing the store",
            );
            let shared = st.shared();
            async move {
                let answer = with_snapshot(shared, |snap| Ok(workspace_diagnostics(snap))).await;
                progress.end();
                answer
            }
        });
}

/// Publish the diagnostics of `generation` off the main loop, unless the core's buffers have
/// a newer one by then (`Buffers::snapshot_latest`: a burst is analysed once, at its latest).
pub(crate) fn publish(client: ClientSocket, shared: Arc<Shared>, generation: u64) {
    tokio::task::spawn_blocking(move || publish_of(client, &shared, Some(generation)));
}

/// Publish the diagnostics of every open document, unless a newer generation has been
/// published meanwhile (the core's buffers decide, and skip the buffers closed since).
pub(crate) fn publish_now(client: ClientSocket, shared: &Shared) {
    publish_of(client, shared, None);
}

fn publish_of(mut client: ClientSocket, shared: &Shared, generation: Option<u64>) {
    let snap = match generation {
        Some(generation) => shared.snapshot_latest(generation),
        None => shared.snapshot().map(Some),
    };
    let snap = match snap {
        Ok(Some(snap)) => snap,
        Ok(None) => return,
        Err(err) => {
            tracing::warn!("cannot publish diagnostics: {}", err.message);
            return;
        }
    };
    let Some(conn) = shared.connection() else { return };
    let mut gone = false;
    conn.buffers.publish(&snap.overlay, |buffer| {
        if gone {
            return;
        }
        let params = PublishDiagnosticsParams {
            uri: buffer.meta().clone(),
            diagnostics: document_diagnostics(&snap, buffer.path()),
            version: Some(buffer.version()),
        };
        gone = client.publish_diagnostics(params).is_err();
    });
}

fn document_diagnostics(snap: &Snapshot, path: &str) -> Vec<lsp_types::Diagnostic> {
    let Some(doc) = snap.analysis.document(path) else { return Vec::new() };
    snap.analysis
        .diagnostics_of(path)
        .iter()
        .map(|d| convert::diagnostic(&snap.paths, &snap.analysis, doc, d, snap.encoding))
        .collect()
}

fn pull_diagnostics(
    snap: &Snapshot,
    params: DocumentDiagnosticParams,
) -> Result<DocumentDiagnosticReportResult, ResponseError> {
    let path = snap.path_of(&params.text_document.uri)?;
    Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
        RelatedFullDocumentDiagnosticReport {
            related_documents: None,
            full_document_diagnostic_report: FullDocumentDiagnosticReport {
                result_id: None,
                items: document_diagnostics(snap, &path),
            },
        },
    )))
}

/// Every document with diagnostics, open buffers as their current text.
fn workspace_diagnostics(snap: &Snapshot) -> WorkspaceDiagnosticReportResult {
    let versions: BTreeMap<&str, i64> =
        snap.overlay.buffers().map(|b| (b.path(), i64::from(b.version()))).collect();
    let items = snap
        .analysis
        .all_diagnostics()
        .into_iter()
        .filter(|(_, diagnostics)| !diagnostics.is_empty())
        .filter_map(|(path, _)| {
            Some(WorkspaceDocumentDiagnosticReport::Full(WorkspaceFullDocumentDiagnosticReport {
                uri: snap.paths.uri(&path)?,
                version: versions.get(path.as_str()).copied(),
                full_document_diagnostic_report: FullDocumentDiagnosticReport {
                    result_id: None,
                    items: document_diagnostics(snap, &path),
                },
            }))
        })
        .collect();
    WorkspaceDiagnosticReportResult::Report(WorkspaceDiagnosticReport { items })
}

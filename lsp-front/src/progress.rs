//! Work-done progress of one request to the editor, when it gave a token: `begin` when made,
//! `end` when dropped (also when the request is cancelled and its future dropped).

use async_lsp::ClientSocket;
use lsp_types::notification::Progress as ProgressNotification;
use lsp_types::{
    NumberOrString, ProgressParams, ProgressParamsValue, WorkDoneProgress, WorkDoneProgressBegin,
    WorkDoneProgressEnd,
};

impl Drop for Progress {
    fn drop(&mut self) {
        self.send(WorkDoneProgress::End(WorkDoneProgressEnd { message: None }));
    }
}

/// Work-done progress for one request, when the client gave a token.
pub struct Progress {
    client: ClientSocket,
    token: Option<NumberOrString>,
}

impl Progress {
    /// Send `begin` with `title` if the client gave `token`.
    pub fn start(client: ClientSocket, token: Option<NumberOrString>, title: &str) -> Progress {
        let progress = Progress { client, token };
        progress.send(WorkDoneProgress::Begin(WorkDoneProgressBegin {
            title: title.to_owned(),
            cancellable: Some(true),
            message: None,
            percentage: None,
        }));
        progress
    }

    /// Send `end` (also when the request is cancelled and its future dropped).
    pub fn end(self) {}

    fn send(&self, value: WorkDoneProgress) {
        let Some(token) = self.token.clone() else { return };
        let params = ProgressParams { token, value: ProgressParamsValue::WorkDone(value) };
        if let Err(err) = self.client.notify::<ProgressNotification>(params) {
            tracing::debug!("cannot send progress: {err}");
        }
    }
}

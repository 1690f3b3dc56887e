//! What the core asks of the language servers that serve code files (SPEC §17): the
//! [`CodeHost`] interface. The `stardust-servers` crate implements it (processes, the LSP
//! client side); the binary installs one host per core with `Service::with_code_host`, so
//! the core starts no process and speaks no transport, and every front reaches a language
//! server only through the core.
//!
//! Requests and answers are LSP JSON in the server's own position encoding: converting to a
//! client's positions (MCP's 1-based characters, an editor's encoding) is the core's
//! (`service::code`), from the file texts it holds.

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::Instant;

use serde_json::Value;

use super::LaunchSpec;
use crate::error::Code;
use crate::text::Encoding;

/// One answer of a server, with whether it reported work in progress when it answered.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeAnswer {
    pub result: Value,
    pub indexing: bool,
}

/// Why a language server could not answer: a code of SPEC §16 (`server-unavailable`, `busy`,
/// `unsupported`, `cancelled`, `internal`), a message that names the server and says what to
/// do, and the server's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CodeError {
    pub code: Code,
    pub message: String,
    pub server: String,
}

/// What a running server told that an editor relays (SPEC §17 "LSP"): push diagnostics,
/// work-done progress, `window/*` messages. URIs and positions are the server's.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeEvent {
    pub server: String,
    pub method: String,
    pub params: Value,
}

/// The push diagnostics a server last published for one file, with their place on its clock
/// (see [`Activity`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Publication {
    /// The document version they were for, if the server said.
    pub version: Option<i64>,
    /// The LSP `Diagnostic` objects, as the server sent them.
    pub diagnostics: Vec<Value>,
    /// Where on the server's clock they arrived (0: the host keeps no clock).
    pub at: u64,
}

/// What a running server has said about its work, for a caller waiting for it to finish
/// checking the texts it was given (the speculative delta of a code edit, SPEC §18). The
/// clock counts what the server sent on its current connection (its notifications and its
/// `window/workDoneProgress/create` requests), so that a report of work done can be placed
/// after (or before) a publication.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// Work-done progress announced (`window/workDoneProgress/create`) or begun, and not
    /// ended: the server is at work.
    pub busy: bool,
    /// Whether the server has reported work-done progress on this connection at all: one
    /// that does is taken to announce the work it does in stages.
    pub reports: bool,
    /// Where on the clock it last ended work (`$/progress` end); 0: never.
    pub done_at: u64,
    /// When it last sent anything (`None`: nothing yet).
    pub last_heard: Option<Instant>,
    /// Why its connection closed, when it did (it crashed or was stopped).
    pub stopped: Option<String>,
}

/// The supervised language servers of one core, one instance per server name, shared by
/// every session. Every method may be called from any thread at any time; a misbehaving
/// server blocks only the callers waiting on it.
pub trait CodeHost: Send + Sync {
    /// Send `method` with `params` to the server `spec` describes, starting it first if it is
    /// not running (or running with a different spec: the configuration changed). Waits up
    /// to the spec's request timeout (`busy` past it, with `$/cancelRequest` sent).
    fn request(
        &self,
        spec: &LaunchSpec,
        method: &str,
        params: Value,
    ) -> Result<CodeAnswer, CodeError>;

    /// Make the server's text of the file at absolute `path` be `text` (opened as
    /// `language_id` if it is not open, else changed). Nothing is sent when the server already
    /// has exactly this text. Starts the server if needed.
    fn sync(
        &self,
        spec: &LaunchSpec,
        path: &Path,
        language_id: &str,
        text: &str,
    ) -> Result<(), CodeError>;

    /// Close the file at `path` on the server `server`, if it is open there.
    fn close(&self, server: &str, path: &Path);

    /// The position encoding the running server negotiated (`None`: not running).
    fn encoding(&self, server: &str) -> Option<Encoding>;

    /// The running server's `capabilities` (`None`: not running).
    fn capabilities(&self, server: &str) -> Option<Value>;

    /// The push diagnostics the server last published for `path`: the version they were for
    /// (if the server said) and the LSP `Diagnostic` objects.
    fn published(&self, server: &str, path: &Path) -> Option<(Option<i64>, Vec<Value>)>;

    /// [`CodeHost::published`] with its place on the server's clock (0 when the host keeps
    /// none).
    fn publication(&self, server: &str, path: &Path) -> Option<Publication> {
        let (version, diagnostics) = self.published(server, path)?;
        Some(Publication { version, diagnostics, at: 0 })
    }

    /// What the running server has said about its work (`None`: the host does not say, or
    /// no server runs).
    fn activity(&self, _server: &str) -> Option<Activity> {
        None
    }

    /// The version of `path` the server was last sent (`None`: not open there).
    fn version(&self, server: &str, path: &Path) -> Option<i64>;

    /// Every server the host holds: `{name, state, pid, supervisorPid, restarts,
    /// recentCrashes, positionEncoding, capabilities, progress, lastError}`.
    fn status(&self) -> Vec<Value>;

    /// Stop the server (shutdown, then its whole process tree), forget its crashes and start
    /// it again with `spec`; its status after the start.
    fn restart(&self, spec: &LaunchSpec) -> Result<Value, CodeError>;

    /// A feed of what the running servers publish, for one editor's connection; dropped
    /// receivers are forgotten. Bounded: a receiver that stops reading misses events.
    fn subscribe(&self) -> Receiver<CodeEvent>;

    /// Stop every server (the core is shutting down).
    fn shutdown(&self);
}

impl std::fmt::Debug for dyn CodeHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeHost")
    }
}

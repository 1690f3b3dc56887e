//! What can go wrong with a language server, each mapped onto the core's one `Code` (SPEC §16
//! and §17); every message names the server and says what to do.

use std::time::Duration;

use stardust_core::Code;

/// An error from a supervised language server. `code()` is the stable wire code.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The command does not exist or cannot be executed: nothing was started.
    #[error(
        "language server '{server}' cannot start: {command} {reason}; install it or fix `command` in [servers.{server}]"
    )]
    Missing { server: String, command: String, reason: String },
    /// Spawning, the handshake or the transport failed; nothing is left running.
    #[error("language server '{server}' failed to start: {reason}")]
    StartFailed { server: String, reason: String },
    /// The server died (or closed its output) while this request was waiting; the request is
    /// not replayed, the next one starts the server again.
    #[error(
        "language server '{server}' stopped while answering {method}: {reason}; retry the request (the server is started again unless it crashed more than max_restarts times this minute)"
    )]
    Crashed { server: String, method: String, reason: String },
    /// The server crashed more than `max_restarts` times within a minute.
    #[error(
        "language server '{server}' crashed {restarts} times within a minute and is not restarted; run server_restart after fixing it"
    )]
    GaveUp { server: String, restarts: u32 },
    /// The server was stopped (the core is shutting down or the server was restarted).
    #[error("language server '{server}' was stopped")]
    Stopped { server: String },
    /// No answer within the deadline; `$/cancelRequest` was sent.
    #[error("language server '{server}' did not answer {method} within {}s (cancelled); it may still be indexing, try again later", timeout.as_secs_f64())]
    Busy { server: String, method: String, timeout: Duration },
    /// The server kept answering ContentModified / ServerCancelled past the retries.
    #[error(
        "language server '{server}' kept cancelling {method} (the file kept changing); try again"
    )]
    Changing { server: String, method: String },
    /// The server does not implement the method, or does not advertise it.
    #[error("language server '{server}' does not support {method}")]
    Unsupported { server: String, method: String },
    /// The server answered the request with an error.
    #[error("language server '{server}' answered {method} with error {code}: {message}")]
    Rpc { server: String, method: String, code: i64, message: String },
}

impl ServerError {
    /// The code of SPEC §16 this error is sent as.
    pub fn code(&self) -> Code {
        match self {
            ServerError::Missing { .. }
            | ServerError::StartFailed { .. }
            | ServerError::Crashed { .. }
            | ServerError::GaveUp { .. }
            | ServerError::Stopped { .. } => Code::ServerUnavailable,
            ServerError::Busy { .. } | ServerError::Changing { .. } => Code::Busy,
            ServerError::Unsupported { .. } => Code::Unsupported,
            ServerError::Rpc { code, .. } if *code == REQUEST_CANCELLED => Code::Cancelled,
            ServerError::Rpc { .. } => Code::Internal,
        }
    }

    /// The server this error is about.
    pub fn server(&self) -> &str {
        match self {
            ServerError::Missing { server, .. }
            | ServerError::StartFailed { server, .. }
            | ServerError::Crashed { server, .. }
            | ServerError::GaveUp { server, .. }
            | ServerError::Stopped { server }
            | ServerError::Busy { server, .. }
            | ServerError::Changing { server, .. }
            | ServerError::Unsupported { server, .. }
            | ServerError::Rpc { server, .. } => server,
        }
    }
}

/// JSON-RPC / LSP error codes the client reacts to.
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const REQUEST_CANCELLED: i64 = -32800;
pub const CONTENT_MODIFIED: i64 = -32801;
pub const SERVER_CANCELLED: i64 = -32802;

//! The SDK's errors: a command the core refused (with its error code), or a connection that
//! could not be made or was lost.

use std::path::PathBuf;

use serde_json::Value;
use stardust_core::Code;

/// What can go wrong talking to a store's core.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The core ran the command and answered an error. `code` is the error code
    /// (`invalid-arguments`, `not-found`, `refused`, `preview-stale`, ...); `data` holds the
    /// details the core gave with it (`problems` of a refused commit, `path` of a stale
    /// preview, ...), including `code` itself.
    #[error("{message} [{code}]")]
    Command { code: Code, message: String, data: Value },
    /// No connection to the store's core could be made.
    #[error("cannot connect to the core of {}: {message}", store.display())]
    Connect { store: PathBuf, message: String },
    /// The core closed the connection (it stopped, or was restarted).
    #[error("the core closed the connection; connect again (a subscription reconnects by itself)")]
    Disconnected,
    /// Reading from or writing to the connection failed.
    #[error("the connection to the core failed: {0}")]
    Io(#[from] std::io::Error),
    /// The core sent something that is not the protocol this SDK speaks.
    #[error("the core's answer does not follow the protocol: {0}")]
    Protocol(String),
    /// A result did not have the shape asked for (a query row that does not deserialize into
    /// the requested type, say).
    #[error("cannot read the result as the requested type: {0}")]
    Decode(String),
}

impl Error {
    /// The error code: the core's own for [`Error::Command`], `type-error` for a result that
    /// does not fit the requested type, and `internal` for connection failures.
    pub fn code(&self) -> Code {
        match self {
            Error::Command { code, .. } => *code,
            Error::Decode(_) => Code::TypeError,
            Error::Connect { .. } | Error::Disconnected | Error::Io(_) | Error::Protocol(_) => {
                Code::Internal
            }
        }
    }

    /// Whether the connection is gone (so connecting again may help).
    pub fn is_disconnect(&self) -> bool {
        matches!(self, Error::Disconnected | Error::Io(_))
    }
}

/// The SDK's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

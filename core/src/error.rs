//! The core's typed errors, each with the stable code of SPEC §16.

use std::path::PathBuf;

/// An error a caller of the core can act on. `code()` is the stable wire name.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid configuration in {path}: {message}")]
    ConfigInvalid { path: PathBuf, message: String },
    #[error("{0}")]
    InvalidArguments(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{path} is outside the store; give a path inside {store}")]
    OutsideStore { path: PathBuf, store: PathBuf },
    #[error("{0}")]
    Unsupported(String),
    /// An expression applied to values of the wrong type (the message names them), or a
    /// division by zero.
    #[error("{0}")]
    TypeError(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The stable kebab-case code shared by every front (SPEC §16).
    pub fn code(&self) -> &'static str {
        match self {
            Error::ConfigInvalid { .. } => "config-invalid",
            Error::InvalidArguments(_) => "invalid-arguments",
            Error::NotFound(_) => "not-found",
            Error::OutsideStore { .. } => "outside-store",
            Error::Unsupported(_) => "unsupported",
            Error::TypeError(_) => "type-error",
            Error::Io { .. } => "internal",
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io { context: context.into(), source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

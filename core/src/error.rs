//! The core's typed errors and the stable codes of SPEC §16, with the one rendering of the
//! error object (`{code, message, ...details}`) and of the command line's error line that
//! every front uses.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A stable error code of SPEC §16, the same on every front. Serialised in kebab-case.
///
/// Every typed error of the core (and of the fronts) maps onto exactly one `Code`; no front
/// names a code by its string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    ConfigInvalid,
    InvalidArguments,
    NotFound,
    OutsideStore,
    /// An address that names more than one place: an entity id carried by two entities
    /// (see docs/DECISIONS.md).
    AmbiguousPosition,
    Unsupported,
    Refused,
    Conflict,
    PreviewNotFound,
    PreviewExpired,
    PreviewStale,
    MutationDisabled,
    TypeError,
    Busy,
    Cancelled,
    Internal,
    ServerUnavailable,
    Untrusted,
    Unavailable,
}

impl Code {
    /// Every code, in the order of SPEC §16.
    pub const ALL: [Code; 19] = [
        Code::ConfigInvalid,
        Code::InvalidArguments,
        Code::NotFound,
        Code::OutsideStore,
        Code::AmbiguousPosition,
        Code::Unsupported,
        Code::Refused,
        Code::Conflict,
        Code::PreviewNotFound,
        Code::PreviewExpired,
        Code::PreviewStale,
        Code::MutationDisabled,
        Code::TypeError,
        Code::Busy,
        Code::Cancelled,
        Code::Internal,
        Code::ServerUnavailable,
        Code::Untrusted,
        Code::Unavailable,
    ];

    /// The wire name, e.g. `invalid-arguments`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ConfigInvalid => "config-invalid",
            Code::InvalidArguments => "invalid-arguments",
            Code::NotFound => "not-found",
            Code::OutsideStore => "outside-store",
            Code::AmbiguousPosition => "ambiguous-position",
            Code::Unsupported => "unsupported",
            Code::Refused => "refused",
            Code::Conflict => "conflict",
            Code::PreviewNotFound => "preview-not-found",
            Code::PreviewExpired => "preview-expired",
            Code::PreviewStale => "preview-stale",
            Code::MutationDisabled => "mutation-disabled",
            Code::TypeError => "type-error",
            Code::Busy => "busy",
            Code::Cancelled => "cancelled",
            Code::Internal => "internal",
            Code::ServerUnavailable => "server-unavailable",
            Code::Untrusted => "untrusted",
            Code::Unavailable => "unavailable",
        }
    }

    /// The code of a wire name; `None` for a name SPEC §16 does not list.
    pub fn parse(name: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Whether the caller's input was wrong (a usage error): the command line exits with 2.
    pub fn is_usage(self) -> bool {
        matches!(self, Code::ConfigInvalid | Code::InvalidArguments | Code::OutsideStore)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// The error object of SPEC §13 and §16: `{code, message, ...details}`. Details never
/// override the code or the message. LSP sends it as the JSON-RPC error's `data`, MCP as
/// the JSON text `{"error": ...}` of a tool error's content, the daemon's cli front as `{"error": ...}`.
pub fn error_object(code: Code, message: &str, details: Value) -> Value {
    let mut object = match details {
        Value::Object(details) => details,
        _ => serde_json::Map::new(),
    };
    object.insert("code".into(), json!(code));
    object.insert("message".into(), json!(message));
    Value::Object(object)
}

/// The command line's (and MCP's text content's) rendering: `error[<code>]: message`.
pub fn error_line(code: Code, message: &str) -> String {
    format!("error[{code}]: {message}")
}

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
    /// A place that names more than one document: an entity id that two entities carry.
    #[error("{0}")]
    AmbiguousPosition(String),
    #[error("{0}")]
    Unsupported(String),
    /// An expression applied to values of the wrong type (the message names them), or a
    /// division by zero.
    #[error("{0}")]
    TypeError(String),
    /// What a change was computed from is not what is there (an editor's unsaved text, a file
    /// changed since it was read); the message says what to do.
    #[error("{0}")]
    Conflict(String),
    /// The save authority refuses a change (the message lists why).
    #[error("{0}")]
    Refused(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The stable code shared by every front (SPEC §16).
    pub fn code(&self) -> Code {
        match self {
            Error::ConfigInvalid { .. } => Code::ConfigInvalid,
            Error::InvalidArguments(_) => Code::InvalidArguments,
            Error::NotFound(_) => Code::NotFound,
            Error::OutsideStore { .. } => Code::OutsideStore,
            Error::AmbiguousPosition(_) => Code::AmbiguousPosition,
            Error::Unsupported(_) => Code::Unsupported,
            Error::TypeError(_) => Code::TypeError,
            Error::Conflict(_) => Code::Conflict,
            Error::Refused(_) => Code::Refused,
            Error::Io { .. } => Code::Internal,
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io { context: context.into(), source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code has one wire name, both ways. (That docs/reference/codes.md lists exactly
    /// these codes is tests/reference.rs's check.)
    #[test]
    fn every_code_round_trips() {
        for code in Code::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(code.as_str()));
            assert_eq!(serde_json::from_value::<Code>(json!(code.as_str())).unwrap(), code);
            assert_eq!(Code::parse(code.as_str()), Some(code));
        }
        let names: std::collections::BTreeSet<&str> =
            Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), Code::ALL.len());
    }

    #[test]
    fn one_rendering_of_the_error_object_and_line() {
        let object = error_object(
            Code::PreviewStale,
            "books/a.dust changed",
            json!({"path": "books/a.dust", "code": "not this", "message": "nor this"}),
        );
        assert_eq!(
            object,
            json!({"path": "books/a.dust", "code": "preview-stale", "message": "books/a.dust changed"})
        );
        assert_eq!(
            error_object(Code::Busy, "in use", Value::Null),
            json!({"code": "busy", "message": "in use"})
        );
        assert_eq!(error_line(Code::NotFound, "no entity"), "error[not-found]: no entity");
    }
}

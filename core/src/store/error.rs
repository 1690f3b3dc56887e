//! The store's typed errors, each with the stable code of SPEC §16.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::diagnostics::Diagnostic;

use super::txn::Version;

/// Why a store operation failed. `code()` is the stable wire name.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the store {store} is in use by {}; stop that process or send the request through it",
        owner(*pid)
    )]
    Busy { store: PathBuf, pid: Option<u32> },

    #[error("{path} changed since version {}; re-read it and retry", short(expected))]
    Conflict {
        path: String,
        /// The version the caller expected; `None` means "expected no document".
        expected: Option<Version>,
        /// The version found; `None` means the document does not exist.
        found: Option<Version>,
    },

    #[error("{}", refused_message(problems))]
    Refused {
        /// Each new problem with the store-relative path of its document.
        problems: Vec<(String, Diagnostic)>,
    },

    /// A code file's save adds errors from its language server, and `[save] refuse` lists
    /// `code-error` (SPEC §18).
    #[error(
        "the save adds errors its language server reports, and [save] refuse lists code-error; \
         nothing was written: {}",
        errors.join("; ")
    )]
    CodeRefused {
        /// Each error as `path:line:column: error[code-error] message (server)`.
        errors: Vec<String>,
    },

    /// A revert whose change overlaps what a later transaction changed (SPEC §26).
    #[error(
        "cannot revert seq {seq}: seq {later} changed the same lines of {path} since; revert \
         seq {later} first, or edit {path} by hand"
    )]
    RevertConflict { path: String, seq: u64, later: u64 },

    #[error(
        "the core of {store} is shutting down and takes no more changes; retry once it restarts"
    )]
    Closed { store: PathBuf },

    #[error("no document {0}; check the path (store-relative, '/'-separated)")]
    NotFound(String),

    #[error("{path} is outside the store {store}; give a path inside it")]
    OutsideStore { path: String, store: PathBuf },

    #[error("invalid arguments: {0}")]
    InvalidArguments(String),

    #[error(
        "the transaction log {log} is damaged at byte {offset} (the record of seq {seq}): \
         {reason}; run `stardust log --verify {store}` for details, and restore \
         .stardust/log from a backup; no history was dropped"
    )]
    LogCorrupt { log: PathBuf, store: PathBuf, seq: u64, offset: u64, reason: String },

    #[error(
        "a write to {store} failed half-way and could not be undone ({reason}); close and \
         reopen the store to finish recovery"
    )]
    Poisoned { store: PathBuf, reason: String },

    #[error(
        "{what}; nothing was written: check that the database is running and reachable, then retry"
    )]
    Unavailable {
        /// What could not be done, and the database's answer (never a password).
        what: String,
    },

    #[error(
        "the database of this team store is at seq {database}, behind this machine's copy at \
         seq {local}: the database was restored or replaced; point [store] url at the store's \
         database, or move {store}/.stardust away to start this copy afresh from the database"
    )]
    RemoteBehind { store: PathBuf, database: u64, local: u64 },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error(transparent)]
    Core(#[from] crate::Error),
}

impl StoreError {
    /// The stable kebab-case code shared by every front (SPEC §16).
    pub fn code(&self) -> crate::Code {
        match self {
            StoreError::Busy { .. } | StoreError::Closed { .. } => crate::Code::Busy,
            StoreError::Conflict { .. }
            | StoreError::RevertConflict { .. }
            | StoreError::RemoteBehind { .. } => crate::Code::Conflict,
            StoreError::Unavailable { .. } => crate::Code::Unavailable,
            StoreError::Refused { .. } | StoreError::CodeRefused { .. } => crate::Code::Refused,
            StoreError::NotFound(_) => crate::Code::NotFound,
            StoreError::OutsideStore { .. } => crate::Code::OutsideStore,
            StoreError::InvalidArguments(_) => crate::Code::InvalidArguments,
            StoreError::LogCorrupt { .. } | StoreError::Poisoned { .. } => crate::Code::Internal,
            StoreError::Io { .. } => crate::Code::Internal,
            StoreError::Core(err) => err.code(),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> StoreError {
        StoreError::Io { context: context.into(), source }
    }

    /// The underlying I/O error kind, if this is an I/O failure (e.g. `StorageFull`).
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            StoreError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

fn owner(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_owned(),
    }
}

fn short(version: &Option<Version>) -> String {
    match version {
        Some(v) => v.to_string()[..12].to_owned(),
        None => "(none: it was expected not to exist)".to_owned(),
    }
}

fn refused_message(problems: &[(String, Diagnostic)]) -> String {
    let mut out = format!(
        "the change was refused: it would add {} problem{} that [save] refuse lists",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for (path, diagnostic) in problems.iter().take(5) {
        let _ = write!(
            out,
            "; {path}: {}[{}] {}",
            diagnostic.severity.as_str(),
            diagnostic.code,
            diagnostic.message
        );
    }
    if problems.len() > 5 {
        let _ = write!(out, "; and {} more", problems.len() - 5);
    }
    out.push_str("; fix them and retry");
    out
}

pub type StoreResult<T> = Result<T, StoreError>;

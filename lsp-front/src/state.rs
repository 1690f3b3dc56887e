//! The state the handlers share: one connection's store, buffers and client choices, set once
//! at `initialize`, and the immutable [`Snapshot`] a request runs on. The buffers and their
//! analysis are the core's (`ide::Buffers`); this module only holds and converts. It stands
//! below every feature module: what a feature keeps per connection is declared here (its
//! behaviour stays with the feature), so no feature is imported by the state they all take.

use stardust_core::sync::lock;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use async_lsp::{ClientSocket, ErrorCode, ResponseError};
use lsp_types::{ClientCapabilities, Url};
use serde_json::Value;
use stardust_core::Code;
use stardust_core::analysis::Analysis;
use stardust_core::ide::{Buffers, Overlay};
use stardust_core::service::{Front, Service, Session};
use stardust_core::text::Encoding;

use crate::convert::Paths;

/// Where the server's store comes from.
#[derive(Clone)]
pub enum StoreSource {
    /// Open the store itself: the flag's, else the client's root (`stardust lsp` alone), with
    /// the language servers' host for its code files, for a client of the front given
    /// (`Lsp`, or `Sdk` for a program using an SDK: it names the commits' origin).
    Open(Option<PathBuf>, Option<Arc<dyn stardust_core::codefiles::CodeHost>>, Front),
    /// A core already serving the store (`stardust serve`, the daemon): this connection is one
    /// of its sessions.
    Attached(Arc<Service>, Front),
}

/// The router's state, on the main loop.
pub(crate) struct State {
    pub(crate) client: ClientSocket,
    pub(crate) shared: Arc<Shared>,
    pub(crate) store: StoreSource,
}

impl State {
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    pub(crate) fn client(&self) -> ClientSocket {
        self.client.clone()
    }
}

/// What the handlers share with the blocking pool: the connection, once initialized.
#[derive(Default)]
pub(crate) struct Shared {
    connection: OnceLock<Connection>,
    /// The client's folding choices, set at `initialize` (`structure::extend_capabilities`).
    pub(crate) structure: ChoicesCell,
    /// Whether the client draws semantic tokens that span lines (set at `initialize`).
    pub(crate) multiline_tokens: OnceLock<bool>,
    /// The last semantic-tokens result sent per open document, for delta requests; a
    /// document's goes when it is closed.
    pub(crate) token_results: Mutex<Results>,
    /// The relay of code files (their sync worker, what was said about their servers).
    pub(crate) relay: RelayState,
}

/// One initialized connection. Only the buffers (behind their own lock) and the session change.
pub(crate) struct Connection {
    pub(crate) paths: Paths,
    /// The open documents, by store path, each with the URI the client named it by.
    pub(crate) buffers: Buffers<Url>,
    /// The store's service (store mode only): commands run, commits notify.
    service: Option<Arc<Service>>,
    /// This connection's session with the service, until it closes.
    session: Mutex<Option<Session>>,
    /// The change notifications the client asked for (SPEC §11).
    pub(crate) wants: Wants,
    /// Whether the client applies workspace edits that rename files.
    pub(crate) renames_files: bool,
    /// How the client hears of diagnostics.
    pub(crate) diagnostics: DiagnosticsMode,
    pub(crate) encoding: Encoding,
}

impl Connection {
    pub(crate) fn new(
        paths: Paths,
        buffers: Buffers<Url>,
        session: Option<(Arc<Service>, Session)>,
        wants: Wants,
        renames_files: bool,
        diagnostics: DiagnosticsMode,
        encoding: Encoding,
    ) -> Connection {
        let (service, session) = session.unzip();
        let session = Mutex::new(session);
        Connection { paths, buffers, service, session, wants, renames_files, diagnostics, encoding }
    }

    /// The store's service; `None` in read-only mode.
    pub(crate) fn service(&self) -> Option<&Arc<Service>> {
        self.service.as_ref()
    }

    /// End this connection's session: its previews go (a shared core keeps serving others).
    pub(crate) fn close_session(&self) {
        let session = lock(&self.session).take();
        if let (Some(service), Some(session)) = (&self.service, session) {
            service.close_session(&session);
        }
    }
}

/// An immutable view for one request or one publication.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub(crate) paths: Paths,
    pub(crate) analysis: Analysis,
    pub(crate) encoding: Encoding,
    /// Whether the client applies workspace edits that rename files.
    pub(crate) renames_files: bool,
    /// The buffers the analysis was computed with.
    pub(crate) overlay: Overlay<Url>,
}

impl Shared {
    /// The connection, once `initialize` has set it.
    pub(crate) fn connection(&self) -> Option<&Connection> {
        self.connection.get()
    }

    /// Set the connection at `initialize`. A second one (which the lifecycle layer answers
    /// before it gets here) is refused and its session closed.
    pub(crate) fn install(&self, connection: Connection) -> Result<(), ResponseError> {
        self.connection.set(connection).map_err(|connection| {
            connection.close_session();
            error(
                ErrorCode::INVALID_REQUEST,
                Code::InvalidArguments,
                "the server is initialized already",
            )
        })
    }

    /// The analysis of the store with every open buffer.
    pub(crate) fn snapshot(&self) -> Result<Snapshot, ResponseError> {
        self.snapshot_with(|buffers| Some(buffers.snapshot())).map(|s| s.expect("always taken"))
    }

    /// The analysis of `generation`, `None` when the core's buffers have a newer one.
    pub(crate) fn snapshot_latest(
        &self,
        generation: u64,
    ) -> Result<Option<Snapshot>, ResponseError> {
        self.snapshot_with(|buffers| buffers.snapshot_latest(generation))
    }

    fn snapshot_with(
        &self,
        take: impl FnOnce(&Buffers<Url>) -> Option<Overlay<Url>>,
    ) -> Result<Option<Snapshot>, ResponseError> {
        let Some(conn) = self.connection() else {
            return Err(error(
                ErrorCode::SERVER_NOT_INITIALIZED,
                Code::NotFound,
                "no store is loaded; start the server in a store, give --store, or open a store's folder",
            ));
        };
        let Some(overlay) = take(&conn.buffers) else { return Ok(None) };
        Ok(Some(Snapshot {
            paths: conn.paths.clone(),
            analysis: overlay.analysis.clone(),
            encoding: conn.encoding,
            renames_files: conn.renames_files,
            overlay,
        }))
    }

    /// The service and this connection's session; in read-only mode, the error that kept the
    /// store from opening (`busy` when another process owns it).
    pub(crate) fn service(&self) -> Result<(Arc<Service>, Session), ResponseError> {
        let conn = self.connection();
        if let Some(why) = conn.and_then(|c| c.buffers.read_only()) {
            return Err(error(ErrorCode::REQUEST_FAILED, why.code(), why.to_string()));
        }
        let service = conn.and_then(Connection::service);
        let session = conn.and_then(|c| lock(&c.session).clone());
        match (service, session) {
            (Some(service), Some(session)) => Ok((service.clone(), session)),
            _ => Err(error(
                ErrorCode::SERVER_NOT_INITIALIZED,
                Code::NotFound,
                "no store is loaded; initialize first",
            )),
        }
    }

    /// Note that the documents under the buffers changed (a commit): re-diagnose.
    pub(crate) fn bump(&self) {
        if let Some(conn) = self.connection() {
            conn.buffers.store_changed();
        }
    }

    /// End the connection's session, if there is one.
    pub(crate) fn close_session(&self) {
        if let Some(conn) = self.connection() {
            conn.close_session();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.close_session();
    }
}

impl Snapshot {
    /// The store-relative path of a document of the store.
    pub(crate) fn path_of(&self, uri: &Url) -> Result<String, ResponseError> {
        let path = self
            .paths
            .resolve(uri)
            .map_err(|err| error(ErrorCode::INVALID_PARAMS, err.code(), err.to_string()))?;
        if self.analysis.document(&path).is_none() {
            return Err(error(
                ErrorCode::INVALID_PARAMS,
                Code::NotFound,
                format!("{path} is not a document of the store; open it or create it first"),
            ));
        }
        Ok(path)
    }
}

/// A JSON-RPC error whose data is the core's error object (SPEC §16).
pub(crate) fn error(rpc: ErrorCode, code: Code, message: impl Into<String>) -> ResponseError {
    let message = message.into();
    let data = stardust_core::error::error_object(code, &message, serde_json::Value::Null);
    ResponseError::new_with_data(rpc, message, data)
}

pub(crate) fn internal(err: impl std::fmt::Display) -> ResponseError {
    error(ErrorCode::INTERNAL_ERROR, Code::Internal, format!("internal error: {err}"))
}

/// Run `f` on a snapshot on the blocking pool.
pub(crate) async fn with_snapshot<T: Send + 'static>(
    shared: Arc<Shared>,
    f: impl FnOnce(&Snapshot) -> Result<T, ResponseError> + Send + 'static,
) -> Result<T, ResponseError> {
    tokio::task::spawn_blocking(move || f(&shared.snapshot()?)).await.map_err(internal)?
}

/// The change notifications a client opted in to at `initialize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wants {
    pub documents: bool,
    pub entities: bool,
}

impl Wants {
    /// Read `capabilities.experimental.stardust.notifications`; anything else asks for nothing.
    pub fn from_capabilities(capabilities: &ClientCapabilities) -> Wants {
        let asked: Vec<&str> = capabilities
            .experimental
            .as_ref()
            .and_then(|e| e.pointer("/stardust/notifications"))
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        Wants {
            documents: asked.contains(&"documentsChanged"),
            entities: asked.contains(&"entitiesChanged"),
        }
    }
}

/// How a client hears of diagnostics. A client that pulls asks after every edit by itself,
/// so publishing too would compute every analysis twice and, in editors that keep pushed and
/// pulled diagnostics apart, show each problem twice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum DiagnosticsMode {
    /// The client cannot pull: diagnostics are published after every change.
    #[default]
    Push,
    /// The client pulls. After a commit it is asked to pull again
    /// (`workspace/diagnostic/refresh`), and sent the diagnostics if it refuses. (Whether it
    /// supports the refresh cannot be read reliably: `lsp-types` 0.95 looks for
    /// `workspace.diagnostic` where LSP 3.17 says `workspace.diagnostics`.)
    Pull,
}

impl DiagnosticsMode {
    pub(crate) fn of(capabilities: &lsp_types::ClientCapabilities) -> DiagnosticsMode {
        if capabilities.text_document.as_ref().is_some_and(|t| t.diagnostic.is_some()) {
            DiagnosticsMode::Pull
        } else {
            DiagnosticsMode::Push
        }
    }
}

/// What the client told us at `initialize` about folding (`structure`'s features).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Choices {
    /// The client folds whole lines only (`foldingRange.lineFoldingOnly`).
    pub(crate) line_folding_only: bool,
    /// The most folding ranges the client wants (`foldingRange.rangeLimit`).
    pub(crate) range_limit: Option<usize>,
}

/// Where a connection keeps its [`Choices`]: set once at `initialize`.
pub(crate) type ChoicesCell = OnceLock<Choices>;

/// The last full result sent for each document (`tokens`' deltas).
#[derive(Default)]
pub(crate) struct Results {
    pub(crate) next_id: u64,
    pub(crate) by_uri: HashMap<Url, (u64, Arc<Vec<u32>>)>,
}

/// What the relay keeps for one connection (`relay`'s code files).
#[derive(Default)]
pub(crate) struct RelayState {
    /// The worker that gives servers the editor's texts, in order.
    pub(crate) sync: OnceLock<Mutex<mpsc::Sender<String>>>,
    /// What was said already about servers that could not take a file (one message each).
    pub(crate) shown: Arc<Mutex<HashSet<String>>>,
    /// Whether the client takes `LocationLink`s (else links become `Location`s).
    pub(crate) links: OnceLock<bool>,
}

/// The texts this connection's editor holds open, for the service (a revert of a file held
/// with unsaved text is a `conflict`, SPEC §26). Weak: the service outlives no connection.
pub(crate) struct EditorTexts(pub(crate) std::sync::Weak<Shared>);

impl stardust_core::service::EditorTexts for EditorTexts {
    fn text(&self, path: &str) -> Option<String> {
        self.0.upgrade()?.connection()?.buffers.text_of(path)
    }
}

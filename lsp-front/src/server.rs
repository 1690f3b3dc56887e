//! The server: state, text sync, diagnostics and the request handlers.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use async_lsp::concurrency::ConcurrencyLayer;
use async_lsp::panic::CatchUnwindLayer;
use async_lsp::router::Router;
use async_lsp::server::LifecycleLayer;
use async_lsp::tracing::TracingLayer;
use async_lsp::{AnyNotification, ClientSocket, ErrorCode, LanguageClient, ResponseError};
use lsp_types::notification::{self, Notification};
use lsp_types::request;
use lsp_types::{
    DiagnosticOptions, DiagnosticServerCapabilities, DidChangeTextDocumentParams,
    DidChangeWatchedFilesParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DidSaveTextDocumentParams, DocumentDiagnosticParams, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, FullDocumentDiagnosticReport, InitializeParams,
    InitializeResult, PublishDiagnosticsParams, RelatedFullDocumentDiagnosticReport,
    ServerCapabilities, ServerInfo, TextDocumentContentChangeEvent, TextDocumentSyncCapability,
    TextDocumentSyncKind, TextDocumentSyncOptions, TextDocumentSyncSaveOptions, Url,
    WorkDoneProgressOptions, WorkspaceDiagnosticReport, WorkspaceDiagnosticReportResult,
    WorkspaceDocumentDiagnosticReport, WorkspaceFullDocumentDiagnosticReport,
};
use stardust_core::Code;
use stardust_core::analysis::Analysis;
use stardust_core::service::{Front, Service, Session};
use stardust_core::store::{OpenOptions, Store};
use stardust_core::syntax::Lang;
use stardust_core::text::{Encoding, LineIndex};
use tower::ServiceBuilder;

use crate::convert::{self, Paths};

/// Requests are cheap to queue; the limit only guards against a runaway client.
const MAX_CONCURRENT_REQUESTS: usize = 1024;

/// Where the server's store comes from.
#[derive(Clone)]
pub enum StoreSource {
    /// Open the store itself: the flag's, else the client's root (`stardust lsp` alone).
    Open(Option<PathBuf>),
    /// A core already serving the store (`stardust serve`, the daemon): this connection is one
    /// of its sessions.
    Attached(Arc<Service>, Front),
}

/// Serve LSP on stdin/stdout until the client exits or closes the input.
pub fn run_stdio(store: Option<PathBuf>) -> anyhow::Result<()> {
    let cwd = std::env::current_dir()?;
    let store = stardust_core::scan::find_store(store.as_deref(), &cwd);
    run(std::io::stdin(), std::io::stdout(), StoreSource::Open(store), std::future::pending())
}

/// Serve LSP on one connection to a running core (the daemon's socket), until the client
/// closes its input or `gone` resolves: the core saw the client go, which the session itself
/// may never notice while it holds back on a client that stopped reading.
pub fn run_attached(
    service: Arc<Service>,
    front: Front,
    input: impl std::io::Read + Send + 'static,
    output: impl std::io::Write + Send + 'static,
    gone: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    run(input, output, StoreSource::Attached(service, front), gone)
}

fn run(
    input: impl std::io::Read + Send + 'static,
    output: impl std::io::Write + Send + 'static,
    store: StoreSource,
    gone: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let shared = Arc::new(Shared::default());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Requests run on the blocking pool: two cores gain nothing from hundreds of
        // threads, and every thread keeps its own allocator heap.
        .max_blocking_threads(16)
        .enable_all()
        .build()?;
    let state_shared = shared.clone();
    let result = runtime.block_on(async move {
        let in_flight = Arc::new(crate::inflight::InFlight::default());
        let counted = in_flight.clone();
        let (main_loop, _) = async_lsp::MainLoop::new_server(|client| {
            ServiceBuilder::new()
                .layer(crate::inflight::InFlightLayer(counted))
                .layer(TracingLayer::default())
                .layer(LifecycleLayer::default())
                .layer(CatchUnwindLayer::default())
                .layer(crate::cancel::CancelledCodeLayer)
                .layer(ConcurrencyLayer::new(
                    NonZeroUsize::new(MAX_CONCURRENT_REQUESTS).expect("non-zero"),
                ))
                .service(router(State { client, shared: state_shared, store }))
        });
        let input = crate::frames::checked_input(input, in_flight);
        let output = crate::frames::ThreadWriter::new(output);
        // Dropping the main loop drops its queues, which ends the reader and writer threads.
        let served = main_loop.run(input, output);
        futures::pin_mut!(served, gone);
        match futures::future::select(served, gone).await {
            futures::future::Either::Left((served, _)) => match served {
                Ok(()) | Err(async_lsp::Error::Eof) => Ok(()),
                Err(err) => Err(anyhow::anyhow!("the LSP session failed: {err}")),
            },
            futures::future::Either::Right(((), _)) => {
                tracing::info!("the client has gone: ending its session");
                Ok(())
            }
        }
    });
    // The connection is over: its previews go (a shared core keeps serving others).
    let mut inner = shared.lock();
    let session = inner.session.take();
    if let (Some(Source::Store(service)), Some(session)) = (&inner.source, session) {
        service.close_session(&session);
    }
    result
}

/// One open editor buffer. Snapshots share its text and line index; an edit copies them only
/// while a snapshot still holds the old ones.
#[derive(Clone, Debug)]
struct Buffer {
    /// Store-relative path.
    path: String,
    text: Arc<String>,
    index: Arc<LineIndex>,
    version: i32,
}

impl Buffer {
    fn new(path: String, text: String, version: i32) -> Buffer {
        let index = Arc::new(LineIndex::new(&text));
        Buffer { path, text: Arc::new(text), index, version }
    }
}

/// The analysis of one generation, computed once however many requests ask for it, with the
/// open paths it was computed with.
#[derive(Default)]
pub(crate) struct Pending {
    analysis: OnceLock<(Analysis, BTreeSet<String>)>,
    /// The latest computed analysis of an earlier generation at the same store seq: the
    /// computation takes it over and edits it in place when nothing else holds it.
    previous: Mutex<Option<Arc<Pending>>>,
}

/// What the handlers share with the blocking pool.
#[derive(Default)]
pub(crate) struct Shared {
    inner: Mutex<Inner>,
    /// The generation whose diagnostics were published last; publishing is in generation
    /// order so that a slow, stale analysis never overwrites a newer one.
    published: Mutex<u64>,
}

/// Where the documents under the buffers come from.
pub(crate) enum Source {
    /// The store, owned by this process through the service: commands run, commits notify.
    Store(Arc<Service>),
    /// The store could not be opened for writing (another process owns it, or it is read-only
    /// or damaged): its documents as read from disk, no commands.
    ReadOnly {
        base: Analysis,
        /// Why the store could not be opened: the error's code (`busy` when another process
        /// owns it) and message, which commands answer.
        code: Code,
        why: String,
    },
}

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) paths: Option<Paths>,
    pub(crate) source: Option<Source>,
    /// This connection's session with the service (store mode only).
    pub(crate) session: Option<Session>,
    /// The change notifications the client asked for (SPEC §11).
    pub(crate) wants: crate::commands::Wants,
    /// Whether the client applies workspace edits that rename files.
    pub(crate) renames_files: bool,
    /// How the client hears of diagnostics.
    pub(crate) diagnostics: DiagnosticsMode,
    encoding: Encoding,
    buffers: BTreeMap<Url, Buffer>,
    /// Bumped on every change of the buffers and after every commit to the store.
    generation: u64,
    /// The analysis of the source at `seq` with the buffers of `generation`, computed once
    /// however many requests and publications ask for it at the same time.
    cache: Option<(u64, u64, Arc<Pending>)>,
    /// Read-only mode: documents that may have changed on disk (saved, closed, or reported by
    /// the client's file watcher), read again before the next analysis. In store mode the
    /// store's watcher takes such edits in.
    stale: BTreeSet<String>,
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
    fn of(capabilities: &lsp_types::ClientCapabilities) -> DiagnosticsMode {
        if capabilities.text_document.as_ref().is_some_and(|t| t.diagnostic.is_some()) {
            DiagnosticsMode::Pull
        } else {
            DiagnosticsMode::Push
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
    generation: u64,
    buffers: BTreeMap<Url, Buffer>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The analysis of the store with every open buffer, computed outside the lock.
    pub(crate) fn snapshot(&self) -> Result<Snapshot, ResponseError> {
        let (paths, base, encoding, generation, buffers, cell, renames_files) = {
            let mut inner = self.lock();
            refresh_from_disk(&mut inner);
            let (Some(paths), Some(source)) = (inner.paths.clone(), inner.source.as_ref()) else {
                return Err(error(
                    ErrorCode::SERVER_NOT_INITIALIZED,
                    Code::NotFound,
                    "no store is loaded; start the server in a store, give --store, or open a store's folder",
                ));
            };
            let (base, seq) = match source {
                Source::Store(service) => {
                    let current = service.store().snapshot();
                    (current.analysis.clone(), current.seq)
                }
                Source::ReadOnly { base, .. } => (base.clone(), 0),
            };
            let generation = inner.generation;
            let cell = match &inner.cache {
                Some((g, s, cell)) if *g == generation && *s == seq => cell.clone(),
                _ => {
                    let cell = Arc::new(Pending::default());
                    if let Some((_, old_seq, old)) =
                        inner.cache.replace((generation, seq, cell.clone()))
                    {
                        // The newest computed analysis: the old generation's, or the one it
                        // was to start from if it was never computed.
                        let previous = match old.analysis.get() {
                            Some(_) => Some(old),
                            None => lock(&old.previous).take(),
                        };
                        if old_seq == seq {
                            *lock(&cell.previous) = previous;
                        } else {
                            free_later(previous);
                        }
                    }
                    cell
                }
            };
            (
                paths,
                base,
                inner.encoding,
                generation,
                inner.buffers.clone(),
                cell,
                inner.renames_files,
            )
        };
        // Outside the lock: the main loop keeps applying edits meanwhile.
        let analysis = cell
            .analysis
            .get_or_init(|| {
                let open: BTreeSet<String> = buffers.values().map(|b| b.path.clone()).collect();
                let previous = lock(&cell.previous)
                    .take()
                    .and_then(|p| Arc::try_unwrap(p).ok())
                    .and_then(|p| p.analysis.into_inner());
                // The same store seq and the same open paths: only the buffers whose text
                // changed differ, and an unshared document is edited in place.
                let start = match previous {
                    Some((previous, paths)) if paths == open => previous,
                    previous => {
                        tracing::debug!(
                            "generation {generation}: from the store (previous: {})",
                            previous.is_some()
                        );
                        free_later(previous);
                        base
                    }
                };
                // A buffer holding what the start already has needs no change.
                let changes = buffers
                    .values()
                    .filter(|b| start.document(&b.path).is_none_or(|d| *d.text != **b.text))
                    .map(|b| (b.path.clone(), Some(b.text.as_bytes().to_vec())))
                    .collect();
                let analysis = start.into_with_changes(changes);
                (analysis, open)
            })
            .0
            .clone();
        Ok(Snapshot { paths, analysis, encoding, renames_files, generation, buffers })
    }

    /// The service and this connection's session; in read-only mode, the error that kept the
    /// store from opening (`busy` when another process owns it).
    pub(crate) fn service(&self) -> Result<(Arc<Service>, Session), ResponseError> {
        let inner = self.lock();
        match (&inner.source, &inner.session) {
            (Some(Source::Store(service)), Some(session)) => Ok((service.clone(), session.clone())),
            (Some(Source::ReadOnly { code, why, .. }), _) => {
                Err(error(ErrorCode::REQUEST_FAILED, *code, why.clone()))
            }
            _ => Err(error(
                ErrorCode::SERVER_NOT_INITIALIZED,
                Code::NotFound,
                "no store is loaded; initialize first",
            )),
        }
    }

    /// Note that the documents under the buffers changed (a commit): re-diagnose.
    pub(crate) fn bump(&self) {
        self.lock().generation += 1;
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let inner = self.lock();
        if let (Some(Source::Store(service)), Some(session)) = (&inner.source, &inner.session) {
            service.close_session(session);
        }
    }
}

pub(crate) struct State {
    client: ClientSocket,
    shared: Arc<Shared>,
    store: StoreSource,
}

impl State {
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    pub(crate) fn client(&self) -> ClientSocket {
        self.client.clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Freeing a large document's trees takes milliseconds: not on a request.
fn free_later<T: Send + 'static>(value: Option<T>) {
    if value.is_some() {
        let _ = std::thread::Builder::new()
            .name("stardust-lsp-free".to_owned())
            .spawn(move || drop(value));
    }
}

/// Read the stale documents again into `base`. Runs on the blocking pool (from `snapshot`);
/// the lock is held so that no change is applied against a half-updated base.
fn refresh_from_disk(inner: &mut Inner) {
    if inner.stale.is_empty() {
        return;
    }
    let (Some(paths), Some(Source::ReadOnly { base, .. })) = (&inner.paths, &inner.source) else {
        inner.stale.clear();
        return;
    };
    let changes: Vec<(String, Option<Vec<u8>>)> = std::mem::take(&mut inner.stale)
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(paths.root.join(&path)).ok();
            (path, bytes)
        })
        .collect();
    tracing::debug!("reading {} documents again from disk", changes.len());
    let base = base.with_changes(changes);
    if let Some(Source::ReadOnly { base: old, .. }) = &mut inner.source {
        *old = base;
    }
    inner.cache = None;
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

fn router(state: State) -> Router<State> {
    let mut router = Router::new(state);
    router
        .request::<request::Initialize, _>(|st, params| {
            let shared = st.shared.clone();
            let client = st.client.clone();
            let store = st.store.clone();
            async move {
                tokio::task::spawn_blocking(move || initialize(&shared, client, store, params))
                    .await
                    .map_err(internal)?
            }
        })
        .request::<request::Shutdown, _>(|_, _| async { Ok(()) })
        .request::<request::DocumentDiagnosticRequest, _>(|st, params| {
            with_snapshot(st.shared.clone(), move |snap| pull_diagnostics(snap, params))
        })
        .request::<request::WorkspaceDiagnosticRequest, _>(|st, params| {
            let progress = crate::commands::Progress::start(
                st.client(),
                params.work_done_progress_params.work_done_token.clone(),
                "Diagnosing the store",
            );
            let shared = st.shared.clone();
            async move {
                let answer = with_snapshot(shared, |snap| Ok(workspace_diagnostics(snap))).await;
                progress.end();
                answer
            }
        })
        .unhandled_notification(on_notification);
    crate::features::register(&mut router);
    crate::commands::register(&mut router);
    crate::actions::register(&mut router);
    router
}

fn initialize(
    shared: &Arc<Shared>,
    client: ClientSocket,
    store: StoreSource,
    params: InitializeParams,
) -> Result<InitializeResult, ResponseError> {
    let encoding = convert::negotiate(
        params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_deref()),
    );
    // A client rooted in a mount of the store is served the store the mount shows.
    let from_client =
        client_root(&params).map(|dir| stardust_core::ide::mount_store(&dir).unwrap_or(dir));
    let client_name =
        params.client_info.as_ref().map_or("unknown", |info| info.name.as_str()).to_owned();
    let flag = match store {
        StoreSource::Open(flag) => flag,
        StoreSource::Attached(service, front) => {
            let root = service.store().root().to_owned();
            let session = service.open_session(front, &client_name);
            return finish_initialize(
                shared,
                client,
                root,
                Source::Store(service),
                Some(session),
                encoding,
                &params,
            );
        }
    };
    let root = flag.or(from_client).ok_or_else(|| {
        error(
            ErrorCode::INVALID_PARAMS,
            Code::NotFound,
            "no store found: start the server inside a store (a folder with stardust.toml or .stardust/), give --store, or open the store's folder",
        )
    })?;
    let root = root.canonicalize().map_err(|err| {
        error(
            ErrorCode::INVALID_PARAMS,
            Code::NotFound,
            format!("cannot open the store {}: {err}", root.display()),
        )
    })?;
    let (source, session) = match Store::open(&root, OpenOptions::default()) {
        Ok(store) => {
            let service = Arc::new(Service::new(store));
            let session = service.open_session(Front::Lsp, &client_name);
            tracing::info!(
                "serving the store {} ({} documents) to {client_name}",
                root.display(),
                service.store().snapshot().analysis.document_count()
            );
            (Source::Store(service), Some(session))
        }
        Err(err) => {
            // Another process owns the store (`busy`), or it cannot be opened for writing (a
            // read-only checkout, a damaged log): serve its documents read-only and answer
            // commands with that error (docs/DECISIONS.md, "The LSP front").
            let why = err.to_string();
            tracing::warn!("{why}; serving the store read-only");
            let base = Analysis::load(&root)
                .map_err(|err| error(ErrorCode::INVALID_PARAMS, err.code(), err.to_string()))?;
            (Source::ReadOnly { base, code: err.code(), why }, None)
        }
    };
    finish_initialize(shared, client, root, source, session, encoding, &params)
}

/// The client's root folder: its first workspace folder, else its `rootUri`.
fn client_root(params: &InitializeParams) -> Option<PathBuf> {
    #[allow(deprecated)]
    params
        .workspace_folders
        .as_ref()
        .and_then(|folders| folders.first())
        .map(|f| f.uri.clone())
        .or(params.root_uri.clone())
        .and_then(|uri| uri.to_file_path().ok())
}

/// Install the store and the client's choices, start forwarding changes, and answer.
fn finish_initialize(
    shared: &Arc<Shared>,
    client: ClientSocket,
    root: PathBuf,
    source: Source,
    session: Option<Session>,
    encoding: Encoding,
    params: &InitializeParams,
) -> Result<InitializeResult, ResponseError> {
    let wants = crate::commands::Wants::from_capabilities(&params.capabilities);
    let renames_files = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|w| w.workspace_edit.as_ref())
        .and_then(|e| e.resource_operations.as_ref())
        .is_some_and(|ops| ops.contains(&lsp_types::ResourceOperationKind::Rename));
    let subscription = match &source {
        Source::Store(service) => Some(service.store().subscribe()),
        Source::ReadOnly { .. } => None,
    };
    let read_only = matches!(source, Source::ReadOnly { .. });
    // Answers name documents under the client's root: the store's folder or a mount of it.
    let roots = match &source {
        Source::Store(service) => service.roots(),
        Source::ReadOnly { .. } => stardust_core::ide::Roots::new(root),
    };
    let paths = Paths::new(roots, client_root(params).as_deref());
    {
        let mut inner = shared.lock();
        inner.paths = Some(paths);
        inner.source = Some(source);
        inner.session = session;
        inner.wants = wants;
        inner.renames_files = renames_files;
        inner.diagnostics = DiagnosticsMode::of(&params.capabilities);
        inner.encoding = encoding;
        inner.generation += 1;
        inner.cache = None;
    }
    if let Some(subscription) = subscription {
        crate::commands::forward_changes(subscription, client, Arc::downgrade(shared));
    }
    let mut capabilities = crate::features::capabilities();
    crate::commands::extend_capabilities(&mut capabilities, read_only);
    crate::actions::extend_capabilities(&mut capabilities);
    Ok(InitializeResult {
        capabilities: ServerCapabilities {
            position_encoding: Some(convert::encoding_kind(encoding)),
            text_document_sync: Some(TextDocumentSyncCapability::Options(
                TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..TextDocumentSyncOptions::default()
                },
            )),
            diagnostic_provider: Some(DiagnosticServerCapabilities::Options(DiagnosticOptions {
                identifier: Some("stardust".to_owned()),
                inter_file_dependencies: true,
                workspace_diagnostics: true,
                work_done_progress_options: WorkDoneProgressOptions {
                    work_done_progress: Some(true),
                },
            })),
            ..capabilities
        },
        server_info: Some(ServerInfo {
            name: "stardust".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
    })
}

/// Every notification, dispatched here so that bad parameters are logged instead of stopping
/// the main loop (the router's typed handlers break it).
fn on_notification(st: &mut State, notif: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
    let method = notif.method.as_str();
    let changed = match method {
        notification::DidOpenTextDocument::METHOD => {
            parse::<DidOpenTextDocumentParams>(notif.params, method)
                .map(|p| did_open(&st.shared, p))
        }
        notification::DidChangeTextDocument::METHOD => {
            parse::<DidChangeTextDocumentParams>(notif.params, method)
                .map(|p| did_change(&st.shared, p))
        }
        notification::DidSaveTextDocument::METHOD => {
            parse::<DidSaveTextDocumentParams>(notif.params, method)
                .map(|p| mark_stale(&st.shared, [p.text_document.uri]))
        }
        notification::Initialized::METHOD | notification::Exit::METHOD => None,
        notification::DidChangeWatchedFiles::METHOD => {
            parse::<DidChangeWatchedFilesParams>(notif.params, method)
                .map(|p| mark_stale(&st.shared, p.changes.into_iter().map(|c| c.uri)))
        }
        notification::DidCloseTextDocument::METHOD => {
            parse::<DidCloseTextDocumentParams>(notif.params, method)
                .map(|p| did_close(&st.client, &st.shared, p))
        }
        _ => {
            tracing::debug!("ignoring the notification {method}");
            None
        }
    };
    if changed == Some(true) {
        let (generation, mode) = {
            let inner = st.shared.lock();
            (inner.generation, inner.diagnostics)
        };
        if mode == DiagnosticsMode::Push {
            publish(st.client.clone(), st.shared.clone(), generation);
        }
    }
    ControlFlow::Continue(())
}

fn parse<T: serde::de::DeserializeOwned>(params: serde_json::Value, method: &str) -> Option<T> {
    serde_json::from_value(params)
        .map_err(|err| tracing::warn!("ignoring {method}: bad parameters: {err}"))
        .ok()
}

fn did_open(shared: &Shared, params: DidOpenTextDocumentParams) -> bool {
    let doc = params.text_document;
    let mut inner = shared.lock();
    let Some(path) = inner.paths.as_ref().and_then(|p| p.relative(&doc.uri)) else {
        tracing::warn!("{} is outside the store; it is not analysed", doc.uri);
        return false;
    };
    if Lang::from_path(&path).is_none() {
        tracing::debug!("{path} is not a JSON or DUST document; it is not analysed");
        return false;
    }
    inner.buffers.insert(doc.uri, Buffer::new(path, doc.text, doc.version));
    inner.generation += 1;
    true
}

/// Apply the changes in order. A change whose range is not inside the current text is refused:
/// it and the changes after it in the same notification are dropped with a warning, and the
/// buffer keeps the text it had before that change (later changes were computed against a text
/// we do not have).
fn did_change(shared: &Shared, params: DidChangeTextDocumentParams) -> bool {
    let mut inner = shared.lock();
    let encoding = inner.encoding;
    let uri = params.text_document.uri;
    let Some(buffer) = inner.buffers.get_mut(&uri) else {
        tracing::warn!("didChange for {uri}, which is not open; ignored");
        return false;
    };
    for change in params.content_changes {
        match apply_change(buffer, &change, encoding) {
            Some(()) => {}
            None => {
                tracing::warn!(
                    "refusing an edit of {uri} (version {}) whose range {:?} is not inside the text; the buffer keeps its previous text",
                    params.text_document.version,
                    change.range
                );
                break;
            }
        }
    }
    buffer.version = params.text_document.version;
    inner.generation += 1;
    true
}

/// Apply one change to the buffer, or return `None` (the buffer untouched) when its range is
/// not inside the text.
fn apply_change(
    buffer: &mut Buffer,
    change: &TextDocumentContentChangeEvent,
    encoding: Encoding,
) -> Option<()> {
    let Some(range) = change.range else {
        *buffer =
            Buffer::new(std::mem::take(&mut buffer.path), change.text.clone(), buffer.version);
        return Some(());
    };
    let (text, index) = (&buffer.text, &buffer.index);
    let start = convert::offset(index, text, range.start, encoding)? as usize;
    let end = convert::offset(index, text, range.end, encoding)? as usize;
    if start > end || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return None;
    }
    let text = Arc::make_mut(&mut buffer.text);
    text.replace_range(start..end, &change.text);
    let delta = change.text.len() as i64 - (end - start) as i64;
    Arc::make_mut(&mut buffer.index).splice(text, start, end, delta);
    Some(())
}

/// Note that documents may differ on disk from what the read-only base holds. In store mode
/// the store's watcher takes such edits in as `external` commits, which re-diagnose.
fn mark_stale(shared: &Shared, uris: impl IntoIterator<Item = Url>) -> bool {
    let mut inner = shared.lock();
    if !matches!(inner.source, Some(Source::ReadOnly { .. })) {
        return false;
    }
    let Some(paths) = inner.paths.clone() else { return false };
    let before = inner.stale.len();
    for uri in uris {
        if let Some(path) = paths.relative(&uri).filter(|p| Lang::from_path(p).is_some()) {
            inner.stale.insert(path);
        }
    }
    if inner.stale.len() == before {
        return false;
    }
    inner.generation += 1;
    true
}

fn did_close(client: &ClientSocket, shared: &Shared, params: DidCloseTextDocumentParams) -> bool {
    let uri = params.text_document.uri;
    let mut inner = shared.lock();
    let Some(buffer) = inner.buffers.remove(&uri) else { return false };
    // The file may have been saved with the buffer's text or left as it was.
    if matches!(inner.source, Some(Source::ReadOnly { .. })) {
        inner.stale.insert(buffer.path);
    }
    inner.generation += 1;
    // A closed document's diagnostics are those of its file, which the workspace pull reports.
    let _ = client.clone().publish_diagnostics(PublishDiagnosticsParams {
        uri,
        diagnostics: Vec::new(),
        version: None,
    });
    true
}

/// Analyse the buffers of `generation` off the main loop and publish their diagnostics. In a
/// burst of edits only the newest generation is analysed: the publications queued for older
/// ones find a newer generation and leave the work to its own publication.
fn publish(client: ClientSocket, shared: Arc<Shared>, generation: u64) {
    tokio::task::spawn_blocking(move || {
        if shared.lock().generation == generation {
            publish_now(client, &shared);
        }
    });
}

/// Publish the diagnostics of every open document, unless a newer generation has been
/// published meanwhile.
pub(crate) fn publish_now(mut client: ClientSocket, shared: &Shared) {
    let snap = match shared.snapshot() {
        Ok(snap) => snap,
        Err(err) => {
            tracing::warn!("cannot publish diagnostics: {}", err.message);
            return;
        }
    };
    let mut published = shared.published.lock().unwrap_or_else(|p| p.into_inner());
    if *published >= snap.generation {
        return;
    }
    *published = snap.generation;
    for (uri, buffer) in &snap.buffers {
        let diagnostics = document_diagnostics(&snap, &buffer.path);
        let params = PublishDiagnosticsParams {
            uri: uri.clone(),
            diagnostics,
            version: Some(buffer.version),
        };
        if client.publish_diagnostics(params).is_err() {
            return;
        }
    }
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
        snap.buffers.values().map(|b| (b.path.as_str(), i64::from(b.version))).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    fn change(sl: u32, sc: u32, el: u32, ec: u32, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range { start: Position::new(sl, sc), end: Position::new(el, ec) }),
            range_length: None,
            text: text.to_owned(),
        }
    }

    /// The buffer's text after `change`; its line index must stay that of its text.
    fn applied(
        text: &str,
        change: &TextDocumentContentChangeEvent,
        encoding: Encoding,
    ) -> Option<String> {
        let mut buffer = Buffer::new("a.json".to_owned(), text.to_owned(), 1);
        let result = apply_change(&mut buffer, change, encoding);
        assert_eq!(*buffer.index, LineIndex::new(&buffer.text), "the line index follows the text");
        result.map(|()| buffer.text.to_string())
    }

    #[test]
    fn changes_apply_in_the_client_encoding() {
        let text = "a😀b\nc";
        assert_eq!(
            applied(text, &change(0, 3, 0, 4, "X"), Encoding::Utf16).as_deref(),
            Some("a😀X\nc")
        );
        assert_eq!(
            applied(text, &change(0, 2, 0, 3, "X"), Encoding::Utf32).as_deref(),
            Some("a😀X\nc")
        );
        assert_eq!(applied(text, &change(0, 5, 1, 0, ""), Encoding::Utf8).as_deref(), Some("a😀c"));
    }

    #[test]
    fn out_of_range_changes_are_refused() {
        let text = "ab\ncd";
        assert_eq!(applied(text, &change(0, 3, 0, 3, "X"), Encoding::Utf16), None);
        assert_eq!(applied(text, &change(4, 0, 4, 0, "X"), Encoding::Utf16), None);
        assert_eq!(applied(text, &change(1, 1, 0, 0, "X"), Encoding::Utf16), None);
        // Inside a surrogate pair.
        assert_eq!(applied("😀", &change(0, 1, 0, 1, "X"), Encoding::Utf16), None);
        let whole = TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: "new".to_owned(),
        };
        assert_eq!(applied(text, &whole, Encoding::Utf16).as_deref(), Some("new"));
    }

    /// The protocol position of char index `i` of `text` in `encoding`, computed naively.
    fn naive_position(text: &str, i: usize, encoding: Encoding) -> Position {
        let before: String = text.chars().take(i).collect();
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let line = &before[line_start..];
        let column = match encoding {
            Encoding::Utf8 => line.len(),
            Encoding::Utf16 => line.encode_utf16().count(),
            Encoding::Utf32 => line.chars().count(),
        };
        Position::new(before.matches('\n').count() as u32, column as u32)
    }

    proptest::proptest! {
        /// An edit addressed in any encoding splices exactly the characters it names.
        #[test]
        fn edits_splice_the_named_characters(
            text in "[a-zé😀\n ]{0,40}",
            a in 0usize..50,
            b in 0usize..50,
            insert in "[x😀\n]{0,3}",
            enc in 0usize..3,
        ) {
            let encoding = [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32][enc];
            let n = text.chars().count();
            let (start, end) = (a.min(b).min(n), a.max(b).min(n));
            let range = Range {
                start: naive_position(&text, start, encoding),
                end: naive_position(&text, end, encoding),
            };
            let change = TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: insert.clone() };
            let expected: String = text.chars().take(start).chain(insert.chars()).chain(text.chars().skip(end)).collect();
            proptest::prop_assert_eq!(applied(&text, &change, encoding), Some(expected));
        }
    }
}

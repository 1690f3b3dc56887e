//! The main loop: the connection's runtime and middleware, the router of requests, and
//! `initialize` (the store opened or attached, the client's choices recorded).

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;

use async_lsp::concurrency::ConcurrencyLayer;
use async_lsp::panic::CatchUnwindLayer;
use async_lsp::router::Router;
use async_lsp::server::LifecycleLayer;
use async_lsp::tracing::TracingLayer;
use async_lsp::{ClientSocket, ErrorCode, ResponseError};
use lsp_types::request;
use lsp_types::{
    DiagnosticOptions, DiagnosticServerCapabilities, InitializeParams, InitializeResult,
    ServerCapabilities, ServerInfo, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextDocumentSyncOptions, TextDocumentSyncSaveOptions, Url, WorkDoneProgressOptions,
};
use stardust_core::Code;
use stardust_core::ide::{Buffers, Opened};
use stardust_core::service::{Front, Service, Session};
use stardust_core::store::OpenOptions;
use stardust_core::text::Encoding;
use tower::ServiceBuilder;

use crate::convert::{self, Paths};
use crate::state::{
    Connection, DiagnosticsMode, Shared, State, StoreSource, Wants, error, internal,
};

/// Requests are cheap to queue; the limit only guards against a runaway client.
const MAX_CONCURRENT_REQUESTS: usize = 1024;

/// Serve LSP on stdin/stdout until the client exits or closes the input; code files go to the
/// language servers of `code` (none: they answer `server-unavailable`). `front` is `Lsp` for
/// an editor, `Sdk` for a program using an SDK (its commits' origin is `sdk:<client>`).
pub fn run_stdio(
    store: Option<PathBuf>,
    code: Option<Arc<dyn stardust_core::codefiles::CodeHost>>,
    front: Front,
) -> anyhow::Result<()> {
    let cwd = std::env::current_dir()?;
    let store = stardust_core::scan::find_store(store.as_deref(), &cwd);
    let source = StoreSource::Open(store, code, front);
    run(std::io::stdin(), std::io::stdout(), source, std::future::pending())
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
        let decoded = Arc::new(crate::frames::Decoded::default());
        let restored = decoded.clone();
        let (main_loop, _) = async_lsp::MainLoop::new_server(|client| {
            let relay =
                crate::relay::RelayLayer { shared: state_shared.clone(), client: client.clone() };
            ServiceBuilder::new()
                .layer(crate::frames::DecodedLayer(restored))
                .layer(crate::inflight::InFlightLayer(counted))
                .layer(TracingLayer::default())
                .layer(LifecycleLayer::default())
                .layer(CatchUnwindLayer::default())
                .layer(crate::cancel::CancelledCodeLayer)
                .layer(ConcurrencyLayer::new(
                    NonZeroUsize::new(MAX_CONCURRENT_REQUESTS).expect("non-zero"),
                ))
                .layer(relay)
                .service(router(State { client, shared: state_shared, store }))
        });
        let input = crate::frames::checked_input(input, in_flight, decoded);
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
    shared.close_session();
    result
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
        .unhandled_notification(crate::sync::on_notification);
    crate::diagnostics::register(&mut router);
    crate::features::register(&mut router);
    crate::commands::register(&mut router);
    crate::actions::register(&mut router);
    crate::structure::register(&mut router);
    crate::tokens::register(&mut router);
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
        StoreSource::Open(flag, code, front) => (flag, code, front),
        StoreSource::Attached(service, front) => {
            let session = service.open_session(front, &client_name);
            let buffers = Buffers::attached(service.store_arc());
            let session = Some((service, session));
            return finish_initialize(shared, client, buffers, session, encoding, &params);
        }
    };
    let (flag, code, front) = flag;
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
    // Another process owns the store (`busy`), or it cannot be opened for writing (a read-only
    // checkout, a damaged log): the buffers serve its documents read-only, and commands answer
    // that error (docs/DECISIONS.md, "The LSP front").
    let opened = Buffers::open(&root, OpenOptions::default())
        .map_err(|err| error(ErrorCode::INVALID_PARAMS, err.code(), err.to_string()))?;
    let (buffers, session) = match opened {
        Opened::Store(store) => {
            let service = match code {
                Some(host) => Service::new(store).with_code_host(host),
                None => Service::new(store),
            };
            let service = Arc::new(service);
            tracing::info!(
                "serving the store {} ({} documents) to {client_name}",
                root.display(),
                service.store().snapshot().analysis.document_count()
            );
            let session = service.open_session(front, &client_name);
            (Buffers::attached(service.store_arc()), Some((service, session)))
        }
        Opened::ReadOnly(buffers) => (*buffers, None),
    };
    finish_initialize(shared, client, buffers, session, encoding, &params)
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
    buffers: Buffers<Url>,
    session: Option<(Arc<Service>, Session)>,
    encoding: Encoding,
    params: &InitializeParams,
) -> Result<InitializeResult, ResponseError> {
    let wants = Wants::from_capabilities(&params.capabilities);
    let renames_files = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|w| w.workspace_edit.as_ref())
        .and_then(|e| e.resource_operations.as_ref())
        .is_some_and(|ops| ops.contains(&lsp_types::ResourceOperationKind::Rename));
    let subscription = buffers.store().map(|store| store.subscribe());
    let read_only = buffers.read_only().is_some();
    // Answers name documents under the client's root: the store's folder or a mount of it.
    let roots = match &session {
        Some((service, _)) => service.roots(),
        None => stardust_core::ide::Roots::new(buffers.root().to_owned()),
    };
    let paths = Paths::new(roots, client_root(params).as_deref());
    let diagnostics = DiagnosticsMode::of(&params.capabilities);
    let editor = session.clone();
    let connection =
        Connection::new(paths, buffers, session, wants, renames_files, diagnostics, encoding);
    shared.install(connection)?;
    // A revert refuses a file this editor holds with unsaved text (SPEC §26).
    if let Some((service, session)) = editor {
        service
            .register_editor(&session, Arc::new(crate::state::EditorTexts(Arc::downgrade(shared))));
    }
    if let Some(service) = shared.connection().and_then(|c| c.service()) {
        crate::relay::start(shared, client.clone(), service, &params.capabilities);
    }
    if let Some(live) = shared.connection().and_then(|c| c.service()).and_then(|s| s.views()) {
        crate::views::forward(live, client.clone(), Arc::downgrade(shared));
    }
    if let Some(subscription) = subscription {
        crate::commands::forward_changes(subscription, client, Arc::downgrade(shared));
    }
    let mut capabilities = crate::features::capabilities();
    crate::commands::extend_capabilities(&mut capabilities, read_only);
    crate::actions::extend_capabilities(&mut capabilities);
    crate::structure::extend_capabilities(&mut capabilities, &params.capabilities, shared);
    crate::tokens::extend_capabilities(&mut capabilities, &params.capabilities, shared);
    crate::relay::extend_capabilities(&mut capabilities);
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

//! Code files through the core (SPEC §17 "LSP"): a layer in front of the router that takes
//! every message about a file the core does not own (a code file: `.py`, `.ts`, ...) and
//! relays it through the core's language servers (`Service::code_*`), so the documents'
//! handlers never see code files and the editor shares each server with every agent.
//!
//! - Text sync (on the main loop, in order): the editor's buffer is the core's
//!   (`code_open` / `code_change` / `code_close`); the server is given the text by one worker
//!   thread per connection (`code_sync`), so a server's start never holds the main loop. Why a
//!   server cannot take a file (untrusted, missing, no server) is logged and said once per
//!   server per connection.
//! - Requests (on the blocking pool): the server is started and given the current text, the
//!   parameters rewritten to the server's form (store URIs, its position encoding), the
//!   answer back to the client's (URIs under the client's root, its encoding), with the texts
//!   the core has. Items the client resolves later carry the file they came from in `data`.
//! - Notifications from the servers (a thread per connection): push diagnostics of the
//!   store's files, `window/*` messages named by their server, `$/progress` under tokens
//!   created on the client.
//!
//! Edits a server answers (rename, code actions, formatting) go to the editor to apply; a
//! server's own `workspace/applyEdit` never reaches it (the host answers it, unapplied), and
//! server commands are not relayed (SPEC §12, §18).

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use async_lsp::{
    AnyEvent, AnyNotification, AnyRequest, ClientSocket, LanguageClient, LspService, ResponseError,
};
use futures::future::BoxFuture;
use lsp_types::notification::Notification;
use lsp_types::{
    CallHierarchyServerCapability, CodeActionKind, CodeActionOptions, CodeActionProviderCapability,
    ImplementationProviderCapability, ServerCapabilities, SignatureHelpOptions,
    TypeDefinitionProviderCapability, Url, WorkDoneProgressOptions,
};
use serde_json::{Map, Value, json};
use stardust_core::Code;
use stardust_core::ide::{Edit, Resolved};
use stardust_core::service::code::{CodeTarget, Edited};
use stardust_core::service::{CommandError, Service, Session};
use stardust_core::sync::lock;
use stardust_core::text::{Encoding, LineIndex, Position};
use tower::{Layer, Service as TowerService};

use crate::convert::Paths;
use crate::state::DiagnosticsMode;
use crate::state::{Shared, internal};

/// Where a relayed item (a completion item, code action, inlay hint, call hierarchy item)
/// keeps the client URI of the file it came from, beside the server's own `data`.
const TAG: &str = "stardustCode";

/// Completion trigger characters the relay adds to the core's (`@`, `"`): those of the
/// servers SPEC §17 configures (pyright, typescript-language-server, clangd). A character a
/// file's server does not list is answered empty without asking it.
const CODE_TRIGGERS: [&str; 8] = [".", "'", "/", "<", ":", "[", "#", ">"];

/// Requests relayed for code files, each with the server capability that must be present.
const RELAYED: [(&str, &str); 29] = [
    ("textDocument/hover", "hoverProvider"),
    ("textDocument/definition", "definitionProvider"),
    ("textDocument/declaration", "declarationProvider"),
    ("textDocument/typeDefinition", "typeDefinitionProvider"),
    ("textDocument/implementation", "implementationProvider"),
    ("textDocument/references", "referencesProvider"),
    ("textDocument/documentHighlight", "documentHighlightProvider"),
    ("textDocument/documentSymbol", "documentSymbolProvider"),
    ("textDocument/completion", "completionProvider"),
    ("completionItem/resolve", "completionProvider.resolveProvider"),
    ("textDocument/signatureHelp", "signatureHelpProvider"),
    ("textDocument/codeAction", "codeActionProvider"),
    ("codeAction/resolve", "codeActionProvider.resolveProvider"),
    ("textDocument/prepareRename", "renameProvider.prepareProvider"),
    ("textDocument/rename", "renameProvider"),
    ("textDocument/formatting", "documentFormattingProvider"),
    ("textDocument/rangeFormatting", "documentRangeFormattingProvider"),
    ("textDocument/foldingRange", "foldingRangeProvider"),
    ("textDocument/selectionRange", "selectionRangeProvider"),
    ("textDocument/prepareCallHierarchy", "callHierarchyProvider"),
    ("callHierarchy/incomingCalls", "callHierarchyProvider"),
    ("callHierarchy/outgoingCalls", "callHierarchyProvider"),
    ("textDocument/inlayHint", "inlayHintProvider"),
    ("inlayHint/resolve", "inlayHintProvider.resolveProvider"),
    ("textDocument/documentLink", "documentLinkProvider"),
    ("textDocument/onTypeFormatting", "documentOnTypeFormattingProvider"),
    // Asked of the server as `full` (or `range`) and put in the editor's legend (`tokens`).
    ("textDocument/semanticTokens/full", "semanticTokensProvider"),
    ("textDocument/semanticTokens/full/delta", "semanticTokensProvider"),
    ("textDocument/semanticTokens/range", "semanticTokensProvider"),
];

/// Requests only the relay answers: for a document they have no answer (`null`; a resolve
/// gives the item back as it is).
const RELAY_ONLY: [&str; 8] = [
    "textDocument/declaration",
    "textDocument/typeDefinition",
    "textDocument/implementation",
    "textDocument/signatureHelp",
    "textDocument/prepareCallHierarchy",
    "callHierarchy/incomingCalls",
    "callHierarchy/outgoingCalls",
    "completionItem/resolve",
];

/// Advertise what the relay answers for code files, beside the core's features. Servers
/// start lazily, so this is a static superset (docs/DECISIONS.md): a request the file's
/// server does not serve is answered empty.
pub(crate) fn extend_capabilities(capabilities: &mut ServerCapabilities) {
    capabilities.declaration_provider = Some(lsp_types::DeclarationCapability::Simple(true));
    capabilities.type_definition_provider = Some(TypeDefinitionProviderCapability::Simple(true));
    capabilities.implementation_provider = Some(ImplementationProviderCapability::Simple(true));
    capabilities.call_hierarchy_provider = Some(CallHierarchyServerCapability::Simple(true));
    capabilities.signature_help_provider = Some(SignatureHelpOptions {
        trigger_characters: Some(vec!["(".to_owned(), ",".to_owned()]),
        retrigger_characters: Some(vec![")".to_owned()]),
        work_done_progress_options: WorkDoneProgressOptions::default(),
    });
    if let Some(completion) = capabilities.completion_provider.as_mut() {
        let triggers = completion.trigger_characters.get_or_insert_with(Vec::new);
        for c in CODE_TRIGGERS {
            if !triggers.iter().any(|t| t == c) {
                triggers.push(c.to_owned());
            }
        }
        completion.resolve_provider = Some(true);
    }
    if let Some(CodeActionProviderCapability::Options(CodeActionOptions {
        code_action_kinds: Some(kinds),
        ..
    })) = capabilities.code_action_provider.as_mut()
    {
        for kind in [
            CodeActionKind::REFACTOR,
            CodeActionKind::REFACTOR_EXTRACT,
            CodeActionKind::REFACTOR_INLINE,
            CodeActionKind::REFACTOR_REWRITE,
            CodeActionKind::SOURCE,
            CodeActionKind::SOURCE_ORGANIZE_IMPORTS,
        ] {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
}

/// Start the connection's relay threads (store mode, with a service): the sync worker and
/// the forwarding of what the servers publish.
pub(crate) fn start(
    shared: &Arc<Shared>,
    client: ClientSocket,
    service: &Arc<Service>,
    capabilities: &lsp_types::ClientCapabilities,
) {
    let (tx, rx) = mpsc::channel::<String>();
    let _ = shared.relay.sync.set(Mutex::new(tx));
    let links = capabilities.text_document.as_ref().and_then(|t| t.definition.as_ref());
    let _ = shared.relay.links.set(links.and_then(|d| d.link_support).unwrap_or(false));
    let worker = {
        let (service, client, shown) =
            (service.clone(), client.clone(), shared.relay.shown.clone());
        std::thread::Builder::new()
            .name("stardust-lsp-code-sync".to_owned())
            .spawn(move || sync_worker(&service, &client, &shown, &rx))
    };
    if let Err(err) = worker {
        tracing::warn!("cannot start the code sync thread ({err}); servers get texts on requests");
    }
    let Some(events) = service.code_events() else { return };
    let progress = capabilities.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
    let forward = Forward {
        service: service.clone(),
        client,
        shared: Arc::downgrade(shared),
        runtime: tokio::runtime::Handle::try_current().ok(),
        progress,
        tokens: HashMap::new(),
    };
    let spawned = std::thread::Builder::new()
        .name("stardust-lsp-code-events".to_owned())
        .spawn(move || forward.run(&events));
    if let Err(err) = spawned {
        tracing::warn!("cannot start the code events thread ({err}); no server notifications");
    }
}

/// Give servers the texts of the files named on `rx`, in order; a burst names each file once.
fn sync_worker(
    service: &Service,
    client: &ClientSocket,
    shown: &Mutex<HashSet<String>>,
    rx: &mpsc::Receiver<String>,
) {
    while let Ok(first) = rx.recv() {
        let mut paths = vec![first];
        while let Ok(next) = rx.try_recv() {
            if !paths.contains(&next) {
                paths.push(next);
            }
        }
        for path in paths {
            let synced = service.code_target(&path).and_then(|target| service.code_sync(&target));
            if let Err(err) = synced {
                report(service, client, shown, &path, &err);
            }
        }
    }
}

/// Log why a file's server cannot take it, and tell the user once per server (per file
/// extension when no server covers it) and connection: a missing or untrusted server as a
/// message shown, a file no server covers only in the client's log.
fn report(
    service: &Service,
    client: &ClientSocket,
    shown: &Mutex<HashSet<String>>,
    path: &str,
    err: &CommandError,
) {
    tracing::warn!("{path}: {err}");
    let details = err.details(&service.store().snapshot().analysis);
    let about = match details.get("server").and_then(Value::as_str) {
        Some(server) => server.to_owned(),
        None => path.rsplit_once('.').map_or(path, |(_, ext)| ext).to_owned(),
    };
    if !lock(shown).insert(format!("{}:{about}", err.code().as_str())) {
        return;
    }
    let message = err.to_string();
    let sent = match err.code() {
        Code::Untrusted | Code::ServerUnavailable => {
            let kind = if err.code() == Code::Untrusted {
                lsp_types::MessageType::WARNING
            } else {
                lsp_types::MessageType::ERROR
            };
            client.notify::<lsp_types::notification::ShowMessage>(lsp_types::ShowMessageParams {
                typ: kind,
                message,
            })
        }
        _ => client.notify::<lsp_types::notification::LogMessage>(lsp_types::LogMessageParams {
            typ: lsp_types::MessageType::INFO,
            message,
        }),
    };
    if let Err(err) = sent {
        tracing::debug!("cannot tell the client: {err}");
    }
}

pub(crate) struct RelayLayer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) client: ClientSocket,
}

impl<S> Layer<S> for RelayLayer {
    type Service = Relay<S>;

    fn layer(&self, inner: S) -> Relay<S> {
        Relay { inner, shared: self.shared.clone(), client: self.client.clone() }
    }
}

/// The router behind the relay: documents go on to it, code files do not.
pub(crate) struct Relay<S> {
    inner: S,
    shared: Arc<Shared>,
    client: ClientSocket,
}

/// Where a request goes.
enum Route {
    /// The core's handlers (a document, or no file).
    Inner,
    /// No answer for this file: `null`.
    Empty,
    /// The item back as it is (a resolve of an item the core made).
    Unchanged,
    /// A code file's request, through its server; the path when routing resolved it.
    Code(String, Option<Resolved>),
    /// The core's entities and the servers' symbols.
    WorkspaceSymbol,
    /// The code lenses of a code file: the open previews touching it (its store path).
    PreviewLenses(String),
}

impl<S> Relay<S> {
    /// The session and resolved path when `uri` names a code file of this connection's store:
    /// resolved once, here, and handed on to the request's target.
    fn code_file(&self, uri: &str) -> Option<(Arc<Service>, Session, Resolved)> {
        let conn = self.shared.connection()?;
        let resolved = conn.paths.resolved(&Url::parse(uri).ok()?).ok()?;
        let (service, session) = self.shared.service().ok()?;
        service.is_code(&resolved).then_some((service, session, resolved))
    }

    fn route(&self, req: &AnyRequest) -> Route {
        let method = req.method.as_str();
        if method == "workspace/symbol" {
            return if self.shared.service().is_ok() {
                Route::WorkspaceSymbol
            } else {
                Route::Inner
            };
        }
        let relay_only = RELAY_ONLY.contains(&method);
        let item_uri = match method {
            "completionItem/resolve" | "codeAction/resolve" | "inlayHint/resolve" => {
                return match tagged_uri(&req.params) {
                    Some(uri) => Route::Code(uri, None),
                    None if relay_only => Route::Unchanged,
                    None => Route::Inner,
                };
            }
            "callHierarchy/incomingCalls" | "callHierarchy/outgoingCalls" => {
                return tagged_uri(&req.params["item"])
                    .map_or(Route::Empty, |uri| Route::Code(uri, None));
            }
            _ => req.params["textDocument"]["uri"].as_str(),
        };
        let Some(uri) = item_uri.filter(|_| method.starts_with("textDocument/")) else {
            return Route::Inner;
        };
        if let Some((_, _, resolved)) = self.code_file(uri) {
            if method == "textDocument/codeLens" {
                return Route::PreviewLenses(resolved.path);
            }
            let relayed = RELAYED.iter().any(|(m, _)| *m == method);
            // The core's other features have no server counterpart relayed: nothing for a
            // code file.
            return if relayed || method == "textDocument/diagnostic" {
                Route::Code(uri.to_owned(), Some(resolved))
            } else {
                Route::Empty
            };
        }
        if relay_only { Route::Empty } else { Route::Inner }
    }
}

impl<S> TowerService<AnyRequest> for Relay<S>
where
    S: TowerService<AnyRequest, Response = Value, Error = ResponseError>,
    S::Future: Send + 'static,
{
    type Response = Value;
    type Error = ResponseError;
    type Future = BoxFuture<'static, Result<Value, ResponseError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ResponseError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: AnyRequest) -> Self::Future {
        match self.route(&req) {
            Route::Inner => Box::pin(self.inner.call(req)),
            Route::Empty => Box::pin(async { Ok(Value::Null) }),
            Route::Unchanged => Box::pin(async move { Ok(req.params) }),
            Route::Code(uri, resolved) => {
                let shared = self.shared.clone();
                Box::pin(async move {
                    tokio::task::spawn_blocking(move || {
                        relay(&shared, &req.method, req.params, &uri, resolved)
                    })
                    .await
                    .map_err(internal)?
                })
            }
            Route::PreviewLenses(path) => {
                let shared = self.shared.clone();
                Box::pin(async move {
                    let lenses = tokio::task::spawn_blocking(move || {
                        crate::structure::preview_lenses(&shared, &path)
                    })
                    .await
                    .map_err(internal)?;
                    serde_json::to_value(lenses).map_err(internal)
                })
            }
            Route::WorkspaceSymbol => {
                let query = req.params["query"].as_str().unwrap_or_default().to_owned();
                let entities = self.inner.call(req);
                let shared = self.shared.clone();
                Box::pin(async move {
                    let mut symbols = match entities.await? {
                        Value::Array(items) => items,
                        _ => Vec::new(),
                    };
                    let code =
                        tokio::task::spawn_blocking(move || workspace_symbols(&shared, &query))
                            .await
                            .map_err(internal)?;
                    symbols.extend(code);
                    Ok(Value::Array(symbols))
                })
            }
        }
    }
}

impl<S: LspService> LspService for Relay<S>
where
    S: TowerService<AnyRequest, Response = Value, Error = ResponseError>,
    S::Future: Send + 'static,
{
    fn notify(&mut self, notif: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
        use lsp_types::notification::{
            DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
        };
        let method = notif.method.as_str();
        let sync = [
            DidOpenTextDocument::METHOD,
            DidChangeTextDocument::METHOD,
            DidCloseTextDocument::METHOD,
            DidSaveTextDocument::METHOD,
        ];
        if sync.contains(&method)
            && let Some(uri) = notif.params["textDocument"]["uri"].as_str()
            && let Some((service, session, resolved)) = self.code_file(uri)
        {
            self.text_sync(&service, &session, &resolved.path, notif);
            return ControlFlow::Continue(());
        }
        self.inner.notify(notif)
    }

    fn emit(&mut self, event: AnyEvent) -> ControlFlow<async_lsp::Result<()>> {
        self.inner.emit(event)
    }
}

impl<S> Relay<S> {
    /// One text sync notification of a code file, on the main loop: the core's buffer now,
    /// the server by the worker.
    fn text_sync(&self, service: &Service, session: &Session, path: &str, notif: AnyNotification) {
        let Some(conn) = self.shared.connection() else { return };
        let params = notif.params;
        match notif.method.as_str() {
            "textDocument/didOpen" => {
                let text = params["textDocument"]["text"].as_str().unwrap_or_default();
                service.code_open(session, path, text);
            }
            "textDocument/didChange" => {
                let changes: Vec<lsp_types::TextDocumentContentChangeEvent> =
                    match serde_json::from_value(params["contentChanges"].clone()) {
                        Ok(changes) => changes,
                        Err(err) => {
                            tracing::warn!("ignoring a didChange of {path}: bad parameters: {err}");
                            return;
                        }
                    };
                let edits = changes.into_iter().map(|change| match change.range {
                    None => Edit::Replace(change.text),
                    Some(range) => Edit::Splice { range, text: change.text },
                });
                match service.code_change(
                    session,
                    path,
                    edits,
                    crate::sync::resolver(conn.encoding),
                ) {
                    Edited::Applied => {}
                    Edited::NotOpen => {
                        tracing::warn!("didChange for {path}, which is not open; ignored");
                        return;
                    }
                    Edited::Refused(i) => tracing::warn!(
                        "refusing change {i} of {path}: its range is not inside the text; the \
                         buffer keeps the text before it"
                    ),
                }
            }
            "textDocument/didClose" => {
                service.code_close(session, path);
                // What the server said of the editor's text no longer stands.
                if conn.diagnostics == DiagnosticsMode::Push
                    && let Some(uri) = params["textDocument"]["uri"].as_str()
                {
                    let cleared = json!({"uri": uri, "diagnostics": []});
                    let _ = self.client.notify::<RawPublish>(cleared);
                }
                return;
            }
            // The file on disk is the buffer's text now: nothing changes for the server.
            _ => return,
        }
        if let Some(tx) = self.shared.relay.sync.get() {
            let _ = lock(tx).send(path.to_owned());
        }
    }
}

/// `textDocument/publishDiagnostics` with parameters as JSON.
enum RawPublish {}

impl Notification for RawPublish {
    type Params = Value;
    const METHOD: &'static str = "textDocument/publishDiagnostics";
}

enum RawShow {}

impl Notification for RawShow {
    type Params = Value;
    const METHOD: &'static str = "window/showMessage";
}

enum RawLog {}

impl Notification for RawLog {
    type Params = Value;
    const METHOD: &'static str = "window/logMessage";
}

enum RawProgress {}

impl Notification for RawProgress {
    type Params = Value;
    const METHOD: &'static str = "$/progress";
}

fn command_error(service: &Service, err: &CommandError) -> ResponseError {
    crate::commands::command_error(err, &service.store().snapshot().analysis)
}

/// One request for the code file the client names `uri` (`resolved` when routing has already
/// resolved it), through its server.
fn relay(
    shared: &Shared,
    method: &str,
    mut params: Value,
    uri: &str,
    resolved: Option<Resolved>,
) -> Result<Value, ResponseError> {
    let (service, _) = shared.service()?;
    let conn = shared.connection().ok_or_else(|| internal("no connection"))?;
    let failed = |err: CommandError| command_error(&service, &err);
    // By its store path: the client's root may be a mount the core has not recorded.
    let resolved =
        resolved.or_else(|| Url::parse(uri).ok().and_then(|u| conn.paths.resolved(&u).ok()));
    let target = match resolved {
        Some(resolved) => service.code_target_of(resolved),
        // The core says why it cannot resolve it.
        None => service.code_target(uri),
    };
    // Started and given the current text first: its encoding is known once it runs.
    let target = target.and_then(|target| service.code_sync(&target).map(|()| target));
    let target = match target {
        Ok(target) => target,
        // A pulling client asks after every change: a file whose server cannot take it
        // (said once, when it was opened) has no diagnostics rather than an error each time.
        Err(err) if method == "textDocument/diagnostic" && cannot_take(&err) => {
            tracing::debug!("no diagnostics for {uri}: {err}");
            return Ok(json!({"kind": "full", "items": []}));
        }
        Err(err) => return Err(failed(err)),
    };
    let server = target.server().to_owned();
    let encoding = service.code_encoding(&server);
    let capabilities = service.code_capabilities(&server);
    let server_uri = stardust_core::ide::file_uri(&target.file);
    if method == "textDocument/diagnostic" {
        let answer = service.code_diagnostics(&target).map_err(failed)?;
        let mut items = answer.result;
        Rewrite::from_server(&service, &conn.paths, encoding, conn.encoding, &server_uri)
            .value(&mut items);
        return Ok(json!({"kind": "full", "items": items}));
    }
    let resolving = method.ends_with("/resolve");
    if !offers(&capabilities, method) {
        return Ok(match method {
            _ if resolving => params,
            "textDocument/prepareRename" if offers(&capabilities, "textDocument/rename") => {
                json!({"defaultBehavior": true})
            }
            _ => Value::Null,
        });
    }
    if !triggered_here(&capabilities, method, &params) {
        return Ok(Value::Null);
    }
    if resolving {
        untag(&mut params);
    } else if let Some(item) = params.get_mut("item") {
        untag(item);
    }
    Rewrite::to_server(&service, &conn.paths, conn.encoding, encoding, uri).value(&mut params);
    if method.starts_with("textDocument/semanticTokens/") {
        let client = conn.encoding;
        return tokens(&service, &target, method, &params, &capabilities, client).map_err(failed);
    }
    let answer = service.code_request(&target, method, params).map_err(failed)?;
    let mut result = answer.result;
    Rewrite::from_server(&service, &conn.paths, encoding, conn.encoding, &server_uri)
        .value(&mut result);
    let line_folding_only = shared.structure.get().is_some_and(|c| c.line_folding_only);
    shape(method, &mut result, uri, line_folding_only);
    if !shared.relay.links.get().copied().unwrap_or(false) {
        unlink(method, &mut result);
    }
    Ok(result)
}

/// A code file's semantic tokens for `params` (already in the server's URIs and encoding):
/// the server's `full` (or its `range`, when it has one and a range was asked), in the
/// editor's legend and encoding `client`. No `resultId`: every request is answered in full
/// (a delta request too, which the protocol allows).
fn tokens(
    service: &Service,
    target: &CodeTarget,
    method: &str,
    params: &Value,
    capabilities: &Value,
    client: Encoding,
) -> Result<Value, CommandError> {
    let provider = &capabilities["semanticTokensProvider"];
    let Some(legend) = crate::code_tokens::ServerLegend::of(provider) else {
        return Ok(Value::Null);
    };
    let range = Some(&params["range"]).filter(|r| method.ends_with("/range") && r.is_object());
    let line = |range: &Value, end: &str| range[end]["line"].as_u64().unwrap_or(0) as u32;
    let lines = range.map(|r| (line(r, "start"), line(r, "end")));
    let textdoc = &params["textDocument"];
    let answer = match range {
        Some(range) if provided(&provider["range"]) => service.code_request(
            target,
            "textDocument/semanticTokens/range",
            json!({"textDocument": textdoc, "range": range}),
        )?,
        _ => service.code_request(
            target,
            "textDocument/semanticTokens/full",
            json!({"textDocument": textdoc}),
        )?,
    };
    let data: Vec<u32> = answer.result["data"]
        .as_array()
        .map(|d| d.iter().map(|n| n.as_u64().unwrap_or(0) as u32).collect())
        .unwrap_or_default();
    // The file's text only when positions must be converted.
    let server = service.code_encoding(target.server());
    let text = if server == client { None } else { Some(service.code_text(target)?) };
    let convert = text.as_deref().map(|text| (text, server, client));
    Ok(json!({"data": crate::code_tokens::translate(&data, &legend, convert, lines)}))
}

/// Why a file's server cannot take it at all (not a failure of one request).
fn cannot_take(err: &CommandError) -> bool {
    matches!(err.code(), Code::Untrusted | Code::ServerUnavailable | Code::Unsupported)
}

/// Whether the server's capabilities offer `method` (a missing or `false` provider does not).
fn offers(capabilities: &Value, method: &str) -> bool {
    let Some((_, key)) = RELAYED.iter().find(|(m, _)| *m == method) else { return false };
    let mut at = capabilities;
    for part in key.split('.') {
        at = &at[part];
    }
    provided(at)
}

/// Whether a server capability is there: present and not `false`.
fn provided(capability: &Value) -> bool {
    !(capability.is_null() || capability == &Value::Bool(false))
}

/// Whether a completion, signature help or on-type formatting the client triggered by typing
/// a character is one the file's server asked to be triggered by (the advertised characters
/// are every server's).
fn triggered_here(capabilities: &Value, method: &str, params: &Value) -> bool {
    let typed = params["context"]["triggerCharacter"].as_str();
    let (provider, lists, typed): (&str, &[&str], _) = match method {
        "textDocument/completion" => ("completionProvider", &["triggerCharacters"], typed),
        "textDocument/signatureHelp" => {
            ("signatureHelpProvider", &["triggerCharacters", "retriggerCharacters"], typed)
        }
        "textDocument/onTypeFormatting" => (
            "documentOnTypeFormattingProvider",
            &["firstTriggerCharacter", "moreTriggerCharacter"],
            params["ch"].as_str(),
        ),
        _ => return true,
    };
    let Some(typed) = typed else { return true };
    // A list of characters, or one (`firstTriggerCharacter`).
    lists.iter().any(|list| match &capabilities[provider][list] {
        Value::String(c) => c == typed,
        Value::Array(chars) => chars.iter().any(|c| c.as_str() == Some(typed)),
        _ => false,
    })
}

/// The answer as the client takes it: items it resolves later tagged with their file, server
/// commands (which only the server could run) left out, folding to whole lines when asked.
fn shape(method: &str, result: &mut Value, uri: &str, line_folding_only: bool) {
    match method {
        "textDocument/completion" => {
            let items = match result {
                Value::Array(items) => Some(items),
                Value::Object(list) => list.get_mut("items").and_then(Value::as_array_mut),
                _ => None,
            };
            items.into_iter().flatten().for_each(|item| tag(item, uri));
        }
        "textDocument/codeAction" => {
            if let Value::Array(actions) = result {
                // A bare `Command`, or an action that is only a command, cannot be carried out.
                actions.retain(|a| {
                    !a["command"].is_string()
                        && (a.get("edit").is_some() || a.get("data").is_some())
                });
                for action in actions.iter_mut() {
                    strip_command(action);
                    tag(action, uri);
                }
            }
        }
        "codeAction/resolve" => {
            strip_command(result);
            tag(result, uri);
        }
        "completionItem/resolve" | "inlayHint/resolve" => tag(result, uri),
        "textDocument/inlayHint" | "textDocument/prepareCallHierarchy" => {
            if let Value::Array(items) = result {
                items.iter_mut().for_each(|item| tag(item, uri));
            }
        }
        "callHierarchy/incomingCalls" | "callHierarchy/outgoingCalls" => {
            let side = if method.ends_with("incomingCalls") { "from" } else { "to" };
            if let Value::Array(calls) = result {
                calls.iter_mut().filter_map(|c| c.get_mut(side)).for_each(|item| tag(item, uri));
            }
        }
        "textDocument/foldingRange" if line_folding_only => {
            if let Value::Array(ranges) = result {
                for range in ranges.iter_mut().filter_map(Value::as_object_mut) {
                    range.remove("startCharacter");
                    range.remove("endCharacter");
                }
            }
        }
        _ => {}
    }
}

/// `LocationLink`s as the `Location`s of their targets, for a client that takes no links
/// (the servers are asked for links).
fn unlink(method: &str, result: &mut Value) {
    let navigation = ["definition", "declaration", "typeDefinition", "implementation"];
    if !navigation.iter().any(|m| method.strip_prefix("textDocument/") == Some(m)) {
        return;
    }
    let as_location = |link: &mut Value| {
        if let Some(uri) = link.get("targetUri").cloned() {
            let range = link.get("targetSelectionRange").or(link.get("targetRange")).cloned();
            *link = json!({"uri": uri, "range": range});
        }
    };
    match result {
        Value::Array(links) => links.iter_mut().for_each(as_location),
        Value::Object(_) => as_location(result),
        _ => {}
    }
}

fn strip_command(action: &mut Value) {
    if let Some(map) = action.as_object_mut() {
        map.remove("command");
    }
}

/// Keep `item`'s own `data` and the file it came from.
fn tag(item: &mut Value, uri: &str) {
    let Some(map) = item.as_object_mut() else { return };
    let mut tagged = json!({TAG: {"uri": uri}});
    if let Some(data) = map.remove("data") {
        tagged["data"] = data;
    }
    map.insert("data".to_owned(), tagged);
}

/// The file a tagged item came from.
fn tagged_uri(item: &Value) -> Option<String> {
    item.get("data")?.get(TAG)?.get("uri")?.as_str().map(str::to_owned)
}

/// The item with the server's own `data` back.
fn untag(item: &mut Value) {
    let Some(map) = item.as_object_mut() else { return };
    let own = map.remove("data").and_then(|mut d| d.get_mut("data").map(Value::take));
    if let Some(own) = own {
        map.insert("data".to_owned(), own);
    }
}

/// `workspace/symbol` of every server that may start, as `SymbolInformation`s in the
/// client's form (the entities come from the core's handler).
fn workspace_symbols(shared: &Shared, query: &str) -> Vec<Value> {
    let (Ok((service, _)), Some(conn)) = (shared.service(), shared.connection()) else {
        return Vec::new();
    };
    let symbols = match service.code_workspace_symbols(query, None) {
        Ok(symbols) => symbols,
        Err(err) => {
            tracing::warn!("no code symbols: {err}");
            return Vec::new();
        }
    };
    for (server, err) in &symbols.skipped {
        tracing::debug!("workspace symbols: {server} skipped: {err}");
    }
    let mut out = Vec::new();
    for (_, encoding, found) in symbols.found {
        let mut found = Value::Array(found);
        Rewrite::from_server(&service, &conn.paths, encoding, conn.encoding, "").value(&mut found);
        let Value::Array(found) = found else { continue };
        for mut s in found {
            // A `WorkspaceSymbol` may name only its file: the client takes one shape.
            if s["location"].get("range").is_none() && s["location"].is_object() {
                s["location"]["range"] = json!({"start": {"line": 0, "character": 0},
                                                "end": {"line": 0, "character": 0}});
            }
            out.push(s);
        }
    }
    out
}

/// The current text of the file a URI names, if it can be read.
type TextOf<'a> = dyn Fn(&str) -> Option<Arc<str>> + 'a;

/// Rewrites LSP JSON between the client's form and a server's: URIs (under the client's
/// root <-> the store's folder; others as they are) and positions (one encoding to the
/// other, counted in the text of the file each position is in). Opaque parts (`data`,
/// command `arguments`) are never touched.
pub(crate) struct Rewrite<'a> {
    from: Encoding,
    to: Encoding,
    uri: Box<dyn Fn(&str) -> String + 'a>,
    text: Box<TextOf<'a>>,
    texts: HashMap<String, Option<(Arc<str>, LineIndex)>>,
    /// The file of the request: where positions without a file of their own are.
    request: String,
    /// The versions in a server's edits are its own, not the editor's: dropped.
    unversion: bool,
}

impl<'a> Rewrite<'a> {
    pub(crate) fn new(
        from: Encoding,
        to: Encoding,
        uri: impl Fn(&str) -> String + 'a,
        text: impl Fn(&str) -> Option<Arc<str>> + 'a,
        request: &str,
    ) -> Rewrite<'a> {
        Rewrite {
            from,
            to,
            uri: Box::new(uri),
            text: Box::new(text),
            texts: HashMap::new(),
            request: request.to_owned(),
            unversion: false,
        }
    }

    /// The client's form to the server's.
    fn to_server(
        service: &'a Service,
        paths: &'a Paths,
        client: Encoding,
        server: Encoding,
        request: &str,
    ) -> Rewrite<'a> {
        let root = service.store().root().to_owned();
        let uri = move |uri: &str| match Url::parse(uri).ok().and_then(|u| paths.resolve(&u).ok()) {
            Some(rel) => stardust_core::ide::file_uri(&root.join(rel)),
            None => uri.to_owned(),
        };
        Rewrite::new(client, server, uri, text_of(service, paths), request)
    }

    /// The server's form to the client's.
    fn from_server(
        service: &'a Service,
        paths: &'a Paths,
        server: Encoding,
        client: Encoding,
        request: &str,
    ) -> Rewrite<'a> {
        let uri = move |uri: &str| {
            let rel = Url::parse(uri).ok().and_then(|u| paths.relative(&u));
            rel.and_then(|rel| paths.uri(&rel)).map_or_else(|| uri.to_owned(), String::from)
        };
        let mut rewrite = Rewrite::new(server, client, uri, text_of(service, paths), request);
        rewrite.unversion = true;
        rewrite
    }

    pub(crate) fn value(&mut self, value: &mut Value) {
        let request = self.request.clone();
        self.walk(value, &request);
    }

    fn walk(&mut self, value: &mut Value, doc: &str) {
        let map = match value {
            Value::Array(items) => {
                for item in items {
                    self.walk(item, doc);
                }
                return;
            }
            Value::Object(map) => map,
            _ => return,
        };
        if is_position(map) {
            self.position(map, doc, "line", "character");
            return;
        }
        if map.contains_key("startLine") && map.contains_key("endLine") {
            // A folding range: lines, and characters when it has them.
            self.position(map, doc, "startLine", "startCharacter");
            self.position(map, doc, "endLine", "endCharacter");
            return;
        }
        let own = ["uri", "targetUri"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .or_else(|| map.get("textDocument").and_then(|t| t["uri"].as_str()))
            .unwrap_or(doc)
            .to_owned();
        // An incoming call's ranges are in the caller's file.
        let caller = map.get("from").and_then(|f| f["uri"].as_str()).map(str::to_owned);
        if self.unversion
            && map.contains_key("edits")
            && let Some(Value::Object(id)) = map.get_mut("textDocument")
            && id.contains_key("version")
        {
            id.insert("version".to_owned(), Value::Null);
        }
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            match key.as_str() {
                "data" | "arguments" => {}
                // `target`: a document link's.
                "uri" | "targetUri" | "oldUri" | "newUri" | "target" => {
                    if let Some(Value::String(uri)) = map.get_mut(&key) {
                        *uri = (self.uri)(uri);
                    }
                }
                "changes" | "relatedDocuments" => {
                    let Some(Value::Object(by_uri)) = map.remove(&key) else { continue };
                    let mut out = Map::new();
                    for (uri, mut inner) in by_uri {
                        self.walk(&mut inner, &uri);
                        out.insert((self.uri)(&uri), inner);
                    }
                    map.insert(key, Value::Object(out));
                }
                _ => {
                    let in_doc = match key.as_str() {
                        "originSelectionRange" => self.request.clone(),
                        "fromRanges" => caller.clone().unwrap_or_else(|| own.clone()),
                        _ => own.clone(),
                    };
                    if let Some(child) = map.get_mut(&key) {
                        self.walk(child, &in_doc);
                    }
                }
            }
        }
    }

    /// Convert the position at `line`/`character` keys of `map` in the file `doc`. Without
    /// the file's text (it cannot be read) the numbers stay; a character past its line's end
    /// (servers send them) is clamped to the end.
    fn position(&mut self, map: &mut Map<String, Value>, doc: &str, line: &str, character: &str) {
        if self.from == self.to {
            return;
        }
        let (Some(l), Some(c)) = (map[line].as_u64(), map.get(character).and_then(Value::as_u64))
        else {
            return;
        };
        let text = (self.text)(doc);
        let Some((text, index)) = self
            .texts
            .entry(doc.to_owned())
            .or_insert_with(|| text.map(|t| (t.clone(), LineIndex::new(&t))))
        else {
            return;
        };
        let at = Position {
            line: u32::try_from(l).unwrap_or(u32::MAX),
            column: u32::try_from(c).unwrap_or(u32::MAX),
        };
        let offset = index.offset(text, at, self.from).unwrap_or_else(|| {
            index
                .line_span(text, at.line)
                .map_or(u32::try_from(text.len()).unwrap_or(u32::MAX), |span| span.end)
        });
        let moved = index.position(text, offset, self.to);
        map.insert(line.to_owned(), json!(moved.line));
        map.insert(character.to_owned(), json!(moved.column));
    }
}

/// The text of a file named in either form: by its store path when it is the store's (a
/// mount of it included), else as named.
fn text_of<'a>(service: &'a Service, paths: &'a Paths) -> impl Fn(&str) -> Option<Arc<str>> + 'a {
    move |uri| match Url::parse(uri).ok().and_then(|u| paths.relative(&u)) {
        Some(rel) => service.code_file_text(&rel),
        None => service.code_file_text(uri),
    }
}

fn is_position(map: &Map<String, Value>) -> bool {
    map.len() == 2
        && map.get("line").is_some_and(Value::is_u64)
        && map.get("character").is_some_and(Value::is_u64)
}

/// Forwards what the servers publish to one client.
struct Forward {
    service: Arc<Service>,
    client: ClientSocket,
    shared: Weak<Shared>,
    runtime: Option<tokio::runtime::Handle>,
    /// Whether the client takes work-done progress it created.
    progress: bool,
    /// The client's token for each (server, token) begun.
    tokens: HashMap<(String, String), Value>,
}

/// How long a `window/workDoneProgress/create` may take the client before the progress is
/// not relayed.
const CREATE_WAIT: Duration = Duration::from_secs(5);

impl Forward {
    fn run(mut self, events: &mpsc::Receiver<stardust_core::codefiles::CodeEvent>) {
        loop {
            match events.recv_timeout(Duration::from_secs(1)) {
                Ok(event) => {
                    let Some(shared) = self.shared.upgrade() else { return };
                    if self.forward(&shared, event).is_err() {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) if self.shared.strong_count() > 0 => {}
                Err(_) => return,
            }
        }
    }

    /// `Err` when the connection is gone.
    fn forward(
        &mut self,
        shared: &Shared,
        event: stardust_core::codefiles::CodeEvent,
    ) -> async_lsp::Result<()> {
        let Some(conn) = shared.connection() else { return Ok(()) };
        let mut params = event.params;
        match event.method.as_str() {
            "textDocument/publishDiagnostics" => {
                let uri = params["uri"].as_str().unwrap_or_default().to_owned();
                // Only the store's files: a library's diagnostics are not the editor's.
                if Url::parse(&uri).ok().and_then(|u| conn.paths.relative(&u)).is_none() {
                    return Ok(());
                }
                if conn.diagnostics == DiagnosticsMode::Pull {
                    self.refresh();
                    return Ok(());
                }
                let encoding = self.service.code_encoding(&event.server);
                Rewrite::from_server(&self.service, &conn.paths, encoding, conn.encoding, &uri)
                    .value(&mut params);
                // The server's versions count the texts the core gave it, not the editor's.
                if let Some(map) = params.as_object_mut() {
                    map.remove("version");
                }
                self.client.notify::<RawPublish>(params)
            }
            "window/showMessage" | "window/logMessage" => {
                let message = params["message"].as_str().unwrap_or_default();
                params["message"] = json!(format!("{}: {message}", event.server));
                if event.method == "window/showMessage" {
                    self.client.notify::<RawShow>(params)
                } else {
                    self.client.notify::<RawLog>(params)
                }
            }
            "$/progress" if self.progress => self.progress(&event.server, params),
            _ => Ok(()),
        }
    }

    /// A pulling client is asked to pull again (it pulls code files through the relay).
    fn refresh(&self) {
        let Some(runtime) = &self.runtime else { return };
        let mut client = self.client.clone();
        runtime.spawn(async move {
            if let Err(err) = client.workspace_diagnostic_refresh(()).await {
                tracing::debug!("the client refused to refresh diagnostics: {err}");
            }
        });
    }

    /// A server's work-done progress under a token created on the client for it.
    fn progress(&mut self, server: &str, mut params: Value) -> async_lsp::Result<()> {
        let key = (server.to_owned(), params["token"].to_string());
        let kind = params["value"]["kind"].as_str().unwrap_or_default().to_owned();
        if kind == "begin" && !self.tokens.contains_key(&key) {
            let token = json!(format!("stardust/{server}/{}", key.1.trim_matches('"')));
            let Some(runtime) = &self.runtime else { return Ok(()) };
            let client = self.client.clone();
            let create = lsp_types::WorkDoneProgressCreateParams {
                token: serde_json::from_value(token.clone()).expect("a string token"),
            };
            let (tx, rx) = mpsc::channel();
            runtime.spawn(async move {
                let answer =
                    client.request::<lsp_types::request::WorkDoneProgressCreate>(create).await;
                let _ = tx.send(answer.is_ok());
            });
            let created = rx.recv_timeout(CREATE_WAIT).unwrap_or(false);
            if !created {
                tracing::debug!("the client did not create a progress token for {server}");
                return Ok(());
            }
            self.tokens.insert(key.clone(), token);
        }
        let Some(token) = self.tokens.get(&key).cloned() else { return Ok(()) };
        if kind == "end" {
            self.tokens.remove(&key);
        }
        params["token"] = token;
        if let Some(title) = params["value"]["title"].as_str() {
            params["value"]["title"] = json!(format!("{server}: {title}"));
        }
        self.client.notify::<RawProgress>(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rewrite from UTF-8 to UTF-16 on these texts by URI, moving `file:///srv/` to
    /// `file:///cli/`.
    fn rewrite<'a>(texts: &'a [(&'a str, &'a str)]) -> Rewrite<'a> {
        Rewrite::new(
            Encoding::Utf8,
            Encoding::Utf16,
            |uri| uri.replace("file:///srv/", "file:///cli/"),
            move |uri| texts.iter().find(|(u, _)| *u == uri).map(|(_, t)| Arc::from(*t)),
            "file:///srv/a.py",
        )
    }

    const A: &str = "é = 1\nx😀 = é\n";
    const B: &str = "😀😀b\n";

    fn pos(line: u32, character: u32) -> Value {
        json!({"line": line, "character": character})
    }

    #[test]
    fn positions_are_counted_in_the_file_they_are_in() {
        let texts = [("file:///srv/a.py", A), ("file:///srv/b.py", B)];
        // Definition links: the origin in the request's file, the target in its own.
        let mut links = json!([{
            "originSelectionRange": {"start": pos(1, 5), "end": pos(1, 8)},
            "targetUri": "file:///srv/b.py",
            "targetRange": {"start": pos(0, 8), "end": pos(0, 9)},
            "targetSelectionRange": {"start": pos(0, 4), "end": pos(0, 8)},
        }]);
        rewrite(&texts).value(&mut links);
        assert_eq!(
            links,
            json!([{
                "originSelectionRange": {"start": pos(1, 3), "end": pos(1, 6)},
                "targetUri": "file:///cli/b.py",
                "targetRange": {"start": pos(0, 4), "end": pos(0, 5)},
                "targetSelectionRange": {"start": pos(0, 2), "end": pos(0, 4)},
            }])
        );
        // A document link: its range in the request's file, its target under the client's root.
        let mut document_links = json!([{"range": {"start": pos(1, 5), "end": pos(1, 8)}, "target": "file:///srv/b.py"}]);
        rewrite(&texts).value(&mut document_links);
        assert_eq!(
            document_links,
            json!([{"range": {"start": pos(1, 3), "end": pos(1, 6)}, "target": "file:///cli/b.py"}])
        );
    }

    #[test]
    fn workspace_edits_map_their_keys_drop_server_versions_and_keep_opaque_data() {
        let texts = [("file:///srv/a.py", A), ("file:///srv/b.py", B)];
        let edit = |l, c| json!({"range": {"start": pos(l, c), "end": pos(l, c)}, "newText": "z"});
        let mut answer = json!({
            "changes": {"file:///srv/b.py": [edit(0, 8)]},
            "documentChanges": [
                {"textDocument": {"uri": "file:///srv/a.py", "version": 7}, "edits": [edit(1, 5)]},
                {"kind": "rename", "oldUri": "file:///srv/a.py", "newUri": "file:///srv/c.py"},
            ],
            "data": {"range": {"start": pos(1, 5), "end": pos(1, 5)}, "uri": "file:///srv/a.py"},
        });
        let mut rw = rewrite(&texts);
        rw.unversion = true;
        rw.value(&mut answer);
        assert_eq!(
            answer,
            json!({
                "changes": {"file:///cli/b.py": [edit(0, 4)]},
                "documentChanges": [
                    {"textDocument": {"uri": "file:///cli/a.py", "version": null}, "edits": [edit(1, 3)]},
                    {"kind": "rename", "oldUri": "file:///cli/a.py", "newUri": "file:///cli/c.py"},
                ],
                "data": {"range": {"start": pos(1, 5), "end": pos(1, 5)}, "uri": "file:///srv/a.py"},
            })
        );
    }

    #[test]
    fn incoming_calls_ranges_are_in_the_caller_and_outgoing_ones_in_the_item() {
        let texts = [("file:///srv/a.py", A), ("file:///srv/b.py", B)];
        let item = |uri: &str, c| {
            json!({"name": "f", "kind": 12, "uri": uri,
            "range": {"start": pos(0, c), "end": pos(0, c)},
            "selectionRange": {"start": pos(0, c), "end": pos(0, c)}})
        };
        let mut incoming = json!([{"from": item("file:///srv/b.py", 8),
                                   "fromRanges": [{"start": pos(0, 8), "end": pos(0, 9)}]}]);
        rewrite(&texts).value(&mut incoming);
        assert_eq!(incoming[0]["fromRanges"], json!([{"start": pos(0, 4), "end": pos(0, 5)}]));
        assert_eq!(incoming[0]["from"]["range"]["start"], pos(0, 4));
        assert_eq!(incoming[0]["from"]["uri"], "file:///cli/b.py");
        let mut outgoing = json!([{"to": item("file:///srv/b.py", 8),
                                   "fromRanges": [{"start": pos(1, 5), "end": pos(1, 8)}]}]);
        rewrite(&texts).value(&mut outgoing);
        assert_eq!(outgoing[0]["fromRanges"], json!([{"start": pos(1, 3), "end": pos(1, 6)}]));
    }

    #[test]
    fn unreadable_files_keep_their_numbers_and_line_ends_clamp() {
        let texts = [("file:///srv/a.py", A)];
        let mut located = json!([
            {"uri": "file:///elsewhere/lib.pyi", "range": {"start": pos(3, 40), "end": pos(3, 41)}},
            {"uri": "file:///srv/a.py", "range": {"start": pos(0, 99), "end": pos(9, 0)}},
        ]);
        rewrite(&texts).value(&mut located);
        assert_eq!(
            located,
            json!([
                {"uri": "file:///elsewhere/lib.pyi", "range": {"start": pos(3, 40), "end": pos(3, 41)}},
                {"uri": "file:///cli/a.py", "range": {"start": pos(0, 5), "end": pos(2, 0)}},
            ])
        );
    }

    #[test]
    fn folding_ranges_convert_their_characters_and_one_encoding_changes_nothing() {
        let texts = [("file:///srv/a.py", A)];
        let mut folds =
            json!([{"startLine": 1, "startCharacter": 5, "endLine": 1, "endCharacter": 8}]);
        rewrite(&texts).value(&mut folds);
        assert_eq!(
            folds,
            json!([{"startLine": 1, "startCharacter": 3, "endLine": 1, "endCharacter": 6}])
        );
        let mut same = Rewrite::new(
            Encoding::Utf16,
            Encoding::Utf16,
            |u| u.to_owned(),
            |_| panic!("no text is read when the encodings agree"),
            "file:///srv/a.py",
        );
        let mut folds = json!([{"startLine": 1, "startCharacter": 5, "endLine": 1}]);
        same.value(&mut folds);
        assert_eq!(folds, json!([{"startLine": 1, "startCharacter": 5, "endLine": 1}]));
    }

    #[test]
    fn resolvable_items_carry_their_file_and_get_their_own_data_back() {
        let mut items = json!({"isIncomplete": false, "items": [{"label": "a", "data": {"n": 1}}, {"label": "b"}]});
        shape("textDocument/completion", &mut items, "file:///cli/a.py", false);
        assert_eq!(tagged_uri(&items["items"][0]).as_deref(), Some("file:///cli/a.py"));
        assert_eq!(tagged_uri(&items["items"][1]).as_deref(), Some("file:///cli/a.py"));
        let mut first = items["items"][0].clone();
        untag(&mut first);
        assert_eq!(first, json!({"label": "a", "data": {"n": 1}}));
        let mut second = items["items"][1].clone();
        untag(&mut second);
        assert_eq!(second, json!({"label": "b"}));
    }

    #[test]
    fn links_become_locations_of_their_targets_for_a_client_without_links() {
        let range = |l| json!({"start": pos(l, 0), "end": pos(l, 3)});
        let mut links = json!([{"originSelectionRange": range(1), "targetUri": "file:///cli/b.py",
                                "targetRange": range(4), "targetSelectionRange": range(5)}]);
        unlink("textDocument/definition", &mut links);
        assert_eq!(links, json!([{"uri": "file:///cli/b.py", "range": range(5)}]));
        let mut hover = json!({"targetUri": "kept"});
        unlink("textDocument/hover", &mut hover);
        assert_eq!(hover, json!({"targetUri": "kept"}));
    }

    #[test]
    fn code_actions_that_only_a_server_command_carries_out_are_left_out() {
        let mut actions = json!([
            {"title": "bare", "command": "pyright.organizeimports", "arguments": []},
            {"title": "command only", "command": {"title": "x", "command": "x"}},
            {"title": "edit", "edit": {"changes": {}}, "command": {"title": "x", "command": "x"}},
            {"title": "lazy", "data": 3},
        ]);
        shape("textDocument/codeAction", &mut actions, "file:///cli/a.py", false);
        let titles: Vec<&str> =
            actions.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["edit", "lazy"]);
        assert!(actions[0].get("command").is_none());
        assert_eq!(actions[1]["data"]["data"], 3);
    }

    #[test]
    fn capabilities_and_trigger_characters_decide_what_is_asked() {
        let caps = json!({
            "hoverProvider": true,
            "definitionProvider": false,
            "renameProvider": {"prepareProvider": true},
            "completionProvider": {"triggerCharacters": ["."]},
        });
        assert!(offers(&caps, "textDocument/hover"));
        assert!(!offers(&caps, "textDocument/definition"));
        assert!(!offers(&caps, "textDocument/references"));
        assert!(offers(&caps, "textDocument/prepareRename"));
        assert!(!offers(&caps, "completionItem/resolve"));
        let typed = |c: &str| json!({"context": {"triggerKind": 2, "triggerCharacter": c}});
        assert!(triggered_here(&caps, "textDocument/completion", &typed(".")));
        assert!(!triggered_here(&caps, "textDocument/completion", &typed("@")));
        assert!(triggered_here(
            &caps,
            "textDocument/completion",
            &json!({"context": {"triggerKind": 1}})
        ));
    }
}

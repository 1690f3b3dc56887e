//! One supervised language server as the core uses it: started lazily, shared by every
//! session, restarted after a crash within `max_restarts` a minute, stopped with its whole
//! process tree. Requests carry the server's readiness; documents are kept in sync and sent
//! again to a restarted server; push diagnostics are kept per file.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stardust_core::codefiles::Activity;
use stardust_core::ide::file_uri;

use crate::client::{
    Answering, Connection, EventSink, PublishedDiagnostics, REQUEST_TOKEN, Readiness, Reply,
};
use crate::error::{CONTENT_MODIFIED, METHOD_NOT_FOUND, SERVER_CANCELLED, ServerError};
use crate::process::{Process, check_command};
use crate::spec::{ServerSpec, SupervisorProgram};
use stardust_core::sync::lock;

/// How many times a ContentModified / ServerCancelled answer is retried (within the caller's
/// deadline).
pub const RETRIES: u32 = 3;

/// The window `max_restarts` counts crashes in.
const RESTART_WINDOW: Duration = Duration::from_secs(60);

/// How long a request's answer is waited for in place before the wait counts as long
/// (`stardust_core::sync::long_wait`): a warm server's answer comes well within it.
const IN_PLACE: Duration = Duration::from_millis(2);

/// The position encoding the server chose from the client's offer (utf-8, utf-32, utf-16,
/// in that order of preference: the core counts bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PositionEncoding {
    Utf8,
    Utf16,
    Utf32,
}

impl PositionEncoding {
    pub fn as_str(self) -> &'static str {
        match self {
            PositionEncoding::Utf8 => "utf-8",
            PositionEncoding::Utf16 => "utf-16",
            PositionEncoding::Utf32 => "utf-32",
        }
    }

    /// The encoding of `capabilities.positionEncoding`; UTF-16 when absent (the LSP default).
    fn of(capabilities: &Value) -> PositionEncoding {
        match capabilities.get("positionEncoding").and_then(Value::as_str) {
            Some("utf-8") => PositionEncoding::Utf8,
            Some("utf-32") => PositionEncoding::Utf32,
            _ => PositionEncoding::Utf16,
        }
    }
}

/// An answer from the server, with its readiness when it came.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub result: Value,
    pub readiness: Readiness,
}

/// Where a server is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not running: never started (started by the first request or document, or a warm-up),
    /// or stopped after `idle_stop` unused.
    Idle,
    /// Started, and not yet through `initialize`.
    Starting,
    /// Running, its initial analysis over and not at work (SPEC §25).
    Ready,
    /// Running, its initial analysis not over or at work on a change.
    Indexing,
    /// Crashed or failed to start; the next request starts it again.
    Crashed,
    /// Crashed past `max_restarts` a minute: `server-unavailable` until `restart`.
    Unavailable,
    /// Stopped by `shutdown`.
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Starting => "starting",
            State::Ready => "ready",
            State::Indexing => "indexing",
            State::Crashed => "crashed",
            // Crashed past its restarts: still `crashed` to SPEC §25 (status says `gaveUp`).
            State::Unavailable => "crashed",
            State::Stopped => "stopped",
        }
    }
}

/// What `server_status` shows about one server.
#[derive(Clone, Debug)]
pub struct Status {
    pub name: String,
    pub state: State,
    /// Since when it is in that state (`None`: never started).
    pub since: Option<Instant>,
    pub supervisor_pid: Option<i32>,
    /// The server's pid, which is also its process group id.
    pub server_pid: Option<i32>,
    /// Crashes within the last minute.
    pub recent_crashes: u32,
    /// Every start after the first.
    pub restarts: u32,
    /// The `capabilities` of the server's `initialize` answer.
    pub capabilities: Value,
    pub position_encoding: Option<PositionEncoding>,
    /// The latest `$/progress` title or message, while indexing.
    pub progress: Option<String>,
    /// Why it last crashed or failed to start.
    pub last_error: Option<String>,
}

/// One running instance: the process tree and its connection.
struct Instance {
    process: Arc<Process>,
    conn: Connection,
    capabilities: Value,
    encoding: PositionEncoding,
    /// When it answered `initialize`.
    initialized: Instant,
}

impl Instance {
    fn alive(&self) -> bool {
        self.conn.closed().is_none() && !self.process.server_exited()
    }
}

#[derive(Clone, Debug)]
struct Document {
    language_id: String,
    version: i64,
    text: String,
}

#[derive(Default)]
struct Inner {
    instance: Option<Arc<Instance>>,
    /// When each crash (or failed start) happened, within the restart window.
    crashes: VecDeque<Instant>,
    gave_up: bool,
    stopped: bool,
    starts: u32,
    last_error: Option<String>,
    /// Open documents by URI, sent again to every new instance.
    documents: BTreeMap<String, Document>,
    /// When the start under way began (`None`: none is).
    starting: Option<Instant>,
    /// When the last crash (or failed start) happened.
    crashed_at: Option<Instant>,
    /// When a session last used the server (a request, a text given); `idle_stop` counts
    /// from it.
    last_used: Option<Instant>,
}

/// A supervised language server (SPEC §17), shared by every session of a core.
pub struct LanguageServer {
    spec: ServerSpec,
    program: SupervisorProgram,
    inner: Mutex<Inner>,
    /// Held while an instance starts, so concurrent callers share one start.
    starting: Mutex<()>,
    /// Where relayed notifications go (none: kept only for status and diagnostics).
    events: Option<EventSink>,
}

impl std::fmt::Debug for LanguageServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanguageServer").field("name", &self.spec.name).finish_non_exhaustive()
    }
}

impl LanguageServer {
    /// A server that starts on first use, supervised by `program`.
    pub fn new(spec: ServerSpec, program: SupervisorProgram) -> LanguageServer {
        LanguageServer {
            spec,
            program,
            inner: Mutex::default(),
            starting: Mutex::new(()),
            events: None,
        }
    }

    /// This server, passing what it publishes for editors (diagnostics, progress, messages)
    /// to `events` as it arrives.
    pub fn with_events(mut self, events: EventSink) -> LanguageServer {
        self.events = Some(events);
        self
    }

    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// The running instance, starting one if needed (the start has its own deadline,
    /// `timeouts.startup`). A dead instance found here is counted as a crash.
    fn running(&self) -> Result<Arc<Instance>, ServerError> {
        if let Some(instance) = self.live()? {
            return Ok(instance);
        }
        // Starting, or waiting for another caller's start or restart, takes long.
        stardust_core::sync::long_wait(|| self.start_running())
    }

    /// [`LanguageServer::running`] when the server may have to be started.
    fn start_running(&self) -> Result<Arc<Instance>, ServerError> {
        let _starting = lock(&self.starting);
        if let Some(instance) = self.live()? {
            return Ok(instance);
        }
        self.lock().starting = Some(Instant::now());
        let started = self.start();
        let mut inner = self.lock();
        inner.starting = None;
        match started {
            Ok(instance) => {
                let instance = Arc::new(instance);
                for (uri, doc) in &inner.documents {
                    instance.conn.notify(
                        "textDocument/didOpen",
                        json!({"textDocument": {"uri": uri, "languageId": doc.language_id, "version": doc.version, "text": doc.text}}),
                    );
                }
                inner.starts += 1;
                inner.instance = Some(instance.clone());
                Ok(instance)
            }
            Err(e @ ServerError::Missing { .. }) => Err(e),
            Err(e) => {
                inner.crashes.push_back(Instant::now());
                inner.crashed_at = Some(Instant::now());
                inner.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// The live instance, or None when one must be started; an error when none may be.
    fn live(&self) -> Result<Option<Arc<Instance>>, ServerError> {
        let mut inner = self.lock();
        if inner.stopped {
            return Err(ServerError::Stopped { server: self.spec.name.clone() });
        }
        if let Some(instance) = inner.instance.clone() {
            if instance.alive() {
                return Ok(Some(instance));
            }
            // A crash: the tree is being reaped (on_close); count it once.
            inner.instance = None;
            let reason = instance.conn.closed().unwrap_or_else(|| "the server exited".into());
            // The supervisor reports the exit status just after the output ends.
            instance.process.wait_server_exit(Duration::from_millis(500));
            let epitaph = instance.process.epitaph();
            inner.last_error =
                Some(if epitaph.is_empty() { reason } else { format!("{reason}; {epitaph}") });
            inner.crashes.push_back(Instant::now());
            inner.crashed_at = Some(Instant::now());
            instance.process.terminate();
        }
        let now = Instant::now();
        while inner.crashes.front().is_some_and(|t| now.duration_since(*t) > RESTART_WINDOW) {
            inner.crashes.pop_front();
        }
        if inner.gave_up || inner.crashes.len() as u32 > self.spec.max_restarts {
            inner.gave_up = true;
            return Err(ServerError::GaveUp {
                server: self.spec.name.clone(),
                restarts: inner.crashes.len() as u32,
            });
        }
        Ok(None)
    }

    fn start(&self) -> Result<Instance, ServerError> {
        let spec = &self.spec;
        check_command(spec)?;
        let (process, pipes) = Process::start(spec, &self.program)?;
        let root_uri = file_uri(&spec.root);
        let answering = Answering {
            settings: spec.settings.clone(),
            root_uri: root_uri.clone(),
            root_name: spec
                .root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            events: self.events.clone(),
        };
        let closing = process.clone();
        let conn = Connection::start(
            &spec.name,
            pipes.stdin,
            pipes.stdout,
            answering,
            // The server's output ended: whatever is left of the tree goes too.
            Box::new(move |_reason| closing.terminate()),
        )
        .map_err(|e| ServerError::StartFailed {
            server: spec.name.clone(),
            reason: format!("cannot start a thread: {e}"),
        })?;
        let failed = |reason: String| {
            process.wait_server_exit(Duration::from_millis(200));
            process.stop(Duration::from_secs(2));
            let epitaph = process.epitaph();
            ServerError::StartFailed {
                server: spec.name.clone(),
                reason: if epitaph.is_empty() { reason } else { format!("{reason}; {epitaph}") },
            }
        };
        let (id, rx) = conn.request("initialize", self.initialize_params(&root_uri));
        let result = match rx.recv_timeout(spec.timeouts.startup) {
            Ok(Reply::Result(result)) => result,
            Ok(Reply::Error { code, message }) => {
                return Err(failed(format!("it refused initialize (error {code}: {message})")));
            }
            Ok(Reply::Gone(reason)) => {
                return Err(failed(format!("{reason} before answering initialize")));
            }
            Err(_) => {
                conn.forget(id);
                return Err(failed(format!(
                    "it did not answer initialize within {}s (timeouts.startup)",
                    spec.timeouts.startup.as_secs_f64()
                )));
            }
        };
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        if !capabilities.is_object() {
            return Err(failed("its initialize answer has no capabilities object".into()));
        }
        conn.notify("initialized", json!({}));
        let encoding = PositionEncoding::of(&capabilities);
        // Reported on the other pipe right after the spawn; waited for once, here.
        let pid = process.server_pid(Duration::from_secs(1));
        tracing::info!(
            server = spec.name,
            supervisor = process.supervisor_pid(),
            pid,
            encoding = encoding.as_str(),
            "language server started"
        );
        Ok(Instance { process, conn, capabilities, encoding, initialized: Instant::now() })
    }

    fn initialize_params(&self, root_uri: &str) -> Value {
        let root_name = self
            .spec
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "stardust", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": self.spec.root,
            "workspaceFolders": [{"uri": root_uri, "name": root_name}],
            "capabilities": {
                "general": {"positionEncodings": ["utf-8", "utf-32", "utf-16"]},
                "window": {"workDoneProgress": true},
                "workspace": {
                    "configuration": true,
                    "workspaceFolders": true,
                    // Edits from a server are answered `applied: false` (see client.rs).
                    "applyEdit": false,
                    "symbol": {},
                },
                "textDocument": {
                    "synchronization": {"didSave": false, "dynamicRegistration": false},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "definition": {"linkSupport": true},
                    "declaration": {"linkSupport": true},
                    "typeDefinition": {"linkSupport": true},
                    "implementation": {"linkSupport": true},
                    "references": {},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                    "signatureHelp": {"signatureInformation": {"documentationFormat": ["markdown", "plaintext"]}},
                    "callHierarchy": {},
                    "rename": {"prepareSupport": true},
                    "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                        "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                        "refactor.rewrite", "source", "source.organizeImports"
                    ]}}},
                    "publishDiagnostics": {"relatedInformation": true, "versionSupport": true},
                    "diagnostic": {},
                    // Relayed to editors in their legend (lsp-front's `code_tokens`).
                    "semanticTokens": {
                        "requests": {"full": true, "range": true},
                        "tokenTypes": stardust_core::ide::STANDARD_TYPES,
                        "tokenModifiers": stardust_core::ide::STANDARD_MODIFIERS,
                        "formats": ["relative"],
                        "multilineTokenSupport": false,
                        "overlappingTokenSupport": false,
                    },
                },
            },
        });
        if !self.spec.initialization_options.is_null() {
            params["initializationOptions"] = self.spec.initialization_options.clone();
        }
        params
    }

    /// Sends `method` and waits for its answer until `timeout` (`timeouts.request` when None).
    /// ContentModified and ServerCancelled are retried up to `RETRIES` times within that
    /// deadline; at the deadline `$/cancelRequest` is sent and the answer is `busy`. A crash
    /// while waiting is `server-unavailable`; the request is never sent again by itself.
    /// Starting the server first, if it is not running, has its own deadline.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Answer, ServerError> {
        let instance = self.running()?;
        self.used();
        let timeout = timeout.unwrap_or(self.spec.timeouts.request);
        let deadline = Instant::now() + timeout;
        let server = || self.spec.name.clone();
        let mut attempt = 0;
        let params = with_request_token(method, params);
        loop {
            let (id, rx) = instance.conn.request(method, params.clone());
            let left = deadline.saturating_duration_since(Instant::now());
            // A fast answer is waited for in place; a slower one as the caller asked.
            let answer = match rx.recv_timeout(left.min(IN_PLACE)) {
                Err(RecvTimeoutError::Timeout) if left > IN_PLACE => {
                    stardust_core::sync::long_wait(|| {
                        rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    })
                }
                answer => answer,
            };
            match answer {
                Ok(Reply::Result(result)) => {
                    let readiness = stardust_core::codefiles::answer_readiness(
                        &activity_of(&instance),
                        Instant::now(),
                    );
                    return Ok(Answer { result, readiness });
                }
                Ok(Reply::Error { code, .. })
                    if code == CONTENT_MODIFIED || code == SERVER_CANCELLED =>
                {
                    attempt += 1;
                    if attempt > RETRIES || Instant::now() >= deadline {
                        return Err(ServerError::Changing {
                            server: server(),
                            method: method.into(),
                        });
                    }
                    // A short pause lets the change that cancelled it land.
                    let pause = Duration::from_millis(10 * u64::from(attempt)).min(left);
                    stardust_core::sync::long_wait(|| std::thread::sleep(pause));
                }
                Ok(Reply::Error { code, .. }) if code == METHOD_NOT_FOUND => {
                    return Err(ServerError::Unsupported {
                        server: server(),
                        method: method.into(),
                    });
                }
                Ok(Reply::Error { code, message }) => {
                    return Err(ServerError::Rpc {
                        server: server(),
                        method: method.into(),
                        code,
                        message,
                    });
                }
                Ok(Reply::Gone(reason)) => {
                    return Err(ServerError::Crashed {
                        server: server(),
                        method: method.into(),
                        reason,
                    });
                }
                Err(RecvTimeoutError::Timeout) => {
                    instance.conn.forget(id);
                    instance.conn.notify("$/cancelRequest", json!({"id": id}));
                    return Err(ServerError::Busy {
                        server: server(),
                        method: method.into(),
                        timeout,
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let reason =
                        instance.conn.closed().unwrap_or_else(|| "the connection closed".into());
                    return Err(ServerError::Crashed {
                        server: server(),
                        method: method.into(),
                        reason,
                    });
                }
            }
        }
    }

    /// Sends a notification to the running server (starting it if needed).
    pub fn notify(&self, method: &str, params: Value) -> Result<(), ServerError> {
        let instance = self.running()?;
        instance.conn.notify(method, params);
        Ok(())
    }

    /// Opens (or replaces) the document at absolute `path` with `text`; its `languageId` comes
    /// from `languages`. Kept and sent again to a restarted server.
    pub fn open(&self, path: &Path, text: &str) -> Result<(), ServerError> {
        let Some(language_id) = self.spec.language_of(path) else {
            return Err(ServerError::Unsupported {
                server: self.spec.name.clone(),
                method: format!("files like {}", path.display()),
            });
        };
        let language_id = language_id.to_owned();
        self.open_as(path, &language_id, text)
    }

    /// Makes the server's text of `path` be `text`: opened as `language_id` when it is not
    /// open, changed when it differs, nothing sent when the running server has it already.
    pub fn sync(&self, path: &Path, language_id: &str, text: &str) -> Result<(), ServerError> {
        let uri = file_uri(path);
        self.used();
        {
            let inner = self.lock();
            let live = inner.instance.as_ref().is_some_and(|i| i.alive());
            match inner.documents.get(&uri) {
                Some(doc) if live && doc.text == text => return Ok(()),
                Some(_) => {
                    drop(inner);
                    return self.change(path, text);
                }
                None => {}
            }
        }
        self.open_as(path, language_id, text)
    }

    /// Opens (or replaces) the document at `path` as `language_id`.
    pub fn open_as(&self, path: &Path, language_id: &str, text: &str) -> Result<(), ServerError> {
        let uri = file_uri(path);
        let instance = self.running()?;
        let mut inner = self.lock();
        let version = inner.documents.get(&uri).map_or(1, |d| d.version + 1);
        if inner.documents.contains_key(&uri) {
            instance.conn.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
        }
        inner.documents.insert(
            uri.clone(),
            Document { language_id: language_id.to_owned(), version, text: text.to_owned() },
        );
        instance.conn.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}}),
        );
        Ok(())
    }

    /// Replaces an open document's text (a full-content change, valid for every sync kind).
    /// Opens it when it is not open.
    pub fn change(&self, path: &Path, text: &str) -> Result<(), ServerError> {
        let uri = file_uri(path);
        if !self.lock().documents.contains_key(&uri) {
            return self.open(path, text);
        }
        let instance = self.running()?;
        let mut inner = self.lock();
        let Some(doc) = inner.documents.get_mut(&uri) else { return Ok(()) };
        doc.version += 1;
        doc.text = text.to_owned();
        let version = doc.version;
        if sync_kind(&instance.capabilities) != 0 {
            instance.conn.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
            );
        }
        Ok(())
    }

    /// Closes a document (nothing is started for it).
    pub fn close(&self, path: &Path) {
        let uri = file_uri(path);
        let mut inner = self.lock();
        if inner.documents.remove(&uri).is_some()
            && let Some(instance) = inner.instance.as_ref().filter(|i| i.alive())
        {
            instance.conn.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
        }
    }

    /// The version the server last saw of an open document.
    pub fn document_version(&self, path: &Path) -> Option<i64> {
        self.lock().documents.get(&file_uri(path)).map(|d| d.version)
    }

    /// Every file's push diagnostics as the running server last published them, by URI.
    pub fn publications(&self) -> Vec<(String, PublishedDiagnostics)> {
        let Some(instance) = self.lock().instance.clone() else { return Vec::new() };
        let observed = lock(&instance.conn.observed);
        observed.diagnostics.iter().map(|(uri, p)| (uri.clone(), p.clone())).collect()
    }

    /// The push diagnostics last published for `path` by the running server.
    pub fn diagnostics(&self, path: &Path) -> Option<PublishedDiagnostics> {
        let instance = self.lock().instance.clone()?;
        let observed = lock(&instance.conn.observed);
        observed.diagnostics.get(&file_uri(path)).cloned()
    }

    /// What the current instance has said about its work: progress announced or begun and
    /// not ended, the clock of its last report of work done, when it last sent anything, and
    /// why its connection closed if it did (`None`: no instance was ever started, or it was
    /// shut down).
    pub fn activity(&self) -> Option<Activity> {
        let instance = self.lock().instance.clone()?;
        Some(activity_of(&instance))
    }

    /// Where the server is (SPEC §25) and since when; `None` when it is not running nor
    /// being started.
    pub fn readiness_now(&self) -> Option<(Readiness, Instant)> {
        let inner = self.lock();
        match (&inner.instance, inner.starting) {
            (Some(instance), _) => {
                let instance = instance.clone();
                drop(inner);
                Some(self.readiness_of(&instance))
            }
            (None, Some(since)) => Some((Readiness::Starting, since)),
            (None, None) => None,
        }
    }

    fn readiness_of(&self, instance: &Instance) -> (Readiness, Instant) {
        stardust_core::codefiles::readiness(&activity_of(instance), Instant::now())
    }

    /// Note a use by a session: `idle_stop` counts from the last one.
    pub fn used(&self) {
        self.lock().last_used = Some(Instant::now());
    }

    /// Stops the running instance when no session has used it for `idle_stop` (SPEC §25);
    /// whether it did. Its documents are kept, so the next use starts it again with them.
    pub fn stop_if_idle(&self, now: Instant) -> bool {
        let idle = {
            let inner = self.lock();
            inner.instance.is_some()
                && inner
                    .last_used
                    .is_none_or(|t| now.saturating_duration_since(t) >= self.spec.idle_stop)
        };
        if !idle {
            return false;
        }
        let _starting = lock(&self.starting);
        let old = {
            let mut inner = self.lock();
            let still_idle = inner
                .last_used
                .is_none_or(|t| Instant::now().saturating_duration_since(t) >= self.spec.idle_stop);
            if !still_idle {
                return false;
            }
            inner.instance.take()
        };
        let Some(old) = old else { return false };
        tracing::info!(
            server = self.spec.name,
            "no session used it for {}s (idle_stop): stopping it",
            self.spec.idle_stop.as_secs()
        );
        self.stop_instance(&old);
        true
    }

    /// Notifications received from the running server (a flood is counted, never queued).
    pub fn notifications_seen(&self) -> u64 {
        self.lock()
            .instance
            .as_ref()
            .map_or(0, |i| i.conn.notifications.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The position encoding of the running server (`None`: none runs), without building a
    /// whole status: every request asks.
    pub fn encoding(&self) -> Option<PositionEncoding> {
        self.lock().instance.as_ref().filter(|i| i.alive()).map(|i| i.encoding)
    }

    /// The `capabilities` of the running server (`None`: none runs).
    pub fn capabilities(&self) -> Option<Value> {
        self.lock().instance.as_ref().filter(|i| i.alive()).map(|i| i.capabilities.clone())
    }

    /// The readiness of the running server (`Ready` when none runs).
    pub fn readiness(&self) -> Readiness {
        self.readiness_now().map_or(Readiness::Ready, |(r, _)| r)
    }

    /// Starts the server now if it is not running (the same start a first request makes).
    pub fn ensure_started(&self) -> Result<(), ServerError> {
        self.running().map(drop)
    }

    /// Where the server is, its pids, capabilities and restarts.
    pub fn status(&self) -> Status {
        let inner = self.lock();
        let now = Instant::now();
        let recent =
            inner.crashes.iter().filter(|t| now.duration_since(**t) <= RESTART_WINDOW).count()
                as u32;
        let live = inner.instance.as_ref().filter(|i| i.alive());
        let readiness = live.map(|i| self.readiness_of(i));
        let crashed_at = inner.crashed_at;
        let (state, since) = match (&live, inner.stopped, inner.gave_up) {
            (_, true, _) => (State::Stopped, None),
            (Some(_), ..) => match readiness {
                Some((Readiness::Indexing, since)) => (State::Indexing, Some(since)),
                Some((Readiness::Starting, since)) => (State::Starting, Some(since)),
                Some((Readiness::Crashed, since)) => (State::Crashed, Some(since)),
                Some((Readiness::Ready, since)) => (State::Ready, Some(since)),
                None => (State::Ready, None),
            },
            (None, ..) if inner.starting.is_some() => (State::Starting, inner.starting),
            (None, _, true) => (State::Unavailable, crashed_at),
            (None, ..)
                if inner.instance.is_some()
                    || !inner.crashes.is_empty()
                    || inner.last_error.is_some() =>
            {
                (State::Crashed, crashed_at)
            }
            (None, ..) => (State::Idle, None),
        };
        Status {
            name: self.spec.name.clone(),
            state,
            since,
            supervisor_pid: live.map(|i| i.process.supervisor_pid()),
            server_pid: live.and_then(|i| i.process.server_pid(Duration::ZERO)),
            recent_crashes: recent,
            restarts: inner.starts.saturating_sub(1),
            capabilities: live.map_or(Value::Null, |i| i.capabilities.clone()),
            position_encoding: live.map(|i| i.encoding),
            progress: live.and_then(|i| lock(&i.conn.observed).progress_note.clone()),
            last_error: inner.last_error.clone(),
        }
    }

    /// `server_restart`: stops the running instance (shutdown, then its tree), forgets the
    /// crash count, and starts a new one.
    pub fn restart(&self) -> Result<Status, ServerError> {
        let _starting = lock(&self.starting);
        let old = {
            let mut inner = self.lock();
            inner.stopped = false;
            inner.gave_up = false;
            inner.crashes.clear();
            inner.instance.take()
        };
        if let Some(old) = old {
            self.stop_instance(&old);
        }
        drop(_starting);
        self.running()?;
        Ok(self.status())
    }

    /// Stops the server for good: `shutdown` and `exit`, up to `timeouts.shutdown` for it to
    /// exit, then its whole tree ended. Later requests answer `server-unavailable`.
    pub fn shutdown(&self) {
        let _starting = lock(&self.starting);
        let old = {
            let mut inner = self.lock();
            inner.stopped = true;
            inner.instance.take()
        };
        if let Some(old) = old {
            self.stop_instance(&old);
        }
    }

    fn stop_instance(&self, instance: &Instance) {
        let grace = self.spec.timeouts.shutdown;
        let until = Instant::now() + grace;
        if instance.alive() {
            let (id, rx) = instance.conn.request("shutdown", Value::Null);
            if rx.recv_timeout(grace).is_err() {
                instance.conn.forget(id);
            }
            instance.conn.notify("exit", Value::Null);
            instance.conn.close_input();
            instance.process.wait_server_exit(until.saturating_duration_since(Instant::now()));
        }
        if !instance.process.stop(Duration::from_secs(5)) {
            tracing::warn!(
                server = self.spec.name,
                "the supervisor did not exit within 5s of SIGTERM"
            );
        }
    }
}

impl Drop for LanguageServer {
    /// Without a `shutdown`, the tree is ended at once (no LSP goodbye), and waited for
    /// briefly.
    fn drop(&mut self) {
        let instance =
            self.inner.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).instance.take();
        if let Some(instance) = instance {
            instance.process.stop(Duration::from_secs(2));
        }
    }
}

/// What `instance` has said about its work (see `LanguageServer::activity`).
fn activity_of(instance: &Instance) -> Activity {
    let stopped = match instance.conn.closed() {
        Some(reason) => Some(reason),
        None if instance.process.server_exited() => Some("the server exited".to_owned()),
        None => None,
    };
    let observed = lock(&instance.conn.observed);
    let stopped_at =
        stopped.as_ref().map(|_| observed.closed.as_ref().map_or_else(Instant::now, |c| c.1));
    let activity = Activity {
        busy: !observed.progress.is_empty() || !observed.announced.is_empty(),
        reports: observed.reports,
        done_at: observed.done_at,
        last_heard: observed.last_heard,
        stopped,
        initialized: Some(instance.initialized),
        first_published: observed.first_published,
        work_changed: observed.work_changed,
        stopped_at,
        probes: true,
        probe_sent: observed.probe.map(|p| p.1),
        probe_answered: observed.probe.and_then(|p| p.2),
        answered: observed.answered,
    };
    drop(observed);
    // Whoever reads a silent server's readiness probes it: every wait for readiness polls.
    if stardust_core::codefiles::wants_probe(&activity, Instant::now()) {
        instance.conn.probe();
    }
    activity
}

/// The methods whose progress a `workDoneToken` of ours names: the requests about files and
/// the workspace. Their progress is then the request's (see `client::REQUEST_TOKEN`), never
/// taken for the server's own work.
fn with_request_token(method: &str, mut params: Value) -> Value {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let takes_token = method.starts_with("textDocument/")
        || method.starts_with("callHierarchy/")
        || method.starts_with("typeHierarchy/")
        || method == "workspace/symbol";
    if let Some(map) = params.as_object_mut().filter(|_| takes_token)
        && !map.contains_key("workDoneToken")
    {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        map.insert("workDoneToken".into(), json!(format!("{REQUEST_TOKEN}{n}")));
    }
    params
}

/// `textDocumentSync` as a kind: 0 none, 1 full, 2 incremental (full when unspecified).
fn sync_kind(capabilities: &Value) -> i64 {
    match capabilities.get("textDocumentSync") {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(1),
        Some(options) => options.get("change").and_then(Value::as_i64).unwrap_or(0),
        None => 0,
    }
}

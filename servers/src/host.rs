//! The core's [`CodeHost`]: one [`LanguageServer`] per server name, created on first use
//! from the core's launch spec and shared by every session of the core; what the servers
//! publish fanned out to the editors' connections that subscribed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use stardust_core::codefiles::{
    Activity, CodeAnswer, CodeError, CodeEvent, CodeHost, LaunchSpec, Publication, Readiness,
};
use stardust_core::sync::lock;
use stardust_core::text::Encoding;

use crate::error::ServerError;
use crate::server::{LanguageServer, PositionEncoding, Status};
use crate::spec::{ServerSpec, SupervisorProgram};

/// Events queued for one subscriber before it misses some (it stopped reading).
const SUBSCRIBER_QUEUE: usize = 4096;

/// How often the servers are looked at for `idle_stop` (a look is a lock and a clock read per
/// server).
const IDLE_LOOK: Duration = Duration::from_secs(1);

type Subscribers = Arc<Mutex<Vec<SyncSender<CodeEvent>>>>;

type Servers = Arc<Mutex<BTreeMap<String, Arc<LanguageServer>>>>;

/// The language servers of one core.
pub struct Host {
    program: SupervisorProgram,
    servers: Servers,
    subscribers: Subscribers,
    /// The thread that stops servers no session used for their `idle_stop`, started with the
    /// first server; it ends when the host is dropped.
    idle: OnceLock<()>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

impl Host {
    /// A host whose servers are supervised by `program` (`SupervisorProgram::stardust()` in
    /// the `stardust` binary).
    pub fn new(program: SupervisorProgram) -> Host {
        Host {
            program,
            servers: Arc::default(),
            subscribers: Arc::default(),
            idle: OnceLock::new(),
        }
    }

    /// Start the thread that stops idle servers (SPEC §25 `idle_stop`), once.
    fn watch_idle(&self) {
        self.idle.get_or_init(|| {
            let servers: Weak<Mutex<BTreeMap<String, Arc<LanguageServer>>>> =
                Arc::downgrade(&self.servers);
            let started = std::thread::Builder::new().name("lsp-idle".into()).spawn(move || {
                loop {
                    std::thread::sleep(IDLE_LOOK);
                    let Some(servers) = servers.upgrade() else { return };
                    let now = Instant::now();
                    let all: Vec<Arc<LanguageServer>> = lock(&servers).values().cloned().collect();
                    drop(servers);
                    for server in all {
                        server.stop_if_idle(now);
                    }
                }
            });
            if let Err(err) = started {
                tracing::warn!("idle servers will not be stopped: cannot start a thread: {err}");
            }
        });
    }

    /// The server for `launch`, created when there is none or the configuration changed
    /// (then the old one is stopped first). The workspace root is the first file's: a later
    /// file under another root is served by the same process (one per server and store).
    fn server(&self, launch: &LaunchSpec) -> Arc<LanguageServer> {
        self.watch_idle();
        let replaced = {
            let mut servers = lock(&self.servers);
            match servers.get(&launch.name) {
                // Every request asks: the running server is compared in place, not copied.
                Some(server) if same_config(server.spec(), launch) => return server.clone(),
                _ => {
                    let server = Arc::new(
                        LanguageServer::new(ServerSpec::from(launch), self.program.clone())
                            .with_events(self.sink(&launch.name)),
                    );
                    servers.insert(launch.name.clone(), server)
                }
            }
        };
        if let Some(old) = replaced {
            tracing::info!(server = launch.name, "its configuration changed: restarting it");
            old.shutdown();
        }
        lock(&self.servers)[&launch.name].clone()
    }

    fn running(&self, name: &str) -> Option<Arc<LanguageServer>> {
        lock(&self.servers).get(name).cloned()
    }

    /// What server `name` publishes, passed to every subscriber that keeps up.
    fn sink(&self, name: &str) -> crate::client::EventSink {
        let subscribers = self.subscribers.clone();
        let server = name.to_owned();
        Arc::new(move |method: &str, params: &Value| {
            let mut subscribers = lock(&subscribers);
            if subscribers.is_empty() {
                return;
            }
            let event = CodeEvent {
                server: server.clone(),
                method: method.to_owned(),
                params: params.clone(),
            };
            subscribers.retain(|tx| match tx.try_send(event.clone()) {
                Ok(()) | Err(TrySendError::Full(_)) => true,
                Err(TrySendError::Disconnected(_)) => false,
            });
        })
    }
}

/// Whether `a` runs the program of `b` the same way (the root aside: see `Host::server`), as
/// `ServerSpec::from(b)` would.
fn same_config(a: &ServerSpec, b: &LaunchSpec) -> bool {
    a.command == b.command
        && a.args == b.args
        && a.languages == b.languages
        && a.initialization_options == *b.initialization_options.as_ref().unwrap_or(&Value::Null)
        && a.settings == b.settings
        && a.timeouts == b.timeouts
        && a.max_restarts == b.max_restarts
        && a.idle_stop == b.idle_stop
}

fn code_error(err: ServerError) -> CodeError {
    CodeError { code: err.code(), server: err.server().to_owned(), message: err.to_string() }
}

fn encoding(e: PositionEncoding) -> Encoding {
    match e {
        PositionEncoding::Utf8 => Encoding::Utf8,
        PositionEncoding::Utf16 => Encoding::Utf16,
        PositionEncoding::Utf32 => Encoding::Utf32,
    }
}

/// A moment of this process as the time of day, for people.
fn wall_time(at: Instant) -> String {
    let ago = Instant::now().saturating_duration_since(at);
    stardust_core::store::rfc3339(SystemTime::now() - ago)
}

/// A status as `server_status` shows it.
pub fn status_json(status: &Status) -> Value {
    json!({
        "name": status.name,
        "state": status.state.as_str(),
        "since": status.since.map(wall_time),
        "gaveUp": status.state == crate::server::State::Unavailable,
        "pid": status.server_pid,
        "supervisorPid": status.supervisor_pid,
        "restarts": status.restarts,
        "recentCrashes": status.recent_crashes,
        "positionEncoding": status.position_encoding.map(PositionEncoding::as_str),
        "capabilities": status.capabilities,
        "progress": status.progress,
        "lastError": status.last_error,
    })
}

impl CodeHost for Host {
    fn request(
        &self,
        spec: &LaunchSpec,
        method: &str,
        params: Value,
    ) -> Result<CodeAnswer, CodeError> {
        let answer = self.server(spec).request(method, params, None).map_err(code_error)?;
        Ok(CodeAnswer { result: answer.result, indexing: answer.readiness != Readiness::Ready })
    }

    fn sync(
        &self,
        spec: &LaunchSpec,
        path: &Path,
        language_id: &str,
        text: &str,
    ) -> Result<(), CodeError> {
        self.server(spec).sync(path, language_id, text).map_err(code_error)
    }

    fn close(&self, server: &str, path: &Path) {
        if let Some(server) = self.running(server) {
            server.close(path);
        }
    }

    fn encoding(&self, server: &str) -> Option<Encoding> {
        self.running(server)?.encoding().map(encoding)
    }

    fn capabilities(&self, server: &str) -> Option<Value> {
        self.running(server)?.capabilities().filter(|c| !c.is_null())
    }

    fn published(&self, server: &str, path: &Path) -> Option<(Option<i64>, Vec<Value>)> {
        let published = self.running(server)?.diagnostics(path)?;
        Some((published.version, published.diagnostics))
    }

    fn publication(&self, server: &str, path: &Path) -> Option<Publication> {
        let published = self.running(server)?.diagnostics(path)?;
        Some(Publication {
            version: published.version,
            diagnostics: published.diagnostics,
            at: published.at,
        })
    }

    fn activity(&self, server: &str) -> Option<Activity> {
        self.running(server)?.activity()
    }

    fn readiness(&self, server: &str) -> Option<(Readiness, Instant)> {
        self.running(server)?.readiness_now()
    }

    fn used(&self, server: &str) {
        if let Some(server) = self.running(server) {
            server.used();
        }
    }

    fn publications(&self, server: &str) -> Vec<(PathBuf, Publication)> {
        let Some(server) = self.running(server) else { return Vec::new() };
        server
            .publications()
            .into_iter()
            .filter_map(|(uri, p)| {
                let path = stardust_core::ide::uri_path(&uri).ok()?;
                let publication =
                    Publication { version: p.version, diagnostics: p.diagnostics, at: p.at };
                Some((path, publication))
            })
            .collect()
    }

    fn version(&self, server: &str, path: &Path) -> Option<i64> {
        self.running(server)?.document_version(path)
    }

    fn status(&self) -> Vec<Value> {
        let servers: Vec<Arc<LanguageServer>> = lock(&self.servers).values().cloned().collect();
        servers.iter().map(|s| status_json(&s.status())).collect()
    }

    fn restart(&self, spec: &LaunchSpec) -> Result<Value, CodeError> {
        let status = self.server(spec).restart().map_err(code_error)?;
        Ok(status_json(&status))
    }

    fn subscribe(&self) -> Receiver<CodeEvent> {
        let (tx, rx) = sync_channel(SUBSCRIBER_QUEUE);
        lock(&self.subscribers).push(tx);
        rx
    }

    fn shutdown(&self) {
        let servers: Vec<Arc<LanguageServer>> =
            std::mem::take(&mut *lock(&self.servers)).into_values().collect();
        // Stopped side by side: each has its own grace period.
        std::thread::scope(|scope| {
            for server in &servers {
                scope.spawn(|| server.shutdown());
            }
        });
    }
}

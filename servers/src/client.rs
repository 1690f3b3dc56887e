//! The LSP client side of one server connection: requests with ids, the reader that routes
//! answers to their callers, answers to the server's own requests, and what its notifications
//! tell (work-done progress, push diagnostics).
//!
//! Neither a caller nor the reader ever blocks on a full pipe to a server that stopped reading
//! (the classic both-sides-writing deadlock): the server's stdin is non-blocking, a caller's
//! message is written in place only when nothing is queued, no frame is being written and it
//! fits one atomic pipe write (`PIPE_BUF`: all of it or nothing), and everything else (the
//! reader's answers, large messages, a full pipe) goes through one writer thread, in order.
//! A request's common path so has no thread hand-over before it reaches the server.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use serde_json::{Value, json};

use crate::frame::{ReadError, frame, read_frame};
use stardust_core::sync::lock;

/// Where a server is (SPEC §25): the core's rule over what it said.
pub use stardust_core::codefiles::Readiness;

/// What became of one request.
#[derive(Debug)]
pub(crate) enum Reply {
    Result(Value),
    Error {
        code: i64,
        message: String,
    },
    /// The connection closed before an answer came.
    Gone(String),
}

/// The push diagnostics of one file, as last published.
#[derive(Clone, Debug, PartialEq)]
pub struct PublishedDiagnostics {
    pub version: Option<i64>,
    /// The LSP `Diagnostic` objects, as the server sent them (its position encoding).
    pub diagnostics: Vec<Value>,
    /// Where on the connection's clock ([`Observed::clock`]) they arrived.
    pub at: u64,
}

/// What the reader keeps about the server, read by the server handle.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    /// Progress tokens begun and not yet ended.
    pub progress: HashSet<String>,
    /// Progress tokens announced (`window/workDoneProgress/create`) and not yet begun or
    /// ended: work the server has started and not yet reported (pyright announces its
    /// checker's work in the same turn as the publications that precede it, and begins it
    /// only later). Not readiness (`indexing` is begun work), but a speculative check waits.
    pub announced: HashSet<String>,
    /// Whether the server has announced or begun work-done progress on this connection.
    pub reports: bool,
    /// The count of what the server sent that is observed here (notifications, progress
    /// announcements): the order of publications and reports of work done.
    pub clock: u64,
    /// The clock when work-done progress last ended (0: never).
    pub done_at: u64,
    /// When the server last sent a notification or a request.
    pub last_heard: Option<Instant>,
    /// When it first published diagnostics (its first analysis of a file done).
    pub first_published: Option<Instant>,
    /// When its work (progress announced or begun) last began or ended.
    pub work_changed: Option<Instant>,
    /// The latest `$/progress` title or message, for status.
    pub progress_note: Option<String>,
    /// Push diagnostics by document URI.
    pub diagnostics: BTreeMap<String, PublishedDiagnostics>,
    /// `client/registerCapability` registrations by id (method and options).
    pub registrations: BTreeMap<String, Value>,
    /// Why and when the connection closed.
    pub closed: Option<(String, Instant)>,
    /// The last liveness probe ([`Connection::probe`]): its id, when it was sent, and when
    /// its answer came.
    pub probe: Option<(i64, Instant, Option<Instant>)>,
    /// When the server last answered a request (a result or an error).
    pub answered: Option<Instant>,
}

/// The largest write a pipe takes whole or not at all (POSIX `PIPE_BUF`, 4096 on Linux).
const ATOMIC_WRITE: usize = 4096;

/// The way to the server's stdin: the writer thread's queue, and the stdin itself for writes
/// in place.
#[derive(Clone)]
struct Wire {
    queue: Sender<Vec<u8>>,
    pipe: Arc<Pipe>,
}

/// What the callers and the writer thread share (the thread holds no sender: the queue ends
/// when the connection's and the reader's copies of the wire have gone).
struct Pipe {
    /// Frames queued and not yet written whole: while any is, a caller queues too (so its
    /// messages keep their order).
    queued: AtomicUsize,
    stdin: File,
    /// Held while a frame is being written (by the writer thread, or a caller in place), so
    /// frames never interleave. A caller only tries it: it never waits on a full pipe.
    writing: Mutex<()>,
}

impl Wire {
    /// Queue `frame` for the writer thread; `false` once it has stopped.
    fn enqueue(&self, frame: Vec<u8>) -> bool {
        self.pipe.queued.fetch_add(1, Ordering::SeqCst);
        if self.queue.send(frame).is_ok() {
            return true;
        }
        self.pipe.queued.fetch_sub(1, Ordering::SeqCst);
        false
    }

    /// Write `frame` in place if that cannot block, else queue it. Callers hold the outbox's
    /// lock, so what one caller sends stays in order.
    fn send(&self, frame: Vec<u8>) -> bool {
        if frame.len() > ATOMIC_WRITE || self.pipe.queued.load(Ordering::SeqCst) != 0 {
            return self.enqueue(frame);
        }
        let Ok(_writing) = self.pipe.writing.try_lock() else { return self.enqueue(frame) };
        match (&self.pipe.stdin).write(&frame) {
            Ok(n) if n == frame.len() => true,
            // Not on a pipe (a write of at most PIPE_BUF is whole), but never lose the rest.
            Ok(n) => self.enqueue(frame[n..].to_vec()),
            // A full pipe (or an error the writer thread meets too, and stops on).
            Err(_) => self.enqueue(frame),
        }
    }
}

/// One open connection.
pub(crate) struct Connection {
    outbox: Mutex<Option<Wire>>,
    pending: Arc<Mutex<HashMap<i64, SyncSender<Reply>>>>,
    next_id: AtomicI64,
    pub observed: Arc<Mutex<Observed>>,
    /// Notifications seen (a flood is still counted, never queued).
    pub notifications: Arc<AtomicU64>,
}

/// Where the notifications an editor relays go (method, params), called on the reader thread:
/// it must not block.
pub type EventSink = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// The notifications passed to an [`EventSink`]: what an editor shows (SPEC §17 "LSP").
const RELAYED: [&str; 4] =
    ["textDocument/publishDiagnostics", "$/progress", "window/showMessage", "window/logMessage"];

/// What the reader needs to answer the server's requests, and where it relays notifications.
pub(crate) struct Answering {
    pub settings: Value,
    pub root_uri: String,
    pub root_name: String,
    pub events: Option<EventSink>,
}

impl Connection {
    /// Starts the reader and writer threads over the server's stdio. `on_close` runs once,
    /// on the reader thread, when the server's output ends or turns to garbage.
    pub(crate) fn start(
        name: &str,
        stdin: ChildStdin,
        stdout: ChildStdout,
        answering: Answering,
        on_close: Box<dyn FnOnce(&str) + Send>,
    ) -> std::io::Result<Connection> {
        let stdin = File::from(OwnedFd::from(stdin));
        let flags = OFlag::from_bits_truncate(fcntl(&stdin, FcntlArg::F_GETFL)?);
        // Ours alone: the server holds the other end of the pipe.
        fcntl(&stdin, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let pipe = Arc::new(Pipe { queued: AtomicUsize::new(0), stdin, writing: Mutex::new(()) });
        let wire = Wire { queue: tx, pipe: pipe.clone() };
        let pending: Arc<Mutex<HashMap<i64, SyncSender<Reply>>>> = Arc::default();
        let observed: Arc<Mutex<Observed>> = Arc::default();
        let notifications = Arc::new(AtomicU64::new(0));
        std::thread::Builder::new()
            .name(format!("lsp-{name}-write"))
            .spawn(move || write_loop(&pipe, rx))?;
        let reader = Reader {
            name: name.to_owned(),
            pending: pending.clone(),
            observed: observed.clone(),
            notifications: notifications.clone(),
            outbox: wire.clone(),
            answering,
        };
        std::thread::Builder::new()
            .name(format!("lsp-{name}-read"))
            .spawn(move || reader.run(stdout, on_close))?;
        Ok(Connection {
            outbox: Mutex::new(Some(wire)),
            pending,
            next_id: AtomicI64::new(1),
            observed,
            notifications,
        })
    }

    fn send(&self, message: Value) -> bool {
        let Ok(frame) = frame(&message) else { return false };
        match &*lock(&self.outbox) {
            Some(wire) => wire.send(frame),
            None => false,
        }
    }

    /// Sends a request; the answer arrives on the returned receiver.
    pub(crate) fn request(&self, method: &str, params: Value) -> (i64, Receiver<Reply>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        if let Some(reason) = self.closed() {
            let _ = tx.send(Reply::Gone(reason));
            return (id, rx);
        }
        lock(&self.pending).insert(id, tx);
        if !self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            && let Some(tx) = self.forget(id)
        {
            let _ = tx.send(Reply::Gone("the connection is closed".into()));
        }
        (id, rx)
    }

    /// Sends a liveness probe: a request of a method no server knows, which an idle server
    /// answers at once (with an error); when the answer comes is kept in [`Observed::probe`]
    /// (see `stardust_core::codefiles::wants_probe`).
    pub(crate) fn probe(&self) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.observed).probe = Some((id, Instant::now(), None));
        let (tx, _rx) = mpsc::sync_channel(1);
        lock(&self.pending).insert(id, tx);
        let message =
            json!({"jsonrpc": "2.0", "id": id, "method": "stardust/probe", "params": null});
        if !self.send(message) {
            self.forget(id);
        }
    }

    /// Gives up on request `id` (after a timeout): its answer, if it comes, is dropped.
    pub(crate) fn forget(&self, id: i64) -> Option<SyncSender<Reply>> {
        lock(&self.pending).remove(&id)
    }

    pub(crate) fn notify(&self, method: &str, params: Value) -> bool {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Why the connection closed, if it did.
    pub(crate) fn closed(&self) -> Option<String> {
        lock(&self.observed).closed.as_ref().map(|(r, _)| r.clone())
    }

    /// Stops writing: the writer thread drains what is queued, then closes the server's stdin.
    pub(crate) fn close_input(&self) {
        lock(&self.outbox).take();
    }
}

/// The writer thread: each queued frame written whole, in order, waiting for the pipe to
/// take it. Ends when every sender has gone (the queue drained) or the server stops reading
/// (the reader then sees the end of its output); the last copy of the stdin closes it.
fn write_loop(pipe: &Pipe, rx: Receiver<Vec<u8>>) {
    for frame in rx {
        let written = {
            let _writing = lock(&pipe.writing);
            write_all(&pipe.stdin, &frame)
        };
        pipe.queued.fetch_sub(1, Ordering::SeqCst);
        if written.is_err() {
            return;
        }
    }
}

/// All of `bytes` to the non-blocking `out`, waiting while the pipe is full.
fn write_all(out: &File, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match (&*out).write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut fds = [PollFd::new(out.as_fd(), PollFlags::POLLOUT)];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

struct Reader {
    name: String,
    pending: Arc<Mutex<HashMap<i64, SyncSender<Reply>>>>,
    observed: Arc<Mutex<Observed>>,
    notifications: Arc<AtomicU64>,
    outbox: Wire,
    answering: Answering,
}

impl Reader {
    fn run(self, stdout: ChildStdout, on_close: Box<dyn FnOnce(&str) + Send>) {
        let mut input = BufReader::with_capacity(64 * 1024, stdout);
        let reason = loop {
            match read_frame(&mut input) {
                Ok(Ok(message)) => self.dispatch(message),
                Ok(Err(e)) => {
                    tracing::warn!(server = self.name, "dropped a message that is not JSON: {e}")
                }
                Err(ReadError::Eof) => break "the server closed its output".to_owned(),
                Err(ReadError::Garbage(m)) => break format!("the server wrote garbage ({m})"),
                Err(ReadError::Io(e)) => break format!("reading the server failed: {e}"),
            }
        };
        tracing::info!(server = self.name, "connection closed: {reason}");
        lock(&self.observed).closed = Some((reason.clone(), Instant::now()));
        let waiting: Vec<SyncSender<Reply>> =
            lock(&self.pending).drain().map(|(_, tx)| tx).collect();
        for tx in waiting {
            let _ = tx.send(Reply::Gone(reason.clone()));
        }
        on_close(&reason);
    }

    fn dispatch(&self, message: Value) {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null());
        match (method, id) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { return };
                {
                    let mut observed = lock(&self.observed);
                    let now = Instant::now();
                    observed.answered = Some(now);
                    if let Some((probe, _, answered)) = observed.probe.as_mut()
                        && *probe == id
                    {
                        *answered = Some(now);
                    }
                }
                let Some(tx) = lock(&self.pending).remove(&id) else {
                    return;
                };
                let reply = match message.get("error") {
                    Some(error) => Reply::Error {
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    },
                    None => Reply::Result(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tx.send(reply);
            }
            (Some(method), Some(id)) => {
                lock(&self.observed).last_heard = Some(Instant::now());
                let params = message.get("params").unwrap_or(&Value::Null);
                let answer = match self.answer(method, params) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err((code, text)) => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}})
                    }
                };
                // Always queued: the reader must never wait on the server's stdin.
                if let Ok(frame) = frame(&answer) {
                    let _ = self.outbox.enqueue(frame);
                }
            }
            (Some(method), None) => {
                self.notifications.fetch_add(1, Ordering::Relaxed);
                self.notification(method, message.get("params").unwrap_or(&Value::Null));
            }
            (None, None) => {
                tracing::debug!(server = self.name, "dropped a message with neither id nor method")
            }
        }
    }

    /// The answer to a request from the server. `workspace/applyEdit` is never honoured:
    /// edits reach the store only through a preview (SPEC §12, §18).
    fn answer(&self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            "workspace/configuration" => {
                let items =
                    params.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
                Ok(Value::Array(
                    items
                        .iter()
                        .map(|item| {
                            section(
                                &self.answering.settings,
                                item.get("section").and_then(Value::as_str),
                            )
                        })
                        .collect(),
                ))
            }
            "window/workDoneProgress/create" => {
                if let Some(token) = params.get("token").filter(|t| !is_request_token(t)) {
                    let mut observed = lock(&self.observed);
                    observed.clock += 1;
                    observed.reports = true;
                    if observed.progress.is_empty() && observed.announced.is_empty() {
                        observed.work_changed = Some(Instant::now());
                    }
                    observed.announced.insert(token.to_string());
                }
                Ok(Value::Null)
            }
            "client/registerCapability" => {
                let mut observed = lock(&self.observed);
                for r in params.get("registrations").and_then(Value::as_array).into_iter().flatten()
                {
                    if let Some(id) = r.get("id").and_then(Value::as_str) {
                        observed.registrations.insert(id.to_owned(), r.clone());
                    }
                }
                Ok(Value::Null)
            }
            "client/unregisterCapability" => {
                let mut observed = lock(&self.observed);
                // The protocol's own misspelling.
                for r in
                    params.get("unregisterations").and_then(Value::as_array).into_iter().flatten()
                {
                    if let Some(id) = r.get("id").and_then(Value::as_str) {
                        observed.registrations.remove(id);
                    }
                }
                Ok(Value::Null)
            }
            "workspace/applyEdit" => Ok(json!({
                "applied": false,
                "failureReason": "stardust applies edits only through a preview the user confirms"
            })),
            "workspace/workspaceFolders" => {
                Ok(json!([{"uri": self.answering.root_uri, "name": self.answering.root_name}]))
            }
            "window/showMessageRequest" => Ok(Value::Null),
            "window/showDocument" => Ok(json!({"success": false})),
            m if m.starts_with("workspace/") && m.ends_with("/refresh") => Ok(Value::Null),
            _ => Err((
                crate::error::METHOD_NOT_FOUND,
                format!("stardust does not implement {method}"),
            )),
        }
    }

    fn notification(&self, method: &str, params: &Value) {
        self.observe(method, params);
        if let Some(events) = &self.answering.events
            && RELAYED.contains(&method)
        {
            events(method, params);
        }
    }

    fn observe(&self, method: &str, params: &Value) {
        {
            let mut observed = lock(&self.observed);
            observed.clock += 1;
            observed.last_heard = Some(Instant::now());
        }
        match method {
            "$/progress" => {
                // The progress of a request we sent (its `workDoneToken`) is that request's,
                // not work of the server's own.
                let Some(token) = params.get("token").filter(|t| !is_request_token(t)) else {
                    return;
                };
                let token = token.to_string();
                let value = params.get("value").unwrap_or(&Value::Null);
                tracing::debug!(
                    server = self.name,
                    token,
                    kind = value["kind"].as_str().unwrap_or_default(),
                    "progress"
                );
                let mut observed = lock(&self.observed);
                let was_busy = !observed.progress.is_empty() || !observed.announced.is_empty();
                match value.get("kind").and_then(Value::as_str) {
                    Some("begin") => {
                        observed.reports = true;
                        if !was_busy {
                            observed.work_changed = Some(Instant::now());
                        }
                        observed.announced.remove(&token);
                        observed.progress.insert(token);
                        observed.progress_note =
                            value.get("title").and_then(Value::as_str).map(str::to_owned);
                    }
                    Some("report") => {
                        if let Some(m) = value.get("message").and_then(Value::as_str) {
                            observed.progress_note = Some(m.to_owned());
                        }
                    }
                    Some("end") => {
                        observed.done_at = observed.clock;
                        observed.announced.remove(&token);
                        observed.progress.remove(&token);
                        if observed.progress.is_empty() {
                            observed.progress_note = None;
                        }
                        if was_busy && observed.progress.is_empty() && observed.announced.is_empty()
                        {
                            observed.work_changed = Some(Instant::now());
                        }
                    }
                    _ => {}
                }
            }
            "textDocument/publishDiagnostics" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else { return };
                let version = params.get("version").and_then(Value::as_i64);
                let diagnostics = params
                    .get("diagnostics")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                tracing::debug!(
                    server = self.name,
                    uri,
                    version,
                    count = diagnostics.len(),
                    "published diagnostics"
                );
                let mut observed = lock(&self.observed);
                let at = observed.clock;
                observed.first_published.get_or_insert_with(Instant::now);
                observed
                    .diagnostics
                    .insert(uri.to_owned(), PublishedDiagnostics { version, diagnostics, at });
            }
            "window/logMessage" | "window/showMessage" => {
                let text = params.get("message").and_then(Value::as_str).unwrap_or("");
                tracing::debug!(
                    server = self.name,
                    "{method}: {}",
                    text.chars().take(1024).collect::<String>()
                );
            }
            _ => {}
        }
    }
}

/// The prefix of the `workDoneToken`s the client puts in its own requests: progress under
/// them is a request's, and says nothing of the server's readiness.
pub(crate) const REQUEST_TOKEN: &str = "stardust-request-";

fn is_request_token(token: &Value) -> bool {
    token.as_str().is_some_and(|t| t.starts_with(REQUEST_TOKEN))
}

/// The value of a `workspace/configuration` section: `a.b` is `settings["a"]["b"]`, no section
/// is the whole settings, a missing one is `null`.
pub(crate) fn section(settings: &Value, section: Option<&str>) -> Value {
    let Some(section) = section.filter(|s| !s.is_empty()) else { return settings.clone() };
    let mut at = settings;
    for key in section.split('.') {
        match at.get(key) {
            Some(next) => at = next,
            None => return Value::Null,
        }
    }
    at.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_sections() {
        let settings = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}});
        assert_eq!(section(&settings, None), settings);
        assert_eq!(
            section(&settings, Some("python.analysis")),
            json!({"typeCheckingMode": "strict"})
        );
        assert_eq!(section(&settings, Some("python.nope")), Value::Null);
    }
}

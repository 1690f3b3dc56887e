//! What the core asks of the language servers that serve code files (SPEC §17): the
//! [`CodeHost`] interface. The `stardust-servers` crate implements it (processes, the LSP
//! client side); the binary installs one host per core with `Service::with_code_host`, so
//! the core starts no process and speaks no transport, and every front reaches a language
//! server only through the core.
//!
//! Requests and answers are LSP JSON in the server's own position encoding: converting to a
//! client's positions (MCP's 1-based characters, an editor's encoding) is the core's
//! (`service::code`), from the file texts it holds.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::LaunchSpec;
use crate::error::Code;
use crate::text::Encoding;

/// One answer of a server, with whether it reported work in progress when it answered.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeAnswer {
    pub result: Value,
    pub indexing: bool,
}

/// Why a language server could not answer: a code of SPEC §16 (`server-unavailable`, `busy`,
/// `unsupported`, `cancelled`, `internal`), a message that names the server and says what to
/// do, and the server's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CodeError {
    pub code: Code,
    pub message: String,
    pub server: String,
}

/// What a running server told that an editor relays (SPEC §17 "LSP"): push diagnostics,
/// work-done progress, `window/*` messages. URIs and positions are the server's.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeEvent {
    pub server: String,
    pub method: String,
    pub params: Value,
}

/// The push diagnostics a server last published for one file, with their place on its clock
/// (see [`Activity`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Publication {
    /// The document version they were for, if the server said.
    pub version: Option<i64>,
    /// The LSP `Diagnostic` objects, as the server sent them.
    pub diagnostics: Vec<Value>,
    /// Where on the server's clock they arrived (0: the host keeps no clock).
    pub at: u64,
}

/// What a running server has said about its work, for a caller waiting for it to finish
/// checking the texts it was given (the speculative delta of a code edit, SPEC §18). The
/// clock counts what the server sent on its current connection (its notifications and its
/// `window/workDoneProgress/create` requests), so that a report of work done can be placed
/// after (or before) a publication.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// Work-done progress announced (`window/workDoneProgress/create`) or begun, and not
    /// ended: the server is at work.
    pub busy: bool,
    /// Whether the server has reported work-done progress on this connection at all: one
    /// that does is taken to announce the work it does in stages.
    pub reports: bool,
    /// Where on the clock it last ended work (`$/progress` end); 0: never.
    pub done_at: u64,
    /// When it last sent anything (`None`: nothing yet).
    pub last_heard: Option<Instant>,
    /// Why its connection closed, when it did (it crashed or was stopped).
    pub stopped: Option<String>,
    /// When the server answered `initialize` on this connection (`None`: the host keeps no
    /// clock, and the server's readiness is not known).
    pub initialized: Option<Instant>,
    /// When it first published diagnostics on this connection: it has analysed a file, so
    /// its initial loading of the workspace is over (pyright publishes only once it has
    /// found the workspace's files).
    pub first_published: Option<Instant>,
    /// When its work last began (while `busy`) or last ended.
    pub work_changed: Option<Instant>,
    /// When its connection closed.
    pub stopped_at: Option<Instant>,
    /// Whether the host probes a silent server ([`wants_probe`]): then a quiet period counts
    /// only once a probe sent after it was answered promptly.
    pub probes: bool,
    /// When the last probe was sent, and when its answer came (`None`: not yet).
    pub probe_sent: Option<Instant>,
    pub probe_answered: Option<Instant>,
    /// When the server last answered a request of ours (`None`: not yet, or the host keeps no
    /// clock). An answer comes in a later turn of the server than the end of work before it,
    /// so work announced in that turn has been seen by then: it ends [`READY_SETTLE`].
    pub answered: Option<Instant>,
}

/// Where a language server is (SPEC §25), as `server_status` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Started, and not yet through `initialize`.
    Starting,
    /// Running, and its initial analysis of the workspace not over, or at work on a change.
    Indexing,
    /// Its initial analysis is over and it is not at work: its answers are complete.
    Ready,
    /// Its process ended without being asked to.
    Crashed,
}

impl Readiness {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Starting => "starting",
            Readiness::Indexing => "indexing",
            Readiness::Ready => "ready",
            Readiness::Crashed => "crashed",
        }
    }
}

/// How long a server that has neither published diagnostics nor reported work must have
/// said nothing at all before its initial analysis counts as over: the quiet of a server
/// that reports nothing. Long enough for the silent stretches of the servers that do report
/// (pyright finds a workspace's files before it publishes, typescript-language-server loads
/// its project before it reports the loading), which measure under a second on 500 files.
pub const READY_QUIET: Duration = Duration::from_secs(2);

/// The bound on that wait for a server that keeps talking (log messages, say) without ever
/// publishing or reporting work: past it, its initial analysis counts as over all the same.
pub const READY_BOUND: Duration = Duration::from_secs(20);

/// How soon a probe of a silent server must be answered to show that the server is idle
/// rather than busy in a stretch of work it reports nothing about (pyright runs the Python
/// interpreter to find its search paths before it looks for files, and under load that took
/// 4.6 s of silence; an idle server answers in milliseconds). A slower answer counts as the
/// server's having spoken then: the quiet period starts again from it.
pub const PROBE_PROMPT: Duration = Duration::from_millis(500);

/// How long a server must stay out of work after its analysis or its work ended before it
/// counts as ready: the time a server takes to announce the work that follows (under a
/// millisecond for pyright), with a margin for a loaded machine.
pub const READY_SETTLE: Duration = Duration::from_millis(100);

/// The readiness of a server from what it said ([`Activity`]) as of `now`, and since when.
///
/// - its connection closed: `crashed`;
/// - at work (work-done progress begun or announced and not ended): `indexing`;
/// - its initial analysis is over once it reported work and that work ended, or it
///   published diagnostics (its own signal that a file was analysed), or it said nothing
///   for [`READY_QUIET`], or [`READY_BOUND`] passed since `initialize`: then `ready`, else
///   `indexing`.
///
/// A host that keeps no clock (`initialized` unknown) is taken as `ready` since `now`.
pub fn readiness(a: &Activity, now: Instant) -> (Readiness, Instant) {
    readiness_with(a, now, READY_SETTLE)
}

/// The readiness a server answered in, read when its answer arrived: [`readiness`] without
/// [`READY_SETTLE`]. The settle is for a caller deciding whether to ask, who cannot tell
/// whether work is about to be announced; an answer comes after everything the server sent
/// before it on the same connection, so work announced in the same turn as the end of the
/// last (pyright's checker after a publication) has been seen by then, and the answer is not
/// marked as given at work because work ended just before it (measured: pyright ends its check
/// of the file a `references` opened in the same turn as it answers, and the answer was asked
/// again 100 ms later, docs/DECISIONS.md).
pub fn answer_readiness(a: &Activity, now: Instant) -> Readiness {
    readiness_with(a, now, Duration::ZERO).0
}

fn readiness_with(a: &Activity, now: Instant, settle: Duration) -> (Readiness, Instant) {
    if a.stopped.is_some() {
        return (Readiness::Crashed, a.stopped_at.unwrap_or(now));
    }
    let Some(initialized) = a.initialized else { return (Readiness::Ready, now) };
    if a.busy {
        return (Readiness::Indexing, a.work_changed.unwrap_or(initialized));
    }
    let ended_work = if a.reports { a.work_changed } else { None };
    let quiet_from = quiet_from(a, initialized);
    // Silence alone may be a server busy with work it does not report: where the host
    // probes, the quiet counts once a probe sent after it was answered promptly.
    let confirmed = !a.probes
        || matches!((a.probe_sent, a.probe_answered),
            (Some(sent), Some(answered)) if sent >= quiet_from && answered <= sent + PROBE_PROMPT);
    let quiet = Some(quiet_from).filter(|at| *at <= now && confirmed);
    let bound = Some(initialized + READY_BOUND).filter(|at| *at <= now);
    let over = [ended_work, a.first_published, quiet, bound].into_iter().flatten().min();
    match over {
        None => (Readiness::Indexing, initialized),
        // Ready since its analysis ended, or since its last work ended, whichever is later.
        Some(over) => {
            let since = match a.work_changed {
                Some(changed) if changed > over => changed,
                _ => over,
            };
            // Work announced in the same turn as what ended the last (pyright announces its
            // checker's work right after its first publication) is not ready yet, unless the
            // server has answered a request since: the answer came after that turn.
            if now < since + settle && a.answered.is_none_or(|at| at < since) {
                let began = if since == over { initialized } else { since };
                return (Readiness::Indexing, began);
            }
            (Readiness::Ready, since)
        }
    }
}

/// When a server's quiet period ends: [`READY_QUIET`] after the last thing it said (or its
/// `initialize`, or a probe it answered slowly, which shows it was at work until then).
fn quiet_from(a: &Activity, initialized: Instant) -> Instant {
    let slow_answer = match (a.probe_sent, a.probe_answered) {
        (Some(sent), Some(answered)) if answered > sent + PROBE_PROMPT => Some(answered),
        _ => None,
    };
    let said = [Some(initialized), a.last_heard, a.work_changed, slow_answer];
    said.into_iter().flatten().max().unwrap_or(initialized) + READY_QUIET
}

/// Whether a host that probes should send a server a probe now (a request any server answers
/// at once, with an error if it does not know it): the server has been quiet for
/// [`READY_QUIET`] with its initial analysis not known to be over, and no probe has been sent
/// since the quiet began.
pub fn wants_probe(a: &Activity, now: Instant) -> bool {
    let Some(initialized) = a.initialized else { return false };
    if a.stopped.is_some()
        || a.busy
        || a.first_published.is_some()
        || (a.reports && a.work_changed.is_some())
    {
        return false;
    }
    let quiet_from = quiet_from(a, initialized);
    now >= quiet_from && a.probe_sent.is_none_or(|sent| sent < quiet_from)
}

/// The supervised language servers of one core, one instance per server name, shared by
/// every session. Every method may be called from any thread at any time; a misbehaving
/// server blocks only the callers waiting on it.
pub trait CodeHost: Send + Sync {
    /// Send `method` with `params` to the server `spec` describes, starting it first if it is
    /// not running (or running with a different spec: the configuration changed). Waits up
    /// to the spec's request timeout (`busy` past it, with `$/cancelRequest` sent).
    fn request(
        &self,
        spec: &LaunchSpec,
        method: &str,
        params: Value,
    ) -> Result<CodeAnswer, CodeError>;

    /// Make the server's text of the file at absolute `path` be `text` (opened as
    /// `language_id` if it is not open, else changed). Nothing is sent when the server already
    /// has exactly this text. Starts the server if needed.
    fn sync(
        &self,
        spec: &LaunchSpec,
        path: &Path,
        language_id: &str,
        text: &str,
    ) -> Result<(), CodeError>;

    /// Close the file at `path` on the server `server`, if it is open there.
    fn close(&self, server: &str, path: &Path);

    /// The position encoding the running server negotiated (`None`: not running).
    fn encoding(&self, server: &str) -> Option<Encoding>;

    /// The running server's `capabilities` (`None`: not running).
    fn capabilities(&self, server: &str) -> Option<Value>;

    /// The push diagnostics the server last published for `path`: the version they were for
    /// (if the server said) and the LSP `Diagnostic` objects.
    fn published(&self, server: &str, path: &Path) -> Option<(Option<i64>, Vec<Value>)>;

    /// [`CodeHost::published`] with its place on the server's clock (0 when the host keeps
    /// none).
    fn publication(&self, server: &str, path: &Path) -> Option<Publication> {
        let (version, diagnostics) = self.published(server, path)?;
        Some(Publication { version, diagnostics, at: 0 })
    }

    /// What the running server has said about its work (`None`: the host does not say, or
    /// no server runs).
    fn activity(&self, _server: &str) -> Option<Activity> {
        None
    }

    /// Where the server is (SPEC §25) and since when: [`readiness`] of its activity, and
    /// `starting` while it is being started (`None`: the host does not say, or the server is
    /// not running).
    fn readiness(&self, server: &str) -> Option<(Readiness, Instant)> {
        self.activity(server).map(|a| readiness(&a, Instant::now()))
    }

    /// A session is using the server without sending it anything (it waits for the server
    /// to be ready): `idle_stop` counts from now.
    fn used(&self, _server: &str) {}

    /// Every push publication the running server holds, by absolute file path (SPEC §25:
    /// whole-store diagnostics include them).
    fn publications(&self, _server: &str) -> Vec<(PathBuf, Publication)> {
        Vec::new()
    }

    /// The version of `path` the server was last sent (`None`: not open there).
    fn version(&self, server: &str, path: &Path) -> Option<i64>;

    /// Every server the host holds: `{name, state, pid, supervisorPid, restarts,
    /// recentCrashes, positionEncoding, capabilities, progress, lastError}`.
    fn status(&self) -> Vec<Value>;

    /// Stop the server (shutdown, then its whole process tree), forget its crashes and start
    /// it again with `spec`; its status after the start.
    fn restart(&self, spec: &LaunchSpec) -> Result<Value, CodeError>;

    /// A feed of what the running servers publish, for one editor's connection; dropped
    /// receivers are forgotten. Bounded: a receiver that stops reading misses events.
    fn subscribe(&self) -> Receiver<CodeEvent>;

    /// Stop every server (the core is shutting down).
    fn shutdown(&self);
}

impl std::fmt::Debug for dyn CodeHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeHost")
    }
}

//! `stardust serve`: the one core of a store, listening on a Unix socket for every front.
//!
//! Each connection starts with one line of JSON, the [`Hello`], answered by one line (`{"ok":
//! true}` or `{"error": {...}}`); after that the connection speaks its front's protocol. LSP
//! and MCP connections are handed to the fronts (the binary supplies them as [`Handlers`], so
//! this crate depends on none), either on the socket or, when the attacher passed them
//! ([`crate::pass`]), on its own standard input and output, the socket then only telling
//! each side that the other is gone; `cli` connections speak JSON lines of the registry's
//! commands shown to the command line.
//! Every connection is a session of the one [`Service`], so a commit made through any of them
//! reaches every subscriber at once.

use stardust_core::sync::lock;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use stardust_core::Code;
use stardust_core::error::error_object;
use stardust_core::service::{Front, Service};
use stardust_core::store::{OpenOptions, Store};

use crate::hangup::{Hangup, Watcher};
use crate::record::{self, Record};
use crate::{Hello, PROTOCOL};

/// Serves one connection of a front on the shared service, until its input ends or its
/// [`Hangup`] resolves (the peer has gone, though the front may not have read all its input).
/// When it returns, the core closes the connection, which ends the attacher.
pub type Handler =
    Arc<dyn Fn(Arc<Service>, &Hello, Io, Hangup) -> anyhow::Result<()> + Send + Sync>;

/// Where a front's session reads and writes: the connection's socket (two copies of it), or
/// the attacher's own standard input and output, passed over the socket.
#[derive(Debug)]
pub struct Io {
    /// What the client writes.
    pub input: OwnedFd,
    /// Where the answers go. Passed ones are a pipe or socket the client holds the other end
    /// of: shutting the connection's socket down does not end a read or write on them.
    pub output: OwnedFd,
}

impl Io {
    fn socket(stream: &UnixStream) -> std::io::Result<Io> {
        Ok(Io {
            input: OwnedFd::from(stream.try_clone()?),
            output: OwnedFd::from(stream.try_clone()?),
        })
    }
}

/// The fronts the core hands LSP and MCP connections to.
#[derive(Clone)]
pub struct Handlers {
    pub lsp: Handler,
    pub mcp: Handler,
}

/// The longest hello line accepted, and how long a new connection may take to send it.
const MAX_HELLO: usize = 4096;
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a refused peer may take to finish its hello.
const REFUSED_LINGER: Duration = Duration::from_secs(1);

/// How often the accepting thread looks at its stopper while no connection comes, in ms.
const STOP_POLL_MS: u8 = 25;

/// A started core: the store is open (its lock held), the socket listens, the record is written.
pub struct Daemon {
    service: Arc<Service>,
    root: PathBuf,
    /// The store's folder as opened (device, inode), to notice that it has moved.
    folder: (u64, u64),
    socket: PathBuf,
    listener: UnixListener,
    active: Arc<AtomicUsize>,
    last_active: Arc<Mutex<Instant>>,
    stopping: Arc<AtomicBool>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon").field("root", &self.root).field("socket", &self.socket).finish()
    }
}

/// How long the core's previews can be confirmed: SPEC §7's 10 minutes, or
/// `STARDUST_PREVIEW_LIFETIME` seconds (the end-to-end tests see a preview expire without
/// waiting 10 minutes).
fn preview_lifetime() -> std::time::Duration {
    let seconds = std::env::var("STARDUST_PREVIEW_LIFETIME").ok().and_then(|s| s.parse().ok());
    seconds.map_or(stardust_core::service::PREVIEW_LIFETIME, std::time::Duration::from_secs)
}

impl Daemon {
    /// Open the store (a second core fails here with `busy`), listen, and record where. The
    /// code files' language servers run in `code` (none: code requests answer
    /// `server-unavailable`).
    pub fn start(
        store: &Path,
        code: Option<Arc<dyn stardust_core::codefiles::CodeHost>>,
        share_previews: bool,
    ) -> anyhow::Result<Daemon> {
        let store = Store::open(store, OpenOptions::default())?;
        let root = store.root().to_owned();
        let meta = std::fs::metadata(&root)?;
        let folder = (meta.dev(), meta.ino());
        let socket = record::socket_path(&root).context("cannot prepare the socket folder")?;
        // We hold the store's lock, so a socket file left at our path is a dead core's.
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        record::write(&root, &Record { pid: std::process::id(), socket: socket.clone() })
            .context("cannot write .stardust/run/daemon.json")?;
        tracing::info!("serving {} on {}", root.display(), socket.display());
        let service = Arc::new(
            match code {
                Some(host) => Service::new(store).with_code_host(host),
                None => Service::new(store),
            }
            .with_shared_previews(share_previews)
            .with_preview_lifetime(preview_lifetime()),
        );
        // The core starting warms its language servers up (SPEC §25), in the background.
        service.warm_up();
        Ok(Daemon {
            service,
            root,
            folder,
            socket,
            listener,
            active: Arc::new(AtomicUsize::new(0)),
            last_active: Arc::new(Mutex::new(Instant::now())),
            stopping: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn service(&self) -> Arc<Service> {
        self.service.clone()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How long no connection has been open (zero while one is).
    pub fn idle_for(&self) -> Duration {
        if self.active.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        lock(&self.last_active).elapsed()
    }

    /// Whether the store's folder is no longer at the path the core serves it under (renamed,
    /// moved or removed). Attachers find a store's core through the record inside the
    /// folder, so a moved store's record would lead them to a core serving the old path.
    pub fn moved(&self) -> bool {
        match std::fs::metadata(&self.root) {
            Ok(meta) => (meta.dev(), meta.ino()) != self.folder,
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }

    /// Write the record again if it is gone or names another process (a tool deleted
    /// `.stardust/` while the core ran, SPEC §24), so whoever reads it finds this core.
    pub fn keep_record(&self) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let ours = Record { pid: std::process::id(), socket: self.socket.clone() };
        if record::read(&self.root).as_ref() != Some(&ours)
            && let Err(e) = record::write(&self.root, &ours)
        {
            tracing::warn!("cannot write .stardust/run/daemon.json again: {e}");
        }
    }

    /// A handle that makes [`Daemon::accept`] return.
    pub fn stopper(&self) -> Arc<AtomicBool> {
        self.stopping.clone()
    }

    /// Accept connections until the stopper is set, each served on its own thread. A
    /// connection is accepted as soon as it comes (the listener is polled for readiness, not
    /// looked at between sleeps: every attach, an agent's first answer included, waited up to
    /// 25 ms for the next look); the stopper is looked at every `STOP_POLL_MS`.
    pub fn accept(&self, handlers: &Handlers) {
        use std::os::fd::AsFd;
        while !self.stopping.load(Ordering::SeqCst) {
            match self.listener.accept() {
                Ok((stream, _)) => self.spawn(stream, handlers.clone()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    let mut ready = [nix::poll::PollFd::new(
                        self.listener.as_fd(),
                        nix::poll::PollFlags::POLLIN,
                    )];
                    // Interrupted or failed: look at the stopper and try again.
                    let _ = nix::poll::poll(&mut ready, nix::poll::PollTimeout::from(STOP_POLL_MS));
                }
                Err(e) => {
                    tracing::warn!("cannot accept a connection: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    fn spawn(&self, stream: UnixStream, handlers: Handlers) {
        let service = self.service.clone();
        let active = self.active.clone();
        let last_active = self.last_active.clone();
        active.fetch_add(1, Ordering::SeqCst);
        std::thread::spawn(move || {
            if let Err(e) = connection(service, stream, &handlers) {
                tracing::warn!("a connection ended with an error: {e:#}");
            }
            *lock(&last_active) = Instant::now();
            active.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Stop: no new connections, wait for the commit in flight and refuse later ones, and
    /// remove the socket and the record.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.service.store().close();
        self.service.shutdown_code_servers();
        let _ = std::fs::remove_file(&self.socket);
        record::remove_if(&self.root, std::process::id());
    }
}

/// One connection: check the peer, read its hello, hand it to its front.
fn connection(
    service: Arc<Service>,
    stream: UnixStream,
    handlers: &Handlers,
) -> anyhow::Result<()> {
    stream.set_nonblocking(false)?;
    let mut writer = stream.try_clone()?;
    let peer = nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)?;
    if peer.uid() != record::uid() {
        let why = format!(
            "this core serves only its own user (uid {}), not uid {}; run stardust as the \
             store's owner",
            record::uid(),
            peer.uid()
        );
        answer(&mut writer, Err((Code::Refused, why)))?;
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let _ = stream.set_read_timeout(Some(REFUSED_LINGER));
        // Let the peer finish its hello (read and dropped, bounded) before the connection
        // closes: closed while the peer still writes, its write would fail (EPIPE) before it
        // reads the refusal. Accepted at once, a connection is often refused that early.
        let _ = BufReader::new(stream.take(MAX_HELLO as u64)).read_until(b'\n', &mut Vec::new());
        anyhow::bail!("refused a connection from uid {}", peer.uid());
    }
    stream.set_read_timeout(Some(HELLO_TIMEOUT))?;
    let mut reader = BufReader::new(stream);
    let hello = match read_hello(&mut reader) {
        Ok(hello) => hello,
        // A liveness probe (`record::live`) connects and goes: nothing to say.
        Err(why) if why.is_empty() => return Ok(()),
        Err(why) => {
            answer(&mut writer, Err((Code::InvalidArguments, why.clone())))?;
            anyhow::bail!("a bad hello: {why}");
        }
    };
    // Only a front with a handler takes the attacher's standard input and output.
    let takes_stdio = hello.pass_stdio && hello.front != Front::Cli;
    answer(&mut writer, Ok(takes_stdio))?;
    let stream = reader.into_inner();
    tracing::info!("a {} connection from {}", hello.front.as_str(), hello.client);
    let handler = match hello.front {
        Front::Lsp | Front::Sdk => &handlers.lsp,
        Front::Mcp => &handlers.mcp,
        // Answers are written one at a time, so a gone peer fails the next write.
        Front::Cli => {
            stream.set_read_timeout(None)?;
            return cli(&service, &hello, stream);
        }
    };
    // The descriptors follow the answer at once: still under the hello's timeout.
    let passed = if takes_stdio {
        crate::pass::receive(&stream).context("no standard input and output came")?
    } else {
        None
    };
    let io = match passed {
        Some((input, output)) => {
            tracing::debug!("serving the {} session on the attacher's stdio", hello.front.as_str());
            Io { input, output }
        }
        None => Io::socket(&stream)?,
    };
    stream.set_read_timeout(None)?;
    // Dropped (its thread stopped) when this function returns, after the front is done.
    let watcher = Watcher::start(&stream)?;
    let served = handler(service, &hello, io, watcher.hangup());
    // The session is over and the front has closed its input and output: closing the socket
    // ends a front's read still waiting on it and tells the attacher, which then exits.
    let _ = stream.shutdown(std::net::Shutdown::Both);
    served
}

fn read_hello(reader: &mut BufReader<UnixStream>) -> Result<Hello, String> {
    let mut line = Vec::new();
    let mut limited = reader.by_ref().take(MAX_HELLO as u64);
    limited.read_until(b'\n', &mut line).map_err(|e| format!("no hello line: {e}"))?;
    if line.is_empty() {
        return Err(String::new());
    }
    if !line.ends_with(b"\n") {
        return Err(format!("the hello line must end with a newline within {MAX_HELLO} bytes"));
    }
    let hello: Hello =
        serde_json::from_slice(&line).map_err(|e| format!("a bad hello line: {e}"))?;
    if hello.stardust != PROTOCOL {
        return Err(format!(
            "this core speaks protocol {PROTOCOL}, the client {}; use the same stardust binary",
            hello.stardust
        ));
    }
    Ok(hello)
}

/// The answer to a hello: `{"ok": true}`, with `"stdio": true` when the core takes the
/// attacher's standard input and output, or the error.
fn answer(writer: &mut UnixStream, result: Result<bool, (Code, String)>) -> std::io::Result<()> {
    let line = match result {
        Ok(false) => json!({"ok": true}),
        Ok(true) => json!({"ok": true, "stdio": true}),
        Err((code, message)) => json!({"error": error_object(code, &message, Value::Null)}),
    };
    writeln!(writer, "{line}")
}

/// The command line's connection: one JSON request a line (`{"command", "arguments"}`), one
/// JSON answer a line (`{"result"}` or `{"error": {code, message, ...details}}`), any
/// command of the registry shown to the command line (`stardust.backup.run` among them).
/// Before an answer, a long operation sends `{"progress": {phase, done, total, path}}`
/// lines, at most one per [`PROGRESS_EVERY`] (and the last).
fn cli(service: &Service, hello: &Hello, stream: UnixStream) -> anyhow::Result<()> {
    let session = service.open_session(Front::Cli, &hello.client);
    let mut writer = stream.try_clone()?;
    let result = (|| -> anyhow::Result<()> {
        for line in BufReader::new(stream).lines() {
            let line = line?;
            let answer = match serde_json::from_str::<Value>(&line) {
                Ok(request) => {
                    let name = request["command"].as_str().unwrap_or_default();
                    let args = request.get("arguments").cloned().unwrap_or(Value::Null);
                    let mut progress = Throttled::new(&mut writer);
                    let outcome =
                        service.execute_with_progress(&session, name, args, &mut |step| {
                            progress.send(step)
                        });
                    if let Some(e) = progress.gone {
                        return Err(e.into());
                    }
                    match outcome {
                        Ok(result) => json!({"result": result}),
                        Err(err) => {
                            json!({"error": err.to_json(&service.store().snapshot().analysis)})
                        }
                    }
                }
                Err(e) => {
                    let message = format!("a request is one JSON object a line: {e}");
                    json!({"error": error_object(Code::InvalidArguments, &message, Value::Null)})
                }
            };
            writeln!(writer, "{answer}")?;
        }
        Ok(())
    })();
    service.close_session(&session);
    result
}

/// `stardust backup run` through the core: the registry's command name.
pub use stardust_core::service::BACKUP_RUN;

const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Progress lines to the client, at most one per [`PROGRESS_EVERY`] and always the last of a
/// phase (`done >= total`), so a fast operation does not flood the connection.
struct Throttled<'a> {
    writer: &'a mut UnixStream,
    last: Option<Instant>,
    /// The client could not be written to: the rest is not sent.
    gone: Option<std::io::Error>,
}

impl<'a> Throttled<'a> {
    fn new(writer: &'a mut UnixStream) -> Throttled<'a> {
        Throttled { writer, last: None, gone: None }
    }

    fn send(&mut self, step: Value) {
        let (done, total) = (step["done"].as_u64(), step["total"].as_u64());
        let last = done.zip(total).is_some_and(|(done, total)| done >= total);
        let due = self.last.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) || last;
        if self.gone.is_some() || !due {
            return;
        }
        self.last = Some(Instant::now());
        if let Err(e) = writeln!(self.writer, "{}", json!({ "progress": step })) {
            self.gone = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attach::{self, Client};

    #[test]
    fn a_backup_through_the_cli_connection_reports_progress_then_what_it_wrote() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, target) = (tmp.path().join("store"), tmp.path().join("backups"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.dust"), "id thing/a\ntype thing\n").unwrap();
        let definition =
            format!("id backup/b\ntype backup\ntarget '{}'\nkeep 1\n", target.display());
        std::fs::write(root.join("backup.dust"), definition).unwrap();
        let daemon = Arc::new(Daemon::start(&root, None, false).unwrap());
        let never: Handler = Arc::new(|_, _, _, _| anyhow::bail!("no LSP or MCP here"));
        let handlers = Handlers { lsp: never.clone(), mcp: never };
        let accepting = daemon.clone();
        std::thread::spawn(move || accepting.accept(&handlers));

        let hello = Hello::new(Front::Cli, "test");
        let mut client =
            Client::new(attach::connect(daemon.root(), &hello, None).unwrap()).unwrap();
        let mut steps = Vec::new();
        let written = client
            .call_with_progress(BACKUP_RUN, json!({"id": "backup/b"}), &mut |s| {
                steps.push(s.clone())
            })
            .unwrap();
        let last = steps.last().expect("at least the final progress line");
        assert_eq!(last["phase"], "archiving");
        assert_eq!(last["done"], last["total"]);
        assert!(written["archive"].as_str().unwrap().starts_with(target.to_str().unwrap()));
        assert_eq!(written["seq"], 1);
        let err = client.call(BACKUP_RUN, json!({})).unwrap_err();
        let err = err.downcast_ref::<attach::RemoteError>().unwrap();
        assert_eq!(err.code, "invalid-arguments");
        daemon.shutdown();
    }
}

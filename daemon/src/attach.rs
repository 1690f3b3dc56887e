//! Attaching to a store's core: find it (or start it in the background), say hello, and hand
//! it standard input and output (or relay them).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use stardust_core::Code;

use crate::Hello;
use crate::record;

/// How long an attacher waits for a core it started to listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How often an attacher looks for the core it started: a core comes up in tens of ms, and
/// each look is one small file read, so the wait adds at most this to an agent's first answer.
const START_POLL: Duration = Duration::from_millis(2);

/// How to start a core when none runs: the `stardust` executable and the idle period after
/// which a core started this way exits.
#[derive(Clone, Debug)]
pub struct Autostart<'a> {
    pub exe: &'a Path,
    pub idle_exit: Duration,
}

/// The `stardust` executable to start a core with, for a program other than `stardust`
/// itself (an SDK, SPEC §21): `STARDUST_BIN`, else `stardust` on `PATH`, else beside the
/// running executable; cargo puts examples in `examples/` and tests in `deps/` one folder below
/// the binaries, so from there the folder above is tried too. The error names every place
/// tried, in order.
pub fn find_stardust() -> Result<PathBuf, NotFound> {
    let mut tried = Vec::new();
    match std::env::var_os("STARDUST_BIN") {
        Some(exe) if !exe.is_empty() => return Ok(PathBuf::from(exe)),
        _ => tried.push("STARDUST_BIN (not set)".to_owned()),
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        // An empty entry would mean the working directory: never a place to run code from.
        .filter(|dir| !dir.as_os_str().is_empty())
        .collect();
    if let Some(exe) = dirs.iter().map(|dir| dir.join("stardust")).find(|exe| executable(exe)) {
        return Ok(exe);
    }
    tried.push(if dirs.is_empty() {
        "`stardust` on PATH (PATH is empty)".to_owned()
    } else {
        format!(
            "`stardust` on PATH ({})",
            std::env::join_paths(&dirs).unwrap_or_default().display()
        )
    });
    let beside = match std::env::current_exe() {
        Ok(me) => beside(&me),
        Err(err) => {
            tried.push(format!("beside this program (its path is unknown: {err})"));
            Vec::new()
        }
    };
    if let Some(exe) = beside.iter().find(|exe| executable(exe)) {
        return Ok(exe.clone());
    }
    if !beside.is_empty() {
        let places: Vec<String> = beside.iter().map(|p| p.display().to_string()).collect();
        tried.push(format!("beside this program ({})", places.join(", ")));
    }
    Err(NotFound { tried })
}

/// Where `stardust` would be beside the executable `me`: its folder, and the one above when
/// that folder is cargo's `examples` or `deps`.
fn beside(me: &Path) -> Vec<PathBuf> {
    let Some(dir) = me.parent() else { return Vec::new() };
    let mut places = vec![dir.join("stardust")];
    if dir.file_name().is_some_and(|name| name == "examples" || name == "deps")
        && let Some(up) = dir.parent()
    {
        places.push(up.join("stardust"));
    }
    places
}

/// A file someone may execute (not a folder, some execute bit set).
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// No `stardust` executable was found; `tried` says where it was looked for.
#[derive(Debug, thiserror::Error)]
#[error("no stardust executable was found to start a core: tried {}", tried.join(", "))]
pub struct NotFound {
    pub tried: Vec<String>,
}

/// Connect to the core of `store` and say `hello`. With `autostart`, a core is started in the
/// background (detached, logging to `.stardust/run/serve.log`) when none runs; two attachers
/// starting one at once end up on the same core, because only one can take the store's lock.
pub fn connect(
    store: &Path,
    hello: &Hello,
    autostart: Option<Autostart<'_>>,
) -> anyhow::Result<UnixStream> {
    handshake(store, hello, autostart).map(|(stream, _)| stream)
}

/// A connection for this process's standard input and output, said hello on.
#[derive(Debug)]
pub struct Attached {
    stream: UnixStream,
    /// The core takes the standard input and output (it answered `"stdio": true`).
    takes_stdio: bool,
}

/// Connect to the core of `store` (as [`connect`]) for a session on this process's standard
/// input and output, offering to pass them when they are pipes or sockets.
pub fn connect_stdio(
    store: &Path,
    hello: &Hello,
    autostart: Option<Autostart<'_>>,
) -> anyhow::Result<Attached> {
    let offer =
        crate::pass::passable(io::stdin().as_fd()) && crate::pass::passable(io::stdout().as_fd());
    let hello = Hello { pass_stdio: offer, ..hello.clone() };
    let (stream, answer) = handshake(store, &hello, autostart)?;
    Ok(Attached { stream, takes_stdio: offer && answer["stdio"] == true })
}

impl Attached {
    /// Run the session until the core closes the connection: the core serves it on this
    /// process's standard input and output, passed to it, while this process only waits
    /// (the core notices when it is killed: the socket hangs up); or, when they cannot be
    /// passed, this process relays them to the socket.
    pub fn run(self) -> io::Result<()> {
        if self.takes_stdio {
            // The relay stays for what cannot be passed: a terminal or a file (see
            // `pass`), a core too old to take them, or a failed `sendmsg`.
            match crate::pass::send(&self.stream, io::stdin().as_fd(), io::stdout().as_fd()) {
                Ok(()) => {
                    crate::pass::release_stdio()?;
                    return wait_closed(self.stream);
                }
                Err(err) => {
                    tracing::warn!(
                        "cannot pass standard input and output to the core ({err}): relaying them"
                    );
                    crate::pass::decline(&self.stream)?;
                }
            }
        }
        relay_stdio(self.stream)
    }
}

/// Block until the core closes `stream` (it sends nothing after the hello's answer).
fn wait_closed(mut stream: UnixStream) -> io::Result<()> {
    let mut buffer = [0u8; 64];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Connect and say `hello`: the stream and the core's answer.
fn handshake(
    store: &Path,
    hello: &Hello,
    autostart: Option<Autostart<'_>>,
) -> anyhow::Result<(UnixStream, Value)> {
    let record = match (record::live(store), autostart) {
        (Some(record), _) => record,
        (None, None) => anyhow::bail!("no core runs for {}", store.display()),
        (None, Some(start)) => {
            let child = spawn(store, &start)?;
            wait_for_core(store, child)?
        }
    };
    let mut stream = UnixStream::connect(&record.socket)
        .with_context(|| format!("cannot connect to {}", record.socket.display()))?;
    writeln!(stream, "{}", serde_json::to_string(hello)?)?;
    let answer = read_line(&mut stream)?;
    let answer: Value = serde_json::from_slice(&answer).context("the core's answer is not JSON")?;
    if answer["ok"] != true {
        let error = &answer["error"];
        return Err(RemoteError {
            code: wire_code(error),
            message: format!(
                "the core refused the connection: {}",
                error["message"].as_str().unwrap_or("no reason given")
            ),
            details: error.clone(),
        }
        .into());
    }
    Ok((stream, answer))
}

/// Whether a core runs for `store` now.
pub fn running(store: &Path) -> bool {
    record::live(store).is_some()
}

fn spawn(store: &Path, start: &Autostart<'_>) -> anyhow::Result<std::process::Child> {
    let run = record::run_dir(store);
    std::fs::create_dir_all(&run).with_context(|| format!("cannot create {}", run.display()))?;
    let log = std::fs::OpenOptions::new().create(true).append(true).open(run.join("serve.log"))?;
    Command::new(start.exe)
        .arg("serve")
        .arg(store)
        .arg("--idle-exit")
        .arg(start.idle_exit.as_secs().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: the terminal's Ctrl-C for the attacher does not reach it.
        .process_group(0)
        .spawn()
        .context("cannot start `stardust serve` in the background")
}

/// Wait until a core listens for `store`: the one we started, or the one that won the race
/// against it. If ours stopped and no core shows up soon after, none will: another kind of
/// process (a standalone `stardust mount`, say) owns the store.
fn wait_for_core(store: &Path, mut child: std::process::Child) -> anyhow::Result<record::Record> {
    let started = Instant::now();
    let mut ended: Option<Instant> = None;
    loop {
        if let Some(record) = record::live(store) {
            // Reap the child whenever it ends, so that a long-lived attacher (an SDK
            // subscription that restarts cores) leaves no zombies behind.
            std::thread::spawn(move || child.wait());
            return Ok(record);
        }
        if ended.is_none() && child.try_wait().ok().flatten().is_some() {
            ended = Some(Instant::now());
        }
        if ended.is_some_and(|at| at.elapsed() > Duration::from_secs(2)) {
            anyhow::bail!(
                "no core could start for {} (another process may own it); see {}",
                store.display(),
                record::run_dir(store).join("serve.log").display()
            );
        }
        if started.elapsed() > START_TIMEOUT {
            anyhow::bail!(
                "the core started for {} did not come up within {}s; see {}",
                store.display(),
                START_TIMEOUT.as_secs(),
                record::run_dir(store).join("serve.log").display()
            );
        }
        std::thread::sleep(START_POLL);
    }
}

/// One line, read a byte at a time so that nothing after it is consumed.
fn read_line(stream: &mut UnixStream) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8];
    while line.len() < 64 * 1024 {
        if stream.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the core closed the connection",
            ));
        }
        if byte[0] == b'\n' {
            return Ok(line);
        }
        line.push(byte[0]);
    }
    Err(io::Error::new(io::ErrorKind::InvalidData, "the core's answer line is too long"))
}

/// Copy standard input to the core and the core's output to standard output, until the core
/// closes the connection (or standard input ends and the core has answered everything).
pub fn relay_stdio(stream: UnixStream) -> io::Result<()> {
    let mut to_core = stream.try_clone()?;
    std::thread::spawn(move || {
        let _ = io::copy(&mut io::stdin().lock(), &mut to_core);
        let _ = to_core.shutdown(std::net::Shutdown::Write);
    });
    // Standard output is line-buffered and protocol frames do not end in newlines: flush
    // every chunk as it comes.
    let mut from_core = stream;
    let mut out = io::stdout().lock();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from_core.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buffer[..n])?;
        out.flush()?;
    }
}

/// A command-line session with a core: registry commands as JSON lines.
#[derive(Debug)]
pub struct Client {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

/// The code of an error object a core sent.
fn wire_code(error: &Value) -> Code {
    error["code"].as_str().and_then(Code::parse).unwrap_or(Code::Internal)
}

/// A command the core answered with an error (SPEC §16 code, message, details).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RemoteError {
    /// The code the core sent; `internal` for one this binary does not know.
    pub code: Code,
    pub message: String,
    pub details: Value,
}

impl Client {
    pub fn new(stream: UnixStream) -> io::Result<Client> {
        Ok(Client { writer: stream.try_clone()?, reader: BufReader::new(stream) })
    }

    /// Run `command` with `arguments` on the core.
    pub fn call(&mut self, command: &str, arguments: Value) -> anyhow::Result<Value> {
        self.call_with_progress(command, arguments, &mut |_| {})
    }

    /// Run `command` with `arguments` on the core, handing each `{"progress": ...}` line it
    /// sends before its answer to `progress`.
    pub fn call_with_progress(
        &mut self,
        command: &str,
        arguments: Value,
        progress: &mut dyn FnMut(&Value),
    ) -> anyhow::Result<Value> {
        writeln!(self.writer, "{}", json!({"command": command, "arguments": arguments}))?;
        let mut answer = loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                anyhow::bail!("the core closed the connection before answering {command}");
            }
            let answer: Value = serde_json::from_str(&line)?;
            match answer.get("progress") {
                Some(step) => progress(step),
                None => break answer,
            }
        };
        if let Some(error) = answer.get_mut("error") {
            let code = wire_code(error);
            let message = error["message"].as_str().unwrap_or_default().to_owned();
            return Err(RemoteError { code, message, details: error.take() }.into());
        }
        Ok(answer["result"].take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_a_cargo_example_or_test_is_also_the_folder_above() {
        let at = |p: &str| -> Vec<String> {
            beside(Path::new(p)).iter().map(|p| p.display().to_string()).collect()
        };
        assert_eq!(
            at("/t/debug/examples/watch"),
            ["/t/debug/examples/stardust", "/t/debug/stardust"]
        );
        assert_eq!(at("/t/debug/deps/sdk-0123"), ["/t/debug/deps/stardust", "/t/debug/stardust"]);
        assert_eq!(at("/usr/local/bin/sync-job"), ["/usr/local/bin/stardust"]);
        assert_eq!(at("/deps/job"), ["/deps/stardust", "/stardust"]);
    }
}

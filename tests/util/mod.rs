//! Helpers shared by the end-to-end tests: run the real `stardust` binary and read its output.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The repository root, where `examples/` lives.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run `stardust ARGS` from the repository root, with logging left at its default.
pub fn stardust(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(args)
        .current_dir(repo())
        .env_remove("RUST_LOG")
        .output()
        .expect("the stardust binary runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("output is UTF-8")
}

/// Copy a store from `from` to `to`, without its private `.stardust/` (a run in the checkout
/// may have made one).
pub fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".stardust" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_store(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A fresh copy of `examples/library` in a temporary folder.
pub fn library() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_store(&repo().join("examples/library"), tmp.path());
    tmp
}

/// A copy of `examples/library` at `dir/store` (canonical), served by `stardust serve
/// --mount` at `dir/mnt`, once the mount shows its `store.json`: the store, the mount, the core.
pub fn mounted_library(dir: &Path) -> (PathBuf, PathBuf, Serve) {
    let store = dir.join("store");
    copy_store(&repo().join("examples/library"), &store);
    let store = store.canonicalize().unwrap();
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let serve = Serve::mounted(&store, &mnt);
    wait_until("the store is mounted", || mnt.join(".stardust/store.json").is_file());
    (store, mnt, serve)
}

/// How long a test waits for a process to reach a state before it fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

pub mod hosts;
pub mod lsp;
pub mod mcp;
pub mod mount;

/// Wait until `done`, failing the test after [`TIMEOUT`] with `what` was awaited.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The record of the core serving `store` (`.stardust/run/daemon.json`), when one runs.
pub fn record(store: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(store.join(".stardust/run/daemon.json")).ok()?).ok()
}

/// `stardust serve STORE [--mount DIR]`, its output dropped; `start` returns once the core
/// has written its record. Stopped with SIGTERM by `stop`, killed when dropped.
pub struct Serve {
    pub child: Child,
}

impl Serve {
    pub fn start(store: &Path) -> Serve {
        Serve::spawn(store, &[])
    }

    /// With the store mounted at `mount`.
    pub fn mounted(store: &Path, mount: &Path) -> Serve {
        Serve::spawn(store, &["--mount".as_ref(), mount.as_os_str()])
    }

    /// With the user's configuration folder (`XDG_CONFIG_HOME`) at `config` instead of the
    /// real one: its `stardust/servers.toml` and `trusted.toml`.
    pub fn with_config(store: &Path, config: &Path) -> Serve {
        Serve::spawn_with(store, &[], Some(config))
    }

    /// Mounted at `mount`, with the user's configuration folder at `config`.
    pub fn mounted_with_config(store: &Path, mount: &Path, config: &Path) -> Serve {
        Serve::spawn_with(store, &["--mount".as_ref(), mount.as_os_str()], Some(config))
    }

    fn spawn(store: &Path, flags: &[&std::ffi::OsStr]) -> Serve {
        Serve::spawn_with(store, flags, None)
    }

    fn spawn_with(store: &Path, flags: &[&std::ffi::OsStr], config: Option<&Path>) -> Serve {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stardust"));
        if let Some(config) = config {
            command.env("XDG_CONFIG_HOME", config);
        }
        let child = command
            .arg("serve")
            .arg(store)
            .args(flags)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the stardust binary runs");
        let serve = Serve { child };
        wait_until("the core has written its record", || record(store).is_some());
        serve
    }

    /// Stop the core with SIGTERM, as a service manager would; its exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `stardust FRONT --store STORE FLAGS` with its input and output piped (stderr
/// dropped); a core it starts stops 2 s after its last client.
pub fn front(front: &str, store: &Path, flags: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_stardust"))
        .arg(front)
        .arg("--store")
        .arg(store)
        .args(flags)
        .env("STARDUST_IDLE_EXIT", "2")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the stardust binary runs")
}

/// Start `stardust FRONT --store STORE` and flood it from another thread with the messages
/// of `messages` (framed by `frame`), never reading its output; returns once it stops taking
/// them (its input is full) or took them all, with how many it took.
pub fn flood(
    front_name: &str,
    store: &Path,
    frame: fn(&Value) -> String,
    messages: impl Iterator<Item = Value> + Send + 'static,
) -> (Child, usize) {
    let mut child = front(front_name, store, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    std::thread::spawn(move || {
        for message in messages {
            if stdin.write_all(frame(&message).as_bytes()).is_err() {
                return;
            }
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    let (mut last, mut still) = (0, 0);
    while still < 20 {
        std::thread::sleep(Duration::from_millis(100));
        let now = sent.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    (child, last)
}

/// An LSP session that asks for every workspace symbol 20,000 times: about 50 KB an answer.
pub fn lsp_symbol_requests() -> impl Iterator<Item = Value> + Send + 'static {
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}});
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "initialized", "params": {}});
    let symbols = (1..=20_000).map(|id| {
        serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "workspace/symbol", "params": {"query": ""}})
    });
    [init, initialized].into_iter().chain(symbols)
}

/// An LSP message with its `Content-Length` header.
pub fn lsp_frame(message: &Value) -> String {
    let body = message.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

/// The peak resident memory of process `pid`, in MB.
pub fn peak_rss_mb(pid: u64) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// The port of `stardust mcp|serve --mcp-http 127.0.0.1:0`, read from the line of its log
/// (on `stderr`) that says where it listens.
pub fn mcp_http_port(stderr: &mut impl std::io::BufRead) -> u16 {
    loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server stopped before listening");
        if let Some(at) = line.find("http://127.0.0.1:") {
            let rest = &line[at + "http://127.0.0.1:".len()..];
            return rest[..rest.find('/').unwrap()].parse().unwrap();
        }
    }
}

/// One HTTP/1.1 POST of `body` to `/mcp` with `Connection: close` (as JSON, accepting JSON
/// and event streams, to `Host: 127.0.0.1:PORT`, unless `headers` say otherwise): the status,
/// headers (lowercase names) and the body, de-chunked.
pub fn http_post(
    port: u16,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    http_request(port, "POST", headers, body)
}

/// [`http_post`] with another method (`DELETE` ends an MCP session).
pub fn http_request(
    port: u16,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut request = format!("{method} /mcp HTTP/1.1\r\nConnection: close\r\n");
    let defaults = [
        ("Host", format!("127.0.0.1:{port}")),
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
    ];
    for (name, value) in defaults {
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, mut rest) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let body = if chunked {
        let mut out = String::new();
        loop {
            let (size, after) = rest.split_once("\r\n").unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            out.push_str(&after[..size]);
            rest = &after[size + 2..];
        }
        out
    } else {
        rest.to_owned()
    };
    (status, headers, body)
}

/// The fake language server of the fault tests (`stardust-servers`' `stardust-fake-lsp`),
/// built beside the `stardust` binary: Cargo builds it for the root package's tests only in a
/// workspace run, and a filtered run may find an older build without the modes a test needs,
/// so it is built (a no-op when fresh) once per test binary.
pub fn fake_lsp() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = Path::new(env!("CARGO_BIN_EXE_stardust")).with_file_name("stardust-fake-lsp");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut build = Command::new(cargo);
            build
                .args(["build", "-j", "2", "--quiet", "-p", "stardust-servers"])
                .args(["--bin", "stardust-fake-lsp"])
                .current_dir(repo());
            if exe.parent().and_then(Path::file_name).is_some_and(|dir| dir == "release") {
                build.arg("--release");
            }
            let built = build.status().expect("cargo runs");
            assert!(built.success() && exe.exists(), "cannot build {}", exe.display());
            exe
        })
        .clone()
}

/// Whether process `pid` is alive (a zombie is not: it only waits to be reaped).
pub fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().to_owned()))
        .is_some_and(|rest| !rest.starts_with('Z'))
}

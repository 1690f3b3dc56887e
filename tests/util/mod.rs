//! Helpers shared by the end-to-end tests: run the real `stardust` binary and read its output.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

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

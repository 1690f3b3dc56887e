//! The whole process tree, a leaked daemon grandchild included, is gone within 5 s on every
//! exit path the core itself survives: shutdown/exit, transport EOF, a crash, a restart, and
//! dropping the server without a shutdown. (The core's own death: tests/core_death.rs.)

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use stardust_servers::{LanguageServer, State};

/// A started fake that leaked a grandchild: the server, its pids (supervisor, server, leaked).
fn leaking(dir: &std::path::Path) -> (LanguageServer, [i32; 3]) {
    let pidfile = dir.join("leak.pid");
    let server = server(dir, &["--leak", pidfile.to_str().unwrap()]);
    server.ensure_started().unwrap();
    let (supervisor, pid) = tree_pids(&server);
    let leaked = leaked_pid(&pidfile);
    for p in [supervisor, pid, leaked] {
        assert!(alive(p), "{p} runs before the exit path");
    }
    // The leaked daemon left the server's process group and session.
    let pgid = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(leaked))).unwrap().as_raw();
    assert_ne!(pgid, pid);
    (server, [supervisor, pid, leaked])
}

fn assert_gone(pids: [i32; 3], path: &str) {
    let started = Instant::now();
    let left = survivors(&pids, Duration::from_secs(5));
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "{path}: alive after 5 s (supervisor, server, leaked: {pids:?})"
    );
    eprintln!("{path}: the tree was gone {:?} after the check began", started.elapsed());
}

#[test]
fn shutdown_and_exit_reap_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (server, pids) = leaking(dir.path());
    server.shutdown();
    assert_gone(pids, "shutdown");
    assert_eq!(server.status().state, State::Stopped);
}

#[test]
fn transport_eof_reaps_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (server, pids) = leaking(dir.path());
    // The server closes its output but keeps running; nothing else is asked of the client.
    let err = server.request("fake/close-stdout", Value::Null, None).unwrap_err();
    assert!(err.to_string().contains("the server closed its output"), "{err}");
    assert_gone(pids, "EOF");
}

#[test]
fn a_crash_reaps_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (server, pids) = leaking(dir.path());
    server.request("fake/crash", Value::Null, None).unwrap_err();
    assert_gone(pids, "crash");
}

#[test]
fn a_restart_reaps_the_old_tree_and_starts_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let (server, pids) = leaking(dir.path());
    let status = server.restart().unwrap();
    assert_gone(pids, "restart");
    assert_eq!(status.state, State::Indexing);
    assert_eq!(status.restarts, 1);
    let new = status.server_pid.unwrap();
    assert!(!pids.contains(&new));
    assert!(alive(new));
}

#[test]
fn dropping_the_server_reaps_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (server, pids) = leaking(dir.path());
    drop(server);
    assert_gone(pids, "drop");
}

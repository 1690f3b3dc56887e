//! The core's SIGTERM and SIGKILL: a child process plays the core (this test executable run
//! with `--core-child`), starts the fake server that leaks a daemon grandchild, prints the
//! pids and waits. The test kills it; nothing of the tree may be alive 5 s later.
//!
//! Not a libtest harness (`harness = false`): the child mode needs its own `main`.

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{SigSet, Signal, kill};
use nix::unistd::Pid;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--core-child") {
        core_child(&args[2]);
        return;
    }
    let filter = args.iter().skip(1).find(|a| !a.starts_with('-')).cloned().unwrap_or_default();
    let mut ran = 0;
    for (name, signal) in [
        ("core_sigterm_reaps_the_tree", Signal::SIGTERM),
        ("core_sigkill_reaps_the_tree", Signal::SIGKILL),
    ] {
        if !name.contains(&filter) {
            continue;
        }
        print!("test {name} ... ");
        core_dies(signal);
        println!("ok");
        ran += 1;
    }
    println!("test result: ok. {ran} passed");
}

/// The core: like `stardust serve`, it shuts its servers down on SIGTERM and exits 0.
fn core_child(dir: &str) {
    let mut term = SigSet::empty();
    term.add(Signal::SIGTERM);
    term.thread_block().unwrap();
    let dir = std::path::Path::new(dir);
    let pidfile = dir.join("leak.pid");
    let server = server(dir, &["--leak", pidfile.to_str().unwrap()]);
    server.ensure_started().unwrap();
    let (supervisor, pid) = tree_pids(&server);
    println!("pids {supervisor} {pid} {}", leaked_pid(&pidfile));
    term.wait().unwrap();
    server.shutdown();
}

fn core_dies(signal: Signal) {
    let dir = tempfile::tempdir().unwrap();
    let mut core = Command::new(std::env::current_exe().unwrap())
        .arg("--core-child")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(core.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let pids: Vec<i32> = line
        .trim()
        .strip_prefix("pids ")
        .expect("the child's pids")
        .split(' ')
        .map(|p| p.parse().unwrap())
        .collect();
    for &p in &pids {
        assert!(alive(p), "{p} runs before the core dies");
    }
    kill(Pid::from_raw(core.id() as i32), signal).unwrap();
    let status = core.wait().unwrap();
    let died = Instant::now();
    let left = survivors(&pids, Duration::from_secs(5));
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "alive 5 s after the core's {signal} (supervisor, server, leaked: {pids:?})"
    );
    eprintln!("core {signal} ({status}): the tree was gone {:?} after the core", died.elapsed());
    if signal == Signal::SIGTERM {
        assert!(status.success(), "the core exits 0 after shutting its servers down: {status}");
    }
}

//! Shared helpers of the servers tests: the fake server's spec, pids alive or gone.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stardust_servers::{LanguageServer, ServerSpec, SupervisorProgram, Timeouts};

pub fn fake_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_stardust-fake-lsp"))
}

pub fn program() -> SupervisorProgram {
    SupervisorProgram::standalone(env!("CARGO_BIN_EXE_stardust-supervisor"))
}

/// The fake server with `args`, rooted at `root`, covering `.fk` files, with short timeouts.
pub fn spec(root: &Path, args: &[&str]) -> ServerSpec {
    let mut spec = ServerSpec::new("fake", fake_exe(), root);
    spec.args = args.iter().map(|a| a.to_string()).collect();
    spec.languages.insert("fk".into(), "fake".into());
    spec.settings = serde_json::json!({"fake": {"answer": 42}});
    spec.timeouts = Timeouts {
        startup: Duration::from_secs(10),
        request: Duration::from_secs(10),
        shutdown: Duration::from_secs(2),
    };
    spec
}

pub fn server(root: &Path, args: &[&str]) -> LanguageServer {
    LanguageServer::new(spec(root, args), program())
}

/// Whether `pid` is a live process (a zombie is not).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rfind(')').and_then(|i| stat.get(i + 2..i + 3));
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Waits up to `limit` for every pid to be gone; the survivors.
pub fn survivors(pids: &[i32], limit: Duration) -> Vec<i32> {
    let until = Instant::now() + limit;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() >= until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pid the fake's leaked daemon wrote to `path`.
pub fn leaked_pid(path: &Path) -> i32 {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text.trim().parse().expect("a pid");
        }
        assert!(Instant::now() < until, "the fake never wrote {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The supervisor's and the server's pids of a running server.
pub fn tree_pids(server: &LanguageServer) -> (i32, i32) {
    let status = server.status();
    (status.supervisor_pid.expect("a supervisor pid"), status.server_pid.expect("a server pid"))
}

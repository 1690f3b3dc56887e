//! A language server's whole process tree ends with the real core that runs it
//! (`stardust serve`), on a clean stop (SIGTERM) and without one (SIGKILL), when the server
//! leaked a daemon grandchild: nothing of the tree may be alive 5 s later (SPEC §17).

mod util;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use util::mcp::Mcp;

/// How long the tree may outlive the core.
const GRACE: Duration = Duration::from_secs(5);

/// A store with one code file and the user's `[servers.fake]`, the fake server leaking a
/// grandchild whose pid it writes to `leak.pid`.
fn store_with_a_leaking_server(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let store = dir.join("store");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("stardust.toml"), "").unwrap();
    std::fs::write(store.join("notes.fk"), "hello\n").unwrap();
    let config = dir.join("xdg");
    std::fs::create_dir_all(config.join("stardust")).unwrap();
    let table = format!(
        "[servers.fake]\ncommand = {:?}\nargs = [\"--leak\", {:?}]\nlanguages = {{ fk = \"fake\" }}\n",
        util::fake_lsp().display().to_string(),
        dir.join("leak.pid").display().to_string(),
    );
    std::fs::write(config.join("stardust/servers.toml"), table).unwrap();
    (store, config)
}

fn tree_ends_with_the_core(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (store, config) = store_with_a_leaking_server(dir.path());
    let serve = util::Serve::with_config(&store, &config);
    let mut agent = Mcp::open(&store, &[], "reaping-test");
    let hover =
        agent.ok("hover", json!({"path": "notes.fk", "position": {"line": 1, "column": 1}}));
    assert_eq!(hover["server"], "fake", "{hover}");
    let status = agent.ok("server_status", json!({"server": "fake"}));
    let server = &status["servers"][0];
    // Running (the fake says nothing, so it is indexing until its quiet period passed).
    assert!(matches!(server["state"].as_str(), Some("indexing" | "ready")), "{status}");
    let pidfile = dir.path().join("leak.pid");
    util::wait_until("the fake server leaked its grandchild", || pidfile.exists());
    let leaked: i64 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let tree = [server["supervisorPid"].as_i64().unwrap(), server["pid"].as_i64().unwrap(), leaked];
    assert!(tree.iter().all(|pid| util::alive(*pid)), "the tree runs: {tree:?}");
    drop(agent);
    let core = serve.child.id().to_string();
    assert!(std::process::Command::new("kill").args([signal, &core]).status().unwrap().success());
    let deadline = Instant::now() + GRACE;
    while tree.iter().any(|pid| util::alive(*pid)) {
        let left: Vec<i64> = tree.into_iter().filter(|pid| util::alive(*pid)).collect();
        assert!(Instant::now() < deadline, "alive {GRACE:?} after the core's {signal}: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(serve);
}

#[test]
fn the_cores_sigterm_ends_the_servers_whole_tree() {
    tree_ends_with_the_core("-TERM");
}

#[test]
fn the_cores_sigkill_ends_the_servers_whole_tree() {
    tree_ends_with_the_core("-KILL");
}

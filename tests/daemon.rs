//! End-to-end tests of one core per store: `stardust serve` with the mount, an editor attached
//! through `stardust lsp`, and the command line, all real processes sharing one core.

mod util;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use util::lsp::Lsp;
use util::{Serve, TIMEOUT, flood, lsp_frame, peak_rss_mb, record, stardust, text, wait_until};

fn exe() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stardust"));
    command.env("STARDUST_IDLE_EXIT", "2").env_remove("RUST_LOG");
    command
}

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("people")).unwrap();
    std::fs::write(root.join("people/ann.dust"), "id    person/ann\ntype  person\nname  Ann\n")
        .unwrap();
    dir
}

/// An editor attached to the store's core through `stardust lsp --store STORE`, asking for
/// every change notification.
fn attach(store: &Path, name: &str) -> Lsp {
    let mut editor = Lsp::start(store, store, Some(store));
    let notifications = json!(["documentsChanged", "entitiesChanged"]);
    editor.initialize(json!({
        "capabilities": {"experimental": {"stardust": {"notifications": notifications}}},
        "clientInfo": {"name": name}
    }));
    editor
}

fn apply(store: &Path, patch: &str) -> Value {
    let file = store.join("../change.patch.dust");
    std::fs::write(&file, patch).unwrap();
    let out = stardust(&[
        "apply",
        store.to_str().unwrap(),
        file.to_str().unwrap(),
        "--yes",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn editor_mount_and_command_line_share_one_core() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::create_dir(store.join("people")).unwrap();
    std::fs::write(store.join("people/ann.dust"), "id    person/ann\ntype  person\nname  Ann\n")
        .unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let store = store.canonicalize().unwrap();
    let serve = Serve::mounted(&store, &mnt);
    let core_pid = record(&store).unwrap()["pid"].clone();
    // The mount says which store and which core's socket it belongs to (SPEC §14), so a
    // client that finds itself in the mount can attach to that core.
    // The core records itself before its mount is up: wait for the mount to show the file.
    let store_json = mnt.join(".stardust/store.json");
    wait_until("the mount shows store.json", || store_json.exists());
    let shown: Value = serde_json::from_slice(&std::fs::read(&store_json).unwrap()).unwrap();
    assert_eq!(shown["store"], store.display().to_string());
    assert_eq!(shown["pid"], core_pid);
    assert_eq!(shown["socket"], record(&store).unwrap()["socket"], "{shown}");
    assert!(shown["socket"].is_string(), "{shown}");
    let mut editor = attach(&store, "e2e-editor");

    // The command line goes through the core: the editor hears it, the mount shows it.
    let done = apply(&store, "ops [{create {id ?bo type person name Bo}}]\n");
    assert_eq!(done["resolved"]["?bo"], "person/bo");
    let heard = editor.wait(|m| m["method"] == "stardust/entitiesChanged");
    assert_eq!(heard["params"]["entities"], json!([{"id": "person/bo", "change": "created"}]));
    assert_eq!(heard["params"]["seq"], done["seq"]);
    let shown = std::fs::read_to_string(mnt.join("person/bo.dust")).unwrap();
    assert!(shown.contains("name  Bo"), "{shown}");

    // A save through the mount reaches the editor.
    std::fs::write(mnt.join("people/ann.dust"), "id    person/ann\ntype  person\nname  Anne\n")
        .unwrap();
    let heard = editor.wait(|m| {
        m["method"] == "stardust/documentsChanged"
            && m["params"]["documents"][0]["path"] == "people/ann.dust"
    });
    assert_eq!(heard["params"]["documents"][0]["change"], "changed");

    // One core: the editor's session, the mount and the history are all in its status.
    let status = editor.request(
        "workspace/executeCommand",
        json!({"command": "stardust.status", "arguments": [{}]}),
    );
    assert_eq!(status["mount"], mnt.canonicalize().unwrap().display().to_string());
    assert!(
        status["sessions"].as_array().unwrap().iter().any(|s| s["client"] == "e2e-editor"),
        "{status}"
    );
    let log = stardust(&["log", store.to_str().unwrap(), "--format", "json"]);
    let origins: Vec<String> = text(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["origin"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(origins, ["external", "sdk:cli", "mount"]);
    assert_eq!(record(&store).unwrap()["pid"], core_pid, "still the same core");

    drop(editor);
    let status = serve.stop();
    assert!(status.success(), "{status}");
    assert!(record(&store).is_none(), "the record is removed on stop");
    assert!(
        !std::fs::read_dir(&mnt).unwrap().any(|_| true),
        "unmounted: the folder is empty again"
    );
}

#[test]
fn attachers_start_one_core_which_stops_when_idle() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    // Two editors at the same moment, no core yet: both end up on one.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| attach(&store, "a"));
        let b = s.spawn(|| attach(&store, "b"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let mut a = a;
    let status = a.request(
        "workspace/executeCommand",
        json!({"command": "stardust.status", "arguments": [{}]}),
    );
    let mut clients: Vec<&str> = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["client"].as_str())
        .collect();
    clients.sort();
    assert_eq!(clients, ["a", "b"], "{status}");
    let pid = record(&store).unwrap()["pid"].as_u64().unwrap();
    drop(a);
    drop(b);
    // No client left: after STARDUST_IDLE_EXIT (2 s) the core goes, and says so.
    wait_until("the idle core has stopped", || !Path::new(&format!("/proc/{pid}")).exists());
    assert!(record(&store).is_none());
}

#[test]
fn a_stale_record_is_replaced() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(store.join(".stardust/run")).unwrap();
    // A record left by a core killed with -9: its process is gone.
    let gone = json!({"pid": 999_999_999u64, "socket": "/tmp/stardust-nowhere.sock"});
    std::fs::write(store.join(".stardust/run/daemon.json"), gone.to_string()).unwrap();
    let serve = Serve::start(&store);
    wait_until("the new core's record", || record(&store).is_some_and(|r| r["pid"] != gone["pid"]));
    let socket = PathBuf::from(record(&store).unwrap()["socket"].as_str().unwrap());
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the socket is private");
    // A second core for the same store is refused: the store is in use.
    let second = exe().arg("serve").arg(&store).output().unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(text(&second.stderr).contains("error[busy]"), "{}", text(&second.stderr));
    assert!(serve.stop().success());
}

#[test]
fn a_core_killed_with_9_is_replaced_and_nothing_is_lost() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let serve = Serve::start(&store);
    let mut editor = attach(&store, "e2e-editor");
    let done = apply(&store, "ops [{create {id ?bo type person name Bo}}]\n");
    editor.wait(|m| m["method"] == "stardust/entitiesChanged");
    let pid = serve.child.id().to_string();
    Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    // The editor's server relays the end of its connection: its output closes.
    let deadline = Instant::now() + TIMEOUT;
    while editor.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the attached lsp did not notice the core's death");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(serve);
    // The record is stale now; the next attacher starts a fresh core, which has the commit.
    let mut again = attach(&store, "e2e-editor");
    let got = again.request(
        "workspace/executeCommand",
        json!({"command": "stardust.entity.get", "arguments": [{"id": "person/bo"}]}),
    );
    assert_eq!(got["value"]["name"], "Bo");
    let status = again.request(
        "workspace/executeCommand",
        json!({"command": "stardust.status", "arguments": [{}]}),
    );
    assert_eq!(status["seq"], done["seq"], "{status}");
    assert_ne!(record(&store).unwrap()["pid"].to_string(), pid);
}

#[test]
fn a_wrong_protocol_on_the_socket_is_refused_and_the_core_goes_on() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let serve = Serve::start(&store);
    let socket = record(&store).unwrap()["socket"].as_str().unwrap().to_owned();
    for junk in
        ["GET / HTTP/1.1\r\n\r\n", "{\"stardust\": 99, \"front\": \"lsp\", \"client\": \"x\"}\n"]
    {
        let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        stream.write_all(junk.as_bytes()).unwrap();
        let mut answer = String::new();
        BufReader::new(stream).read_line(&mut answer).unwrap();
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["error"]["code"], "invalid-arguments", "{answer}");
    }
    // Hundreds of connections that come and go leave it serving.
    for _ in 0..300 {
        drop(std::os::unix::net::UnixStream::connect(&socket).unwrap());
    }
    let done = apply(&store, "ops [{create {id ?bo type person name Bo}}]\n");
    assert_eq!(done["resolved"]["?bo"], "person/bo");
    assert!(serve.stop().success());
}

/// Whether process `pid` runs (a zombie waiting to be reaped does not).
fn running(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.starts_with(" Z")))
}

#[test]
fn a_client_that_stops_reading_and_goes_away_lets_the_core_stop_when_idle() {
    let dir = util::library();
    let store = dir.path().canonicalize().unwrap();
    // Requests as fast as they go, answers never read: the core holds back and stops reading.
    let (mut child, last) = flood("lsp", &store, lsp_frame, util::lsp_symbol_requests());
    assert!(last < 20_002, "the core kept reading requests while its answers went unread");
    let pid = record(&store).unwrap()["pid"].as_u64().unwrap();
    assert!(running(pid));
    // The client goes with its requests unread and its answers unwritten.
    child.kill().unwrap();
    child.wait().unwrap();
    // Its session ends, so the core becomes idle and stops after STARDUST_IDLE_EXIT (2 s).
    wait_until("the core has stopped", || !running(pid));
    assert!(record(&store).is_none(), "the stopped core removed its record");
}

#[test]
fn an_agent_that_stops_reading_costs_bounded_memory_and_its_going_lets_the_core_stop() {
    let dir = util::library();
    let store = dir.path().canonicalize().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reads = (1..=20_000)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "resources/list", "params": {}}));
    let frame = |m: &Value| format!("{m}\n");
    let messages = [init, initialized].into_iter().chain(reads);
    let (mut child, last) = flood("mcp", &store, frame, messages);
    // Each answer is tens of KB: had the core kept reading, 20,000 would be gigabytes.
    assert!(last < 20_002, "the core kept reading requests while its answers went unread");
    let pid = record(&store).unwrap()["pid"].as_u64().unwrap();
    let peak = peak_rss_mb(pid);
    assert!(peak < 300, "the core's peak memory {peak} MB after {last} unread answers");
    assert!(running(pid));
    child.kill().unwrap();
    child.wait().unwrap();
    wait_until("the core has stopped", || !running(pid));
    assert!(record(&store).is_none(), "the stopped core removed its record");
}

/// Set (to the core's socket) in the copy of this test binary that plays the other user.
const PEER_SOCKET: &str = "STARDUST_TEST_PEER_SOCKET";
/// `nobody`.
const OTHER_UID: u32 = 65534;

/// The other user's side: connect as uid 65534, first with its own file access (the socket's
/// folder keeps it out), then with the owner's file access but still uid 65534 as the kernel
/// reports it to the core (SO_PEERCRED gives the effective uid, the folder checks the
/// filesystem uid), so the core's own check is what refuses it.
fn connect_as_another_uid(socket: &Path) {
    use nix::unistd::{Uid, seteuid, setfsuid};
    seteuid(Uid::from_raw(OTHER_UID)).unwrap();
    let err = std::os::unix::net::UnixStream::connect(socket).unwrap_err();
    println!("PEER folder {:?}", err.kind());
    setfsuid(Uid::from_raw(0));
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    writeln!(stream, "{}", json!({"stardust": 1, "front": "cli", "client": "intruder"})).unwrap();
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).unwrap();
    println!("PEER answer {}", answer.trim_end());
}

#[test]
fn a_peer_with_another_uid_is_refused() {
    if let Some(socket) = std::env::var_os(PEER_SOCKET) {
        return connect_as_another_uid(Path::new(&socket));
    }
    if !nix::unistd::getuid().is_root() {
        eprintln!("skipped: playing another user needs root");
        return;
    }
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let serve = Serve::start(&store);
    let socket = record(&store).unwrap()["socket"].as_str().unwrap().to_owned();
    let other = Command::new(std::env::current_exe().unwrap())
        .args(["a_peer_with_another_uid_is_refused", "--exact", "--nocapture", "--test-threads=1"])
        .env(PEER_SOCKET, &socket)
        .output()
        .unwrap();
    let said = text(&other.stdout);
    assert!(other.status.success(), "{said}{}", text(&other.stderr));
    let line = |prefix: &str| {
        said.lines()
            .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("{said}"))
    };
    // The first layer: the socket's folder (0700) and the socket (0600) are the owner's.
    assert_eq!(line("PEER folder "), "PermissionDenied");
    // The second: past the folder, the core checks the peer's uid and refuses it, typed.
    let answer: Value = serde_json::from_str(line("PEER answer ")).unwrap();
    assert_eq!(answer["error"]["code"], "refused", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("not uid {OTHER_UID}")), "{message}");
    // The owner is still served.
    let done = apply(&store, "ops [{create {id ?bo type person name Bo}}]\n");
    assert_eq!(done["resolved"]["?bo"], "person/bo");
    assert!(serve.stop().success());
}

#[test]
fn a_store_moved_while_served_stops_its_core_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().canonicalize().unwrap().join("store");
    std::fs::create_dir_all(old.join("people")).unwrap();
    std::fs::write(old.join("people/ann.dust"), "id    person/ann\ntype  person\nname  Ann\n")
        .unwrap();
    let mut serve = Serve::start(&old);
    let pid = record(&old).unwrap()["pid"].clone();
    let mut editor = attach(&old, "e2e-editor");
    let done = apply(&old, "ops [{create {id ?bo type person name Bo}}]\n");
    editor.wait(|m| m["method"] == "stardust/entitiesChanged");

    let new = old.with_file_name("moved");
    std::fs::rename(&old, &new).unwrap();
    // The core notices and stops as on SIGTERM; the editor's connection ends with it.
    wait_until("the core has stopped", || serve.child.try_wait().unwrap().is_some());
    assert!(serve.child.wait().unwrap().success());
    wait_until("the editor's server has ended", || editor.child.try_wait().unwrap().is_some());

    // Nothing is lost: at the new place the history is whole, and the next attacher starts
    // a core there (the moved record names a dead process) which has every commit.
    let log = stardust(&["log", new.to_str().unwrap(), "--format", "json"]);
    let seqs: Vec<u64> = text(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, done["seq"].as_u64().unwrap()], "{}", text(&log.stderr));
    let mut again = attach(&new, "e2e-editor");
    let got = again.request(
        "workspace/executeCommand",
        json!({"command": "stardust.entity.get", "arguments": [{"id": "person/bo"}]}),
    );
    assert_eq!(got["value"]["name"], "Bo");
    assert_ne!(record(&new).unwrap()["pid"], pid, "a new core serves the new place");
    let bo = apply(&new, "ops [{set {id person/bo name Bob}}]\n");
    assert!(bo["seq"].as_u64() > done["seq"].as_u64(), "{bo}");
}

/// A command-line connection straight on the socket: hello, then one request a line.
fn cli(
    socket: &str,
) -> (std::os::unix::net::UnixStream, BufReader<std::os::unix::net::UnixStream>) {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    writeln!(stream, "{}", json!({"stardust": 1, "front": "cli", "client": "counter"})).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    assert_eq!(answer.trim_end(), r#"{"ok":true}"#);
    (stream, reader)
}

fn sessions(
    cli: &mut (std::os::unix::net::UnixStream, BufReader<std::os::unix::net::UnixStream>),
) -> usize {
    writeln!(cli.0, "{}", json!({"command": "stardust.status", "arguments": {}})).unwrap();
    let mut answer = String::new();
    cli.1.read_line(&mut answer).unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    answer["result"]["sessions"].as_array().unwrap_or_else(|| panic!("{answer}")).len()
}

fn threads(pid: u64) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn hundreds_of_clients_connecting_and_dropping_leave_no_session_behind() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let mut core = exe()
        .arg("serve")
        .arg(&store)
        .args(["--idle-exit", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the core has written its record", || record(&store).is_some());
    let pid = record(&store).unwrap()["pid"].as_u64().unwrap();
    let socket = record(&store).unwrap()["socket"].as_str().unwrap().to_owned();
    let mut counter = cli(&socket);
    assert_eq!(sessions(&mut counter), 1);
    let baseline = threads(pid);

    // 300 clients of every front at once, some mid-request, then all gone together.
    let fronts = ["lsp", "sdk", "mcp", "cli"];
    let clients: Vec<_> = (0..300)
        .map(|i| {
            let front = fronts[i % fronts.len()];
            let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            let hello = json!({"stardust": 1, "front": front, "client": format!("c{i}")});
            writeln!(stream, "{hello}").unwrap();
            let mut answer = [0u8; 12];
            stream.read_exact(&mut answer).unwrap();
            assert_eq!(&answer, b"{\"ok\":true}\n");
            if i % 2 == 0 {
                // Half of them leave a request unfinished.
                stream.write_all(b"Content-Length: 100\r\n\r\n{\"jsonrpc\"").unwrap();
            }
            stream
        })
        .collect();
    // All of them at once cost a few MB each: with transparent huge pages the allocator's
    // per-thread heaps took 916 MB here.
    wait_until("every session has begun", || sessions(&mut counter) >= 76);
    let peak = peak_rss_mb(pid);
    assert!(peak < 400, "the core's peak memory with 300 clients is {peak} MB");
    drop(clients);
    // Every LSP, SDK and command-line session ends (MCP ones never began: no initialize).
    wait_until("the sessions have ended", || sessions(&mut counter) == 1);
    wait_until("their threads have ended", || threads(pid) <= baseline + 2);
    // Still serving, and once the last client goes the core is idle and stops.
    let done = apply(&store, "ops [{create {id ?bo type person name Bo}}]\n");
    assert_eq!(done["resolved"]["?bo"], "person/bo");
    drop(counter);
    wait_until("the idle core has stopped", || core.try_wait().unwrap().is_some());
    assert!(core.wait().unwrap().success());
}

#[test]
fn a_record_naming_a_live_process_that_is_no_core_is_replaced() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(store.join(".stardust/run")).unwrap();
    // This test's own process: alive, but not a core, and the socket answers nothing.
    let squatter = json!({"pid": std::process::id(), "socket": "/tmp/stardust-nowhere.sock"});
    std::fs::write(store.join(".stardust/run/daemon.json"), squatter.to_string()).unwrap();
    let mut editor = attach(&store, "e2e-editor");
    let status = editor.request(
        "workspace/executeCommand",
        json!({"command": "stardust.status", "arguments": [{}]}),
    );
    assert_eq!(status["documents"], 1, "{status}");
    let core = record(&store).unwrap();
    assert_ne!(core["pid"], squatter["pid"], "a core of its own replaced the record");
    assert_ne!(core["socket"], squatter["socket"]);
}

#[test]
fn a_store_copied_with_its_record_gets_its_own_core() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().canonicalize().unwrap().join("original");
    std::fs::create_dir_all(original.join("people")).unwrap();
    std::fs::write(original.join("people/ann.dust"), "id    person/ann\ntype  person\nname  Ann\n")
        .unwrap();
    let serve = Serve::start(&original);
    // Copied whole while served: the copy's record names the original's live core.
    let copy = original.with_file_name("copy");
    let cp = Command::new("cp").arg("-a").arg(&original).arg(&copy).status().unwrap();
    assert!(cp.success());
    assert_eq!(record(&copy), record(&original));

    // The copy's commits go to the copy, not through the original's core into the original.
    let done = apply(&copy, "ops [{create {id ?cy type person name Cy}}]\n");
    assert_eq!(done["resolved"]["?cy"], "person/cy");
    assert!(copy.join("person/cy.dust").exists());
    assert!(!original.join("person/cy.dust").exists(), "the original was not touched");
    // An editor of the copy gets a core of its own.
    let mut editor = attach(&copy, "e2e-editor");
    let status = editor.request(
        "workspace/executeCommand",
        json!({"command": "stardust.status", "arguments": [{}]}),
    );
    assert_eq!(status["store"], copy.display().to_string(), "{status}");
    assert_ne!(record(&copy).unwrap()["pid"], record(&original).unwrap()["pid"]);
    drop(editor);
    assert!(serve.stop().success());
}

/// The inode of the pipe behind `fd` in this process.
fn pipe_inode(fd: impl std::os::fd::AsFd) -> u64 {
    nix::sys::stat::fstat(fd).unwrap().st_ino
}

/// What descriptor `fd` of process `pid` is (`pipe:[INODE]`, a path, ...).
fn fd_link(pid: u64, fd: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .map_or_else(|e| format!("({e})"), |link| link.display().to_string())
}

/// Whether process `pid` holds the pipe `inode`.
fn holds_pipe(pid: u64, inode: u64) -> bool {
    let wanted = format!("pipe:[{inode}]");
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == &*wanted))
    })
}

#[test]
fn an_agents_pipes_are_served_by_the_core_and_released_when_the_agent_ends_or_goes() {
    use util::mcp::Mcp;
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let mut leaving = Mcp::open(&store, &[], "leaving");
    let mut killed = Mcp::open(&store, &[], "killed");
    let core = record(&store).unwrap()["pid"].as_u64().unwrap();
    for agent in [&mut leaving, &mut killed] {
        let status = agent.ok("server_status", json!({}));
        assert!(status["servers"].is_array(), "{status}");
        // The core reads the agent's own stdin pipe; `stardust mcp` holds neither end.
        let stdin = pipe_inode(agent.stdin.as_ref().unwrap());
        assert!(holds_pipe(core, stdin), "the core does not hold the agent's stdin pipe");
        let attacher = u64::from(agent.child.id());
        assert!(!holds_pipe(attacher, stdin), "stardust mcp still holds its stdin pipe");
        assert_eq!(fd_link(attacher, 0), "/dev/null");
        assert_eq!(fd_link(attacher, 1), "/dev/null");
    }
    // Killed: the core sees its socket hang up and ends the session, though the client still
    // holds its end of stdin; the client's stdout ends.
    let stdin = pipe_inode(killed.stdin.as_ref().unwrap());
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    wait_until("the core has released the killed agent's pipes", || !holds_pipe(core, stdin));
    let deadline = Instant::now() + TIMEOUT;
    while killed.next(deadline).is_some() {}
    assert!(Instant::now() < deadline, "the killed agent's stdout did not end");
    // Stdin closed: the session ends in the core, and `stardust mcp` exits 0.
    let stdin = pipe_inode(leaving.stdin.as_ref().unwrap());
    assert!(holds_pipe(core, stdin));
    assert!(leaving.close(), "stardust mcp did not exit 0 after its stdin closed");
    assert!(!holds_pipe(core, stdin), "the core kept the pipe of a session that ended");
    wait_until("the idle core has stopped", || !running(core));
}

#[test]
fn an_editor_killed_while_its_client_keeps_the_pipes_open_ends_its_session_in_the_core() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let mut editor = attach(&store, "killed-editor");
    let core = record(&store).unwrap()["pid"].as_u64().unwrap();
    let stdin = pipe_inode(&editor.stdin);
    assert!(holds_pipe(core, stdin), "the core does not hold the editor's stdin pipe");
    assert_eq!(fd_link(u64::from(editor.pid()), 0), "/dev/null");
    editor.child.kill().unwrap();
    editor.child.wait().unwrap();
    // The front's reader waits on a pipe the client still writes to: the session's end must
    // stop it, not the client.
    wait_until("the core has released the editor's pipes", || !holds_pipe(core, stdin));
    wait_until("the idle core has stopped", || !running(core));
}

#[test]
fn an_agent_whose_output_is_a_file_is_relayed_and_still_answered() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let out = dir.path().join("../answers.jsonl");
    let mut agent = exe()
        .args(["mcp", "--store"])
        .arg(&store)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = agent.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "file", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    let answers = || std::fs::read_to_string(&out).unwrap_or_default();
    wait_until("initialize is answered", || answers().lines().count() == 1);
    let core = record(&store).unwrap()["pid"].as_u64().unwrap();
    // Not passed (a file has no readiness to wait for): the relay holds the pipe.
    assert!(!holds_pipe(core, pipe_inode(&stdin)));
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .unwrap();
    let status = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "server_status", "arguments": {}}});
    writeln!(stdin, "{status}").unwrap();
    wait_until("server_status is answered", || answers().lines().count() == 2);
    let second: Value = serde_json::from_str(answers().lines().nth(1).unwrap()).unwrap();
    assert_eq!(second["id"], 2, "{second}");
    assert_eq!(second["result"]["isError"], false, "{second}");
    drop(stdin);
    assert!(agent.wait().unwrap().success());
}

/// `git clean -fdx` while a core serves the store deletes `.stardust/` (SPEC §24): the core
/// stays the store's only one, puts its private folder back with the whole history, and every
/// later attacher and command reaches it; two cores started at once: one wins, the other
/// names the serving pid.
#[test]
fn git_clean_while_serving_leaves_one_core_and_one_history() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(&store).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    git(&["init", "-q", "."]);
    let serve = Serve::start(&store);
    let pid = record(&store).unwrap()["pid"].as_u64().unwrap();
    // The private folder keeps itself out of git.
    assert_eq!(git(&["status", "--porcelain", "--untracked-files=all"]), "?? people/ann.dust\n");
    git(&["add", "-A"]);
    git(&["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "data"]);

    git(&["clean", "-fdxq"]);
    let first = apply(&store, "ops [{create {id ?bo type person name Bo}}]\n");
    // A second core is refused while the first serves: the lock is on the store's folder.
    let second = exe().arg("serve").arg(&store).output().unwrap();
    assert_eq!(second.status.code(), Some(1), "{}", text(&second.stderr));
    assert!(text(&second.stderr).contains("error[busy]"), "{}", text(&second.stderr));

    // An agent attaching now reaches the same core, and its commit continues the history.
    let mut agent = util::mcp::Mcp::open(&store, &["--allow-mutation"], "e2e-agent");
    let preview = agent
        .ok("entity_create", json!({"entities": [{"id": "?cy", "type": "person", "name": "Cy"}]}));
    let confirmed = agent.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    assert_eq!(confirmed["seq"], first["seq"].as_u64().unwrap() + 1, "{confirmed}");
    wait_until("the record is back", || {
        record(&store).is_some_and(|r| r["pid"].as_u64() == Some(pid))
    });
    let log = stardust(&["log", store.to_str().unwrap(), "--format", "json"]);
    let origins: Vec<String> = text(&log.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["origin"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(origins.len(), 3, "one history: {origins:?}");
    assert_eq!(origins[0], "external");
    assert!(origins[2].starts_with("mcp:"), "{origins:?}");
    drop(agent);
    assert!(serve.stop().success());
}

/// Two `serve` started at the same moment on one store (SPEC §24): one serves, the other
/// exits with `busy` naming the pid of the one that serves.
#[test]
fn two_serves_started_at_once_one_wins_and_the_other_names_it() {
    let dir = store();
    let store = dir.path().canonicalize().unwrap();
    let spawn = || {
        exe()
            .arg("serve")
            .arg(&store)
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut serves = [spawn(), spawn()];
    wait_until("one of the two has exited", || {
        serves.iter_mut().any(|s| s.try_wait().unwrap().is_some())
    });
    let (loser, winner) = match serves[0].try_wait().unwrap() {
        Some(_) => (0, 1),
        None => (1, 0),
    };
    let winner_pid = serves[winner].id();
    let mut stderr = String::new();
    serves[loser].stderr.as_mut().unwrap().read_to_string(&mut stderr).unwrap();
    let status = serves[loser].wait().unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[busy]"), "{stderr}");
    assert!(stderr.contains(&format!("process {winner_pid}")), "names the winner: {stderr}");
    assert!(serves[winner].try_wait().unwrap().is_none(), "the winner serves on");
    wait_until("the winner's record", || {
        record(&store).is_some_and(|r| r["pid"].as_u64() == Some(u64::from(winner_pid)))
    });
    Command::new("kill").args(["-TERM", &winner_pid.to_string()]).status().unwrap();
    assert!(serves[winner].wait().unwrap().success());
}

//! End-to-end tests of one core per store: `stardust serve` with the mount, an editor attached
//! through `stardust lsp`, and the command line, all real processes sharing one core.

mod util;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use util::{stardust, text};

const TIMEOUT: Duration = Duration::from_secs(30);

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

fn record(store: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(store.join(".stardust/run/daemon.json")).ok()?).ok()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `stardust serve`, stopped with SIGTERM when dropped.
struct Serve {
    child: Child,
}

impl Serve {
    fn start(store: &Path, mount: Option<&Path>) -> Serve {
        let mut command = exe();
        command.arg("serve").arg(store).stdout(Stdio::null()).stderr(Stdio::null());
        if let Some(dir) = mount {
            command.arg("--mount").arg(dir);
        }
        let serve = Serve { child: command.spawn().unwrap() };
        wait_until("the core has written its record", || record(store).is_some());
        serve
    }

    fn stop(mut self) -> std::process::ExitStatus {
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

/// A bare LSP client over `stardust lsp`'s standard input and output.
struct Editor {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
}

impl Editor {
    fn attach(store: &Path, name: &str) -> Editor {
        let mut child = exe()
            .arg("lsp")
            .arg("--store")
            .arg(store)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let (tx, incoming) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    match line.trim_end().strip_prefix("Content-Length: ") {
                        Some(n) => length = n.parse().unwrap(),
                        None if line.trim_end().is_empty() => break,
                        None => {}
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                if tx.send(serde_json::from_slice::<Value>(&body).unwrap()).is_err() {
                    return;
                }
            }
        });
        let mut editor = Editor { child, stdin, incoming, next_id: 1 };
        let notifications = json!(["documentsChanged", "entitiesChanged"]);
        editor.request(
            "initialize",
            json!({"capabilities": {"experimental": {"stardust": {"notifications": notifications}}},
                   "clientInfo": {"name": name}}),
        );
        editor.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        editor
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.wait(|m| m["id"] == id);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.incoming.recv_timeout(left).expect("a message before the timeout");
            if pred(&message) {
                return message;
            }
        }
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let serve = Serve::start(&store, Some(&mnt));
    let core_pid = record(&store).unwrap()["pid"].clone();
    let mut editor = Editor::attach(&store, "e2e-editor");

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
        let a = s.spawn(|| Editor::attach(&store, "a"));
        let b = s.spawn(|| Editor::attach(&store, "b"));
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
    let serve = Serve::start(&store, None);
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
    let serve = Serve::start(&store, None);
    let mut editor = Editor::attach(&store, "e2e-editor");
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
    let mut again = Editor::attach(&store, "e2e-editor");
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
    let serve = Serve::start(&store, None);
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
    let mut child = exe()
        .arg("lsp")
        .arg("--store")
        .arg(&store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Requests as fast as they go, answers never read: the core holds back and stops reading.
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    std::thread::spawn(move || {
        let mut send = |message: Value| {
            let body = message.to_string();
            stdin.write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes())
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}});
        let _ = send(init);
        let _ = send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        for id in 1..=20_000 {
            let symbols = json!({"jsonrpc": "2.0", "id": id, "method": "workspace/symbol", "params": {"query": ""}});
            if send(symbols).is_err() {
                return;
            }
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let (mut last, mut still) = (0, 0);
    while still < 20 {
        std::thread::sleep(Duration::from_millis(100));
        let now = sent.load(std::sync::atomic::Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    assert!(last < 20_000, "the core kept reading requests while its answers went unread");
    let pid = record(&store).unwrap()["pid"].as_u64().unwrap();
    assert!(running(pid));
    // The client goes with its requests unread and its answers unwritten.
    child.kill().unwrap();
    child.wait().unwrap();
    // Its session ends, so the core becomes idle and stops after STARDUST_IDLE_EXIT (2 s).
    wait_until("the core has stopped", || !running(pid));
    assert!(record(&store).is_none(), "the stopped core removed its record");
}

//! One LSP client for the end-to-end tests: Content-Length framed JSON-RPC to a real
//! `stardust lsp` (or any command), every message read on a thread into a channel.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

use serde_json::{Value, json};

/// A client speaking to one server process; killed when dropped.
/// The fields are open for tests that drive the pipes themselves.
pub struct Lsp {
    pub child: Child,
    pub stdin: ChildStdin,
    pub incoming: Receiver<Value>,
    /// Messages received while waiting for something else, in arrival order.
    pub pending: Vec<Value>,
    pub next_id: i64,
    /// Where the test's relative paths point (`uri`, `open`).
    pub root: PathBuf,
}

impl Lsp {
    /// `stardust lsp` started in `cwd` (with `--store` when `flag` is given); relative paths
    /// of the test are under `root`. A core it starts goes soon after its last client.
    pub fn start(root: &Path, cwd: &Path, flag: Option<&Path>) -> Lsp {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stardust"));
        command.arg("lsp").current_dir(cwd).env("STARDUST_IDLE_EXIT", "2").env_remove("RUST_LOG");
        if let Some(flag) = flag {
            command.arg("--store").arg(flag);
        }
        Lsp::spawn(&mut command, root)
    }

    /// `stardust lsp --store STORE` in the store, initialized with `capabilities`; the client
    /// and the `initialize` result.
    pub fn initialized(store: &Path, capabilities: Value) -> (Lsp, Value) {
        let mut lsp = Lsp::start(store, store, Some(store));
        let result = lsp
            .initialize(json!({"processId": null, "rootUri": null, "capabilities": capabilities}));
        (lsp, result)
    }

    /// Run `command` with piped stdio (stderr dropped) as the server.
    pub fn spawn(command: &mut Command, root: &Path) -> Lsp {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(body) = read_frame(&mut reader) {
                if tx.send(serde_json::from_slice(&body).expect("the server sends JSON")).is_err() {
                    return;
                }
            }
        });
        Lsp { child, stdin, incoming, pending: Vec::new(), next_id: 1, root: root.to_owned() }
    }

    /// `initialize` with `params`, then `initialized`; the result.
    pub fn initialize(&mut self, params: Value) -> Value {
        let result = self.request("initialize", params);
        self.notify("initialized", json!({}));
        result
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send_raw(&mut self, body: &[u8]) {
        self.stdin.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).unwrap();
        self.stdin.write_all(body).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The whole response (`result` or `error`) to a request.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|m| m["id"] == json!(id) && m.get("method").is_none())
    }

    /// The result of a request that must succeed.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// The whole response to `workspace/executeCommand` with one argument object.
    pub fn command(&mut self, name: &str, args: Value) -> Value {
        self.call("workspace/executeCommand", json!({"command": name, "arguments": [args]}))
    }

    /// The result of a command that must succeed.
    pub fn run(&mut self, name: &str, args: Value) -> Value {
        let response = self.command(name, args);
        assert!(response.get("error").is_none(), "{name} failed: {response}");
        response["result"].clone()
    }

    /// The first message, received already or within the tests' timeout, that `pred` accepts;
    /// the others are kept for later waits.
    pub fn wait(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Value {
        if let Some(i) = self.pending.iter().position(&mut pred) {
            return self.pending.remove(i);
        }
        let deadline = Instant::now() + super::TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(message) if pred(&message) => return message,
                Ok(message) => self.pending.push(message),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("timed out; received meanwhile: {:?}", self.pending)
                }
                Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
            }
        }
    }

    /// The params of the next notification `method`.
    pub fn notification(&mut self, method: &str) -> Value {
        self.wait(|m| m["method"] == method)["params"].clone()
    }

    /// The diagnostics published for `uri` at document `version`.
    pub fn published(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let message = self.wait(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == json!(version)
        });
        message["params"]["diagnostics"].as_array().unwrap().clone()
    }

    /// The `file:` URI of `rel` under the test's root.
    pub fn uri(&self, rel: &str) -> String {
        format!("file://{}", self.root.join(rel).display())
    }

    /// A `TextDocumentIdentifier` of `rel`.
    pub fn doc(&self, rel: &str) -> Value {
        json!({"uri": self.uri(rel)})
    }

    /// Open `rel` with `text` as version 1, with the `languageId` of its extension; its URI.
    pub fn open(&mut self, rel: &str, text: &str) -> String {
        let lang = match rel.rsplit_once('.').map(|(_, ext)| ext) {
            Some("dust") => "dust",
            Some("jsonc") => "jsonc",
            _ => "json",
        };
        self.open_as(rel, lang, text)
    }

    /// Open `rel` as `languageId` `lang` with `text` as version 1; its URI.
    pub fn open_as(&mut self, rel: &str, lang: &str, text: &str) -> String {
        let uri = self.uri(rel);
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": lang, "version": 1, "text": text}}),
        );
        uri
    }

    pub fn change(&mut self, uri: &str, version: i64, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        );
    }

    /// `shutdown` and `exit`; the server must exit with success.
    pub fn shutdown(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + super::TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "the server exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Lsp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One Content-Length framed message body; `None` at the end of the stream.
pub fn read_frame(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = Some(n.parse::<usize>().expect("a numeric Content-Length"));
        }
    }
    let mut body = vec![0; length.expect("a Content-Length header")];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

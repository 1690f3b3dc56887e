//! End-to-end: a client that sends every change as the whole text (SPEC §20). A burst of
//! whole-text `didChange`s is answered as its last one, pulled or pushed, by the real
//! `stardust lsp` over stdio on a copy of the sample library.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

mod util;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A minimal client: framed JSON-RPC out, every message in on a channel.
struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
}

impl Client {
    fn initialized(store: &Path, capabilities: Value) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_stardust"))
            .arg("lsp")
            .arg("--store")
            .arg(store)
            .current_dir(store)
            .env("STARDUST_IDLE_EXIT", "2")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the stardust binary starts");
        let stdin = child.stdin.take().unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let (tx, incoming) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut length = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        length = Some(n.parse::<usize>().unwrap());
                    }
                }
                let mut body = vec![0; length.expect("a Content-Length header")];
                reader.read_exact(&mut body).unwrap();
                if tx.send(serde_json::from_slice(&body).expect("the server sends JSON")).is_err() {
                    return;
                }
            }
        });
        let mut client = Client { child, stdin, incoming, next_id: 1 };
        let params = json!({"processId": null, "rootUri": null, "capabilities": capabilities});
        client.request("initialize", params);
        client.notify("initialized", json!({}));
        client
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message that `pred` accepts; the others are dropped.
    fn wait(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Value {
        loop {
            let message = self.incoming.recv_timeout(TIMEOUT).expect("the server answers");
            if pred(&message) {
                return message;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.wait(|m| m["id"] == json!(id) && m.get("method").is_none());
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An entity array of `n` books, book `bad` (if any) with a year that is not an integer.
fn books(n: usize, bad: Option<usize>) -> String {
    let item = |i: usize| {
        let year = if Some(i) == bad { "\"x\"".to_owned() } else { "1965".to_owned() };
        format!(
            "  {{\n    \"id\": \"book/list-{i}\",\n    \"type\": \"book\",\n    \"title\": \"T{i}\",\n    \"author\": \"@person/frank-herbert\",\n    \"year\": {year},\n    \"status\": \"draft\"\n  }}"
        )
    };
    format!("[\n{}\n]\n", (0..n).map(item).collect::<Vec<_>>().join(",\r\n"))
}

/// The line of the `"x"` year in `text`, as the diagnostics name it.
fn bad_line(text: &str) -> usize {
    text[..text.find("\"x\"").unwrap()].matches('\n').count()
}

/// The (code, start line) of each diagnostic.
fn found(diagnostics: &Value) -> Vec<(String, u64)> {
    let list = diagnostics.as_array().unwrap().iter();
    list.map(|d| {
        (d["code"].as_str().unwrap().to_owned(), d["range"]["start"]["line"].as_u64().unwrap())
    })
    .collect()
}

/// 100 whole texts, each with another book's year wrong (and every other one with none),
/// sent without waiting; then the version after them.
fn burst(client: &mut Client, uri: &str) -> String {
    for version in 2..=101 {
        let bad = (version % 2 == 0).then_some(version as usize % 40);
        let text = books(40, bad);
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }
    books(40, Some(7))
}

#[test]
fn a_burst_of_whole_texts_is_pulled_as_its_last() {
    let tmp = util::library();
    let mut client = Client::initialized(tmp.path(), json!({"textDocument": {"diagnostic": {}}}));
    let uri = format!("file://{}", tmp.path().join("books/list.json").display());
    let text = books(40, None);
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), []);

    let last = burst(&mut client, &uri);
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 102}, "contentChanges": [{"text": last}]}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), [("schema".to_owned(), bad_line(&last) as u64)]);

    // And a range edit after the burst applies to its last text: repair the year.
    let line = bad_line(&last);
    let column = last.lines().nth(line).unwrap().find("\"x\"").unwrap();
    let range = json!({"start": {"line": line, "character": column}, "end": {"line": line, "character": column + 3}});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 103}, "contentChanges": [{"range": range, "text": "1966"}]}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), []);
}

#[test]
fn a_burst_of_whole_texts_is_published_as_its_last() {
    let tmp = util::library();
    let mut client = Client::initialized(tmp.path(), json!({}));
    let uri = format!("file://{}", tmp.path().join("books/list.json").display());
    let text = books(40, None);
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}}),
    );
    let last = burst(&mut client, &uri);
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 102}, "contentChanges": [{"text": last}]}),
    );
    // Publications come in version order, and the last names the last text.
    let mut seen = 0;
    let published = client.wait(|m| {
        if m["method"] != "textDocument/publishDiagnostics" || m["params"]["uri"] != uri {
            return false;
        }
        let version = m["params"]["version"].as_i64().unwrap();
        assert!(version > seen, "version {version} published after {seen}");
        seen = version;
        version == 102
    });
    assert_eq!(
        found(&published["params"]["diagnostics"]),
        [("schema".to_owned(), bad_line(&last) as u64)]
    );
}

//! End-to-end tests of the MCP wire with the real binary: raw JSON-RPC lines on `stardust
//! mcp`'s standard input (relayed to the store's core over its socket) and raw HTTP to
//! `stardust mcp --mcp-http`. Input that is not a message gets the JSON-RPC 2.0 error it
//! calls for, with an `id` member always, and the connection stays usable.

mod util;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;

use serde_json::{Value, json};
use util::TIMEOUT;

/// `stardust mcp --store STORE` spoken to line by line.
struct Wire {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: Receiver<String>,
}

impl Wire {
    fn start(store: &std::path::Path) -> Wire {
        let mut child = util::front("mcp", store, &[]);
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Wire { child, stdin, lines }
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the server writes, which must be one JSON-RPC 2.0 message.
    fn next(&mut self, after: &str) -> Value {
        let line = self
            .lines
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|_| panic!("no answer to {after:?} (the server said nothing)"));
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("stdout carried a line that is not JSON: {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// Send `line` and take its answer.
    fn answer(&mut self, line: &str) -> Value {
        self.send(line);
        self.next(line)
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The error of a JSON-RPC answer, checking that it carries an `id` member equal to `id`.
fn error_with_id(answer: &Value, id: Value) -> i64 {
    let object = answer.as_object().unwrap();
    assert!(object.contains_key("id"), "an error answer without an id member: {answer}");
    assert_eq!(answer["id"], id, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("{answer}"));
    assert!(!message.is_empty(), "{answer}");
    answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("{answer}"))
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wire-probe","version":"1"}}}"#;

#[test]
fn unusable_lines_on_stdio_get_json_rpc_errors_and_the_session_goes_on() {
    let tmp = util::library();
    let mut wire = Wire::start(tmp.path());
    let init = wire.answer(INITIALIZE);
    assert_eq!(init["result"]["serverInfo"]["name"], "stardust", "{init}");
    wire.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    // Not JSON at all: Parse error, "id": null.
    for line in ["this is not json", r#"{"jsonrpc":"2.0","id":2,"method":"#] {
        assert_eq!(error_with_id(&wire.answer(line), Value::Null), -32700, "{line}");
    }
    // JSON that is not a message: Invalid Request, with the id when one is readable.
    let cases = [
        ("[]", Value::Null),
        ("42", Value::Null),
        (r#"{"jsonrpc":"2.0","id":7}"#, json!(7)),
        (r#"{"jsonrpc":"2.0","id":"eight"}"#, json!("eight")),
        (r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#, json!(9)),
    ];
    for (line, id) in cases {
        assert_eq!(error_with_id(&wire.answer(line), id), -32600, "{line}");
    }
    // The session is as usable as before: a ping, then a tool call.
    let pong = wire.answer(r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#);
    assert_eq!((&pong["id"], pong.get("error")), (&json!(10), None), "{pong}");
    let call = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "entity_get", "arguments": {"id": "book/dune"}}});
    let got = wire.answer(&call.to_string());
    assert_eq!(got["id"], 11, "{got}");
    assert_eq!(got["result"]["structuredContent"]["path"], "books/dune.dust", "{got}");
    // A notification is never answered, even a malformed one: the next answer is the ping's.
    wire.send(r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#);
    let pong = wire.answer(r#"{"jsonrpc":"2.0","id":12,"method":"ping"}"#);
    assert_eq!(pong["id"], 12, "{pong}");
}

#[test]
fn unusable_http_bodies_get_400_with_a_json_rpc_error() {
    let tmp = util::library();
    let mut child = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(["mcp", "--mcp-http", "127.0.0.1:0", "--store"])
        .arg(tmp.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let port = util::mcp_http_port(&mut stderr);
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));

    let cases = [
        ("this is not json", Value::Null, -32700),
        ("", Value::Null, -32700),
        ("[]", Value::Null, -32600),
        ("42", Value::Null, -32600),
        (r#"{"jsonrpc":"2.0","id":7}"#, json!(7), -32600),
    ];
    for (body, id, code) in cases {
        let (status, headers, text) = util::http_post(port, &[], body);
        assert_eq!(status, 400, "{body:?}: {text}");
        let content_type = headers.iter().find(|(k, _)| k == "content-type").map(|(_, v)| v);
        assert_eq!(content_type.map(String::as_str), Some("application/json"), "{body:?}");
        let answer: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{body:?}: the body is not JSON: {text}"));
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(error_with_id(&answer, id), code, "{body:?}: {answer}");
    }
    // The server goes on serving, and its other answers are rmcp's as before: a body that
    // does not say it is JSON is still 415.
    let (status, headers, body) = util::http_post(port, &[], INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(headers.iter().any(|(k, _)| k == "mcp-session-id"), "{headers:?}");
    assert!(body.contains("\"serverInfo\""), "{body}");
    let (status, _, _) = util::http_post(port, &[("Content-Type", "text/plain")], "[]");
    assert_eq!(status, 415);
    let _ = child.kill();
    let _ = child.wait();
}

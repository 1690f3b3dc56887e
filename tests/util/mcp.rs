//! One MCP client for the end-to-end tests: newline-delimited JSON-RPC to a real
//! `stardust mcp`, every line read on a thread; a line on stdout that is not JSON-RPC fails
//! the test.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A client speaking to one server process.
pub struct Mcp {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub incoming: Receiver<Result<Value, String>>,
    /// Notifications received while waiting for a response.
    pub notifications: Vec<Value>,
    pub next_id: i64,
}

impl Mcp {
    pub fn start(store: &Path, flags: &[&str]) -> Mcp {
        // A core started for the test goes soon after its last client.
        let mut child = super::front("mcp", store, flags);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let message = serde_json::from_str::<Value>(&line)
                    .ok()
                    .filter(|v| v["jsonrpc"] == "2.0")
                    .ok_or_else(|| format!("stdout carried a line that is not JSON-RPC: {line}"));
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Mcp { child, stdin, incoming: rx, notifications: Vec::new(), next_id: 1 }
    }

    /// Start and initialize as client `name`.
    pub fn open(store: &Path, flags: &[&str], name: &str) -> Mcp {
        let mut mcp = Mcp::start(store, flags);
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": name, "version": "1.0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "stardust", "{init}");
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    pub fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string());
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn next(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.incoming.recv_timeout(left) {
            Ok(Ok(message)) => Some(message),
            Ok(Err(bad)) => panic!("{bad}"),
            Err(_) => None,
        }
    }

    /// Send a request and wait for its response (the whole JSON-RPC message).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let message = self.next(deadline).unwrap_or_else(|| panic!("no answer to {method}"));
            if message["id"] == id {
                return message;
            }
            self.notifications.push(message);
        }
    }

    /// Call a tool; the `result` of the response.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": args}));
        response.get("result").cloned().unwrap_or_else(|| panic!("{tool}: {response}"))
    }

    /// Call a tool that must succeed; its structured content.
    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// Call a tool that must fail; its error object (see [`tool_error`]).
    pub fn fail(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args);
        assert_eq!(result["isError"], true, "{tool} should fail: {result}");
        tool_error(&result)
    }

    pub fn tool_names(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({}));
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Wait for a notification `method`; notifications already received count.
    pub fn notification(&mut self, method: &str, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        while let Some(message) = self.next(deadline) {
            self.notifications.push(message);
        }
        self.notifications.iter().filter(|n| n["method"] == method).cloned().collect()
    }

    /// Close stdin and wait for the process to exit; its success.
    pub fn close(mut self) -> bool {
        drop(self.stdin.take());
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            assert!(Instant::now() < deadline, "the server did not exit after stdin closed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The error object of a tool error as SPEC §13 has every host read it: `isError`, no
/// `structuredContent`, the summary `error[<code>]: ...` first, and the JSON text
/// `{"error": {code, message, ...}}` in the content.
pub fn tool_error(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "not a tool error: {result}");
    assert!(
        result.get("structuredContent").is_none(),
        "an error has no structured content: {result}"
    );
    let texts: Vec<&str> =
        result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    let error = texts
        .iter()
        .find_map(|t| serde_json::from_str::<Value>(t).ok().filter(|v| v["error"].is_object()))
        .unwrap_or_else(|| panic!("no error object in the content: {result}"))["error"]
        .clone();
    let code = error["code"].as_str().unwrap();
    assert!(texts[0].starts_with(&format!("error[{code}]: ")), "{result}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{result}");
    error
}

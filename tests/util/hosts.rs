//! MCP hosts built on the official SDKs' own clients (tests/clients/): the TypeScript SDK's,
//! which the MCP Inspector, Claude Code and most editor agents use, and the Python SDK's, 1.x
//! and 2.x. Each host starts `stardust mcp` itself, lists the tools (so that its SDK checks
//! every answer against the tool's `outputSchema`, as real hosts do) and runs the calls the
//! test sends it, one JSON line each. scripts/test installs the SDKs (`npm ci` and two
//! virtual environments in tests/clients/).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// How long one call may take (a language server's first answer included).
const TIMEOUT: Duration = Duration::from_secs(120);

/// An SDK whose client a host is built on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sdk {
    /// `@modelcontextprotocol/sdk` from npm (tests/clients/package-lock.json).
    TypeScript,
    /// `mcp` 1.x from PyPI (tests/clients/requirements-mcp1.txt).
    Python1,
    /// `mcp` 2.x from PyPI (tests/clients/requirements-mcp2.txt).
    Python2,
}

impl Sdk {
    pub const ALL: [Sdk; 3] = [Sdk::TypeScript, Sdk::Python1, Sdk::Python2];

    fn dir() -> PathBuf {
        super::repo().join("tests/clients")
    }

    /// The host program and its first arguments.
    fn command(self) -> Command {
        let dir = Sdk::dir();
        let (program, script, installed) = match self {
            Sdk::TypeScript => {
                ("node".into(), "host.mjs", dir.join("node_modules/@modelcontextprotocol/sdk"))
            }
            Sdk::Python1 => {
                (dir.join(".venv-mcp1/bin/python"), "host.py", dir.join(".venv-mcp1/bin/python"))
            }
            Sdk::Python2 => {
                (dir.join(".venv-mcp2/bin/python"), "host.py", dir.join(".venv-mcp2/bin/python"))
            }
        };
        assert!(
            installed.exists(),
            "{} is missing: run scripts/test, which installs the MCP SDKs in tests/clients/",
            installed.display()
        );
        let mut command = Command::new::<PathBuf>(program);
        command.arg(dir.join(script)).current_dir(dir);
        command
    }
}

/// A host running `stardust mcp` for one store.
pub struct Host {
    pub sdk: Sdk,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    /// The tool list the host read at its start.
    pub tools: Vec<Value>,
}

impl Host {
    /// Start a host of `sdk`, named `client`, on `stardust mcp --store STORE FLAGS`, with `env`
    /// set for it and for the server (and the core the server starts).
    pub fn start(
        sdk: Sdk,
        client: &str,
        store: &Path,
        flags: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Host {
        let mut command = sdk.command();
        command
            .arg(client)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_stardust"))
            .args(["mcp", "--store"])
            .arg(store)
            .args(flags)
            .env("STARDUST_IDLE_EXIT", "2")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("the MCP host starts");
        let stdin = child.stdin.take();
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
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let collected = stderr.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buffer) {
                if n == 0 {
                    return;
                }
                collected.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        let mut host = Host { sdk, child, stdin, lines, stderr, tools: Vec::new() };
        let ready = host.read_line("the host's start");
        assert_eq!(ready["ready"], true, "{:?}: {ready}", sdk);
        assert_eq!(ready["server"]["name"], "stardust", "{ready}");
        host.tools = ready["tools"].as_array().cloned().unwrap_or_default();
        host
    }

    fn read_line(&mut self, what: &str) -> Value {
        match self.lines.recv_timeout(TIMEOUT) {
            Ok(line) => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{:?} host wrote {line:?} ({e}) for {what}", self.sdk)),
            Err(_) => panic!(
                "{:?} host gave no answer for {what}; its stderr:\n{}",
                self.sdk,
                self.stderr.lock().unwrap()
            ),
        }
    }

    fn request(&mut self, request: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("the host's input is open");
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        self.read_line(&request.to_string())
    }

    /// Call a tool through the SDK: `Ok(CallToolResult)`, or `Err(what the SDK threw)`.
    pub fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        let answer = self.request(json!({"op": "call", "tool": tool, "arguments": args}));
        if answer["ok"] == true {
            Ok(answer["result"].clone())
        } else {
            Err(answer["thrown"].as_str().unwrap_or_default().to_owned())
        }
    }

    /// Call a tool that must succeed, its answer accepted by the SDK (checked against the
    /// tool's `outputSchema`): its structured content.
    pub fn ok(&mut self, tool: &str, args: Value) -> Value {
        let sdk = self.sdk;
        let result = self
            .call(tool, args.clone())
            .unwrap_or_else(|e| panic!("{sdk:?} SDK threw on {tool} {args}: {e}"));
        assert_ne!(result["isError"], true, "{sdk:?}: {tool} {args} failed: {result}");
        assert!(result["structuredContent"].is_object(), "{sdk:?}: {tool}: {result}");
        result["structuredContent"].clone()
    }

    /// Call a tool that must fail with a tool error the SDK passes on intact: its error
    /// object, read from the content as SPEC §13 has every host read it.
    pub fn fail(&mut self, tool: &str, args: Value) -> Value {
        let sdk = self.sdk;
        let result = self.call(tool, args.clone()).unwrap_or_else(|e| {
            panic!("{sdk:?} SDK threw on {tool} {args} instead of answering the tool error: {e}")
        });
        super::mcp::tool_error(&result)
    }

    /// Call a tool that must fail with `code`: its error object.
    pub fn fail_with(&mut self, code: &str, tool: &str, args: Value) -> Value {
        let error = self.fail(tool, args.clone());
        assert_eq!(error["code"], code, "{:?}: {tool} {args}: {error}", self.sdk);
        error
    }

    /// The tool list, read again.
    pub fn list(&mut self) -> Vec<Value> {
        let answer = self.request(json!({"op": "list"}));
        assert_eq!(answer["ok"], true, "{answer}");
        answer["tools"].as_array().cloned().unwrap_or_default()
    }

    /// What the host (and the server under it) wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // Closing its input ends the host, which closes the server's.
        drop(self.stdin.take());
        for _ in 0..100 {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

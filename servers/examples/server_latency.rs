//! Hover latency through a supervised `LanguageServer` against the same requests sent to the
//! same server directly (no supervisor, a bare client on its stdio): the client's own cost.
//! Run by hand (docs/BENCHMARKS.md), e.g. with pyright:
//!
//! ```text
//! cargo build -p stardust-servers --bins --examples
//! target/debug/examples/server_latency target/debug/stardust-supervisor \
//!     "$(which pyright-langserver)" 500
//! ```

use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stardust_servers::frame::{read_frame, write_frame};
use stardust_servers::{LanguageServer, ServerSpec, SupervisorProgram};

const TEXT: &str = "def greet(name: str) -> str:\n    return name\n\ncount = greet(\"x\")\n";

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    format!("p50 {:?}  p95 {:?}  (n = {})", at(0.5), at(0.95), samples.len())
}

fn hover(uri: &str) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 9}})
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let supervisor = PathBuf::from(&args[0]).canonicalize().expect("the supervisor executable");
    let command = PathBuf::from(&args[1]).canonicalize().expect("the server executable");
    let n: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("app.py");
    std::fs::write(&file, TEXT).unwrap();
    let uri = stardust_core::ide::file_uri(&file);

    // Through the supervised client.
    let mut spec = ServerSpec::new("bench", &command, &root);
    spec.args = vec!["--stdio".into()];
    spec.languages.insert("py".into(), "python".into());
    let server = LanguageServer::new(spec, SupervisorProgram::standalone(&supervisor));
    let cold = Instant::now();
    server.open(&file, TEXT).unwrap();
    server.request("textDocument/hover", hover(&uri), None).unwrap();
    let cold = cold.elapsed();
    let samples: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            server.request("textDocument/hover", hover(&uri), None).unwrap();
            t.elapsed()
        })
        .collect();
    println!("supervised: first hover {cold:?} after start; then {}", percentiles(samples));
    server.shutdown();

    // Directly: the server on our stdio, one request at a time.
    let mut child = Command::new(&command)
        .arg("--stdio")
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut next = 0;
    let mut call = |input: &mut std::process::ChildStdin, method: &str, params: Value| -> Value {
        next += 1;
        write_frame(
            input,
            &json!({"jsonrpc": "2.0", "id": next, "method": method, "params": params}),
        )
        .unwrap();
        loop {
            let message = read_frame(&mut output).ok().unwrap().unwrap();
            if message.get("id") == Some(&json!(next)) && message.get("method").is_none() {
                return message;
            }
            if let (Some(id), Some(_)) = (message.get("id"), message.get("method")) {
                // Answer the server's own requests (configuration, progress) with null.
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": null});
                write_frame(input, &answer).unwrap();
            }
        }
    };
    let cold = Instant::now();
    let root_uri = stardust_core::ide::file_uri(&root);
    call(
        &mut input,
        "initialize",
        json!({"processId": null, "rootUri": root_uri, "capabilities": {}}),
    );
    write_frame(&mut input, &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .unwrap();
    write_frame(
        &mut input,
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": TEXT}}}),
    )
    .unwrap();
    call(&mut input, "textDocument/hover", hover(&uri));
    let cold = cold.elapsed();
    let samples: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            call(&mut input, "textDocument/hover", hover(&uri));
            t.elapsed()
        })
        .collect();
    println!("direct:     first hover {cold:?} after start; then {}", percentiles(samples));
    let _ = input.flush();
    drop(input);
    let _ = child.kill();
    let _ = child.wait();
}

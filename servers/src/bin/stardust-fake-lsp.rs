//! A language server that misbehaves on request, for the fault and reaping tests of
//! stardust-servers. Driven by arguments only (a supervised server gets a scrubbed
//! environment):
//!
//! - `--exit-at-once`: exits with code 1 before reading anything;
//! - `--no-initialize`: never answers `initialize`;
//! - `--garbage`: answers `initialize` with bytes that are not LSP frames;
//! - `--hang-on-shutdown`: never answers `shutdown`, ignores `exit` and blocks SIGTERM;
//! - `--leak PIDFILE`: leaves a daemon grandchild (double fork + `setsid`) that sleeps for an
//!   hour and writes its pid to PIDFILE;
//! - `--progress-at-start MS`: reports `$/progress` work for MS milliseconds after `initialized`;
//! - `--indexing-forever`: begins `$/progress` work after `initialized` and never ends it;
//! - `--stall-after-initialized MS`: after `initialized`, reads and says nothing for MS
//!   milliseconds (a server busy with work it does not report, as pyright running the
//!   interpreter to find its search paths);
//! - `--crash-after MS`: exits with code 3 MS milliseconds after `initialized` (a crash while
//!   warming up);
//! - `--pid-log FILE`: appends its pid and a newline to FILE when it starts (how many started);
//! - `--encodings a,b`: the position encodings it supports (default `utf-16`).
//! - `--open-log FILE`: appends the URI of each document it is given (`didOpen`) and a
//!   newline to FILE (which file a warm-up opened);
//! - `--publish-on-change`: publishes empty diagnostics at the document's version for each
//!   `didOpen` and `didChange` (a server that checks what it is given);
//! - `--rename-waits-for-references`: answers `textDocument/rename` (the first word of the
//!   document replaced by `newName`) only once a `textDocument/references` request has come
//!   too: a client that asks them one after the other gets no rename.
//!
//! Requests besides the lifecycle: `textDocument/references` (the first character of the
//! document asked about), `textDocument/hover` (echoes the document's version and
//! text length; never answers when the document's text contains `fake:hang-on-hover`, exits
//! with code 3 when it contains `fake:crash-on-hover`, answers RequestCancelled (-32800) for
//! `fake:cancel-on-hover` and InternalError (-32603) for `fake:fail-on-hover`: faults a client
//! reaches through the ordinary tools, as the core's MCP tests do), `fake/state` (documents, cancelled ids, pid and process group),
//! `fake/ask {method, params}` (asks the client and answers with the client's answer),
//! `fake/slow {ms}`, `fake/never`, `fake/modified {key, times}` (ContentModified to the first `times`
//! requests with that key), `fake/server-cancelled {key, times}`, `fake/crash` (exit 3 at once), `fake/close-stdout`
//! (closes its output and keeps running), `fake/flood {count, uri}`,
//! `fake/progress {token, kind}` (`create`: only announces the token; `begin`: announces and
//! begins it; else ends it), `fake/publish {uri, diagnostics}`.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use stardust_servers::frame::{read_frame, write_frame};

type Out = Arc<Mutex<Option<std::io::Stdout>>>;

fn send(out: &Out, message: Value) {
    if let Some(stdout) = out.lock().unwrap().as_mut() {
        let _ = write_frame(stdout, &message);
    }
}

fn publish_empty(out: &Out, uri: &Value, version: &Value) {
    send(
        out,
        json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
               "params": {"uri": uri, "version": version, "diagnostics": []}}),
    );
}

fn arg_value(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pidfile) = arg_value(&args, "--daemon-parent") {
        // The middle of the double fork: start the daemon and exit, orphaning it.
        let exe = std::env::current_exe().unwrap();
        let _ = Command::new(exe)
            .args(["--daemon", &pidfile])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        return;
    }
    if let Some(pidfile) = arg_value(&args, "--daemon") {
        let _ = nix::unistd::setsid();
        std::fs::write(format!("{pidfile}.tmp"), std::process::id().to_string()).unwrap();
        std::fs::rename(format!("{pidfile}.tmp"), &pidfile).unwrap();
        std::thread::sleep(Duration::from_secs(3600));
        return;
    }
    let flag = |name: &str| args.iter().any(|a| a == name);
    if flag("--exit-at-once") {
        eprintln!("fake-lsp: exiting at once as asked");
        std::process::exit(1);
    }
    if flag("--hang-on-shutdown") {
        let mut term = nix::sys::signal::SigSet::empty();
        term.add(nix::sys::signal::Signal::SIGTERM);
        term.thread_block().unwrap();
    }
    if let Some(pidfile) = arg_value(&args, "--leak") {
        let exe = std::env::current_exe().unwrap();
        let mut middle = Command::new(exe)
            .args(["--daemon-parent", &pidfile])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        middle.wait().unwrap();
        for _ in 0..500 {
            if std::path::Path::new(&pidfile).exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    eprintln!("fake-lsp: started with {args:?}");
    if let Some(log) = arg_value(&args, "--pid-log") {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        writeln!(file, "{}", std::process::id()).unwrap();
    }
    let crash_after: Option<u64> = arg_value(&args, "--crash-after").and_then(|v| v.parse().ok());
    let encodings: Vec<String> = arg_value(&args, "--encodings")
        .unwrap_or_else(|| "utf-16".into())
        .split(',')
        .map(str::to_owned)
        .collect();
    let progress_ms: Option<u64> =
        arg_value(&args, "--progress-at-start").and_then(|v| v.parse().ok());

    let out: Out = Arc::new(Mutex::new(Some(std::io::stdout())));
    let mut input = BufReader::new(std::io::stdin());
    let mut documents: BTreeMap<String, Value> = BTreeMap::new();
    let mut cancelled: Vec<Value> = Vec::new();
    let mut notifications: Vec<String> = Vec::new();
    let mut initialize_params = Value::Null;
    let mut configuration_at_start = Value::Null;
    // Our requests to the client: our id -> the client's request id we answer with its answer.
    let mut asked: BTreeMap<i64, Value> = BTreeMap::new();
    let next_ask = AtomicU64::new(1000);
    let mut refusals: BTreeMap<String, i64> = BTreeMap::new();
    let open_log = arg_value(&args, "--open-log");
    // A rename held until references are asked (`--rename-waits-for-references`): its id and
    // its answer.
    let mut held_rename: Option<(Value, Value)> = None;
    let mut references_asked = false;

    loop {
        let message = match read_frame(&mut input) {
            Ok(Ok(m)) => m,
            Ok(Err(_)) => continue,
            Err(_) => {
                eprintln!("fake-lsp: input ended");
                std::process::exit(0);
            }
        };
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(method) = method else {
            // An answer from the client to one of our requests.
            let Some(ours) = id.as_ref().and_then(Value::as_i64) else { continue };
            let answer = message
                .get("result")
                .cloned()
                .unwrap_or_else(|| json!({"error": message.get("error")}));
            if ours == 1 {
                configuration_at_start = answer;
            } else if let Some(client_id) = asked.remove(&ours) {
                send(&out, json!({"jsonrpc": "2.0", "id": client_id, "result": answer}));
            }
            continue;
        };
        let reply = |result: Value| {
            if let Some(id) = &id {
                send(&out, json!({"jsonrpc": "2.0", "id": id, "result": result}));
            }
        };
        let reply_error = |code: i64, text: &str| {
            if let Some(id) = &id {
                send(
                    &out,
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}}),
                );
            }
        };
        if id.is_none() {
            notifications.push(method.clone());
        }
        match method.as_str() {
            "initialize" => {
                if flag("--no-initialize") {
                    continue;
                }
                if flag("--garbage") {
                    let mut lock = out.lock().unwrap();
                    let stdout = lock.as_mut().unwrap();
                    let _ = stdout.write_all(b"this is not a language server\r\n\r\n{}");
                    let _ = stdout.flush();
                    continue;
                }
                let offered: Vec<String> = params
                    .pointer("/capabilities/general/positionEncodings")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default();
                let chosen = offered.iter().find(|e| encodings.contains(e)).cloned();
                initialize_params = params.clone();
                let mut capabilities = json!({
                    "textDocumentSync": {"openClose": true, "change": 2},
                    "hoverProvider": true,
                });
                if let Some(chosen) = chosen {
                    capabilities["positionEncoding"] = json!(chosen);
                }
                reply(json!({"capabilities": capabilities, "serverInfo": {"name": "fake-lsp"}}));
            }
            "initialized" => {
                send(
                    &out,
                    json!({"jsonrpc": "2.0", "id": 1, "method": "workspace/configuration",
                           "params": {"items": [{"section": "fake"}, {}]}}),
                );
                let stall = arg_value(&args, "--stall-after-initialized");
                if let Some(ms) = stall.and_then(|v| v.parse::<u64>().ok()) {
                    std::thread::sleep(Duration::from_millis(ms));
                }
                if let Some(ms) = crash_after {
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(ms));
                        eprintln!("fake-lsp: crashing while warming up, as asked");
                        std::process::exit(3);
                    });
                }
                if flag("--indexing-forever") {
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "id": 2, "method": "window/workDoneProgress/create", "params": {"token": "forever"}}),
                    );
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "forever", "value": {"kind": "begin", "title": "indexing forever"}}}),
                    );
                }
                if let Some(ms) = progress_ms {
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "id": 2, "method": "window/workDoneProgress/create", "params": {"token": "start"}}),
                    );
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "start", "value": {"kind": "begin", "title": "indexing the fake"}}}),
                    );
                    let out = out.clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(ms));
                        send(
                            &out,
                            json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "start", "value": {"kind": "end"}}}),
                        );
                    });
                }
            }
            "shutdown" => {
                if !flag("--hang-on-shutdown") {
                    reply(Value::Null);
                }
            }
            "exit" => {
                if !flag("--hang-on-shutdown") {
                    std::process::exit(0);
                }
            }
            "$/cancelRequest" => cancelled.push(params.get("id").cloned().unwrap_or(Value::Null)),
            "textDocument/didOpen" => {
                let doc = &params["textDocument"];
                if let Some(log) = &open_log {
                    let mut file =
                        std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
                    writeln!(file, "{}", doc["uri"].as_str().unwrap_or("")).unwrap();
                }
                if flag("--publish-on-change") {
                    publish_empty(&out, &doc["uri"], &doc["version"]);
                }
                documents.insert(
                    doc["uri"].as_str().unwrap_or("").to_owned(),
                    json!({"version": doc["version"], "text": doc["text"], "languageId": doc["languageId"]}),
                );
            }
            "textDocument/didChange" => {
                let uri = params["textDocument"]["uri"].as_str().unwrap_or("").to_owned();
                let text = params["contentChanges"][0]["text"].clone();
                if flag("--publish-on-change") {
                    publish_empty(
                        &out,
                        &params["textDocument"]["uri"],
                        &params["textDocument"]["version"],
                    );
                }
                documents.insert(
                    uri,
                    json!({"version": params["textDocument"]["version"], "text": text}),
                );
            }
            "textDocument/didClose" => {
                documents.remove(params["textDocument"]["uri"].as_str().unwrap_or(""));
            }
            "textDocument/references" => {
                let uri = params["textDocument"]["uri"].clone();
                let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}});
                reply(json!([{"uri": uri, "range": range}]));
                references_asked = true;
                if let Some((id, edit)) = held_rename.take() {
                    send(&out, json!({"jsonrpc": "2.0", "id": id, "result": edit}));
                }
            }
            "textDocument/rename" => {
                let uri = params["textDocument"]["uri"].as_str().unwrap_or("");
                let text = documents.get(uri).and_then(|d| d["text"].as_str()).unwrap_or("");
                let word = text.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
                let range = json!({"start": {"line": 0, "character": 0},
                                   "end": {"line": 0, "character": word.chars().count()}});
                let edit =
                    json!({"changes": {uri: [{"range": range, "newText": params["newName"]}]}});
                match &id {
                    Some(id) if flag("--rename-waits-for-references") && !references_asked => {
                        held_rename = Some((id.clone(), edit));
                    }
                    _ => reply(edit),
                }
            }
            "textDocument/hover" => {
                let uri = params["textDocument"]["uri"].as_str().unwrap_or("");
                let text = documents.get(uri).and_then(|d| d["text"].as_str()).unwrap_or("");
                if text.contains("fake:hang-on-hover") {
                    continue;
                }
                if text.contains("fake:cancel-on-hover") {
                    reply_error(-32800, "the request was cancelled, as the document asks");
                    continue;
                }
                if text.contains("fake:fail-on-hover") {
                    reply_error(-32603, "the fake server failed, as the document asks");
                    continue;
                }
                if text.contains("fake:crash-on-hover") {
                    eprintln!("fake-lsp: crashing on hover as the document asks");
                    std::process::exit(3);
                }
                let value = match documents.get(uri) {
                    Some(doc) => format!(
                        "v{} {} bytes",
                        doc["version"],
                        doc["text"].as_str().map_or(0, str::len)
                    ),
                    None => "not open".into(),
                };
                reply(json!({"contents": {"kind": "plaintext", "value": value}}));
            }
            "fake/state" => reply(json!({
                "documents": documents,
                "cancelled": cancelled,
                "notifications": notifications,
                "initialize": initialize_params,
                "configuration": configuration_at_start,
                "pid": std::process::id(),
                "pgid": nix::unistd::getpgrp().as_raw(),
                "env": std::env::vars().map(|(k, _)| k).collect::<Vec<_>>(),
            })),
            "fake/ask" => {
                let ours = next_ask.fetch_add(1, Ordering::Relaxed) as i64;
                asked.insert(ours, id.clone().unwrap_or(Value::Null));
                send(
                    &out,
                    json!({"jsonrpc": "2.0", "id": ours, "method": params["method"], "params": params["params"]}),
                );
            }
            "fake/slow" => {
                let ms = params["ms"].as_u64().unwrap_or(100);
                let out = out.clone();
                let id = id.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    send(&out, json!({"jsonrpc": "2.0", "id": id, "result": "slow"}));
                });
            }
            "fake/never" => {}
            "fake/modified" | "fake/server-cancelled" => {
                // The first `times` requests with one `key` are refused with the error.
                let code = if method == "fake/modified" { -32801 } else { -32802 };
                let key = format!("{method} {}", params["key"]);
                let refused = refusals.entry(key).or_insert(0);
                if *refused < params["times"].as_i64().unwrap_or(0) {
                    *refused += 1;
                    reply_error(code, "content modified");
                } else {
                    reply(json!("done"));
                }
            }
            "fake/crash" => {
                eprintln!("fake-lsp: crashing as asked");
                std::process::exit(3);
            }
            "fake/close-stdout" => {
                out.lock().unwrap().take();
                let _ = nix::unistd::close(1);
            }
            "fake/flood" => {
                let count = params["count"].as_u64().unwrap_or(1000);
                let uri = params["uri"].as_str().unwrap_or("file:///flood").to_owned();
                for i in 0..count {
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 4, "message": format!("flood {i}")}}),
                    );
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": uri, "version": i, "diagnostics": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": format!("flood {i}")}]}}),
                    );
                }
                reply(json!(count));
            }
            "fake/progress" => {
                let token = params["token"].clone();
                if params["kind"] == "create" {
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "id": 4, "method": "window/workDoneProgress/create", "params": {"token": token}}),
                    );
                } else if params["kind"] == "begin" {
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "id": 3, "method": "window/workDoneProgress/create", "params": {"token": token}}),
                    );
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": token, "value": {"kind": "begin", "title": "fake work"}}}),
                    );
                } else {
                    send(
                        &out,
                        json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": token, "value": {"kind": "end"}}}),
                    );
                }
                reply(Value::Null);
            }
            "fake/publish" => {
                send(
                    &out,
                    json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params}),
                );
                reply(Value::Null);
            }
            _ => reply_error(-32601, "fake-lsp does not know this method"),
        }
    }
}

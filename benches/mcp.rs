//! Round trips to `stardust mcp` over stdio, the way an agent's host makes them: the release
//! binary on a generated store of 100,000 entities, newline-delimited JSON-RPC on its pipes,
//! relayed to the store's core (started by the first run; a second run within 5 s reuses it).
//!
//! ```text
//! cargo run --release -p stardust-core --example gen_store -- /tmp/mcp-bench-100k --docs 10000 --entities 100000
//! STARDUST_BENCH_STORE=/tmp/mcp-bench-100k cargo bench --bench mcp
//! ```
//!
//! `STARDUST_BENCH_BIN=/path/to/stardust` drives that binary instead of this build's, so two
//! commits can be measured side by side in one run.
//!
//! Each figure is a whole round trip: the request written to the server's stdin until its
//! response is read from stdout and parsed. Sequential phases time `RUNS` calls each (after
//! `WARMUP` untimed ones); the load phase keeps `IN_FLIGHT` requests outstanding on the one
//! connection for `LOAD_CALLS` calls of mixed tools and counts every error.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WARMUP: usize = 20;
const RUNS: usize = 500;
const QUERY_RUNS: usize = 200;
const LOAD_CALLS: usize = 2000;
const IN_FLIGHT: usize = 8;

struct Server {
    stdin: std::process::ChildStdin,
    incoming: Receiver<Value>,
    next_id: u64,
}

impl Server {
    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").expect("the server reads");
        self.stdin.flush().expect("the server reads");
        id
    }

    fn wait(&mut self, id: u64) -> Value {
        loop {
            let message = self.incoming.recv_timeout(Duration::from_secs(60)).expect("an answer");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let id = self.send("tools/call", json!({"name": tool, "arguments": args}));
        let answer = self.wait(id);
        assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
        answer["result"]["structuredContent"].clone()
    }
}

fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[times.len() * 95 / 100])
}

fn main() {
    let store = std::env::var_os("STARDUST_BENCH_STORE")
        .map_or_else(|| PathBuf::from("/tmp/mcp-bench-100k"), PathBuf::from);
    if !store.join("stardust.toml").exists() {
        eprintln!(
            "no generated store at {0}; make one with\n  cargo run --release -p stardust-core --example gen_store -- {0} --docs 10000 --entities 100000",
            store.display()
        );
        std::process::exit(2);
    }
    let started = Instant::now();
    // STARDUST_BENCH_BIN runs another build (an older commit's) for a side-by-side run.
    let bin = std::env::var_os("STARDUST_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_stardust")), PathBuf::from);
    let mut child = Command::new(&bin)
        .args(["mcp", "--store"])
        .arg(&store)
        .env("RUST_LOG", "warn")
        // `stardust mcp` attaches to the store's core, starting one: let it go soon after.
        .env("STARDUST_IDLE_EXIT", "5")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the stardust binary starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let message: Value = serde_json::from_str(&line).expect("stdout carries JSON-RPC only");
            if tx.send(message).is_err() {
                return;
            }
        }
    });
    let mut server = Server { stdin: child.stdin.take().unwrap(), incoming: rx, next_id: 1 };
    let init = server.send(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "1"}}),
    );
    server.wait(init);
    writeln!(server.stdin, r#"{{"jsonrpc": "2.0", "method": "notifications/initialized"}}"#)
        .unwrap();
    println!("store: {} — open + initialize: {:.2?}", store.display(), started.elapsed());

    // Real places of the store: a book with an author, and where its reference is written.
    let book = server.call("query_execute", json!({"document": "find [?b ?a] where [[?b type book] [?b author ?a]]", "limit": 1, "offset": 5000}));
    let (book, author) = (book["rows"][0][0].clone(), book["rows"][0][1].clone());
    let refs = server
        .call("references", json!({"entity": author, "includeDeclaration": false, "limit": 500}));
    let place = refs["references"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["entity"] == book)
        .expect("the book's author reference is listed")
        .clone();
    let hover_args = json!({"path": place["path"], "position": {"line": place["range"]["line"], "column": place["range"]["column"]}});
    let definition_args = json!({"entity": book, "pointer": "/author"});
    let name = server.call("query_execute", json!({"document": "find [?n] where [[?p type person] [?p name ?n]]", "limit": 1, "offset": 100}));
    let name = name["rows"][0][0].as_str().unwrap().replace('\'', "\\'");
    let join = json!({"document": format!("find [?b ?t] where [[?a name '{name}'] [?b author ?a] [?b title ?t]]")});
    let joined = server.call("query_execute", join.clone());
    println!(
        "3-pattern join answers {} rows (total {})",
        joined["rows"].as_array().unwrap().len(),
        joined["total"]
    );

    println!(
        "\n{:28} {:>6} {:>10} {:>10} {:>8}",
        "tool (sequential)", "calls", "p50", "p95", "goal"
    );
    let phases = [
        ("hover", hover_args.clone(), RUNS, Duration::from_millis(2)),
        ("definition", definition_args.clone(), RUNS, Duration::from_millis(2)),
        ("query_execute (join)", join.clone(), QUERY_RUNS, Duration::from_millis(30)),
    ];
    for (label, args, runs, goal) in phases {
        let tool = label.split(' ').next().unwrap();
        for _ in 0..WARMUP {
            server.call(tool, args.clone());
        }
        let times: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                server.call(tool, args.clone());
                t.elapsed()
            })
            .collect();
        let (p50, p95) = percentiles(times);
        let verdict = if p50 <= goal { "" } else { "  (over the goal)" };
        println!(
            "{label:28} {runs:>6} {:>10} {:>10} {:>8}{verdict}",
            format!("{p50:.2?}"),
            format!("{p95:.2?}"),
            format!("{goal:?}")
        );
    }

    // Load: mixed tools, IN_FLIGHT outstanding at any time.
    let mix: Vec<(&str, Value)> = vec![
        ("hover", hover_args),
        ("definition", definition_args),
        ("references", json!({"entity": author, "limit": 20})),
        ("entity_get", json!({"id": book})),
        ("query_execute", join),
    ];
    let mut sent: HashMap<u64, Instant> = HashMap::new();
    let mut latencies = Vec::with_capacity(LOAD_CALLS);
    let mut errors = 0;
    let mut issued = 0;
    let t = Instant::now();
    while latencies.len() < LOAD_CALLS {
        while issued < LOAD_CALLS && sent.len() < IN_FLIGHT {
            let (tool, args) = &mix[issued % mix.len()];
            let id = server.send("tools/call", json!({"name": tool, "arguments": args}));
            sent.insert(id, Instant::now());
            issued += 1;
        }
        let message = server.incoming.recv_timeout(Duration::from_secs(60)).expect("an answer");
        let Some(at) = message["id"].as_u64().and_then(|id| sent.remove(&id)) else { continue };
        latencies.push(at.elapsed());
        if message.get("error").is_some() || message["result"]["isError"] != false {
            errors += 1;
        }
    }
    let wall = t.elapsed();
    let (p50, p95) = percentiles(latencies);
    println!(
        "\nload: {LOAD_CALLS} calls, {IN_FLIGHT} in flight, mixed tools: {errors} errors, {wall:.2?} wall ({:.0} calls/s), latency p50 {p50:.2?} p95 {p95:.2?}",
        LOAD_CALLS as f64 / wall.as_secs_f64()
    );
    drop(server);
    let status = child.wait().expect("the server exits");
    println!("server exit after stdin closed: {status}");
    assert_eq!(errors, 0, "every call of the load phase succeeds");
}

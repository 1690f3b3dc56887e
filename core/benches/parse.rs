//! Parsing speed of the tolerant parsers beside the floor, `serde_json::from_str` (no ranges,
//! no recovery): JSON, the same text read in JSONC mode (what the mode costs plain JSON), and
//! the same data as a commented JSONC text (a comment line before each record, a block comment
//! inside it, trailing commas) of about `--mb` megabytes: 50 by default, SPEC §23's large file.
//!
//! A plain bench binary; each figure is the median of `--runs` parses, in MB/s of its text.
//!
//! ```text
//! cargo bench -p stardust-core --bench parse -- [--mb 50] [--runs 5] [--only json|jsonc|floor]
//! ```
//! `--only json --runs 1` parses the JSON text once, for an instruction count under
//! `valgrind --tool=cachegrind` (deterministic where times on a shared machine are not).

use std::hint::black_box;
use std::time::{Duration, Instant};

use stardust_core::syntax::{parse_json, parse_jsonc};

fn main() {
    let (mut mb, mut runs, mut only) = (50usize, 5usize, None::<String>);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mb" => mb = args.next().and_then(|v| v.parse().ok()).expect("--mb N"),
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--only" => only = args.next(),
            "--bench" => {}
            other => panic!("unknown argument {other}; see the module docs"),
        }
    }
    let (json, jsonc) = texts(mb << 20);
    println!(
        "JSON {:.1} MB, JSONC {:.1} MB (the same {} records with comments), median of {runs}",
        json.len() as f64 / 1e6,
        jsonc.len() as f64 / 1e6,
        json.matches("\"id\"").count()
    );
    let want = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if want("floor") {
        report("serde_json::from_str (JSON)", &json, runs, |t| {
            let value: serde_json::Value = serde_json::from_str(t).unwrap();
            black_box(value);
        });
    }
    if want("json") {
        report("parse_json (JSON)", &json, runs, |t| {
            let parse = parse_json(t);
            assert!(parse.is_clean());
            black_box(parse);
        });
    }
    if want("jsonc") {
        report("parse_jsonc (the same JSON)", &json, runs, |t| {
            let parse = parse_jsonc(t);
            assert!(parse.is_clean());
            black_box(parse);
        });
        report("parse_jsonc (JSONC with comments)", &jsonc, runs, |t| {
            let parse = parse_jsonc(t);
            assert!(parse.is_clean() && !parse.comments.is_empty());
            black_box(parse);
        });
    }
}

/// The median time of `runs` calls of `parse` on `text`, printed with its throughput.
fn report(name: &str, text: &str, runs: usize, parse: impl Fn(&str)) {
    let mut times: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let started = Instant::now();
            parse(text);
            started.elapsed()
        })
        .collect();
    times.sort();
    let median = times[times.len() / 2];
    let rate = text.len() as f64 / 1e6 / median.as_secs_f64();
    println!("{name:36} {:8.1} ms {rate:7.1} MB/s", median.as_secs_f64() * 1e3);
}

/// An entity array of about `size` bytes as pretty JSON, and the same records as JSONC.
fn texts(size: usize) -> (String, String) {
    let (mut json, mut jsonc) = (String::from("[\n"), String::from("// generated records\n[\n"));
    let mut i = 0u64;
    while json.len() < size {
        let record = format!(
            "  {{\n    \"id\": \"book/b{i}\",\n    \"type\": \"book\",\n    \"title\": \"The Book Number {i} of the Long Series\",\n    \"year\": {},\n    \"tags\": [\n      \"classic\",\n      \"sci-fi\"\n    ],\n    \"price\": {}.{},\n    \"rights\": {{\n      \"holder\": \"Holder {}\",\n      \"since\": {}\n    }}\n  }}",
            1900 + i % 120,
            i % 100,
            i % 97,
            i % 89,
            1950 + i % 70
        );
        let sep = if i == 0 { "" } else { ",\n" };
        json.push_str(sep);
        json.push_str(&record);
        let commented = record
            .replace("\"year\": ", "\"year\": /* first printed */ ")
            .replace("\"sci-fi\"\n", "\"sci-fi\", // http://example.com/tags\n");
        jsonc.push_str(sep);
        jsonc.push_str(&format!("  // record {i}: http://example.com/b{i}\n"));
        jsonc.push_str(&commented);
        i += 1;
    }
    json.push_str("\n]\n");
    jsonc.push_str(",\n]\n");
    (json, jsonc)
}

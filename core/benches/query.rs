//! Query latency on a generated store of 100,000 entities, side by side with the peer: the same
//! question asked of `jq` over the same entities exported as one JSON array, in the same run.
//!
//! ```text
//! cargo run --release -p stardust-core --example gen_store -- /tmp/query-bench-100k --docs 10000 --entities 100000
//! STARDUST_BENCH_STORE=/tmp/query-bench-100k cargo bench -p stardust-core --bench query
//! ```
//!
//! Each query runs on a loaded snapshot whose indexes are warm (the one-off costs of loading,
//! building the query index and the first use of an attribute are reported separately), and
//! is timed `RUNS` times; the table gives p50 and p95. `jq` is timed `JQ_RUNS` times, whole
//! process, because parsing the data is what a tool without an index must do per question.
//! Set `STARDUST_BENCH_NO_JQ=1` to skip the peer.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use stardust_core::analysis::Analysis;
use stardust_core::query::{self, Query, QueryOptions, QueryResult};

const RUNS: usize = 200;
const JQ_RUNS: usize = 5;

struct Case {
    name: &'static str,
    goal: Duration,
    query: String,
    jq: String,
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters cases by name.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let store = std::env::var_os("STARDUST_BENCH_STORE")
        .map_or_else(|| PathBuf::from("/tmp/query-bench-100k"), PathBuf::from);
    if !store.join("stardust.toml").exists() {
        eprintln!(
            "no generated store at {}; make one with\n  cargo run --release -p stardust-core --example gen_store -- {} --docs 10000 --entities 100000\nor point STARDUST_BENCH_STORE at one",
            store.display(),
            store.display()
        );
        std::process::exit(2);
    }

    let started = Instant::now();
    let analysis = Analysis::load(&store).expect("the generated store loads");
    let load = started.elapsed();
    let started = Instant::now();
    let index = analysis.query_index();
    let build = started.elapsed();
    println!("store: {} ({} entities)", store.display(), index.len());
    println!("load + analyse: {load:.2?}; query index (ids, documents): {build:.2?}");

    let run = |text: &str| -> (QueryResult, Duration) {
        let q = Query::parse(text).expect("bench queries are valid");
        let t = Instant::now();
        let r = query::execute(&analysis, &q, &QueryOptions::default()).expect("bench queries run");
        (r, t.elapsed())
    };
    // Real values of the store to ask about.
    let isbn = run("find [?i] where [[?b isbn ?i]] limit 1 offset 25000").0.rows[0][0].clone();
    let name = run("find [?n] where [[?p type person] [?p name ?n]] limit 1 offset 100").0.rows[0]
        [0]
    .clone();
    let (isbn, name) = (isbn.as_str().unwrap().to_owned(), name.as_str().unwrap().to_owned());

    let cases = vec![
        Case {
            name: "single-attribute lookup",
            goal: Duration::from_millis(1),
            query: format!("find [?b ?t] where [[?b isbn '{isbn}'] [?b title ?t]]"),
            jq: format!(r#"[.[] | select(.isbn == "{isbn}") | [.id, .title]]"#),
        },
        Case {
            name: "3-pattern join through a reference",
            goal: Duration::from_millis(20),
            query: format!("find [?b ?t] where [[?a name '{name}'] [?b author ?a] [?b title ?t]] limit 1000"),
            jq: format!(
                r#"(map(select(.name == "{name}") | "@" + .id) | INDEX(.)) as $a | [.[] | select(.author != null and $a[.author] != null) | [.id, .title]] | sort"#
            ),
        },
        Case {
            name: "filtered, ordered, paginated",
            goal: Duration::from_millis(50),
            query: "find [?b ?t ?y] where [[?b type book] [?b year ?y] [?b pages ?p] [?b title ?t]] filter ['?y >= 2000 and ?p > 900'] order [[?y desc] [?t asc]] limit 20 offset 40".to_owned(),
            jq: r#"[.[] | select(.type == "book" and .year >= 2000 and .pages > 900) | [.id, .title, .year]] | sort_by(-.[2], .[1], .[0]) | .[40:60]"#.to_owned(),
        },
        Case {
            name: "aggregate over all books",
            goal: Duration::from_millis(100),
            query: "find [?s count(?b) sum(?p)] where [[?b type book] [?b status ?s] [?b pages ?p]]".to_owned(),
            jq: r#"[.[] | select(.type == "book")] | group_by(.status) | map([.[0].status, length, (map(.pages) | add)])"#.to_owned(),
        },
    ];

    let jq_path = std::env::temp_dir().join("stardust-query-bench.json");
    let with_jq = std::env::var_os("STARDUST_BENCH_NO_JQ").is_none() && export(&analysis, &jq_path);

    println!(
        "\n{:36} {:>10} {:>10} {:>10} {:>8} {:>12} {:>8}",
        "query", "first", "p50", "p95", "goal", "jq p50", "ratio"
    );
    for case in &cases {
        if filter.as_ref().is_some_and(|f| !case.name.contains(f.as_str())) {
            continue;
        }
        // The first run builds the attribute indexes it needs.
        let (first_result, first) = run(&case.query);
        let mut times: Vec<Duration> = (0..RUNS).map(|_| run(&case.query).1).collect();
        times.sort();
        let (p50, p95) = (times[RUNS / 2], times[RUNS * 95 / 100]);
        let (jq_p50, ratio) = if with_jq {
            let (out, t) = jq(&case.jq, &jq_path);
            check_same(case, &first_result, &out);
            (format!("{t:.2?}"), format!("{:.0}x", t.as_secs_f64() / p50.as_secs_f64()))
        } else {
            ("-".to_owned(), "-".to_owned())
        };
        let verdict = if p50 <= case.goal { "" } else { "  (over the goal)" };
        println!(
            "{:36} {:>10} {:>10} {:>10} {:>8} {:>12} {:>8}{verdict}",
            case.name,
            format!("{first:.2?}"),
            format!("{p50:.2?}"),
            format!("{p95:.2?}"),
            format!("{:?}", case.goal),
            jq_p50,
            ratio
        );
    }
}

/// Every entity of the store, as one JSON array, for `jq`.
fn export(analysis: &Analysis, path: &Path) -> bool {
    if Command::new("jq").arg("--version").output().is_err() {
        eprintln!("jq is not installed: the peer column is skipped");
        return false;
    }
    let index = analysis.query_index();
    let all: Vec<&Value> = (0..index.len() as u32).map(|n| index.value(n)).collect();
    let bytes = serde_json::to_vec(&all).expect("values serialise");
    std::fs::write(path, &bytes).expect("the temporary export is written");
    println!("exported {} entities, {} bytes, for jq", all.len(), bytes.len());
    true
}

/// `jq -c FILTER FILE`: its output and the median time of `JQ_RUNS` runs.
fn jq(filter: &str, path: &Path) -> (Value, Duration) {
    let mut times = Vec::new();
    let mut output = Value::Null;
    for _ in 0..JQ_RUNS {
        let t = Instant::now();
        let out = Command::new("jq").arg("-c").arg(filter).arg(path).output().expect("jq runs");
        times.push(t.elapsed());
        assert!(out.status.success(), "jq failed: {}", String::from_utf8_lossy(&out.stderr));
        output = serde_json::from_slice(&out.stdout).expect("jq prints JSON");
    }
    times.sort();
    (output, times[JQ_RUNS / 2])
}

/// The peer must answer the same question: compare the rows (as sets where order is not
/// part of the question).
fn check_same(case: &Case, ours: &QueryResult, theirs: &Value) {
    let mut a: Vec<String> = ours.rows.iter().map(|r| Value::from(r.clone()).to_string()).collect();
    let mut b: Vec<String> =
        theirs.as_array().expect("jq gives an array").iter().map(Value::to_string).collect();
    if !case.name.contains("ordered") {
        a.sort();
        b.sort();
    }
    assert_eq!(a.len(), b.len(), "{}: stardust and jq give different numbers of rows", case.name);
    assert_eq!(a, b, "{}: stardust and jq disagree", case.name);
}

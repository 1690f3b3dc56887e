//! Data-driven tests of queries and expressions: the fixture store `test-data/query/store.txt`
//! (`//- path` sections), a table of queries (`queries.txt`) and of expressions
//! (`expressions.txt`), each with a snapshot of what they give, errors included.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use stardust_core::analysis::{Analysis, StoreContext};
use stardust_core::config::Config;
use stardust_core::query::{self, Query, QueryOptions, QueryResult};

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/query").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture store, analysed in memory.
fn store() -> Analysis {
    let docs: Vec<(String, Vec<u8>)> = stardust_core::fixture::files(&data("store.txt"))
        .into_iter()
        .map(|(path, text)| (path, text.into_bytes()))
        .collect();
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/fixture"), config: Config::default() });
    Analysis::new(ctx, docs)
}

/// `### name` cases: (name, option lines, body).
fn cases(text: &str) -> Vec<(String, QueryOptions, String)> {
    let mut out: Vec<(String, QueryOptions, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(name) = line.strip_prefix("### ") {
            out.push((name.trim().to_owned(), QueryOptions::default(), String::new()));
        } else if let Some((_, options, body)) = out.last_mut() {
            if let Some(option) = line.strip_prefix("#! ") {
                let (key, value) = option.trim().split_once(' ').expect("#! key value");
                let value: u64 = value.parse().expect("a number");
                match key {
                    "max_bindings" => options.max_bindings = value,
                    "limit" => options.limit = Some(value),
                    "offset" => options.offset = Some(value),
                    other => panic!("unknown option {other}"),
                }
            } else {
                body.push_str(line);
            }
        }
    }
    out
}

fn render(result: &stardust_core::Result<QueryResult>) -> String {
    match result {
        Ok(r) => {
            let mut out = format!("columns {}\n", r.columns.join(" "));
            for row in &r.rows {
                writeln!(out, "  {}", serde_json::to_string(row).unwrap()).unwrap();
            }
            let next = r.next_offset.map_or("null".to_owned(), |n| n.to_string());
            write!(out, "total {}, nextOffset {next}", r.total).unwrap();
            if let Some(cap) = r.limit_capped {
                write!(out, ", limitCapped {cap}").unwrap();
            }
            out.push('\n');
            out
        }
        Err(e) => format!("error[{}]: {e}\n", e.code()),
    }
}

#[test]
fn query_table() {
    let analysis = store();
    let mut out = String::new();
    for (name, options, body) in cases(&data("queries.txt")) {
        let result = Query::parse(&body).and_then(|q| query::execute(&analysis, &q, &options));
        write!(out, "### {name}\n{}\n{}\n", body.trim_end(), render(&result)).unwrap();
    }
    expect_test::expect_file!["../test-data/query/queries.snap"].assert_eq(&out);
}

#[test]
fn expression_table() {
    let analysis = store();
    let mut out = String::new();
    for line in data("expressions.txt").lines() {
        if line.starts_with(';') || line.trim().is_empty() {
            continue;
        }
        let (entity, expr) = match line.strip_prefix("with ").and_then(|l| l.split_once(": ")) {
            Some((id, expr)) => (Some(id), expr),
            None => (None, line),
        };
        let shown = match query::evaluate(&analysis, expr, entity) {
            Ok(value) => serde_json::to_string(&value).unwrap(),
            Err(e) => format!("error[{}]: {e}", e.code()),
        };
        writeln!(out, "{line}\n  => {shown}").unwrap();
    }
    expect_test::expect_file!["../test-data/query/expressions.snap"].assert_eq(&out);
}

#[test]
fn explain_table() {
    let analysis = store();
    let mut out = String::new();
    for (name, options, body) in cases(&data("explain.txt")) {
        let q = Query::parse(&body).expect("explain cases are valid queries");
        let explain = query::explain(&analysis, &q, &options);
        write!(out, "### {name}\n{}\n{}\n", body.trim_end(), explain.to_text()).unwrap();
    }
    expect_test::expect_file!["../test-data/query/explain.snap"].assert_eq(&out);
}

#[test]
fn the_result_has_exactly_the_shape_of_the_spec() {
    let analysis = store();
    let q = Query::parse("find [?b ?t] where [[?b type book] [?b title ?t]] limit 2").unwrap();
    let result = query::execute(&analysis, &q, &QueryOptions::default()).unwrap();
    assert_eq!(
        result.to_json(),
        json!({
            "columns": ["?b", "?t"],
            "rows": [["book/children-of-dune", "Children of Dune"], ["book/dispossessed", "The Dispossessed"]],
            "total": 9,
            "nextOffset": 2
        })
    );
    let capped = Query::parse("find [?b] where [[?b type book]] limit 5000").unwrap();
    let json = query::execute(&analysis, &capped, &QueryOptions::default()).unwrap().to_json();
    assert_eq!(json["limitCapped"], json!(1000));
    assert_eq!(json["nextOffset"], json!(null));
}

#[test]
fn a_query_given_as_a_json_value_or_a_string_reads_like_its_text() {
    let analysis = store();
    let text = "find [?n] where [[?p type person] [?p born 1947] [?p name ?n]]";
    let from_text = Query::parse(text).unwrap();
    let from_string = Query::from_json(&json!(text)).unwrap();
    let from_value = Query::from_json(&json!({
        "find": ["?n"],
        "where": [["?p", "type", "person"], ["?p", "born", 1947], ["?p", "name", "?n"]]
    }))
    .unwrap();
    let run = |q: &Query| query::execute(&analysis, q, &QueryOptions::default()).unwrap();
    let expected = run(&from_text);
    assert_eq!(expected.rows, vec![vec![json!("Brian Herbert")], vec![json!("Octavia E. Butler")]]);
    assert_eq!(run(&from_string), expected);
    assert_eq!(run(&from_value), expected);
    let err = Query::from_json(&json!({"find": ["?n"], "where": [["?p", "?a", 1]]})).unwrap_err();
    assert_eq!(err.code(), "invalid-arguments");
    assert!(
        err.to_string().starts_with("invalid query: a variable cannot stand for an attribute"),
        "{err}"
    );
}

#[test]
fn the_index_is_built_once_per_snapshot_and_anew_after_a_change() {
    let analysis = store();
    let first = analysis.query_index();
    assert!(Arc::ptr_eq(&first, &analysis.query_index()));
    assert!(Arc::ptr_eq(&first, &analysis.clone().query_index()), "clones share the snapshot");
    let changed = analysis.with_changes(vec![(
        "books/new.dust".to_owned(),
        Some(b"id book/new\ntype book\ntitle New\nyear 1965\n".to_vec()),
    )]);
    assert!(!Arc::ptr_eq(&first, &changed.query_index()));
    let q = Query::parse("find [?b] where [[?b year 1965]]").unwrap();
    let rows = |a: &Analysis| query::execute(a, &q, &QueryOptions::default()).unwrap().rows;
    assert_eq!(rows(&analysis), vec![vec![json!("book/dune")]]);
    assert_eq!(rows(&changed), vec![vec![json!("book/dune")], vec![json!("book/new")]]);
}

#[test]
fn unexpected_input_never_panics() {
    let analysis = store();
    for text in [
        "",
        "[]",
        "12",
        "{",
        "find [] where []",
        "find ?b where [[?b type book]] order [[?b sideways]]",
        "find [?b] where [[?b type book]] filter [12]",
        "find [?b] where [[12 type book]]",
        "find [?b] where [[?b 12 book]]",
        "find [?b] where [[?b '' book]]",
        "find [?b] where [{not []}]",
        "find [?b] where [{or []}]",
        "find [?b] where [{or [[]]}]",
        "find [?b] where [{and [[?b type book]]}]",
        "find [?b] where [{not [[?b type book]] or [[?b type book]]}]",
        "find [count(?b) count(?b)] where [[?b type book]]",
        "find [?b] where [[?b type book]] order [?b ?b]",
        "find [?b] where [[?b type book]] limit 1.5",
        "find [?b] where [[?b type book]] offset 18446744073709551615 limit 1000",
        "find [?b] where [[?b type [1 {a b}]]]",
        "find [?b] where [[?b type book]] filter ['?b.title.x.y = 1']",
        "find [?b] where [[?b type book]] filter ['referrers(?b) = 1']",
    ] {
        match Query::parse(text) {
            Ok(q) => {
                let _ = query::execute(&analysis, &q, &QueryOptions::default());
                let _ = query::explain(&analysis, &q, &QueryOptions::default()).to_text();
            }
            Err(e) => assert_eq!(e.code(), "invalid-arguments", "{text}: {e}"),
        }
    }
    let deep_where =
        format!("find [?b] where [[?b type book] {}{}]", "{not [".repeat(40), "]}".repeat(40));
    assert!(Query::parse(&deep_where).unwrap_err().to_string().contains("nest at most 16 deep"));
    let many = (0..300).map(|i| format!("[?b f{i} _]")).collect::<Vec<_>>().join(" ");
    let err = Query::parse(&format!("find [?b] where [{many}]")).unwrap_err();
    assert!(err.to_string().contains("at most 256 clauses"), "{err}");
    let vars = (0..70).map(|i| format!("[?b f ?v{i}]")).collect::<Vec<_>>().join(" ");
    let err = Query::parse(&format!("find [?b] where [{vars}]")).unwrap_err();
    assert!(err.to_string().contains("at most 64 variables"), "{err}");
}

#[test]
fn a_filter_equal_to_zero_finds_a_negative_zero() {
    // A pinned filter finds what the filter alone finds: -0.0 and 0.0 are both the integer 0.
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/zero"), config: Config::default() });
    let doc = br#"[{"id": "t/a", "type": "t", "x": -0.0}, {"id": "t/b", "type": "t", "x": 1.5}]"#;
    let analysis = Analysis::new(ctx, vec![("t.json".to_owned(), doc.to_vec())]);
    let q = Query::parse("find [?e] where [[?e x ?x]] filter ['?x = 0.0']").unwrap();
    let rows = query::execute(&analysis, &q, &QueryOptions::default()).unwrap().rows;
    assert_eq!(rows, vec![vec![json!("t/a")]]);
    let q = Query::parse("find [?e] where [[?e x ?x]] filter ['?x = 1.5']").unwrap();
    let rows = query::execute(&analysis, &q, &QueryOptions::default()).unwrap().rows;
    assert_eq!(rows, vec![vec![json!("t/b")]]);
}

//! End-to-end tests of `stardust query` and `stardust eval`: the real binary on the sample
//! library.

use std::io::Write;
mod util;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use util::{repo, stardust, text};

const FRANK: &str = "find [?b ?title] where [[?b type book] [?b title ?title] [?b year ?y] [?b author ?a] [?a name 'Frank Herbert']] filter ['?y >= 1960'] order [[?y desc]] limit 2";

#[test]
fn json_output_is_the_result_shape_of_the_spec() {
    let out = stardust(&["query", "examples/library", FRANK, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(result["columns"], json!(["?b", "?title"]));
    assert_eq!(result["rows"].as_array().unwrap().len(), 2);
    assert_eq!(result["nextOffset"], json!(2));
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["columns", "rows", "total", "nextOffset"]);
    assert!(result["total"].as_u64().unwrap() > 2);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn the_table_is_aligned_and_says_which_rows_it_shows() {
    let out = stardust(&["query", "examples/library", FRANK]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("?b") && lines[0].contains("?title"), "{stdout}");
    assert!(lines[1].chars().all(|c| c == '-' || c == ' '), "{stdout}");
    let column = lines[0].find("?title").unwrap();
    assert!(
        lines[2..4].iter().all(|l| l.char_indices().nth(column - 1).is_some_and(|(_, c)| c == ' ')),
        "{stdout}"
    );
    assert!(lines[4].starts_with("rows 1-2 of "), "{stdout}");
    assert!(lines[4].ends_with("; the next page starts at offset 2"), "{stdout}");
}

#[test]
fn json_queries_and_standard_input_are_accepted() {
    let query = r#"{"find": ["count(?r)"], "where": [["?r", "type", "review"]]}"#;
    let mut child = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(["query", "examples/library", "-", "--format", "json"])
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(query.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["columns"], json!(["count(?r)"]));
    assert!(result["rows"][0][0].as_u64().unwrap() > 0, "{result}");
}

#[test]
fn explain_prints_the_plan_with_counts() {
    let out = stardust(&["query", "examples/library", FRANK, "--explain"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("plan"), "{stdout}");
    assert!(
        lines[1].contains("[?a name 'Frank Herbert']") && lines[1].contains("look up name"),
        "starts from the most selective pattern:\n{stdout}"
    );
    assert!(stdout.contains("filter '?y >= 1960'"), "{stdout}");
    let json = stardust(&["query", "examples/library", FRANK, "--explain", "--format", "json"]);
    let plan: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(plan["plan"][0]["step"], json!("[?a name 'Frank Herbert']"));
    assert!(plan["plan"][0]["actual"].as_u64().unwrap() >= 1);
}

#[test]
fn eval_follows_references() {
    let out = stardust(&["eval", "examples/library", "@book/dune.author.name"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "\"Frank Herbert\"\n");
    let out = stardust(&[
        "eval",
        "examples/library",
        "year < 1970 and upper(title) = 'DUNE'",
        "--entity",
        "book/dune",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), json!({"value": true}));
    let out = stardust(&["eval", "examples/library", "@book/dune"]);
    let entity: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entity["id"], json!("book/dune"));
}

#[test]
fn errors_have_their_codes_and_exit_codes() {
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["query", "examples/library", "find [?b where [[?b type book]]"],
            2,
            "error[invalid-arguments]: the query has a syntax error at 1:",
        ),
        (
            &["query", "examples/library", "find [?b] where [[?b ?a ?v]]"],
            2,
            "error[invalid-arguments]: invalid query at 1:22: a variable cannot stand for an attribute",
        ),
        (
            &["query", "examples/library", "find [?b] where [[?b title ?t]] filter ['?t > 1']"],
            1,
            "error[type-error]: in '?t > 1': cannot compare string",
        ),
        (
            &["query", "no/such/store", "find [?b] where [[?b type book]]"],
            2,
            "error[invalid-arguments]: there is no store at no/such/store",
        ),
        (
            &["eval", "examples/library", "1 / 0"],
            1,
            "error[type-error]: in '1 / 0': division by zero",
        ),
        (
            &["eval", "examples/library", "@book/nothing-here.title"],
            1,
            "error[not-found]: in '@book/nothing-here.title': no entity has the id 'book/nothing-here'",
        ),
        (
            &["eval", "examples/library", "1 +"],
            2,
            "error[invalid-arguments]: the expression has an error at column 4",
        ),
        (
            &["eval", "examples/library", "title", "--entity", "book/nope"],
            1,
            "error[not-found]: no entity has the id 'book/nope'",
        ),
    ];
    for (args, code, start) in cases {
        let out = stardust(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(stderr.starts_with(start), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_query_reads_the_store_without_writing_to_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.dust"), "id a/one\ntype a\nn 1\n").unwrap();
    let store = dir.path().to_str().unwrap();
    let out = stardust(&["query", store, "find [?e ?n] where [[?e n ?n]]", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["rows"],
        json!([["a/one", 1]])
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["a.dust"], "no .stardust/ or anything else is created");
}

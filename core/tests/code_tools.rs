//! The navigation tools for code files (SPEC §13, §17) in the core, without a transport or a
//! process: a `CodeHost` double (tests/common/code.rs) answers canned LSP JSON (a double of the interface, for
//! the core's conversion rules only), and snapshots pin what the tools make of it — positions
//! between a server's encoding and MCP's 1-based characters, the canonical order and pages of
//! locations, paths outside the store, push and pull diagnostics merged, an editor's buffer
//! before the disk, the user's servers file read again when it changes, and no host at all.

mod common;

use std::collections::BTreeMap;

use common::code::{Canned, check, fixture, range, run};
use common::open;
use expect_test::expect;
use serde_json::{Value, json};
use stardust_core::service::{Front, Service};
use stardust_core::text::Encoding;

/// One line with a character outside the BMP (two UTF-16 units, four UTF-8 bytes) and one of
/// two UTF-8 bytes, CRLF line ends, and a short last line.
const WIDE: &str = "s = \"😀é\" + y\r\nshort\r\nend";

#[test]
fn positions_convert_between_the_server_encoding_and_characters() {
    let f = fixture(&[("wide.py", WIDE)]);
    let mut out = BTreeMap::new();
    for (name, encoding, y) in [
        ("utf-16", Encoding::Utf16, 12),
        ("utf-8", Encoding::Utf8, 15),
        ("utf-32", Encoding::Utf32, 11),
    ] {
        let uri = f.uri("wide.py");
        // `y` in the server's units; past the end of `short`; past the last line.
        let definition = json!([
            {"uri": uri, "range": range(0, y, 0, y + 1)},
            {"uri": uri, "range": range(1, 99, 1, 120)},
            {"uri": uri, "range": range(7, 0, 7, 3)},
        ]);
        let host = Canned { encoding: Some(encoding), ..Canned::default() }
            .with("textDocument/definition", definition);
        let (service, session, host) = f.service(host);
        // MCP's column 12 is `y` (the 12th character).
        let hover = run(
            &service,
            &session,
            "hover",
            json!({"path": "wide.py", "position": {"line": 1, "column": 12}}),
        );
        let asked = host.requests.lock().unwrap()[0].1["position"].clone();
        let definition = run(
            &service,
            &session,
            "definition",
            json!({"path": "wide.py", "position": {"line": 1, "column": 1}}),
        );
        let ranges: Vec<Value> = definition["locations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["range"].clone())
            .collect();
        out.insert(
            name,
            json!({"asked": asked, "hover": hover["hover"]["range"], "definition": ranges}),
        );
    }
    check(
        &json!(out),
        expect![[r#"
            {
              "utf-16": {
                "asked": {
                  "line": 0,
                  "character": 12
                },
                "hover": {
                  "line": 1,
                  "column": 12,
                  "endLine": 1,
                  "endColumn": 13
                },
                "definition": [
                  {
                    "line": 1,
                    "column": 12,
                    "endLine": 1,
                    "endColumn": 13
                  },
                  {
                    "line": 2,
                    "column": 6,
                    "endLine": 2,
                    "endColumn": 6
                  },
                  {
                    "line": 3,
                    "column": 4,
                    "endLine": 3,
                    "endColumn": 4
                  }
                ]
              },
              "utf-32": {
                "asked": {
                  "line": 0,
                  "character": 11
                },
                "hover": {
                  "line": 1,
                  "column": 12,
                  "endLine": 1,
                  "endColumn": 13
                },
                "definition": [
                  {
                    "line": 1,
                    "column": 12,
                    "endLine": 1,
                    "endColumn": 13
                  },
                  {
                    "line": 2,
                    "column": 6,
                    "endLine": 2,
                    "endColumn": 6
                  },
                  {
                    "line": 3,
                    "column": 4,
                    "endLine": 3,
                    "endColumn": 4
                  }
                ]
              },
              "utf-8": {
                "asked": {
                  "line": 0,
                  "character": 15
                },
                "hover": {
                  "line": 1,
                  "column": 12,
                  "endLine": 1,
                  "endColumn": 13
                },
                "definition": [
                  {
                    "line": 1,
                    "column": 12,
                    "endLine": 1,
                    "endColumn": 13
                  },
                  {
                    "line": 2,
                    "column": 6,
                    "endLine": 2,
                    "endColumn": 6
                  },
                  {
                    "line": 3,
                    "column": 4,
                    "endLine": 3,
                    "endColumn": 4
                  }
                ]
              }
            }"#]],
    );
}

#[test]
fn a_position_that_is_not_in_the_file_is_invalid_arguments() {
    let f = fixture(&[("wide.py", WIDE)]);
    let (service, session, host) = f.service(Canned::default());
    let errors: Vec<String> = [
        json!({"line": 2, "column": 9}),
        json!({"line": 4, "column": 1}),
        json!({"line": 0, "column": 1}),
    ]
    .into_iter()
    .map(|position| {
        let err = service
            .execute(&session, "hover", json!({"path": "wide.py", "position": position}))
            .unwrap_err();
        format!("{}: {err}", err.code().as_str())
    })
    .collect();
    check(
        &json!(errors),
        expect![[r#"
            [
              "invalid-arguments: line 2 column 9 is not a position in wide.py (3 lines); lines and columns are 1-based, columns counted in characters",
              "invalid-arguments: line 4 column 1 is not a position in wide.py (3 lines); lines and columns are 1-based, columns counted in characters",
              "invalid-arguments: invalid arguments for hover: `position.line` must be at least 1, not 0 (the line, 1-based)"
            ]"#]],
    );
    assert!(host.requests.lock().unwrap().is_empty(), "nothing is asked of the server");
}

#[test]
fn locations_are_ordered_deduplicated_and_paged_with_outside_paths_absolute() {
    let f = fixture(&[("b.py", "one\ntwo\n"), ("a.py", "alpha\nbeta\n"), ("pkg/c.py", "x\n")]);
    std::fs::write(f.outside.join("lib.py"), "def lib(): ...\n").unwrap();
    let outside = format!("file://{}", f.outside.join("lib.py").display());
    let references = json!([
        {"uri": f.uri("b.py"), "range": range(1, 0, 1, 3)},
        {"uri": f.uri("a.py"), "range": range(1, 2, 1, 4)},
        {"uri": outside, "range": range(0, 4, 0, 7)},
        {"uri": f.uri("a.py"), "range": range(0, 0, 0, 5)},
        {"uri": f.uri("b.py"), "range": range(1, 0, 1, 3)},
        {"uri": f.uri("pkg/c.py"), "range": range(0, 0, 0, 1)},
    ]);
    let (service, session, _) =
        f.service(Canned::default().with("textDocument/references", references));
    let place = json!({"path": "a.py", "position": {"line": 1, "column": 1}});
    let mut pages = Vec::new();
    let mut offset = Some(json!(0));
    while let Some(at) = offset.filter(|o| !o.is_null()) {
        let mut args = place.clone();
        args["limit"] = json!(2);
        args["offset"] = at;
        let page = run(&service, &session, "references", args);
        let shown: Vec<String> = page["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let path =
                    l["path"].as_str().unwrap().replace(f.outside.to_str().unwrap(), "$OUTSIDE");
                format!(
                    "{path}:{}:{} @{}",
                    l["range"]["line"],
                    l["range"]["column"],
                    l["server"].as_str().unwrap()
                )
            })
            .collect();
        pages.push(
            json!({"references": shown, "total": page["total"], "nextOffset": page["nextOffset"]}),
        );
        offset = Some(page["nextOffset"].clone());
    }
    check(
        &json!(pages),
        expect![[r#"
            [
              {
                "references": [
                  "a.py:1:1 @canned",
                  "a.py:2:3 @canned"
                ],
                "total": 5,
                "nextOffset": 2
              },
              {
                "references": [
                  "b.py:2:1 @canned",
                  "pkg/c.py:1:1 @canned"
                ],
                "total": 5,
                "nextOffset": 4
              },
              {
                "references": [
                  "$OUTSIDE/lib.py:1:5 @canned"
                ],
                "total": 5,
                "nextOffset": null
              }
            ]"#]],
    );
}

fn diagnostic(line: u32, severity: u32, message: &str) -> Value {
    json!({"range": range(line, 0, line, 2), "severity": severity, "message": message, "source": "canned"})
}

#[test]
fn pulled_and_pushed_diagnostics_are_merged_and_filtered_by_severity() {
    let f = fixture(&[("m.py", "a\nb\nc\n")]);
    let pulled = json!({"kind": "full", "items": [diagnostic(2, 1, "pulled error"), diagnostic(0, 2, "in both")]});
    let host = Canned { capabilities: json!({"diagnosticProvider": {}}), ..Canned::default() }
        .with("textDocument/diagnostic", pulled);
    host.published.lock().unwrap().insert(
        f.store.join("m.py"),
        (0, vec![diagnostic(0, 2, "in both"), diagnostic(1, 3, "pushed information")]),
    );
    let (service, session, _) = f.service(host);
    let all = run(&service, &session, "diagnostics", json!({"path": "m.py"}));
    let warnings =
        run(&service, &session, "diagnostics", json!({"path": "m.py", "severity": "warning"}));
    check(
        &json!({"all": all, "warnings": warnings}),
        expect![[r#"
            {
              "all": {
                "diagnostics": [
                  {
                    "path": "m.py",
                    "range": {
                      "line": 1,
                      "column": 1,
                      "endLine": 1,
                      "endColumn": 2
                    },
                    "severity": "warning",
                    "message": "in both",
                    "server": "canned",
                    "source": "canned"
                  },
                  {
                    "path": "m.py",
                    "range": {
                      "line": 2,
                      "column": 1,
                      "endLine": 2,
                      "endColumn": 2
                    },
                    "severity": "information",
                    "message": "pushed information",
                    "server": "canned",
                    "source": "canned"
                  },
                  {
                    "path": "m.py",
                    "range": {
                      "line": 3,
                      "column": 1,
                      "endLine": 3,
                      "endColumn": 2
                    },
                    "severity": "error",
                    "message": "pulled error",
                    "server": "canned",
                    "source": "canned"
                  }
                ],
                "total": 3,
                "nextOffset": null,
                "server": "canned",
                "readiness": "ready",
                "complete": true
              },
              "warnings": {
                "diagnostics": [
                  {
                    "path": "m.py",
                    "range": {
                      "line": 1,
                      "column": 1,
                      "endLine": 1,
                      "endColumn": 2
                    },
                    "severity": "warning",
                    "message": "in both",
                    "server": "canned",
                    "source": "canned"
                  }
                ],
                "total": 1,
                "nextOffset": null,
                "server": "canned",
                "readiness": "ready",
                "complete": true
              }
            }"#]],
    );
}

#[test]
fn an_editor_buffer_is_what_the_server_is_given_until_it_is_closed() {
    let f = fixture(&[("notes.txt", "on disk\n")]);
    let (service, session, _) = f.service(Canned::default());
    let editor = service.open_session(Front::Lsp, "test-editor");
    let hover = |service: &Service| {
        run(
            service,
            &session,
            "hover",
            json!({"path": "notes.txt", "position": {"line": 1, "column": 1}}),
        )["hover"]["markdown"]
            .clone()
    };
    let before = hover(&service);
    service.code_open(&editor, "notes.txt", "in the editor, unsaved\n");
    let open = hover(&service);
    service.code_close(&editor, "notes.txt");
    let closed = hover(&service);
    check(
        &json!([before, open, closed]),
        expect![[r#"
            [
              "on disk\n",
              "in the editor, unsaved\n",
              "on disk\n"
            ]"#]],
    );
}

#[test]
fn without_a_host_code_files_are_server_unavailable() {
    let f = fixture(&[("a.py", "x = 1\n")]);
    let service = Service::new(open(&f.store)).with_code_config_dir(Some(f.config.clone()));
    let session = service.open_session(Front::Mcp, "test-agent");
    let err = service
        .execute(&session, "hover", json!({"path": "a.py", "position": {"line": 1, "column": 1}}))
        .unwrap_err();
    check(
        &json!([err.code().as_str(), err.to_string()]),
        expect![[r#"
            [
              "server-unavailable",
              "language server 'canned' cannot start: this core runs no language servers; use `stardust serve`, `stardust lsp` or `stardust mcp`"
            ]"#]],
    );
}

#[test]
fn a_pull_answer_stands_alone_when_the_push_is_for_an_older_text() {
    let f = fixture(&[("clean.py", "a\n"), ("stale.py", "b\n")]);
    let host = Canned { capabilities: json!({"diagnosticProvider": {}}), ..Canned::default() }
        .with("textDocument/diagnostic", json!({"kind": "full", "items": []}));
    // Published for the version before the one the server is given now.
    host.published
        .lock()
        .unwrap()
        .insert(f.store.join("stale.py"), (1, vec![diagnostic(0, 1, "stale")]));
    let (service, session, _) = f.service(host);
    let clean = run(&service, &session, "diagnostics", json!({"path": "clean.py"}));
    let stale = run(&service, &session, "diagnostics", json!({"path": "stale.py"}));
    check(
        &json!({"clean": clean, "stale": stale}),
        expect![[r#"
            {
              "clean": {
                "diagnostics": [],
                "total": 0,
                "nextOffset": null,
                "server": "canned",
                "readiness": "ready",
                "complete": true
              },
              "stale": {
                "diagnostics": [],
                "total": 0,
                "nextOffset": null,
                "server": "canned",
                "readiness": "ready",
                "complete": true
              }
            }"#]],
    );
}

#[test]
fn a_servers_file_changed_while_the_core_runs_is_read_again() {
    let f = fixture(&[("notes.txt", "text\n")]);
    let (service, session, _) = f.service(Canned::default());
    let place = json!({"path": "notes.txt", "position": {"line": 1, "column": 1}});
    let before = run(&service, &session, "hover", place.clone());
    assert_eq!(before["server"], "canned");
    // The same table without `txt`: the next request sees it (the parse is not kept).
    let file = f.config.join("servers.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace(", txt = \"plaintext\"", "")).unwrap();
    let err = service.execute(&session, "hover", place).unwrap_err();
    check(
        &json!([err.code().as_str(), err.to_string()]),
        expect![[r#"
            [
              "unsupported",
              "no language server covers notes.txt; add a [servers.<name>] table (stardust.toml or your servers.toml) whose languages include \"txt\" or whose globs match it"
            ]"#]],
    );
}

/// One line of what one `workspace_symbols` call did, on a store whose first `.py` file the
/// server can be given is `a/first.py`: the symbols found, the servers skipped (with the
/// error's code), the requests the server saw and the texts it was given.
fn symbols_asked(host: Canned) -> String {
    let f =
        fixture(&[("b/second.py", "second\n"), ("a/first.py", "first\n"), ("notes.md", "md\n")]);
    // Before it, a file no server can be given (not UTF-8): passed over.
    std::fs::write(f.store.join("a/binary.py"), [0xff, 0xfe, 0x00]).unwrap();
    let (service, session, host) = f.service(host);
    let answer = run(&service, &session, "workspace_symbols", json!({"query": "price"}));
    let found: Vec<&str> =
        answer["symbols"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    let skipped: Vec<String> = answer["skipped"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|s| {
                    format!(
                        "{}: {}",
                        s["server"].as_str().unwrap(),
                        s["error"]["code"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let requests: Vec<String> = host.requests.lock().unwrap().iter().map(|r| r.0.clone()).collect();
    let given = host.texts_given.lock().unwrap().clone();
    format!("found {found:?}; skipped {skipped:?}; requests {requests:?}; given {given:?}")
}

#[test]
fn workspace_symbols_give_a_server_with_no_file_open_the_first_file_of_its_own() {
    let symbol = json!([{"name": "price", "kind": 12,
        "location": {"uri": "file:///nowhere/x.py", "range": range(0, 0, 0, 5)}}]);
    let running = Some(Encoding::Utf16);
    let cases = [
        // Not running yet (no encoding negotiated): `a/first.py` is opened first, so the
        // server roots where its file requests would root it and has a project to search.
        ("cold", Canned { encoding: None, ..Canned::default() }.with("workspace/symbol", symbol)),
        // Running, and answering with an error (tsserver's "No Project" while no file is
        // open): given the file, and asked once more.
        (
            "refusing",
            Canned { encoding: running, refusing: Some("workspace/symbol"), ..Canned::default() },
        ),
        // Crashed while answering: not asked again behind the caller's back.
        (
            "crashing",
            Canned { encoding: running, failing: Some("workspace/symbol"), ..Canned::default() },
        ),
    ];
    let report: Vec<String> =
        cases.into_iter().map(|(name, host)| format!("{name}: {}", symbols_asked(host))).collect();
    expect![[r#"
        cold: found ["price"]; skipped []; requests ["workspace/symbol"]; given ["first\n"]
        refusing: found []; skipped ["canned: internal"]; requests ["workspace/symbol", "workspace/symbol"]; given ["first\n"]
        crashing: found []; skipped ["canned: server-unavailable"]; requests ["workspace/symbol"]; given []"#]].assert_eq(&report.join("\n"));
}

/// SPEC §25: navigation waits for its server to be ready within its timeout and says the
/// answer is complete; a server that stays indexing answers `busy` naming its readiness,
/// never a partial answer; whole-store diagnostics include what servers published.
#[test]
fn navigation_waits_for_readiness_or_answers_busy_naming_it() {
    let f = common::code::fixture_with(&[("m.py", "x = 1\n")], "timeouts = { request = 1 }\n");
    let references = json!([{"uri": f.uri("m.py"), "range": range(0, 0, 0, 1)}]);
    let host = Canned::default().with("textDocument/references", references.clone());
    *host.indexing_polls.lock().unwrap() = 5;
    let (service, session, host) = f.service(host);
    let at = json!({"path": "m.py", "position": {"line": 1, "column": 1}});
    let answer = run(&service, &session, "references", at.clone());
    assert_eq!(*host.indexing_polls.lock().unwrap(), 0, "answered before the server was ready");
    assert_eq!((&answer["complete"], &answer["readiness"]), (&json!(true), &json!("ready")));
    assert_eq!(answer["total"], 1);
    drop(service);

    let host = Canned::default().with("textDocument/references", references);
    *host.indexing_polls.lock().unwrap() = u32::MAX;
    let (service, session, host) = f.service(host);
    let err = service.execute(&session, "references", at).unwrap_err();
    let json = err.to_json(&service.store().snapshot().analysis);
    assert_eq!(json["code"], "busy", "{json}");
    assert_eq!((&json["server"], &json["readiness"]), (&json!("canned"), &json!("indexing")));
    assert!(json["since"].is_string(), "{json}");
    let asked: Vec<String> = host.requests.lock().unwrap().iter().map(|r| r.0.clone()).collect();
    assert!(!asked.contains(&"textDocument/references".to_owned()), "{asked:?}");
}

#[test]
fn whole_store_diagnostics_include_what_servers_published() {
    let f = fixture(&[("m.py", "x = y\n"), ("notes.json", "{\"id\": \"a\", \"id\": \"b\"}\n")]);
    let host = Canned { encoding: Some(Encoding::Utf8), ..Canned::default() };
    host.published.lock().unwrap().insert(
        f.store.join("m.py"),
        (0, vec![json!({"range": range(0, 4, 0, 5), "severity": 1, "message": "y is not defined", "code": "undefined"})]),
    );
    let (service, session, _) = f.service(host);
    let all = run(&service, &session, "diagnostics", json!({}));
    let shown: Vec<(Value, Value, Value)> = all["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["path"].clone(), d["code"].clone(), d["server"].clone()))
        .collect();
    assert_eq!(
        shown,
        [
            (json!("m.py"), json!("undefined"), json!("canned")),
            (json!("notes.json"), json!("duplicate-key"), Value::Null),
        ],
        "{all}"
    );
    assert_eq!((&all["complete"], &all["total"]), (&json!(true), &json!(2)));
    // The severity filter applies to the code files' diagnostics too.
    let errors = run(&service, &session, "diagnostics", json!({"severity": "error"}));
    assert_eq!(errors["total"], 2);
    let warnings = run(&service, &session, "diagnostics", json!({"severity": "warning"}));
    assert_eq!(warnings["total"], 0);
}

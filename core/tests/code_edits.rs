//! Code edits as previews in the core (SPEC §18), with a `CodeHost` double whose diagnostics
//! follow the text it holds: a rename's edits become whole-file diffs, the speculative delta
//! lists what the edited texts add and resolve and leaves every server with the text it had,
//! `code-error` refuses a confirm that adds errors, a confirm commits the files as one
//! transaction, and edits that cannot be previewed are refused when the preview is made.

mod common;

use common::code::{Canned, Fixture, check, fixture, range, run};
use common::write;
use expect_test::expect;
use serde_json::{Value, json};
use stardust_core::service::{Front, Service, Session};

/// An error on every line that mentions `broken` (a server that checks the text it holds).
fn broken_lines(text: &str) -> Vec<Value> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains("broken"))
        .map(|(i, line)| {
            let at = line.find("broken").unwrap() as u32;
            json!({"range": range(i as u32, at, i as u32, at + 6), "severity": 1,
                   "message": "broken is not defined", "code": "undefined"})
        })
        .collect()
}

const LIB: &str = "def hello():\n    return 1\n";
const APP: &str = "from lib import hello\nprint(hello())\n";

/// The server's rename of `hello` (lib.py line 1, app.py lines 1 and 2) to `name`.
fn rename_hello(f: &Fixture, name: &str) -> Value {
    json!({"changes": {
        f.uri("lib.py"): [{"range": range(0, 4, 0, 9), "newText": name}],
        f.uri("app.py"): [
            {"range": range(1, 6, 1, 11), "newText": name},
            {"range": range(0, 16, 0, 21), "newText": name},
        ],
    }})
}

fn host_renaming(edit: Value) -> Canned {
    Canned {
        capabilities: json!({"diagnosticProvider": {}}),
        diagnose: Some(broken_lines),
        ..Canned::default()
    }
    .with("textDocument/rename", edit)
}

fn at_hello(name: &str) -> Value {
    json!({"path": "lib.py", "position": {"line": 1, "column": 6}, "newName": name})
}

/// What a preview shows of its files and its delta.
fn summary(preview: &Value) -> Value {
    let docs = preview["documents"].as_array().unwrap();
    json!({
        "diffs": docs.iter().map(|d| d["diff"].clone()).collect::<Vec<_>>(),
        "new": preview["diagnostics"]["new"],
        "resolved": preview["diagnostics"]["resolved"],
        "committable": preview["committable"],
        "reasons": preview["reasons"],
    })
}

/// The store's config: agents named `trusted-agent` may confirm, plus `extra` lines.
fn config(f: &Fixture, extra: &str) {
    let text = format!(
        "[store]\n[mcp]\nmutation = \"gated\"\nmutation_allowlist = [\"trusted-agent\"]\n{extra}"
    );
    write(&f.store, "stardust.toml", &text);
}

/// An agent's session that may confirm its previews.
fn agent(f: &Fixture, service: &Service) -> Session {
    let _ = f;
    service.open_session(Front::Mcp, "trusted-agent")
}

/// The error of confirming preview `id` in `session`.
fn confirm_error(service: &Service, session: &Session, id: &Value) -> String {
    let err =
        service.execute(session, "stardust.preview.confirm", json!({"previewId": id})).unwrap_err();
    format!("{}: {err}", err.code().as_str())
}

fn read(f: &Fixture, rel: &str) -> String {
    std::fs::read_to_string(f.store.join(rel)).unwrap()
}

#[test]
fn a_clean_rename_previews_every_file_and_commits_them_as_one_transaction() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, host) = f.service(host_renaming(rename_hello(&f, "greet")));
    let session = agent(&f, &service);
    let seq = service.store().snapshot().seq;
    let preview = run(&service, &session, "rename_preview", at_hello("greet"));
    check(
        &summary(&preview),
        expect![[r#"
            {
              "diffs": [
                "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n-from lib import hello\n-print(hello())\n+from lib import greet\n+print(greet())\n",
                "--- a/lib.py\n+++ b/lib.py\n@@ -1,2 +1,2 @@\n-def hello():\n+def greet():\n     return 1\n"
              ],
              "new": [],
              "resolved": [],
              "committable": true,
              "reasons": []
            }"#]],
    );
    // Nothing was written, and the server holds the files' own texts again.
    assert_eq!((read(&f, "lib.py"), read(&f, "app.py")), (LIB.into(), APP.into()));
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("app.py")].0, APP);
    let gave: Vec<String> = host.texts_given.lock().unwrap().clone();
    assert!(gave.iter().any(|t| t.contains("print(greet())")), "{gave:?}");

    let committed = run(
        &service,
        &session,
        "stardust.preview.confirm",
        json!({"previewId": preview["previewId"]}),
    );
    assert_eq!(committed["seq"], seq + 1);
    assert_eq!(read(&f, "lib.py"), "def greet():\n    return 1\n");
    assert_eq!(read(&f, "app.py"), "from lib import greet\nprint(greet())\n");
    let txn = &service.store().transactions(seq, 10).unwrap()[0];
    let paths: Vec<&str> = txn.documents.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["app.py", "lib.py"]);
    assert_eq!(txn.origin.to_string(), "mcp:trusted-agent");
    // One-shot.
    let again = confirm_error(&service, &session, &preview["previewId"]);
    assert!(again.starts_with("preview-not-found"), "{again}");
}

#[test]
fn the_delta_lists_new_and_resolved_errors_and_code_error_refuses_the_confirm() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP), ("old.py", "x = broken\n")]);
    config(&f, "[save]\nrefuse = [\"syntax\", \"code-error\"]\n");
    let edit = json!({"changes": {
        f.uri("lib.py"): [{"range": range(0, 4, 0, 9), "newText": "broken"}],
        f.uri("old.py"): [{"range": range(0, 4, 0, 10), "newText": "fixed"}],
    }});
    let (service, _, _) = f.service(host_renaming(edit));
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("broken"));
    check(
        &summary(&preview),
        expect![[r#"
            {
              "diffs": [
                "--- a/lib.py\n+++ b/lib.py\n@@ -1,2 +1,2 @@\n-def hello():\n+def broken():\n     return 1\n",
                "--- a/old.py\n+++ b/old.py\n@@ -1 +1 @@\n-x = broken\n+x = fixed\n"
              ],
              "new": [
                {
                  "path": "lib.py",
                  "range": {
                    "line": 1,
                    "column": 5,
                    "endLine": 1,
                    "endColumn": 11
                  },
                  "severity": "error",
                  "message": "broken is not defined",
                  "server": "canned",
                  "code": "undefined"
                }
              ],
              "resolved": [
                {
                  "path": "old.py",
                  "range": {
                    "line": 1,
                    "column": 5,
                    "endLine": 1,
                    "endColumn": 11
                  },
                  "severity": "error",
                  "message": "broken is not defined",
                  "server": "canned",
                  "code": "undefined"
                }
              ],
              "committable": false,
              "reasons": [
                "lib.py:1:5: error[code-error] broken is not defined (canned)"
              ]
            }"#]],
    );
    let err = confirm_error(&service, &session, &preview["previewId"]);
    assert!(err.starts_with("refused: ") && err.contains("broken is not defined"), "{err}");
    assert_eq!(read(&f, "lib.py"), LIB);
}

#[test]
fn without_code_error_an_edit_adding_errors_commits() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, _) = f.service(host_renaming(rename_hello(&f, "broken")));
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("broken"));
    assert_eq!(preview["diagnostics"]["new"].as_array().unwrap().len(), 3, "{preview}");
    assert_eq!(preview["committable"], true);
    run(&service, &session, "stardust.preview.confirm", json!({"previewId": preview["previewId"]}));
    assert_eq!(read(&f, "lib.py"), "def broken():\n    return 1\n");
}

#[test]
fn a_file_changed_after_the_preview_makes_it_stale() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, _) = f.service(host_renaming(rename_hello(&f, "greet")));
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("greet"));
    write(&f.store, "app.py", "from lib import hello\nprint(hello(), 2)\n");
    let err = confirm_error(&service, &session, &preview["previewId"]);
    assert!(err.starts_with("preview-stale"), "{err}");
    assert_eq!(read(&f, "lib.py"), LIB, "nothing is written");
}

#[test]
fn a_crash_during_the_check_answers_diagnostics_unknown() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let host = Canned {
        capabilities: json!({"diagnosticProvider": {}}),
        failing: Some("textDocument/diagnostic"),
        ..Canned::default()
    }
    .with("textDocument/rename", rename_hello(&f, "greet"));
    let (service, _, _) = f.service(host);
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("greet"));
    assert_eq!(preview["diagnosticsUnknown"], true, "{preview}");
    let reason = preview["diagnosticsUnknownReason"].as_str().unwrap();
    assert!(reason.contains("canned exited while answering"), "{reason}");
    assert_eq!(preview["diagnostics"]["new"], json!([]));
}

#[test]
fn edits_that_cannot_be_previewed_are_refused_when_the_preview_is_made() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP), ("people/ann.json", "{}\n")]);
    config(&f, "");
    let outside = format!("file://{}", f.outside.join("x.py").display());
    std::fs::write(f.outside.join("x.py"), "x\n").unwrap();
    let many: serde_json::Map<String, Value> = (0..1001)
        .map(|i| {
            (f.uri(&format!("gen/m{i}.py")), json!([{"range": range(0, 0, 0, 0), "newText": "x"}]))
        })
        .collect();
    let cases = [
        (
            json!({"documentChanges": [{"kind": "create", "uri": f.uri("new.py")}]}),
            "unsupported",
            "create a file",
        ),
        (
            json!({"changes": {f.uri("lib.py"): [
                {"range": range(0, 0, 0, 9), "newText": "a"},
                {"range": range(0, 4, 0, 11), "newText": "b"},
            ]}}),
            "unsupported",
            "overlap",
        ),
        (
            json!({"changes": {outside: [{"range": range(0, 0, 0, 1), "newText": "y"}]}}),
            "outside-store",
            "outside",
        ),
        (
            json!({"changes": {f.uri("people/ann.json"): [{"range": range(0, 0, 0, 1), "newText": "["}]}}),
            "unsupported",
            "stardust.entity.rename",
        ),
        (
            Value::Object(serde_json::Map::from_iter([(
                "changes".to_owned(),
                Value::Object(many),
            )])),
            "unsupported",
            "1001 files",
        ),
        (json!({"changes": {}}), "unsupported", "changes nothing"),
    ];
    for (edit, code, says) in cases {
        let (service, _, _) = f.service(host_renaming(edit.clone()));
        let session = agent(&f, &service);
        let err = service.execute(&session, "rename_preview", at_hello("greet")).unwrap_err();
        assert_eq!(err.code().as_str(), code, "{edit}: {err}");
        assert!(err.to_string().contains(says), "{edit}: {err}");
    }
    assert_eq!(read(&f, "lib.py"), LIB);

    // A file an editor holds with unsaved changes: the preview would write them too.
    let (service, _, _) = f.service(host_renaming(rename_hello(&f, "greet")));
    let session = agent(&f, &service);
    service.code_open(&session, "app.py", "from lib import hello\nprint(hello())  # typing\n");
    let err = service.execute(&session, "rename_preview", at_hello("greet")).unwrap_err();
    assert_eq!(err.code().as_str(), "conflict", "{err}");
    assert!(err.to_string().contains("app.py has unsaved changes"), "{err}");
}

#[test]
fn a_rename_preview_on_a_document_renames_the_entity_at_the_place() {
    let f = fixture(&[("people/ann.json", "{\"id\": \"person/ann\", \"type\": \"person\"}\n")]);
    config(&f, "");
    let (service, session, _) = f.service(Canned::default());
    let args = json!({"path": "people/ann.json", "position": {"line": 1, "column": 10}, "newName": "person/anne"});
    let preview = run(&service, &session, "rename_preview", args);
    assert_eq!(preview["entities"]["created"], json!(["person/anne"]), "{preview}");
    assert_eq!(preview["entities"]["deleted"], json!(["person/ann"]), "{preview}");
    assert_eq!(preview["command"], "rename_preview");
}

#[test]
fn an_editor_lists_an_agents_preview_and_confirms_it_when_previews_are_shared() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "[previews]\nshare = true\n");
    let (service, _, _) = f.service(host_renaming(rename_hello(&f, "greet")));
    let agent = agent(&f, &service);
    let other_agent = service.open_session(Front::Mcp, "trusted-agent");
    let editor = service.open_session(Front::Lsp, "test-editor");
    let preview = run(&service, &agent, "rename_preview", at_hello("greet"));
    let id = preview["previewId"].clone();

    let listed = run(&service, &editor, "stardust.previews.list", json!({}));
    assert_eq!(listed["shared"], true);
    let item = &listed["previews"][0];
    assert_eq!(
        (&item["previewId"], &item["mine"], &item["client"], &item["front"], &item["files"]),
        (&id, &json!(false), &json!("trusted-agent"), &json!("mcp"), &json!(["app.py", "lib.py"])),
        "{listed}"
    );
    assert_eq!(item["diagnostics"], json!({"new": [], "resolved": []}));
    // Another agent sees it but may not act on it, even with its own gate open.
    let seen = run(&service, &other_agent, "stardust.previews.list", json!({}));
    assert_eq!((&seen["shared"], &seen["previews"][0]["previewId"]), (&json!(false), &Value::Null));
    let err = confirm_error(&service, &other_agent, &id);
    assert!(err.starts_with("preview-not-found"), "{err}");

    let committed = run(&service, &editor, "stardust.preview.confirm", json!({"previewId": id}));
    let seq = committed["seq"].as_u64().unwrap();
    let txn = &service.store().transactions(seq - 1, 1).unwrap()[0];
    assert_eq!(txn.origin.to_string(), "lsp:test-editor");
    assert_eq!(read(&f, "lib.py"), "def greet():\n    return 1\n");
    // The agent's session sees the commit, and its preview is spent.
    let since = run(&service, &agent, "stardust.changes.since", json!({"seq": seq - 1}));
    assert_eq!(since["seq"], seq);
    let err = confirm_error(&service, &agent, &id);
    assert!(err.starts_with("preview-not-found"), "{err}");
    assert_eq!(run(&service, &editor, "stardust.previews.list", json!({}))["previews"], json!([]));
}

#[test]
fn without_sharing_an_editor_sees_other_previews_but_not_their_ids() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, _) = f.service(host_renaming(rename_hello(&f, "greet")));
    let agent = agent(&f, &service);
    let editor = service.open_session(Front::Lsp, "test-editor");
    let preview = run(&service, &agent, "rename_preview", at_hello("greet"));
    let listed = run(&service, &editor, "stardust.previews.list", json!({}));
    assert_eq!(listed["shared"], false);
    assert_eq!(listed["previews"][0]["previewId"], Value::Null, "{listed}");
    assert_eq!(listed["previews"][0]["files"], json!(["app.py", "lib.py"]));
    let discard = json!({"previewId": preview["previewId"]});
    let discarded = run(&service, &editor, "stardust.preview.discard", discard.clone());
    assert_eq!(discarded["discarded"], false, "not shared: another session's preview stays");
    assert_eq!(run(&service, &agent, "stardust.preview.discard", discard)["discarded"], true);
    drop(service);
    // `serve --share-previews` shares them as the config would.
    let shared = Service::new(common::open(&f.store)).with_shared_previews(true);
    let editor = shared.open_session(Front::Lsp, "test-editor");
    assert_eq!(run(&shared, &editor, "stardust.previews.list", json!({}))["shared"], true);
}

/// A quick fix of lib.py that renames `hello` there (an action carrying its edit), and one
/// that only runs a command on the server.
fn actions(f: &Fixture) -> Value {
    json!([
        {"title": "Rename to greet", "kind": "quickfix", "isPreferred": true,
         "edit": {"changes": {f.uri("lib.py"): [{"range": range(0, 4, 0, 9), "newText": "greet"}]}}},
        {"title": "Move to a new file", "kind": "refactor.move",
         "command": {"title": "Move", "command": "server.move", "arguments": []}},
        {"title": "Organize", "command": "server.organize", "arguments": []},
    ])
}

fn host_with_actions(list: Value) -> Canned {
    Canned {
        capabilities: json!({"diagnosticProvider": {}, "codeActionProvider": {"resolveProvider": true}}),
        diagnose: Some(broken_lines),
        ..Canned::default()
    }
    .with("textDocument/codeAction", list)
}

fn list_actions(service: &Service, session: &Session) -> Vec<Value> {
    let at = json!({"path": "lib.py", "position": {"line": 1, "column": 6}});
    let listed = run(service, session, "code_actions", at);
    listed["actions"].as_array().unwrap().clone()
}

/// The error of previewing the action behind `handle` in `session`.
fn action_error(service: &Service, session: &Session, handle: &Value) -> String {
    let err =
        service.execute(session, "code_action_preview", json!({"handle": handle})).unwrap_err();
    format!("{}: {err}", err.code().as_str())
}

#[test]
fn a_listed_code_action_previews_its_edit_with_the_delta_and_commits() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, host) = f.service(host_with_actions(actions(&f)));
    let session = agent(&f, &service);
    let listed = list_actions(&service, &session);
    let shown: Vec<Value> = listed
        .iter()
        .map(|a| json!([a["title"], a["kind"], a["edit"], a["command"], a["handle"].is_string()]))
        .collect();
    check(
        &json!(shown),
        expect![[r#"
            [
              [
                "Rename to greet",
                "quickfix",
                true,
                null,
                true
              ],
              [
                "Move to a new file",
                "refactor.move",
                false,
                "server.move",
                true
              ],
              [
                "Organize",
                null,
                false,
                "server.organize",
                true
              ]
            ]"#]],
    );
    let preview =
        run(&service, &session, "code_action_preview", json!({"handle": listed[0]["handle"]}));
    check(
        &summary(&preview),
        expect![[r#"
            {
              "diffs": [
                "--- a/lib.py\n+++ b/lib.py\n@@ -1,2 +1,2 @@\n-def hello():\n+def greet():\n     return 1\n"
              ],
              "new": [],
              "resolved": [],
              "committable": true,
              "reasons": []
            }"#]],
    );
    assert_eq!(preview["command"], "code_action_preview");
    assert_eq!(read(&f, "lib.py"), LIB, "a preview writes nothing");
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("lib.py")].0, LIB);
    // An action carrying its edit is not resolved again.
    let methods: Vec<String> = host.requests.lock().unwrap().iter().map(|r| r.0.clone()).collect();
    assert!(!methods.iter().any(|m| m == "codeAction/resolve"), "{methods:?}");
    let seq = service.store().snapshot().seq;
    let committed = run(
        &service,
        &session,
        "stardust.preview.confirm",
        json!({"previewId": preview["previewId"]}),
    );
    assert_eq!(committed["seq"], seq + 1);
    assert_eq!(read(&f, "lib.py"), "def greet():\n    return 1\n");
    // The handle was spent by its preview.
    let again = action_error(&service, &session, &listed[0]["handle"]);
    assert!(again.starts_with("preview-not-found: no code action"), "{again}");
}

#[test]
fn an_action_without_an_edit_is_resolved_and_its_delta_shows_new_errors() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "[save]\nrefuse = [\"code-error\"]\n");
    let unresolved = json!([{"title": "Break it", "kind": "quickfix", "data": {"n": 1}}]);
    let resolved = json!({"title": "Break it", "kind": "quickfix", "edit": {"changes": {
        f.uri("lib.py"): [{"range": range(1, 11, 1, 12), "newText": "broken"}],
    }}});
    let host = host_with_actions(unresolved).with("codeAction/resolve", resolved);
    let (service, _, host) = f.service(host);
    let session = agent(&f, &service);
    let listed = list_actions(&service, &session);
    assert_eq!(listed[0]["edit"], false);
    let preview =
        run(&service, &session, "code_action_preview", json!({"handle": listed[0]["handle"]}));
    let resolve =
        host.requests.lock().unwrap().iter().find(|r| r.0 == "codeAction/resolve").cloned();
    assert_eq!(resolve.unwrap().1["data"], json!({"n": 1}), "the action is sent back as listed");
    let new: Vec<String> = preview["diagnostics"]["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{}:{} {}", d["path"], d["range"]["line"], d["message"]))
        .collect();
    assert_eq!(new, ["\"lib.py\":2 \"broken is not defined\""], "{preview}");
    assert_eq!(preview["committable"], false);
    let err = confirm_error(&service, &session, &preview["previewId"]);
    assert!(err.starts_with("refused: "), "{err}");
    assert_eq!(read(&f, "lib.py"), LIB);
}

#[test]
fn code_action_handles_that_cannot_be_previewed_say_why() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, _) = f.service(host_with_actions(actions(&f)));
    let session = agent(&f, &service);
    let other = service.open_session(Front::Mcp, "trusted-agent");

    // Forged.
    let forged = json!("0123456789abcdef0123456789abcdef");
    let err = action_error(&service, &session, &forged);
    assert!(err.starts_with("preview-not-found: no code action"), "{err}");
    // Another session's: not found there, and left for its owner.
    let listed = list_actions(&service, &session);
    let err = action_error(&service, &other, &listed[0]["handle"]);
    assert!(err.starts_with("preview-not-found"), "{err}");
    // Only a command, as a CodeAction or a bare Command.
    for action in &listed[1..] {
        let err = action_error(&service, &session, &action["handle"]);
        assert!(
            err.starts_with("unsupported: ") && err.contains("only runs the server command"),
            "{err}"
        );
    }
    // The file changed since the listing.
    write(&f.store, "lib.py", "def hello():\n    return 2\n");
    let err = action_error(&service, &session, &listed[0]["handle"]);
    assert!(err.starts_with("preview-stale: lib.py changed"), "{err}");
    assert_eq!(read(&f, "lib.py"), "def hello():\n    return 2\n");

    // Expired: handles live as long as previews.
    drop(service);
    let one = json!([actions(&f)[0].clone()]);
    let host = std::sync::Arc::new(host_with_actions(one));
    let service = Service::new(common::open(&f.store))
        .with_code_config_dir(Some(f.config.clone()))
        .with_code_host(host)
        .with_preview_lifetime(std::time::Duration::ZERO);
    let session = agent(&f, &service);
    let listed = list_actions(&service, &session);
    let err = action_error(&service, &session, &listed[0]["handle"]);
    assert!(err.starts_with("preview-expired: the code action"), "{err}");
    // A session's handles go with it.
    drop(service);
    let (service, _, _) = f.service(host_with_actions(actions(&f)));
    let session = agent(&f, &service);
    let listed = list_actions(&service, &session);
    service.close_session(&session);
    let session = agent(&f, &service);
    let err = action_error(&service, &session, &listed[0]["handle"]);
    assert!(err.starts_with("preview-not-found"), "{err}");
}

#[test]
fn the_service_tells_the_store_which_files_are_code_and_checks_mount_saves() {
    use stardust_core::store::{Change, Origin, PathKind};
    let f = fixture(&[("lib.py", LIB), ("app.py", APP), ("main.rs", "fn main() {}\n")]);
    config(&f, "[save]\nrefuse = [\"code-error\"]\n");
    let host = std::sync::Arc::new(host_renaming(json!({})));
    let service = std::sync::Arc::new(
        Service::new(common::open(&f.store))
            .with_code_config_dir(Some(f.config.clone()))
            .with_code_host(host.clone()),
    );
    service.install_code_saves();
    let store = service.store();
    // The canned server covers .py and .txt; nothing covers .rs.
    assert_eq!(store.path_kind("lib.py"), PathKind::Document);
    assert_eq!(store.path_kind("main.rs"), PathKind::Plain);
    let broken = "def hello():\n    return broken\n";
    let err = store.commit(Origin::Mount, vec![Change::put("lib.py", broken)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the save adds errors its language server reports, and [save] refuse lists code-error; \
         nothing was written: lib.py:2:12: error[code-error] broken is not defined (canned)"
    );
    assert_eq!(read(&f, "lib.py"), LIB);
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("lib.py")].0, LIB, "given back");
    let fixed = "def hello():\n    return 2\n";
    store.commit(Origin::Mount, vec![Change::put("lib.py", fixed)]).unwrap();
    assert_eq!(read(&f, "lib.py"), fixed);
}

#[test]
fn preview_lenses_name_who_made_the_preview_and_the_line_its_change_starts() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "[previews]\nshare = true\n");
    let edit = json!({"changes": {
        f.uri("app.py"): [{"range": range(1, 6, 1, 11), "newText": "greet"}],
    }});
    let (service, _, _) = f.service(host_renaming(edit));
    let agent = agent(&f, &service);
    let editor = service.open_session(Front::Lsp, "test-editor");
    let other_agent = service.open_session(Front::Mcp, "other-agent");
    let preview = run(&service, &agent, "rename_preview", at_hello("greet"));
    let lenses = service.preview_lenses(&editor, "app.py");
    assert_eq!(lenses.len(), 1);
    let lens = &lenses[0];
    assert_eq!(
        (lens.preview_id.as_str(), lens.client.as_str(), lens.front, lens.command.as_str()),
        (preview["previewId"].as_str().unwrap(), "trusted-agent", "mcp", "rename_preview")
    );
    assert_eq!((lens.mine, lens.line), (false, 1), "the change starts on app.py's second line");
    assert!(service.preview_lenses(&agent, "app.py")[0].mine);
    assert!(service.preview_lenses(&editor, "lib.py").is_empty(), "the preview leaves lib.py");
    // An agent never acts on another session's preview: no lens.
    assert!(service.preview_lenses(&other_agent, "app.py").is_empty());
}

/// A server like pyright: it publishes (push, no pull) what `broken_lines` finds, and checks
/// the texts `staged` picks in stages (the file's previous diagnostics first, under the new
/// version, while at work; its findings once it reports the work done).
fn host_pushing(edit: Value, staged: fn(&str) -> bool) -> Canned {
    Canned { push: Some(broken_lines), staged: Some(staged), ..Canned::default() }
        .with("textDocument/rename", edit)
}

/// The rename's new errors, as `path:line`.
fn new_errors(preview: &Value) -> Vec<String> {
    preview["diagnostics"]["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{}:{}", d["path"].as_str().unwrap(), d["range"]["line"]))
        .collect()
}

#[test]
fn a_push_server_s_staged_check_is_waited_out_and_an_idle_one_is_read_at_once() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, host) =
        f.service(host_pushing(rename_hello(&f, "broken"), |t| t.contains("broken")));
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("broken"));
    // The edited texts' first publications (no errors yet) were not taken for the answer:
    // the server was at work until it reported its findings.
    assert_eq!(new_errors(&preview), ["app.py:1", "app.py:2", "lib.py:1"], "{preview}");
    assert!(preview.get("diagnosticsUnknown").is_none(), "{preview}");
    // The files' own texts were checked at once and the server was idle: the diagnostics
    // before the edit are what it had published, read once per file, with no wait.
    let log = host.log.lock().unwrap().clone();
    let first_edit = log.iter().position(|l| l.contains("broken")).unwrap();
    let reads = log[..first_edit].iter().filter(|l| l.starts_with("publication")).count();
    assert_eq!(reads, 2, "{log:?}");
    // And the server holds the files' own texts again.
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("app.py")].0, APP);
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("lib.py")].0, LIB);
}

#[test]
fn the_texts_given_back_are_checked_again_before_the_next_preview_s_before() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let (service, _, _) = f.service(host_pushing(rename_hello(&f, "broken"), |_| true));
    let session = agent(&f, &service);
    // Every text is checked in stages: the second preview finds the texts given back by the
    // first published under their new version with the edited texts' errors, while the server
    // is at work on them; taken as the diagnostics before the edit, they would hide the new
    // errors.
    for _ in 0..2 {
        let preview = run(&service, &session, "rename_preview", at_hello("broken"));
        assert_eq!(new_errors(&preview), ["app.py:1", "app.py:2", "lib.py:1"], "{preview}");
        run(
            &service,
            &session,
            "stardust.preview.discard",
            json!({"previewId": preview["previewId"]}),
        );
    }
}

#[test]
fn a_push_server_that_stops_while_checking_answers_diagnostics_unknown() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let host = Canned {
        stops_on: Some(|t| t.contains("broken")),
        ..host_pushing(rename_hello(&f, "broken"), |t| t.contains("broken"))
    };
    let (service, _, host) = f.service(host);
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("broken"));
    assert_eq!(preview["diagnosticsUnknown"], true, "{preview}");
    let reason = preview["diagnosticsUnknownReason"].as_str().unwrap();
    assert!(
        reason.contains("stopped while checking") && reason.contains("canned crashed"),
        "{reason}"
    );
    assert_eq!(preview["diagnostics"]["new"], json!([]));
    // The texts were given back all the same.
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("app.py")].0, APP);
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("lib.py")].0, LIB);
}

#[test]
fn a_push_server_still_at_work_at_the_bound_answers_diagnostics_unknown() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    let host = Canned {
        stalls: true,
        ..host_pushing(rename_hello(&f, "broken"), |t| t.contains("broken"))
    };
    let (service, _, host) = f.service(host);
    let session = agent(&f, &service);
    // Its first stage (no errors) is published for every edited text, but it never says
    // its work is done: what it published is not taken for the answer.
    let preview = run(&service, &session, "rename_preview", at_hello("broken"));
    assert_eq!(preview["diagnosticsUnknown"], true, "{preview}");
    let reason = preview["diagnosticsUnknownReason"].as_str().unwrap();
    assert!(reason.contains("still checking the texts"), "{reason}");
    assert_eq!(preview["committable"], true, "[save] refuse does not list code-error here");
    assert_eq!(host.texts.lock().unwrap()[&f.store.join("lib.py")].0, LIB);
}

/// SPEC §25: a rename whose edit leaves out a place the server's `references` report for the
/// same symbol is not committable, and the preview lists the places.
#[test]
fn a_rename_missing_a_reference_is_incomplete_and_not_committable() {
    let f = fixture(&[("lib.py", LIB), ("app.py", APP)]);
    config(&f, "");
    // The rename edits lib.py only; the references know app.py's two uses.
    let partial =
        json!({"changes": {f.uri("lib.py"): [{"range": range(0, 4, 0, 9), "newText": "greet"}]}});
    let references = json!([
        {"uri": f.uri("lib.py"), "range": range(0, 4, 0, 9)},
        {"uri": f.uri("app.py"), "range": range(0, 16, 0, 21)},
        {"uri": f.uri("app.py"), "range": range(1, 6, 1, 11)},
    ]);
    let host = host_renaming(partial).with("textDocument/references", references.clone());
    let (service, _, _) = f.service(host);
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("greet"));
    assert_eq!(preview["committable"], false);
    check(
        &json!({"reasons": preview["reasons"], "incomplete": preview["incomplete"]}),
        expect![[r#"
            {
              "reasons": [
                "incomplete: the edit leaves out 2 places that the server's references report for the same symbol (app.py:1:17, app.py:2:7); ask again once server_status shows the server ready"
              ],
              "incomplete": [
                {
                  "path": "app.py",
                  "range": {
                    "line": 1,
                    "column": 17,
                    "endLine": 1,
                    "endColumn": 22
                  },
                  "server": "canned"
                },
                {
                  "path": "app.py",
                  "range": {
                    "line": 2,
                    "column": 7,
                    "endLine": 2,
                    "endColumn": 12
                  },
                  "server": "canned"
                }
              ]
            }"#]],
    );
    let id = &preview["previewId"];
    assert!(
        confirm_error(&service, &session, id).starts_with("refused"),
        "committed a partial rename"
    );
    assert_eq!(read(&f, "app.py"), APP);
    drop(service);

    // The whole rename covers every reference: committable.
    let host = host_renaming(rename_hello(&f, "greet")).with("textDocument/references", references);
    let (service, _, _) = f.service(host);
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("greet"));
    assert_eq!((&preview["committable"], preview.get("incomplete")), (&json!(true), None));
}

/// SPEC §25: a preview is made only on a ready server, else `busy` naming its readiness.
#[test]
fn a_preview_on_a_server_still_indexing_is_busy() {
    let f = common::code::fixture_with(
        &[("lib.py", LIB), ("app.py", APP)],
        "timeouts = { request = 1 }\n",
    );
    config(&f, "");
    let host = host_renaming(rename_hello(&f, "greet"));
    *host.indexing_polls.lock().unwrap() = u32::MAX;
    let (service, _, host) = f.service(host);
    let session = agent(&f, &service);
    let err = service.execute(&session, "rename_preview", at_hello("greet")).unwrap_err();
    let json = err.to_json(&service.store().snapshot().analysis);
    assert_eq!((&json["code"], &json["readiness"]), (&json!("busy"), &json!("indexing")), "{json}");
    let asked: Vec<String> = host.requests.lock().unwrap().iter().map(|r| r.0.clone()).collect();
    assert!(!asked.contains(&"textDocument/rename".to_owned()), "{asked:?}");
}

/// A check that words a finding differently each time (pyright shortens its messages):
/// `hello` flagged wherever it is called, with the text's length in the message.
fn calls_flagged(text: &str) -> Vec<Value> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let at = line.find("old()")? as u32;
            Some(json!({"range": range(i as u32, at, i as u32, at + 3), "severity": 1,
                        "message": format!("old is deprecated ({} bytes)", text.len()), "code": "deprecated"}))
        })
        .collect()
}

/// SPEC §25: a diagnostic that is the same before and after an edit (severity, code and the
/// place the edit moved it to) is neither new nor resolved, whatever its message says; and
/// the delta covers a file the edit does not touch that imports a touched one.
#[test]
fn a_pre_existing_error_moved_by_the_edit_is_not_in_the_delta_and_importers_are_checked() {
    const A: &str = "def f():\n    return old()\n";
    const B: &str = "from a import f\nx = old()\n";
    const C: &str = "y = 1\n";
    let f = fixture(&[("a.py", A), ("b.py", B), ("c.py", C)]);
    config(&f, "");
    // `f` renamed to `longer_name`: the pre-existing error on line 2 of a.py keeps its place,
    // and its message changes with the text's length.
    let edit = json!({"changes": {f.uri("a.py"): [{"range": range(0, 4, 0, 5), "newText": "longer_name"}]}});
    let host = Canned {
        capabilities: json!({"diagnosticProvider": {}}),
        diagnose: Some(calls_flagged),
        ..Canned::default()
    }
    .with("textDocument/rename", edit);
    let (service, _, host) = f.service(host);
    let session = agent(&f, &service);
    let at =
        json!({"path": "a.py", "position": {"line": 1, "column": 5}, "newName": "longer_name"});
    let preview = run(&service, &session, "rename_preview", at);
    assert_eq!(summary(&preview)["new"], json!([]), "{preview}");
    assert_eq!(summary(&preview)["resolved"], json!([]), "{preview}");
    assert_eq!(preview["committable"], true);
    // b.py imports a: checked (given to the server) though untouched; c.py is not.
    let given: Vec<String> = host.texts_given.lock().unwrap().clone();
    assert!(given.iter().any(|t| t == B), "{given:?}");
    assert!(!given.iter().any(|t| t == C), "{given:?}");
}

/// A server whose work ended a moment ago is asked at once: the settle after the end of work
/// (`READY_SETTLE`) is for a caller deciding whether the server is ready, while an answer's
/// own readiness, read when it arrives, says whether work began meanwhile. Here the server's
/// work ends just as it is looked at, every time: its readiness is always `indexing`, and a
/// preview that waited for `ready` would answer `busy` after the 1 s request timeout.
#[test]
fn a_server_whose_work_has_just_ended_is_asked_without_the_settle() {
    let f = common::code::fixture_with(
        &[("lib.py", LIB), ("app.py", APP)],
        "timeouts = { request = 1 }\n",
    );
    config(&f, "");
    let host = Canned { work_just_ended: true, ..host_renaming(rename_hello(&f, "greet")) };
    let (service, _, host) = f.service(host);
    let session = agent(&f, &service);
    let preview = run(&service, &session, "rename_preview", at_hello("greet"));
    assert_eq!(preview["committable"], true, "{preview}");
    let asked: Vec<String> = host.requests.lock().unwrap().iter().map(|r| r.0.clone()).collect();
    assert_eq!(asked.iter().filter(|m| *m == "textDocument/rename").count(), 1, "{asked:?}");
}

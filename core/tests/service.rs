//! The command registry and previews on a real store, without a transport: every command of
//! SPEC §7 and every way a preview can fail.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{open, read, write};
use expect_test::expect;
use serde_json::{Value, json};
use stardust_core::service::{
    CommandError, Front, Service, Session, SessionOptions, registry, shown_in,
};
use stardust_core::store::{Change, Origin};

const BOOK_SCHEMA: &str = r#"{"type": "object", "required": ["id", "type", "title"],
 "properties": {"title": {"type": "string"}, "year": {"type": "integer"},
  "author": {"type": "string", "x-stardust-ref": "person"}}}"#;

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "schemas/book.schema.json", BOOK_SCHEMA);
    write(root, "schemas/person.schema.json", r#"{"type": "object", "required": ["name"]}"#);
    write(
        root,
        "books/dune.dust",
        "; the first one\nid      book/dune\ntype    book\ntitle   Dune   ; as printed\nyear    1965\nauthor  @person/frank-herbert\n",
    );
    write(root, "books/emma.dust", "id    book/emma\ntype  book\ntitle Emma\nyear  1815\n");
    write(root, "people/frank.json", &common::person("person/frank-herbert", "Frank Herbert"));
    dir
}

fn service(root: &Path) -> (Service, Session) {
    let service = Service::new(open(root));
    let session = service.open_session(Front::Lsp, "test-editor");
    (service, session)
}

fn run(service: &Service, session: &Session, name: &str, args: Value) -> Value {
    service.execute(session, name, args).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn fail(service: &Service, session: &Session, name: &str, args: Value) -> CommandError {
    match service.execute(session, name, args) {
        Ok(v) => panic!("{name} should fail, answered {v}"),
        Err(e) => e,
    }
}

/// An agent's session; `allow_mutation` as `stardust mcp --allow-mutation`.
fn agent(service: &Service, client: &str, allow_mutation: bool) -> Session {
    service.open_session_with(Front::Mcp, SessionOptions { client: Some(client), allow_mutation })
}

fn rename(service: &Service, session: &Session, id: &str, new_id: &str) -> Value {
    run(service, session, "stardust.entity.rename", json!({"id": id, "newId": new_id}))
}

fn confirm(service: &Service, session: &Session, preview: &Value) -> Result<Value, CommandError> {
    service.execute(session, "stardust.preview.confirm", json!({"previewId": preview["previewId"]}))
}

#[test]
fn describe_lists_every_command_of_the_spec_with_schemas() {
    let dir = store();
    let (service, session) = service(dir.path());
    let described = run(&service, &session, "stardust.commands.describe", json!({}));
    let names: Vec<&str> = described["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    expect![[r#"
        [
            "stardust.commands.describe",
            "stardust.status",
            "stardust.expression.evaluate",
            "stardust.query.execute",
            "stardust.entity.get",
            "stardust.entity.validate",
            "stardust.entity.create",
            "stardust.mutation.execute",
            "stardust.patch.apply",
            "stardust.entity.rename",
            "stardust.backup.define",
            "stardust.preview.confirm",
            "stardust.preview.discard",
            "stardust.previews.list",
            "stardust.changes.since",
            "stardust.history.list",
            "stardust.document.at",
            "stardust.entity.at",
            "stardust.transaction.diff",
            "stardust.transaction.revert",
        ]
    "#]]
    .assert_debug_eq(&names);
    assert_eq!(names, shown_in(Front::Lsp).map(|c| c.name).collect::<Vec<_>>());
    assert_eq!(names.len(), 20, "SPEC §7 and the history commands of §26");
    assert_eq!(
        registry().len(),
        20 + 8 + 9 + 2 + 1 + 1,
        "the navigation tools (SPEC §13, §17), rename_preview and code_action_preview (§18), \
         preview_get (an agent's pages of a preview) and stardust.backup.run"
    );
    let create = &described["commands"][6];
    assert_eq!(create["effect"], "mutation");
    assert_eq!(create["confirmation"], "required");
    assert_eq!(create["arguments"]["required"], json!(["entities"]));
    assert_eq!(described["commands"][3]["effect"], "read");
    assert_eq!(described["commands"][3]["confirmation"], "none");
}

#[test]
fn arguments_are_validated_before_the_handler_naming_the_field() {
    let dir = store();
    let (service, session) = service(dir.path());
    let cases = [
        (
            "stardust.query.execute",
            json!({"document": "find [?b]", "limit": -1}),
            "`limit` must be at least 0, not -1",
        ),
        (
            "stardust.entity.get",
            json!({"id": "book/dune", "extra": 1}),
            "`extra` is not an argument; the arguments are id",
        ),
        ("stardust.entity.rename", json!({"id": "book/dune"}), "`newId` is required"),
        (
            "stardust.entity.create",
            json!({"entities": [{"id": "x/y"}, 42]}),
            "`entities[1]` must be an object or a string, not 42",
        ),
        ("stardust.nope", json!({}), "unknown command stardust.nope"),
    ];
    for (name, args, why) in cases {
        let err = fail(&service, &session, name, args);
        assert_eq!(err.code(), "invalid-arguments", "{name}");
        assert!(err.to_string().contains(why), "{name}: {err}");
    }
}

#[test]
fn reads_answer_from_the_current_snapshot() {
    let dir = store();
    let (service, session) = service(dir.path());
    let rows = run(
        &service,
        &session,
        "stardust.query.execute",
        json!({"document": "find [?b ?t] where [[?b type book] [?b title ?t]]", "limit": 1}),
    );
    assert_eq!(
        rows,
        json!({"columns": ["?b", "?t"], "rows": [["book/dune", "Dune"]], "total": 2, "nextOffset": 1})
    );
    let value = run(
        &service,
        &session,
        "stardust.expression.evaluate",
        json!({"expression": "@book/dune.author.name"}),
    );
    assert_eq!(value, json!({"value": "Frank Herbert"}));
    let got = run(&service, &session, "stardust.entity.get", json!({"id": "book/dune"}));
    assert_eq!(got["path"], "books/dune.dust");
    assert_eq!(got["value"]["year"], 1965);
    assert_eq!(got["range"], json!({"line": 2, "column": 1, "endLine": 6, "endColumn": 30}));
    assert_eq!(got["version"].as_str().unwrap().len(), 64);
    let err = fail(&service, &session, "stardust.entity.get", json!({"id": "book/dun"}));
    assert_eq!(err.code(), "not-found");
    assert!(err.to_string().contains("did you mean 'book/dune'"), "{err}");
}

#[test]
fn validate_diagnoses_without_committing() {
    let dir = store();
    let (service, session) = service(dir.path());
    let ok = run(
        &service,
        &session,
        "stardust.entity.validate",
        json!({"entity": "id book/x type book title X author @person/frank-herbert"}),
    );
    assert_eq!(ok, json!({"valid": true, "diagnostics": []}));
    let bad = run(
        &service,
        &session,
        "stardust.entity.validate",
        json!({"entity": {"id": "book/dune", "type": "book", "title": 3, "author": "@person/nobody"}}),
    );
    assert_eq!(bad["valid"], false);
    let codes: Vec<&str> = bad["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["schema", "dangling-ref"]);
    assert_eq!(
        read(dir.path(), "books/dune.dust").unwrap().lines().nth(3),
        Some("title   Dune   ; as printed")
    );
    assert!(!dir.path().join("book").exists());
}

#[test]
fn a_patch_previews_then_commits_exactly_what_it_showed() {
    let dir = store();
    let root = dir.path();
    let (service, session) = service(root);
    let before = read(root, "books/dune.dust").unwrap();
    let preview = run(
        &service,
        &session,
        "stardust.patch.apply",
        json!({"document":
        "ops [{create {id ?messiah type book title 'Dune Messiah' author @person/frank-herbert}}
              {set {id book/dune year 1966 sequel @?messiah}}]"}),
    );
    assert_eq!(read(root, "books/dune.dust").unwrap(), before, "a preview writes nothing");
    assert!(!root.join("book/dune-messiah.dust").exists());
    assert_eq!(preview["resolved"], json!({"?messiah": "book/dune-messiah"}));
    assert_eq!(preview["committable"], true);
    assert_eq!(
        preview["entities"],
        json!({"created": ["book/dune-messiah"], "changed": ["book/dune"], "deleted": []})
    );
    assert_eq!(preview["previewId"].as_str().unwrap().len(), 32);
    let docs = preview["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["path"], "book/dune-messiah.dust");
    assert_eq!(docs[0]["change"], "created");
    assert_eq!(docs[0]["before"], Value::Null);
    expect![[r#"
        --- a/books/dune.dust
        +++ b/books/dune.dust
        @@ -2,5 +2,6 @@
         id      book/dune
         type    book
         title   Dune   ; as printed
        -year    1965
        +year    1966
         author  @person/frank-herbert
        +sequel  @book/dune-messiah
    "#]]
    .assert_eq(docs[1]["diff"].as_str().unwrap());

    let id = preview["previewId"].clone();
    let confirmed = run(&service, &session, "stardust.preview.confirm", json!({"previewId": id}));
    assert_eq!(confirmed["resolved"], json!({"?messiah": "book/dune-messiah"}));
    let seq = confirmed["seq"].as_u64().unwrap();
    assert!(seq >= 2);
    let dune = read(root, "books/dune.dust").unwrap();
    assert!(dune.contains("title   Dune   ; as printed\nyear    1966\n"), "{dune}");
    assert_eq!(
        docs[1]["after"].as_str().unwrap(),
        stardust_core::analysis::version_of(dune.as_bytes())
    );
    assert!(read(root, "book/dune-messiah.dust").unwrap().contains("title   'Dune Messiah'"));
    let txn = service.store().transactions(seq - 1, 10).unwrap();
    assert_eq!(txn[0].origin, Origin::Lsp("test-editor".into()));

    // Single use: the second attempt finds nothing.
    let again = fail(&service, &session, "stardust.preview.confirm", json!({"previewId": id}));
    assert_eq!(again.code(), "preview-not-found");
    let status = run(&service, &session, "stardust.status", json!({}));
    assert_eq!(status["seq"], seq);
    assert_eq!(
        status["sessions"],
        json!([{"id": session.id, "front": "lsp", "client": "test-editor"}])
    );
    let decision = &status["decisions"][0];
    assert_eq!(decision["allowed"], true);
    assert_eq!(decision["reason"], format!("committed as seq {seq}"));
}

#[test]
fn a_refused_preview_says_why_and_confirm_writes_nothing() {
    let dir = store();
    let root = dir.path();
    let (service, session) = service(root);
    let preview = run(
        &service,
        &session,
        "stardust.entity.create",
        json!({"entities": [{"id": "?x", "type": "book", "title": 12}]}),
    );
    assert_eq!(preview["committable"], false);
    assert_eq!(preview["diagnostics"]["new"][0]["code"], "schema");
    assert!(preview["reasons"][0].as_str().unwrap().starts_with("book/"), "{}", preview["reasons"]);
    let err = confirm(&service, &session, &preview).unwrap_err();
    assert_eq!(err.code(), "refused");
    let details = err.details(&service.store().snapshot().analysis);
    assert_eq!(details["problems"][0]["code"], "schema");
    assert!(!root.join("book").exists(), "nothing written");
    // Consumed even though it failed.
    let again = confirm(&service, &session, &preview).unwrap_err();
    assert_eq!(again.code(), "preview-not-found");
}

#[test]
fn a_preview_is_stale_after_its_document_changes() {
    let dir = store();
    let root = dir.path();
    let (service, session) = service(root);
    let preview = rename(&service, &session, "book/emma", "book/emma-1815");
    service
        .store()
        .commit(
            Origin::Mount,
            vec![Change::put("books/emma.dust", "id    book/emma\ntype  book\ntitle 'Emma.'\n")],
        )
        .unwrap();
    let err = confirm(&service, &session, &preview).unwrap_err();
    assert_eq!(err.code(), "preview-stale");
    assert!(err.to_string().starts_with("books/emma.dust changed since the preview"), "{err}");
    assert_eq!(
        read(root, "books/emma.dust").unwrap(),
        "id    book/emma\ntype  book\ntitle 'Emma.'\n"
    );
}

#[test]
fn a_preview_expires() {
    let dir = store();
    let service = Service::new(open(dir.path())).with_preview_lifetime(Duration::ZERO);
    let session = agent(&service, "agent", true);
    let preview = rename(&service, &session, "book/emma", "book/e");
    let err = confirm(&service, &session, &preview).unwrap_err();
    assert_eq!(err.code(), "preview-expired");
    assert!(read(dir.path(), "books/emma.dust").unwrap().contains("book/emma\n"));
}

#[test]
fn a_preview_belongs_to_its_session() {
    let dir = store();
    let (service, mine) = service(dir.path());
    let other = agent(&service, "agent", true);
    let preview = rename(&service, &mine, "book/emma", "book/e");
    let id = json!({"previewId": preview["previewId"]});
    assert_eq!(
        fail(&service, &other, "stardust.preview.confirm", id.clone()).code(),
        "preview-not-found"
    );
    assert_eq!(
        run(&service, &other, "stardust.preview.discard", id.clone()),
        json!({"discarded": false})
    );
    // The other session's attempt did not consume it.
    assert_eq!(
        run(&service, &mine, "stardust.preview.discard", id.clone()),
        json!({"discarded": true})
    );
    assert_eq!(fail(&service, &mine, "stardust.preview.confirm", id).code(), "preview-not-found");
    assert_eq!(
        fail(&service, &mine, "stardust.preview.confirm", json!({"previewId": "0"})).code(),
        "preview-not-found"
    );
}

#[test]
fn rename_rewrites_every_reference_across_notations() {
    let dir = store();
    let root = dir.path();
    let (service, session) = service(root);
    let preview = rename(&service, &session, "person/frank-herbert", "person/herbert");
    assert_eq!(preview["entities"]["changed"], json!(["book/dune"]));
    confirm(&service, &session, &preview).unwrap();
    assert!(read(root, "books/dune.dust").unwrap().contains("author  @person/herbert\n"));
    assert!(read(root, "people/frank.json").unwrap().contains("\"id\": \"person/herbert\""));
    let err = fail(
        &service,
        &session,
        "stardust.entity.rename",
        json!({"id": "book/dune", "newId": "book/emma"}),
    );
    assert_eq!(err.code(), "invalid-arguments");
}

#[test]
fn mutation_execute_sets_and_unsets_on_what_the_query_finds() {
    let dir = store();
    let root = dir.path();
    let (service, session) = service(root);
    let preview = run(
        &service,
        &session,
        "stardust.mutation.execute",
        json!({
            "document": {"find": ["?b"], "where": [["?b", "type", "book"], ["?b", "year", "?y"]], "filter": ["?y < 1900"]},
            "set": {"classic": true},
            "unset": ["year", "subtitle"],
        }),
    );
    assert_eq!(preview["entities"]["changed"], json!(["book/emma"]));
    confirm(&service, &session, &preview).unwrap();
    assert_eq!(
        read(root, "books/emma.dust").unwrap(),
        "id    book/emma\ntype  book\ntitle Emma\nclassic true\n"
    );
    let err = fail(
        &service,
        &session,
        "stardust.mutation.execute",
        json!({"document": "find [?b] where [[?b type book]]"}),
    );
    assert!(err.to_string().contains("give `set`"), "{err}");
}

#[test]
fn backup_define_previews_a_backup_entity() {
    let dir = store();
    let (service, session) = service(dir.path());
    let preview = run(
        &service,
        &session,
        "stardust.backup.define",
        json!({"id": "backup/nightly", "target": "/var/backups/x"}),
    );
    assert_eq!(preview["entities"]["created"], json!(["backup/nightly"]));
    expect![[r#"
        --- /dev/null
        +++ b/backup/nightly.dust
        @@ -0,0 +1,5 @@
        +id       backup/nightly
        +type     backup
        +include  [**]
        +target   /var/backups/x
        +keep     7
    "#]]
    .assert_eq(preview["documents"][0]["diff"].as_str().unwrap());
}

#[test]
fn changes_since_answers_from_the_log() {
    let dir = store();
    let (service, session) = service(dir.path());
    let head = service.store().snapshot().seq;
    let preview = rename(&service, &session, "book/emma", "book/e");
    confirm(&service, &session, &preview).unwrap();
    let changes = run(&service, &session, "stardust.changes.since", json!({"seq": head}));
    assert_eq!(changes["seq"], head + 1);
    assert_eq!(
        changes["entities"],
        json!([{"id": "book/e", "change": "created"}, {"id": "book/emma", "change": "deleted"}])
    );
    assert_eq!(changes["documents"][0]["path"], "books/emma.dust");
}

#[test]
fn closing_a_session_drops_its_previews() {
    let dir = store();
    let (service, session) = service(dir.path());
    rename(&service, &session, "book/emma", "book/e");
    let other = service.open_session(Front::Cli, "");
    assert_eq!(run(&service, &other, "stardust.status", json!({}))["previews"], 1);
    service.close_session(&session);
    let status = run(&service, &other, "stardust.status", json!({}));
    assert_eq!(status["previews"], 0);
    assert_eq!(status["sessions"], json!([{"id": other.id, "front": "cli", "client": "unknown"}]));
}

#[test]
fn a_preview_survives_commits_to_other_documents() {
    let dir = store();
    let root = dir.path();
    let (service, session) = service(root);
    let preview = rename(&service, &session, "book/emma", "book/e");
    // Committed after the preview: the confirm cannot reuse the preview's analysis and
    // diagnoses again, against the newer snapshot.
    service
        .store()
        .commit(
            Origin::Mount,
            vec![Change::create("books/new.dust", "id book/new\ntype book\ntitle New\n")],
        )
        .unwrap();
    let confirmed = confirm(&service, &session, &preview).unwrap();
    assert_eq!(confirmed["seq"], service.store().snapshot().seq);
    assert!(read(root, "books/emma.dust").unwrap().starts_with("id    book/e\n"));
    assert_eq!(service.store().snapshot().analysis.entity("book/new").len(), 1);
}

#[test]
fn dispatch_goes_through_the_contract_shown_in_the_sessions_front() {
    let dir = store();
    let (service, editor) = service(dir.path());
    let agent = agent(&service, "agent", false);
    let cli = service.open_session(Front::Cli, "cli");
    // Every contract a front shows runs its own handler: a describe through each front
    // answers the commands, a navigation tool answers a page.
    for session in [&editor, &agent, &cli] {
        let described = run(&service, session, "stardust.commands.describe", json!({}));
        assert_eq!(described["commands"].as_array().unwrap().len(), 20);
    }
    let symbols = run(&service, &agent, "workspace_symbols", json!({"query": "dune"}));
    assert_eq!(symbols["symbols"][0]["id"], "book/dune", "{symbols}");
    assert_eq!(symbols["total"], 1);
    let hover =
        run(&service, &agent, "hover", json!({"entity": "book/dune", "pointer": "/author"}));
    assert_eq!(hover["hover"]["entity"], "book/dune", "{hover}");
    // A contract the session's front does not show is unknown there.
    for (session, name) in
        [(&editor, "hover"), (&agent, "stardust.backup.run"), (&editor, "stardust.backup.run")]
    {
        let err = fail(&service, session, name, json!({}));
        assert_eq!(err.code(), "invalid-arguments", "{name}");
        assert!(err.to_string().contains(&format!("unknown command {name}")), "{err}");
    }
    // The command line's operation runs through its contract too: arguments first.
    let err = fail(&service, &cli, "stardust.backup.run", json!({}));
    assert!(err.to_string().contains("`id` is required (the backup definition's id"), "{err}");
    let err = fail(&service, &cli, "stardust.backup.run", json!({"id": "backup/none"}));
    assert_eq!(err.code(), "not-found", "{err}");
}

#[test]
fn a_navigation_tool_checks_nested_fields_and_minimums() {
    let dir = store();
    let (service, _) = service(dir.path());
    let agent = agent(&service, "agent", false);
    let at = |position: Value| json!({"path": "books/dune.dust", "position": position});
    let cases = [
        (
            at(json!({"line": 0, "column": 1})),
            "`position.line` must be at least 1, not 0 (the line, 1-based)",
        ),
        (
            at(json!({"line": 2})),
            "`position.column` is required (the column in characters, 1-based)",
        ),
        (
            at(json!({"line": 2, "column": 1, "row": 3})),
            "`position.row` is not an argument of `position`; the arguments are line, column",
        ),
        (
            at(json!({"line": "2", "column": 1})),
            "`position.line` must be an integer, not \"2\" (the line, 1-based)",
        ),
        (
            json!({"entity": "book/dune", "limit": 501}),
            "`limit` must be at most 500, not 501 (items in the page)",
        ),
    ];
    for (args, why) in cases {
        let err = fail(&service, &agent, "references", args.clone());
        assert_eq!(err.code(), "invalid-arguments", "{args}");
        assert_eq!(err.to_string(), format!("invalid arguments for references: {why}"));
    }
    let found = run(&service, &agent, "references", at(json!({"line": 2, "column": 10})));
    assert_eq!(found["total"], 1, "{found}");
}

#[test]
fn the_gate_decides_at_confirm_and_fails_closed_without_a_client_name() {
    let dir = store();
    write(
        dir.path(),
        "stardust.toml",
        "[mcp]\nmutation = \"gated\"\nmutation_allowlist = [\"claude-code\"]\n",
    );
    let service = Service::new(open(dir.path()));
    let allowed = agent(&service, "claude-code", false);
    let denied = agent(&service, "codex", false);
    let nameless = service.open_session_with(Front::Mcp, SessionOptions::default());
    let flagged = service
        .open_session_with(Front::Mcp, SessionOptions { client: None, allow_mutation: true });
    assert!(allowed.may_confirm() && flagged.may_confirm());
    assert!(!denied.may_confirm() && !nameless.may_confirm());
    for (session, why) in [(&denied, "'codex' is not in"), (&nameless, "no clientInfo.name")] {
        let preview = rename(&service, session, "book/emma", "book/e");
        let err = confirm(&service, session, &preview).unwrap_err();
        assert_eq!(err.code(), "mutation-disabled", "{err}");
        assert!(err.to_string().contains(why), "{err}");
        // Refused before the preview was looked at: nothing written, the preview kept.
        assert!(read(dir.path(), "books/emma.dust").unwrap().contains("book/emma\n"));
        let kept = run(
            &service,
            session,
            "stardust.preview.discard",
            json!({"previewId": preview["previewId"]}),
        );
        assert_eq!(kept, json!({"discarded": true}));
    }
    let preview = rename(&service, &allowed, "book/emma", "book/e");
    assert!(confirm(&service, &allowed, &preview).unwrap()["seq"].as_u64().unwrap() > 0);
    // Every decision is recorded: four at the sessions' start, then each confirm attempt
    // (and the save it led to).
    let status = run(&service, &allowed, "stardust.status", json!({}));
    let decisions: Vec<(String, bool)> = status["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["kind"].as_str().unwrap().to_owned(), d["allowed"].as_bool().unwrap()))
        .collect();
    let expected = [("gate", true), ("gate", false), ("gate", false), ("gate", true)]
        .into_iter()
        .chain([("gate", false), ("gate", false), ("gate", true), ("save", true)]);
    assert_eq!(decisions, expected.map(|(k, a)| (k.to_owned(), a)).collect::<Vec<_>>());
    assert!(status["decisions"][6]["subject"].as_str().unwrap().contains("'claude-code'"));
    // Editors are not gated: their confirms are no gate decisions.
    let editor = service.open_session(Front::Lsp, "editor");
    let preview = rename(&service, &editor, "book/dune", "book/d");
    confirm(&service, &editor, &preview).unwrap();
    let status = run(&service, &editor, "stardust.status", json!({}));
    assert_eq!(status["decisions"].as_array().unwrap().len(), decisions.len() + 1);
}

#[test]
fn an_error_is_one_object_with_code_message_and_details() {
    let dir = store();
    let (service, session) = service(dir.path());
    let preview = rename(&service, &session, "book/emma", "book/e");
    let change = Change::put("books/emma.dust", "id    book/emma\ntype  book\ntitle Emma!\n");
    service.store().commit(Origin::Mount, vec![change]).unwrap();
    let err = confirm(&service, &session, &preview).unwrap_err();
    let object = err.to_json(&service.store().snapshot().analysis);
    assert_eq!(object["code"], "preview-stale", "{object}");
    assert_eq!(object["message"], err.to_string());
    assert_eq!(object["path"], "books/emma.dust");
}

#[test]
fn an_entity_address_naming_two_entities_is_ambiguous() {
    let dir = store();
    write(dir.path(), "books/dune-again.dust", "id book/dune\ntype book\ntitle Dune\n");
    let service = Service::new(open(dir.path()));
    let agent = agent(&service, "agent", false);
    let err = fail(&service, &agent, "hover", json!({"entity": "book/dune"}));
    assert_eq!(err.code(), "ambiguous-position", "{err}");
    assert!(err.to_string().contains("books/dune-again.dust, books/dune.dust"), "{err}");
    assert!(err.to_string().contains("give `path` and `position`"), "{err}");
}

#[test]
fn an_agents_answers_fit_one_page_shrunk_cut_or_refused_never_silently_cut() {
    let dir = store();
    let root = dir.path();
    // 300 books with long titles: 100 rows of them are far over 64 KiB.
    for i in 0..300 {
        let title = format!("{i:03} {}", "a long title ".repeat(80));
        write(
            root,
            &format!("books/b{i}.json"),
            &format!(r#"{{"id": "book/b{i:03}", "type": "book", "title": "{title}"}}"#),
        );
    }
    let service = Service::new(open(root));
    let agent = agent(&service, "test-agent", false);
    let query = json!({"document": "find [?b ?t] where [[?b type book] [?b title ?t]]"});
    let args = |v: Value| v.as_object().cloned().unwrap();
    // Rows over the cap: asked again with fewer rows, and said so.
    let page =
        service.execute_paged(&agent, "stardust.query.execute", args(query.clone())).unwrap();
    let rows = page["rows"].as_array().unwrap().len();
    assert!(rows > 1 && rows < 100 && page["pageShrunk"] == true, "{rows} rows");
    assert_eq!(page["nextOffset"], json!(rows), "the next page starts at the first row left out");
    assert!(serde_json::to_vec(&page).unwrap().len() <= 64 * 1024);
    // The same query run as a plain command is not shrunk: the bound is for paged sessions.
    let plain = run(&service, &agent, "stardust.query.execute", query);
    assert_eq!(plain["rows"].as_array().unwrap().len(), 100);
    // A limit over the page bound is refused before the command runs.
    let err = service
        .execute_paged(
            &agent,
            "stardust.query.execute",
            args(json!({"document": "find [?b] where [[?b type book]]", "limit": 501})),
        )
        .unwrap_err();
    assert_eq!(err.code(), stardust_core::Code::InvalidArguments, "{err}");
    // One huge value cannot be paged: refused with its size, not cut.
    let huge = format!("'{}'", "x".repeat(100 * 1024));
    let err = service
        .execute_paged(&agent, "stardust.expression.evaluate", args(json!({"expression": huge})))
        .unwrap_err();
    assert_eq!(err.code(), stardust_core::Code::Unsupported, "{err}");
    let details = err.details(&service.store().snapshot().analysis);
    assert!(details["bytes"].as_u64().unwrap() > 100 * 1024, "{details}");
    assert!(err.to_string().contains("64 KiB"), "{err}");
}

/// A preview larger than one 64 KiB page (a rename rewriting 601 documents): an agent's
/// answer holds the first documents and says how many there are and where the rest starts;
/// `preview_get` pages through every one exactly once, each page under the cap; confirming
/// commits the whole preview, not the page shown.
#[test]
fn a_preview_over_one_page_pages_its_documents_and_confirm_commits_them_all() {
    let dir = store();
    let root = dir.path();
    for i in 0..600 {
        write(
            root,
            &format!("books/sequels/s{i:03}.dust"),
            &format!("id book/s{i:03}\ntype book\ntitle 'Sequel {i}'\nsequel-of @book/dune\n"),
        );
    }
    let service = Service::new(open(root));
    let agent = agent(&service, "test-agent", true);
    let args = |v: Value| v.as_object().cloned().unwrap();
    let cap = 64 * 1024;
    let rename = json!({"id": "book/dune", "newId": "book/dune-1965"});
    let first = service.execute_paged(&agent, "stardust.entity.rename", args(rename)).unwrap();
    assert!(serde_json::to_vec(&first).unwrap().len() <= cap);
    let shown = first["documents"].as_array().unwrap().len();
    assert_eq!(first["total"], 601, "every document the rename touches is counted");
    assert!(shown > 10 && shown < 601, "{shown}");
    assert_eq!(first["nextOffset"], json!(shown));
    assert_eq!(first["pageShrunk"], true);
    assert_eq!(first["committable"], true);
    let id = first["previewId"].as_str().unwrap().to_owned();
    // The plain command (an editor's) is not paged.
    let plain = service
        .execute(&agent, "stardust.entity.rename", json!({"id": "book/emma", "newId": "book/e"}))
        .unwrap();
    assert!(plain.get("total").is_none() && plain["documents"].as_array().unwrap().len() == 1);

    let mut paths: Vec<String> = first["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_owned())
        .collect();
    let mut next = first["nextOffset"].clone();
    let mut pages = 1;
    while let Some(offset) = next.as_u64() {
        let page = service
            .execute_paged(
                &agent,
                "preview_get",
                args(json!({"previewId": id, "offset": offset, "limit": 500})),
            )
            .unwrap();
        assert!(serde_json::to_vec(&page).unwrap().len() <= cap);
        assert_eq!((page["previewId"].as_str(), page["total"].as_u64()), (Some(&*id), Some(601)));
        let documents = page["documents"].as_array().unwrap();
        assert!(!documents.is_empty());
        paths.extend(documents.iter().map(|d| d["path"].as_str().unwrap().to_owned()));
        next = page["nextOffset"].clone();
        pages += 1;
    }
    assert!(pages > 2, "{pages}");
    let mut unique = paths.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((paths.len(), unique.len()), (601, 601), "each document exactly once");
    // A limit bounds a page too, without shrinking it.
    let two = service
        .execute_paged(&agent, "preview_get", args(json!({"previewId": id, "limit": 2})))
        .unwrap();
    assert_eq!(two["documents"].as_array().unwrap().len(), 2);
    assert_eq!((two["nextOffset"].clone(), two.get("pageShrunk")), (json!(2), None));
    // Only the session that made it reads it; a wrong id is not found.
    let other = self::agent(&service, "other-agent", true);
    let id_only = json!({"previewId": id});
    assert_eq!(fail(&service, &other, "preview_get", id_only.clone()).code(), "preview-not-found");
    assert_eq!(
        fail(&service, &agent, "preview_get", json!({"previewId": "0"})).code(),
        "preview-not-found"
    );

    let committed = confirm(&service, &agent, &first).unwrap();
    assert!(committed["seq"].as_u64().unwrap() > 0);
    for i in 0..600 {
        let text = read(root, &format!("books/sequels/s{i:03}.dust")).unwrap();
        assert!(text.contains("@book/dune-1965\n"), "s{i:03} was not rewritten: {text}");
    }
    assert!(read(root, "books/dune.dust").unwrap().contains("id      book/dune-1965\n"));
    // Confirmed: the preview is gone.
    assert_eq!(fail(&service, &agent, "preview_get", id_only).code(), "preview-not-found");
}

#[test]
fn preview_get_of_an_expired_preview_says_so() {
    let dir = store();
    let service = Service::new(open(dir.path())).with_preview_lifetime(Duration::ZERO);
    let session = agent(&service, "agent", true);
    let preview = rename(&service, &session, "book/emma", "book/e");
    let err = fail(&service, &session, "preview_get", json!({"previewId": preview["previewId"]}));
    assert_eq!(err.code(), "preview-expired", "{err}");
}

/// A document whose diff alone is over a page keeps the diff's beginning, marked as cut with
/// its whole size; the rest of the preview (here thousands of new diagnostics) is cut to half
/// a page and counted in `omitted`.
#[test]
fn a_preview_page_cuts_a_huge_diff_and_long_lists_visibly() {
    let mut documents = vec![json!({"path": "a", "change": "changed", "before": "1", "after": "2",
                                    "diff": format!("@@\n{}", "+x\n".repeat(40_000))})];
    documents.push(json!({"path": "b", "diff": ""}));
    let new: Vec<Value> = (0..5000).map(|i| json!({"code": "schema", "message": i})).collect();
    let preview = json!({"previewId": "p", "documents": documents,
                         "diagnostics": {"new": new, "resolved": []}, "committable": false});
    let page = stardust_core::service::page::preview_page(preview, 0, 500);
    assert!(serde_json::to_vec(&page).unwrap().len() <= 64 * 1024);
    let first = &page["documents"][0];
    assert_eq!(
        (first["diffTruncated"].clone(), first["diffBytes"].clone()),
        (json!(true), json!(120_003))
    );
    assert!(first["diff"].as_str().unwrap().ends_with("+x\n"));
    assert_eq!((page["total"].clone(), page["nextOffset"].clone()), (json!(2), json!(1)));
    let kept = page["diagnostics"]["new"].as_array().unwrap().len();
    assert_eq!(page["omitted"]["diagnostics.new"], json!(5000 - kept));
}

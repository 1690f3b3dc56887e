//! The history commands of SPEC §26 through the registry, without a transport: an agent's
//! change undone by a person, a revert the save authority refuses, an editor's unsaved text,
//! a code file, the mutation gate.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{open, read, write};
use serde_json::{Value, json};
use stardust_core::service::{CommandError, EditorTexts, Front, Service, Session, SessionOptions};
use stardust_core::store::{Change, Origin};

fn store(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "stardust.toml", config);
    write(root, "schemas/book.schema.json", r#"{"type": "object"}"#);
    write(root, "schemas/person.schema.json", r#"{"type": "object"}"#);
    write(root, "books/dune.dust", "id     book/dune\ntype   book\ntitle  Dune\nyear   1965\n");
    write(root, "people/frank.json", &common::person("person/frank", "Frank Herbert"));
    write(root, "src/app.py", "def main():\n    return 1\n");
    dir
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

fn confirm(service: &Service, session: &Session, preview: &Value) -> Result<Value, CommandError> {
    service.execute(session, "stardust.preview.confirm", json!({"previewId": preview["previewId"]}))
}

fn agent(service: &Service, allow_mutation: bool) -> Session {
    let options = SessionOptions { client: Some("agent"), allow_mutation };
    service.open_session_with(Front::Mcp, options)
}

fn setup(root: &Path) -> (Service, Session) {
    let service = Service::new(open(root));
    let person = service.open_session(Front::Lsp, "editor");
    (service, person)
}

#[test]
fn an_agents_confirmed_change_is_undone_by_a_person_in_one_preview() {
    let dir = store("");
    let (service, person) = setup(dir.path());
    let agent = agent(&service, true);
    let patch = json!({"document": "ops [{set {id book/dune title 'Dune (agent)' year 1966}}]"});
    let preview = run(&service, &agent, "stardust.patch.apply", patch);
    assert_eq!(confirm(&service, &agent, &preview).unwrap()["seq"], 2);

    // What touched the entity, newest first, and what that transaction changed.
    let listed = run(&service, &person, "stardust.history.list", json!({"entity": "book/dune"}));
    assert_eq!(listed["total"], 2);
    assert_eq!(listed["transactions"][0]["seq"], 2);
    assert_eq!(listed["transactions"][0]["origin"], "mcp:agent");
    assert_eq!(listed["nextOffset"], Value::Null);
    let by_path = run(
        &service,
        &person,
        "stardust.history.list",
        json!({"path": "books/dune.dust", "limit": 1}),
    );
    assert_eq!((by_path["total"].clone(), by_path["nextOffset"].clone()), (json!(2), json!(1)));
    let diff = run(&service, &person, "stardust.transaction.diff", json!({"seq": 2}));
    assert_eq!(diff["documents"][0]["path"], "books/dune.dust");
    let text = diff["documents"][0]["diff"].as_str().unwrap();
    assert!(text.contains("-title  Dune\n") && text.contains("+title  'Dune (agent)'"), "{text}");
    let before = run(&service, &person, "stardust.entity.at", json!({"id": "book/dune", "seq": 1}));
    assert_eq!(before["value"]["title"], "Dune");
    assert_eq!(before["changedAt"], 1);

    // The person's revert: a preview with the diff and the delta first, then one confirm.
    let revert = run(&service, &person, "stardust.transaction.revert", json!({"seq": 2}));
    assert_eq!(revert["committable"], true);
    assert_eq!(revert["entities"]["changed"], json!(["book/dune"]));
    assert!(revert["diagnostics"]["new"].as_array().unwrap().is_empty());
    assert!(revert["documents"][0]["diff"].as_str().unwrap().contains("+title  Dune\n"));
    assert!(
        read(dir.path(), "books/dune.dust").unwrap().contains("agent"),
        "previews write nothing"
    );
    let done = confirm(&service, &person, &revert).unwrap();
    assert_eq!(done["seq"], 3);
    let first = run(
        &service,
        &person,
        "stardust.document.at",
        json!({"path": "books/dune.dust", "seq": 1}),
    );
    assert_eq!(read(dir.path(), "books/dune.dust").unwrap(), first["text"].as_str().unwrap());
    let origin =
        &run(&service, &person, "stardust.history.list", json!({"limit": 1}))["transactions"][0];
    assert_eq!(origin["origin"], "lsp:editor");
}

#[test]
fn a_revert_that_would_leave_a_dangling_reference_is_refused_by_the_save_authority() {
    let dir =
        store("[save]\nrefuse = [\"syntax\", \"schema\", \"duplicate-id\", \"dangling-ref\"]\n");
    let (service, person) = setup(dir.path());
    let store = service.store();
    store
        .commit(
            Origin::Sdk("t".into()),
            vec![Change::create("people/ann.json", common::person("person/ann", "Ann"))],
        )
        .unwrap();
    store
        .commit(
            Origin::Sdk("t".into()),
            vec![Change::put(
                "books/dune.dust",
                "id     book/dune\ntype   book\ntitle  Dune\nyear   1965\nauthor @person/ann\n",
            )],
        )
        .unwrap();
    let revert = run(&service, &person, "stardust.transaction.revert", json!({"seq": 2}));
    assert_eq!(revert["committable"], false);
    assert_eq!(revert["entities"]["deleted"], json!(["person/ann"]));
    let reasons = revert["reasons"].to_string();
    assert!(reasons.contains("dangling-ref"), "{reasons}");
    assert_eq!(revert["diagnostics"]["new"][0]["code"], "dangling-ref");
    let err = confirm(&service, &person, &revert).unwrap_err();
    assert_eq!(err.code().as_str(), "refused");
    assert!(read(dir.path(), "people/ann.json").is_some(), "nothing was written");
}

struct Holding(&'static str, &'static str);

impl EditorTexts for Holding {
    fn text(&self, path: &str) -> Option<String> {
        (path == self.0).then(|| self.1.to_owned())
    }
}

#[test]
fn a_revert_of_a_file_an_editor_holds_unsaved_is_a_conflict() {
    let dir = store("");
    let (service, person) = setup(dir.path());
    let dune2 = "id     book/dune\ntype   book\ntitle  Dune\nyear   1966\n";
    service
        .store()
        .commit(Origin::Sdk("t".into()), vec![Change::put("books/dune.dust", dune2)])
        .unwrap();
    // An editor holding the text as saved is no obstacle.
    service.register_editor(&person, Arc::new(Holding("books/dune.dust", dune2)));
    run(&service, &person, "stardust.transaction.revert", json!({"seq": 2}));
    service
        .register_editor(&person, Arc::new(Holding("books/dune.dust", "id book/dune\n; typing")));
    let err = fail(&service, &person, "stardust.transaction.revert", json!({"seq": 2}));
    assert_eq!(err.code().as_str(), "conflict");
    assert!(err.to_string().contains("unsaved changes in an editor"), "{err}");
    // The session's end takes its texts with it.
    service.close_session(&person);
    let other = service.open_session(Front::Lsp, "other");
    run(&service, &other, "stardust.transaction.revert", json!({"seq": 2}));
}

#[test]
fn a_code_file_edit_is_reverted_as_text() {
    let dir = store("");
    let (service, person) = setup(dir.path());
    let commit = |text: &str| {
        service.store().commit(Origin::Sdk("t".into()), vec![Change::put("src/app.py", text)])
    };
    // The log holds a code file's content from the first time Stardust writes it.
    commit("def main():\n    return 3\n").unwrap();
    commit("def main():\n    return 2\n").unwrap();
    let at =
        run(&service, &person, "stardust.document.at", json!({"path": "src/app.py", "seq": 3}));
    assert_eq!(at["text"], "def main():\n    return 2\n");
    let err = fail(&service, &person, "stardust.transaction.revert", json!({"seq": 2}));
    assert_eq!(err.code().as_str(), "not-found", "{err}");
    let revert = run(&service, &person, "stardust.transaction.revert", json!({"seq": 3}));
    assert_eq!(revert["documents"][0]["path"], "src/app.py");
    assert_eq!(revert["diagnosticsUnknown"], true);
    confirm(&service, &person, &revert).unwrap();
    assert_eq!(read(dir.path(), "src/app.py").unwrap(), "def main():\n    return 3\n");
}

#[test]
fn an_agent_previews_reverts_and_confirms_only_through_the_gate() {
    let dir = store("");
    let (service, _) = setup(dir.path());
    service
        .store()
        .commit(
            Origin::Sdk("t".into()),
            vec![Change::put("people/frank.json", common::person("person/frank", "F. H."))],
        )
        .unwrap();
    let agent = agent(&service, false);
    let revert = run(&service, &agent, "stardust.transaction.revert", json!({"seq": 2}));
    let err = confirm(&service, &agent, &revert).unwrap_err();
    assert_eq!(err.code().as_str(), "mutation-disabled");
    // Bad input: each answers the SPEC's code.
    let code = |name, args| fail(&service, &agent, name, args).code().as_str();
    assert_eq!(code("stardust.transaction.revert", json!({"seq": 9})), "not-found");
    assert_eq!(code("stardust.transaction.revert", json!({"seq": 1})), "unsupported");
    assert_eq!(
        code("stardust.document.at", json!({"path": "nowhere.json", "seq": 1})),
        "not-found"
    );
    assert_eq!(code("stardust.entity.at", json!({"id": "person/frank", "seq": 3})), "not-found");
    assert_eq!(
        code("stardust.transaction.diff", json!({"seq": 2, "toSeq": 1})),
        "invalid-arguments"
    );
    assert_eq!(
        code("stardust.document.at", json!({"path": "people/frank.json"})),
        "invalid-arguments"
    );
}

//! End-to-end tests of the Rust SDK (`stardust-sdk`) against a real core (`stardust serve`):
//! typed queries, patches whose temporary names resolve to the ids on disk, subscriptions in
//! seq order, resuming after the core restarts, and overflow as a re-read event.

mod util;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use stardust_sdk::{
    Change, ChangeKind, Client, ConnectOptions, EntityChange, Event, HistoryFilter, Subscription,
};
use util::{Serve, TIMEOUT, record, stardust, text, wait_until};

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_stardust"))
}

fn store(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("people")).unwrap();
    std::fs::write(root.join("people/ann.dust"), "id    person/ann\ntype  person\nname  Ann\n")
        .unwrap();
    std::fs::write(root.join("stardust.toml"), config).unwrap();
    dir
}

/// Connect to the running core only: these tests start and stop it themselves.
fn no_autostart() -> ConnectOptions {
    ConnectOptions { autostart: false, ..Default::default() }
}

fn connect(store: &Path, name: &str) -> Client {
    Client::connect_with(store, name, no_autostart()).unwrap()
}

/// Create a person through the SDK; returns (seq, id).
fn create_person(client: &Client, name: &str) -> (u64, String) {
    let committed = client
        .patch(json!({"ops": [{"create": {"id": "?p", "type": "person", "name": name}}]}))
        .unwrap()
        .confirm()
        .unwrap();
    (committed.seq, committed.resolved["?p"].clone())
}

/// `stardust apply --yes` (through the core when one runs, else on the store itself).
fn apply(store: &Path, patch: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("change.patch.dust");
    std::fs::write(&file, patch).unwrap();
    let (store, file) = (store.to_str().unwrap(), file.to_str().unwrap());
    let out = stardust(&["apply", store, file, "--yes", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Read events until one reaches `seq`, checking that seqs only go up. Fails (rather than
/// waits forever) when no event reaches `seq` in time: a commit was missed.
fn events_through<C: Change + std::fmt::Debug + Send + 'static>(
    events: &mut Option<Subscription<C>>,
    seq: u64,
) -> Vec<Event<C>> {
    let mut subscription = events.take().expect("a subscription");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen: Vec<Event<C>> = Vec::new();
        while seen.last().is_none_or(|e| e.seq() < seq) {
            let event = subscription.next().expect("a subscription does not end").unwrap();
            if let Some(last) = seen.last() {
                assert!(event.seq() > last.seq(), "seq order: {seen:?} then {event:?}");
            }
            seen.push(event);
        }
        let _ = tx.send((subscription, seen));
    });
    let (subscription, seen) = rx
        .recv_timeout(TIMEOUT)
        .unwrap_or_else(|_| panic!("no event reached seq {seq}: a commit was missed"));
    *events = Some(subscription);
    assert_eq!(seen.last().unwrap().seq(), seq, "no event past the last commit: {seen:?}");
    seen
}

fn ids(events: &[Event<EntityChange>]) -> BTreeSet<String> {
    events
        .iter()
        .flat_map(|e| match e {
            Event::Changed { changes, .. } => {
                changes.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
            }
            Event::Reread { .. } => panic!("no re-read expected: {events:?}"),
        })
        .collect()
}

#[test]
fn a_patch_with_temporary_names_returns_the_ids_on_disk() {
    let store = store("");
    let root = store.path();
    let _serve = Serve::start(root);
    let client = connect(root, "sdk-test");

    // Two books with the same title: the second resolved id is made unique.
    let patch = "ops [{create {id ?a type book title 'Dune Messiah' author @person/ann}}\n\
                      {create {id ?b type book title 'Dune Messiah' sequel-of @?a}}]\n";
    let preview = client.patch(patch).unwrap();
    assert!(preview.committable, "{:?}", preview.reasons);
    assert_eq!(preview.entities.created, ["book/dune-messiah", "book/dune-messiah-2"]);
    assert_eq!(preview.documents.len(), 2);
    assert!(preview.documents[0].diff.contains("+title"), "{}", preview.documents[0].diff);
    let provisional = preview.resolved.clone();
    let committed = preview.confirm().unwrap();
    assert_eq!(committed.resolved, provisional);
    assert_eq!(committed.resolved["?a"], "book/dune-messiah");
    assert_eq!(committed.resolved["?b"], "book/dune-messiah-2");

    // The resolved ids are the ones on disk, and the reference points at the first.
    for id in committed.resolved.values() {
        let entity = client.get(id).unwrap();
        let on_disk = std::fs::read_to_string(root.join(&entity.path)).unwrap();
        assert!(on_disk.contains(id.as_str()), "{id} in {}: {on_disk}", entity.path);
    }
    let second = client.get("book/dune-messiah-2").unwrap();
    assert_eq!(second.value["sequel-of"], "@book/dune-messiah");
    assert_eq!(client.seq().unwrap(), committed.seq);
    // The commit is the SDK client's own (SPEC §6 origins).
    let log = Command::new(exe())
        .args(["log", root.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&log.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["seq"].as_u64(), last["origin"].as_str()),
        (Some(committed.seq), Some("sdk:sdk-test"))
    );

    // Typed rows: tuples and structs read from the rows' sequences.
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Book {
        id: String,
        title: String,
    }
    let books = client
        .query::<Book>("find [?b ?t] where [[?b type book] [?b title ?t]] order [[?b asc]]")
        .unwrap();
    assert_eq!(books.columns, ["?b", "?t"]);
    assert_eq!(books.total, 2);
    assert_eq!(
        books.rows[1],
        Book { id: "book/dune-messiah-2".into(), title: "Dune Messiah".into() }
    );
    let page = client
        .query_page::<(String,)>(json!({"find": ["?b"], "where": [["?b", "type", "book"]]}), 1, 0)
        .unwrap();
    assert_eq!((page.rows.len(), page.next_offset), (1, Some(1)));
    let wrong = client.query::<(u64,)>("find [?b] where [[?b type book]]").unwrap_err();
    assert_eq!(wrong.code(), "type-error", "{wrong}");

    assert_eq!(client.evaluate("@book/dune-messiah.author.name").unwrap(), json!("Ann"));
    assert_eq!(
        client.evaluate_at("title", Some("book/dune-messiah")).unwrap(),
        json!("Dune Messiah")
    );
}

#[test]
fn errors_carry_the_spec_codes() {
    let store = store("");
    let root = store.path();
    let _serve = Serve::start(root);
    let client = connect(root, "sdk-test");

    let missing = client.get("book/nope").unwrap_err();
    assert_eq!(missing.code(), "not-found", "{missing}");
    let bad = client.patch("ops [{set {id person/ann id person/bob}}]").unwrap_err();
    assert_eq!(bad.code(), "invalid-arguments", "{bad}");
    let stardust_sdk::Error::Command { data, .. } = &bad else { panic!("a command error: {bad}") };
    assert_eq!(data["code"], "invalid-arguments");

    // A preview goes stale when its document changes before the confirm.
    let preview = client.patch("ops [{set {id person/ann name Annie}}]").unwrap();
    client.patch("ops [{set {id person/ann name Anna}}]").unwrap().confirm().unwrap();
    assert_eq!(preview.confirm().unwrap_err().code(), "preview-stale");

    let preview = client.patch("ops [{set {id person/ann name Annie}}]").unwrap();
    assert!(preview.discard().unwrap());
    assert_eq!(client.get("person/ann").unwrap().value["name"], "Anna");
}

#[test]
fn an_entity_as_of_a_seq_and_the_transactions_that_touched_it() {
    let store = store("");
    let root = store.path();
    let _serve = Serve::start(root);
    let client = connect(root, "sdk-test");

    let set = |name: &str| {
        let patch = json!({"ops": [{"set": {"id": "person/ann", "name": name}}]});
        client.patch(patch).unwrap().confirm().unwrap().seq
    };
    let first = set("Annie");
    let second = set("Anna");
    assert!(second > first);

    let old = client.get_at("person/ann", first).unwrap();
    assert_eq!(
        (old.value["name"].as_str(), old.seq, old.changed_at, old.path.as_str()),
        (Some("Annie"), first, first, "people/ann.dust")
    );
    #[derive(serde::Deserialize)]
    struct Person {
        name: String,
    }
    assert_eq!(old.value_as::<Person>().unwrap().name, "Annie");
    assert_eq!(client.get("person/ann").unwrap().value["name"], "Anna");

    let filter = HistoryFilter { entity: Some("person/ann".into()), ..Default::default() };
    let history = client.history(&filter).unwrap();
    let seqs: Vec<u64> = history.transactions.iter().map(|t| t.seq).collect();
    // Newest first; the store's first transaction (its files as first found) created ann.
    assert_eq!(seqs, [second, first, 1]);
    assert_eq!((history.total, history.next_offset), (3, None));
    let newest = &history.transactions[0];
    assert_eq!(newest.origin, "sdk:sdk-test");
    assert_eq!(newest.documents.len(), 1);
    let doc = &newest.documents[0];
    assert_eq!((doc.path.as_str(), doc.change), ("people/ann.dust", ChangeKind::Changed));
    assert_eq!(doc.entities.changed, ["person/ann"]);
    let page = client
        .history(&HistoryFilter {
            path: Some("people/ann.dust".into()),
            limit: Some(1),
            offset: Some(1),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.transactions.iter().map(|t| t.seq).collect::<Vec<_>>(), [first]);
    assert_eq!((page.total, page.next_offset), (3, Some(2)));

    // A seq past the head, and an entity that did not exist then, are `not-found`.
    let past = client.get_at("person/ann", second + 1).unwrap_err();
    assert_eq!(past.code(), "not-found", "{past}");
    let never = client.get_at("person/bob", first).unwrap_err();
    assert_eq!(never.code(), "not-found", "{never}");
}

#[test]
fn a_client_starts_a_core_when_none_runs() {
    let store = store("");
    let root = store.path();
    let options = ConnectOptions {
        exe: Some(exe()),
        idle_exit: Duration::from_secs(1),
        ..Default::default()
    };
    let pid = {
        let client = Client::connect_with(root, "sdk-test", options).unwrap();
        assert_eq!(client.get("person/ann").unwrap().value["name"], "Ann");
        record(root).expect("a core runs for the store")["pid"].as_u64().unwrap()
    };
    // Idle with no connection, the core started for the client stops by itself, and this
    // process (its parent) reaps it: no zombie is left behind.
    wait_until("the started core has stopped", || record(root).is_none());
    wait_until("the core's process is reaped", || !Path::new(&format!("/proc/{pid}")).exists());

    let refused = Client::connect_with(root, "sdk-test", no_autostart()).unwrap_err();
    assert!(refused.to_string().contains("no core runs"), "{refused}");
}

#[test]
fn a_subscriber_sees_every_commit_in_seq_order() {
    let store = store("");
    let root = store.path();
    let _serve = Serve::start(root);
    let client = connect(root, "writer");
    let mut events = Some(connect(root, "reader").subscribe_entities().unwrap());
    let mut documents = Some(client.subscribe_documents().unwrap());

    let writer = std::thread::spawn(move || {
        (0..30).map(|i| create_person(&client, &format!("Person {i}"))).collect::<Vec<_>>()
    });
    let created = writer.join().unwrap();
    let last = created.last().unwrap().0;
    let seen = events_through(&mut events, last);
    // Commits may coalesce, but every created entity is in some event.
    let expected: BTreeSet<String> = created.iter().map(|(_, id)| id.clone()).collect();
    assert_eq!(ids(&seen), expected);

    // The document subscription of the writer's client sees the 30 new documents, and with
    // them each new person's entity file, marked derived (SPEC §19).
    let (derived, stored): (Vec<_>, Vec<_>) = events_through(&mut documents, last)
        .into_iter()
        .flat_map(|e| match e {
            Event::Changed { changes, .. } => changes,
            Event::Reread { .. } => panic!("no re-read expected"),
        })
        .partition(|c| c.derived);
    let paths: BTreeSet<String> = stored.into_iter().map(|c| c.path).collect();
    assert_eq!(paths.len(), 30, "{paths:?}");
    let files: BTreeSet<String> = derived
        .into_iter()
        .filter(|c| c.path.starts_with(".stardust/entities/"))
        .map(|c| c.path)
        .collect();
    let expected: BTreeSet<String> =
        created.iter().map(|(_, id)| format!(".stardust/entities/{id}.json")).collect();
    assert_eq!(files, expected);
}

#[test]
fn a_subscriber_resumes_without_gaps_after_the_core_restarts() {
    let store = store("");
    let root = store.path();
    let serve = Serve::start(root);
    let client = connect(root, "writer");
    let mut events = Some(connect(root, "reader").subscribe_entities().unwrap());

    let (first, bo) = create_person(&client, "Bo");
    let before = events_through(&mut events, first);
    assert_eq!(ids(&before), BTreeSet::from([bo]));

    // The core stops; two commits happen without it; a new core starts.
    drop(client);
    serve.stop();
    apply(root, "ops [{create {id ?c type person name Cy}}]\n");
    let offline = apply(root, "ops [{set {id person/ann name Annie}}]\n");
    let _serve = Serve::start(root);
    let client = connect(root, "writer");
    let (last, dee) = create_person(&client, "Dee");
    assert!(last > offline["seq"].as_u64().unwrap());

    let after = events_through(&mut events, last);
    assert_eq!(
        ids(&after),
        BTreeSet::from(["person/cy".to_owned(), "person/ann".to_owned(), dee]),
        "{after:?}"
    );
    assert_eq!(events.as_ref().unwrap().seq(), last);

    // A subscription resumed from a seq in another process catches up the same way.
    let mut resumed = Some(client.subscribe_entities_since(first).unwrap());
    let replay = events_through(&mut resumed, last);
    assert_eq!(ids(&replay), ids(&after));
}

#[test]
fn overflow_surfaces_as_a_reread_event() {
    let store = store("[notifications]\nmax_pending = 2\n");
    let root = store.path();
    let _serve = Serve::start(root);
    let client = connect(root, "writer");
    let mut events = Some(client.subscribe_entities().unwrap());

    // Three new entities in three new documents: six pending entries, past max_pending.
    let committed = client
        .patch(
            "ops [{create {id ?a type person name A}} {create {id ?b type person name B}}\n\
                  {create {id ?c type person name C}}]",
        )
        .unwrap()
        .confirm()
        .unwrap();
    let events_now = events_through(&mut events, committed.seq);
    assert_eq!(events_now, [Event::Reread { seq: committed.seq }]);

    // Delivery resumes after the re-read.
    let (next, id) = create_person(&client, "D");
    assert_eq!(ids(&events_through(&mut events, next)), BTreeSet::from([id]));

    // Resuming from a seq the store has not reached (a store restored from an older backup)
    // is a re-read too, as of the store's seq; later commits follow on from there.
    let mut ahead = Some(client.subscribe_entities_since(next + 100).unwrap());
    assert_eq!(events_through(&mut ahead, next), [Event::Reread { seq: next }]);
    let (later, id) = create_person(&client, "E");
    assert_eq!(ids(&events_through(&mut ahead, later)), BTreeSet::from([id]));
}

/// Set in an SDK program started by a discovery test: the store it connects to.
const DISCOVERY_STORE: &str = "STARDUST_TEST_DISCOVERY_STORE";

/// The SDK program of the discovery tests: connect with the default options (no
/// `ConnectOptions::exe`) and say how that went, and as what the core it reached was started.
fn discovering_program(store: &Path) {
    match Client::connect(store, "discovery") {
        Ok(client) => {
            let name = client.get("person/ann").unwrap().value["name"].clone();
            let pid = record(store).unwrap()["pid"].as_u64().unwrap();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
            let argv0 = String::from_utf8_lossy(cmdline.split(|&b| b == 0).next().unwrap());
            println!("DISCOVERY connected {name}");
            println!("DISCOVERY started {argv0}");
        }
        Err(err) => println!("DISCOVERY error {err}"),
    }
}

/// Run this test binary, or a link to it at `program`, as the SDK program of test `test`, with
/// `PATH` set to `path` and no `STARDUST_BIN`: what it said, by line prefix.
fn run_discovering(program: &Path, test: &str, store: &Path, path: &Path) -> Vec<String> {
    let out = Command::new(program)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(DISCOVERY_STORE, store)
        .env("PATH", path)
        .env_remove("STARDUST_BIN")
        .env("STARDUST_IDLE_EXIT", "1")
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    let said: Vec<String> =
        // The harness may print the test's name on the same line first.
        said.lines().filter_map(|l| l.split_once("DISCOVERY ")).map(|(_, r)| r.to_owned()).collect();
    assert!(!said.is_empty(), "the SDK program said nothing");
    said
}

/// A link to this test binary in a folder of its own (in cargo's target folder, so a hard
/// link works), where no `stardust` is beside it.
fn program_alone(dir: &Path) -> PathBuf {
    let me = std::env::current_exe().unwrap();
    let alone = dir.join("sdk-program");
    if std::fs::hard_link(&me, &alone).is_err() {
        std::fs::copy(&me, &alone).unwrap();
    }
    alone
}

fn wait_for_idle_core_to_stop(store: &Path) {
    wait_until("the core started by the SDK program has stopped", || record(store).is_none());
}

#[test]
fn an_sdk_program_finds_stardust_on_path() {
    if let Some(store) = std::env::var_os(DISCOVERY_STORE) {
        return discovering_program(Path::new(&store));
    }
    let store = store("");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(exe(), bin.join("stardust")).unwrap();
    let program = program_alone(dir.path());
    let said =
        run_discovering(&program, "an_sdk_program_finds_stardust_on_path", store.path(), &bin);
    assert_eq!(said, ["connected \"Ann\"", &format!("started {}", bin.join("stardust").display())]);
    wait_for_idle_core_to_stop(store.path());
}

#[test]
fn an_sdk_program_finds_stardust_beside_itself_from_cargos_deps_folder() {
    if let Some(store) = std::env::var_os(DISCOVERY_STORE) {
        return discovering_program(Path::new(&store));
    }
    // This test binary is in target/debug/deps, the `stardust` binary in target/debug: as an
    // example in target/debug/examples finds it after `cargo build`.
    let me = std::env::current_exe().unwrap();
    assert_eq!(me.parent().unwrap().file_name().unwrap(), "deps");
    assert_eq!(me.parent().unwrap().parent().unwrap(), exe().parent().unwrap());
    let store = store("");
    let empty = tempfile::tempdir().unwrap();
    let said = run_discovering(
        &me,
        "an_sdk_program_finds_stardust_beside_itself_from_cargos_deps_folder",
        store.path(),
        empty.path(),
    );
    assert_eq!(said, ["connected \"Ann\"", &format!("started {}", exe().display())]);
    wait_for_idle_core_to_stop(store.path());
}

#[test]
fn without_stardust_the_error_names_every_place_tried() {
    if let Some(store) = std::env::var_os(DISCOVERY_STORE) {
        return discovering_program(Path::new(&store));
    }
    let store = store("");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let program = program_alone(dir.path());
    let said = run_discovering(
        &program,
        "without_stardust_the_error_names_every_place_tried",
        store.path(),
        &empty,
    );
    let [error] = said.as_slice() else { panic!("{said:?}") };
    let expected = format!(
        "error no core runs for {}; no stardust executable was found to start a core: tried \
         STARDUST_BIN (not set), `stardust` on PATH ({}), beside this program ({}); install \
         stardust on PATH, or set STARDUST_BIN or ConnectOptions::exe to it",
        store.path().display(),
        empty.display(),
        dir.path().join("stardust").display(),
    );
    assert!(error.ends_with(&expected[expected.find("no core runs").unwrap()..]), "{error}");
    assert!(record(store.path()).is_none(), "no core was started");
}

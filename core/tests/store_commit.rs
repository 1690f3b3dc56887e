//! The commit path of the store: save authority, versions, all-or-nothing writes, I/O
//! failures, paths that must not be written, the lock.

mod common;

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{open, options, person, read, write};
use stardust_core::store::{
    Change, ChangeKind, FailPoint, OpenOptions, Origin, Store, StoreError, Version, verify_log,
};

const PERSON_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {"id": {"type": "string"}, "type": {"const": "person"}, "name": {"type": "string"}},
  "required": ["id", "type", "name"],
  "additionalProperties": false
}
"#;

/// A store with a schema and two people.
fn library() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "schemas/person.schema.json", PERSON_SCHEMA);
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann"));
    write(dir.path(), "people/bob.json", &person("person/bob", "Bob"));
    dir
}

fn mcp() -> Origin {
    Origin::Mcp("test".into())
}

/// Every file under the store except the private folder, with its content.
fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".stardust")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_commit_writes_logs_and_describes_entities() {
    let dir = library();
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 1, "the first open records the existing documents");
    let committed = store
        .commit(
            mcp(),
            vec![
                Change::put("people/ann.json", person("person/ann", "Ann Smith")),
                Change::create("people/cy.json", person("person/cy", "Cy")),
                Change::delete("people/bob.json"),
            ],
        )
        .unwrap();
    assert_eq!(committed.seq, 2);
    let txn = committed.transaction.unwrap();
    assert_eq!(txn.origin, mcp());
    assert!(txn.time.ends_with('Z') && txn.time.len() == 24, "{}", txn.time);
    let summary: Vec<_> = txn
        .documents
        .iter()
        .map(|d| {
            (d.path.as_str(), d.kind(), d.created.clone(), d.changed.clone(), d.deleted.clone())
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("people/ann.json", ChangeKind::Changed, vec![], vec!["person/ann".to_owned()], vec![]),
            ("people/bob.json", ChangeKind::Deleted, vec![], vec![], vec!["person/bob".to_owned()]),
            ("people/cy.json", ChangeKind::Created, vec!["person/cy".to_owned()], vec![], vec![]),
        ]
    );
    assert_eq!(
        txn.documents[0].after,
        Some(Version::of(person("person/ann", "Ann Smith").as_bytes()))
    );
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann Smith"));
    assert_eq!(read(dir.path(), "people/bob.json"), None);
    assert_eq!(read(dir.path(), "people/cy.json").unwrap(), person("person/cy", "Cy"));
    let snapshot = store.snapshot();
    assert_eq!(snapshot.seq, 2);
    assert!(snapshot.analysis.document("people/bob.json").is_none());
    assert_eq!(snapshot.analysis.entity("person/cy").len(), 1);
    assert_eq!(store.transactions(0, 10).unwrap().last(), Some(&txn));
}

#[test]
fn refused_commits_write_nothing() {
    let dir = library();
    let store = open(dir.path());
    let before = files(dir.path());
    let log_before = std::fs::read(dir.path().join(".stardust/log/transactions.log")).unwrap();
    let err = store
        .commit(
            mcp(),
            vec![
                Change::put("people/ann.json", person("person/ann", "Ann 2")),
                Change::put("people/dan.json", "{\"id\": \"person/dan\", \"type\": \"person\"}"),
            ],
        )
        .unwrap_err();
    assert_eq!(err.code(), "refused");
    let StoreError::Refused { problems } = &err else { panic!("{err}") };
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].0, "people/dan.json");
    assert_eq!(problems[0].1.code.as_str(), "schema");
    assert!(err.to_string().contains("people/dan.json"), "{err}");
    assert_eq!(files(dir.path()), before);
    let log_after = std::fs::read(dir.path().join(".stardust/log/transactions.log")).unwrap();
    assert_eq!(log_after, log_before);
    assert_eq!(store.snapshot().seq, 1);
}

#[test]
fn existing_problems_do_not_refuse_unrelated_or_improving_changes() {
    let dir = library();
    let broken = "{\"id\": \"x/broken\", \"type\": \"x\", ";
    write(dir.path(), "broken.json", broken);
    let store = open(dir.path());
    assert!(!store.snapshot().analysis.diagnostics_of("broken.json").is_empty());
    store.commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "A"))]).unwrap();
    // Still broken, but not newly so: the same problem is not new.
    store.commit(mcp(), vec![Change::put("broken.json", broken)]).unwrap();
    // A new syntax error in the same document is.
    let err = store.commit(mcp(), vec![Change::put("broken.json", "{\"id\": , ]")]).unwrap_err();
    assert_eq!(err.code(), "refused");
}

#[test]
fn a_refused_code_only_refuses_when_configured() {
    let dir = library();
    write(dir.path(), "stardust.toml", "[save]\nrefuse = []\n");
    let store = open(dir.path());
    store.commit(mcp(), vec![Change::put("bad.json", "{ nope")]).unwrap();
    assert_eq!(read(dir.path(), "bad.json").unwrap(), "{ nope");
}

#[test]
fn stale_versions_conflict() {
    let dir = library();
    let store = open(dir.path());
    let v1 = store.snapshot().version("people/ann.json").unwrap();
    store
        .commit(
            mcp(),
            vec![Change::put("people/ann.json", person("person/ann", "Ann 2")).expecting(v1)],
        )
        .unwrap();
    let err = store
        .commit(
            mcp(),
            vec![
                Change::put("people/bob.json", person("person/bob", "Bob 2")),
                Change::put("people/ann.json", person("person/ann", "Ann 3")).expecting(v1),
            ],
        )
        .unwrap_err();
    assert_eq!(err.code(), "conflict");
    assert!(err.to_string().contains("people/ann.json"), "{err}");
    assert_eq!(read(dir.path(), "people/bob.json").unwrap(), person("person/bob", "Bob"));
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann 2"));

    let err = store.commit(mcp(), vec![Change::create("people/bob.json", "{}")]).unwrap_err();
    assert_eq!(err.code(), "conflict");
    let err = store.commit(mcp(), vec![Change::delete("people/nobody.json")]).unwrap_err();
    assert_eq!(err.code(), "not-found");
    let err =
        store.commit(mcp(), vec![Change::delete("people/bob.json").expecting(v1)]).unwrap_err();
    assert_eq!(err.code(), "conflict");
    assert_eq!(store.snapshot().seq, 2);
}

#[test]
fn an_edit_on_disk_is_recorded_before_a_commit_that_touches_it() {
    let dir = library();
    let store = open(dir.path());
    let v1 = store.snapshot().version("people/ann.json").unwrap();
    write(dir.path(), "people/ann.json", &person("person/ann", "Edited by hand"));
    let err = store
        .commit(
            mcp(),
            vec![Change::put("people/ann.json", person("person/ann", "Mine")).expecting(v1)],
        )
        .unwrap_err();
    assert_eq!(err.code(), "conflict", "the hand edit is not overwritten blindly");
    let txns = store.transactions(1, 10).unwrap();
    assert_eq!(txns.len(), 1);
    assert_eq!(txns[0].origin, Origin::External);
    assert_eq!(txns[0].documents[0].path, "people/ann.json");
    assert_eq!(
        read(dir.path(), "people/ann.json").unwrap(),
        person("person/ann", "Edited by hand")
    );
}

#[test]
fn unchanged_content_records_no_transaction() {
    let dir = library();
    let store = open(dir.path());
    let committed = store
        .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Ann"))])
        .unwrap();
    assert_eq!((committed.seq, committed.transaction), (1, None));
}

#[test]
fn paths_a_commit_may_not_write_are_refused() {
    let dir = library();
    let outside = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), dir.path().join("elsewhere")).unwrap();
    let store = open(dir.path());
    let cases = [
        ("../escape.json", "outside-store"),
        ("/etc/passwd.json", "outside-store"),
        ("people/../../escape.json", "outside-store"),
        (".stardust/log/x.json", "invalid-arguments"),
        (".git/x.json", "invalid-arguments"),
        #[cfg(unix)]
        ("elsewhere/x.json", "outside-store"),
    ];
    for (path, code) in cases {
        let err = store.commit(mcp(), vec![Change::put(path, "{}")]).unwrap_err();
        assert_eq!(err.code(), code, "{path}: {err}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    let err = store
        .commit(mcp(), vec![Change::put("a.json", "{}"), Change::put("a.json", "[]")])
        .unwrap_err();
    assert_eq!(err.code(), "invalid-arguments");
    let err = store.commit(Origin::External, vec![Change::put("a.json", "{}")]).unwrap_err();
    assert_eq!(err.code(), "invalid-arguments");
    assert_eq!(store.snapshot().seq, 1);
}

#[cfg(unix)]
#[test]
fn permissions_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let dir = library();
    let path = dir.path().join("people/ann.json");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let store = open(dir.path());
    store.commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "A"))]).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
}

#[test]
fn readers_keep_their_snapshot() {
    let dir = library();
    let store = open(dir.path());
    let old = store.snapshot();
    store.commit(mcp(), vec![Change::delete("people/ann.json")]).unwrap();
    assert_eq!(old.seq, 1);
    assert!(old.analysis.document("people/ann.json").is_some());
    assert!(store.snapshot().analysis.document("people/ann.json").is_none());
}

#[test]
fn a_second_opener_is_told_who_owns_the_store() {
    let dir = library();
    let _store = open(dir.path());
    let err = Store::open(dir.path(), options()).unwrap_err();
    assert_eq!(err.code(), "busy");
    let message = err.to_string();
    assert!(message.contains(&format!("process {}", std::process::id())), "{message}");
    drop(_store);
    open(dir.path());
}

/// A store whose I/O fails at one chosen step of one chosen document.
fn failing_at(root: &Path, point: FailPoint, path: &'static str, kind: io::ErrorKind) -> Store {
    let armed = Arc::new(Mutex::new(true));
    let hook = move |p: FailPoint, rel: &str| {
        if p == point && rel == path && *armed.lock().unwrap() {
            return Err(io::Error::from(kind));
        }
        Ok(())
    };
    Store::open(root, OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap()
}

#[test]
fn io_failures_at_any_step_leave_nothing_half_applied() {
    let steps = [
        (FailPoint::WriteTemp, "people/cy.json", io::ErrorKind::StorageFull),
        (FailPoint::WriteTemp, "people/ann.json", io::ErrorKind::StorageFull),
        (FailPoint::AppendLog, "transactions.log", io::ErrorKind::StorageFull),
        (FailPoint::Rename, "people/ann.json", io::ErrorKind::Other),
        (FailPoint::Rename, "people/cy.json", io::ErrorKind::Other),
        (FailPoint::Remove, "people/bob.json", io::ErrorKind::PermissionDenied),
    ];
    for (point, path, kind) in steps {
        let dir = library();
        drop(open(dir.path()));
        let before = files(dir.path());
        let log = dir.path().join(".stardust/log/transactions.log");
        let log_before = std::fs::read(&log).unwrap();
        let store = failing_at(dir.path(), point, path, kind);
        let err = store
            .commit(
                mcp(),
                vec![
                    Change::put("people/ann.json", person("person/ann", "Ann 2")),
                    Change::delete("people/bob.json"),
                    Change::create("people/cy.json", person("person/cy", "Cy")),
                ],
            )
            .unwrap_err();
        let case = format!("{point:?} at {path}");
        assert_eq!(err.code(), "internal", "{case}: {err}");
        assert_eq!(err.io_kind(), Some(kind), "{case}: {err}");
        assert!(err.to_string().contains("nothing was committed"), "{case}: {err}");
        assert_eq!(files(dir.path()), before, "{case}: documents");
        assert_eq!(std::fs::read(&log).unwrap(), log_before, "{case}: log");
        assert_eq!(store.snapshot().seq, 1, "{case}");
        // The store goes on working after the failure.
        drop(store);
        let store = open(dir.path());
        assert_eq!(store.snapshot().seq, 1, "{case}: reopening finds nothing to record");
        store
            .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Ann 3"))])
            .unwrap();
        assert_eq!(verify_log(dir.path()).unwrap().damage, None);
    }
}

#[test]
fn a_document_replaced_by_a_folder_is_recorded_as_deleted() {
    let dir = library();
    let store = open(dir.path());
    std::fs::remove_file(dir.path().join("people/bob.json")).unwrap();
    std::fs::create_dir(dir.path().join("people/bob.json")).unwrap();
    let err = store.commit(mcp(), vec![Change::put("people/bob.json", person("person/bob", "B"))]);
    let err = err.unwrap_err();
    assert_eq!(err.code(), "invalid-arguments", "{err}");
    assert!(err.to_string().contains("folder"), "{err}");
    // Deleting it is refused the same way; a rescan (or the watcher) records the deletion.
    let err = store.commit(mcp(), vec![Change::delete("people/bob.json")]).unwrap_err();
    assert_eq!(err.code(), "invalid-arguments", "{err}");
    assert_eq!(store.rescan().unwrap().unwrap().documents[0].kind(), ChangeKind::Deleted);
    let txns = store.transactions(1, 10).unwrap();
    assert_eq!(txns.len(), 1);
    assert_eq!(
        (txns[0].origin.clone(), txns[0].documents[0].path.as_str(), txns[0].documents[0].kind()),
        (Origin::External, "people/bob.json", ChangeKind::Deleted)
    );
    assert!(dir.path().join("people/bob.json").is_dir());
    assert!(store.snapshot().analysis.document("people/bob.json").is_none());
}

#[test]
fn concurrent_commits_serialize_in_seq_order() {
    let dir = library();
    let store = Arc::new(open(dir.path()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                (0..10)
                    .map(|i| {
                        let path = format!("t{t}/doc{i}.json");
                        store.commit(mcp(), vec![Change::create(path, "[]")]).unwrap().seq
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    seqs.sort();
    assert_eq!(seqs, (2..=41).collect::<Vec<u64>>());
    let logged: Vec<u64> = store.transactions(0, 100).unwrap().iter().map(|t| t.seq).collect();
    assert_eq!(logged, (1..=41).collect::<Vec<u64>>());
    assert_eq!(store.snapshot().analysis.document_count(), 43);
}

#[test]
fn readers_are_not_blocked_by_a_commit_in_progress() {
    let dir = library();
    let (entered, wait_entered) = std::sync::mpsc::channel::<()>();
    let (release, wait_release) = std::sync::mpsc::channel::<()>();
    let entered = Mutex::new(entered);
    let wait_release = Mutex::new(wait_release);
    // The commit stops at its first rename, after the log record, holding the writer.
    let hook = move |point: FailPoint, _: &str| {
        if point == FailPoint::Rename {
            entered.lock().unwrap().send(()).unwrap();
            wait_release.lock().unwrap().recv().unwrap();
        }
        Ok(())
    };
    let store = Arc::new(
        Store::open(dir.path(), OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap(),
    );
    let committer = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Slow"))])
        })
    };
    wait_entered.recv().unwrap();
    // Mid-commit: readers see the last published state at once.
    let snapshot = store.snapshot();
    assert_eq!(snapshot.seq, 1);
    assert_eq!(store.transactions(0, 10).unwrap().len(), 1);
    assert!(matches!(
        store.changes_since(0, 10).unwrap(),
        stardust_core::store::ChangesSince::Changes { seq: 1, .. }
    ));
    release.send(()).unwrap();
    assert_eq!(committer.join().unwrap().unwrap().seq, 2);
    assert_eq!(store.snapshot().seq, 2);
}

#[test]
fn a_failed_commit_with_unchanged_documents_restores_the_right_content() {
    let dir = library();
    drop(open(dir.path()));
    let before = files(dir.path());
    let store = failing_at(dir.path(), FailPoint::Rename, "people/cy.json", io::ErrorKind::Other);
    // ann.json is put unchanged (left out of the transaction); bob.json changes, then the
    // rename of cy.json fails and bob.json must get its own old content back.
    let err = store
        .commit(
            mcp(),
            vec![
                Change::put("people/ann.json", person("person/ann", "Ann")),
                Change::put("people/bob.json", person("person/bob", "Bob 2")),
                Change::create("people/cy.json", person("person/cy", "Cy")),
            ],
        )
        .unwrap_err();
    assert_eq!(err.io_kind(), Some(io::ErrorKind::Other), "{err}");
    assert_eq!(files(dir.path()), before);
}

#[test]
fn a_failure_that_cannot_be_undone_stops_writes_until_reopened() {
    let dir = library();
    drop(open(dir.path()));
    let rename_failed = Arc::new(Mutex::new(false));
    let hook = {
        let rename_failed = rename_failed.clone();
        move |point: FailPoint, rel: &str| {
            let mut failed = rename_failed.lock().unwrap();
            match (point, rel) {
                (FailPoint::Rename, "people/cy.json") => {
                    *failed = true;
                    Err(io::Error::from(io::ErrorKind::Other))
                }
                // Putting ann.json back fails too: the disk is in trouble.
                (FailPoint::WriteTemp, "people/ann.json") if *failed => {
                    Err(io::Error::from(io::ErrorKind::StorageFull))
                }
                _ => Ok(()),
            }
        }
    };
    let store =
        Store::open(dir.path(), OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap();
    let changes = vec![
        Change::put("people/ann.json", person("person/ann", "Ann 2")),
        Change::create("people/cy.json", person("person/cy", "Cy")),
    ];
    let err = store.commit(mcp(), changes).unwrap_err();
    assert!(matches!(err, StoreError::Poisoned { .. }), "{err:?}");
    assert_eq!(err.code(), "internal");
    assert!(err.to_string().contains("reopen"), "{err}");
    let err = store.commit(mcp(), vec![Change::delete("people/bob.json")]).unwrap_err();
    assert!(matches!(err, StoreError::Poisoned { .. }), "later writes are refused: {err:?}");
    assert_eq!(store.snapshot().seq, 1);
    drop(store);
    // The record stayed in the log, so reopening finishes the commit: all of it, not half.
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 2);
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann 2"));
    assert_eq!(read(dir.path(), "people/cy.json").unwrap(), person("person/cy", "Cy"));
    assert_eq!(verify_log(dir.path()).unwrap().damage, None);
}

#[test]
fn the_files_commits_replace_are_let_go_and_none_is_left_behind() {
    let dir = library();
    let replaced = dir.path().join(".stardust/replaced");
    let store = open(dir.path());
    for i in 0..20 {
        let name = format!("Ann {i}");
        store
            .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", &name))])
            .unwrap();
    }
    store.commit(mcp(), vec![Change::delete("people/bob.json")]).unwrap();
    assert_eq!(read(dir.path(), "people/ann.json"), Some(person("person/ann", "Ann 19")));
    assert_eq!(read(dir.path(), "people/bob.json"), None);
    drop(store);
    // Every old file was let go (by the reaper, or at the latest when the store closed), and
    // the spare files made for commits went with the store.
    assert_eq!(std::fs::read_dir(&replaced).unwrap().count(), 0);
    // One a crash left there is let go at the next open; only new, empty spares are made.
    std::fs::write(replaced.join("7"), b"old").unwrap();
    let _store = open(dir.path());
    for entry in std::fs::read_dir(&replaced).unwrap() {
        let entry = entry.unwrap();
        assert_ne!(entry.file_name(), "7");
        assert_eq!(entry.metadata().unwrap().len(), 0, "{:?} is no spare", entry.path());
    }
}

/// What the save authority guards (SPEC §24): the store's data. A project's own JSON, a
/// fixture or a configuration naming a schema the store does not hold is committed with its
/// problems as diagnostics; a document holding entities (before or after), one a schema
/// governs, a schema, and a new document under a `[types.*] dir` are refused when broken.
#[test]
fn only_the_stores_data_is_guarded() {
    let dir = library();
    write(
        dir.path(),
        "stardust.toml",
        "[types.person]\ndir = \"people\"\n\n[[schema]]\nglob = \"config/*.json\"\npath = \"schemas/person.schema.json\"\n",
    );
    let store = open(dir.path());
    let committed = |path: &str, text: &str| store.commit(mcp(), vec![Change::put(path, text)]);

    // Not data: committed, and diagnosed.
    for (path, text) in [
        ("package.json", "{\"name\": \"@scope/pkg\", oops"),
        ("fixtures/user.json", "{\"id\": 2930418, \"name\": \"ada\""),
        ("tsconfig.json", "{\"$schema\": \"https://json.schemastore.org/tsconfig\", // c\n}"),
        ("empty.json", ""),
    ] {
        committed(path, text).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(read(dir.path(), path).unwrap(), text);
    }
    let diagnostics = store.snapshot().analysis.diagnostics_of("package.json");
    assert!(diagnostics.iter().any(|d| d.code.as_str() == "syntax"), "{diagnostics:?}");

    // Data: refused when broken.
    for (path, text) in [
        ("people/ann.json", "{\"id\": \"person/ann\", \"type\": \"person\""),
        ("config/app.json", "{\"id\": \"person/x\"}"),
        ("schemas/person.schema.json", "{\"type\": "),
        ("people/new.json", "{oops"),
        ("package.json", "{\"id\": \"person/pkg\", \"type\": \"person\"}"),
    ] {
        let err = committed(path, text).expect_err(path);
        assert_eq!(err.code(), "refused", "{path}: {err}");
    }
    // A new broken document anywhere else is not data.
    committed("notes/new.json", "{oops").unwrap();

    // A document naming by URL a schema the store holds (its `$id`) is data; one naming a URL
    // the store does not hold is not.
    let schema = "{\"$schema\": \"http://json-schema.org/draft-07/schema#\", \"$id\": \"https://example.com/app.schema.json\", \"type\": \"object\"}";
    committed("vendor/app.schema.json", schema).unwrap();
    let named = |url: &str| format!("{{\"$schema\": \"{url}\", \"port\": 80}}");
    committed("app.json", &named("https://example.com/app.schema.json")).unwrap();
    committed("other.json", &named("https://example.com/other.schema.json")).unwrap();
    let err = committed("app.json", "{\"$schema\": ").expect_err("app.json is data");
    assert_eq!(err.code(), "refused", "{err}");
    committed("other.json", "{\"$schema\": ").unwrap();
}

/// What a git operation writes through the mount (while git holds `.git/index.lock`) is
/// recorded history coming back (SPEC §24): an `external` transaction, never refused, with its
/// problems as diagnostics. Without the lock the same save is refused.
#[test]
fn writes_during_a_git_operation_are_external_and_never_refused() {
    let dir = library();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let store = open(dir.path());
    let broken = "{\"id\": \"person/ann\", \"type\": \"person\"}";
    let err = store.commit(Origin::Mount, vec![Change::put("people/ann.json", broken)]);
    assert_eq!(err.unwrap_err().code(), "refused");

    write(dir.path(), ".git/index.lock", "");
    let committed = store.commit(Origin::Mount, vec![Change::put("people/ann.json", broken)]);
    let txn = committed.unwrap().transaction.expect("a transaction");
    assert_eq!(txn.origin, Origin::External);
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), broken);
    let diagnostics = store.snapshot().analysis.diagnostics_of("people/ann.json");
    assert!(diagnostics.iter().any(|d| d.code.as_str() == "schema"), "{diagnostics:?}");
    // Only the mount's saves are git's: an agent's change is still judged.
    let err = store.commit(mcp(), vec![Change::put("people/bob.json", broken)]);
    assert_eq!(err.unwrap_err().code(), "refused");
    assert!(verify_log(dir.path()).unwrap().damage.is_none());
}

/// A tool that deletes the private folder while the store is open (`git clean -fdx`) neither
/// lets a second opener in nor splits the history (SPEC §24): the lock is on the store's folder,
/// and the next write puts the folder back with the whole log, its `.gitignore` and the pid.
#[test]
fn a_deleted_private_folder_comes_back_with_the_whole_history() {
    let dir = library();
    // No idle checkpoint: it would take the writer and put the folder back while
    // `remove_dir_all` is still deleting it (the product's behaviour, the test's race).
    let quiet = OpenOptions { checkpoint_idle: Duration::from_secs(3600), ..options() };
    let store = Store::open(dir.path(), quiet).unwrap();
    store.commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "A"))]).unwrap();
    // The reaper makes the next commit's spare files after each commit, in the folder being
    // deleted: like `rm -rf` beside a running store, the deletion is tried until it is whole.
    let private = dir.path().join(".stardust");
    for attempt in 0.. {
        match std::fs::remove_dir_all(&private) {
            Ok(()) => break,
            Err(err) if attempt < 50 => {
                eprintln!("{err}, again");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(err) => panic!("{err}"),
        }
    }

    let err = Store::open(dir.path(), options()).unwrap_err();
    assert_eq!(err.code(), "busy", "{err}");

    let committed =
        store.commit(mcp(), vec![Change::put("people/bob.json", person("person/bob", "B"))]);
    assert_eq!(committed.unwrap().seq, 3);
    assert_eq!(
        std::fs::read_to_string(private.join(".gitignore")).unwrap().lines().last(),
        Some("*")
    );
    let pid = std::fs::read_to_string(private.join("lock")).unwrap();
    assert_eq!(pid, std::process::id().to_string());
    let verified = verify_log(dir.path()).unwrap();
    assert_eq!((verified.last_seq, verified.damage), (3, None));
    assert_eq!(store.transactions(0, 10).unwrap().len(), 3);

    drop(store);
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 3, "nothing new to take in: one history");
}

/// `.stardust/` deleted in the middle of a commit (between the checks and the log append): the
/// record goes into the log the writer holds open, the commit is whole, and the next write puts
/// the folder back with every record (SPEC §24).
#[test]
fn the_private_folder_deleted_during_a_commit_loses_nothing() {
    let dir = library();
    let root = dir.path().to_owned();
    let deleted = Arc::new(Mutex::new(false));
    let hook = {
        let deleted = deleted.clone();
        move |point: FailPoint, _: &str| -> io::Result<()> {
            let mut done = deleted.lock().unwrap();
            if point == FailPoint::AppendLog && !*done {
                *done = true;
                std::fs::remove_dir_all(root.join(".stardust"))?;
            }
            Ok(())
        }
    };
    let store =
        Store::open(dir.path(), OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap();
    let first =
        store.commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "A"))]);
    assert_eq!(first.unwrap().seq, 2);
    assert!(*deleted.lock().unwrap());
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "A"));
    let second =
        store.commit(mcp(), vec![Change::put("people/bob.json", person("person/bob", "B"))]);
    assert_eq!(second.unwrap().seq, 3);
    let verified = verify_log(dir.path()).unwrap();
    assert_eq!((verified.transactions, verified.damage), (3, None));
    drop(store);
    assert_eq!(open(dir.path()).snapshot().seq, 3);
}

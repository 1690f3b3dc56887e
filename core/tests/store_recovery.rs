//! Opening a store: the first history, edits made while closed, interrupted commits, and a
//! damaged log.

mod common;

use std::io::{Seek, Write};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use common::{open, options, person, read, write};
use stardust_core::store::{
    Change, ChangeKind, FailPoint, OpenOptions, Origin, Store, StoreError, read_log, verify_log,
};

fn library() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann"));
    write(dir.path(), "people/bob.json", &person("person/bob", "Bob"));
    write(
        dir.path(),
        "people/many.json",
        &format!("[{}, {}]", person("x/1", "one"), person("x/2", "two")),
    );
    write(dir.path(), "README.md", "not a document");
    dir
}

fn log_path(root: &Path) -> std::path::PathBuf {
    root.join(".stardust/log/transactions.log")
}

fn sdk() -> Origin {
    Origin::Sdk("test".into())
}

#[test]
fn the_first_open_records_every_document_once() {
    let dir = library();
    let store = open(dir.path());
    let txns = store.transactions(0, 100).unwrap();
    assert_eq!(txns.len(), 1);
    let first = &txns[0];
    assert_eq!((first.seq, &first.origin), (1, &Origin::External));
    let docs: Vec<(&str, ChangeKind, Vec<String>)> =
        first.documents.iter().map(|d| (d.path.as_str(), d.kind(), d.created.clone())).collect();
    assert_eq!(
        docs,
        vec![
            ("people/ann.json", ChangeKind::Created, vec!["person/ann".to_owned()]),
            ("people/bob.json", ChangeKind::Created, vec!["person/bob".to_owned()]),
            ("people/many.json", ChangeKind::Created, vec!["x/1".to_owned(), "x/2".to_owned()]),
        ]
    );
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 1, "nothing changed, nothing recorded");
    assert_eq!(store.snapshot().analysis.document_count(), 3);
}

#[test]
fn an_empty_store_has_no_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 0);
    assert!(store.transactions(0, 10).unwrap().is_empty());
    store.commit(sdk(), vec![Change::create("a.json", "{}")]).unwrap();
    assert_eq!(store.snapshot().seq, 1);
}

#[test]
fn edits_made_while_closed_become_one_external_transaction() {
    let dir = library();
    drop(open(dir.path()));
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann Edited"));
    std::fs::remove_file(dir.path().join("people/bob.json")).unwrap();
    write(dir.path(), "people/new.json", &person("person/new", "New"));
    write(
        dir.path(),
        "people/many.json",
        &format!("[{}, {}]", person("x/1", "one"), person("x/3", "three")),
    );
    let store = open(dir.path());
    let txns = store.transactions(1, 100).unwrap();
    assert_eq!(txns.len(), 1);
    let txn = &txns[0];
    assert_eq!((txn.seq, &txn.origin), (2, &Origin::External));
    let docs: Vec<_> = txn
        .documents
        .iter()
        .map(|d| {
            (d.path.as_str(), d.kind(), d.created.clone(), d.changed.clone(), d.deleted.clone())
        })
        .collect();
    let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        docs,
        vec![
            ("people/ann.json", ChangeKind::Changed, s(&[]), s(&["person/ann"]), s(&[])),
            ("people/bob.json", ChangeKind::Deleted, s(&[]), s(&[]), s(&["person/bob"])),
            ("people/many.json", ChangeKind::Changed, s(&["x/3"]), s(&[]), s(&["x/2"])),
            ("people/new.json", ChangeKind::Created, s(&["person/new"]), s(&[]), s(&[])),
        ]
    );
    assert_eq!(store.snapshot().seq, 2);
    assert_eq!(verify_log(dir.path()).unwrap().damage, None);
}

#[test]
fn external_edits_with_problems_are_recorded_not_refused() {
    let dir = library();
    drop(open(dir.path()));
    write(dir.path(), "people/ann.json", "{\"id\": ");
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 2);
    let diagnostics = store.snapshot().analysis.diagnostics_of("people/ann.json");
    assert!(diagnostics.iter().any(|d| d.code.as_str() == "syntax"), "{diagnostics:?}");
}

/// Commit with a hook that "crashes" (panics) when the commit reaches `point` for `path`,
/// after the log record is durable; the store is dropped without finishing the commit.
fn crash_during_commit(root: &Path, path: &'static str, changes: Vec<Change>) {
    let hook = move |point: FailPoint, rel: &str| {
        if point == FailPoint::Rename && rel == path {
            panic!("simulated crash before renaming {rel}");
        }
        Ok(())
    };
    let store = Store::open(root, OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap();
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| store.commit(sdk(), changes)));
    assert!(result.is_err(), "the hook should have crashed the commit");
    drop(store);
}

#[test]
fn a_logged_but_unapplied_commit_is_redone_on_open() {
    let dir = library();
    drop(open(dir.path()));
    crash_during_commit(
        dir.path(),
        "people/new.json",
        vec![
            Change::put("people/ann.json", person("person/ann", "Ann 2")),
            Change::delete("people/bob.json"),
            Change::create("people/new.json", person("person/new", "New")),
        ],
    );
    // The crash left a half-applied commit on disk: ann and bob done, new not.
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann 2"));
    assert_eq!(read(dir.path(), "people/new.json"), None);
    assert!(dir.path().join("people/.new.json.stardust-tmp").exists());

    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 2, "the commit was finished, not recorded as external");
    assert_eq!(read(dir.path(), "people/new.json").unwrap(), person("person/new", "New"));
    assert_eq!(read(dir.path(), "people/bob.json"), None);
    assert!(
        !dir.path().join("people/.new.json.stardust-tmp").exists(),
        "the stale temp is removed"
    );
    let txn = &store.transactions(1, 10).unwrap()[0];
    assert_eq!(txn.origin, sdk());
    assert_eq!(txn.documents.len(), 3);
    let v = verify_log(dir.path()).unwrap();
    assert_eq!((v.transactions, v.damage), (2, None));
    drop(store);
    assert_eq!(open(dir.path()).snapshot().seq, 2, "a second open has nothing to redo or record");
}

#[test]
fn a_redo_never_overwrites_an_edit_made_after_the_crash() {
    let dir = library();
    drop(open(dir.path()));
    crash_during_commit(
        dir.path(),
        "people/bob.json",
        vec![
            Change::put("people/ann.json", person("person/ann", "Ann 2")),
            Change::put("people/bob.json", person("person/bob", "Bob 2")),
        ],
    );
    write(dir.path(), "people/bob.json", &person("person/bob", "Bob by hand"));
    let store = open(dir.path());
    assert_eq!(read(dir.path(), "people/bob.json").unwrap(), person("person/bob", "Bob by hand"));
    let txns = store.transactions(1, 10).unwrap();
    assert_eq!(txns.len(), 2);
    assert_eq!(txns[1].origin, Origin::External);
    assert_eq!(txns[1].documents[0].path, "people/bob.json");
    assert_eq!(txns[1].documents[0].before, txns[0].documents[1].after, "history stays continuous");
}

#[test]
fn a_finished_commit_is_never_redone() {
    let dir = library();
    let store = open(dir.path());
    store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))])
        .unwrap();
    drop(store);
    // Undo the commit by hand (say, `git checkout`) while the store is closed.
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann"));
    let store = open(dir.path());
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann"));
    let last = store.transactions(2, 10).unwrap();
    assert_eq!((last.len(), &last[0].origin), (1, &Origin::External));
}

#[test]
fn a_torn_tail_is_truncated() {
    let dir = library();
    let store = open(dir.path());
    store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))])
        .unwrap();
    drop(store);
    let records = verify_log(dir.path()).unwrap().valid_len as usize;
    let good = std::fs::read(log_path(dir.path())).unwrap()[..records].to_vec();
    // Half of a record where the next one goes (over the writer's reserve of zeros): a header
    // claiming more bytes than follow.
    let mut file = std::fs::OpenOptions::new().write(true).open(log_path(dir.path())).unwrap();
    file.seek(std::io::SeekFrom::Start(records as u64)).unwrap();
    file.write_all(b"SDT1\x00\x01\x00\x00\x00\x00\x00\x00{\"kind\":\"tran").unwrap();
    drop(file);
    assert!(!verify_log(dir.path()).unwrap().damage.unwrap().in_middle);
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, 2);
    assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), good);
    store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 3"))])
        .unwrap();
    assert_eq!(verify_log(dir.path()).unwrap().damage, None);
}

#[test]
fn damage_in_the_middle_of_the_log_refuses_to_open() {
    let dir = library();
    let store = open(dir.path());
    store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))])
        .unwrap();
    store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 3"))])
        .unwrap();
    drop(store);
    let mut bytes = std::fs::read(log_path(dir.path())).unwrap();
    // Inside the header of seq 1, which is followed by seqs 2 and 3.
    bytes[40] ^= 0x01;
    std::fs::write(log_path(dir.path()), &bytes).unwrap();

    let err = Store::open(dir.path(), options()).unwrap_err();
    assert_eq!(err.code(), "internal");
    assert!(matches!(err, StoreError::LogCorrupt { seq: 1, offset: 0, .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("seq 1") && message.contains("stardust log --verify"), "{message}");
    assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), bytes, "nothing was truncated");

    let v = verify_log(dir.path()).unwrap();
    let damage = v.damage.unwrap();
    assert!(damage.in_middle);
    assert_eq!((damage.seq, damage.offset, v.transactions), (1, 0, 0));
    assert!(read_log(dir.path(), 0, 10).is_err());
}

#[test]
fn the_log_can_be_read_while_another_process_owns_the_store() {
    let dir = library();
    let store = open(dir.path());
    store.commit(sdk(), vec![Change::delete("people/bob.json")]).unwrap();
    let txns = read_log(dir.path(), 0, 100).unwrap();
    assert_eq!(txns, store.transactions(0, 100).unwrap());
    assert_eq!(read_log(dir.path(), 1, 100).unwrap().len(), 1);
    assert_eq!(read_log(dir.path(), 0, 1).unwrap().len(), 1);
}

#[cfg(unix)]
#[test]
fn links_out_of_the_store_are_not_documents() {
    let dir = library();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.json", "{\"secret\": true}");
    std::os::unix::fs::symlink(outside.path().join("secret.json"), dir.path().join("secret.json"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linked")).unwrap();
    let store = open(dir.path());
    let first = &store.transactions(0, 1).unwrap()[0];
    let paths: Vec<&str> = first.documents.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["people/ann.json", "people/bob.json", "people/many.json"]);
    assert!(store.rescan().unwrap().is_none());
    let err = store.commit(sdk(), vec![Change::put("secret.json", "{}")]).unwrap_err();
    assert_eq!(err.code(), "outside-store");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.json")).unwrap(),
        "{\"secret\": true}"
    );
}

#[test]
fn an_unreadable_document_is_kept_as_last_logged_not_deleted() {
    let dir = library();
    drop(open(dir.path()));
    let hook = |point: FailPoint, rel: &str| {
        if point == FailPoint::Read && rel == "people/ann.json" {
            return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        }
        Ok(())
    };
    let store =
        Store::open(dir.path(), OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap();
    assert_eq!(store.snapshot().seq, 1, "nothing recorded");
    let ann = store.snapshot().analysis.document("people/ann.json").cloned().unwrap();
    assert_eq!(ann.text.as_str(), person("person/ann", "Ann"));
    assert_eq!(store.rescan().unwrap_err().io_kind(), Some(std::io::ErrorKind::PermissionDenied));
    assert_eq!(store.snapshot().seq, 1);
}

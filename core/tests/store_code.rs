//! Code files in the transaction model (SPEC §18): a commit writes them as bytes beside
//! documents, all or nothing, with their versions read from disk; the log records them and
//! recovery redoes them; edits made to them outside Stardust are not history.

mod common;

use std::io;
use std::sync::Arc;

use common::{open, options, person, read, write};
use stardust_core::store::{Change, FailPoint, OpenOptions, Origin, Store, Version};

fn mcp() -> Origin {
    Origin::Mcp("test".into())
}

/// A store with a schema-less person document and a Python file.
fn mixed() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann"));
    write(dir.path(), "src/app.py", "def greet():\n    return 'hi'\n");
    dir
}

fn v(text: &str) -> Version {
    Version::of(text.as_bytes())
}

#[test]
fn a_code_file_commits_as_bytes_with_its_disk_versions() {
    let dir = mixed();
    let store = open(dir.path());
    let first = store.snapshot().seq;
    let new = "def hello():\n    return 'hi'\n";
    let committed = store
        .commit(
            mcp(),
            vec![
                Change::put("src/app.py", new).expecting(v("def greet():\n    return 'hi'\n")),
                Change::create("src/util.py", "X = 1\n"),
            ],
        )
        .unwrap();
    assert_eq!(committed.seq, first + 1);
    assert_eq!(read(dir.path(), "src/app.py").as_deref(), Some(new));
    assert_eq!(read(dir.path(), "src/util.py").as_deref(), Some("X = 1\n"));
    let txn = committed.transaction.unwrap();
    let docs: Vec<_> = txn
        .documents
        .iter()
        .map(|d| (d.path.as_str(), d.before, d.after, d.created.len() + d.changed.len()))
        .collect();
    assert_eq!(
        docs,
        [
            ("src/app.py", Some(v("def greet():\n    return 'hi'\n")), Some(v(new)), 0),
            ("src/util.py", None, Some(v("X = 1\n")), 0),
        ]
    );
    // Never analysed: the snapshot holds documents only.
    let snapshot = store.snapshot();
    assert!(snapshot.analysis.document("src/app.py").is_none());
    assert_eq!(snapshot.analysis.document_count(), 1);
    assert_eq!(store.transactions(first, 10).unwrap(), [txn]);

    let deleted = store.commit(mcp(), vec![Change::delete("src/util.py")]).unwrap();
    assert_eq!(read(dir.path(), "src/util.py"), None);
    let doc = &deleted.transaction.unwrap().documents[0];
    assert_eq!((doc.before, doc.after), (Some(v("X = 1\n")), None));
}

#[test]
fn a_code_file_changed_on_disk_since_it_was_read_is_a_conflict() {
    let dir = mixed();
    let store = open(dir.path());
    let read_at = v("def greet():\n    return 'hi'\n");
    write(dir.path(), "src/app.py", "def greet():\n    return 'edited'\n");
    let err = store
        .commit(mcp(), vec![Change::put("src/app.py", "x = 1\n").expecting(read_at)])
        .unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert_eq!(
        read(dir.path(), "src/app.py").as_deref(),
        Some("def greet():\n    return 'edited'\n")
    );
    let err = store.commit(mcp(), vec![Change::create("src/app.py", "x = 1\n")]).unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    let err = store.commit(mcp(), vec![Change::delete("src/gone.py")]).unwrap_err();
    assert_eq!(err.code(), "not-found", "{err}");
    // Unchanged bytes are no transaction.
    let same = store
        .commit(mcp(), vec![Change::put("src/app.py", "def greet():\n    return 'edited'\n")])
        .unwrap();
    assert_eq!(same.transaction, None);
}

#[test]
fn code_files_and_documents_commit_all_or_nothing() {
    let dir = mixed();
    drop(open(dir.path()));
    // The rename of the document fails after the code file was installed: both are put back.
    let hook = |point: FailPoint, path: &str| {
        if point == FailPoint::Rename && path == "people/ann.json" {
            return Err(io::Error::other("injected"));
        }
        Ok(())
    };
    let store =
        Store::open(dir.path(), OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap();
    let seq = store.snapshot().seq;
    let err = store
        .commit(
            mcp(),
            vec![
                Change::put("people/ann.json", person("person/ann", "Annie")),
                Change::put("src/app.py", "broken = (\n"),
            ],
        )
        .unwrap_err();
    assert_eq!(err.code(), "internal", "{err}");
    assert_eq!(read(dir.path(), "src/app.py").as_deref(), Some("def greet():\n    return 'hi'\n"));
    assert_eq!(read(dir.path(), "people/ann.json"), Some(person("person/ann", "Ann")));
    assert_eq!(store.snapshot().seq, seq);
    assert_eq!(store.transactions(seq, 10).unwrap(), []);
}

#[test]
fn edits_of_a_code_file_outside_stardust_are_not_history() {
    let dir = mixed();
    let store = open(dir.path());
    store.commit(mcp(), vec![Change::put("src/app.py", "A = 1\n")]).unwrap();
    let seq = store.snapshot().seq;
    drop(store);
    write(dir.path(), "src/app.py", "A = 2\n");
    std::fs::remove_file(dir.path().join("src/app.py")).unwrap();
    write(dir.path(), "src/app.py", "A = 3\n");
    let store = open(dir.path());
    assert_eq!(store.snapshot().seq, seq, "no external transaction for a code file");
    assert_eq!(read(dir.path(), "src/app.py").as_deref(), Some("A = 3\n"));
    // The next commit reads the version on disk, so expecting the logged one is a conflict.
    let err = store
        .commit(mcp(), vec![Change::put("src/app.py", "A = 4\n").expecting(v("A = 1\n"))])
        .unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    store
        .commit(mcp(), vec![Change::put("src/app.py", "A = 4\n").expecting(v("A = 3\n"))])
        .unwrap();
}

#[test]
fn private_folders_are_never_written() {
    let dir = mixed();
    let store = open(dir.path());
    for path in [".stardust/x.py", ".git/config", ".stardust/log/transactions.log"] {
        let err = store.commit(mcp(), vec![Change::put(path, "x")]).unwrap_err();
        assert_eq!(err.code(), "invalid-arguments", "{path}: {err}");
    }
}

/// A double of the service's side: `.py` files are code files, and a save whose text says
/// `broken` (and whose old text did not) adds an error; every call is recorded.
#[derive(Default)]
struct Checks {
    calls: std::sync::Mutex<Vec<(String, Option<String>, String)>>,
}

impl stardust_core::store::saves::CodeSaves for Checks {
    fn is_code(&self, rel: &str) -> bool {
        rel.ends_with(".py")
    }

    fn refusals(&self, rel: &str, before: Option<&[u8]>, after: &[u8]) -> Vec<String> {
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        self.calls.lock().unwrap().push((rel.to_owned(), before.map(text), text(after)));
        let broken = |b: &[u8]| text(b).contains("broken");
        if broken(after) && !before.is_some_and(broken) {
            vec![format!("{rel}:1:1: error[code-error] broken (double)")]
        } else {
            Vec::new()
        }
    }
}

#[test]
fn mount_saves_of_code_files_pass_the_code_error_rule_when_refuse_lists_it() {
    use stardust_core::store::PathKind;
    let dir = mixed();
    write(dir.path(), "stardust.toml", "[store]\n[save]\nrefuse = [\"code-error\"]\n");
    let store = open(dir.path());
    // Before the service says which files are code files, none is.
    assert_eq!(store.path_kind("src/app.py"), PathKind::Plain);
    let checks = Arc::new(Checks::default());
    store.set_code_saves(checks.clone());
    let kinds: Vec<PathKind> =
        ["src/app.py", "notes.txt", "src/.app.py.swp", "people/ann.json", ".stardust/log"]
            .iter()
            .map(|p| store.path_kind(p))
            .collect();
    use PathKind::*;
    assert_eq!(kinds, [Document, Plain, Scratch, Document, Private]);

    let old = "def greet():\n    return 'hi'\n";
    let err = store.commit(Origin::Mount, vec![Change::put("src/app.py", "broken\n")]).unwrap_err();
    assert_eq!(err.code().as_str(), "refused");
    assert!(err.to_string().contains("src/app.py:1:1: error[code-error] broken (double)"), "{err}");
    assert_eq!(read(dir.path(), "src/app.py").as_deref(), Some(old));
    // The kept bytes' `.why` lists the errors.
    let name = store.keep_rejected("src/app.py", b"broken\n", &err).unwrap();
    let why = std::fs::read_to_string(store.rejected_dir().join(format!("{name}.why"))).unwrap();
    assert!(
        why.ends_with("[refused]\nsrc/app.py:1:1: error[code-error] broken (double)\n"),
        "{why}"
    );
    assert_eq!(
        checks.calls.lock().unwrap()[0],
        ("src/app.py".to_owned(), Some(old.to_owned()), "broken\n".to_owned()),
        "the check sees the text on disk and the saved one"
    );

    // A clean save commits; other origins (a confirmed preview was checked when it was made)
    // and deletes are not asked about.
    store.commit(Origin::Mount, vec![Change::create("src/new.py", "x = 1\n")]).unwrap();
    store.commit(mcp(), vec![Change::put("src/app.py", "broken = 1\n")]).unwrap();
    store.commit(Origin::Mount, vec![Change::delete("src/new.py")]).unwrap();
    let asked: Vec<String> = checks.calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(asked, ["src/app.py", "src/new.py"]);
    drop(store);

    // Without code-error in [save] refuse, a mount save is never checked.
    write(dir.path(), "stardust.toml", "[store]\n");
    let store = open(dir.path());
    let checks = Arc::new(Checks::default());
    store.set_code_saves(checks.clone());
    store.commit(Origin::Mount, vec![Change::put("src/app.py", "broken = 2\n")]).unwrap();
    assert!(checks.calls.lock().unwrap().is_empty());
}

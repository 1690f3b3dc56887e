//! Edits made behind Stardust's back while a store is open, taken in by the file watcher.

use std::path::Path;
use std::time::{Duration, Instant};

use stardust_core::store::{
    Change, ChangeKind, DocumentNotice, FolderChange, FolderChangeKind, Notice, OpenOptions,
    Origin, Store, Subscription,
};

fn open(root: &Path) -> Store {
    let options = OpenOptions { debounce: Duration::from_millis(30), ..OpenOptions::default() };
    Store::open(root, options).unwrap()
}

/// Write a file whole (through a temporary name), so the watcher never sees it half-written.
fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let temp = path.with_extension("partial");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(temp, path).unwrap();
}

/// Document notices until `want` paths have been seen (each with its latest change).
fn wait_for(sub: &Subscription, want: usize) -> Vec<DocumentNotice> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen: Vec<DocumentNotice> = Vec::new();
    while seen.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        match sub.next_timeout(left) {
            Some(Notice::Changes { documents, .. }) => {
                for doc in documents {
                    seen.retain(|d| d.path != doc.path);
                    seen.push(doc);
                }
            }
            Some(Notice::Overflow { .. }) => panic!("unexpected overflow"),
            None => panic!("the watcher reported {} of {want} documents: {seen:?}", seen.len()),
        }
    }
    seen.sort_by(|a, b| a.path.cmp(&b.path));
    seen
}

fn kinds(notices: &[DocumentNotice]) -> Vec<(&str, ChangeKind)> {
    notices.iter().map(|d| (d.path.as_str(), d.change)).collect()
}

#[test]
fn edits_while_open_are_recorded_as_external() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.json", "{\"id\": \"x/a\", \"type\": \"t\"}");
    let store = open(dir.path());
    let sub = store.subscribe();

    write(dir.path(), "b.json", "{\"id\": \"x/b\", \"type\": \"t\"}");
    write(dir.path(), "a.json", "{\"id\": \"x/a\", \"type\": \"t\", \"n\": 1}");
    write(dir.path(), "notes.txt", "not a document");
    let seen = wait_for(&sub, 2);
    assert_eq!(
        kinds(&seen),
        vec![("a.json", ChangeKind::Changed), ("b.json", ChangeKind::Created)]
    );
    let txns = store.transactions(1, 10).unwrap();
    assert!(txns.iter().all(|t| t.origin == Origin::External), "{txns:?}");

    std::fs::remove_file(dir.path().join("b.json")).unwrap();
    assert_eq!(kinds(&wait_for(&sub, 1)), vec![("b.json", ChangeKind::Deleted)]);
    assert!(store.snapshot().analysis.document("b.json").is_none());

    // A bad edit is recorded anyway; its problems become diagnostics.
    write(dir.path(), "a.json", "{\"id\": ");
    assert_eq!(kinds(&wait_for(&sub, 1)), vec![("a.json", ChangeKind::Changed)]);
    let diagnostics = store.snapshot().analysis.diagnostics_of("a.json");
    assert!(diagnostics.iter().any(|d| d.code.as_str() == "syntax"), "{diagnostics:?}");
}

#[test]
fn the_stores_own_writes_are_not_external() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let sub = store.subscribe();
    for i in 0..5 {
        let text = format!("{{\"n\": {i}}}");
        store.commit(Origin::Mount, vec![Change::put("a.json", text)]).unwrap();
        store.commit(Origin::Mount, vec![Change::put(format!("dir{i}/b.json"), "[]")]).unwrap();
    }
    store.commit(Origin::Mount, vec![Change::delete("dir0/b.json")]).unwrap();
    // Give the watcher time to see every event of those writes.
    std::thread::sleep(Duration::from_millis(500));
    let txns = store.transactions(0, 100).unwrap();
    assert_eq!(txns.len(), 11);
    assert!(txns.iter().all(|t| t.origin == Origin::Mount), "{txns:?}");
    let Some(Notice::Changes { seq, .. }) = sub.try_next() else { panic!() };
    assert_eq!(seq, 11);
    assert_eq!(sub.try_next(), None);
}

#[test]
fn a_removed_folder_and_a_document_replaced_by_a_folder_are_deletions() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "people/a.json", "{}");
    write(dir.path(), "people/deep/b.json", "{}");
    write(dir.path(), "c.json", "{}");
    let store = open(dir.path());
    let sub = store.subscribe();

    std::fs::remove_dir_all(dir.path().join("people")).unwrap();
    let seen = wait_for(&sub, 2);
    assert_eq!(
        kinds(&seen),
        vec![("people/a.json", ChangeKind::Deleted), ("people/deep/b.json", ChangeKind::Deleted)]
    );

    std::fs::remove_file(dir.path().join("c.json")).unwrap();
    std::fs::create_dir(dir.path().join("c.json")).unwrap();
    assert_eq!(kinds(&wait_for(&sub, 1)), vec![("c.json", ChangeKind::Deleted)]);
    assert_eq!(store.snapshot().analysis.document_count(), 0);
}

#[test]
fn a_folder_moved_in_brings_its_documents() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
    write(elsewhere.path(), "x/one.json", "{}");
    write(elsewhere.path(), "x/two.dust", "a 1");
    let store = open(dir.path());
    let sub = store.subscribe();
    std::fs::rename(elsewhere.path().join("x"), dir.path().join("moved")).unwrap();
    let seen = wait_for(&sub, 2);
    assert_eq!(
        kinds(&seen),
        vec![("moved/one.json", ChangeKind::Created), ("moved/two.dust", ChangeKind::Created)]
    );
}

#[cfg(unix)]
#[test]
fn a_link_made_while_open_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.json", "{}");
    let store = open(dir.path());
    let sub = store.subscribe();
    std::os::unix::fs::symlink(outside.path().join("secret.json"), dir.path().join("link.json"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linked")).unwrap();
    // A real edit after the links: once it is seen, the links' events have been handled too.
    write(dir.path(), "real.json", "{}");
    assert_eq!(kinds(&wait_for(&sub, 1)), vec![("real.json", ChangeKind::Created)]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(sub.try_next(), None);
    assert_eq!(store.snapshot().analysis.document_count(), 1);
}

/// A change of `stardust.toml` or of an ignore file takes effect while the store is open
/// (SPEC §23): documents now ignored leave the snapshot (their files untouched, no deletion
/// recorded), files no longer ignored are taken in as an `external` transaction, and later
/// edits of ignored files are not recorded. An invalid configuration keeps the one in force.
#[test]
fn configuration_and_ignore_rules_take_effect_while_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.json", "{\"id\": \"x/a\", \"type\": \"t\"}");
    write(root, "gen/b.json", "{\"id\": \"x/b\", \"type\": \"t\"}");
    write(root, "vendor/c.json", "{\"id\": \"x/c\", \"type\": \"t\"}");
    write(root, ".gitignore", "vendor/\n");
    let store = open(root);
    let sub = store.subscribe();
    let documents = |store: &Store| -> Vec<String> {
        store.snapshot().analysis.documents().map(|d| d.path.clone()).collect()
    };
    assert_eq!(documents(&store), ["a.json", "gen/b.json"]);
    let head = store.snapshot().seq;

    // The generated folder is ignored now: it leaves, and nothing is recorded.
    write(root, ".gitignore", "vendor/\ngen/\n");
    wait_until(|| documents(&store) == ["a.json"]);
    assert_eq!(store.snapshot().seq, head, "leaving is not a change of the files");
    assert!(root.join("gen/b.json").is_file());

    // An edit of an ignored file is nobody's business.
    write(root, "gen/b.json", "{\"id\": ");
    // stardust.toml turns the project's rules off: vendor/ and gen/ come in as history.
    write(root, "stardust.toml", "[store]\ngitignore = false\nignore = [\"gen/**\"]\n");
    let seen = wait_for(&sub, 1);
    assert_eq!(kinds(&seen), vec![("vendor/c.json", ChangeKind::Created)]);
    assert_eq!(documents(&store), ["a.json", "vendor/c.json"]);
    let txns = store.transactions(head, 10).unwrap();
    assert_eq!(txns.len(), 1, "{txns:?}");
    assert_eq!(txns[0].origin, Origin::External);

    // A configuration that does not parse is reported, and the one in force stays.
    write(root, "stardust.toml", "[store]\nignroe = []\n");
    write(root, "d.json", "{\"id\": \"x/d\", \"type\": \"t\"}");
    assert_eq!(kinds(&wait_for(&sub, 1)), vec![("d.json", ChangeKind::Created)]);
    assert_eq!(documents(&store), ["a.json", "d.json", "vendor/c.json"]);
}

/// `[store] jsonc` changed while open: a `.json` document it now names is read as JSON with
/// comments at once (its comment is no longer a syntax error), and again as JSON when the
/// glob goes.
#[test]
fn a_changed_jsonc_glob_reparses_the_documents_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "conf/app.json", "{\n  // the port\n  \"port\": 80\n}");
    let store = open(root);
    let syntax_errors = |store: &Store| -> usize {
        let diagnostics = store.snapshot().analysis.diagnostics_of("conf/app.json");
        diagnostics.iter().filter(|d| d.code.as_str() == "syntax").count()
    };
    assert_eq!(syntax_errors(&store), 1);
    write(root, "stardust.toml", "[store]\njsonc = [\"conf/*.json\"]\n");
    wait_until(|| syntax_errors(&store) == 0);
    write(root, "stardust.toml", "[store]\njsonc = []\n");
    wait_until(|| syntax_errors(&store) == 1);
}

fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "the store did not take the new rules in");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The watcher puts a deleted private folder back at once, with the log, so a process reading
/// the history from disk (`stardust log`) finds all of it (SPEC §24).
#[test]
fn a_deleted_private_folder_is_put_back_while_idle() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.json", "{\"id\": \"x/a\", \"type\": \"t\"}");
    let store = open(dir.path());
    let log = dir.path().join(".stardust/log/transactions.log");
    let before = std::fs::read(&log).unwrap();
    std::fs::remove_dir_all(dir.path().join(".stardust")).unwrap();
    wait_until(|| std::fs::read(&log).is_ok_and(|now| now == before));
    assert!(dir.path().join(".stardust/.gitignore").is_file());
    assert_eq!(store.transactions(0, 10).unwrap().len(), 1);
}

/// The folder changes received until every path of `want` was seen with its kind.
fn folder_changes_until(
    rx: &std::sync::mpsc::Receiver<FolderChange>,
    want: &[(&str, FolderChangeKind)],
) -> Vec<FolderChange> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    let has = |seen: &[FolderChange], (path, kind): &(&str, FolderChangeKind)| {
        seen.contains(&FolderChange::Path { path: (*path).to_owned(), kind: *kind })
    };
    while !want.iter().all(|w| has(&seen, w)) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(change) => seen.push(change),
            Err(_) => panic!("the watcher did not report {want:?}; it reported {seen:?}"),
        }
    }
    seen
}

#[test]
fn every_change_in_the_folder_reaches_the_folder_watch_at_once() {
    use FolderChangeKind::{Changed, Created, Removed};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("notes.md"), "one\n").unwrap();
    std::fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
    std::fs::write(root.join(".gitignore"), "node_modules/\n").unwrap();
    // A long debounce: the folder's changes do not wait for it.
    let options = OpenOptions { debounce: Duration::from_secs(30), ..OpenOptions::default() };
    let store = Store::open(root, options).unwrap();
    let watch = store.folder_watch().unwrap();
    let rx = watch.subscribe();

    std::fs::write(root.join("notes.md"), "one\ntwo\n").unwrap();
    std::fs::set_permissions(root.join("notes.md"), std::fs::Permissions::from_mode(0o600))
        .unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    folder_changes_until(&rx, &[("notes.md", Changed), ("src", Created)]);
    // A folder created while open is watched too, from a moment after its creation is
    // reported (the watch on it is added then): a file written there until one is heard.
    let heard = |change: &FolderChange| matches!(change, FolderChange::Path { path, .. } if path == "src/probe.txt");
    let mut watched = false;
    for _ in 0..50 {
        std::fs::write(root.join("src/probe.txt"), "x").unwrap();
        let until = Instant::now() + Duration::from_millis(200);
        while let Ok(change) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            watched |= heard(&change);
        }
        if watched {
            break;
        }
    }
    assert!(watched, "a file written in a folder created while open was never reported");
    std::fs::write(root.join("src/main.py"), "print(1)\n").unwrap();
    std::fs::rename(root.join("notes.md"), root.join("src/notes.md")).unwrap();
    // Ignored folders are watched: the mount shows them as well.
    std::fs::write(root.join("node_modules/pkg/index.js"), "1\n").unwrap();
    let seen = folder_changes_until(
        &rx,
        &[
            ("src/main.py", Created),
            ("notes.md", Removed),
            ("src/notes.md", Created),
            ("node_modules/pkg/index.js", Created),
        ],
    );
    std::fs::remove_dir_all(root.join("src")).unwrap();
    let seen = [seen, folder_changes_until(&rx, &[("src/main.py", Removed), ("src", Removed)])];
    // The store's own private folder is not the folder's content.
    assert!(
        seen.iter().flatten().all(|c| match c {
            FolderChange::Path { path, .. } => !path.starts_with(".stardust"),
            FolderChange::Lost => true,
        }),
        "{seen:?}"
    );
    assert!(watch.hears("node_modules/pkg/index.js"));
    assert!(!watch.hears(".stardust/rejected"));

    let unwatched = tempfile::tempdir().unwrap();
    let options = OpenOptions { watch: false, ..OpenOptions::default() };
    assert!(Store::open(unwatched.path(), options).unwrap().folder_watch().is_none());
}

//! Team stores (SPEC §22) through the `Remote` seam: several stores ("machines") on one
//! database, each commit decided at the database's head, other cores' commits taken in by a
//! wake-up or a poll, and the faults: an unreachable database, a lost wake-up, a database
//! behind a copy, a copy edited while its core was stopped.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::remote::MemRemote;
use common::{person, read, write};
use stardust_core::Code;
use stardust_core::store::{Change, Notice, OpenOptions, Origin, Store, StoreError, Version};

fn machine(root: &Path, remote: &Arc<MemRemote>) -> Store {
    let options =
        OpenOptions { watch: false, remote: Some(remote.clone()), ..OpenOptions::default() };
    Store::open(root, options).unwrap()
}

fn team() -> (Arc<MemRemote>, tempfile::TempDir, tempfile::TempDir) {
    let remote = MemRemote::new();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write(a.path(), "people/ann.json", &person("person/ann", "Ann"));
    (remote, a, b)
}

fn mcp() -> Origin {
    Origin::Mcp("test".into())
}

/// Wait (bounded) until `store` is at `seq`.
fn reaches(store: &Store, seq: u64, within: Duration) -> Duration {
    let start = Instant::now();
    while store.snapshot().seq < seq {
        assert!(start.elapsed() < within, "still at seq {} after {within:?}", store.snapshot().seq);
        std::thread::sleep(Duration::from_millis(5));
    }
    start.elapsed()
}

#[test]
fn the_first_copy_records_its_folder_and_the_second_takes_the_history() {
    let (remote, a, b) = team();
    let store_a = machine(a.path(), &remote);
    assert_eq!(store_a.snapshot().seq, 1, "the folder's documents are the first history");
    assert_eq!(remote.seqs(), [1]);
    // A second machine with a stale file of its own: set aside, the database's state wins.
    write(b.path(), "people/ann.json", &person("person/ann", "Stale"));
    let store_b = machine(b.path(), &remote);
    assert_eq!(store_b.snapshot().seq, 1);
    assert_eq!(read(b.path(), "people/ann.json"), Some(person("person/ann", "Ann")));
    assert_eq!(
        read(b.path(), ".stardust/recovered/1/people/ann.json"),
        Some(person("person/ann", "Stale"))
    );
    assert!(store_b.snapshot().analysis.document("people/ann.json").is_some());
}

#[test]
fn a_commit_on_one_machine_reaches_the_other_with_its_notice() {
    let (remote, a, b) = team();
    let store_a = machine(a.path(), &remote);
    let store_b = machine(b.path(), &remote);
    let feed = store_b.subscribe();
    let committed = store_a
        .commit(mcp(), vec![Change::create("people/bob.json", person("person/bob", "Bob"))])
        .unwrap();
    assert_eq!(committed.seq, 2);
    reaches(&store_b, 2, Duration::from_secs(5));
    assert_eq!(read(b.path(), "people/bob.json"), Some(person("person/bob", "Bob")));
    let notice = feed.next_timeout(Duration::from_secs(5)).expect("a notice on machine B");
    let Notice::Changes { seq, documents, .. } = notice else { panic!("{notice:?}") };
    assert_eq!(seq, 2);
    assert_eq!(documents[0].path, "people/bob.json");
    // B's log agrees with A's, record for record.
    assert_eq!(store_b.transactions(0, 10).unwrap(), store_a.transactions(0, 10).unwrap());
}

#[test]
fn two_machines_changing_one_document_at_once_one_wins_and_the_other_conflicts() {
    let (remote, a, b) = team();
    let store_a = machine(a.path(), &remote);
    let store_b = machine(b.path(), &remote);
    let ann = Version::of(person("person/ann", "Ann").as_bytes());
    // Stop B from hearing A, so B commits on the old head and must catch up.
    remote.mute.store(true, Ordering::SeqCst);
    store_a
        .commit(
            mcp(),
            vec![Change::put("people/ann.json", person("person/ann", "A")).expecting(ann)],
        )
        .unwrap();
    let lost = store_b
        .commit(
            mcp(),
            vec![Change::put("people/ann.json", person("person/ann", "B")).expecting(ann)],
        )
        .unwrap_err();
    assert_eq!(lost.code(), Code::Conflict, "{lost}");
    // B caught up on the way: it holds A's change, and nothing of its own was written.
    assert_eq!(store_b.snapshot().seq, 2);
    assert_eq!(read(b.path(), "people/ann.json"), Some(person("person/ann", "A")));
    // A change that does not overlap commits after catching up, in order after A's.
    store_a
        .commit(mcp(), vec![Change::create("people/cy.json", person("person/cy", "Cy"))])
        .unwrap();
    let b_commit = store_b
        .commit(mcp(), vec![Change::create("people/dee.json", person("person/dee", "Dee"))])
        .unwrap();
    assert_eq!(b_commit.seq, 4);
    assert_eq!(remote.seqs(), [1, 2, 3, 4]);
    assert_eq!(read(b.path(), "people/cy.json"), Some(person("person/cy", "Cy")));
}

#[test]
fn interleaved_commits_from_two_machines_keep_one_history() {
    let (remote, a, b) = team();
    let store_a = Arc::new(machine(a.path(), &remote));
    let store_b = Arc::new(machine(b.path(), &remote));
    let writers: Vec<_> = [("a", store_a.clone()), ("b", store_b.clone())]
        .into_iter()
        .map(|(name, store)| {
            std::thread::spawn(move || {
                for i in 0..100 {
                    let path = format!("notes/{name}{i}.json");
                    store
                        .commit(
                            mcp(),
                            vec![Change::create(path, person(&format!("note/{name}{i}"), "N"))],
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(remote.seqs(), (1..=201).collect::<Vec<u64>>());
    reaches(&store_a, 201, Duration::from_secs(10));
    reaches(&store_b, 201, Duration::from_secs(10));
    let a_log = store_a.transactions(0, 1000).unwrap();
    assert_eq!(a_log, store_b.transactions(0, 1000).unwrap());
    assert_eq!(a_log.iter().map(|t| t.seq).collect::<Vec<_>>(), (1..=201).collect::<Vec<u64>>());
    assert_eq!(store_a.snapshot().analysis.document_count(), 201);
    assert_eq!(store_b.snapshot().analysis.document_count(), 201);
}

#[test]
fn an_unreachable_database_refuses_the_commit_and_writes_nothing() {
    let (remote, a, _b) = team();
    let store = machine(a.path(), &remote);
    remote.down.store(true, Ordering::SeqCst);
    let err = store
        .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Down"))])
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert!(matches!(err, StoreError::Unavailable { .. }));
    assert_eq!(read(a.path(), "people/ann.json"), Some(person("person/ann", "Ann")));
    assert_eq!(store.snapshot().seq, 1);
    assert_eq!(store.transactions(0, 10).unwrap().len(), 1);
    // It comes back: commits resume.
    remote.down.store(false, Ordering::SeqCst);
    let committed = store
        .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Up"))])
        .unwrap();
    assert_eq!(committed.seq, 2);
    assert_eq!(read(a.path(), "people/ann.json"), Some(person("person/ann", "Up")));
}

#[test]
fn a_lost_wake_up_is_made_good_by_the_poll() {
    let (remote, a, b) = team();
    let store_a = machine(a.path(), &remote);
    let store_b = machine(b.path(), &remote);
    remote.mute.store(true, Ordering::SeqCst);
    store_a
        .commit(mcp(), vec![Change::create("people/bob.json", person("person/bob", "Bob"))])
        .unwrap();
    // No wake-up came; the poll (every second) finds it.
    reaches(&store_b, 2, Duration::from_secs(5));
    assert_eq!(read(b.path(), "people/bob.json"), Some(person("person/bob", "Bob")));
}

#[test]
fn a_database_behind_this_copy_refuses_to_open_naming_both_seqs() {
    let (remote, a, _b) = team();
    let store = machine(a.path(), &remote);
    store
        .commit(mcp(), vec![Change::create("people/bob.json", person("person/bob", "Bob"))])
        .unwrap();
    drop(store);
    let replaced = MemRemote::new();
    let options = OpenOptions { watch: false, remote: Some(replaced), ..OpenOptions::default() };
    let err = Store::open(a.path(), options).unwrap_err();
    assert_eq!(err.code(), Code::Conflict);
    let message = err.to_string();
    assert!(message.contains("at seq 0") && message.contains("at seq 2"), "{message}");
}

#[test]
fn an_edit_made_while_the_core_was_stopped_is_recorded_after_the_others_commits() {
    let (remote, a, b) = team();
    let store_a = machine(a.path(), &remote);
    let store_b = machine(b.path(), &remote);
    drop(store_b);
    store_a
        .commit(mcp(), vec![Change::create("people/bob.json", person("person/bob", "Bob"))])
        .unwrap();
    write(b.path(), "people/ann.json", &person("person/ann", "Offline"));
    let store_b = machine(b.path(), &remote);
    assert_eq!(store_b.snapshot().seq, 3);
    let log = store_b.transactions(0, 10).unwrap();
    assert_eq!(log[1].origin, mcp());
    assert_eq!(log[2].origin, Origin::External);
    assert_eq!(log[2].documents[0].path, "people/ann.json");
    assert_eq!(read(b.path(), "people/bob.json"), Some(person("person/bob", "Bob")));
    assert_eq!(read(b.path(), "people/ann.json"), Some(person("person/ann", "Offline")));
    // And it reached the database, so A takes it in.
    reaches(&store_a, 3, Duration::from_secs(5));
    assert_eq!(read(a.path(), "people/ann.json"), Some(person("person/ann", "Offline")));
}

/// Every file under `root` except Stardust's own, with its bytes.
fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .filter(|rel| !rel.starts_with(".stardust") && rel != "stardust.toml")
        .map(|rel| {
            let bytes = std::fs::read(root.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_folder_store_imports_into_a_team_store_and_exports_back_byte_for_byte() {
    let folder = tempfile::tempdir().unwrap();
    // Odd bytes on purpose: CRLF, no final newline, a syntax error (a move is never refused).
    write(folder.path(), "people/ann.json", "{\"id\": \"person/ann\",\r\n \"type\": \"person\"}");
    write(folder.path(), "people/broken.json", "{\"id\": ");
    write(folder.path(), "books/b.dust", "{id book/b type book title 'B'} // kept\n");
    write(folder.path(), "stardust.toml", "[save]\nrefuse = [\"syntax\"]\n");
    let (remote, team_dir, _) = team();
    write(team_dir.path(), "people/old.json", &person("person/old", "Old"));
    write(
        team_dir.path(),
        "stardust.toml",
        "[store]\nbackend = \"postgres\"\nurl = \"postgresql:///t\"\n",
    );
    let team_store = machine(team_dir.path(), &remote);
    let txn = team_store.import(folder.path()).unwrap().expect("a transaction");
    assert_eq!(txn.origin, Origin::External);
    let paths: Vec<(&str, bool)> =
        txn.documents.iter().map(|d| (d.path.as_str(), d.after.is_some())).collect();
    assert_eq!(
        paths,
        [
            ("books/b.dust", true),
            ("people/ann.json", true),
            ("people/broken.json", true),
            ("people/old.json", false),
        ]
    );
    assert_eq!(files(team_dir.path()), files(folder.path()));
    assert_eq!(remote.seqs(), [1, 2]);
    // Importing again changes nothing.
    assert_eq!(team_store.import(folder.path()).unwrap(), None);

    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("copy");
    let exported = team_store.export(&target).unwrap();
    assert_eq!(exported.documents, 3);
    assert_eq!(exported.seq, 2);
    assert_eq!(files(&target), files(folder.path()));
    // The copy is a folder store.
    assert_eq!(read(&target, "stardust.toml").as_deref(), Some("[store]\n"));
    let copy = common::open(&target);
    assert_eq!(copy.snapshot().analysis.document_count(), 3);
    // Into a folder that holds something: refused.
    let err = team_store.export(&target).unwrap_err();
    assert_eq!(err.code(), Code::InvalidArguments);
}

/// A machine whose store takes `boot` as the system's boot id (a new one: the machine
/// restarted since the last open).
fn machine_booted(root: &Path, remote: &Arc<MemRemote>, boot: &str) -> Store {
    let options = OpenOptions {
        watch: false,
        remote: Some(remote.clone()),
        boot: Some(boot.to_owned()),
        ..OpenOptions::default()
    };
    Store::open(root, options).unwrap()
}

#[test]
fn a_document_a_system_crash_left_empty_is_not_taken_for_an_edit() {
    let (remote, a, _b) = team();
    let log = a.path().join(".stardust/log/transactions.log");
    let store = machine_booted(a.path(), &remote, "boot-1");
    let before_commit = std::fs::metadata(&log).unwrap().len();
    store
        .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))])
        .unwrap();
    drop(store);
    // The machine lost power: this copy's log (not synced: the database is the durable copy)
    // lost the record, and the document's new data never reached the disk.
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_len(before_commit).unwrap();
    std::fs::write(a.path().join("people/ann.json"), b"").unwrap();
    let store = machine_booted(a.path(), &remote, "boot-2");
    assert_eq!(remote.seqs(), [1, 2], "nothing was committed over the database's content");
    assert_eq!(store.snapshot().seq, 2);
    assert_eq!(read(a.path(), "people/ann.json"), Some(person("person/ann", "Ann 2")));
    drop(store);
    // Without a restart an empty file is an edit like any other (a process crash loses no
    // written data): it is recorded.
    std::fs::write(a.path().join("people/ann.json"), b"").unwrap();
    let store = machine_booted(a.path(), &remote, "boot-2");
    assert_eq!(remote.seqs(), [1, 2, 3]);
    assert_eq!(read(a.path(), "people/ann.json"), Some(String::new()));
    drop(store);
}

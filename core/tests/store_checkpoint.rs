//! Checkpoints and the redo of everything after the last one: a commit syncs only its log
//! record; a checkpoint syncs the documents before it marks them applied; an open redoes
//! every unmarked transaction, and keeps bytes it cannot account for after a restart.

mod common;

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{options, person, read, write};
use stardust_core::store::{
    Change, FailPoint, OpenOptions, Origin, Store, Version, read_log, verify_log,
};

fn library() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann"));
    write(dir.path(), "people/bob.json", &person("person/bob", "Bob"));
    write(dir.path(), "other/zed.json", &person("person/zed", "Zed"));
    dir
}

fn sdk() -> Origin {
    Origin::Sdk("test".into())
}

/// Options with no background checkpoint, as a store that crashes before one runs, and the
/// given boot id.
fn manual(boot: &str) -> OpenOptions {
    OpenOptions {
        checkpoint_idle: Duration::from_secs(3600),
        checkpoint_every: u64::MAX,
        boot: Some(boot.to_owned()),
        ..options()
    }
}

fn open_as(root: &Path, boot: &str) -> Store {
    Store::open(root, manual(boot)).unwrap()
}

/// The I/O steps a store took, as `(step, path)`.
type Steps = Arc<Mutex<Vec<(FailPoint, String)>>>;

/// A store whose I/O steps are recorded as `(step, path)`, failing `Sync` of `fail_sync`
/// while the switch is on.
fn recording(root: &Path, fail_sync: &'static str) -> (Store, Steps, Arc<Mutex<bool>>) {
    let steps = Arc::new(Mutex::new(Vec::new()));
    let failing = Arc::new(Mutex::new(false));
    let hook = {
        let (steps, failing) = (steps.clone(), failing.clone());
        move |point: FailPoint, rel: &str| {
            steps.lock().unwrap().push((point, rel.to_owned()));
            if point == FailPoint::Sync && rel == fail_sync && *failing.lock().unwrap() {
                return Err(io::Error::from(io::ErrorKind::StorageFull));
            }
            Ok(())
        }
    };
    let store =
        Store::open(root, OpenOptions { fail: Some(Arc::new(hook)), ..manual("boot-a") }).unwrap();
    steps.lock().unwrap().clear();
    (store, steps, failing)
}

#[test]
fn a_commit_syncs_no_document_and_a_checkpoint_marks_only_after_syncing() {
    let dir = library();
    let (store, steps, _) = recording(dir.path(), "");
    let seq = store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))])
        .unwrap()
        .seq;
    let taken: Vec<FailPoint> = steps.lock().unwrap().drain(..).map(|(p, _)| p).collect();
    assert_eq!(
        taken,
        [
            FailPoint::Read,
            FailPoint::AppendLog,
            FailPoint::SyncLog,
            FailPoint::WriteTemp,
            FailPoint::Rename
        ]
    );
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, seq - 1, "not marked yet");

    assert_eq!(store.checkpoint().unwrap(), seq);
    let taken: Vec<(FailPoint, String)> = steps.lock().unwrap().drain(..).collect();
    let s = |p: FailPoint, rel: &str| (p, rel.to_owned());
    assert_eq!(
        taken,
        [
            s(FailPoint::Sync, "people/ann.json"),
            s(FailPoint::Sync, "people"),
            s(FailPoint::Mark, "transactions.log")
        ]
    );
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, seq);
    // Nothing new: nothing synced, nothing marked.
    assert_eq!(store.checkpoint().unwrap(), seq);
    assert!(steps.lock().unwrap().is_empty());
}

#[test]
fn a_failed_sync_writes_no_marker_and_the_next_checkpoint_retries() {
    let dir = library();
    let (store, steps, failing) = recording(dir.path(), "people");
    let seq = store
        .commit(
            sdk(),
            vec![
                Change::put("people/ann.json", person("person/ann", "Ann 2")),
                Change::put("other/zed.json", person("person/zed", "Zed 2")),
            ],
        )
        .unwrap()
        .seq;
    *failing.lock().unwrap() = true;
    steps.lock().unwrap().clear();
    let err = store.checkpoint().unwrap_err();
    assert_eq!(err.io_kind(), Some(io::ErrorKind::StorageFull), "{err}");
    assert!(err.to_string().contains("next checkpoint"), "{err}");
    assert!(
        !steps.lock().unwrap().iter().any(|(p, _)| *p == FailPoint::Mark),
        "no marker is attempted after a failed sync"
    );
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, seq - 1);

    // The failed checkpoint gave its documents back: the next one syncs them all again.
    *failing.lock().unwrap() = false;
    steps.lock().unwrap().clear();
    assert_eq!(store.checkpoint().unwrap(), seq);
    let synced: Vec<String> = steps
        .lock()
        .unwrap()
        .iter()
        .filter(|(p, _)| *p == FailPoint::Sync)
        .map(|(_, rel)| rel.clone())
        .collect();
    assert_eq!(synced, ["other/zed.json", "people/ann.json", "other", "people"]);
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, seq);
}

#[test]
fn checkpoints_run_when_idle_after_enough_commits_and_on_drop() {
    let dir = library();
    drop(Store::open(dir.path(), options()).unwrap());
    let wait_marked = |seq: u64| {
        let started = Instant::now();
        while verify_log(dir.path()).unwrap().applied_through < seq {
            assert!(started.elapsed() < Duration::from_secs(10), "seq {seq} was never marked");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let put = |store: &Store, n: u32| {
        store
            .commit(
                sdk(),
                vec![Change::put("people/ann.json", person("person/ann", &format!("Ann {n}")))],
            )
            .unwrap()
            .seq
    };

    // Idle: one commit, then quiet.
    let idle = OpenOptions { checkpoint_idle: Duration::from_millis(20), ..manual("b") };
    let store = Store::open(dir.path(), idle).unwrap();
    let seq = put(&store, 1);
    wait_marked(seq);
    drop(store);

    // Busy: every third commit, however fast they come.
    let busy = OpenOptions { checkpoint_every: 3, ..manual("b") };
    let store = Store::open(dir.path(), busy).unwrap();
    let first = put(&store, 2);
    put(&store, 3);
    let third = put(&store, 4);
    wait_marked(third);
    assert!(first < third);
    let fourth = put(&store, 5);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, third, "one commit is not enough");

    // Dropping the store checkpoints what is left.
    drop(store);
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, fourth);

    // So does closing it.
    let store = open_as(dir.path(), "b");
    let seq = put(&store, 6);
    store.close();
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, seq);
}

/// Commit four transactions without a checkpoint and let the store go as a crash would.
/// Returns the seq before the first.
fn crash_after_commits(root: &Path) -> u64 {
    let store = open_as(root, "boot-a");
    let start = store.checkpoint().unwrap();
    let commits = vec![
        vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))],
        vec![
            Change::put("people/ann.json", person("person/ann", "Ann 3")),
            Change::create("people/cy.json", person("person/cy", "Cy")),
        ],
        vec![Change::put("other/zed.json", person("person/zed", "Zed 2"))],
        vec![
            Change::put("people/ann.json", person("person/ann", "Ann 4")),
            Change::delete("people/bob.json"),
        ],
    ];
    for changes in commits {
        store.commit(sdk(), changes).unwrap();
    }
    store.abandon();
    let v = verify_log(root).unwrap();
    assert_eq!((v.applied_through, v.last_seq), (start, start + 4), "four unmarked transactions");
    start
}

/// What the crash test cannot do with SIGKILL: lose renames. Every document the tail touched
/// is put back to a state before its last one; the open must redo the whole tail.
#[test]
fn every_transaction_after_the_last_checkpoint_is_redone() {
    for boot in ["boot-a", "boot-b"] {
        let dir = library();
        let start = crash_after_commits(dir.path());
        write(dir.path(), "people/ann.json", &person("person/ann", "Ann 2"));
        write(dir.path(), "people/bob.json", &person("person/bob", "Bob"));
        std::fs::remove_file(dir.path().join("people/cy.json")).unwrap();
        write(dir.path(), "other/zed.json", &person("person/zed", "Zed"));
        write(dir.path(), "other/.zed.json.stardust-tmp", "half a temp");

        let store = open_as(dir.path(), boot);
        assert_eq!(store.snapshot().seq, start + 4, "{boot}: nothing recorded as external");
        assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann 4"));
        assert_eq!(read(dir.path(), "people/bob.json"), None, "{boot}");
        assert_eq!(read(dir.path(), "people/cy.json").unwrap(), person("person/cy", "Cy"));
        assert_eq!(read(dir.path(), "other/zed.json").unwrap(), person("person/zed", "Zed 2"));
        assert!(!dir.path().join("other/.zed.json.stardust-tmp").exists(), "{boot}");
        assert!(!dir.path().join(".stardust/recovered").exists(), "{boot}: nothing unknown");
        let v = verify_log(dir.path()).unwrap();
        assert_eq!((v.applied_through, v.last_seq, v.damage), (start + 4, start + 4, None));
    }
}

#[test]
fn after_a_restart_a_torn_document_is_redone_and_its_bytes_kept() {
    let dir = library();
    let start = crash_after_commits(dir.path());
    // What a power cut can leave of unsynced writes: a cut file, and a file of zeros.
    let ann = read(dir.path(), "people/ann.json").unwrap();
    std::fs::write(dir.path().join("people/ann.json"), &ann.as_bytes()[..ann.len() / 2]).unwrap();
    std::fs::write(dir.path().join("other/zed.json"), vec![0u8; 40]).unwrap();

    let store = open_as(dir.path(), "boot-b");
    assert_eq!(store.snapshot().seq, start + 4, "the torn bytes are not history");
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann 4"));
    assert_eq!(read(dir.path(), "other/zed.json").unwrap(), person("person/zed", "Zed 2"));
    // Kept under the seq whose state was written over them.
    let kept = dir.path().join(".stardust/recovered");
    assert_eq!(
        std::fs::read(kept.join(format!("{}/people/ann.json", start + 4))).unwrap(),
        &ann.as_bytes()[..ann.len() / 2]
    );
    assert_eq!(
        std::fs::read(kept.join(format!("{}/other/zed.json", start + 3))).unwrap(),
        vec![0u8; 40]
    );
    assert_eq!(store.rescan().unwrap(), None, "the store matches the disk");
}

#[test]
fn without_a_restart_unknown_content_is_an_edit_made_after_the_crash() {
    let dir = library();
    let start = crash_after_commits(dir.path());
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann by hand"));

    let store = open_as(dir.path(), "boot-a");
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann by hand"));
    let txns = read_log(dir.path(), start + 4, 10).unwrap();
    assert_eq!(txns.len(), 1);
    let (doc, txn) = (&txns[0].documents[0], &txns[0]);
    assert_eq!((&txn.origin, doc.path.as_str()), (&Origin::External, "people/ann.json"));
    assert_eq!(doc.before, Some(Version::of(person("person/ann", "Ann 4").as_bytes())));
    assert!(!dir.path().join(".stardust/recovered").exists());
    drop(store);
}

#[test]
fn a_restart_never_redoes_what_a_checkpoint_marked() {
    let dir = library();
    let store = open_as(dir.path(), "boot-a");
    store
        .commit(sdk(), vec![Change::put("other/zed.json", person("person/zed", "Zed 2"))])
        .unwrap();
    store.checkpoint().unwrap();
    let seq = store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))])
        .unwrap()
        .seq;
    store.abandon();
    // zed was marked: going back to its old content is an edit, even after a restart.
    write(dir.path(), "other/zed.json", &person("person/zed", "Zed"));
    let store = open_as(dir.path(), "boot-b");
    assert_eq!(read(dir.path(), "other/zed.json").unwrap(), person("person/zed", "Zed"));
    let txns = store.transactions(seq, 10).unwrap();
    assert_eq!(txns.len(), 1);
    assert_eq!((&txns[0].origin, txns[0].documents.len()), (&Origin::External, 1));
    assert!(!dir.path().join(".stardust/recovered").exists());
}

#[test]
fn an_open_marks_its_boot_before_anything_is_written() {
    let dir = library();
    drop(open_as(dir.path(), "boot-a"));
    let log = dir.path().join(".stardust/log/transactions.log");
    let len = std::fs::metadata(&log).unwrap().len();
    drop(open_as(dir.path(), "boot-a"));
    assert_eq!(std::fs::metadata(&log).unwrap().len(), len, "same boot, nothing to mark");
    let store = open_as(dir.path(), "boot-b");
    assert!(std::fs::metadata(&log).unwrap().len() > len, "a new boot is marked at once");
    // So a crash in this boot is judged as this boot's: an unknown content is an edit.
    store
        .commit(sdk(), vec![Change::put("people/ann.json", person("person/ann", "Ann 2"))])
        .unwrap();
    store.abandon();
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann by hand"));
    drop(open_as(dir.path(), "boot-b"));
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann by hand"));
}

#[test]
fn a_restart_never_reverts_a_document_only_external_records_name() {
    let dir = library();
    let store = open_as(dir.path(), "boot-a");
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann by hand"));
    let seen = store.rescan().unwrap().unwrap().seq;
    store.abandon();
    assert_eq!(verify_log(dir.path()).unwrap().applied_through, seen - 1, "left unmarked");
    // Edited again while closed; the machine restarts before the next open.
    write(dir.path(), "people/ann.json", &person("person/ann", "Ann again"));
    let store = open_as(dir.path(), "boot-b");
    assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann again"));
    let txns = store.transactions(seen, 10).unwrap();
    assert_eq!(txns.len(), 1);
    assert_eq!(txns[0].origin, Origin::External);
    let by_hand = Version::of(person("person/ann", "Ann by hand").as_bytes());
    assert_eq!(txns[0].documents[0].before, Some(by_hand));
    assert!(!dir.path().join(".stardust/recovered").exists(), "nothing of Stardust's was torn");
}

#[test]
fn a_first_history_lost_before_it_was_synced_is_recorded_again() {
    // An open does not sync its `external` record and marker (they can be tens of MB): the
    // next synced append or checkpoint does. A power cut before that loses them, torn or
    // whole, and the next open must find the same documents and record them again.
    for keep in [0, 13, 200] {
        let dir = library();
        let store = open_as(dir.path(), "boot-a");
        store.abandon();
        let log = dir.path().join(".stardust/log/transactions.log");
        let full = std::fs::read(&log).unwrap();
        assert!(full.len() > keep);
        std::fs::write(&log, &full[..keep]).unwrap();
        let store = open_as(dir.path(), "boot-b");
        let txns = store.transactions(0, 10).unwrap();
        assert_eq!(txns.len(), 1, "cut at {keep}");
        assert_eq!((txns[0].seq, &txns[0].origin), (1, &Origin::External));
        assert_eq!(txns[0].documents.len(), 3);
        assert_eq!(store.snapshot().analysis.entity_count(), 3);
        assert_eq!(read(dir.path(), "people/ann.json").unwrap(), person("person/ann", "Ann"));
        assert!(!dir.path().join(".stardust/recovered").exists());
        drop(store);
        assert!(verify_log(dir.path()).is_ok());
    }
}

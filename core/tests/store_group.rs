//! Group commit: commits that wait for the writer are applied together, each with its own seq
//! and log record, and made durable with one sync of the log; none is acknowledged before
//! that sync. Counted through the store's sync counter (`Store::log_syncs`), never timed. And
//! a burst of concurrent commits killed with SIGKILL mid-way: after the next open every
//! acknowledged seq is in the log, as acknowledged, and the log verifies.
//!
//! The crash test's child is this same test binary, run again with `CHILD_ENV` set.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use stardust_core::store::{Change, FailPoint, OpenOptions, Origin, Store, Version, verify_log};

use common::child::{Rng, child_root, spawn};
use common::options;

mod common;

const CHILD_ENV: &str = "STARDUST_STORE_GROUP_CHILD";
const CRASH_TEST: &str = "a_burst_of_concurrent_commits_killed_midway_keeps_every_acknowledged_seq";
const THREADS: usize = 8;

fn content(i: usize, n: u64) -> String {
    let pad = "x".repeat((n * 37 % 300) as usize);
    format!("{{\"id\": \"doc/t{i}\", \"type\": \"counter\", \"n\": {n}, \"pad\": \"{pad}\"}}\n")
}

fn origin() -> Origin {
    Origin::Sdk("group".into())
}

/// A store whose first sync of a group of commits (after the first commit's own) waits until
/// the test lets it go, and whose `fail_at`-th sync fails.
struct Held {
    store: Arc<Store>,
    /// Receives a message when a sync starts waiting.
    syncing: mpsc::Receiver<()>,
    release: mpsc::Sender<()>,
    /// How many commits had returned when each sync started.
    returned_at_sync: Arc<Mutex<Vec<usize>>>,
    returned: Arc<AtomicUsize>,
}

fn held_store(root: &Path, fail_at: Option<usize>) -> Held {
    let (syncing_tx, syncing) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let syncing_tx = Mutex::new(syncing_tx);
    let release_rx = Mutex::new(release_rx);
    let returned = Arc::new(AtomicUsize::new(0));
    let returned_at_sync = Arc::new(Mutex::new(Vec::new()));
    let syncs = AtomicUsize::new(0);
    let hook = {
        let returned = returned.clone();
        let returned_at_sync = returned_at_sync.clone();
        move |point: FailPoint, _: &str| {
            if point != FailPoint::SyncLog {
                return Ok(());
            }
            let n = syncs.fetch_add(1, Ordering::SeqCst) + 1;
            returned_at_sync.lock().unwrap().push(returned.load(Ordering::SeqCst));
            if n == 1 {
                syncing_tx.lock().unwrap().send(()).unwrap();
                release_rx.lock().unwrap().recv().unwrap();
            }
            if Some(n) == fail_at {
                return Err(std::io::Error::other("injected sync failure"));
            }
            Ok(())
        }
    };
    let store = Store::open(root, OpenOptions { fail: Some(Arc::new(hook)), ..options() }).unwrap();
    Held { store: Arc::new(store), syncing, release, returned_at_sync, returned }
}

/// Start one commit per document on its own thread: the first alone, then (while its sync
/// waits) the rest, which queue behind it; let the sync go once all of them are queued.
fn burst(held: &Held, n: usize) -> Vec<std::thread::JoinHandle<Result<u64, String>>> {
    let start = |i: usize| {
        let store = held.store.clone();
        let returned = held.returned.clone();
        std::thread::spawn(move || {
            let result =
                store.commit(origin(), vec![Change::put(format!("t{i}.json"), content(i, 1))]);
            returned.fetch_add(1, Ordering::SeqCst);
            result.map(|c| c.seq).map_err(|e| e.to_string())
        })
    };
    let mut threads = vec![start(0)];
    held.syncing.recv_timeout(Duration::from_secs(30)).expect("the first commit syncs");
    threads.extend((1..n).map(start));
    while held.store.queued_commits() < n - 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
    held.release.send(()).unwrap();
    threads
}

#[test]
fn concurrent_commits_get_their_own_seqs_and_share_one_sync() {
    let dir = tempfile::tempdir().unwrap();
    let held = held_store(dir.path(), None);
    let n = 16;
    let threads = burst(&held, n);
    let mut seqs: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap().unwrap()).collect();
    seqs.sort();
    assert_eq!(seqs, (1..=n as u64).collect::<Vec<_>>(), "each commit has its own seq");
    // The first commit's sync, then one for the fifteen that queued during it.
    assert_eq!(held.store.log_syncs(), 2, "{n} commits, two syncs");
    // No commit returned before its sync: at the second, at most the first one had.
    let returned = held.returned_at_sync.lock().unwrap().clone();
    assert!(returned.len() == 2 && returned[0] == 0 && returned[1] <= 1, "{returned:?}");
    // Each has its own record, in seq order, holding its document.
    let txns = held.store.transactions(0, usize::MAX).unwrap();
    assert_eq!(txns.len(), n);
    for txn in &txns {
        assert_eq!(txn.documents.len(), 1);
        let i: usize = txn.documents[0].path[1..].trim_end_matches(".json").parse().unwrap();
        assert_eq!(txn.documents[0].after, Some(Version::of(content(i, 1).as_bytes())));
        let on_disk = std::fs::read_to_string(dir.path().join(&txn.documents[0].path)).unwrap();
        assert_eq!(on_disk, content(i, 1));
    }
    assert_eq!(held.store.snapshot().seq, n as u64);
    drop(held);
    assert_eq!(verify_log(dir.path()).unwrap().damage, None);
}

#[test]
fn a_lone_commit_syncs_once_and_a_save_of_no_data_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    for n in 1..=3 {
        store.commit(origin(), vec![Change::put("a.json", content(0, n))]).unwrap();
        assert_eq!(store.log_syncs(), n, "one sync per commit that waits for no other");
    }
    // A mount save of a file that is no data (SPEC §24) is not synced, grouped or not.
    store.commit(Origin::Mount, vec![Change::put("package.json", "{\"name\": \"x\"}\n")]).unwrap();
    assert_eq!(store.log_syncs(), 3);
}

#[test]
fn a_failed_group_sync_commits_none_of_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let held = held_store(dir.path(), Some(2));
    let n = 6;
    let threads = burst(&held, n);
    let results: Vec<Result<u64, String>> =
        threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(results[0], Ok(1), "the first commit synced alone");
    for result in &results[1..] {
        let err = result.as_ref().unwrap_err();
        assert!(err.contains("nothing was committed"), "{err}");
    }
    assert_eq!(held.store.snapshot().seq, 1);
    for i in 1..n {
        assert!(!dir.path().join(format!("t{i}.json")).exists(), "t{i}.json was not written");
    }
    // The store goes on: the next commit is seq 2.
    let next = held.store.commit(origin(), vec![Change::put("t1.json", content(1, 2))]).unwrap();
    assert_eq!(next.seq, 2);
    drop(held);
    let v = verify_log(dir.path()).unwrap();
    assert_eq!((v.damage, v.last_seq), (None, 2));
}

/// The child: `THREADS` threads commit their own document over and over until killed, each
/// acknowledged commit printed as `ack <seq> <thread> <n> <syncs so far>`.
fn child(root: &Path) -> ! {
    let store = Arc::new(Store::open(root, options()).expect("the child opens the store"));
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let store = store.clone();
            let out = out.clone();
            std::thread::spawn(move || {
                for n in 1.. {
                    let change = Change::put(format!("t{i}.json"), content(i, n));
                    let committed = store.commit(origin(), vec![change]).expect("commit");
                    // A later round may write what the document already holds: no transaction.
                    let Some(txn) = committed.transaction else { continue };
                    let seq = txn.seq;
                    let syncs = store.log_syncs();
                    let mut out = out.lock().unwrap();
                    writeln!(out, "ack {seq} {i} {n} {syncs}").unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    unreachable!("the child commits until it is killed")
}

#[test]
fn a_burst_of_concurrent_commits_killed_midway_keeps_every_acknowledged_seq() {
    if let Some(root) = child_root(CHILD_ENV) {
        child(&root);
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut rng = Rng::from_clock();
    let seed = rng.seed();
    // seq -> (thread, n) of every acknowledged commit of every round.
    let mut acked: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
    // Rounds whose child synced fewer times than it acknowledged commits.
    let mut grouped = 0;
    for round in 0..12 {
        let context = format!("round {round} (seed {seed})");
        let child = spawn(CRASH_TEST, CHILD_ENV, root, &[]);
        child.first_ack(Duration::from_secs(20));
        std::thread::sleep(Duration::from_micros(rng.below(30_000)));
        let (status, acks) = child.kill();
        assert!(status.code().is_none(), "{context}: the child exited by itself: {status}");
        // `ack <seq> <thread> <n> <syncs so far>`
        let acks: Vec<(u64, usize, u64, u64)> = acks
            .iter()
            .filter_map(|ack| match ack.split(' ').collect::<Vec<_>>()[..] {
                [seq, i, n, syncs] => {
                    Some((seq.parse().ok()?, i.parse().ok()?, n.parse().ok()?, syncs.parse().ok()?))
                }
                _ => None,
            })
            .collect();
        assert!(!acks.is_empty(), "{context}: the child acknowledged nothing");
        // Fewer syncs than acknowledged commits: some of them shared one.
        let syncs = acks.iter().map(|a| a.3).max().unwrap();
        grouped += usize::from(syncs < acks.len() as u64);
        for (seq, i, n, _) in acks {
            assert!(acked.insert(seq, (i, n)).is_none(), "{context}: seq {seq} acknowledged twice");
        }

        let store = Store::open(root, options()).unwrap_or_else(|e| panic!("{context}: {e}"));
        let v = verify_log(root).unwrap();
        assert_eq!(v.damage, None, "{context}: the log verifies");
        let txns = store.transactions(0, usize::MAX).unwrap();
        for (k, txn) in txns.iter().enumerate() {
            assert_eq!(txn.seq, k as u64 + 1, "{context}: seqs are consecutive");
            assert_eq!(txn.origin, origin(), "{context}: nothing looked like an outside edit");
        }
        for (&seq, &(i, n)) in &acked {
            let txn = txns
                .get(seq as usize - 1)
                .unwrap_or_else(|| panic!("{context}: acknowledged seq {seq} is lost"));
            let after: Vec<_> = txn.documents.iter().map(|d| (d.path.clone(), d.after)).collect();
            let want = vec![(format!("t{i}.json"), Some(Version::of(content(i, n).as_bytes())))];
            assert_eq!(after, want, "{context}: seq {seq} holds what was acknowledged");
        }
        // Every document whole, at its last logged state.
        let mut last: BTreeMap<&str, Option<Version>> = BTreeMap::new();
        for doc in txns.iter().flat_map(|t| &t.documents) {
            last.insert(&doc.path, doc.after);
        }
        for (path, version) in last {
            let on_disk = std::fs::read(root.join(path)).ok().map(|b| Version::of(&b));
            assert_eq!(on_disk, version, "{context}: {path} is at its last logged state");
        }
        drop(store);
    }
    assert!(grouped > 0, "no round's commits shared a sync (seed {seed})");
}

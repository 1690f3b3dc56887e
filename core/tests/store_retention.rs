//! Retention (SPEC §26, `[history] keep`): compaction drops old contents, keeps every
//! transaction's record, and answers `not-found` naming the oldest seq held; the compacted
//! log verifies, reopens, and survives `kill -9` in the middle of a compaction.
//!
//! The crash test's child is this same test binary, run again with `CHILD_ENV` set.

use std::path::Path;
use std::time::Duration;

use stardust_core::store::{
    Change, FailPoint, OpenOptions, Origin, Store, StoreError, read_log, verify_log,
};

use common::child::{Rng, child_root, spawn};
use common::options;

mod common;

const CHILD_ENV: &str = "STARDUST_RETENTION_CHILD";
/// Set in the child to abort (no cleanup, as a kill) at a compaction step.
const ABORT_AT_ENV: &str = "STARDUST_RETENTION_ABORT_AT";
const TEST_NAME: &str = "acknowledged_transactions_survive_sigkill_during_compaction";

fn origin() -> Origin {
    Origin::Sdk("test".into())
}

fn content(n: u64) -> String {
    format!(
        "{{\"id\": \"doc/a\", \"type\": \"counter\", \"n\": {n}, \"pad\": \"{}\"}}\n",
        "x".repeat(200)
    )
}

fn store_with_keep(root: &Path, keep: &str) {
    std::fs::write(root.join("stardust.toml"), format!("[history]\nkeep = {keep}\n")).unwrap();
    std::fs::write(root.join("a.json"), content(1)).unwrap();
    std::fs::write(root.join("b.json"), "{\"id\": \"doc/b\", \"type\": \"note\"}\n").unwrap();
}

fn message(err: StoreError) -> String {
    format!("{}: {err}", err.code().as_str())
}

#[test]
fn keep_three_drops_older_contents_and_keeps_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    store_with_keep(root, "3");
    let store = Store::open(root, options()).unwrap();
    for n in 2..=7 {
        store.commit(origin(), vec![Change::put("a.json", content(n))]).unwrap();
    }
    assert_eq!(store.head_seq(), 7);
    assert_eq!(store.oldest_held(), 1, "nothing dropped before a compaction");
    let log = root.join(".stardust/log/transactions.log");
    let before = verify_log(root).unwrap().valid_len;

    let done = store.compact().unwrap().expect("contents to drop");
    // keep = 3 of 7: states from seq 5 on stay whole; a.json's seqs 1-4 are superseded.
    assert_eq!((done.oldest, done.dropped), (5, 4));
    assert!(done.after < done.before && done.before == before, "{done:?}");
    assert_eq!(store.oldest_held(), 5);
    assert_eq!(store.compact().unwrap(), None, "nothing more to drop");

    let check = |store: &Store| {
        for seq in [1, 4] {
            let err = store.document_at("a.json", seq).unwrap_err();
            assert_eq!(
                message(err),
                format!(
                    "not-found: the contents as of seq {seq} are not held: the oldest seq held \
                     is 5; ask for a seq from 5 to 7"
                )
            );
        }
        assert_eq!(store.document_at("a.json", 5).unwrap().bytes, content(5).into_bytes());
        assert_eq!(store.document_at("a.json", 7).unwrap().bytes, content(7).into_bytes());
        // b.json was last written at seq 1: its content is in force at 5, so it is held.
        let b = store.document_at("b.json", 5).unwrap();
        assert_eq!(b.changed_at, 1);
        assert_eq!(store.entity_at("doc/a", 6).unwrap().value["n"], 6);
        let err = store.entity_at("doc/a", 3).unwrap_err();
        assert!(message(err).contains("the oldest seq held is 5"));
        // A diff of seq 5 needs the state before it.
        assert!(message(store.diff(5, 5, None).unwrap_err()).contains("oldest seq held is 5"));
        assert_eq!(store.diff(6, 7, None).unwrap().len(), 1);
        assert!(message(store.revert(4).unwrap_err()).contains("oldest seq held is 5"));
        assert_eq!(store.revert(7).unwrap().files.len(), 1);
        // Every record stays.
        let listed: Vec<u64> = store.transactions(0, 100).unwrap().iter().map(|t| t.seq).collect();
        assert_eq!(listed, (1..=7).collect::<Vec<_>>());
        let (page, total) = store.history(&Default::default(), 100, 0).unwrap();
        assert_eq!((page.len(), total), (7, 7));
    };
    check(&store);
    let v = verify_log(root).unwrap();
    assert_eq!((v.transactions, v.last_seq, v.damage), (7, 7, None));
    assert_eq!(read_log(root, 0, 100).unwrap().len(), 7);

    // Commits go on in the new file.
    store.commit(origin(), vec![Change::put("a.json", content(8))]).unwrap();
    store.commit(origin(), vec![Change::put("a.json", content(7))]).unwrap();
    drop(store);
    assert!(!log.with_extension("compact").exists());
    let store = Store::open(root, options()).unwrap();
    // Reopening compacts again: keep = 3 of 9.
    assert_eq!(store.oldest_held(), 7);
    assert_eq!(store.document_at("a.json", 9).unwrap().bytes, content(7).into_bytes());
    assert_eq!(store.document_at("a.json", 8).unwrap().bytes, content(8).into_bytes());
    assert!(message(store.document_at("a.json", 6).unwrap_err()).contains("oldest seq held is 7"));
    assert_eq!(store.transactions(0, 100).unwrap().len(), 9);
    assert_eq!(verify_log(root).unwrap().damage, None);
}

#[test]
fn a_checkpoint_compacts_once_enough_was_committed_since() {
    let dir = tempfile::tempdir().unwrap();
    store_with_keep(dir.path(), "2");
    // Only the checkpoints below: none in the background.
    let options = OpenOptions {
        checkpoint_idle: Duration::from_secs(3600),
        checkpoint_every: u64::MAX,
        ..options()
    };
    let store = Store::open(dir.path(), options).unwrap();
    for n in 2..=30 {
        store.commit(origin(), vec![Change::put("a.json", content(n))]).unwrap();
    }
    store.checkpoint().unwrap();
    assert_eq!(store.oldest_held(), 1, "29 commits since the open: not yet");
    for n in 31..=70 {
        store.commit(origin(), vec![Change::put("a.json", content(n))]).unwrap();
    }
    store.checkpoint().unwrap();
    assert_eq!(store.oldest_held(), 69, "69 commits since the open: compacted to keep 2 of 70");
    assert_eq!(store.document_at("a.json", 69).unwrap().bytes, content(69).into_bytes());
}

#[test]
fn keep_all_and_recent_days_drop_nothing() {
    for keep in ["\"all\"", "\"30d\""] {
        let dir = tempfile::tempdir().unwrap();
        store_with_keep(dir.path(), keep);
        let store = Store::open(dir.path(), options()).unwrap();
        for n in 2..=5 {
            store.commit(origin(), vec![Change::put("a.json", content(n))]).unwrap();
        }
        assert_eq!(store.compact().unwrap(), None, "{keep}");
        assert_eq!(store.document_at("a.json", 1).unwrap().bytes, content(1).into_bytes());
    }
}

#[test]
fn a_failed_compaction_leaves_the_log_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    store_with_keep(root, "2");
    let hook = |point: FailPoint, step: &str| {
        if point == FailPoint::Compact && step == "rename" {
            return Err(std::io::Error::other("injected"));
        }
        Ok(())
    };
    let options = OpenOptions { fail: Some(std::sync::Arc::new(hook)), ..options() };
    let store = Store::open(root, options).unwrap();
    for n in 2..=5 {
        store.commit(origin(), vec![Change::put("a.json", content(n))]).unwrap();
    }
    assert!(store.compact().is_err());
    assert!(!root.join(".stardust/log/transactions.compact").exists());
    assert_eq!(store.oldest_held(), 1);
    assert_eq!(store.document_at("a.json", 1).unwrap().bytes, content(1).into_bytes());
    store.commit(origin(), vec![Change::put("a.json", content(6))]).unwrap();
    assert_eq!(verify_log(root).unwrap().last_seq, 6);
}

/// The child: open the store (keep = 3) and commit, compacting after every commit, until
/// killed; each acknowledged commit is printed as `ack <seq>`.
fn child(root: &Path) -> ! {
    let abort_at = std::env::var(ABORT_AT_ENV).ok();
    let hook = move |point: FailPoint, step: &str| {
        if point == FailPoint::Compact && abort_at.as_deref() == Some(step) {
            std::process::abort();
        }
        Ok(())
    };
    let options = OpenOptions { fail: Some(std::sync::Arc::new(hook)), ..options() };
    let store = Store::open(root, options).expect("the child opens the store");
    loop {
        let n = store.snapshot().seq + 1;
        let committed = store.commit(origin(), vec![Change::put("a.json", content(n))]);
        println!("ack {}", committed.expect("commit").seq);
        store.compact().expect("compact");
    }
}

/// A content that compresses poorly (hex of a xorshift stream), about 32 KB, for `k`.
fn big(k: u64) -> String {
    let mut x = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut hex = String::with_capacity(32 * 1024);
    while hex.len() < 32 * 1024 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        hex.push_str(&format!("{x:016x}"));
    }
    format!("{{\"id\": \"doc/a\", \"type\": \"counter\", \"pad\": \"{hex}\"}}\n")
}

#[test]
fn a_content_written_again_is_logged_once_and_kept_through_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    store_with_keep(root, "4");
    let logged = || verify_log(root).unwrap().valid_len;
    // seq -> which content a.json holds from it on.
    let mut states = std::collections::BTreeMap::new();
    {
        let store = Store::open(root, options()).unwrap();
        let mut commit = |k: u64| {
            let before = logged();
            let seq = store.commit(origin(), vec![Change::put("a.json", big(k))]).unwrap().seq;
            states.insert(seq, k);
            logged() - before
        };
        let first = commit(0);
        assert!(first > 16 * 1024, "a new content is stored: {first} bytes");
        assert!(commit(1) > 16 * 1024);
        // A branch switched back and forth: each content is already in the log.
        for round in 0..10 {
            let grew = commit(round % 2);
            assert!(grew < 2048, "round {round}: a content logged again took {grew} bytes");
            store.compact().unwrap();
        }
        // Every state still held reads back as it was, though most of them share a record
        // that compaction would otherwise have dropped.
        let head = store.head_seq();
        let oldest = store.oldest_held();
        assert!(oldest > 2, "compaction ran: oldest {oldest}");
        for seq in oldest..=head {
            let k = states.range(..=seq).next_back().map(|(_, &k)| k).unwrap();
            let at = store.document_at("a.json", seq).unwrap();
            assert_eq!(at.bytes, big(k).into_bytes(), "a.json as of seq {seq}");
        }
    }
    assert_eq!(verify_log(root).unwrap().damage, None);
    // Recovery and the index read the shared contents too after a reopen.
    let store = Store::open(root, options()).unwrap();
    let head = store.head_seq();
    let k = states[&head];
    assert_eq!(std::fs::read(root.join("a.json")).unwrap(), big(k).into_bytes());
    for seq in store.oldest_held()..=head {
        let k = states.range(..=seq).next_back().map(|(_, &k)| k).unwrap();
        assert_eq!(store.document_at("a.json", seq).unwrap().bytes, big(k).into_bytes());
    }
}

#[test]
fn acknowledged_transactions_survive_sigkill_during_compaction() {
    if let Some(root) = child_root(CHILD_ENV) {
        child(&root);
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    store_with_keep(root, "3");
    // Enough history that each compaction rewrites a log of some size.
    {
        let store = Store::open(root, options()).unwrap();
        for n in 2..=200 {
            let changes = vec![Change::put("b.json", format!("{{\"n\": {n}}}\n"))];
            store.commit(origin(), changes).unwrap();
        }
    }
    let mut rng = Rng::from_clock();
    let seed = rng.seed();
    let mut acked = 0u64;
    // Two rounds abort at each compaction step, the rest are killed at random moments.
    let rounds: Vec<Option<&str>> =
        [Some("write"), Some("rename")].into_iter().chain(std::iter::repeat_n(None, 12)).collect();
    for (round, abort_at) in rounds.into_iter().enumerate() {
        let context = format!("round {round} (seed {seed})");
        let extra: Vec<(&str, &str)> =
            abort_at.map(|step| (ABORT_AT_ENV, step)).into_iter().collect();
        let child = spawn(TEST_NAME, CHILD_ENV, root, &extra);
        let (_, seqs) = if abort_at.is_none() {
            std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
            child.kill()
        } else {
            child.wait()
        };
        let seqs: Vec<u64> = seqs.iter().map(|seq| seq.trim().parse().unwrap()).collect();
        if let Some(&last) = seqs.last() {
            acked = acked.max(last);
        }
        let v = verify_log(root).unwrap();
        assert_eq!(v.damage.filter(|d| d.in_middle), None, "{context}");
        let listed = read_log(root, 0, usize::MAX).unwrap();
        assert!(listed.len() as u64 >= acked, "{context}: {} listed, {acked} acked", listed.len());
        for (i, txn) in listed.iter().enumerate() {
            assert_eq!(txn.seq, i as u64 + 1, "{context}");
        }
        let store = Store::open(root, options()).unwrap_or_else(|e| panic!("{context}: {e}"));
        assert!(store.head_seq() >= acked, "{context}");
        assert!(!root.join(".stardust/log/transactions.compact").exists(), "{context}");
        let head = store.head_seq();
        let a = store.document_at("a.json", head).unwrap();
        assert_eq!(a.bytes, std::fs::read(root.join("a.json")).unwrap(), "{context}");
        assert!(store.oldest_held() > 1 && store.oldest_held() <= head, "{context}");
        drop(store);
        assert_eq!(verify_log(root).unwrap().damage, None, "{context}");
    }
    assert!(acked > 200, "the children committed: {acked}");
}

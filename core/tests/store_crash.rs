//! Crash safety: a child process commits in a loop and is killed with SIGKILL at random
//! moments (while opening, recovering, committing, or checkpointing). After every kill the
//! store must open with every acknowledged commit present, no document torn or half-committed,
//! every document at its last logged state, seqs consecutive, and a log that verifies. A
//! commit syncs only its log record, so most kills land with several transactions after the
//! last checkpoint, on the same documents (a, b) and on others (c, d); the child checkpoints
//! often in some rounds and rarely in others. Every third round also damages the log's tail
//! the way an interrupted append would. Each pair also rewrites a code file (`e.py`, SPEC §18),
//! which the log records and recovery redoes like a document, but never analyses.
//!
//! The child is this same test binary, run again with `CHILD_ENV` set to the store's path
//! (`common::child`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use stardust_core::store::{Change, OpenOptions, Origin, Store, Version, verify_log};

use common::child::{Rng, child_root, spawn};
use common::options;

mod common;

const CHILD_ENV: &str = "STARDUST_STORE_CRASH_CHILD";
/// How many commits the child lets pass between checkpoints.
const EVERY_ENV: &str = "STARDUST_STORE_CRASH_EVERY";
const ROUNDS: u64 = 100;
const TEST_NAME: &str = "acknowledged_commits_survive_sigkill";

/// The content of document `name` at commit `n`; its size varies so writes differ in length.
fn content(name: &str, n: u64) -> String {
    let pad = "x".repeat((n * 37 % 400) as usize);
    format!("{{\"id\": \"doc/{name}\", \"type\": \"counter\", \"n\": {n}, \"pad\": \"{pad}\"}}\n")
}

/// The content of the code file `e.py` at commit `n`: one of seven, so most commits write a
/// content the log already holds (and shares instead of storing again).
fn code(n: u64) -> String {
    let k = n % 7;
    format!("k = {k}\npad = '{}'\n", "y".repeat((k * 53 % 300) as usize))
}

/// The `n` of a document's content, checking the content is whole.
fn parse_n(name: &str, text: &str) -> u64 {
    let value: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{name} is torn ({e}): {text:?}"));
    let n = value["n"].as_u64().unwrap_or_else(|| panic!("{name} has no n: {text:?}"));
    assert_eq!(text, content(name, n), "{name} is not a content the child wrote");
    n
}

/// The child: open the store and commit pairs of documents until killed, printing each
/// acknowledged commit as `ack <seq> <n>`; every other pair is followed by a commit of `d`
/// alone, acknowledged as `ack <seq> d`.
fn child(root: &Path) -> ! {
    let every = std::env::var(EVERY_ENV).ok().and_then(|e| e.parse().ok()).unwrap_or(64);
    let options = OpenOptions { checkpoint_every: every, ..options() };
    let store = Store::open(root, options).expect("the child opens the store");
    let mut stdout = std::io::stdout().lock();
    loop {
        let n = store.snapshot().seq + 1;
        if n.is_multiple_of(2) {
            let committed = store
                .commit(Origin::Sdk("crash".into()), vec![Change::put("d.json", content("d", n))]);
            writeln!(stdout, "ack {} d", committed.expect("commit").seq).unwrap();
            stdout.flush().unwrap();
            continue;
        }
        let mut changes = vec![
            Change::put("a.json", content("a", n)),
            Change::put("b.json", content("b", n)),
            Change::put("e.py", code(n)),
        ];
        // A third document comes and goes, so creations and deletions crash too.
        if n.is_multiple_of(3) {
            changes.push(Change::put("c.json", content("c", n)));
        } else if store.snapshot().version("c.json").is_some() {
            changes.push(Change::delete("c.json"));
        }
        let committed = store.commit(Origin::Sdk("crash".into()), changes).expect("commit");
        writeln!(stdout, "ack {} {n}", committed.seq).unwrap();
        stdout.flush().unwrap();
    }
}

#[test]
fn acknowledged_commits_survive_sigkill() {
    if let Some(root) = child_root(CHILD_ENV) {
        child(&root);
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a.json"), content("a", 0)).unwrap();
    std::fs::write(root.join("b.json"), content("b", 0)).unwrap();
    drop(Store::open(root, options()).unwrap());

    let mut rng = Rng::from_clock();
    let seed = rng.seed();
    // Every commit of a and b any child acknowledged: seq -> n; and those of d alone.
    let mut acked: BTreeMap<u64, u64> = BTreeMap::new();
    let mut acked_d: Vec<u64> = Vec::new();
    let mut killed_mid_run = 0;
    // Rounds whose kill left at least two transactions after the last checkpoint.
    let mut long_tails = 0;
    for round in 0..ROUNDS {
        let context = format!("round {round} (seed {seed})");
        let every = if round % 4 < 2 { "4" } else { "1000" };
        let child = spawn(TEST_NAME, CHILD_ENV, root, &[(EVERY_ENV, every)]);
        // Odd rounds kill at any moment from the start (opening and recovering included);
        // even rounds once the child is committing.
        if round.is_multiple_of(2) {
            child.first_ack(Duration::from_secs(20));
            std::thread::sleep(Duration::from_micros(rng.below(40_000)));
        } else {
            std::thread::sleep(Duration::from_micros(rng.below(80_000)));
        }
        let (status, acks) = child.kill();
        assert!(status.code().is_none(), "{context}: the child exited by itself: {status}");
        if !acks.is_empty() {
            killed_mid_run += 1;
        }
        for ack in acks {
            // `ack <seq> <n>`, or `ack <seq> d` for a commit of d alone (`n` is `None`).
            let mut words = ack.split(' ');
            let (Some(Ok(seq)), Some(n)) = (words.next().map(str::parse::<u64>), words.next())
            else {
                continue;
            };
            let n = n.parse::<u64>().ok();
            let twice = acked.contains_key(&seq) || acked_d.contains(&seq);
            assert!(!twice, "{context}: seq {seq} acknowledged twice");
            match n {
                Some(n) => {
                    acked.insert(seq, n);
                }
                None => acked_d.push(seq),
            }
        }
        let v = verify_log(root).unwrap();
        if v.last_seq >= v.applied_through + 2 {
            long_tails += 1;
        }

        if round % 3 == 2 {
            damage_tail(root, &mut rng);
        }
        check(root, &acked, &acked_d, &context);
    }
    assert!(
        killed_mid_run >= ROUNDS / 2,
        "only {killed_mid_run} of {ROUNDS} rounds were killed while committing"
    );
    eprintln!("{long_tails} of {ROUNDS} rounds left two or more transactions to redo");
    assert!(
        long_tails >= ROUNDS / 4,
        "only {long_tails} of {ROUNDS} rounds left two or more transactions to redo"
    );
}

/// Append what an interrupted append could leave: a prefix of a record, or noise.
fn damage_tail(root: &Path, rng: &mut Rng) {
    let mut tail: Vec<u8> = Vec::new();
    if rng.below(2) == 0 {
        tail.extend_from_slice(b"SDT1");
        tail.extend_from_slice(&(rng.below(5000) + 100).to_le_bytes());
    }
    for _ in 0..rng.below(200) {
        tail.push(rng.below(256) as u8);
    }
    let log = root.join(".stardust/log/transactions.log");
    let mut file = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    file.write_all(&tail).unwrap();
}

/// Open the store as the next owner would and check everything the contract promises.
fn check(root: &Path, acked: &BTreeMap<u64, u64>, acked_d: &[u64], context: &str) {
    let store = Store::open(root, options()).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
    let verification = verify_log(root).unwrap();
    assert_eq!(verification.damage, None, "{context}: the log verifies after recovery");
    assert_eq!(
        verification.applied_through, verification.last_seq,
        "{context}: the open redid and marked everything"
    );
    let txns = store.transactions(0, usize::MAX).unwrap();
    for (i, txn) in txns.iter().enumerate() {
        assert_eq!(txn.seq, i as u64 + 1, "{context}: seqs are consecutive");
        if i > 0 {
            // Recovery finished every interrupted commit: nothing looked like an outside edit.
            assert_eq!(txn.origin, Origin::Sdk("crash".into()), "{context}: seq {}", txn.seq);
        }
    }
    for (&seq, &n) in acked {
        let txn = txns
            .get(seq as usize - 1)
            .unwrap_or_else(|| panic!("{context}: acknowledged seq {seq} is lost"));
        let after: Vec<_> =
            txn.documents.iter().filter(|d| d.path != "c.json").map(|d| d.after).collect();
        let want = vec![
            Some(Version::of(content("a", n).as_bytes())),
            Some(Version::of(content("b", n).as_bytes())),
            Some(Version::of(code(n).as_bytes())),
        ];
        assert_eq!(after, want, "{context}: seq {seq} holds what was acknowledged");
    }
    for &seq in acked_d {
        let txn = txns
            .get(seq as usize - 1)
            .unwrap_or_else(|| panic!("{context}: acknowledged seq {seq} is lost"));
        let after: Vec<_> = txn.documents.iter().map(|d| (d.path.as_str(), d.after)).collect();
        let want = Some(Version::of(content("d", seq).as_bytes()));
        assert_eq!(after, [("d.json", want)], "{context}: seq {seq} holds what was acknowledged");
    }
    // Every document is at its last logged state.
    let mut last: BTreeMap<&str, Option<Version>> = BTreeMap::new();
    for doc in txns.iter().flat_map(|t| &t.documents) {
        last.insert(&doc.path, doc.after);
    }
    for (path, version) in last {
        let on_disk = std::fs::read(root.join(path)).ok().map(|b| Version::of(&b));
        assert_eq!(on_disk, version, "{context}: {path} is at its last logged state");
    }
    if let Ok(text) = std::fs::read_to_string(root.join("d.json")) {
        parse_n("d", &text);
    }
    // The documents are whole, from the same commit, and that commit is the last one.
    let a = parse_n("a", &std::fs::read_to_string(root.join("a.json")).unwrap());
    let b = parse_n("b", &std::fs::read_to_string(root.join("b.json")).unwrap());
    assert_eq!(a, b, "{context}: a commit was half-applied");
    if a > 0 {
        let e = std::fs::read_to_string(root.join("e.py")).unwrap();
        assert_eq!(e, code(a), "{context}: the code file is from the same commit as a and b");
    }
    assert!(store.snapshot().analysis.document("e.py").is_none(), "{context}: e.py is no document");
    let last = txns.iter().rfind(|t| t.documents.iter().any(|d| d.path == "a.json")).unwrap();
    if last.seq > 1 {
        assert_eq!(a, last.seq, "{context}: the documents are at the last seq that wrote them");
    }
    match std::fs::read_to_string(root.join("c.json")) {
        Ok(text) => assert!(parse_n("c", &text).is_multiple_of(3), "{context}"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{context}"),
    }
    let stray: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("stardust-tmp"))
        .collect();
    assert!(stray.is_empty(), "{context}: temporary files left behind: {stray:?}");
}

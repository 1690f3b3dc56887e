//! History you can use (SPEC §26): data-driven tests of as-of reads, diffs and reverts.
//!
//! Each fixture in `test-data/history/` is a small store (`//- path` sections, recorded as
//! seq 1 when the store opens), then `//- OPS`, then one section per operation, in order:
//! - `put PATH` / `delete PATH`: commit one transaction (the section is the new content);
//!   `put+` / `delete+` join the transaction of the operation before;
//! - `at SEQ PATH`: the file as of SEQ; `entity-at SEQ ID`: the entity as of SEQ;
//! - `diff SEQ[..TO] [PATH...]`: what those transactions changed, as unified diffs;
//! - `revert SEQ`: the inverse of SEQ at the head, each file's diff from now (nothing
//!   committed); `revert! SEQ` commits it too;
//! - `history [path PATH] [entity ID] [LIMIT OFFSET]`: the transactions listed, newest first.
//!
//! The snapshot shows each answer, or the error's code and message.

mod common;

use std::fmt::Write;

use common::fixture::{check_fixtures, files};
use common::{open, write};
use stardust_core::answers::unified_diff;
use stardust_core::store::{
    Change, FileChange, HistoryFilter, Origin, Store, StoreError, TreeEntry,
};

fn origin() -> Origin {
    Origin::Sdk("test".into())
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap()
}

fn diffs(out: &mut String, files: &[FileChange]) {
    for file in files {
        let before = file.before.as_ref().map(|(_, b)| text(b));
        let after = file.after.as_ref().map(|(_, b)| text(b));
        out.push_str(&unified_diff(&file.path, before, after));
    }
}

fn error(out: &mut String, err: StoreError) {
    writeln!(out, "error[{}] {err}", err.code().as_str()).unwrap();
}

fn run(fixture: &str) -> String {
    let (initial, ops) = fixture.split_once("//- OPS\n").expect("a //- OPS section");
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files(initial) {
        write(dir.path(), &path, &content);
    }
    let store = open(dir.path());
    let mut out = format!("seq {}: the store as found\n", store.snapshot().seq);
    let ops = files(ops);
    let mut pending: Vec<Change> = Vec::new();
    for (i, (header, content)) in ops.iter().enumerate() {
        let (op, rest) = header.split_once(' ').unwrap_or((header, ""));
        let joins_next = ops
            .get(i + 1)
            .is_some_and(|(next, _)| next.starts_with("put+ ") || next.starts_with("delete+ "));
        match op.trim_end_matches('+') {
            "put" => pending.push(Change::put(rest, content.clone())),
            "delete" => pending.push(Change::delete(rest)),
            _ => {
                writeln!(out, ">>> {header}").unwrap();
                query(&store, &mut out, op, rest);
                continue;
            }
        }
        if !joins_next {
            let paths: Vec<String> = pending.iter().map(|c| c.path.clone()).collect();
            match store.commit(origin(), std::mem::take(&mut pending)) {
                Ok(done) => writeln!(out, "seq {}: {}", done.seq, paths.join(", ")).unwrap(),
                Err(err) => error(&mut out, err),
            }
        }
    }
    out
}

fn query(store: &Store, out: &mut String, op: &str, rest: &str) {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let seq = |w: &str| w.parse::<u64>().expect("a seq");
    match op {
        "at" => match store.document_at(words[1], seq(words[0])) {
            Ok(at) => {
                writeln!(out, "as changed by seq {}", at.changed_at).unwrap();
                out.push_str(text(&at.bytes));
            }
            Err(err) => error(out, err),
        },
        "entity-at" => match store.entity_at(words[1], seq(words[0])) {
            Ok(at) => writeln!(
                out,
                "in {} (as changed by seq {}): {}",
                at.document.path, at.document.changed_at, at.value
            )
            .unwrap(),
            Err(err) => error(out, err),
        },
        "diff" => {
            let (from, to) = match words[0].split_once("..") {
                Some((a, b)) => (seq(a), seq(b)),
                None => (seq(words[0]), seq(words[0])),
            };
            let paths: Vec<String> = words[1..].iter().map(|w| (*w).to_owned()).collect();
            let paths = (!paths.is_empty()).then_some(paths.as_slice());
            match store.diff(from, to, paths) {
                Ok(files) => diffs(out, &files),
                Err(err) => error(out, err),
            }
        }
        "revert" | "revert!" => match store.revert(seq(words[0])) {
            Ok(revert) => {
                diffs(out, &revert.files);
                if op == "revert!" {
                    let changes = revert
                        .files
                        .into_iter()
                        .map(|f| match f.after {
                            Some((_, bytes)) => Change::put(f.path, bytes),
                            None => Change::delete(f.path),
                        })
                        .collect();
                    match store.commit(origin(), changes) {
                        Ok(done) => writeln!(out, "committed as seq {}", done.seq).unwrap(),
                        Err(err) => error(out, err),
                    }
                }
            }
            Err(err) => error(out, err),
        },
        "history" => {
            let mut filter = HistoryFilter::default();
            let mut page = Vec::new();
            let mut words = words.iter();
            while let Some(word) = words.next() {
                match *word {
                    "path" => filter.path = words.next().map(|w| (*w).to_owned()),
                    "entity" => filter.entity = words.next().map(|w| (*w).to_owned()),
                    n => page.push(n.parse::<usize>().expect("limit, offset")),
                }
            }
            let (limit, offset) = (page.first().copied().unwrap_or(100), page.get(1).copied());
            match store.history(&filter, limit, offset.unwrap_or(0)) {
                Ok((txns, total)) => {
                    writeln!(out, "total {total}").unwrap();
                    for txn in txns {
                        let docs: Vec<String> = txn
                            .documents
                            .iter()
                            .map(|d| format!("{} {}", d.kind(), d.path))
                            .collect();
                        writeln!(out, "seq {} {}: {}", txn.seq, txn.origin, docs.join(", "))
                            .unwrap();
                    }
                }
                Err(err) => error(out, err),
            }
        }
        other => panic!("unknown operation {other}"),
    }
}

#[test]
fn history_fixtures() {
    check_fixtures("history", run);
}

/// A store edited many times answers an as-of read of its first seq from the index: the
/// content comes from one record, whatever the length of the log.
#[test]
fn as_of_reads_at_every_seq_of_a_long_history() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.json", "{\"n\": 0}\n");
    let store = open(dir.path());
    for n in 1..=300 {
        store.commit(origin(), vec![Change::put("a.json", format!("{{\"n\": {n}}}\n"))]).unwrap();
    }
    for seq in [1, 2, 150, 301] {
        let at = store.document_at("a.json", seq).unwrap();
        assert_eq!(text(&at.bytes), format!("{{\"n\": {}}}\n", seq - 1));
    }
    drop(store);
    // The index is rebuilt from the log at the next open.
    let store = open(dir.path());
    assert_eq!(text(&store.document_at("a.json", 7).unwrap().bytes), "{\"n\": 6}\n");
    let changes = store.diff(2, 11, None).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(text(&changes[0].before.as_ref().unwrap().1), "{\"n\": 0}\n");
    assert_eq!(text(&changes[0].after.as_ref().unwrap().1), "{\"n\": 10}\n");
}

/// The tree as of a seq: folders come from the paths of the files that existed then.
#[test]
fn the_tree_as_of_a_seq_has_the_files_and_folders_of_then() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.json", "{}\n");
    let store = open(dir.path());
    store.commit(origin(), vec![Change::put("books/x/b.json", "{\"b\": 1}\n")]).unwrap();
    store.commit(origin(), vec![Change::delete("a.json")]).unwrap();
    let root = |seq| store.folder_at(seq, "");
    assert_eq!(root(1), Some(vec![("a.json".to_owned(), false)]));
    assert_eq!(root(2), Some(vec![("a.json".to_owned(), false), ("books".to_owned(), true)]));
    assert_eq!(root(3), Some(vec![("books".to_owned(), true)]));
    assert_eq!(store.folder_at(3, "books"), Some(vec![("x".to_owned(), true)]));
    assert_eq!(store.folder_at(1, "books"), None, "no such folder then");
    assert_eq!(store.tree_at(2, "books/x"), Some(TreeEntry::Folder));
    assert_eq!(store.tree_at(2, "a.json"), Some(TreeEntry::File(b"{}\n".to_vec())));
    assert_eq!(store.tree_at(3, "a.json"), None, "deleted by then");
    assert_eq!(store.tree_at(0, ""), None);
    assert_eq!(store.tree_at(4, ""), None, "past the head");
}

//! The change feed of a store: notices after commits, coalescing, overflow, and resuming from
//! a seq.

mod common;

use std::time::Duration;

use common::{open, person};
use stardust_core::store::{
    Change, ChangeKind, ChangesSince, DocumentNotice, EntityNotice, Notice, Origin, Version,
};

fn lsp() -> Origin {
    Origin::Lsp("editor".into())
}

fn doc(path: &str, change: ChangeKind, content: Option<&str>) -> DocumentNotice {
    DocumentNotice {
        path: path.to_owned(),
        change,
        version: content.map(|c| Version::of(c.as_bytes())),
    }
}

fn entity(id: &str, change: ChangeKind) -> EntityNotice {
    EntityNotice { id: id.to_owned(), change }
}

#[test]
fn subscribers_hear_of_each_commit_with_its_seq() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let sub = store.subscribe();
    assert_eq!(sub.try_next(), None);
    let ann = person("person/ann", "Ann");
    store.commit(lsp(), vec![Change::create("ann.json", ann.clone())]).unwrap();
    assert_eq!(
        sub.next_timeout(Duration::from_secs(5)),
        Some(Notice::Changes {
            seq: 1,
            documents: vec![doc("ann.json", ChangeKind::Created, Some(&ann))],
            entities: vec![entity("person/ann", ChangeKind::Created)],
        })
    );
    // An entity moving between documents in one commit is changed, not created and deleted.
    let moved = person("person/ann", "Ann");
    store
        .commit(
            lsp(),
            vec![Change::delete("ann.json"), Change::create("people/ann.json", moved.clone())],
        )
        .unwrap();
    assert_eq!(
        sub.try_next(),
        Some(Notice::Changes {
            seq: 2,
            documents: vec![
                doc("ann.json", ChangeKind::Deleted, None),
                doc("people/ann.json", ChangeKind::Created, Some(&moved)),
            ],
            entities: vec![entity("person/ann", ChangeKind::Changed)],
        })
    );
}

#[test]
fn a_slow_subscriber_gets_one_coalesced_notice() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let sub = store.subscribe();
    let last = person("person/a", "v9");
    for i in 0..10 {
        let text = person("person/a", &format!("v{i}"));
        store.commit(lsp(), vec![Change::put("a.json", text)]).unwrap();
    }
    store.commit(lsp(), vec![Change::create("b.json", person("person/b", "B"))]).unwrap();
    assert_eq!(sub.pending(), 4);
    assert_eq!(
        sub.try_next(),
        Some(Notice::Changes {
            seq: 11,
            documents: vec![
                doc("a.json", ChangeKind::Changed, Some(&last)),
                doc("b.json", ChangeKind::Created, Some(&person("person/b", "B"))),
            ],
            entities: vec![
                entity("person/a", ChangeKind::Changed),
                entity("person/b", ChangeKind::Created),
            ],
        })
    );
    assert_eq!(sub.try_next(), None);
}

#[test]
fn a_stalled_subscriber_overflows_once_and_slows_nobody() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stardust.toml"), "[notifications]\nmax_pending = 5\n").unwrap();
    let store = open(dir.path());
    let stalled = store.subscribe();
    let reader = store.subscribe();
    for i in 0..50 {
        let path = format!("d{i}.json");
        store.commit(lsp(), vec![Change::create(path.clone(), "{}")]).unwrap();
        assert!(stalled.pending() <= 5, "a stalled subscriber holds at most max_pending entries");
        let Some(Notice::Changes { seq, documents, .. }) = reader.try_next() else { panic!() };
        assert_eq!((seq, documents.len()), (i + 1, 1));
    }
    assert_eq!(stalled.try_next(), Some(Notice::Overflow { seq: 50 }));
    assert_eq!(stalled.try_next(), None, "one overflow notice, not one per commit");
    store.commit(lsp(), vec![Change::create("after.json", "{}")]).unwrap();
    assert!(matches!(stalled.try_next(), Some(Notice::Changes { seq: 51, .. })));
}

#[test]
fn dropping_the_store_ends_waiting_subscribers() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let sub = store.subscribe();
    let waiter = std::thread::spawn(move || sub.next());
    std::thread::sleep(Duration::from_millis(20));
    drop(store);
    assert_eq!(waiter.join().unwrap(), None);
}

#[test]
fn changes_since_answers_from_the_log_coalesced_and_paginated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), person("person/a", "A0")).unwrap();
    let store = open(dir.path());
    let a2 = person("person/a", "A2");
    store.commit(lsp(), vec![Change::put("a.json", person("person/a", "A1"))]).unwrap();
    store.commit(lsp(), vec![Change::create("b.json", "{}")]).unwrap();
    store.commit(lsp(), vec![Change::put("a.json", a2.clone())]).unwrap();
    store.commit(lsp(), vec![Change::delete("b.json")]).unwrap();
    assert_eq!(store.snapshot().seq, 5);

    let all = store.changes_since(1, 100).unwrap();
    assert_eq!(
        all,
        ChangesSince::Changes {
            seq: 5,
            documents: vec![
                doc("a.json", ChangeKind::Changed, Some(&a2)),
                doc("b.json", ChangeKind::Deleted, None),
            ],
            entities: vec![entity("person/a", ChangeKind::Changed)],
            more: false,
        }
    );

    // Pages end on transaction boundaries; each says where to continue.
    let mut since = 0;
    let mut pages = Vec::new();
    loop {
        let ChangesSince::Changes { seq, documents, more, .. } =
            store.changes_since(since, 1).unwrap()
        else {
            panic!("no overflow expected")
        };
        pages.push((seq, documents.len()));
        since = seq;
        if !more {
            break;
        }
    }
    assert_eq!(pages, vec![(1, 1), (2, 1), (3, 1), (4, 1), (5, 1)]);

    let empty = store.changes_since(5, 10).unwrap();
    assert_eq!(
        empty,
        ChangesSince::Changes { seq: 5, documents: vec![], entities: vec![], more: false }
    );
    // A seq from a history this store does not have: the client must re-read everything.
    assert_eq!(store.changes_since(99, 10).unwrap(), ChangesSince::Overflow { seq: 5 });
}

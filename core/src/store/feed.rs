//! The change feed: what each subscriber has not yet read, coalesced and bounded.
//!
//! Publishing never waits for a subscriber: it merges the transaction into each subscriber's
//! pending set under that subscriber's own short lock. Pending changes coalesce to one entry
//! per document and per entity (the latest change, the newest seq); past `max_pending`
//! entries they are dropped for a single overflow notice, so a subscriber that never reads
//! costs at most `max_pending` entries and slows nobody.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::txn::{ChangeKind, Transaction, Version};

/// A document that changed, as a notification names it.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct DocumentNotice {
    pub path: String,
    pub change: ChangeKind,
    /// The version after the change; `None` when deleted.
    pub version: Option<Version>,
}

/// An entity that changed.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct EntityNotice {
    pub id: String,
    pub change: ChangeKind,
}

/// What a subscriber receives.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Notice {
    /// Everything that changed since the previous notice, as of `seq`. Sorted by path / id.
    Changes { seq: u64, documents: Vec<DocumentNotice>, entities: Vec<EntityNotice> },
    /// Too much changed to list: re-read the current state (as of `seq` or later).
    Overflow { seq: u64 },
}

/// Changes coalesced per document and per entity.
#[derive(Default, Debug)]
pub struct Coalesced {
    pub seq: u64,
    documents: BTreeMap<String, (ChangeKind, Option<Version>)>,
    entities: BTreeMap<String, ChangeKind>,
}

impl Coalesced {
    /// Nothing pending yet, as of `seq`.
    pub fn starting_at(seq: u64) -> Coalesced {
        Coalesced { seq, ..Coalesced::default() }
    }

    /// Merge a transaction in: the latest change of each document and entity wins.
    pub fn add(&mut self, txn: &Transaction) {
        self.add_with(txn, &txn.entity_changes());
    }

    /// [`Coalesced::add`] with the transaction's [`Transaction::entity_changes`] computed once
    /// by the caller, who merges it into many subscribers.
    fn add_with(&mut self, txn: &Transaction, entities: &[(String, ChangeKind)]) {
        self.seq = txn.seq;
        for doc in &txn.documents {
            self.documents.insert(doc.path.clone(), (doc.kind(), doc.after));
        }
        for (id, change) in entities {
            self.entities.insert(id.clone(), *change);
        }
    }

    /// Entries pending: one per document and per entity.
    pub fn len(&self) -> usize {
        self.documents.len() + self.entities.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn take(&mut self) -> (Vec<DocumentNotice>, Vec<EntityNotice>) {
        let documents = std::mem::take(&mut self.documents)
            .into_iter()
            .map(|(path, (change, version))| DocumentNotice { path, change, version })
            .collect();
        let entities = std::mem::take(&mut self.entities)
            .into_iter()
            .map(|(id, change)| EntityNotice { id, change })
            .collect();
        (documents, entities)
    }
}

#[derive(Debug)]
struct Pending {
    changes: Coalesced,
    overflow: Option<u64>,
    max_pending: usize,
    closed: bool,
}

#[derive(Debug)]
struct Slot {
    pending: Mutex<Pending>,
    ready: Condvar,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A subscriber that panicked while holding its lock leaves plain data behind.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The publishing side, owned by the store.
#[derive(Default, Debug)]
pub struct Feed {
    slots: Mutex<Vec<Weak<Slot>>>,
}

impl Feed {
    /// A new subscriber that receives every transaction published from now on.
    pub fn subscribe(&self, max_pending: usize) -> Subscription {
        let slot = Arc::new(Slot {
            pending: Mutex::new(Pending {
                changes: Coalesced::default(),
                overflow: None,
                max_pending: max_pending.max(1),
                closed: false,
            }),
            ready: Condvar::new(),
        });
        self.lock().push(Arc::downgrade(&slot));
        Subscription { slot }
    }

    /// Hand a committed transaction to every subscriber.
    pub fn publish(&self, txn: &Transaction) {
        let mut slots = self.lock();
        if slots.is_empty() {
            return;
        }
        let entities = txn.entity_changes();
        slots.retain(|weak| {
            let Some(slot) = weak.upgrade() else { return false };
            let mut pending = slot.lock();
            // Its reader waits only while nothing is pending: otherwise it is awake or about to
            // be, and will take this change with the others (a wake-up costs a system call).
            let asleep = pending.overflow.is_none() && pending.changes.is_empty();
            if let Some(seq) = &mut pending.overflow {
                *seq = txn.seq;
            } else {
                pending.changes.add_with(txn, &entities);
                if pending.changes.len() > pending.max_pending {
                    pending.changes = Coalesced::default();
                    pending.overflow = Some(txn.seq);
                }
            }
            drop(pending);
            if asleep {
                slot.ready.notify_all();
            }
            true
        });
    }

    /// Wake every subscriber for the last time: the store is closing.
    pub fn close(&self) {
        for slot in self.lock().drain(..).filter_map(|w| w.upgrade()) {
            slot.lock().closed = true;
            slot.ready.notify_all();
        }
    }

    /// Live subscribers.
    #[cfg(test)]
    pub fn subscribers(&self) -> usize {
        let mut slots = self.lock();
        slots.retain(|w| w.strong_count() > 0);
        slots.len()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Weak<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The receiving side of one subscriber. Dropping it unsubscribes.
#[derive(Debug)]
pub struct Subscription {
    slot: Arc<Slot>,
}

impl Subscription {
    /// The pending notice, if any, without waiting.
    pub fn try_next(&self) -> Option<Notice> {
        take(&mut self.slot.lock())
    }

    /// Wait up to `timeout` for a notice. `None` on timeout or when the store has closed.
    pub fn next_timeout(&self, timeout: Duration) -> Option<Notice> {
        let deadline = Instant::now() + timeout;
        let mut pending = self.slot.lock();
        loop {
            if let Some(notice) = take(&mut pending) {
                return Some(notice);
            }
            let now = Instant::now();
            if pending.closed || now >= deadline {
                return None;
            }
            pending = self
                .slot
                .ready
                .wait_timeout(pending, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Wait for the next notice; `None` once the store has closed.
    pub fn next(&self) -> Option<Notice> {
        let mut pending = self.slot.lock();
        loop {
            if let Some(notice) = take(&mut pending) {
                return Some(notice);
            }
            if pending.closed {
                return None;
            }
            pending = self.slot.ready.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Entries waiting to be read (0 while an overflow is pending).
    pub fn pending(&self) -> usize {
        self.slot.lock().changes.len()
    }
}

fn take(pending: &mut Pending) -> Option<Notice> {
    if let Some(seq) = pending.overflow.take() {
        return Some(Notice::Overflow { seq });
    }
    if pending.changes.is_empty() {
        return None;
    }
    let seq = pending.changes.seq;
    let (documents, entities) = pending.changes.take();
    Some(Notice::Changes { seq, documents, entities })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::txn::{DocumentChange, Origin};

    fn txn(seq: u64, docs: &[(&str, Option<&str>, Option<&str>)], ids: &[&str]) -> Transaction {
        Transaction {
            seq,
            time: String::new(),
            origin: Origin::Mount,
            documents: docs
                .iter()
                .map(|(path, before, after)| DocumentChange {
                    path: (*path).to_owned(),
                    before: before.map(|b| Version::of(b.as_bytes())),
                    after: after.map(|a| Version::of(a.as_bytes())),
                    created: vec![],
                    changed: ids.iter().map(|s| (*s).to_owned()).collect(),
                    deleted: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn pending_changes_coalesce_per_document_and_entity() {
        let feed = Feed::default();
        let sub = feed.subscribe(100);
        feed.publish(&txn(1, &[("a.json", None, Some("1"))], &["x/a"]));
        feed.publish(&txn(
            2,
            &[("a.json", Some("1"), Some("2")), ("b.json", None, Some("b"))],
            &["x/a"],
        ));
        feed.publish(&txn(3, &[("a.json", Some("2"), None)], &[]));
        assert_eq!(sub.pending(), 3);
        let Some(Notice::Changes { seq, documents, entities }) = sub.try_next() else { panic!() };
        assert_eq!(seq, 3);
        assert_eq!(
            documents,
            vec![
                DocumentNotice {
                    path: "a.json".into(),
                    change: ChangeKind::Deleted,
                    version: None
                },
                DocumentNotice {
                    path: "b.json".into(),
                    change: ChangeKind::Created,
                    version: Some(Version::of(b"b")),
                },
            ]
        );
        assert_eq!(entities, vec![EntityNotice { id: "x/a".into(), change: ChangeKind::Changed }]);
        assert_eq!(sub.try_next(), None);
    }

    #[test]
    fn overflow_is_one_notice_then_delivery_resumes() {
        let feed = Feed::default();
        let slow = feed.subscribe(3);
        let fast = feed.subscribe(3);
        for seq in 1..=1000 {
            let path = format!("d{seq}.json");
            feed.publish(&txn(seq, &[(&path, None, Some("x"))], &[]));
            assert!(fast.try_next().is_some());
            assert!(slow.pending() <= 3);
        }
        assert_eq!(slow.try_next(), Some(Notice::Overflow { seq: 1000 }));
        assert_eq!(slow.try_next(), None, "exactly one overflow notice");
        feed.publish(&txn(1001, &[("z.json", None, Some("z"))], &[]));
        assert!(matches!(slow.try_next(), Some(Notice::Changes { seq: 1001, .. })));
    }

    #[test]
    fn dropped_subscribers_are_forgotten_and_close_wakes_waiters() {
        let feed = Arc::new(Feed::default());
        let sub = feed.subscribe(10);
        drop(feed.subscribe(10));
        feed.publish(&txn(1, &[("a.json", None, Some("1"))], &[]));
        assert_eq!(feed.subscribers(), 1);
        assert!(sub.next().is_some());
        let waiter = std::thread::spawn(move || sub.next());
        std::thread::sleep(Duration::from_millis(20));
        feed.close();
        assert_eq!(waiter.join().unwrap(), None);
    }

    #[test]
    fn next_timeout_waits_for_a_publish() {
        let feed = Arc::new(Feed::default());
        let sub = feed.subscribe(10);
        assert_eq!(sub.next_timeout(Duration::from_millis(10)), None);
        let publisher = {
            let feed = feed.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                feed.publish(&txn(7, &[("a.json", None, Some("1"))], &[]));
            })
        };
        let notice = sub.next_timeout(Duration::from_secs(10));
        publisher.join().unwrap();
        assert!(matches!(notice, Some(Notice::Changes { seq: 7, .. })));
    }
}

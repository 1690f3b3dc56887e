//! The change feed: what each subscriber has not yet read, coalesced and bounded.
//!
//! A commit only queues its transaction for the feed thread, which merges whatever is queued
//! into each subscriber's pending set under that subscriber's own short lock and wakes it
//! once per batch. So a commit does not pay for the fan-out, and when commits come faster
//! than subscribers read, each is woken once for many commits instead of once per commit.
//! Pending changes coalesce to one entry per document and per entity (the latest change, the
//! newest seq); past `max_pending` entries they are dropped for a single overflow notice, so
//! a subscriber that never reads costs at most `max_pending` entries and slows nobody.
//!
//! Invariants: one delivery runs at a time and takes the queue in publish order, so each
//! subscriber merges transactions in seq order; a subscriber never receives a transaction
//! published before it subscribed; [`Subscription::try_next`] and
//! [`Subscription::pending`] first deliver what is queued, so they see every transaction
//! published before the call.

use crate::sync::{self, lock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
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

impl Pending {
    /// Its reader waits only while nothing is pending: otherwise it is awake or about to be,
    /// and will take what is merged now with the rest (a wake-up costs a system call).
    fn reader_may_wait(&self) -> bool {
        self.overflow.is_none() && self.changes.is_empty()
    }

    fn merge(&mut self, txn: &Transaction, entities: &[(String, ChangeKind)]) {
        if let Some(seq) = &mut self.overflow {
            *seq = txn.seq;
            return;
        }
        self.changes.add_with(txn, entities);
        if self.changes.len() > self.max_pending {
            self.changes = Coalesced::default();
            self.overflow = Some(txn.seq);
        }
    }
}

/// A transaction with its entity changes, computed once for every subscriber.
type Published = (Arc<Transaction>, Vec<(String, ChangeKind)>);

#[derive(Debug)]
struct Slot {
    /// The newest seq published when it subscribed: it receives only later ones.
    after: u64,
    pending: Mutex<Pending>,
    ready: Condvar,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        lock(&self.pending)
    }

    /// Merge the batch's transactions it has not seen, and wake its reader if it waits.
    fn deliver(&self, batch: &[Published]) {
        let mut pending = self.lock();
        let may_wait = pending.reader_may_wait();
        let mut merged = false;
        for (txn, entities) in batch.iter().filter(|(txn, _)| txn.seq > self.after) {
            pending.merge(txn, entities);
            merged = true;
        }
        drop(pending);
        if merged && may_wait {
            self.ready.notify_all();
        }
    }
}

#[derive(Default, Debug)]
struct Queue {
    /// Published and not yet delivered, in seq order.
    transactions: Vec<Arc<Transaction>>,
    slots: Vec<Weak<Slot>>,
    /// The newest seq published.
    last_seq: u64,
    /// The feed thread waits for transactions.
    idle: bool,
    closed: bool,
}

/// What the store, the feed thread and the subscriptions share.
#[derive(Default, Debug)]
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the feed thread.
    work: Condvar,
    /// Held for a whole delivery, so that deliveries do not interleave.
    turn: Mutex<()>,
    /// Deliver inside `publish` (no feed thread, e.g. it could not be started).
    inline: AtomicBool,
}

impl Shared {
    /// Hand everything queued to every live subscriber.
    fn deliver(&self) {
        let _turn = lock(&self.turn);
        let (transactions, slots) = {
            let mut queue = lock(&self.queue);
            if queue.transactions.is_empty() {
                return;
            }
            queue.slots.retain(|w| w.strong_count() > 0);
            let slots: Vec<Arc<Slot>> = queue.slots.iter().filter_map(Weak::upgrade).collect();
            (std::mem::take(&mut queue.transactions), slots)
        };
        if slots.is_empty() {
            return;
        }
        // Entity changes are computed once per transaction, not once per subscriber.
        let batch: Vec<Published> = transactions
            .into_iter()
            .map(|txn| {
                let entities = txn.entity_changes();
                (txn, entities)
            })
            .collect();
        for slot in slots {
            slot.deliver(&batch);
        }
    }

    fn run(&self) {
        loop {
            {
                let mut queue = lock(&self.queue);
                while queue.transactions.is_empty() && !queue.closed {
                    queue.idle = true;
                    queue = sync::wait(&self.work, queue);
                }
                queue.idle = false;
                if queue.closed && queue.transactions.is_empty() {
                    return;
                }
            }
            self.deliver();
            // Commits that come within the window after a delivery wait for the next one
            // together: under a stream of commits each subscriber is woken once per window
            // instead of once per commit. A commit after a quiet spell is delivered at once.
            std::thread::sleep(WINDOW);
        }
    }
}

/// How long the feed thread collects commits after a delivery. On two cores and 1,000
/// commits a second with 100 subscribers it cut wake-ups 2.5x (docs/BENCHMARKS.md).
const WINDOW: Duration = Duration::from_millis(1);

/// The publishing side, owned by the store.
#[derive(Default, Debug)]
pub struct Feed {
    shared: Arc<Shared>,
    /// Started with the first subscriber.
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Feed {
    /// A new subscriber that receives every transaction published from now on.
    pub fn subscribe(&self, max_pending: usize) -> Subscription {
        self.start();
        let mut queue = lock(&self.shared.queue);
        let slot = Arc::new(Slot {
            after: queue.last_seq,
            pending: Mutex::new(Pending {
                changes: Coalesced::default(),
                overflow: None,
                max_pending: max_pending.max(1),
                closed: queue.closed,
            }),
            ready: Condvar::new(),
        });
        queue.slots.push(Arc::downgrade(&slot));
        Subscription { slot, shared: self.shared.clone() }
    }

    /// Start the feed thread unless it runs (or the feed is closed). When it cannot be
    /// started, publishing delivers by itself.
    fn start(&self) {
        let mut thread = lock(&self.thread);
        if thread.is_some()
            || self.shared.inline.load(Ordering::Relaxed)
            || lock(&self.shared.queue).closed
        {
            return;
        }
        let shared = self.shared.clone();
        match std::thread::Builder::new()
            .name("stardust-feed".to_owned())
            .spawn(move || shared.run())
        {
            Ok(handle) => *thread = Some(handle),
            Err(err) => {
                tracing::warn!("cannot start the change feed thread, delivering inline: {err}");
                self.shared.inline.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Queue a committed transaction for every subscriber.
    pub fn publish(&self, txn: &Transaction) {
        let mut queue = lock(&self.shared.queue);
        queue.last_seq = txn.seq;
        if queue.closed || queue.slots.is_empty() {
            return;
        }
        queue.transactions.push(Arc::new(txn.clone()));
        let wake = std::mem::take(&mut queue.idle);
        drop(queue);
        if self.shared.inline.load(Ordering::Relaxed) {
            self.shared.deliver();
        } else if wake {
            self.shared.work.notify_one();
        }
    }

    /// Deliver what is queued, then wake every subscriber for the last time: the store is
    /// closing.
    pub fn close(&self) {
        lock(&self.shared.queue).closed = true;
        self.shared.work.notify_one();
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
        // Whatever the thread did not take (or everything, without a thread).
        self.shared.deliver();
        let slots = std::mem::take(&mut lock(&self.shared.queue).slots);
        for slot in slots.iter().filter_map(Weak::upgrade) {
            slot.lock().closed = true;
            slot.ready.notify_all();
        }
    }

    /// Live subscribers.
    #[cfg(test)]
    pub fn subscribers(&self) -> usize {
        let mut queue = lock(&self.shared.queue);
        queue.slots.retain(|w| w.strong_count() > 0);
        queue.slots.len()
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.close();
    }
}

/// The receiving side of one subscriber. Dropping it unsubscribes.
#[derive(Debug)]
pub struct Subscription {
    slot: Arc<Slot>,
    shared: Arc<Shared>,
}

impl Subscription {
    /// The pending notice, if any, without waiting: it includes every transaction published
    /// before the call.
    pub fn try_next(&self) -> Option<Notice> {
        self.shared.deliver();
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
            pending = sync::wait_timeout(&self.slot.ready, pending, deadline - now).0;
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
            pending = sync::wait(&self.slot.ready, pending);
        }
    }

    /// Entries waiting to be read, including every transaction published before the call
    /// (0 while an overflow is pending).
    pub fn pending(&self) -> usize {
        self.shared.deliver();
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
    fn publishing_does_not_wait_for_delivery_and_a_late_subscriber_skips_what_was_queued() {
        let feed = Feed::default();
        let early = feed.subscribe(100);
        // A delivery in progress: the feed thread cannot take the queue.
        let turn = lock(&feed.shared.turn);
        for seq in 1..=50 {
            feed.publish(&txn(seq, &[("a.json", None, Some("1"))], &["x/a"]));
        }
        let late = feed.subscribe(100);
        drop(turn);
        // The 50 transactions reach the early subscriber as one batch: one notice, one wake.
        assert!(matches!(early.next(), Some(Notice::Changes { seq: 50, .. })));
        assert_eq!(late.try_next(), None, "a transaction published before subscribing");
        feed.publish(&txn(51, &[("b.json", None, Some("1"))], &[]));
        assert!(matches!(late.try_next(), Some(Notice::Changes { seq: 51, .. })));
        assert!(matches!(early.try_next(), Some(Notice::Changes { seq: 51, .. })));
    }

    #[test]
    fn closing_delivers_what_is_queued_first() {
        let feed = Feed::default();
        let sub = feed.subscribe(100);
        let shared = feed.shared.clone();
        let turn = lock(&shared.turn);
        feed.publish(&txn(1, &[("a.json", None, Some("1"))], &[]));
        let closing = std::thread::spawn(move || feed.close());
        std::thread::sleep(Duration::from_millis(20));
        drop(turn);
        closing.join().unwrap();
        assert!(matches!(sub.next(), Some(Notice::Changes { seq: 1, .. })));
        assert_eq!(sub.next(), None);
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

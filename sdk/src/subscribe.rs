//! Change subscriptions: a connection of their own that receives the core's
//! notifications of one kind, reconnects when the core goes away, and catches up with
//! `stardust.changes.since` so that no commit is missed.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::wire::Conn;
use crate::{ConnectOptions, Error, Result};

/// How a document or an entity changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Created,
    Changed,
    Deleted,
}

/// An entity that changed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct EntityChange {
    pub id: String,
    pub change: ChangeKind,
}

/// A document that changed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct DocumentChange {
    /// The document's path, relative to the store root.
    pub path: String,
    pub change: ChangeKind,
    /// The document's version (SHA-256) after the change; `None` when it was deleted. For a
    /// derived file, the version of the document it derives from.
    #[serde(default)]
    pub version: Option<String>,
    /// A derived file rather than a stored document: a view's result, the JSON
    /// projection of a DUST document (`.stardust/json/<path>.json`) or an entity's file
    /// (`.stardust/entities/<id>.json`), which the mount shows.
    #[serde(default)]
    pub derived: bool,
}

/// What a subscription yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<C> {
    /// Everything of this kind that changed since the previous event, as of `seq`: one entry
    /// per entity or document with its latest change (commits coalesce when they come faster
    /// than they are read).
    Changed { seq: u64, changes: Vec<C> },
    /// Changes were dropped (the subscriber fell more than `[notifications] max_pending`
    /// behind, or the log no longer reaches back to where it resumed): re-read whatever you
    /// keep, as of `seq`. Later events follow on from `seq`.
    Reread { seq: u64 },
}

impl<C> Event<C> {
    /// The newest transaction this event accounts for.
    pub fn seq(&self) -> u64 {
        match self {
            Event::Changed { seq, .. } | Event::Reread { seq } => *seq,
        }
    }
}

/// The two kinds of change a subscription may follow.
pub trait Change: DeserializeOwned + sealed::Sealed {
    /// The name in `capabilities.experimental.stardust.notifications`.
    const NOTIFICATION: &'static str;
    /// The LSP notification's method.
    const METHOD: &'static str;
    /// The field holding the changes, in notifications and in `stardust.changes.since`.
    const FIELD: &'static str;
}

impl Change for EntityChange {
    const NOTIFICATION: &'static str = "entitiesChanged";
    const METHOD: &'static str = "stardust/entitiesChanged";
    const FIELD: &'static str = "entities";
}

impl Change for DocumentChange {
    const NOTIFICATION: &'static str = "documentsChanged";
    const METHOD: &'static str = "stardust/documentsChanged";
    const FIELD: &'static str = "documents";
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::EntityChange {}
    impl Sealed for super::DocumentChange {}
}

/// A blocking iterator of [`Event`]s in increasing `seq` order.
///
/// It holds a connection of its own. When the core goes away it connects again (starting a
/// core if its [`ConnectOptions`] allow) for up to `reconnect_timeout`, asks
/// `stardust.changes.since` for what changed after the last `seq` it yielded, and yields that
/// first, so that a restart of the core loses nothing. If no core comes back in time,
/// `next()` yields the error; calling `next()` again tries again.
pub struct Subscription<C: Change> {
    store: PathBuf,
    name: String,
    options: ConnectOptions,
    conn: Option<Conn>,
    /// The newest seq accounted for: events at or below it are not yielded again.
    last: u64,
    ready: VecDeque<Event<C>>,
    kind: PhantomData<C>,
}

impl<C: Change> std::fmt::Debug for Subscription<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("store", &self.store)
            .field("kind", &C::NOTIFICATION)
            .field("seq", &self.last)
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl<C: Change> Subscription<C> {
    /// Subscribe from `since`, or from the store's current seq.
    pub(crate) fn open(
        store: PathBuf,
        name: String,
        options: ConnectOptions,
        since: Option<u64>,
    ) -> Result<Subscription<C>> {
        let mut subscription = Subscription {
            store,
            name,
            options,
            conn: None,
            last: since.unwrap_or(0),
            ready: VecDeque::new(),
            kind: PhantomData,
        };
        let mut conn = subscription.connect()?;
        match since {
            Some(_) => subscription.catch_up(&mut conn)?,
            // Subscribed before reading the seq: whatever commits after it is notified.
            None => subscription.last = status_seq(&mut conn)?,
        }
        subscription.conn = Some(conn);
        Ok(subscription)
    }

    /// The newest seq this subscription has accounted for (yielded, or started from): give it
    /// to [`Client::subscribe_entities_since`](crate::Client::subscribe_entities_since) to
    /// resume in another process.
    pub fn seq(&self) -> u64 {
        self.last
    }

    fn connect(&self) -> Result<Conn> {
        Conn::open(&self.store, &self.name, &self.options, &[C::NOTIFICATION])
    }

    /// Reconnect, retrying until the core is back or `reconnect_timeout` passes.
    fn reconnect(&mut self) -> Result<()> {
        let deadline = Instant::now() + self.options.reconnect_timeout;
        loop {
            let attempt = self.connect().and_then(|mut conn| {
                self.catch_up(&mut conn)?;
                Ok(conn)
            });
            match attempt {
                Ok(conn) => {
                    self.conn = Some(conn);
                    return Ok(());
                }
                Err(err) if Instant::now() >= deadline => return Err(err),
                Err(_) => std::thread::sleep(Duration::from_millis(25)),
            }
        }
    }

    /// Queue what changed after `last`, page by page (`stardust.changes.since`).
    fn catch_up(&mut self, conn: &mut Conn) -> Result<()> {
        loop {
            let answer = conn.execute("stardust.changes.since", json!({"seq": self.last}))?;
            if answer["overflow"] == true {
                // The log does not reach back to `last`, or the store is behind it (restored
                // from a backup): either way, start again from the store's seq.
                let seq = seq_of(&answer)?;
                self.last = seq;
                self.ready.push_back(Event::Reread { seq });
                return Ok(());
            }
            let more = answer["more"] == true;
            self.accept(answer)?;
            if !more {
                return Ok(());
            }
        }
    }

    /// Queue the event in a notification or a `changes.since` answer, unless it is not newer
    /// than what was already accounted for.
    fn accept(&mut self, mut params: Value) -> Result<()> {
        let seq = seq_of(&params)?;
        if seq <= self.last {
            return Ok(());
        }
        self.last = seq;
        if params["overflow"] == true {
            self.ready.push_back(Event::Reread { seq });
            return Ok(());
        }
        let changes: Vec<C> = match params.get_mut(C::FIELD).map(Value::take) {
            Some(changes) => serde_json::from_value(changes).map_err(|err| {
                Error::Protocol(format!("{} that do not read as changes: {err}", C::FIELD))
            })?,
            None => Vec::new(),
        };
        // A catch-up that touched only the other kind moves `last` on and yields nothing.
        if !changes.is_empty() {
            self.ready.push_back(Event::Changed { seq, changes });
        }
        Ok(())
    }
}

impl<C: Change> Iterator for Subscription<C> {
    type Item = Result<Event<C>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            let Some(conn) = self.conn.as_mut() else {
                if let Err(err) = self.reconnect() {
                    return Some(Err(err));
                }
                continue;
            };
            match conn.notification() {
                Ok((method, params)) if method == C::METHOD => {
                    if let Err(err) = self.accept(params) {
                        return Some(Err(err));
                    }
                }
                Ok(_) => {}
                Err(err) if err.is_disconnect() => self.conn = None,
                Err(err) => return Some(Err(err)),
            }
        }
    }
}

fn seq_of(params: &Value) -> Result<u64> {
    params["seq"]
        .as_u64()
        .ok_or_else(|| Error::Protocol(format!("a change without a seq: {params}")))
}

/// The store's current seq.
pub(crate) fn status_seq(conn: &mut Conn) -> Result<u64> {
    let status = conn.execute("stardust.status", json!({}))?;
    status["seq"]
        .as_u64()
        .ok_or_else(|| Error::Protocol(format!("a status without a seq: {status}")))
}

//! The seam to a team store's database (SPEC §22): where the history of a store served by
//! several cores is decided and kept.
//!
//! With a remote, the database's transaction is the commit point: a commit is first appended
//! there, conditional on the database's head being the seq the core analysed (else `Behind`:
//! the core catches up and runs the save authority again), and only then written to this
//! machine's folder and log, which are a copy the remote can always rebuild. Cores hear of
//! each other's commits through [`Remote::wait`] (a wake-up only: what changed is always
//! read with [`Remote::since`]) and a bounded poll, so a lost wake-up delays, never loses.
//!
//! The trait knows no database: the PostgreSQL implementation lives in `stardust-pg` and the
//! binary installs it with [`install`]; core tests use an in-memory one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::error::StoreResult;
use super::txn::Transaction;

/// One transaction as the remote keeps it: its record and the new content of each document
/// it created or changed, in the record's document order (as the log stores them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shipped {
    pub transaction: Transaction,
    pub contents: Vec<Vec<u8>>,
}

/// What became of a conditional append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// The transaction is durable in the remote, as `seq`.
    Committed,
    /// Another core committed first: the remote's head is `head`; nothing was written.
    Behind { head: u64 },
}

/// A team store's database, as one core uses it. Every method may fail with
/// [`super::StoreError::Unavailable`] when the database cannot be reached; nothing is then
/// written.
pub trait Remote: Send + Sync + std::fmt::Debug {
    /// The seq of the last transaction committed to the remote.
    fn head(&self) -> StoreResult<u64>;

    /// The transactions after `seq`, oldest first, at most `limit` of them.
    fn since(&self, seq: u64, limit: usize) -> StoreResult<Vec<Shipped>>;

    /// Append `transaction` (with `contents` as in [`Shipped`]) if and only if the remote's
    /// head is `transaction.seq - 1`, atomically with the documents it changes, and wake the
    /// other cores.
    fn append(&self, transaction: &Transaction, contents: &[&[u8]]) -> StoreResult<Appended>;

    /// Keep every other core from committing until [`Remote::release`] (or until this core's
    /// connection ends), waiting for commits in flight: a core that lost the race to the
    /// head takes this before it catches up and tries again, so it cannot lose forever.
    fn reserve(&self) -> StoreResult<()> {
        Ok(())
    }

    /// End a [`Remote::reserve`].
    fn release(&self) {}

    /// Block until another core may have committed (`true`), or `timeout` passed (`false`).
    /// A wake-up carries no data and may be spurious or lost; callers read with `since`.
    fn wait(&self, timeout: Duration) -> bool;
}

/// Opens the remote a store's configuration names (its database URL).
pub type Connector = fn(url: &str) -> StoreResult<Arc<dyn Remote>>;

static CONNECTOR: OnceLock<Connector> = OnceLock::new();

/// Install the connector team stores open their database with (once per process; the
/// binary installs PostgreSQL's). Later calls are ignored.
pub fn install(connector: Connector) {
    let _ = CONNECTOR.set(connector);
}

/// The installed connector, if any.
pub(super) fn connector() -> Option<Connector> {
    CONNECTOR.get().copied()
}

/// How often a core reads the remote's head when no wake-up came: the bound on how late a
/// commit whose wake-up was lost is seen.
pub const POLL: Duration = Duration::from_secs(1);

/// How many transactions one read of the remote asks for while catching up.
pub(super) const PAGE: usize = 500;

/// How many times a commit is tried again after another core committed first (from the
/// second try on, with the head reserved: see [`Remote::reserve`]).
pub(super) const RETRIES: usize = 32;

/// A [`Remote::reserve`] held until dropped.
pub(super) struct Reserved<'a>(Option<&'a dyn Remote>);

impl<'a> Reserved<'a> {
    pub(super) fn none() -> Reserved<'a> {
        Reserved(None)
    }

    pub(super) fn take(remote: &'a dyn Remote) -> StoreResult<Reserved<'a>> {
        remote.reserve()?;
        Ok(Reserved(Some(remote)))
    }

    pub(super) fn is_held(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if let Some(remote) = self.0 {
            remote.release();
        }
    }
}

/// The remote a store's configuration names, connected; `None` for a folder store.
pub(super) fn open(config: &crate::config::Config) -> StoreResult<Option<Arc<dyn Remote>>> {
    if config.backend == crate::config::Backend::Folder {
        return Ok(None);
    }
    let url = config.backend.required_url()?;
    let connect = connector().ok_or_else(|| {
        crate::Error::Unsupported(
            "this program cannot open team stores (no PostgreSQL support was built in); use \
             the stardust binary"
                .to_owned(),
        )
    })?;
    connect(&url).map(Some)
}

/// The thread that takes in other cores' commits: woken by the remote, and polling it every
/// [`POLL`] in case a wake-up was lost.
pub(super) struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How long one wait for a wake-up lasts: the bound on how long dropping a store waits for
/// the thread.
const WAIT: Duration = Duration::from_millis(100);

impl Follower {
    pub(super) fn start(
        inner: Weak<super::Inner>,
        remote: Arc<dyn Remote>,
    ) -> StoreResult<Follower> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("stardust-follow".to_owned())
            .spawn(move || {
                let mut polled = Instant::now();
                while !stopping.load(Ordering::Relaxed) {
                    let woken = remote.wait(WAIT);
                    if stopping.load(Ordering::Relaxed) {
                        break;
                    }
                    if !woken && polled.elapsed() < POLL {
                        continue;
                    }
                    polled = Instant::now();
                    let Some(inner) = inner.upgrade() else { break };
                    inner.follow(woken);
                }
            })
            .map_err(|e| {
                super::StoreError::io("cannot start the thread that follows the database", e)
            })?;
        Ok(Follower { stop, thread: Some(thread) })
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

//! The transactional store: one writer applying changes in order, readers on immutable
//! snapshots, a checksummed transaction log, recovery, external edits and the change feed.
//!
//! A commit goes: check the paths -> take in any edit made on disk behind our back to the
//! touched documents -> check expected versions -> diagnose the store as it would be after
//! the change and refuse new problems whose code `[save] refuse` lists -> append the
//! transaction (with the new contents) to the log and sync it: the commit point, and the only
//! sync of a commit -> write each new content to a temporary file and rename it into place,
//! neither synced -> publish the new snapshot and notify subscribers. Any failure before the
//! commit point leaves nothing behind; a failure after it undoes the documents already
//! replaced and cuts the record from the log.
//!
//! Group commit: commits wait in a queue for the writer, and whoever holds it applies every
//! queued one in order, each on the state the one before left (its own seq and record), then
//! syncs the log once for all of them, and only then writes their files, publishes and answers
//! them. A lone commit finds only itself queued and the writer free: it waits for nothing
//! more than before. Commits arriving during a sync are grouped by the next holder.
//!
//! A checkpoint (see `checkpoint.rs`: in the background after the store is idle or after a
//! number of commits, on [`Store::close`] and on drop) syncs the documents written since the
//! last one and their folders, and only then appends an `applied` marker through the last seq.
//! The next open redoes every transaction after the last marker: each document the tail
//! touched is brought to its last logged state when the file holds one of the states the tail
//! took it through (temporary files are removed). A file holding none of them was edited after
//! the crash when the machine did not restart (the page cache kept every write), and is taken
//! in as an `external` edit; after a restart it may be a write the crash tore, so the logged
//! state wins and the bytes found are kept under `.stardust/recovered/<seq>/`. A transaction
//! through a marker is never redone, so an edit that later restores a document's old content
//! is not overwritten.
//!
//! Invariants:
//! - only the holder of the `writer` mutex writes documents or the log, so transactions are
//!   applied strictly in seq order and the snapshot always equals the last logged state;
//! - a snapshot is never mutated: readers clone the `Arc` and keep it as long as they like;
//! - the documents on disk equal the current snapshot except for edits not yet ingested,
//!   which the next commit touching them, the watcher, or the next open records as
//!   `external` transactions.

mod checkpoint;
mod compact;
mod error;
mod feed;
mod fsio;
mod history;
mod lock;
mod log;
mod paths;
pub mod projections;
mod reaper;
pub mod remote;
pub mod saves;
pub mod spare_writes;
mod time;
mod transfer;
mod txn;
mod watch;

use crate::sync;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, SystemTime};

use rayon::prelude::*;
use serde_json::Value;

use crate::analysis::{self, Analysis, Document, StoreContext};
use crate::scan;

pub use compact::Compaction;
pub use error::{StoreError, StoreResult};
pub use feed::{DocumentNotice, EntityNotice, Notice, Subscription};
pub use fsio::{FailHook, FailPoint, replace_file};
pub use history::{
    AtContent, EntityAt, FileChange, HistoryFilter, Revert, TreeEntry, set_indexing,
};
pub use log::{Damage, Verification};
pub use saves::{PathKind, REJECTED_DIR, is_scratch_name};
pub use time::rfc3339;
pub use transfer::Exported;
pub use txn::{ChangeKind, DocumentChange, Origin, Transaction, Version};
pub use watch::{FolderChange, FolderChangeKind, FolderWatch};

use feed::{Coalesced, Feed};
use fsio::Disk;
use lock::StoreLock;
use log::{Header, LogReader, LogWriter};

/// Stardust's private folder inside a store (its name belongs to `scan`, which keeps it out
/// of the documents).
pub use crate::scan::PRIVATE_DIR;

/// Where recovery keeps content it found in a document and overwrote, inside [`PRIVATE_DIR`].
pub const RECOVERED_DIR: &str = "recovered";

/// How to open a store.
#[derive(Clone)]
pub struct OpenOptions {
    /// Watch the store for edits made behind Stardust's back while it is open.
    pub watch: bool,
    /// How long the watched files must be quiet before their edits are taken in.
    pub debounce: Duration,
    /// A checkpoint runs once no commit came for this long (see the module doc).
    pub checkpoint_idle: Duration,
    /// A checkpoint runs after this many commits even if commits keep coming.
    pub checkpoint_every: u64,
    /// Makes chosen I/O steps fail, to test that failures leave nothing half-applied.
    #[doc(hidden)]
    pub fail: Option<FailHook>,
    /// Stands in for the kernel's boot id, so a test can open a store "after a restart".
    #[doc(hidden)]
    pub boot: Option<String>,
    /// The team store's database to use instead of the one `[store]` names (SPEC §22); for
    /// tests of the seam.
    #[doc(hidden)]
    pub remote: Option<Arc<dyn remote::Remote>>,
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            watch: true,
            debounce: Duration::from_millis(100),
            checkpoint_idle: checkpoint::IDLE,
            checkpoint_every: checkpoint::EVERY,
            fail: None,
            boot: None,
            remote: None,
        }
    }
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("watch", &self.watch)
            .field("debounce", &self.debounce)
            .field("checkpoint_idle", &self.checkpoint_idle)
            .field("checkpoint_every", &self.checkpoint_every)
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

/// The state of the store as of one transaction.
#[derive(Debug)]
pub struct Snapshot {
    /// The seq of the last transaction included (0 for a store with no history).
    pub seq: u64,
    pub analysis: Analysis,
}

impl Snapshot {
    /// The version of the document at `path`, if it exists.
    pub fn version(&self, path: &str) -> Option<Version> {
        self.analysis.document(path).and_then(|doc| doc.version.parse().ok())
    }
}

/// What to do to one document in a commit.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Op {
    /// Create the document or replace its content.
    Put(Vec<u8>),
    /// Create the document; a `conflict` if it exists.
    Create(Vec<u8>),
    /// Delete the document; `not-found` if it does not exist.
    Delete,
}

/// One document's change in a commit.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Change {
    /// Store-relative, `/`-separated.
    pub path: String,
    pub op: Op,
    /// The version the change was computed from; another current version is a `conflict`.
    pub expected: Option<Version>,
}

impl Change {
    pub fn put(path: impl Into<String>, content: impl Into<Vec<u8>>) -> Change {
        Change { path: path.into(), op: Op::Put(content.into()), expected: None }
    }

    pub fn create(path: impl Into<String>, content: impl Into<Vec<u8>>) -> Change {
        Change { path: path.into(), op: Op::Create(content.into()), expected: None }
    }

    pub fn delete(path: impl Into<String>) -> Change {
        Change { path: path.into(), op: Op::Delete, expected: None }
    }

    /// Require the document to be at `version` when the commit applies.
    pub fn expecting(mut self, version: Version) -> Change {
        self.expected = Some(version);
        self
    }
}

/// How the save authority treats a commit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Authority {
    /// The rule applies (SPEC §6, §24): a new problem in the store's data whose code
    /// `[save] refuse` lists refuses the change; the commit is durable before it returns.
    Guard,
    /// Recorded history coming back (a git operation in progress, SPEC §24): committed as an
    /// `external` transaction, never refused, and not synced, like every external record (a
    /// lost one is found again as a difference at the next open).
    History,
}

/// An analysis of a change set made on the snapshot at `seq`, for [`Store::commit_prepared`].
#[derive(Clone, Debug)]
pub struct Prepared {
    pub seq: u64,
    /// Each changed path with the version of its new content (`None`: deleted), in any order.
    pub changes: Vec<(String, Option<Version>)>,
    /// The snapshot's analysis with the changes applied.
    pub after: Analysis,
}

impl Prepared {
    fn matches(&self, effective: &[(String, Option<Vec<u8>>)]) -> bool {
        let mut mine: Vec<&(String, Option<Version>)> = self.changes.iter().collect();
        mine.sort_by(|a, b| a.0.cmp(&b.0));
        mine.len() == effective.len()
            && mine
                .iter()
                .zip(effective)
                .all(|(m, (path, bytes))| m.0 == *path && m.1 == bytes.as_deref().map(Version::of))
    }
}

/// The outcome of a successful commit.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Committed {
    /// The seq the store is at after the commit.
    pub seq: u64,
    /// The transaction recorded; `None` when every change left its document as it was.
    pub transaction: Option<Transaction>,
}

/// A page of what changed after a seq, for a client resuming after a disconnect.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ChangesSince {
    /// Coalesced changes of the transactions after the asked seq, through `seq`. With `more`,
    /// ask again from `seq` for the rest.
    Changes { seq: u64, documents: Vec<DocumentNotice>, entities: Vec<EntityNotice>, more: bool },
    /// The log does not reach back to the asked seq: re-read the current state (as of `seq`).
    Overflow { seq: u64 },
}

/// An open store, owned exclusively by this process until dropped.
pub struct Store {
    inner: Arc<Inner>,
    watcher: Option<watch::Watcher>,
    checkpointer: Option<checkpoint::Thread>,
    /// Follows a team store's database: takes in other cores' commits.
    follower: Option<remote::Follower>,
    /// Set by [`Store::abandon`]: drop without the final checkpoint.
    abandoned: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("root", &self.inner.root).finish_non_exhaustive()
    }
}

struct Inner {
    root: PathBuf,
    disk: Disk,
    /// Plain files written whole through the mount (`spare_writes`).
    spare_writes: spare_writes::SpareWrites,
    log_path: PathBuf,
    writer: Mutex<Writer>,
    current: RwLock<Arc<Snapshot>>,
    /// The log offset of each transaction record, and the seqs that touched each path and
    /// entity (SPEC §26).
    history: RwLock<history::History>,
    feed: Feed,
    /// The kernel's boot id, written into `applied` markers.
    boot: Option<String>,
    /// Tells the checkpoint thread about commits.
    trigger: Arc<checkpoint::Trigger>,
    /// One checkpoint at a time.
    checkpointing: Mutex<()>,
    /// Frees each replaced snapshot, with the files the commits up to it replaced.
    reaper: reaper::Reaper<(Arc<Snapshot>, Vec<fsio::Buried>)>,
    /// A team store's database (SPEC §22): the commit point, before this folder's log.
    remote: Option<Arc<dyn remote::Remote>>,
    /// Which files are code files for saves made as file operations, and the language
    /// servers' `code-error` rule for them (SPEC §18), installed by the service.
    code_saves: RwLock<Option<Arc<dyn saves::CodeSaves>>>,
    /// The latest refused saves made as file operations, for `stardust.status` (SPEC §24: a
    /// refused save of data is never silent).
    refusals: Mutex<std::collections::VecDeque<saves::KeptRefusal>>,
    /// The head when the log was last compacted (or the store opened): checkpoints compact
    /// again once enough was committed since (`compact.rs`).
    compacted_at: std::sync::atomic::AtomicU64,
    /// Commits waiting for the writer; the next holder applies them all (group commit).
    queue: Mutex<std::collections::VecDeque<(Request, Answer)>>,
    /// How many times commits synced the log (their commit points), for tests of group
    /// commit.
    log_syncs: std::sync::atomic::AtomicU64,
}

/// A commit waiting for the writer (group commit, [`Inner::commit_grouped`]).
struct Request {
    origin: Origin,
    changes: Vec<Change>,
    prepared: Option<Prepared>,
    /// The code files among the changes (their versions are read from disk when planned).
    code: HashMap<String, Option<Version>>,
    authority: Authority,
}

/// Where a queued commit's outcome is left for the thread that asked.
type Answer = Arc<Mutex<Option<StoreResult<Committed>>>>;

/// At most this many transactions are applied between two syncs, so the first of a long
/// burst is not kept waiting for the whole of it.
const BATCH_MAX: usize = 256;

/// A request decided on top of the writer's head.
enum Plan {
    /// Nothing to write (every change left its document as it was).
    Done(Committed),
    /// The transaction to append, then write.
    Write(Planned),
    /// It found an edit made on disk behind the store's back while not first in its batch:
    /// it goes first in the next one.
    Later(Request),
}

struct Planned {
    txn: Transaction,
    /// Each changed path's new content (`None`: deleted), in path order.
    effective: Vec<(String, Option<Vec<u8>>)>,
    /// What each path held before, to put back if writing fails.
    previous: HashMap<String, Option<Vec<u8>>>,
    /// The state after the transaction.
    snapshot: Arc<Snapshot>,
    /// Whether it must be durable before it is acknowledged.
    durable: bool,
}

/// When an appended record is synced.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LogSync {
    /// Before the append returns.
    Now,
    /// By the batch's one sync after its last append.
    Later,
    /// Not by the commit (a checkpoint or the next sync carries it).
    No,
}

struct Writer {
    log: LogWriter,
    /// The documents Stardust wrote (or removed) since the last checkpoint took the set.
    dirty: std::collections::BTreeSet<String>,
    /// The seq of the last `applied` marker in the log.
    applied: u64,
    /// Set when a failed commit could not be undone; every later write is refused.
    poisoned: Option<String>,
    /// Set by [`Store::close`]: the process is stopping and takes no more commits.
    closed: bool,
    lock: StoreLock,
}

impl Store {
    /// Open the store at `root`: take its lock, recover the log, take in external edits, and
    /// (by default) start watching for more.
    pub fn open(root: &Path, options: OpenOptions) -> StoreResult<Store> {
        let root = std::fs::canonicalize(root).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                StoreError::Core(crate::Error::InvalidArguments(format!(
                    "there is no store at {}; give the path of a store's root folder",
                    root.display()
                )))
            }
            _ => StoreError::io(format!("cannot open the store {}", root.display()), e),
        })?;
        let ctx = Arc::new(StoreContext::load(&root)?);
        let private = make_private(&root)?;
        let lock = StoreLock::acquire(&root, &private)?;
        let log_path = private.join("log").join(log::LOG_FILE);
        // A compaction a crash interrupted before its rename: the log is whole without it.
        compact::remove_stale(&log_path)?;
        let disk = Disk::new(root.clone(), options.fail.clone());
        // Under the lock, before recovery writes anything.
        disk.clear_replaced();
        let boot = options.boot.clone().or_else(checkpoint::boot_id);
        let remote = match options.remote.clone() {
            Some(remote) => Some(remote),
            None => remote::open(&ctx.config)?,
        };
        if remote.is_some() {
            disk.rename_over();
        }
        let (writer, snapshot, offsets, found, restarted) =
            recover(&root, &ctx, &disk, &log_path, boot.as_deref(), lock, remote.is_some())?;
        let snapshot_seq = snapshot.seq;
        let mut database = 0;
        if let Some(remote) = &remote {
            database = remote.head()?;
            if database < snapshot.seq {
                return Err(StoreError::RemoteBehind {
                    store: root.clone(),
                    database,
                    local: snapshot.seq,
                });
            }
        }
        // The reaper also makes the spare files commits write into (fsio::Spare), from the
        // first commit on: the first replaces through a temporary sibling.
        let reaper = reaper::Reaper::start({
            let disk = disk.clone();
            move || disk.restock()
        })?;
        let spare_writes = spare_writes::SpareWrites::new(root.clone(), disk.replaced_usable());
        let inner = Arc::new(Inner {
            root: root.clone(),
            disk,
            spare_writes,
            log_path,
            writer: Mutex::new(writer),
            current: RwLock::new(Arc::new(snapshot)),
            history: RwLock::new(offsets),
            feed: Feed::default(),
            boot,
            trigger: Arc::new(checkpoint::Trigger::new(options.checkpoint_every)),
            checkpointing: Mutex::new(()),
            reaper,
            remote,
            code_saves: RwLock::new(None),
            refusals: Mutex::default(),
            compacted_at: std::sync::atomic::AtomicU64::new(snapshot_seq),
            queue: Mutex::default(),
            log_syncs: std::sync::atomic::AtomicU64::new(0),
        });
        if inner.remote.is_none() {
            // `[history] keep` (SPEC §26): before anything reads the history.
            let mut writer = inner.writer()?;
            inner.compact_locked(&mut writer)?;
        }
        if inner.remote.is_some() {
            let mut writer = inner.writer()?;
            if snapshot_seq == 0 && database > 0 {
                // A copy that never had the database's history: what its folder held is no
                // edit of that history, so it is moved aside and the history written anew.
                inner.set_aside(database, found)?;
                inner.catch_up_locked(&mut writer)?;
            } else {
                // Other cores' commits first, then what was edited here while no core ran,
                // on top (external edits are history, never refused: nothing is lost).
                let (_, lost) = inner.catch_up_after(&mut writer, restarted)?;
                let mut found = found;
                found.retain(|(path, _)| !lost.contains(path));
                inner.ingest_locked(&mut writer, found)?;
            }
        }
        let follower = match &inner.remote {
            Some(remote) => Some(remote::Follower::start(Arc::downgrade(&inner), remote.clone())?),
            None => None,
        };
        let watcher = if options.watch {
            Some(watch::Watcher::start(Arc::downgrade(&inner), &root, options.debounce)?)
        } else {
            None
        };
        let checkpointer = Some(checkpoint::Thread::start(
            Arc::downgrade(&inner),
            inner.trigger.clone(),
            options.checkpoint_idle,
        )?);
        Ok(Store { inner, watcher, checkpointer, follower, abandoned: false })
    }

    /// The store's root folder (canonical).
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The spares plain files opened through the mount with `O_TRUNC`, or created, are
    /// written into (SPEC §24: never a half file).
    pub fn spare_writes(&self) -> &spare_writes::SpareWrites {
        &self.inner.spare_writes
    }

    /// The current snapshot. Never waits for a commit in progress.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.snapshot()
    }

    /// Apply `changes` as one transaction, all or nothing.
    pub fn commit(&self, origin: Origin, changes: Vec<Change>) -> StoreResult<Committed> {
        self.commit_prepared(origin, changes, None)
    }

    /// [`Store::commit`], reusing the analysis a caller already made of exactly these changes
    /// on the current snapshot (a preview's). It is used only if nothing was committed since
    /// and the changes are the same; the save authority's rule runs either way.
    pub fn commit_prepared(
        &self,
        origin: Origin,
        changes: Vec<Change>,
        prepared: Option<Prepared>,
    ) -> StoreResult<Committed> {
        if origin == Origin::External {
            return Err(StoreError::InvalidArguments(
                "the origin 'external' is reserved for edits Stardust finds on disk; name the \
                 client making the change"
                    .to_owned(),
            ));
        }
        // A change of a derived file (SPEC §19) is a change of the document it derives from.
        let changes = if changes.iter().any(|c| projections::area(&c.path).is_some()) {
            projections::translate(&self.snapshot().analysis, changes)?
        } else {
            changes
        };
        // What a git operation writes through the mount is history coming back (SPEC §24).
        let authority = if origin == Origin::Mount && saves::git_operation(&self.inner.root) {
            Authority::History
        } else {
            Authority::Guard
        };
        self.inner.commit(origin, changes, prepared, authority)
    }

    /// Compare every document on disk with the current snapshot and record the differences as
    /// one `external` transaction. The watcher does this for the files it sees change; this is
    /// for when events may have been missed.
    pub fn rescan(&self) -> StoreResult<Option<Transaction>> {
        self.inner.rescan()
    }

    /// Wait for the commit in flight, if any, and refuse every later one (`busy`): for a
    /// process that is stopping. Then checkpoint, so the next open has nothing to redo. Reads
    /// keep working.
    pub fn close(&self) {
        sync::lock(&self.inner.writer).closed = true;
        if let Err(err) = self.inner.checkpoint() {
            tracing::warn!("{err}");
        }
    }

    /// Make every document written so far durable and mark its transactions applied, so a
    /// crash from now on has nothing of them to redo. Returns the seq applied through.
    /// Commits never need this for durability (their log record is synced); it bounds what
    /// the next open redoes.
    pub fn checkpoint(&self) -> StoreResult<u64> {
        self.inner.checkpoint()
    }

    /// Drop the log's contents that `[history] keep` no longer keeps (SPEC §26), now rather
    /// than at the next open or checkpoint that finds enough to drop. Every transaction's
    /// record stays. `None` when there was nothing to drop.
    pub fn compact(&self) -> StoreResult<Option<Compaction>> {
        let mut writer = self.inner.writer()?;
        self.inner.compact_locked(&mut writer)
    }

    /// How many times commits have synced the log since the store opened: once per durable
    /// commit, or once for a group of them (group commit). For tests.
    #[doc(hidden)]
    pub fn log_syncs(&self) -> u64 {
        self.inner.log_syncs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many commits are waiting for the writer (group commit). For tests.
    #[doc(hidden)]
    pub fn queued_commits(&self) -> usize {
        sync::lock(&self.inner.queue).len()
    }

    /// Let the store go as a crash would: no final checkpoint, so the next open redoes what
    /// was written since the last one. For crash tests.
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.abandoned = true;
    }

    /// Every change the watcher sees in the store's folder, raw and at once, for fronts that
    /// cache what the folder holds; `None` when the store is not watched.
    pub fn folder_watch(&self) -> Option<FolderWatch> {
        self.watcher.as_ref().map(watch::Watcher::folder)
    }

    /// Receive the changes of every transaction committed from now on.
    pub fn subscribe(&self) -> Subscription {
        self.inner.feed.subscribe(self.inner.ctx().config.max_pending)
    }

    /// What changed after `since`, coalesced, over at most about `limit` entries (a single
    /// transaction is never split).
    pub fn changes_since(&self, since: u64, limit: usize) -> StoreResult<ChangesSince> {
        self.inner.changes_since(since, limit)
    }

    /// The transactions after `since`, at most `limit` of them, oldest first.
    pub fn transactions(&self, since: u64, limit: usize) -> StoreResult<Vec<Transaction>> {
        let head = self.snapshot().seq;
        if since >= head {
            return Ok(Vec::new());
        }
        let (start, file) = self.inner.record_at(since + 1)?;
        let Some(file) = file else { return Ok(Vec::new()) };
        read_transactions(&self.inner.log_path, Some(file), start, since, head, limit)
    }
}

/// A store of `files` (store-relative path, text) in a new folder, opened without the
/// watcher: for the store's unit tests.
#[cfg(test)]
pub(crate) fn test_store(files: &[(&str, &str)]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let store =
        Store::open(dir.path(), OpenOptions { watch: false, ..OpenOptions::default() }).unwrap();
    (dir, store)
}

impl Drop for Store {
    fn drop(&mut self) {
        // Stop taking in watched edits and checkpointing in the background before the lock
        // goes, make the documents durable, then release waiting readers.
        self.watcher.take();
        self.checkpointer.take();
        self.follower.take();
        if !self.abandoned
            && let Err(err) = self.inner.checkpoint()
        {
            tracing::warn!("{err}");
        }
        self.inner.feed.close();
    }
}

/// Read the transactions after `since` from the log of the store at `root` without opening
/// the store (no lock is taken, nothing is recovered or recorded), e.g. while another process
/// owns it. A record being appended at the end is not listed.
pub fn read_log(root: &Path, since: u64, limit: usize) -> StoreResult<Vec<Transaction>> {
    let path = root.join(PRIVATE_DIR).join("log").join(log::LOG_FILE);
    read_transactions(&path, None, None, since, u64::MAX, limit)
}

/// Check every record of the log of the store at `root`, changing nothing.
pub fn verify_log(root: &Path) -> StoreResult<Verification> {
    let path = root.join(PRIVATE_DIR).join("log").join(log::LOG_FILE);
    log::verify(&path).map_err(|e| StoreError::io(format!("cannot read {}", path.display()), e))
}

fn read_transactions(
    path: &Path,
    file: Option<std::fs::File>,
    start: Option<u64>,
    since: u64,
    head: u64,
    limit: usize,
) -> StoreResult<Vec<Transaction>> {
    let context = || format!("cannot read the transaction log {}", path.display());
    let opened = match file {
        Some(file) => LogReader::of(file).map(Some),
        None => LogReader::open(path),
    };
    let Some(mut reader) = opened.map_err(|e| StoreError::io(context(), e))? else {
        return Ok(Vec::new());
    };
    if let Some(offset) = start {
        reader.seek(offset, since + 1).map_err(|e| StoreError::io(context(), e))?;
    }
    let mut out = Vec::new();
    while out.len() < limit {
        match reader.next_record() {
            Ok(Some(record)) => {
                if let Header::Transaction { transaction, .. } = record.header {
                    if transaction.seq > head {
                        break;
                    }
                    if transaction.seq > since {
                        out.push(transaction);
                    }
                }
            }
            Ok(None) => break,
            // An unfinished record at the end is an append in progress (or a torn tail that
            // the next open truncates); damage before it is reported.
            Err(damage) if !damage.in_middle => break,
            Err(damage) => return Err(corrupt(path, damage)),
        }
    }
    Ok(out)
}

fn corrupt(log: &Path, damage: Damage) -> StoreError {
    let store = log.ancestors().nth(3).unwrap_or(log).to_owned();
    StoreError::LogCorrupt {
        log: log.to_owned(),
        store,
        seq: damage.seq,
        offset: damage.offset,
        reason: damage.reason,
    }
}

/// Read the log, finish the transactions written since the last checkpoint, and record what
/// changed on disk since.
fn recover(
    root: &Path,
    ctx: &Arc<StoreContext>,
    disk: &Disk,
    log_path: &Path,
    boot: Option<&str>,
    lock: StoreLock,
    remote: bool,
) -> StoreResult<(Writer, Snapshot, history::History, Found, bool)> {
    let io = |what: &str, e| StoreError::io(format!("{what} {}", log_path.display()), e);
    let LogState { logged, offsets: mut history, tail, applied, tail_boot, valid_len, last_seq } =
        read_log_state(log_path)?;
    let mut log = LogWriter::open(log_path, valid_len).map_err(|e| io("cannot open", e))?;

    let (mut on_disk, unreadable) = read_documents(root, ctx, disk)?;
    // Code files the unfinished tail wrote are redone like documents, so they are read too;
    // after that they leave `on_disk`, which becomes the analysis.
    let mut code: Vec<String> = tail
        .iter()
        .flat_map(|txn| &txn.documents)
        .filter(|doc| !scan::is_document_path(&ctx.config, &doc.path))
        .map(|doc| doc.path.clone())
        .collect();
    code.sort();
    code.dedup();
    for path in &code {
        if let Some(bytes) = disk.read(path)? {
            on_disk.insert(path.clone(), bytes);
        }
    }
    let restarted = boot.is_none() || tail_boot.as_deref() != boot;
    redo_tail(root, disk, log_path, &tail, &logged, &unreadable, restarted, &mut on_disk)?;
    for path in &code {
        on_disk.remove(path);
    }
    // A document that cannot be read is taken to be as last logged rather than deleted.
    on_disk.extend(logged_contents(log_path, &unreadable, &logged)?);

    // A team store's external edits are committed to its database once the store is open,
    // after the other cores' commits (see `Store::open`); a folder store records them here.
    let (analysis, seq, found) = if remote {
        let (before, found) = external_changes(ctx, log_path, &logged, on_disk)?;
        (before, last_seq, found)
    } else {
        let (analysis, seq) =
            record_external(ctx, log_path, &mut log, &logged, on_disk, last_seq, &mut history)?;
        (analysis, seq, Vec::new())
    };
    // The tail is durable now, and an external record writes no document. The marker also
    // names this boot, which the writes from now on belong to, so it must be durable before
    // them: it is, because each of them follows the sync of its own later record in the same
    // file. So neither record is synced here, where the first history can be tens of MB. A
    // lost external record is harmless (the next open finds the same differences and records
    // them again) and a lost marker only means more to redo; a background sync bounds how long
    // they stay in the page cache, and keeps that cost off the first commit.
    let marked = applied != seq || tail_boot.as_deref() != boot;
    if marked {
        log.append(&log::encode_applied(seq, boot), false)
            .map_err(|e| io("cannot append to", e))?;
    }
    if marked || seq != last_seq {
        log.sync_in_background();
    }
    let writer = Writer {
        log,
        dirty: Default::default(),
        applied: seq,
        poisoned: None,
        closed: false,
        lock,
    };
    Ok((writer, Snapshot { seq, analysis }, history, found, restarted))
}

/// Documents found on disk that differ from the last logged state: each path with what it
/// holds (`None`: gone).
type Found = Vec<(String, Option<Vec<u8>>)>;

/// Add to `found` (every document there is) each document of `analysis` it lacks, as gone.
fn add_deletions(analysis: &Analysis, found: &mut Found) {
    let present: std::collections::HashSet<&str> =
        found.iter().map(|(path, _)| path.as_str()).collect();
    let gone: Vec<String> = analysis
        .documents()
        .filter(|doc| !present.contains(doc.path.as_str()))
        .map(|doc| doc.path.clone())
        .collect();
    found.extend(gone.into_iter().map(|path| (path, None)));
}

/// What the log says at open.
struct LogState {
    /// The last logged state: each document's version and the record holding its content.
    logged: HashMap<String, Logged>,
    /// The offset of every transaction record, and the seqs that touched each path and entity.
    offsets: history::History,
    /// The transactions after the last `applied` marker.
    tail: Vec<Transaction>,
    /// The seq of the last `applied` marker.
    applied: u64,
    /// The boot that wrote the last marker (the boot of every write after it: each open
    /// marks the log before it writes).
    tail_boot: Option<String>,
    /// The length of the log up to its last whole record.
    valid_len: u64,
    last_seq: u64,
}

/// Read the whole log. A torn last record is dropped (it was never acknowledged); damage in
/// the middle refuses to open, naming where.
fn read_log_state(log_path: &Path) -> StoreResult<LogState> {
    let mut state = LogState {
        logged: HashMap::new(),
        offsets: history::History::default(),
        tail: Vec::new(),
        applied: 0,
        tail_boot: None,
        valid_len: 0,
        last_seq: 0,
    };
    let opened = LogReader::open(log_path)
        .map_err(|e| StoreError::io(format!("cannot read {}", log_path.display()), e))?;
    let Some(mut reader) = opened else { return Ok(state) };
    loop {
        match reader.next_record() {
            Ok(Some(record)) => match record.header {
                Header::Transaction { transaction, dropped, shared, .. } => {
                    state.offsets.push_record(record.offset, &transaction, &dropped, &shared);
                    for doc in &transaction.documents {
                        match doc.after {
                            Some(version) => {
                                // A shared content is read from the record that holds it.
                                let (offset, seq) = match shared.get(&doc.path) {
                                    Some(&holder) => {
                                        let offset = state.offsets.offset(holder);
                                        (
                                            offset.expect("the log checked the seq is earlier"),
                                            holder,
                                        )
                                    }
                                    None => (record.offset, transaction.seq),
                                };
                                let at = Logged { version, offset, seq };
                                state.logged.insert(doc.path.clone(), at);
                            }
                            None => {
                                state.logged.remove(&doc.path);
                            }
                        }
                    }
                    state.tail.push(transaction);
                }
                Header::Applied { seq, boot } => {
                    state.applied = seq;
                    state.tail_boot = boot;
                    state.tail.retain(|t| t.seq > seq);
                }
            },
            Ok(None) => break,
            Err(damage) if damage.in_middle => return Err(corrupt(log_path, damage)),
            Err(damage) => {
                tracing::warn!(
                    "the transaction log ends with an unfinished record at byte {} ({}); \
                     dropping it (it was never acknowledged)",
                    damage.offset,
                    damage.reason
                );
                break;
            }
        }
    }
    state.valid_len = reader.offset();
    state.last_seq = reader.last_seq();
    Ok(state)
}

/// Make the store's private folder with its log folder, and the `.gitignore` that keeps git
/// from listing it (SPEC §24: `git add -A` would stage the log). Returns the folder.
fn make_private(root: &Path) -> StoreResult<PathBuf> {
    let private = root.join(PRIVATE_DIR);
    let log_dir = private.join("log");
    std::fs::create_dir_all(&log_dir)
        .map_err(|e| StoreError::io(format!("cannot create {}", log_dir.display()), e))?;
    let ignore = private.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, "# Stardust's private state: never committed.\n*\n")
            .map_err(|e| StoreError::io(format!("cannot write {}", ignore.display()), e))?;
    }
    Ok(private)
}

/// Documents by store-relative path, with their content.
type Contents = HashMap<String, Vec<u8>>;

/// The documents on disk now, and the paths of those that could not be read.
fn read_documents(
    root: &Path,
    ctx: &StoreContext,
    disk: &Disk,
) -> StoreResult<(Contents, Vec<String>)> {
    let files = scan::documents(root, &ctx.config)?;
    let results = scan::read_many(&files, |(rel, abs)| disk.read_at(rel, abs));
    let mut on_disk: Contents = HashMap::with_capacity(files.len());
    let mut unreadable: Vec<String> = Vec::new();
    for ((rel, _), result) in files.into_iter().zip(results) {
        match result {
            Ok(Some(bytes)) => {
                on_disk.insert(rel, bytes);
            }
            // Gone between the scan and the read.
            Ok(None) => {}
            Err(err) => {
                tracing::warn!("cannot read {rel}; treating it as unchanged: {err}");
                unreadable.push(rel);
            }
        }
    }
    Ok((on_disk, unreadable))
}

/// Analyse the documents as they are (`on_disk`, after redoing the tail), recording what
/// differs from the last logged state as one external transaction (not synced: see
/// `recover`). Returns the analysis and the store's seq.
fn record_external(
    ctx: &Arc<StoreContext>,
    log_path: &Path,
    log: &mut LogWriter,
    logged: &HashMap<String, Logged>,
    on_disk: Contents,
    last_seq: u64,
    offsets: &mut history::History,
) -> StoreResult<(Analysis, u64)> {
    let (before, changes) = external_changes(ctx, log_path, logged, on_disk)?;
    if changes.is_empty() {
        return Ok((before, last_seq));
    }
    let after = if before.document_count() == 0 {
        // The first history: analysing from scratch beats applying every document as a
        // change.
        let docs = changes.iter().filter_map(|(path, c)| Some((path.clone(), c.clone()?)));
        Analysis::new(ctx.clone(), docs.collect())
    } else {
        before.with_changes(changes.clone())
    };
    let seq = last_seq + 1;
    let txn = transaction(seq, Origin::External, &before, &after, &changes, &HashMap::new());
    let offset = log
        .append(&log::encode_transaction(&txn, &contents(&changes)), false)
        .map_err(|e| StoreError::io(format!("cannot append to {}", log_path.display()), e))?;
    offsets.push(offset, &txn);
    let n = txn.documents.len();
    let s = if n == 1 { "" } else { "s" };
    if logged.is_empty() && last_seq == 0 {
        tracing::info!("history starts: recorded the store's {n} document{s} as seq {seq}");
    } else {
        tracing::info!("recorded {n} document{s} changed outside Stardust as seq {seq}");
    }
    Ok((after, seq))
}

/// The analysis of the documents as last logged, and the documents on disk (`on_disk`) that
/// differ from it, sorted by path.
fn external_changes(
    ctx: &Arc<StoreContext>,
    log_path: &Path,
    logged: &HashMap<String, Logged>,
    mut on_disk: Contents,
) -> StoreResult<(Analysis, Found)> {
    // The log also names code files Stardust wrote; what happens to them outside Stardust is
    // not history (docs/DECISIONS.md), so only documents are compared.
    let mut changed: Vec<String> = logged
        .iter()
        .filter(|(path, _)| scan::is_document_path(&ctx.config, path))
        .filter(|(path, at)| on_disk.get(*path).map(|b| Version::of(b)) != Some(at.version))
        .map(|(path, _)| path.clone())
        .chain(on_disk.keys().filter(|path| !logged.contains_key(*path)).cloned())
        .collect();
    changed.sort();
    let changes: Vec<(String, Option<Vec<u8>>)> =
        changed.iter().map(|path| (path.clone(), on_disk.remove(path))).collect();
    // What is left on disk is exactly the documents as last logged.
    let mut before_docs: Vec<(String, Vec<u8>)> = on_disk.into_iter().collect();
    before_docs.extend(logged_contents(log_path, &changed, logged)?);
    let before = Analysis::new(ctx.clone(), before_docs);
    Ok((before, changes))
}

/// Bring each document the unmarked `tail` touched to its last logged state, and make the
/// tail's writes durable. `on_disk` is updated to what the documents then hold.
///
/// A document holding one of the states the tail took it through is redone. One holding none
/// of them was edited after the crash, unless the machine `restarted`: then the file may hold
/// a write the crash tore, so it is redone too and the bytes found are kept aside.
#[allow(clippy::too_many_arguments)]
fn redo_tail(
    root: &Path,
    disk: &Disk,
    log_path: &Path,
    tail: &[Transaction],
    logged: &HashMap<String, Logged>,
    unreadable: &[String],
    restarted: bool,
    on_disk: &mut HashMap<String, Vec<u8>>,
) -> StoreResult<()> {
    // Each touched document's states in order (before the tail, then after each transaction),
    // the last seq that touched it, and whether Stardust wrote it in the tail.
    let mut states: BTreeMap<&str, (Vec<Option<Version>>, u64, bool)> = BTreeMap::new();
    for txn in tail {
        for doc in &txn.documents {
            let entry = states.entry(&doc.path).or_insert_with(|| (vec![doc.before], 0, false));
            entry.0.push(doc.after);
            entry.1 = txn.seq;
            entry.2 |= txn.origin != Origin::External;
        }
    }
    let mut redo: Vec<(&str, u64)> = Vec::new();
    for (path, (known, seq, ours)) in &states {
        disk.remove_stale_temp(path);
        // Only Stardust's own writes can be unfinished or torn: a document that only external
        // records name holds what its editor left, taken in below if it changed again.
        if !ours || unreadable.iter().any(|p| p == path) {
            continue;
        }
        let now = on_disk.get(*path).map(|b| Version::of(b));
        if Some(&now) == known.last() {
            continue;
        }
        if !known.contains(&now) {
            if !restarted {
                // Taken in below as an `external` edit.
                continue;
            }
            let kept = match on_disk.get(*path) {
                Some(bytes) => {
                    let kept = keep_recovered(root, *seq, path, bytes).map_err(|e| {
                        StoreError::io(format!("cannot keep the unknown content of {path}"), e)
                    })?;
                    format!("; the bytes found are kept at {}", kept.display())
                }
                None => String::new(),
            };
            tracing::warn!(
                "{path} holds none of the states logged since the last checkpoint and the \
                 machine restarted since they were written, so the crash may have torn it: \
                 writing it as of seq {seq}{kept}"
            );
        }
        redo.push((path, *seq));
    }
    let paths: Vec<String> = redo.iter().map(|(path, _)| (*path).to_owned()).collect();
    let contents = logged_contents(log_path, &paths, logged)?;
    for (path, seq) in redo {
        let result = match contents.get(path) {
            Some(content) => disk.write(path, content).map(|()| {
                on_disk.insert(path.to_owned(), content.clone());
            }),
            None => disk.remove(path).map(|()| {
                on_disk.remove(path);
            }),
        };
        result
            .map_err(|e| StoreError::io(format!("cannot finish seq {seq} by writing {path}"), e))?;
        tracing::info!("finished the interrupted seq {seq}: wrote {path}");
    }
    // Stardust's own writes of the tail may have landed without being synced.
    let written = tail
        .iter()
        .filter(|t| t.origin != Origin::External)
        .flat_map(|t| t.documents.iter().map(|d| d.path.as_str()));
    let written: std::collections::BTreeSet<&str> = written.collect();
    disk.sync_documents(written).map_err(|e| {
        StoreError::io("cannot make the documents of the last transactions durable", e)
    })
}

/// Keep bytes recovery is about to overwrite at `.stardust/recovered/<seq>/<path>`, durably.
fn keep_recovered(root: &Path, seq: u64, path: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let target = root.join(PRIVATE_DIR).join(RECOVERED_DIR).join(seq.to_string()).join(path);
    let dir = target.parent().expect("a kept path has a folder");
    std::fs::create_dir_all(dir)?;
    let mut file = std::fs::File::create(&target)?;
    std::io::Write::write_all(&mut file, bytes)?;
    file.sync_all()?;
    fsio::sync_dir(dir)?;
    Ok(target)
}

/// Where the last logged content of a document is.
struct Logged {
    version: Version,
    offset: u64,
    seq: u64,
}

/// The last logged content of each of `paths` that the log has, read from its records.
fn logged_contents(
    log_path: &Path,
    paths: &[String],
    logged: &HashMap<String, Logged>,
) -> StoreResult<HashMap<String, Vec<u8>>> {
    let mut by_record: BTreeMap<(u64, u64), Vec<&str>> = BTreeMap::new();
    for path in paths {
        if let Some(at) = logged.get(path) {
            by_record.entry((at.offset, at.seq)).or_default().push(path);
        }
    }
    let mut out = HashMap::new();
    for ((offset, seq), wanted) in by_record {
        let io = |e| StoreError::io(format!("cannot read {}", log_path.display()), e);
        let mut reader = LogReader::open(log_path).map_err(io)?.ok_or_else(|| {
            io(std::io::Error::new(std::io::ErrorKind::NotFound, "the log disappeared"))
        })?;
        reader.seek(offset, seq).map_err(io)?;
        let record = reader.next_record().map_err(|d| corrupt(log_path, d))?.ok_or_else(|| {
            io(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "a record disappeared"))
        })?;
        let contents = record.contents().map_err(io)?;
        for (path, content) in contents {
            if wanted.contains(&path) {
                out.insert(path.to_owned(), content.to_vec());
            }
        }
        // Compaction never drops a last logged content; if a record lacks one, the log is
        // damaged, and taking the document for deleted would lose it.
        if let Some(path) = wanted.iter().find(|p| !out.contains_key(**p)) {
            return Err(corrupt(
                log_path,
                Damage {
                    offset,
                    seq,
                    reason: format!("the record has no content for {path}, its last logged state"),
                    in_middle: true,
                },
            ));
        }
    }
    Ok(out)
}

/// Build the transaction `seq` for `changes` (each path once, sorted) taking `before` to
/// `after`.
fn transaction(
    seq: u64,
    origin: Origin,
    before: &Analysis,
    after: &Analysis,
    changes: &[(String, Option<Vec<u8>>)],
    code: &HashMap<String, Option<Version>>,
) -> Transaction {
    let documents = changes
        .iter()
        .map(|(path, content)| {
            if let Some(on_disk) = code.get(path) {
                return DocumentChange {
                    path: path.clone(),
                    before: *on_disk,
                    after: content.as_deref().map(Version::of),
                    created: Vec::new(),
                    changed: Vec::new(),
                    deleted: Vec::new(),
                };
            }
            let old = before.document(path);
            let new = after.document(path);
            let (created, changed, deleted) = entity_diff(old.map(|d| &**d), new.map(|d| &**d));
            DocumentChange {
                path: path.clone(),
                before: old.and_then(|d| d.version.parse().ok()),
                // The analysis hashed the same bytes: hashing tens of MB again is the first
                // history's cost, not a check.
                after: content.as_deref().map(|c| {
                    let version =
                        new.and_then(|d| d.version.parse().ok()).unwrap_or_else(|| Version::of(c));
                    debug_assert_eq!(version, Version::of(c));
                    version
                }),
                created,
                changed,
                deleted,
            }
        })
        .collect();
    Transaction { seq, time: rfc3339(SystemTime::now()), origin, documents }
}

/// The new contents of `changes`, in the order the log stores them.
fn contents(changes: &[(String, Option<Vec<u8>>)]) -> Vec<&[u8]> {
    changes.iter().filter_map(|(_, content)| content.as_deref()).collect()
}

type Ids = Vec<String>;

/// The entity ids created, changed and deleted between two versions of a document, sorted.
/// Of a duplicate id within one document, the first entity counts.
fn entity_diff(before: Option<&Document>, after: Option<&Document>) -> (Ids, Ids, Ids) {
    let old = entity_values(before);
    let mut new = entity_values(after);
    let (mut created, mut changed, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    for (id, value) in old {
        match new.remove(id) {
            None => deleted.push(id.to_owned()),
            Some(now) if now != value => changed.push(id.to_owned()),
            Some(_) => {}
        }
    }
    created.extend(new.into_keys().map(str::to_owned));
    (created, changed, deleted)
}

fn entity_values(doc: Option<&Document>) -> BTreeMap<&str, &Value> {
    let mut out = BTreeMap::new();
    let Some(doc) = doc else { return out };
    for (i, entity) in doc.entities.iter().enumerate() {
        if let (Some(id), Some((_, value))) = (&entity.id, doc.entity_node(i)) {
            out.entry(id.as_str()).or_insert(value);
        }
    }
    out
}

impl Inner {
    fn snapshot(&self) -> Arc<Snapshot> {
        sync::read(&self.current).clone()
    }

    /// The store's context (its configuration in force): the current snapshot's.
    fn ctx(&self) -> Arc<StoreContext> {
        self.snapshot().analysis.context().clone()
    }

    /// Read `stardust.toml` and the project's ignore rules again and put them in force
    /// (SPEC §23): the current documents are analysed again under them at the same seq (those
    /// now ignored leave the snapshot, their files untouched and no deletion recorded), then
    /// the store is compared with the disk, so files that became documents (or changed
    /// meanwhile) are recorded as an `external` transaction. An invalid configuration is
    /// reported and the one in force is kept (the disk is still compared).
    fn reconfigure(&self) -> StoreResult<Option<Transaction>> {
        let ctx = match StoreContext::load(&self.root) {
            Ok(ctx) => Arc::new(ctx),
            Err(err) => {
                tracing::error!("{err}; the store keeps the configuration it had");
                return self.rescan();
            }
        };
        for warning in &ctx.config.warnings {
            tracing::warn!("{warning}");
        }
        {
            let _writer = self.writer()?;
            let snapshot = self.snapshot();
            let analysis = snapshot.analysis.reconfigured(ctx);
            let old = std::mem::replace(
                &mut *sync::write(&self.current),
                Arc::new(Snapshot { seq: snapshot.seq, analysis }),
            );
            self.reaper.free((old, Vec::new()));
        }
        tracing::info!("the store's configuration or ignore rules changed: now in force");
        self.rescan()
    }

    /// Put the private folder back if a tool deleted it while the store is open (SPEC §24:
    /// `git clean -fdx`, `rm -rf .stardust`): the log is written back from the file the writer
    /// holds open, with the folder's `.gitignore` and the owner's pid, so the history stays one
    /// and the core stays the one every later process attaches to (the lock is on the store's
    /// folder, which the delete did not touch). Run under the writer lock, before a commit
    /// writes anything and when the watcher sees the folder go.
    fn restore_private(&self, writer: &mut Writer) -> StoreResult<()> {
        if writer.log.is_at(&self.log_path) {
            return Ok(());
        }
        let private = make_private(&self.root)?;
        writer.log.relink(&self.log_path).map_err(|e| {
            StoreError::io(format!("cannot write the log back to {}", self.log_path.display()), e)
        })?;
        writer.lock.write_pid(&private)?;
        self.disk.clear_replaced();
        tracing::warn!(
            "the store's private folder {} was deleted while the store was open; it is back, \
             with the whole history",
            private.display()
        );
        Ok(())
    }

    fn writer(&self) -> StoreResult<MutexGuard<'_, Writer>> {
        let mut writer = sync::lock(&self.writer);
        if let Some(reason) = &writer.poisoned {
            return Err(StoreError::Poisoned { store: self.root.clone(), reason: reason.clone() });
        }
        if writer.closed {
            return Err(StoreError::Closed { store: self.root.clone() });
        }
        self.restore_private(&mut writer)?;
        Ok(writer)
    }

    /// The record offset of `seq` and the log file it is an offset of (`None` when there is
    /// no log yet), opened under the index so a compaction cannot come in between.
    fn record_at(&self, seq: u64) -> StoreResult<(Option<u64>, Option<std::fs::File>)> {
        let history = sync::read(&self.history);
        match std::fs::File::open(&self.log_path) {
            Ok(file) => Ok((history.offset(seq), Some(file))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, None)),
            Err(e) => Err(StoreError::io(format!("cannot read {}", self.log_path.display()), e)),
        }
    }

    /// Make `snapshot` current and tell subscribers about `txn`.
    fn publish(&self, txn: &Transaction, snapshot: Snapshot, offset: u64) {
        self.publish_all([txn], Arc::new(snapshot), [offset]);
    }

    /// Make `snapshot` current after the transactions `txns` (logged at `offsets`), and tell
    /// subscribers about each, in order.
    fn publish_all<'a>(
        &self,
        txns: impl IntoIterator<Item = &'a Transaction>,
        snapshot: Arc<Snapshot>,
        offsets: impl IntoIterator<Item = u64>,
    ) {
        let txns: Vec<&Transaction> = txns.into_iter().collect();
        sync::write(&self.history).extend(txns.iter().copied(), offsets);
        let old = std::mem::replace(&mut *sync::write(&self.current), snapshot);
        self.reaper.free((old, self.disk.take_buried()));
        for txn in txns {
            self.feed.publish(txn);
        }
    }

    fn commit(
        &self,
        origin: Origin,
        mut changes: Vec<Change>,
        prepared: Option<Prepared>,
        authority: Authority,
    ) -> StoreResult<Committed> {
        let origin = match authority {
            Authority::Guard => origin,
            Authority::History => Origin::External,
        };
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(pair) = changes.windows(2).find(|w| w[0].path == w[1].path) {
            return Err(StoreError::InvalidArguments(format!(
                "{} is changed twice in one commit; give each document once",
                pair[0].path
            )));
        }
        // Code files (SPEC §18) are written as bytes: their versions are those on disk, as
        // the snapshot holds only documents, and they take no part in the analysis.
        let mut code: HashMap<String, Option<Version>> = HashMap::new();
        let ctx = self.ctx();
        for change in &changes {
            let abs = self.disk.resolve(&change.path)?;
            let document = scan::is_document_path(&ctx.config, &change.path);
            if !document && !scan::is_code_path(&ctx.config, &change.path) {
                return Err(StoreError::InvalidArguments(format!(
                    "{} is inside .stardust/ or .git/, which no commit writes",
                    change.path
                )));
            }
            if std::fs::symlink_metadata(&abs).is_ok_and(|m| !m.is_file()) {
                return Err(StoreError::InvalidArguments(format!(
                    "{} is a folder or a special file, not a file; move it away first",
                    change.path
                )));
            }
            if !document {
                code.insert(change.path.clone(), None);
            }
        }
        let request = Request { origin, changes, prepared, code, authority };
        if self.remote.is_none() {
            self.commit_grouped(request)
        } else {
            self.commit_remote(request)
        }
    }

    /// Commit to a team store: another core may have committed first, and then this one
    /// catches up and runs the save authority again on the new state, from the changes as
    /// given. Never grouped: each try holds the head of the shared log.
    fn commit_remote(&self, request: Request) -> StoreResult<Committed> {
        let Request { origin, mut changes, mut prepared, code, authority } = request;
        let mut writer = self.writer()?;
        let mut reserved = remote::Reserved::none();
        for _ in 0..remote::RETRIES {
            let retry = changes.clone();
            let request = Request {
                origin: origin.clone(),
                changes,
                prepared: prepared.take(),
                code: code.clone(),
                authority,
            };
            match self.commit_locked(&mut writer, request)? {
                Some(committed) => return Ok(committed),
                None => {
                    // Lost the race: hold the head for this core, so the next try wins.
                    if let (false, Some(remote)) = (reserved.is_held(), &self.remote) {
                        reserved = remote::Reserved::take(remote.as_ref())?;
                    }
                    self.catch_up_locked(&mut writer)?;
                    changes = retry;
                }
            }
        }
        Err(StoreError::Unavailable {
            what: format!(
                "other cores kept committing first ({} tries); the change was not committed",
                remote::RETRIES
            ),
        })
    }

    /// Group commit (a store without a team database): the request joins the queue, then
    /// whoever holds the writer applies every queued request in order, each with its own seq
    /// and log record, and makes them durable with one sync (see [`Inner::commit_batch`]).
    /// A lone commit finds the writer free and the queue holding only itself, so it waits for
    /// nothing more than before; commits that arrive while a sync is under way are applied
    /// together by the next holder.
    fn commit_grouped(&self, request: Request) -> StoreResult<Committed> {
        let answer: Answer = Arc::default();
        sync::lock(&self.queue).push_back((request, answer.clone()));
        let mut writer = match self.writer() {
            Ok(writer) => writer,
            Err(err) => {
                sync::lock(&self.queue).retain(|(_, a)| !Arc::ptr_eq(a, &answer));
                return sync::lock(&answer).take().unwrap_or(Err(err));
            }
        };
        loop {
            if let Some(result) = sync::lock(&answer).take() {
                return result;
            }
            if sync::lock(&self.queue).is_empty() {
                // Taken by a holder that stopped before answering (a panic).
                return Err(StoreError::Unavailable {
                    what: "the commit was lost by a failed writer; nothing was committed".into(),
                });
            }
            self.commit_batch(&mut writer);
        }
    }

    /// Apply queued requests in order on top of one another, append each one's record, sync
    /// the log once if any of them must be durable, then write their files and publish them,
    /// and answer each (none before the sync). A request that touches a path an earlier one
    /// of the batch touched, or finds an edit made on disk behind the store's back, waits for
    /// the next batch: the files are written after the sync, so the disk does not hold the
    /// earlier one's bytes yet.
    fn commit_batch(&self, writer: &mut Writer) {
        let mut head = self.snapshot();
        let mut touched: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut planned: Vec<(Planned, u64, Answer)> = Vec::new();
        let mut answers: Vec<(Answer, StoreResult<Committed>)> = Vec::new();
        let mut durable = false;
        while planned.len() < BATCH_MAX {
            let next = {
                let mut queue = sync::lock(&self.queue);
                let clashes = queue.front().is_some_and(|(request, _)| {
                    request.changes.iter().any(|c| touched.contains(&c.path))
                });
                if clashes { None } else { queue.pop_front() }
            };
            let Some((request, answer)) = next else { break };
            if writer.poisoned.is_some() || writer.closed {
                let err = match &writer.poisoned {
                    Some(reason) => {
                        StoreError::Poisoned { store: self.root.clone(), reason: reason.clone() }
                    }
                    None => StoreError::Closed { store: self.root.clone() },
                };
                answers.push((answer, Err(err)));
                continue;
            }
            let paths: Vec<String> = request.changes.iter().map(|c| c.path.clone()).collect();
            let first = planned.is_empty();
            match self.plan_locked(writer, &head, first, request) {
                Ok(Plan::Done(committed)) => answers.push((answer, Ok(committed))),
                Ok(Plan::Later(request)) => {
                    sync::lock(&self.queue).push_front((request, answer));
                    break;
                }
                Ok(Plan::Write(plan)) => {
                    let appended = if plan.durable {
                        self.append(writer, &plan.txn, &contents(&plan.effective), LogSync::Later)
                    } else {
                        self.append(writer, &plan.txn, &contents(&plan.effective), LogSync::No)
                    };
                    match appended {
                        Ok(offset) => {
                            durable |= plan.durable;
                            touched.extend(paths);
                            head = plan.snapshot.clone();
                            planned.push((plan, offset, answer));
                        }
                        Err(err) => answers.push((answer, Err(err))),
                    }
                }
                Err(err) => answers.push((answer, Err(err))),
            }
        }
        if durable && let Some(&(_, first_offset, _)) = planned.first() {
            let synced = self.disk.check(FailPoint::SyncLog, log::LOG_FILE).and_then(|()| {
                self.log_syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                writer.log.sync()
            });
            if let Err(e) = synced {
                // Nothing of the batch was written but its records: cut them.
                if let Err(cut) = writer.log.truncate(first_offset) {
                    writer.poisoned = Some(format!("the log could not be cut back: {cut}"));
                }
                let message =
                    format!("cannot sync the transaction log ({e}); nothing was committed");
                for (_, _, answer) in planned.drain(..) {
                    answers.push((
                        answer,
                        Err(StoreError::io(message.clone(), std::io::Error::other(e.to_string()))),
                    ));
                }
            }
        }
        // The commit point has passed for every planned request: write their files in order.
        let mut published: Vec<(Transaction, u64)> = Vec::new();
        let mut last = None;
        let mut planned = planned.into_iter();
        for (plan, offset, answer) in planned.by_ref() {
            let contents = contents(&plan.effective);
            match self.write_files(writer, &plan.txn, &contents, &plan.previous, offset) {
                Ok(()) => {
                    answers.push((
                        answer,
                        Ok(Committed { seq: plan.txn.seq, transaction: Some(plan.txn.clone()) }),
                    ));
                    published.push((plan.txn, offset));
                    last = Some(plan.snapshot);
                }
                Err(err) => {
                    // `write_files` cut the log at this record, so the later ones went too.
                    answers.push((answer, Err(err)));
                    break;
                }
            }
        }
        for (plan, _, answer) in planned {
            answers.push((
                answer,
                Err(StoreError::io(
                    format!("cannot write seq {}; nothing was committed", plan.txn.seq),
                    std::io::Error::other("an earlier commit of the same group failed"),
                )),
            ));
        }
        if let Some(snapshot) = last {
            let (txns, offsets): (Vec<Transaction>, Vec<u64>) = published.into_iter().unzip();
            self.publish_all(&txns, snapshot, offsets);
        }
        for (answer, result) in answers {
            *sync::lock(&answer) = Some(result);
        }
    }

    /// [`Inner::commit`] with the writer held (a team store): `None` when the team store's
    /// database moved past the snapshot (nothing was written).
    fn commit_locked(
        &self,
        writer: &mut Writer,
        request: Request,
    ) -> StoreResult<Option<Committed>> {
        let head = self.snapshot();
        let plan = match self.plan_locked(writer, &head, true, request)? {
            Plan::Done(committed) => return Ok(Some(committed)),
            Plan::Later(_) => unreachable!("the first request of a batch is never put off"),
            Plan::Write(plan) => plan,
        };
        let written = self.write(
            writer,
            &plan.txn,
            &contents(&plan.effective),
            &plan.previous,
            plan.durable,
        )?;
        let Some(offset) = written else {
            return Ok(None);
        };
        let seq = plan.txn.seq;
        let txn = plan.txn.clone();
        self.publish_all([&plan.txn], plan.snapshot, [offset]);
        Ok(Some(Committed { seq, transaction: Some(txn) }))
    }

    /// Decide a request on top of `head` (the published snapshot, or the last one planned in
    /// this batch): the transaction it makes and the state after it, or its answer when it
    /// changes nothing or is refused. Only the `first` request of a batch takes in edits made
    /// on disk (the others are put off, `Plan::Later`).
    fn plan_locked(
        &self,
        writer: &mut Writer,
        head: &Arc<Snapshot>,
        first: bool,
        request: Request,
    ) -> StoreResult<Plan> {
        let mut code = request.code.clone();
        // Edits made on disk to these documents since the snapshot are history too: record
        // them first, so the expected versions are checked against what is really there.
        let mut on_disk = Vec::with_capacity(request.changes.len());
        for change in &request.changes {
            let bytes = self.disk.read(&change.path)?;
            if let Some(version) = code.get_mut(&change.path) {
                *version = bytes.as_deref().map(Version::of);
            }
            on_disk.push(bytes);
        }
        let external: Vec<(String, Option<Vec<u8>>)> = request
            .changes
            .iter()
            .zip(&on_disk)
            .filter(|(change, _)| !code.contains_key(&change.path))
            .filter(|(change, bytes)| {
                bytes.as_deref().map(Version::of) != head.version(&change.path)
            })
            .map(|(change, bytes)| (change.path.clone(), bytes.clone()))
            .collect();
        let mut snapshot = head.clone();
        if !external.is_empty() {
            if !first {
                return Ok(Plan::Later(request));
            }
            self.ingest_locked(writer, external)?;
            snapshot = self.snapshot();
        }
        let Request { origin, changes, prepared, authority, .. } = request;

        // What each document held, to put back if the commit fails after the commit point.
        let previous: HashMap<String, Option<Vec<u8>>> =
            changes.iter().map(|c| c.path.clone()).zip(on_disk).collect();
        let mut effective: Vec<(String, Option<Vec<u8>>)> = Vec::new();
        for change in changes {
            let current = match code.get(&change.path) {
                Some(on_disk) => *on_disk,
                None => snapshot.version(&change.path),
            };
            if let Some(expected) = change.expected
                && current != Some(expected)
            {
                return Err(conflict(change.path, Some(expected), current));
            }
            let content = match change.op {
                Op::Create(_) if current.is_some() => {
                    return Err(conflict(change.path, None, current));
                }
                Op::Delete if current.is_none() => return Err(StoreError::NotFound(change.path)),
                Op::Put(content) | Op::Create(content) => {
                    if current == Some(Version::of(&content)) {
                        continue;
                    }
                    Some(content)
                }
                Op::Delete => None,
            };
            effective.push((change.path, content));
        }
        if effective.is_empty() {
            return Ok(Plan::Done(Committed { seq: snapshot.seq, transaction: None }));
        }

        let before = &snapshot.analysis;
        let documents: Vec<(String, Option<Vec<u8>>)> =
            effective.iter().filter(|(path, _)| !code.contains_key(path)).cloned().collect();
        let after = match prepared {
            Some(p) if p.seq == snapshot.seq && p.matches(&documents) => p.after,
            _ if documents.is_empty() => before.clone(),
            _ => before.with_changes(documents),
        };
        // Whether the commit must be durable before it returns (see below).
        let mut durable = authority == Authority::Guard;
        if authority == Authority::Guard {
            let paths: Vec<String> = effective.iter().map(|(path, _)| path.clone()).collect();
            let guarded = saves::guarded(before, &after, &paths);
            let problems =
                analysis::new_problems(before, &after, &guarded, &before.config().refuse);
            if !problems.is_empty() {
                return Err(StoreError::Refused { problems });
            }
            // A file operation that touches none of the store's data (a project's own JSON,
            // code) is as durable as the folder makes it (SPEC §24: at the folder's speed): its
            // record is not synced, and a record a crash loses is found again at the next open
            // as a difference, recorded `external`. The store's data, and every change an
            // editor's or agent's confirm makes, is durable before it is acknowledged.
            if origin == Origin::Mount && guarded.is_empty() {
                durable = false;
            }
        }
        // A code file saved through the mount passes its language server's `code-error` rule
        // here (a confirmed code edit passed it when its preview was made). It runs under the
        // writer lock, so the text checked is the one replaced; the wait is bounded by the
        // server's.
        if authority == Authority::Guard
            && origin == Origin::Mount
            && before.config().refuse_code_errors
        {
            let check = sync::read(&self.code_saves).clone();
            if let Some(check) = check {
                let mut errors = Vec::new();
                for (path, content) in &effective {
                    if let (true, Some(after)) = (code.contains_key(path), content) {
                        let before = previous.get(path).and_then(Option::as_deref);
                        errors.extend(check.refusals(path, before, after));
                    }
                }
                if !errors.is_empty() {
                    return Err(StoreError::CodeRefused { errors });
                }
            }
        }
        let seq = snapshot.seq + 1;
        let txn = transaction(seq, origin, before, &after, &effective, &code);
        let snapshot = Arc::new(Snapshot { seq, analysis: after });
        Ok(Plan::Write(Planned { txn, effective, previous, snapshot, durable }))
    }

    /// Write a transaction's documents and log record; all or nothing. `previous` holds the
    /// content each document had (for undoing), and returns the record's log offset, or
    /// `None` when a team store's database moved past the transaction's seq (nothing written).
    ///
    /// A team store commits in its database first. After that the transaction is history
    /// whatever happens here, so a failure to copy it into this folder is not undone: it
    /// poisons the store, and reopening copies it from the database.
    fn write(
        &self,
        writer: &mut Writer,
        txn: &Transaction,
        contents: &[&[u8]],
        previous: &HashMap<String, Option<Vec<u8>>>,
        durable: bool,
    ) -> StoreResult<Option<u64>> {
        if let Some(remote) = &self.remote {
            if let remote::Appended::Behind { .. } = remote.append(txn, contents)? {
                return Ok(None);
            }
            return match self.write_local(writer, txn, contents, previous, false) {
                Ok(offset) => Ok(Some(offset)),
                Err(err) => {
                    let reason = format!(
                        "seq {} is in the database but could not be copied here: {err}",
                        txn.seq
                    );
                    writer.poisoned = Some(reason.clone());
                    Err(StoreError::Poisoned { store: self.root.clone(), reason })
                }
            };
        }
        self.write_local(writer, txn, contents, previous, durable).map(Some)
    }

    /// Write a transaction's log record (synced when it is the commit point) and documents;
    /// on failure, undo what was done. Returns the record's log offset.
    fn write_local(
        &self,
        writer: &mut Writer,
        txn: &Transaction,
        contents: &[&[u8]],
        previous: &HashMap<String, Option<Vec<u8>>>,
        sync: bool,
    ) -> StoreResult<u64> {
        let offset =
            self.append(writer, txn, contents, if sync { LogSync::Now } else { LogSync::No })?;
        self.write_files(writer, txn, contents, previous, offset)?;
        Ok(offset)
    }

    /// Append a transaction's record to the log; returns its offset. On failure nothing of
    /// it is left.
    fn append(
        &self,
        writer: &mut Writer,
        txn: &Transaction,
        contents: &[&[u8]],
        sync: LogSync,
    ) -> StoreResult<u64> {
        let (record, shared) = self.encode(txn, contents);
        let appended =
            self.disk.check(FailPoint::AppendLog, log::LOG_FILE).and_then(|()| match sync {
                LogSync::Now => {
                    self.log_syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    writer.log.append(&record, true)
                }
                LogSync::Later => writer.log.append_deferred(&record),
                LogSync::No => writer.log.append(&record, false),
            });
        if appended.is_ok() {
            sync::write(&self.history).logged_shared(txn.seq, shared);
        }
        appended.map_err(|e| {
            if writer.log.is_broken() {
                writer.poisoned = Some(format!("the log could not be cut back: {e}"));
            }
            StoreError::io("cannot append to the transaction log; nothing was committed", e)
        })
    }

    /// `txn`'s log record, with `contents` (those of its documents with an `after`, in order),
    /// except those an earlier record holds for the same path (issue 39: a content written
    /// again, by a branch switched back, is logged once); and the contents it shares, for
    /// [`history::History::logged_shared`] once the record is appended.
    fn encode<'c>(
        &self,
        txn: &Transaction,
        contents: &[&'c [u8]],
    ) -> (log::Encoded<'c>, BTreeMap<String, u64>) {
        let shared = sync::read(&self.history).shareable(txn);
        let stored: Vec<&[u8]> = txn
            .documents
            .iter()
            .filter(|d| d.after.is_some())
            .zip(contents)
            .filter(|(d, _)| !shared.contains_key(&d.path))
            .map(|(_, content)| *content)
            .collect();
        (log::encode_record(txn, &[], &shared, &stored), shared)
    }

    /// Write a transaction's documents once its record (at `offset`) is the commit point; on
    /// failure, undo what was done and cut the log back to `offset`.
    fn write_files(
        &self,
        writer: &mut Writer,
        txn: &Transaction,
        contents: &[&[u8]],
        previous: &HashMap<String, Option<Vec<u8>>>,
        offset: u64,
    ) -> StoreResult<()> {
        // The commit point has passed: the record holds everything needed to redo the writes
        // after a crash (which also removes their temporary files), and a failure here is
        // undone by hand. Temporary files are only written after the commit point so that a
        // crash never leaves one that no record names. Nothing here is synced: a checkpoint
        // does that later, before it marks the transaction applied.
        let mut staged: Vec<fsio::Staged> = Vec::new();
        let mut failure = None;
        for (doc, content) in txn.documents.iter().filter(|d| d.after.is_some()).zip(contents) {
            match self.disk.stage(&doc.path, content, false) {
                Ok(s) => staged.push(s),
                Err(e) => {
                    failure = Some((doc.path.as_str(), e));
                    break;
                }
            }
        }
        let mut done: Vec<&str> = Vec::new();
        if failure.is_none() {
            let mut next = staged.iter();
            for doc in &txn.documents {
                let result = match doc.after {
                    Some(_) => self.disk.install(&doc.path, next.next().expect("staged above")),
                    None => self.disk.unlink(&doc.path),
                };
                if let Err(e) = result {
                    failure = Some((doc.path.as_str(), e));
                    break;
                }
                done.push(&doc.path);
            }
        }
        if let Some((path, e)) = failure {
            staged.iter().for_each(fsio::Staged::discard);
            if let Err(reason) = self.undo(writer, &done, previous, offset) {
                writer.poisoned = Some(reason.clone());
                return Err(StoreError::Poisoned { store: self.root.clone(), reason });
            }
            return Err(StoreError::io(format!("cannot write {path}; nothing was committed"), e));
        }
        writer.dirty.extend(txn.documents.iter().map(|d| d.path.clone()));
        self.trigger.committed();
        Ok(())
    }

    /// Put back the documents of a failed commit and cut its record from the log.
    fn undo(
        &self,
        writer: &mut Writer,
        done: &[&str],
        previous: &HashMap<String, Option<Vec<u8>>>,
        offset: u64,
    ) -> Result<(), String> {
        for path in done {
            let restored = match previous.get(*path).and_then(Option::as_deref) {
                Some(bytes) => self.disk.write(path, bytes),
                None => self.disk.remove(path),
            };
            restored.map_err(|e| format!("cannot restore {path}: {e}"))?;
        }
        writer.log.truncate(offset).map_err(|e| format!("cannot cut the log back: {e}"))
    }

    /// Record edits found on disk (content, or `None` for gone) as one external transaction,
    /// skipping those that match the snapshot. External changes are never refused.
    fn ingest_locked(
        &self,
        writer: &mut Writer,
        found: Vec<(String, Option<Vec<u8>>)>,
    ) -> StoreResult<Option<Transaction>> {
        let mut found = found;
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found.dedup_by(|a, b| a.0 == b.0);
        let mut reserved = remote::Reserved::none();
        for _ in 0..remote::RETRIES {
            if let Some(done) = self.ingest_once(writer, &found)? {
                return Ok(done);
            }
            // Another core committed first: hold the head, take its commits in and compare
            // again.
            if let (false, Some(remote)) = (reserved.is_held(), &self.remote) {
                reserved = remote::Reserved::take(remote.as_ref())?;
            }
            self.catch_up_locked(writer)?;
        }
        Err(StoreError::Unavailable {
            what: format!(
                "other cores kept committing first ({} tries); the edit made outside Stardust \
                 was not recorded yet (the next scan retries)",
                remote::RETRIES
            ),
        })
    }

    /// One try of [`Inner::ingest_locked`] (`found` sorted, each path once): `None` when a
    /// team store's database moved past the snapshot.
    fn ingest_once(
        &self,
        writer: &mut Writer,
        found: &[(String, Option<Vec<u8>>)],
    ) -> StoreResult<Option<Option<Transaction>>> {
        let snapshot = self.snapshot();
        let changes: Vec<(String, Option<Vec<u8>>)> = found
            .iter()
            .filter(|(path, bytes)| bytes.as_deref().map(Version::of) != snapshot.version(path))
            .cloned()
            .collect();
        if changes.is_empty() {
            return Ok(Some(None));
        }
        let after = snapshot.analysis.with_changes(changes.clone());
        let seq = snapshot.seq + 1;
        let txn = transaction(
            seq,
            Origin::External,
            &snapshot.analysis,
            &after,
            &changes,
            &HashMap::new(),
        );
        if let Some(remote) = &self.remote
            && let remote::Appended::Behind { .. } = remote.append(&txn, &contents(&changes))?
        {
            return Ok(None);
        }
        let (record, shared) = self.encode(&txn, &contents(&changes));
        if self.remote.is_none() {
            self.log_syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let offset = match writer.log.append(&record, self.remote.is_none()) {
            Ok(offset) => {
                sync::write(&self.history).logged_shared(txn.seq, shared);
                offset
            }
            Err(e) => {
                if writer.log.is_broken() {
                    writer.poisoned = Some(format!("the log could not be cut back: {e}"));
                }
                return Err(StoreError::io("cannot record an edit made outside Stardust", e));
            }
        };
        tracing::info!(
            "recorded {} document(s) edited outside Stardust as seq {seq}",
            txn.documents.len()
        );
        self.publish(&txn, Snapshot { seq, analysis: after }, offset);
        Ok(Some(Some(txn)))
    }

    /// Take in the transactions other cores committed to the team store's database since
    /// the snapshot: append them to this folder's log, bring the files to their state, and
    /// publish them in order. Returns how many. A file holding none of the states those
    /// transactions took it through was edited here since: it is left as it is, for the
    /// watcher or the next open to record on top (nothing is lost).
    fn catch_up_locked(&self, writer: &mut Writer) -> StoreResult<usize> {
        self.catch_up_after(writer, false).map(|(count, _)| count)
    }

    /// [`Inner::catch_up_locked`], for the open of a copy: with `restarted` (the machine
    /// restarted since the log's last marker), a document found empty where the last of the
    /// transactions taken in wrote it is that write, lost with the machine's memory, not an
    /// edit. The copy's log is not synced, and a new file's data reaches the disk after its
    /// name, so a power loss can leave both the record gone and the file empty; recording
    /// the empty file on top would empty the document for every machine. So the database's
    /// content is written there, and the paths are returned, for the open not to record
    /// them. Nothing is lost: the file was empty. Without a restart no written data is lost
    /// (a process crash keeps the page cache), and an empty file is an edit like any other.
    fn catch_up_after(
        &self,
        writer: &mut Writer,
        restarted: bool,
    ) -> StoreResult<(usize, Vec<String>)> {
        let Some(remote) = &self.remote else { return Ok((0, Vec::new())) };
        let (mut count, mut lost) = (0, Vec::new());
        loop {
            let snapshot = self.snapshot();
            let batch = remote.since(snapshot.seq, remote::PAGE)?;
            if batch.is_empty() {
                return Ok((count, lost));
            }
            for (i, shipped) in batch.iter().enumerate() {
                let expected = snapshot.seq + 1 + i as u64;
                if shipped.transaction.seq != expected {
                    return Err(StoreError::io(
                        "cannot take in the database's history",
                        std::io::Error::other(format!(
                            "it skips from seq {} to seq {}",
                            expected - 1,
                            shipped.transaction.seq
                        )),
                    ));
                }
            }
            lost.extend(self.apply_shipped(writer, &snapshot, &batch, restarted)?);
            count += batch.len();
        }
    }

    fn apply_shipped(
        &self,
        writer: &mut Writer,
        snapshot: &Snapshot,
        batch: &[remote::Shipped],
        restarted: bool,
    ) -> StoreResult<Vec<String>> {
        // Each touched path: the states it went through, and its last content.
        type States<'a> = BTreeMap<&'a str, (Vec<Option<Version>>, Option<&'a [u8]>)>;
        let mut states: States<'_> = BTreeMap::new();
        let mut offsets = Vec::with_capacity(batch.len());
        for shipped in batch {
            let txn = &shipped.transaction;
            let mut contents = shipped.contents.iter();
            for doc in &txn.documents {
                let content = match doc.after {
                    Some(_) => Some(contents.next().map(Vec::as_slice).ok_or_else(|| {
                        StoreError::io(
                            "cannot take in the database's history",
                            std::io::Error::other(format!(
                                "seq {} lacks the content of {}",
                                txn.seq, doc.path
                            )),
                        )
                    })?),
                    None => None,
                };
                let entry = states.entry(&doc.path).or_insert_with(|| (vec![doc.before], None));
                entry.0.push(doc.after);
                entry.1 = content;
            }
            let slices: Vec<&[u8]> = shipped.contents.iter().map(Vec::as_slice).collect();
            let record = log::encode_transaction(txn, &slices);
            let offset = writer.log.append(&record, false).map_err(|e| {
                if writer.log.is_broken() {
                    writer.poisoned = Some(format!("the log could not be cut back: {e}"));
                }
                StoreError::io("cannot copy the database's history into the log", e)
            })?;
            offsets.push(offset);
        }
        // Each file brought to its last state, in parallel: a new machine's copy writes every
        // document of the store at once.
        let states: Vec<_> = states.into_iter().collect();
        // The paths whose empty file was taken for a lost write (see `catch_up_after`).
        let lost: Vec<Option<String>> = states
            .par_iter()
            .map(|(path, (known, last))| {
                let now = self.disk.read(path)?;
                let now_version = now.as_deref().map(Version::of);
                let edited = !known.contains(&now_version);
                let lost = edited
                    && restarted
                    && last.is_some()
                    && now.as_deref().is_some_and(<[u8]>::is_empty);
                if lost {
                    tracing::warn!(
                        "{path} was empty after the machine restarted, where a commit the \
                         database holds wrote it: taken for a write the restart lost, not an \
                         edit; the database's content is written in its place"
                    );
                } else if edited {
                    tracing::warn!(
                        "{path} was edited here while another core changed it; keeping this \
                         machine's edit, to be recorded on top"
                    );
                    return Ok(None);
                }
                if now_version != *known.last().expect("a state per transaction") {
                    // Not synced: the database has them, and the checkpoint syncs them.
                    let written = match last {
                        Some(bytes) => self.disk.put(path, bytes),
                        None => self.disk.unlink(path),
                    };
                    written.map_err(|e| StoreError::io(format!("cannot write {path}"), e))?;
                }
                Ok(lost.then(|| (*path).to_owned()))
            })
            .collect::<StoreResult<_>>()?;
        let documents: Vec<(String, Option<Vec<u8>>)> = states
            .iter()
            .filter(|(path, _)| scan::is_document_path(snapshot.analysis.config(), path))
            .map(|(path, (_, last))| ((*path).to_owned(), last.map(<[u8]>::to_vec)))
            .collect();
        writer.dirty.extend(states.iter().map(|(p, _)| (*p).to_owned()));
        let analysis = if snapshot.analysis.document_count() == 0 {
            let docs = documents.into_iter().filter_map(|(path, c)| Some((path, c?)));
            Analysis::new(snapshot.analysis.context().clone(), docs.collect())
        } else {
            snapshot.analysis.with_changes(documents)
        };
        let seq = batch.last().expect("a batch is not empty").transaction.seq;
        let txns = batch.iter().map(|shipped| &shipped.transaction);
        self.publish_all(txns, Arc::new(Snapshot { seq, analysis }), offsets);
        self.trigger.committed();
        writer.log.sync_in_background();
        Ok(lost.into_iter().flatten().collect())
    }

    /// For a copy that never had the team store's history (at `head`): move each document
    /// its folder holds to `.stardust/recovered/<head>/`, so that the history is written into
    /// an empty folder and nothing found is lost.
    fn set_aside(&self, head: u64, found: Found) -> StoreResult<()> {
        for (path, bytes) in found {
            let Some(bytes) = bytes else { continue };
            let kept = keep_recovered(&self.root, head, &path, &bytes)
                .map_err(|e| StoreError::io(format!("cannot keep what {path} held"), e))?;
            self.disk
                .remove(&path)
                .map_err(|e| StoreError::io(format!("cannot move {path}"), e))?;
            tracing::warn!(
                "{path} was here before this copy took the team store's history; it is kept at \
                 {} and the database's state is written in its place",
                kept.display()
            );
        }
        Ok(())
    }

    /// Take in what other cores committed, if anything (the follower thread's step): at once
    /// when `woken`, else (a poll) when the database's head is past the snapshot.
    fn follow(&self, woken: bool) {
        let Some(remote) = &self.remote else { return };
        if !woken {
            match remote.head() {
                Ok(head) if head > self.snapshot().seq => {}
                Ok(_) => return,
                Err(err) => {
                    tracing::debug!("cannot read the database's head: {err}");
                    return;
                }
            }
        }
        // A closed or poisoned store takes nothing in.
        let Ok(mut writer) = self.writer() else { return };
        if let Err(err) = self.catch_up_locked(&mut writer) {
            tracing::warn!("cannot take in other cores' commits yet: {err}");
        }
    }

    /// Take in what the files at these store-relative paths (documents or folders) now hold.
    fn ingest_paths(&self, paths: Vec<String>) -> StoreResult<Option<Transaction>> {
        // Which paths to read is found before the writer is taken (walking a folder that came
        // or went is disk work that commits need not wait for); they are read under it.
        let snapshot = self.snapshot();
        let config = snapshot.analysis.config();
        let mut candidates: Vec<String> = Vec::new();
        for rel in paths {
            if rel.split('/').next().is_some_and(|first| scan::PRIVATE_DIRS.contains(&first)) {
                continue;
            }
            let abs = self.root.join(&rel);
            let meta = std::fs::symlink_metadata(&abs);
            let is_file = meta.as_ref().is_ok_and(|m| m.is_file());
            let is_dir = meta.as_ref().is_ok_and(|m| m.is_dir());
            // A folder that went away or moved takes its known documents with it. Only a path
            // that is not a file and was not a document can have been such a folder, which
            // spares the walk over all documents for the common event, a file written.
            if !is_file && snapshot.analysis.document(&rel).is_none() {
                candidates.extend(snapshot.analysis.document_paths_under(&rel));
            }
            if is_dir && self.disk.resolve(&rel).is_ok() {
                candidates.extend(documents_under(&self.root, &abs, config));
            }
            if scan::is_document_path(config, &rel) {
                candidates.push(rel);
            }
        }
        candidates.sort();
        candidates.dedup();
        let mut writer = self.writer()?;
        let mut found = Vec::with_capacity(candidates.len());
        for path in candidates {
            let bytes = self.disk.read(&path)?;
            found.push((path, bytes));
        }
        self.ingest_locked(&mut writer, found)
    }

    fn rescan(&self) -> StoreResult<Option<Transaction>> {
        let mut writer = self.writer()?;
        let snapshot = self.snapshot();
        let files = scan::documents(&self.root, snapshot.analysis.config())?;
        let mut found: Vec<(String, Option<Vec<u8>>)> = files
            .into_par_iter()
            .map(|(rel, abs)| {
                let bytes = self
                    .disk
                    .read_at(&rel, &abs)
                    .map_err(|e| StoreError::io(format!("cannot read {rel}"), e))?;
                Ok((rel, bytes))
            })
            .collect::<StoreResult<_>>()?;
        add_deletions(&snapshot.analysis, &mut found);
        self.ingest_locked(&mut writer, found)
    }

    fn changes_since(&self, since: u64, limit: usize) -> StoreResult<ChangesSince> {
        let head = self.snapshot().seq;
        if since > head {
            return Ok(ChangesSince::Overflow { seq: head });
        }
        let mut coalesced = Coalesced::starting_at(since);
        let mut more = false;
        if since < head {
            let context = || format!("cannot read {}", self.log_path.display());
            let (Some(offset), Some(file)) = self.record_at(since + 1)? else {
                return Ok(ChangesSince::Overflow { seq: head });
            };
            let mut reader = LogReader::of(file).map_err(|e| StoreError::io(context(), e))?;
            reader.seek(offset, since + 1).map_err(|e| StoreError::io(context(), e))?;
            while let Some(record) = reader.next_record().map_err(|d| corrupt(&self.log_path, d))? {
                let Header::Transaction { transaction, .. } = &record.header else { continue };
                if transaction.seq > head {
                    break;
                }
                coalesced.add(transaction);
                if coalesced.len() >= limit && transaction.seq < head {
                    more = true;
                    break;
                }
            }
        }
        let seq = coalesced.seq;
        let (documents, entities) = coalesced.take();
        Ok(ChangesSince::Changes { seq, documents, entities, more })
    }
}

fn conflict(path: String, expected: Option<Version>, found: Option<Version>) -> StoreError {
    StoreError::Conflict { path, expected, found }
}

/// The documents under the folder `dir` of the store at `root`, as store-relative paths.
fn documents_under(root: &Path, dir: &Path, config: &crate::config::Config) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| scan::relative(root, entry.path()))
        .filter(|rel| scan::is_document_path(config, rel))
        .collect()
}

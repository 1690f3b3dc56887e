//! Retention (SPEC §26, `[history] keep`): the log is rewritten without the contents no kept
//! state needs, every transaction's record (seq, origin, time, paths, versions) staying.
//!
//! The oldest kept seq `O` is `head - N + 1` for `keep = N`, or the first seq committed in the
//! last `N` days for `keep = "<N>d"` (the head when none was). Every state from `O` on stays
//! whole, so of each path the content in force at `O` stays too: only contents superseded by
//! a later transaction at or before `O` are dropped ([`History::droppable`]). A last logged
//! content is never dropped, so recovery (`redo_tail`, `logged_contents`) always has what it
//! needs.
//!
//! Crash safety: the compacted log is written to `transactions.compact` beside the log and
//! synced, then renamed over the log (with the index swapped under its lock, so a reader's
//! offsets always belong to the file it opened) and the folder synced. A crash before the
//! rename leaves the old log whole (the copy is removed at the next open); after it, the new
//! one, which was whole before it was named. It runs under the writer lock: at open, on
//! [`super::Store::compact`], and at a checkpoint once a quarter of the log's transactions (at
//! least [`EVERY`]) were committed since the last compaction, so rewriting the log costs each
//! commit a bounded share of it.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use super::error::{StoreError, StoreResult};
use super::fsio::{self, FailPoint};
use super::history::History;
use super::log::{self, Header, LogReader, LogWriter};
use super::{Inner, Writer, corrupt};
use crate::config::Keep;
use crate::sync;

/// A checkpoint compacts again after at least this many commits (and a quarter of the log).
pub const EVERY: u64 = 64;

/// What one compaction did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compaction {
    /// The oldest seq held now.
    pub oldest: u64,
    /// How many contents were dropped.
    pub dropped: usize,
    /// The log's bytes of records before and after.
    pub before: u64,
    pub after: u64,
}

/// The compacted copy's name beside the log.
fn temp_path(log_path: &Path) -> PathBuf {
    log_path.with_extension("compact")
}

/// Remove the copy a compaction interrupted before its rename left (the log is whole).
pub fn remove_stale(log_path: &Path) -> StoreResult<()> {
    let temp = temp_path(log_path);
    match std::fs::remove_file(&temp) {
        Ok(()) => {
            tracing::info!("removed {}, left by an interrupted compaction", temp.display());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(format!("cannot remove {}", temp.display()), e)),
    }
}

impl Inner {
    /// The oldest seq `keep` asks to hold every state from, `None` to hold everything.
    fn keep_from(&self, keep: Keep, history: &History) -> StoreResult<Option<u64>> {
        let head = history.head();
        if head == 0 {
            return Ok(None);
        }
        match keep {
            Keep::All => Ok(None),
            Keep::Transactions(n) => Ok(Some(head.saturating_sub(n) + 1)),
            Keep::Days(days) => {
                let since = SystemTime::now()
                    .checked_sub(Duration::from_secs(days.saturating_mul(86_400)))
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                // RFC 3339 times of one width compare as strings.
                let cutoff = super::rfc3339(since);
                let file = std::fs::File::open(&self.log_path).map_err(|e| {
                    StoreError::io(format!("cannot read {}", self.log_path.display()), e)
                })?;
                let time_of = |seq: u64| -> StoreResult<String> {
                    let offset = history.offset(seq).expect("an indexed seq has an offset");
                    let txn = log::read_transaction(&file, offset).map_err(|e| {
                        StoreError::io(format!("cannot read seq {seq} of the log"), e)
                    })?;
                    Ok(txn.time)
                };
                // The first seq committed at or after the cutoff (times only grow, but for a
                // clock set back: then this is one such seq).
                let (mut lo, mut hi) = (1, head);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if time_of(mid)? >= cutoff {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                Ok(Some(lo))
            }
        }
    }

    /// Compact if a checkpoint at `head` finds enough committed since the last compaction.
    pub(super) fn compact_if_due(&self, writer: &mut Writer, head: u64) {
        let last = self.compacted_at.load(Ordering::Relaxed);
        if head.saturating_sub(last) < EVERY.max(head / 4) {
            return;
        }
        if let Err(err) = self.compact_locked(writer) {
            tracing::warn!("{err}; the log keeps its contents until the next compaction");
        }
    }

    /// Drop the contents `[history] keep` no longer keeps (see the module doc). Under the
    /// writer lock.
    pub(super) fn compact_locked(&self, writer: &mut Writer) -> StoreResult<Option<Compaction>> {
        let keep = self.ctx().config.keep;
        // A team store's history is its database's; its local log is left whole for now.
        let remote = self.remote.is_some();
        if keep == Keep::All || remote || writer.poisoned.is_some() || writer.log.is_broken() {
            return Ok(None);
        }
        let droppable = {
            let history = sync::read(&self.history);
            self.compacted_at.store(history.head(), Ordering::Relaxed);
            match self.keep_from(keep, &history)? {
                Some(oldest) => history.droppable(oldest),
                None => return Ok(None),
            }
        };
        if droppable.is_empty() {
            return Ok(None);
        }
        let temp = temp_path(&self.log_path);
        let io = |what: &str, e| StoreError::io(format!("{what} {}", self.log_path.display()), e);
        let renamed = self.rewrite(writer, &temp, &droppable).and_then(|rewritten| {
            self.disk.check(FailPoint::Compact, "rename").map_err(|e| io("cannot compact", e))?;
            // Readers open the log under the index: none sees the new file with old offsets.
            let mut index = sync::write(&self.history);
            std::fs::rename(&temp, &self.log_path).map_err(|e| io("cannot compact", e))?;
            *index = rewritten.1;
            Ok((rewritten.0, rewritten.2))
        });
        if renamed.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        let (new_writer, before) = renamed?;
        let after = new_writer.len();
        // The old file is unlinked: from now on records go to the new one.
        writer.log = new_writer;
        let dir = self.log_path.parent().expect("the log is in a folder");
        fsio::sync_dir(dir).map_err(|e| io("cannot sync the folder of", e))?;
        let dropped = droppable.values().map(Vec::len).sum();
        let oldest = sync::read(&self.history).oldest();
        tracing::info!(
            "compacted the log ([history] keep): dropped {dropped} contents older than seq \
             {oldest}, {before} -> {after} bytes"
        );
        Ok(Some(Compaction { oldest, dropped, before, after }))
    }

    /// Write the log without `droppable`'s contents to `temp`, synced. Returns a writer
    /// appending to it, its index, and the old log's length.
    fn rewrite(
        &self,
        writer: &Writer,
        temp: &Path,
        droppable: &BTreeMap<u64, Vec<String>>,
    ) -> StoreResult<(LogWriter, History, u64)> {
        let io = |what: &str, e| StoreError::io(format!("{what} {}", temp.display()), e);
        self.disk.check(FailPoint::Compact, "write").map_err(|e| io("cannot write", e))?;
        let end = writer.log.len();
        let file = std::fs::File::open(&self.log_path)
            .map_err(|e| StoreError::io(format!("cannot read {}", self.log_path.display()), e))?;
        let mut reader = LogReader::of(file).map_err(|e| io("cannot read the log for", e))?;
        let out = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(temp)
            .map_err(|e| io("cannot create", e))?;
        let mut out = BufWriter::with_capacity(1 << 20, out);
        let mut history = History::default();
        let mut at = 0u64;
        while reader.offset() < end {
            let Some(record) = reader.next_record().map_err(|d| corrupt(&self.log_path, d))? else {
                break;
            };
            let encoded = match &record.header {
                Header::Transaction { transaction, dropped, shared, .. } => {
                    let mut dropped = dropped.clone();
                    if let Some(more) = droppable.get(&transaction.seq) {
                        dropped.extend(more.iter().cloned());
                        dropped.sort();
                        dropped.dedup();
                    }
                    // A shared content dropped is no longer shared.
                    let mut shared = shared.clone();
                    shared.retain(|path, _| !dropped.contains(path));
                    let held = record.contents().map_err(|e| io("cannot read the log for", e))?;
                    let contents: Vec<&[u8]> = held
                        .iter()
                        .filter(|(path, _)| !dropped.iter().any(|d| d == path))
                        .map(|(_, content)| &content[..])
                        .collect();
                    history.push_record(at, transaction, &dropped, &shared);
                    let encoded = log::encode_record(transaction, &dropped, &shared, &contents);
                    encoded.write_to(&mut out).map_err(|e| io("cannot write", e))?;
                    encoded.len()
                }
                Header::Applied { seq, boot } => {
                    let encoded = log::encode_applied(*seq, boot.as_deref());
                    encoded.write_to(&mut out).map_err(|e| io("cannot write", e))?;
                    encoded.len()
                }
            };
            at += encoded as u64;
        }
        let out = out.into_inner().map_err(|e| io("cannot write", e.into_error()))?;
        out.sync_all().map_err(|e| io("cannot sync", e))?;
        drop(out);
        let new_writer = LogWriter::open(temp, at).map_err(|e| io("cannot open", e))?;
        Ok((new_writer, history, end))
    }
}

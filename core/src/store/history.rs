//! History you can use (SPEC §26): any file as of any seq, what transactions changed, and the
//! inverse of one transaction merged around later changes.
//!
//! The log keeps each transaction's new contents whole. [`History`], built while the log is
//! read at open and extended by every publication, indexes it: the record offset of each seq,
//! and per path and per entity id the seqs that touched it. An as-of read is then a binary
//! search in one path's chain and one read of one content from one record
//! (`log::read_content`), checked against the version the record names: never a replay.
//!
//! Retention (`[history] keep`): [`Store::compact`] rewrites the log with the contents that
//! no state from the oldest kept seq on needs dropped (each transaction's record stays), and
//! [`Store::oldest_held`] is the first seq from which every state is whole again.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::log;
use super::txn::{Origin, Transaction, Version};
use super::{Store, StoreError, StoreResult};
use crate::error::Error;
use crate::sync;

/// One path's state after a transaction that touched it: its version, `None` when deleted.
#[derive(Clone, Copy, Debug)]
struct PathEntry {
    seq: u64,
    version: Option<Version>,
    /// Compaction dropped this content from the log.
    dropped: bool,
    /// The seq whose record holds the content: `seq` itself, or an earlier record holding
    /// the same content of the path (the log's `shared`).
    holder: u64,
}

/// Where an entity was after a transaction that touched it: its document, `None` when gone.
#[derive(Clone, Debug)]
struct EntityEntry {
    seq: u64,
    path: Option<Arc<str>>,
}

/// The index of the log (see the module doc).
#[derive(Debug, Default)]
pub(super) struct History {
    /// The record offset of each transaction, at index `seq - 1`.
    offsets: Vec<u64>,
    paths: HashMap<Arc<str>, Vec<PathEntry>>,
    entities: HashMap<String, Vec<EntityEntry>>,
    /// The first seq from which every state's contents are held (0 read as 1): one past
    /// the last state a dropped content was in force for.
    oldest: u64,
    /// The shared contents of transactions logged but not indexed yet: seq -> path -> holder.
    pending: HashMap<u64, BTreeMap<String, u64>>,
}

/// How many of a path's latest states a new content is compared with for sharing: enough
/// for a branch switched back and forth, bounded so a commit never walks a long chain.
const SHARE_WINDOW: usize = 64;

/// Whether publications index paths and entities (always, but for the benchmark that
/// measures what the indexing costs a commit: `set_indexing`).
static INDEXING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turn the indexing of paths and entities off or on, for every store of the process: a
/// benchmark's knob (as-of reads of what was committed meanwhile answer wrongly).
#[doc(hidden)]
pub fn set_indexing(on: bool) {
    INDEXING.store(on, std::sync::atomic::Ordering::Relaxed);
}

impl History {
    /// Index the transaction logged at `offset`; transactions come in seq order.
    pub fn push(&mut self, offset: u64, txn: &Transaction) {
        let mut shared = self.pending.remove(&txn.seq).unwrap_or_default();
        // An append cut back (a failed sync) can leave a note for a seq that another record
        // then took: only a holder that has this very content of the path is taken from it.
        shared.retain(|path, &mut holder| {
            let after = txn.documents.iter().find(|d| &d.path == path).and_then(|d| d.after);
            let held = self.path_at(path, holder).filter(|e| e.seq == holder && !e.dropped);
            after.is_some() && held.is_some_and(|e| e.version == after)
        });
        self.push_record(offset, txn, &[], &shared);
    }

    /// Which new contents of `txn` a record the log holds already has for the same path:
    /// path -> that record's seq. Only contents not dropped, among each path's last
    /// [`SHARE_WINDOW`] states.
    pub fn shareable(&self, txn: &Transaction) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for doc in &txn.documents {
            let (Some(version), Some(chain)) = (doc.after, self.paths.get(doc.path.as_str()))
            else {
                continue;
            };
            let recent = chain.iter().rev().take(SHARE_WINDOW);
            if let Some(e) = recent.filter(|e| !e.dropped).find(|e| e.version == Some(version)) {
                out.insert(doc.path.clone(), e.holder);
            }
        }
        out
    }

    /// Remember the contents the record of `seq`, logged and not yet indexed, shares.
    pub fn logged_shared(&mut self, seq: u64, shared: BTreeMap<String, u64>) {
        if shared.is_empty() {
            self.pending.remove(&seq);
        } else {
            self.pending.insert(seq, shared);
        }
    }

    /// [`History::push`] for a record whose `dropped` documents' contents were compacted away
    /// and whose `shared` ones are held by earlier records.
    pub fn push_record(
        &mut self,
        offset: u64,
        txn: &Transaction,
        dropped: &[String],
        shared: &BTreeMap<String, u64>,
    ) {
        debug_assert_eq!(txn.seq, self.offsets.len() as u64 + 1);
        self.offsets.push(offset);
        if !INDEXING.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let mut entities: BTreeMap<&str, Option<Arc<str>>> = BTreeMap::new();
        for doc in &txn.documents {
            let path: Arc<str> = match self.paths.get_key_value(doc.path.as_str()) {
                Some((key, _)) => key.clone(),
                None => Arc::from(doc.path.as_str()),
            };
            let chain = self.paths.entry(path.clone()).or_default();
            // The state before this transaction lost its content: history is whole from here.
            if chain.last().is_some_and(|e| e.dropped) {
                self.oldest = self.oldest.max(txn.seq);
            }
            let dropped = dropped.contains(&doc.path);
            let holder = shared.get(&doc.path).copied().unwrap_or(txn.seq);
            chain.push(PathEntry { seq: txn.seq, version: doc.after, dropped, holder });
            // An entity that left one document and arrived in another is where it arrived.
            for id in &doc.deleted {
                entities.entry(id).or_insert(None);
            }
            for id in doc.created.iter().chain(&doc.changed) {
                entities.insert(id, Some(path.clone()));
            }
        }
        for (id, path) in entities {
            let entry = EntityEntry { seq: txn.seq, path };
            self.entities.entry(id.to_owned()).or_default().push(entry);
        }
    }

    /// The offsets of transactions logged together, in seq order.
    pub fn extend<'a>(
        &mut self,
        txns: impl IntoIterator<Item = &'a Transaction>,
        offsets: impl IntoIterator<Item = u64>,
    ) {
        for (txn, offset) in txns.into_iter().zip(offsets) {
            self.push(offset, txn);
        }
    }

    pub fn offset(&self, seq: u64) -> Option<u64> {
        self.offsets.get(usize::try_from(seq).ok()?.checked_sub(1)?).copied()
    }

    /// The last seq indexed.
    pub fn head(&self) -> u64 {
        self.offsets.len() as u64
    }

    /// The first seq from which every state's contents are held.
    pub fn oldest(&self) -> u64 {
        self.oldest.max(1)
    }

    /// The contents compaction may drop so that every state from seq `oldest` on stays
    /// whole: of each path, every content superseded at or before `oldest`. By seq.
    pub fn droppable(&self, oldest: u64) -> BTreeMap<u64, Vec<String>> {
        let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for (path, chain) in &self.paths {
            // The states in force from `oldest` on: the last one at or before it, and later.
            let kept = chain.partition_point(|e| e.seq <= oldest).saturating_sub(1);
            // A kept state whose content an earlier record holds keeps that record's content.
            let needed: std::collections::HashSet<u64> =
                chain[kept..].iter().filter(|e| e.version.is_some()).map(|e| e.holder).collect();
            for entry in &chain[..kept] {
                if entry.version.is_some() && !entry.dropped && !needed.contains(&entry.seq) {
                    out.entry(entry.seq).or_default().push(path.to_string());
                }
            }
        }
        out
    }

    /// The entry of `path` in force at `seq`: the last that touched it at or before `seq`.
    fn path_at(&self, path: &str, seq: u64) -> Option<PathEntry> {
        let chain = self.paths.get(path)?;
        let n = chain.partition_point(|e| e.seq <= seq);
        n.checked_sub(1).map(|i| chain[i])
    }
}

/// A file's content as of a seq.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AtContent {
    pub path: String,
    /// The seq asked for.
    pub seq: u64,
    /// The seq of the transaction that left the file so (at or before `seq`).
    pub changed_at: u64,
    pub version: Version,
    pub bytes: Vec<u8>,
}

/// An entity's value as of a seq.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityAt {
    pub id: String,
    pub seq: u64,
    /// The document that held it, and that document's content then.
    pub document: AtContent,
    pub value: Value,
}

/// One file's change between two seqs: its content before and after (`None`: absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub before: Option<(Version, Vec<u8>)>,
    pub after: Option<(Version, Vec<u8>)>,
}

/// Which transactions [`Store::history`] lists.
#[derive(Clone, Debug, Default)]
pub struct HistoryFilter {
    pub path: Option<String>,
    pub entity: Option<String>,
}

/// The inverse of one transaction, merged around the later ones, as of the head: each file
/// it changes with its content now and its content after the revert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revert {
    pub seq: u64,
    /// The head the revert was computed at.
    pub head: u64,
    pub files: Vec<FileChange>,
}

impl Store {
    fn history_index(&self) -> std::sync::RwLockReadGuard<'_, History> {
        sync::read(&self.inner.history)
    }

    /// The log file, opened while the caller holds the index (so that its offsets are this
    /// file's even if compaction renames a new log over the name right after).
    fn log_file(&self, _index: &History) -> StoreResult<std::fs::File> {
        let log_path = &self.inner.log_path;
        std::fs::File::open(log_path)
            .map_err(|e| StoreError::io(format!("cannot read {}", log_path.display()), e))
    }

    /// The log file and the record offset of `seq` in it.
    fn record_of(&self, seq: u64) -> StoreResult<(std::fs::File, u64)> {
        let history = self.history_index();
        let offset = history.offset(seq).expect("an indexed seq has an offset");
        Ok((self.log_file(&history)?, offset))
    }

    /// The oldest seq whose contents the log still holds: every file as of it and of each
    /// later seq can be read (SPEC §26, `[history] keep`).
    pub fn oldest_held(&self) -> u64 {
        self.history_index().oldest()
    }

    /// Check that the contents as of `seq` are held: `not-found` naming the head or the
    /// oldest seq held.
    fn check_held(&self, seq: u64, history: &History) -> StoreResult<()> {
        let head = history.head();
        if seq > head {
            return Err(not_found(format!(
                "there is no seq {seq}: the store's history ends at seq {head}; ask for a seq \
                 up to {head}"
            )));
        }
        if seq == 0 {
            return Err(not_found(format!(
                "there is no seq 0: history starts at seq 1; ask for a seq from 1 to {head}"
            )));
        }
        let oldest = history.oldest();
        if seq < oldest {
            return Err(not_found(format!(
                "the contents as of seq {seq} are not held: the oldest seq held is {oldest}; \
                 ask for a seq from {oldest} to {head}"
            )));
        }
        Ok(())
    }

    /// The content of `path` as of `seq` (SPEC §26): `not-found` when the seq is not held,
    /// the path was never recorded, or it did not exist then.
    pub fn document_at(&self, path: &str, seq: u64) -> StoreResult<AtContent> {
        let (entry, offset) = {
            let history = self.history_index();
            self.check_held(seq, &history)?;
            let Some(chain) = history.paths.get(path) else {
                return Err(not_found(format!(
                    "{path} was never recorded in this store's history; check the path \
                     (store-relative, '/'-separated)"
                )));
            };
            let entry = history.path_at(path, seq).filter(|e| e.version.is_some());
            let Some(entry) = entry else {
                let next = chain.iter().find(|e| e.seq > seq && e.version.is_some());
                return Err(not_found(match next {
                    Some(e) => format!(
                        "{path} did not exist as of seq {seq}; it was created at seq {}",
                        e.seq
                    ),
                    None => format!("{path} did not exist as of seq {seq}"),
                }));
            };
            let offset = history.offset(entry.seq).expect("an indexed seq has an offset");
            (entry, (self.log_file(&history)?, offset))
        };
        let version = entry.version.expect("filtered");
        let bytes = self.read_content(&offset, path, entry.seq, version)?;
        Ok(AtContent { path: path.to_owned(), seq, changed_at: entry.seq, version, bytes })
    }

    /// One content from the log, checked against its version.
    fn read_content(
        &self,
        (file, offset): &(std::fs::File, u64),
        path: &str,
        seq: u64,
        version: Version,
    ) -> StoreResult<Vec<u8>> {
        let offset = *offset;
        let log_path = &self.inner.log_path;
        let io = |e| StoreError::io(format!("cannot read {path} as of seq {seq} from the log"), e);
        let mut bytes = log::read_content(file, offset, path).map_err(io)?;
        if let log::Content::Shared(holder) = bytes {
            // Never shared again: a holder holds its content itself.
            let (file, offset) = self.record_of(holder)?;
            bytes = log::read_content(&file, offset, path).map_err(io)?;
        }
        match bytes {
            log::Content::Held(bytes) if Version::of(&bytes) == version => Ok(bytes),
            // Compacted meanwhile: as if asked after.
            log::Content::Dropped => {
                let oldest = self.oldest_held();
                Err(not_found(format!(
                    "the content of {path} of seq {seq} is not held: the oldest seq held is \
                     {oldest}; ask for a seq from {oldest} on"
                )))
            }
            _ => Err(super::corrupt(
                log_path,
                log::Damage {
                    offset,
                    seq,
                    reason: format!("the record's content of {path} is not the version it names"),
                    in_middle: true,
                },
            )),
        }
    }

    /// The content of `path` as of `seq`, `None` when it did not exist then.
    fn content_at(&self, path: &str, seq: u64) -> StoreResult<Option<(Version, Vec<u8>)>> {
        let found = {
            let history = self.history_index();
            history.path_at(path, seq).and_then(|e| Some((e.seq, e.version?)))
        };
        match found {
            Some((at, version)) => {
                let record = self.record_of(at)?;
                Ok(Some((version, self.read_content(&record, path, at, version)?)))
            }
            None => Ok(None),
        }
    }

    /// The entity `id` as of `seq`: its value in the document that held it then.
    pub fn entity_at(&self, id: &str, seq: u64) -> StoreResult<EntityAt> {
        let path = {
            let history = self.history_index();
            self.check_held(seq, &history)?;
            let Some(chain) = history.entities.get(id) else {
                return Err(not_found(format!(
                    "no entity '{id}' was ever recorded in this store's history; check the id"
                )));
            };
            let n = chain.partition_point(|e| e.seq <= seq);
            match n.checked_sub(1).and_then(|i| chain[i].path.clone()) {
                Some(path) => path,
                None => {
                    let next = chain.iter().find(|e| e.seq > seq && e.path.is_some());
                    return Err(not_found(match next {
                        Some(e) => format!(
                            "the entity '{id}' did not exist as of seq {seq}; it was created \
                             at seq {}",
                            e.seq
                        ),
                        None => format!("the entity '{id}' did not exist as of seq {seq}"),
                    }));
                }
            }
        };
        let document = self.document_at(&path, seq)?;
        let lang = crate::scan::lang_of(&self.inner.ctx().config, &path)
            .unwrap_or(crate::syntax::Lang::Json);
        let doc = crate::analysis::Document::new(path.to_string(), lang, document.bytes.clone());
        let index = doc.entities.iter().position(|e| e.id.as_deref() == Some(id));
        let value = index.and_then(|i| doc.entity_node(i)).map(|(_, value)| value.clone());
        match value {
            Some(value) => Ok(EntityAt { id: id.to_owned(), seq, document, value }),
            None => Err(not_found(format!("the entity '{id}' is not in {path} as of seq {seq}"))),
        }
    }

    /// The transactions touching a path or an entity (or every one), newest first: a page of
    /// `limit` from `offset`, and how many there are.
    pub fn history(
        &self,
        filter: &HistoryFilter,
        limit: usize,
        offset: usize,
    ) -> StoreResult<(Vec<Transaction>, usize)> {
        let (seqs, total, file): (Vec<(u64, u64)>, usize, std::fs::File) = {
            let history = self.history_index();
            let all: Vec<u64> = match (&filter.path, &filter.entity) {
                (Some(path), _) => {
                    let mut seqs: Vec<u64> = history
                        .paths
                        .get(path.as_str())
                        .map(|c| c.iter().map(|e| e.seq).collect())
                        .unwrap_or_default();
                    if let Some(id) = &filter.entity {
                        let of_id: Vec<u64> = history
                            .entities
                            .get(id)
                            .map(|c| c.iter().map(|e| e.seq).collect())
                            .unwrap_or_default();
                        seqs.retain(|s| of_id.binary_search(s).is_ok());
                    }
                    seqs
                }
                (None, Some(id)) => history
                    .entities
                    .get(id)
                    .map(|c| c.iter().map(|e| e.seq).collect())
                    .unwrap_or_default(),
                (None, None) => (1..=history.head()).collect(),
            };
            let total = all.len();
            let page = all
                .iter()
                .rev()
                .skip(offset)
                .take(limit)
                .map(|&s| (s, history.offset(s).expect("indexed")))
                .collect();
            (page, total, self.log_file(&history)?)
        };
        let log_path = &self.inner.log_path;
        let mut out = Vec::with_capacity(seqs.len());
        for (seq, offset) in seqs {
            let txn = log::read_transaction(&file, offset).map_err(|e| {
                StoreError::io(format!("cannot read seq {seq} from {}", log_path.display()), e)
            })?;
            out.push(txn);
        }
        Ok((out, total))
    }

    /// What the transactions `seq..=to` changed: each file whose content differs between
    /// the seqs `seq - 1` and `to`, in path order (only `paths` when given).
    pub fn diff(
        &self,
        seq: u64,
        to: u64,
        paths: Option<&[String]>,
    ) -> StoreResult<Vec<FileChange>> {
        if seq == 0 {
            return Err(invalid("seqs start at 1; give the first transaction to diff"));
        }
        if to < seq {
            return Err(invalid(&format!(
                "toSeq {to} is before seq {seq}; give the earlier seq first"
            )));
        }
        let changed: Vec<(String, Option<PathEntry>, Option<PathEntry>)> = {
            let history = self.history_index();
            self.check_held(to, &history)?;
            self.check_held(seq, &history)?;
            if seq > 1 {
                self.check_held(seq - 1, &history)?;
            }
            let mut names: Vec<&str> = match paths {
                Some(paths) => {
                    for path in paths {
                        if !history.paths.contains_key(path.as_str()) {
                            return Err(not_found(format!(
                                "{path} was never recorded in this store's history; check \
                                 the path (store-relative, '/'-separated)"
                            )));
                        }
                    }
                    paths.iter().map(String::as_str).collect()
                }
                None => history.paths.keys().map(|k| &**k).collect(),
            };
            names.sort_unstable();
            names.dedup();
            names
                .into_iter()
                .filter_map(|path| {
                    let before = history.path_at(path, seq - 1);
                    let after = history.path_at(path, to);
                    let version = |e: Option<PathEntry>| e.and_then(|e| e.version);
                    (version(before) != version(after)).then(|| (path.to_owned(), before, after))
                })
                .collect()
        };
        let mut out = Vec::with_capacity(changed.len());
        for (path, before, after) in changed {
            let read = |e: Option<PathEntry>| -> StoreResult<Option<(Version, Vec<u8>)>> {
                match e.and_then(|e| Some((e.seq, e.version?))) {
                    Some((at, version)) => {
                        let record = self.record_of(at)?;
                        Ok(Some((version, self.read_content(&record, &path, at, version)?)))
                    }
                    None => Ok(None),
                }
            };
            let (before, after) = (read(before)?, read(after)?);
            out.push(FileChange { path, before, after });
        }
        Ok(out)
    }

    /// The inverse of transaction `seq` at the head (SPEC §26): each file it changed goes
    /// back to its content before `seq`, merged with what later transactions changed where
    /// their changes do not overlap; a `conflict` names the later seq whose change does.
    /// Code files are taken as they are on disk now.
    pub fn revert(&self, seq: u64) -> StoreResult<Revert> {
        if seq == 0 {
            return Err(invalid("seqs start at 1; give the transaction to revert"));
        }
        let (offset, head, file) = {
            let history = self.history_index();
            let head = history.head();
            self.check_held(seq, &history)?;
            if seq > 1 {
                self.check_held(seq - 1, &history)?;
            }
            (history.offset(seq).expect("indexed"), head, self.log_file(&history)?)
        };
        let log_path = &self.inner.log_path;
        let txn = log::read_transaction(&file, offset).map_err(|e| {
            StoreError::io(format!("cannot read seq {seq} from {}", log_path.display()), e)
        })?;
        let first_import = txn.origin == Origin::External
            && txn.documents.iter().all(|d| d.before.is_none())
            && seq == 1;
        if first_import {
            return Err(Error::Unsupported(format!(
                "seq {seq} is where this store's history starts (its documents as first \
                 found); reverting it would delete them all: revert later transactions, or \
                 delete files through a patch or the mount"
            ))
            .into());
        }
        let config = self.inner.ctx().config.clone();
        let mut files = Vec::new();
        for change in &txn.documents {
            let path = change.path.as_str();
            let before = self.content_at(path, seq - 1)?;
            if before.as_ref().map(|(v, _)| *v) != change.before {
                // Only code files can have a content the log never saw: their edits outside
                // Stardust are not history.
                return Err(not_found(format!(
                    "the content of {path} before seq {seq} is not in the log (Stardust records \
                     a code file's content only when it writes it), so seq {seq} cannot be \
                     reverted; edit {path} by hand"
                )));
            }
            let after = self.content_at(path, seq)?;
            let later: Vec<PathEntry> = {
                let history = self.history_index();
                let chain = history.paths.get(path).map(Vec::as_slice).unwrap_or_default();
                chain.iter().filter(|e| e.seq > seq).copied().collect()
            };
            let logged_now = match later.last() {
                Some(last) => match last.version {
                    Some(_) => self.content_at(path, last.seq)?,
                    None => None,
                },
                None => after.clone(),
            };
            // Documents are as last logged; code files' later edits outside Stardust are not
            // history, so the disk says what they hold now.
            let now = if crate::scan::is_document_path(&config, path) {
                logged_now
            } else {
                self.inner.disk.read(path)?.map(|bytes| (Version::of(&bytes), bytes))
            };
            let version = |c: &Option<(Version, Vec<u8>)>| c.as_ref().map(|(v, _)| *v);
            if version(&now) == version(&before) {
                // Already as it was before `seq`.
                continue;
            }
            let target: Option<Vec<u8>> = if version(&now) == version(&after) {
                before.clone().map(|(_, bytes)| bytes)
            } else {
                match (&after, &before, &now) {
                    (Some((_, base)), Some((_, back)), Some((_, ours))) => {
                        match merge_bytes(base, ours, back) {
                            Some(merged) => Some(merged),
                            None => {
                                let culprit =
                                    self.conflicting(path, base, back, &later)?.unwrap_or(head);
                                return Err(conflict(path, seq, culprit));
                            }
                        }
                    }
                    // Created by `seq` and changed since, deleted since, or made again after
                    // `seq` deleted it: the later transaction owns the file now.
                    _ => {
                        let culprit = later.first().map_or(head, |e| e.seq);
                        return Err(conflict(path, seq, culprit));
                    }
                }
            };
            if version(&now) == target.as_deref().map(Version::of) {
                continue;
            }
            files.push(FileChange {
                path: path.to_owned(),
                before: now,
                after: target.map(|bytes| (Version::of(&bytes), bytes)),
            });
        }
        if files.is_empty() {
            return Err(invalid(&format!(
                "nothing to revert: every change of seq {seq} is already undone at seq {head}"
            )));
        }
        Ok(Revert { seq, head, files })
    }

    /// The first later transaction whose version of `path` cannot be merged with taking
    /// `base` back to `back`.
    fn conflicting(
        &self,
        path: &str,
        base: &[u8],
        back: &[u8],
        later: &[PathEntry],
    ) -> StoreResult<Option<u64>> {
        for entry in later {
            let Some(version) = entry.version else { return Ok(Some(entry.seq)) };
            let record = self.record_of(entry.seq)?;
            let ours = self.read_content(&record, path, entry.seq, version)?;
            if merge_bytes(base, &ours, back).is_none() {
                return Ok(Some(entry.seq));
            }
        }
        Ok(later.last().map(|e| e.seq))
    }
}

/// [`crate::text::merge::merge3`] of UTF-8 contents; `None` for a conflict or other bytes.
fn merge_bytes(base: &[u8], ours: &[u8], theirs: &[u8]) -> Option<Vec<u8>> {
    let text = |b: &[u8]| std::str::from_utf8(b).ok().map(str::to_owned);
    let (base, ours, theirs) = (text(base)?, text(ours)?, text(theirs)?);
    crate::text::merge::merge3(&base, &ours, &theirs).map(String::into_bytes)
}

fn not_found(message: String) -> StoreError {
    Error::NotFound(message).into()
}

fn invalid(message: &str) -> StoreError {
    Error::InvalidArguments(message.to_owned()).into()
}

fn conflict(path: &str, seq: u64, later: u64) -> StoreError {
    StoreError::RevertConflict { path: path.to_owned(), seq, later }
}

impl Store {
    /// Every file that existed as of `seq` (the log's view: documents, and code files
    /// Stardust wrote), in path order; `not-found` when the seq is not held.
    pub fn files_at(&self, seq: u64) -> StoreResult<Vec<String>> {
        let history = self.history_index();
        self.check_held(seq, &history)?;
        let mut out: Vec<String> = history
            .paths
            .keys()
            .filter(|path| history.path_at(path, seq).is_some_and(|e| e.version.is_some()))
            .map(|path| path.to_string())
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// The last seq of the log.
    pub fn head_seq(&self) -> u64 {
        self.history_index().head()
    }

    /// What `path` is as of `seq` in the tree of every file then (SPEC §26, the mount's
    /// `at/<seq>/<path>`): a file with its bytes, a folder (the empty path, or a prefix of a
    /// file's path), or `None` (no such seq held, or nothing there).
    pub fn tree_at(&self, seq: u64, path: &str) -> Option<TreeEntry> {
        if seq == 0 || seq > self.head_seq() {
            return None;
        }
        if path.is_empty() {
            return Some(TreeEntry::Folder);
        }
        if let Ok(found) = self.document_at(path, seq) {
            return Some(TreeEntry::File(found.bytes));
        }
        let prefix = format!("{path}/");
        let files = self.files_at(seq).ok()?;
        files.iter().any(|f| f.starts_with(&prefix)).then_some(TreeEntry::Folder)
    }

    /// The names directly under folder `dir` as of `seq`, each with whether it is a folder, in
    /// path order; `None` when `dir` is no folder then (the root always is).
    pub fn folder_at(&self, seq: u64, dir: &str) -> Option<Vec<(String, bool)>> {
        let files = self.files_at(seq).ok()?;
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        let mut names: Vec<(String, bool)> = Vec::new();
        for file in files.iter().filter_map(|f| f.strip_prefix(&prefix)) {
            let entry = match file.split_once('/') {
                Some((folder, _)) => (folder.to_owned(), true),
                None => (file.to_owned(), false),
            };
            if names.last() != Some(&entry) {
                names.push(entry);
            }
        }
        (!names.is_empty() || dir.is_empty()).then_some(names)
    }
}

/// A path of the tree as of a seq ([`Store::tree_at`]).
#[derive(Debug, PartialEq, Eq)]
pub enum TreeEntry {
    Folder,
    File(Vec<u8>),
}

//! Editor buffers over a snapshot of the store: what an editor has open, by store path, with
//! its text, overlaid on the store's documents and analysed once per (generation, seq).
//!
//! In the spirit of rust-analyzer's `AnalysisHost` and ruff's `Session`: the front applies the
//! client's edits in the order it received them ([`Buffers::edit`]), and any thread asks for an
//! [`Overlay`] ([`Buffers::snapshot`]), the analysis of the store with every open buffer. No
//! protocol: positions are resolved to byte offsets by the front's resolver, against the text
//! the buffer has when the edit is applied.
//!
//! Invariants:
//! - Every change of what the buffers show (an open, an edit, a close, a commit to the store,
//!   a document marked stale) bumps the *generation*; an analysis is computed at most once per
//!   (generation, store seq), however many requests ask for it at the same time, and outside
//!   the lock, so edits keep being applied meanwhile.
//! - The analysis of a generation starts from the last computed one at the same seq with the
//!   same open paths and takes only the buffers whose text changed
//!   ([`Analysis::into_with_changes`]): when nothing else holds it, an edit inside one item of
//!   a large entity array re-parses only that item.
//! - The first edit after an open costs what the next ones do: an open of a saved file shares
//!   the store snapshot's document, which an edit would have to copy before splicing it, so
//!   the analysis of the open starts a copy that owns it on a thread of its own
//!   ([`Analysis::owning`]), and the next generation starts from that copy.
//! - A whole-text change costs what the equivalent range edit costs: it is kept until needed
//!   (a burst keeps its last), then reduced to the range edit it amounts to
//!   ([`crate::text::diff::minimal_edit`]), which the analysis splices like any other.
//! - A buffer's text is never copied into the analysis: its document shares it
//!   ([`Content::Text`]), so a whole-text change's 2 MB is the front's one allocation.
//! - Publication is in generation order, and never names a buffer closed since its analysis
//!   was taken ([`Buffers::publish`], [`Buffers::close`]).
//! - Read-only mode (the store could not be opened for writing, e.g. another process owns it):
//!   the documents are read from disk once, and the documents marked stale
//!   ([`Buffers::mark_stale`], or closed) are read again before the next analysis.

use crate::sync::lock;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, mpsc};

use crate::analysis::{Analysis, Content};
use crate::store::{OpenOptions, Store, StoreError};
use crate::syntax::Lang;
use crate::text::{LineIndex, diff};

/// One open editor buffer. Overlays share its text and line index; an edit copies them only
/// while an overlay still holds the old ones.
#[derive(Clone, Debug)]
pub struct Buffer<M> {
    path: String,
    text: Arc<String>,
    index: Arc<LineIndex>,
    version: i32,
    /// The generation that opened it: a buffer closed and opened again is another buffer.
    opened: u64,
    meta: M,
    /// The latest whole text received and not yet taken in ([`Buffers::edit`]): a burst of
    /// whole-text changes keeps only its last one, and the edit from the text to it is found
    /// once, when something needs the text. Only the buffers' own copy ever holds one: every
    /// buffer handed out (an overlay's, a closed one) is settled first.
    pending: Option<String>,
}

impl<M> Buffer<M> {
    /// A buffer on its own (a test of a front's resolver); [`Buffers::open_buffer`] opens one.
    pub fn new(path: String, text: String, version: i32, meta: M) -> Buffer<M> {
        let index = LineIndex::new(&text);
        Buffer::indexed(path, text, index, version, meta)
    }

    /// A buffer whose text's line index is known.
    fn indexed(path: String, text: String, index: LineIndex, version: i32, meta: M) -> Buffer<M> {
        let (text, index) = (Arc::new(text), Arc::new(index));
        Buffer { path, text, index, version, opened: 0, meta, pending: None }
    }

    /// The store-relative path.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The line index of [`Buffer::text`].
    pub fn index(&self) -> &LineIndex {
        &self.index
    }

    /// The client's version of the text (as of its last edit).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// What the front keeps with the buffer (the LSP front: the URI the client named it by).
    pub fn meta(&self) -> &M {
        &self.meta
    }

    /// Apply one edit, or leave the buffer untouched and answer `false` when its range is not
    /// inside the text (the resolver found no offset, the range is reversed, or an end falls
    /// inside a character). The line index stays that of the text.
    pub fn apply<R>(
        &mut self,
        edit: Edit<R>,
        mut resolve: impl FnMut(&LineIndex, &str, &R) -> Option<Range<u32>>,
    ) -> bool {
        let (range, new) = match edit {
            Edit::Replace(text) => {
                self.pending = None;
                self.replace(text);
                return true;
            }
            Edit::Splice { range, text } => (range, text),
        };
        let Some(range) = resolve(&self.index, &self.text, &range) else { return false };
        let (start, end) = (range.start as usize, range.end as usize);
        let text = &self.text;
        if start > end || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            return false;
        }
        let text = Arc::make_mut(&mut self.text);
        text.replace_range(start..end, &new);
        let delta = new.len() as i64 - (end - start) as i64;
        Arc::make_mut(&mut self.index).splice(text, start, end, delta);
        true
    }
}

impl<M> Buffer<M> {
    /// Take a whole new text as the range edit it amounts to ([`diff::minimal_edit`]): the
    /// line index is updated around the edit instead of being built again, and an unchanged
    /// text keeps its `Arc` (and so whatever an analysis shares with it).
    fn replace(&mut self, new: String) {
        let edit = diff::minimal_edit(&self.text, &new);
        if edit.is_empty() {
            return;
        }
        Arc::make_mut(&mut self.index).splice(&new, edit.start, edit.old_end, edit.delta());
        self.text = Arc::new(new);
    }

    /// Take in the pending whole text, if any. Answers whether there was one.
    fn settle(&mut self) -> bool {
        match self.pending.take() {
            Some(text) => {
                self.replace(text);
                true
            }
            None => false,
        }
    }
}

/// One change of a buffer's text. `R` is the range as the front has it (the LSP front: a
/// protocol range), resolved to bytes against the text as it is when the edit is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit<R> {
    /// The whole text replaced.
    Replace(String),
    /// The text of `range` replaced by `text`.
    Splice { range: R, text: String },
}

/// What became of [`Buffers::edit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edited {
    /// No buffer is open at that path: nothing changed.
    NotOpen,
    /// Every edit applied.
    Applied,
    /// The edit at this index (and every one after it, computed against a text the buffer
    /// does not have) was refused: its range is not inside the text. The edits before it
    /// stand.
    Refused(usize),
}

/// The analysis of the store with the buffers of one generation: an immutable view for one
/// request or one publication.
#[derive(Clone, Debug)]
pub struct Overlay<M> {
    pub analysis: Analysis,
    generation: u64,
    buffers: BTreeMap<String, Buffer<M>>,
}

impl<M> Overlay<M> {
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The open buffers, in path order.
    pub fn buffers(&self) -> impl Iterator<Item = &Buffer<M>> {
        self.buffers.values()
    }

    pub fn buffer(&self, path: &str) -> Option<&Buffer<M>> {
        self.buffers.get(path)
    }
}

/// The analysis of one generation, computed once however many requests ask for it, with the
/// open paths it was computed with.
#[derive(Default)]
struct Pending {
    analysis: OnceLock<(Analysis, BTreeSet<String>)>,
    /// The latest computed analysis of an earlier generation at the same store seq: the
    /// computation takes it over and edits it in place when nothing else holds it.
    previous: Mutex<Option<Arc<Pending>>>,
    /// The same analysis owning its open documents that the store's snapshot shares
    /// ([`Analysis::owning`]), being copied on a thread of its own: the next generation starts
    /// from it, so that the first edit after an open is not the one that copies.
    owning: Mutex<Option<mpsc::Receiver<Analysis>>>,
}

/// What [`Buffers::open`] found.
pub enum Opened<M> {
    /// The store opened for writing: the caller serves it (behind a `service::Service`) and
    /// makes its buffers with [`Buffers::attached`].
    Store(Store),
    /// It could not be: buffers over its documents as read from disk.
    ReadOnly(Box<Buffers<M>>),
}

/// Where the documents under the buffers come from.
enum Source {
    /// The store, owned by this process: its snapshots, its commits.
    Store(Arc<Store>),
    /// The store could not be opened for writing: its documents as read from disk.
    ReadOnly { root: PathBuf, why: StoreError },
}

struct Inner<M> {
    buffers: BTreeMap<String, Buffer<M>>,
    generation: u64,
    /// The analysis of the source at a seq with the buffers of a generation:
    /// `(generation, seq, analysis)`.
    cache: Option<(u64, u64, Arc<Pending>)>,
    /// Read-only mode: the documents as last read from disk.
    disk: Option<Analysis>,
    /// Read-only mode: documents that may have changed on disk (saved, closed, or reported by
    /// the client's file watcher), read again before the next analysis. With a store, its
    /// watcher takes such edits in as commits.
    stale: BTreeSet<String>,
    /// How many pending whole texts were taken in: what a test of coalescing counts.
    #[cfg(test)]
    settled: u64,
    /// How many opens took the line index of the document under them.
    #[cfg(test)]
    reused: u64,
}

impl<M> Inner<M> {
    /// Take in every buffer's pending whole text (before the buffers are handed out).
    fn settle(&mut self) {
        let settled = self.buffers.values_mut().map(|b| u64::from(b.settle())).sum();
        self.note_settled(settled);
    }

    fn note_settled(&mut self, n: u64) {
        #[cfg(test)]
        {
            self.settled += n;
        }
        let _ = n;
    }

    fn note_reused(&mut self, reused: bool) {
        #[cfg(test)]
        {
            self.reused += u64::from(reused);
        }
        let _ = reused;
    }
}

/// The editor buffers of one client over one store.
pub struct Buffers<M> {
    source: Source,
    inner: Mutex<Inner<M>>,
    /// The generation published last (see [`Buffers::publish`]).
    published: Mutex<u64>,
}

impl<M: Clone> Buffers<M> {
    /// Buffers over an open store (the one a service serves).
    pub fn attached(store: Arc<Store>) -> Buffers<M> {
        Buffers::new(Source::Store(store), None)
    }

    /// Open the store at `root` (canonical) for an editor. When it cannot be opened for
    /// writing (another process owns it: `busy`; a read-only checkout; a damaged log) its
    /// documents are read from disk and served read-only, and [`Buffers::read_only`] says why.
    /// Fails only when the store cannot even be read (an invalid configuration).
    pub fn open(root: &Path, options: OpenOptions) -> crate::Result<Opened<M>> {
        match Store::open(root, options) {
            Ok(store) => Ok(Opened::Store(store)),
            Err(why) => {
                tracing::warn!("{why}; serving the store read-only");
                let disk = Analysis::load(root)?;
                let source = Source::ReadOnly { root: root.to_owned(), why };
                Ok(Opened::ReadOnly(Box::new(Buffers::new(source, Some(disk)))))
            }
        }
    }

    fn new(source: Source, disk: Option<Analysis>) -> Buffers<M> {
        Buffers {
            source,
            inner: Mutex::new(Inner {
                buffers: BTreeMap::new(),
                generation: 0,
                cache: None,
                disk,
                stale: BTreeSet::new(),
                #[cfg(test)]
                settled: 0,
                #[cfg(test)]
                reused: 0,
            }),
            published: Mutex::new(0),
        }
    }

    /// The store; `None` in read-only mode.
    pub fn store(&self) -> Option<&Arc<Store>> {
        match &self.source {
            Source::Store(store) => Some(store),
            Source::ReadOnly { .. } => None,
        }
    }

    /// Why the store is served read-only (its code is `busy` when another process owns it);
    /// `None` with a store.
    pub fn read_only(&self) -> Option<&StoreError> {
        match &self.source {
            Source::Store(_) => None,
            Source::ReadOnly { why, .. } => Some(why),
        }
    }

    /// The store's root folder.
    pub fn root(&self) -> &Path {
        match &self.source {
            Source::Store(store) => store.root(),
            Source::ReadOnly { root, .. } => root,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<M>> {
        lock(&self.inner)
    }

    /// The current generation.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Open a buffer at a store path with the client's text, replacing one open there. Answers
    /// `false` (nothing opened) when the path names no JSON or DUST document.
    pub fn open_buffer(&self, path: String, text: String, version: i32, meta: M) -> bool {
        if Lang::from_path(&path).is_none() {
            tracing::debug!("{path} is not a JSON or DUST document; it is not analysed");
            return false;
        }
        // An editor mostly opens a saved file: the document under the buffers then holds this
        // very text, and its line index is copied instead of built (comparing two texts costs
        // a fraction of scanning one for line ends). The analysis of the open then finds the
        // buffer holds what the document does, and takes the snapshot's as it is.
        let known = self.base().and_then(|base| {
            let doc = base.document(&path)?;
            (*doc.text == *text && doc.byte_len == text.len() as u64)
                .then(|| doc.line_index.clone())
        });
        let reused = known.is_some();
        let index = known.unwrap_or_else(|| LineIndex::new(&text));
        let mut buffer = Buffer::indexed(path.clone(), text, index, version, meta);
        let mut inner = self.lock();
        inner.generation += 1;
        buffer.opened = inner.generation;
        inner.buffers.insert(path, buffer);
        inner.note_reused(reused);
        true
    }

    /// The documents under the buffers as they are now, without the buffers: the store's
    /// snapshot, or in read-only mode what was read from disk (`None` while some of it is to
    /// be read again).
    fn base(&self) -> Option<Analysis> {
        match &self.source {
            Source::Store(store) => Some(store.snapshot().analysis.clone()),
            Source::ReadOnly { .. } => {
                let inner = self.lock();
                inner.disk.clone().filter(|_| inner.stale.is_empty())
            }
        }
    }

    /// Apply `edits` to the buffer at `path` strictly in order, each resolved by `resolve`
    /// against the text left by the ones before it, and take `version` as the buffer's.
    ///
    /// A whole text ([`Edit::Replace`]) is only kept: the next whole text replaces it unseen,
    /// and the next range edit or analysis takes it in as the range edit it amounts to. So a
    /// burst of whole-text changes costs one comparison of texts, and its analysis is that of
    /// the equivalent range edit, chained from the previous generation's.
    pub fn edit<R>(
        &self,
        path: &str,
        version: i32,
        edits: impl IntoIterator<Item = Edit<R>>,
        mut resolve: impl FnMut(&LineIndex, &str, &R) -> Option<Range<u32>>,
    ) -> Edited {
        let mut inner = self.lock();
        let Some(buffer) = inner.buffers.get_mut(path) else { return Edited::NotOpen };
        let mut outcome = Edited::Applied;
        let mut settled = 0;
        for (i, edit) in edits.into_iter().enumerate() {
            match edit {
                // Kept for later: a newer whole text makes it moot, and only a range edit or
                // an analysis needs it taken in.
                Edit::Replace(text) => buffer.pending = Some(text),
                edit => {
                    settled += u64::from(buffer.settle());
                    if !buffer.apply(edit, &mut resolve) {
                        outcome = Edited::Refused(i);
                        break;
                    }
                }
            }
        }
        buffer.version = version;
        inner.generation += 1;
        inner.note_settled(settled);
        outcome
    }

    /// Close the buffer at `path`. `closed` runs with the closed buffer before any
    /// publication can run, so what it sends (the LSP front: empty diagnostics) is the last
    /// word about that buffer. Answers whether a buffer was open there.
    pub fn close(&self, path: &str, closed: impl FnOnce(&Buffer<M>)) -> bool {
        let _publishing = lock(&self.published);
        let buffer = {
            let mut inner = self.lock();
            let Some(mut buffer) = inner.buffers.remove(path) else { return false };
            buffer.settle();
            // The file may have been saved with the buffer's text or left as it was.
            if matches!(self.source, Source::ReadOnly { .. }) {
                inner.stale.insert(buffer.path.clone());
            }
            inner.generation += 1;
            buffer
        };
        closed(&buffer);
        true
    }

    /// Note that documents may differ on disk from what the read-only mode read. With a store
    /// its watcher takes such edits in as commits, so this does nothing. Answers whether
    /// anything new was marked (and the generation bumped).
    pub fn mark_stale(&self, paths: impl IntoIterator<Item = String>) -> bool {
        if !matches!(self.source, Source::ReadOnly { .. }) {
            return false;
        }
        let mut inner = self.lock();
        let before = inner.stale.len();
        inner.stale.extend(paths.into_iter().filter(|p| Lang::from_path(p).is_some()));
        if inner.stale.len() == before {
            return false;
        }
        inner.generation += 1;
        true
    }

    /// Note that the documents under the buffers changed (a commit): a new generation.
    pub fn store_changed(&self) {
        self.lock().generation += 1;
    }

    /// The text of the buffer open at `path`, with every edit received so far.
    pub fn text_of(&self, path: &str) -> Option<String> {
        let mut inner = self.lock();
        inner.settle();
        inner.buffers.get(path).map(|b| b.text().to_owned())
    }

    /// The analysis of the store with every open buffer, computed outside the lock.
    pub fn snapshot(&self) -> Overlay<M> {
        let (base, generation, buffers, cell) = {
            let mut inner = self.lock();
            inner.settle();
            self.refresh_from_disk(&mut inner);
            let (base, seq) = match (&self.source, &inner.disk) {
                (Source::Store(store), _) => {
                    let current = store.snapshot();
                    (current.analysis.clone(), current.seq)
                }
                (Source::ReadOnly { .. }, Some(disk)) => (disk.clone(), 0),
                (Source::ReadOnly { .. }, None) => unreachable!("read-only buffers hold a disk"),
            };
            let generation = inner.generation;
            let cell = cell_for(&mut inner.cache, generation, seq);
            (base, generation, inner.buffers.clone(), cell)
        };
        // Outside the lock: edits keep being applied meanwhile.
        let analysis = cell
            .analysis
            .get_or_init(|| {
                let computed = compute(&cell, &base, generation, &buffers);
                copy_ahead(&cell, &computed.0, &base, &buffers);
                computed
            })
            .0
            .clone();
        Overlay { analysis, generation, buffers }
    }

    /// The analysis of `generation` if it is still the current one; `None` when a newer one
    /// exists, whose own publication follows. A burst of changes, each followed by a
    /// publication, is so analysed once, at its latest.
    pub fn snapshot_latest(&self, generation: u64) -> Option<Overlay<M>> {
        if self.generation() != generation {
            tracing::debug!("generation {generation} is superseded; not analysed");
            return None;
        }
        Some(self.snapshot())
    }

    /// Publish `overlay` unless a newer generation has been published: `send` runs for each
    /// of its buffers still open (not closed, nor closed and opened again, since), in path
    /// order, while no buffer can close, so nothing stale is sent after a close's last word.
    /// Answers whether the overlay was published.
    pub fn publish(&self, overlay: &Overlay<M>, mut send: impl FnMut(&Buffer<M>)) -> bool {
        let mut published = lock(&self.published);
        if *published >= overlay.generation {
            return false;
        }
        *published = overlay.generation;
        let open: BTreeMap<String, u64> =
            self.lock().buffers.values().map(|b| (b.path.clone(), b.opened)).collect();
        for buffer in overlay.buffers.values() {
            if open.get(&buffer.path) == Some(&buffer.opened) {
                send(buffer);
            }
        }
        true
    }

    /// Read the stale documents again into the read-only base. The lock is held so that no
    /// change is applied against a half-updated base.
    fn refresh_from_disk(&self, inner: &mut Inner<M>) {
        if inner.stale.is_empty() {
            return;
        }
        let (Source::ReadOnly { root, .. }, Some(disk)) = (&self.source, &inner.disk) else {
            inner.stale.clear();
            return;
        };
        let changes: Vec<(String, Option<Vec<u8>>)> = std::mem::take(&mut inner.stale)
            .into_iter()
            .map(|path| {
                let bytes = std::fs::read(root.join(&path)).ok();
                (path, bytes)
            })
            .collect();
        tracing::debug!("reading {} documents again from disk", changes.len());
        inner.disk = Some(disk.with_changes(changes));
        inner.cache = None;
    }
}

/// The cell of (generation, seq), made and cached when it is not the cached one. A new cell
/// at the same seq is handed the newest computed analysis to start from: the old
/// generation's, or the one it was to start from if it was never computed.
fn cell_for(
    cache: &mut Option<(u64, u64, Arc<Pending>)>,
    generation: u64,
    seq: u64,
) -> Arc<Pending> {
    if let Some((g, s, cell)) = cache.as_ref()
        && *g == generation
        && *s == seq
    {
        return cell.clone();
    }
    let cell = Arc::new(Pending::default());
    if let Some((_, old_seq, old)) = cache.replace((generation, seq, cell.clone())) {
        let previous = match old.analysis.get() {
            Some(_) => Some(old),
            None => lock(&old.previous).take(),
        };
        if old_seq == seq {
            *lock(&cell.previous) = previous;
        } else {
            free_later(previous);
        }
    }
    cell
}

/// The analysis of `buffers` over `base`, chained from the cell's previous analysis when it
/// had the same open paths (the same seq is the cell's invariant).
fn compute<M>(
    cell: &Pending,
    base: &Analysis,
    generation: u64,
    buffers: &BTreeMap<String, Buffer<M>>,
) -> (Analysis, BTreeSet<String>) {
    let open: BTreeSet<String> = buffers.keys().cloned().collect();
    let previous =
        lock(&cell.previous).take().and_then(|p| Arc::try_unwrap(p).ok()).and_then(|p| {
            let owning = p.owning.into_inner().unwrap_or_else(PoisonError::into_inner);
            p.analysis.into_inner().map(|(analysis, paths)| (analysis, paths, owning))
        });
    // The same store seq and the same open paths: only the buffers whose text changed
    // differ, and an unshared document is edited in place. When the previous analysis
    // shared open documents with the store, its copy that owns them is taken (waiting for the
    // copy costs less than making it again).
    let start = match previous {
        Some((previous, paths, owning)) if paths == open => {
            match owning.and_then(|copy| copy.recv().ok()) {
                Some(copy) => {
                    free_later(Some(previous));
                    copy
                }
                None => previous,
            }
        }
        previous => {
            tracing::debug!(
                "generation {generation}: from the store (previous: {})",
                previous.is_some()
            );
            // With its copy, if one was made: a copy still being made is dropped by its
            // thread when it finds no receiver.
            free_later(previous);
            base.clone()
        }
    };
    // A buffer holding what the start already has needs no change. The others' documents
    // share the buffer's text: a whole-text change is taken in without a copy.
    let changes = buffers
        .values()
        .filter(|b| start.document(&b.path).is_none_or(|d| *d.text != **b.text))
        .map(|b| (b.path.clone(), Some(Content::Text(b.text.clone()))))
        .collect();
    (start.into_with_contents(changes), open)
}

/// Start copying, on a thread of its own, the open documents that `analysis` shares with the
/// store's snapshot `base` and that an edit would splice: an editor's open of a saved file
/// takes the stored document as it is, so without this copy the first edit after the open
/// pays for it. The copy is made while the editor shows the open's diagnostics and the user
/// reads them; the next generation's [`compute`] starts from it.
fn copy_ahead<M>(
    cell: &Pending,
    analysis: &Analysis,
    base: &Analysis,
    buffers: &BTreeMap<String, Buffer<M>>,
) {
    let shared: Vec<String> = buffers
        .keys()
        .filter(|path| match (analysis.document(path), base.document(path)) {
            (Some(ours), Some(stored)) => Arc::ptr_eq(ours, stored) && analysis.spliceable(path),
            _ => false,
        })
        .cloned()
        .collect();
    if shared.is_empty() {
        return;
    }
    let (send, receive) = mpsc::sync_channel(1);
    let analysis = analysis.clone();
    let spawned = std::thread::Builder::new().name("stardust-copy".to_owned()).spawn(move || {
        let copy = analysis.owning(&shared);
        // No receiver: the next generation did not need it; it is freed here, off its path.
        let _ = send.send(copy);
    });
    if spawned.is_ok() {
        *lock(&cell.owning) = Some(receive);
    }
}

/// Freeing a large document's trees takes milliseconds: not on a request.
fn free_later<T: Send + 'static>(value: Option<T>) {
    if value.is_some() {
        let _ =
            std::thread::Builder::new().name("stardust-free".to_owned()).spawn(move || drop(value));
    }
}

#[cfg(test)]
mod tests;

//! Rules for saves that arrive as file operations (the FUSE mount): what kind of file a path
//! names, which names are editors' scratch files, what each file operation means (a rename is a
//! save, a document move, Vim's backup, ...), when a handle's bytes are decided, which documents
//! are hidden while a scratch file holds their bytes, and how the bytes of a refused save are
//! kept with their diagnostics under `.stardust/rejected/`.
//!
//! The decisions are pure functions of what the front knows (path kinds, what each path holds,
//! the handle's state), so every editor's save pattern is tested here without a mount. A front
//! keeps inodes, errno mapping and cache invalidation, and carries out the effect it is given.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::analysis::Analysis;
use crate::scan;
use crate::text::{Encoding, LineIndex};

use super::error::{StoreError, StoreResult};
pub use super::paths::{PathKind, is_scratch_name};
use super::{Change, Op as ChangeOp, PRIVATE_DIR, Store, projections, rfc3339};

/// The changed `paths` whose new problems the save authority refuses (SPEC §24): the
/// store's data, i.e. documents that are data before or after the change (they hold entities,
/// a schema governs them, they are schemas: [`Analysis::is_data`]), and new documents under a
/// `[types.*] dir`. Every other file (code, a project's own JSON) is committed as it is; its
/// problems are diagnostics.
pub fn guarded(before: &Analysis, after: &Analysis, paths: &[String]) -> Vec<String> {
    let types = &before.config().types;
    paths
        .iter()
        .filter(|path| {
            let new = before.document(path).is_none() && after.document(path).is_some();
            before.is_data(path)
                || after.is_data(path)
                || (new
                    && types.values().any(|t| {
                        let dir = t.dir.trim_end_matches('/');
                        dir.is_empty()
                            || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
                    }))
        })
        .cloned()
        .collect()
}

/// Whether a git operation is under way in the repository the store at `root` is in (SPEC
/// §24): git holds its index's lock (`index.lock`) from before it writes the first file of a
/// checkout, reset, stash, merge or rebase until after the last. What it writes meanwhile is
/// recorded history coming back, not an edit: recorded as `external`, never refused.
pub fn git_operation(root: &Path) -> bool {
    for dir in root.ancestors() {
        let dot_git = dir.join(".git");
        match fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => return dot_git.join("index.lock").exists(),
            Ok(meta) if meta.is_file() => {
                // A worktree's or submodule's `.git` file names its own git directory, which
                // holds its index.
                let Ok(text) = fs::read_to_string(&dot_git) else { return false };
                let Some(linked) = text.strip_prefix("gitdir:") else { return false };
                return dir.join(linked.trim()).join("index.lock").exists();
            }
            _ => {}
        }
    }
    false
}

/// How many refused saves [`Store::refusals`] remembers.
const RECENT_REFUSALS: usize = 50;

/// A refused save made as a file operation, as `stardust.status` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptRefusal {
    /// UTC, RFC 3339.
    pub time: String,
    /// The store-relative path saved.
    pub path: String,
    /// The error's code and message.
    pub code: String,
    pub message: String,
    /// The kept bytes' file name inside [`Store::rejected_dir`].
    pub kept: String,
}

/// Where refused saves are kept, inside [`PRIVATE_DIR`].
pub const REJECTED_DIR: &str = "rejected";

/// What the store asks about code files saved as file operations (SPEC §18), of the layer
/// that knows the language servers (the service installs one: [`Store::set_code_saves`]).
pub trait CodeSaves: Send + Sync {
    /// Whether `rel`, a path that is not a document, is a code file: one a configured language
    /// server covers. Its saves through the mount are transactions.
    fn is_code(&self, rel: &str) -> bool;

    /// Why a save of the code file `rel` from `before` (`None`: a new file) to `after` is
    /// refused under `code-error`: each error the file's language server reports for `after`
    /// that it does not for `before`, or why its diagnostics could not be had. Empty: none.
    fn refusals(&self, rel: &str, before: Option<&[u8]>, after: &[u8]) -> Vec<String>;
}

/// What a path holds in the mount when a file operation arrives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Held {
    /// Nothing by that name (or a document hidden while it is away).
    Nothing,
    /// A memory file: a scratch file, or a document created and not committed yet.
    Memory,
    /// A regular file in the store's folder.
    File,
    /// A folder.
    Folder,
    /// Anything else on disk: a symbolic link, a FIFO, a device, a socket.
    Special,
}

/// Why a file operation is refused before anything is committed. A front maps each onto its
/// own error (an errno for the mount).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Refusal {
    /// A mode the mount does not offer (`RENAME_EXCHANGE`, `RENAME_WHITEOUT`).
    Unsupported,
    /// A derived file moved, or a document moved onto one: a derived file has no bytes of its
    /// own to move. Answered like a move across filesystems, so tools copy and delete instead.
    CrossDerived,
    /// The private folder is read-only.
    ReadOnly,
    /// The target exists and the caller asked not to replace it.
    Exists,
    /// The target (or the file deleted) is a folder.
    IsFolder,
    /// Only a regular file can become a document, or replace one.
    NotRegular,
    /// A document or scratch name must be a regular file the mount holds (no links, devices,
    /// FIFOs or sockets).
    NotPlain,
    /// The source is missing: the front answers with the error it got looking for it.
    Missing,
}

/// How a rename may treat an existing target.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RenameMode {
    /// Plain `rename(2)`: the target is replaced.
    Replace,
    /// `RENAME_NOREPLACE`: refused when the target exists.
    NoReplace,
    /// `RENAME_EXCHANGE` or `RENAME_WHITEOUT`, which the mount does not offer.
    Unsupported,
}

/// Where the bytes a rename moves live.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    /// A memory file.
    Memory,
    /// A regular file in the store's folder.
    Disk,
}

/// A rename as the mount sees it: both paths, their kinds, and what each holds.
#[derive(Clone, Copy, Debug)]
pub struct Rename<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub from_kind: PathKind,
    pub to_kind: PathKind,
    /// What `from` holds; a memory file wins over the disk.
    pub from_held: Held,
    /// What `to` holds; a folder on disk wins over a memory file.
    pub to_held: Held,
    pub mode: RenameMode,
}

/// What a rename means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RenameEffect {
    /// Refused; nothing changes.
    Refuse(Refusal),
    /// A path renamed onto itself: nothing to do.
    Nothing,
    /// The source's bytes become the document at the target: one save through the save
    /// authority (`sed -i`, gedit, Helix, `os.replace`, a new save after Vim's backup rename).
    /// Only once it is committed does the source go: a memory file releases the documents it
    /// held away (except the target, which the save replaced) and its open handles follow it
    /// to the new name; a file on disk is removed.
    Save { from: Source },
    /// A memory file renamed to a scratch name: it moves, and the documents it holds away
    /// follow it (a file on disk renamed to a scratch name is a plain rename).
    Scratch,
    /// The target is an ordinary file. A memory file is written there, then releases the
    /// documents it held away (if that fails, the written file is removed again); a file on
    /// disk is renamed on disk.
    Plain { from: Source },
    /// A document renamed onto another document path: one transaction deletes the one and
    /// creates the other.
    MoveDocument,
    /// A document renamed onto a scratch name (Vim's `backupcopy=no` before it writes the file
    /// anew): its bytes move to a memory file at the target, and the document stays in the
    /// store but hides (see [`Away`]) until a new save replaces it or the scratch file goes.
    BackupAway,
    /// A document moved out of the documents (`mv x.json x.bak`): its bytes are written at the
    /// target first, then the store deletes the document (if that is refused, the written file
    /// is removed again).
    LeaveDocuments,
    /// A folder: the documents in it move in one transaction (see [`moved_document`]),
    /// everything else follows on disk.
    MoveFolder,
}

/// What renaming `r.from` to `r.to` means. Checks run in the order of `rename(2)`'s own:
/// unsupported modes, the read-only private folder, an existing target under
/// `RENAME_NOREPLACE`, a rename onto itself; then the source decides.
pub fn rename_effect(r: &Rename<'_>) -> RenameEffect {
    use RenameEffect::*;
    if r.mode == RenameMode::Unsupported {
        return Refuse(Refusal::Unsupported);
    }
    if r.from_kind == PathKind::Private || r.to_kind == PathKind::Private {
        return Refuse(Refusal::ReadOnly);
    }
    if r.mode == RenameMode::NoReplace && r.to_held != Held::Nothing {
        return Refuse(Refusal::Exists);
    }
    if r.from == r.to {
        return Nothing;
    }
    match r.from_held {
        Held::Memory => {
            if r.to_held == Held::Folder {
                return Refuse(Refusal::IsFolder);
            }
            match r.to_kind {
                PathKind::Document | PathKind::Derived => Save { from: Source::Memory },
                PathKind::Scratch => Scratch,
                // Private is refused above.
                PathKind::Plain | PathKind::Private => Plain { from: Source::Memory },
            }
        }
        Held::Nothing => Refuse(Refusal::Missing),
        Held::Folder => MoveFolder,
        Held::File | Held::Special => {
            if r.to_held == Held::Folder {
                return Refuse(Refusal::IsFolder);
            }
            let regular = r.from_held == Held::File;
            if r.from_kind == PathKind::Derived {
                return Refuse(Refusal::CrossDerived);
            }
            // A link (or a FIFO) keeps what it is whatever its names: only the name changes,
            // but never over a document, whose deletion is the store's to decide.
            if !regular {
                return match (r.to_kind, r.to_held) {
                    (PathKind::Derived, _) => Refuse(Refusal::CrossDerived),
                    (PathKind::Document, Held::File) => Refuse(Refusal::NotRegular),
                    _ => Plain { from: Source::Disk },
                };
            }
            match (r.from_kind == PathKind::Document && regular, r.to_kind) {
                (true, PathKind::Document) => MoveDocument,
                (true, PathKind::Derived) => Refuse(Refusal::CrossDerived),
                (true, PathKind::Scratch) => BackupAway,
                (true, PathKind::Plain | PathKind::Private) => LeaveDocuments,
                (false, PathKind::Document | PathKind::Derived) => Save { from: Source::Disk },
                // A file on disk keeps being one under a temporary name (SPEC §24).
                (false, _) => Plain { from: Source::Disk },
            }
        }
    }
}

/// What becomes of a document inside a renamed folder, given the kind of its new path.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MovedDocument {
    /// Still a document: deleted at the old path and created at the new one, in the folder's
    /// one transaction.
    Document,
    /// No longer a document (say `ignore` covers the new folder): its bytes are written as a
    /// plain file and the store deletes it, in the same transaction.
    LeavesDocuments,
}

/// What becomes of a document when its folder is renamed and its new path is of kind
/// `new_kind`.
pub fn moved_document(new_kind: PathKind) -> MovedDocument {
    match new_kind {
        PathKind::Document => MovedDocument::Document,
        PathKind::Scratch | PathKind::Plain | PathKind::Private | PathKind::Derived => {
            MovedDocument::LeavesDocuments
        }
    }
}

/// What creating a file (`open` with `O_CREAT`) means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CreateEffect {
    /// A new document or scratch file: a memory file, which reaches the store only when a save
    /// of it is decided (a document) or it is renamed onto a document path (a scratch file).
    Memory,
    /// A new ordinary file: written into a spare and put in place at its last writer's close
    /// (`spare_writes::SpareWrites::create`; lock files and read-only creates on disk at once).
    Disk,
    /// The file exists: it is opened as it is.
    Open,
}

/// What creating `kind` means when the path `exists` already (`exclusive`: `O_EXCL`).
pub fn create_effect(
    kind: PathKind,
    exists: bool,
    exclusive: bool,
) -> Result<CreateEffect, Refusal> {
    if kind == PathKind::Private {
        return Err(Refusal::ReadOnly);
    }
    if exists && exclusive {
        return Err(Refusal::Exists);
    }
    Ok(match (kind, exists) {
        (_, true) => CreateEffect::Open,
        (PathKind::Document | PathKind::Derived | PathKind::Scratch, false) => CreateEffect::Memory,
        (PathKind::Plain | PathKind::Private, false) => CreateEffect::Disk,
    })
}

/// How a file is opened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OpenEffect {
    /// A file of the virtual private folder, for reading.
    Private,
    /// The memory file at the path.
    Memory,
    /// A document opened for writing: its whole content is buffered in the handle and decided
    /// as described by [`Pending`].
    Buffered,
    /// The file on disk (a document opened for reading always reads the committed content); a
    /// plain file opened with `O_TRUNC`, or one a spare is open for, is written in that spare
    /// (`spare_writes::spare_open`).
    Disk,
    /// A derived file opened for reading: its content generated from one snapshot, fixed at
    /// open.
    Derived,
}

/// How a path of kind `kind` is opened (`in_memory`: the mount holds a memory file there;
/// `write`: opened for writing).
pub fn open_effect(kind: PathKind, in_memory: bool, write: bool) -> Result<OpenEffect, Refusal> {
    Ok(match kind {
        PathKind::Private if write => return Err(Refusal::ReadOnly),
        PathKind::Private => OpenEffect::Private,
        _ if in_memory => OpenEffect::Memory,
        PathKind::Document | PathKind::Derived if write => OpenEffect::Buffered,
        PathKind::Derived => OpenEffect::Derived,
        _ => OpenEffect::Disk,
    })
}

/// What deleting a file (`unlink`) means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DeleteEffect {
    /// A memory file is forgotten; the documents it held away are deleted from the store first
    /// (Vim removing its backup after a save that did not replace them).
    Memory,
    /// A document: deleted by a transaction through the save authority.
    Document,
    /// Any other file: removed on disk.
    Disk,
}

/// What deleting the path of kind `kind` holding `held` means.
pub fn delete_effect(kind: PathKind, held: Held) -> Result<DeleteEffect, Refusal> {
    match (kind, held) {
        (PathKind::Private, _) => Err(Refusal::ReadOnly),
        (_, Held::Memory) => Ok(DeleteEffect::Memory),
        (_, Held::Nothing) => Err(Refusal::Missing),
        (_, Held::Folder) => Err(Refusal::IsFolder),
        (PathKind::Document | PathKind::Derived, Held::File) => Ok(DeleteEffect::Document),
        _ => Ok(DeleteEffect::Disk),
    }
}

/// Whether a special file (a device, a FIFO, a socket, a hard link) may be made at a path of
/// kind `kind`: only at a plain path, since a document has exactly one path.
pub fn special_file(kind: PathKind) -> Result<(), Refusal> {
    match kind {
        PathKind::Private => Err(Refusal::ReadOnly),
        PathKind::Plain => Ok(()),
        PathKind::Document | PathKind::Derived | PathKind::Scratch => Err(Refusal::NotPlain),
    }
}

/// Whether a symbolic link may be made at a path of kind `kind` (SPEC §24): at any path of
/// the store's own files, whatever its name (`l.py`, `x.json`: repositories hold such links,
/// and `git checkout` makes them). A link is never a document itself: the store never follows
/// links, so it is neither scanned nor saved, only shown, renamed and deleted as a link.
pub fn symbolic_link(kind: PathKind) -> Result<(), Refusal> {
    match kind {
        PathKind::Private => Err(Refusal::ReadOnly),
        PathKind::Derived => Err(Refusal::NotPlain),
        PathKind::Plain | PathKind::Document | PathKind::Scratch => Ok(()),
    }
}

/// Whether a hard link from a path of kind `from_kind` holding `from_held` may be made at a
/// path of kind `to_kind`: both plain, and the source on disk (memory files have no inode to
/// share).
pub fn hard_link(from_kind: PathKind, from_held: Held, to_kind: PathKind) -> Result<(), Refusal> {
    if from_kind == PathKind::Private || to_kind == PathKind::Private {
        return Err(Refusal::ReadOnly);
    }
    if from_kind != PathKind::Plain || to_kind != PathKind::Plain || from_held == Held::Memory {
        return Err(Refusal::NotPlain);
    }
    Ok(())
}

/// What resizing a file by path (`truncate(2)`, no handle) means.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ResizeEffect {
    /// The memory file at the path is resized; nothing is decided.
    Memory,
    /// A document: the resized content is a save of its own, decided at once.
    Save,
    /// Any other file: resized on disk.
    Disk,
}

/// What resizing the path of kind `kind` by path means (`in_memory`: a memory file is there).
pub fn resize_effect(kind: PathKind, in_memory: bool) -> ResizeEffect {
    match kind {
        _ if in_memory => ResizeEffect::Memory,
        PathKind::Document | PathKind::Derived => ResizeEffect::Save,
        PathKind::Scratch | PathKind::Plain | PathKind::Private => ResizeEffect::Disk,
    }
}

/// What becomes of a memory file when a handle of it closes, it is renamed, or the document
/// it held away settles.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MemoryFate {
    /// It stays in memory.
    Keep,
    /// It goes: a document's memory file only bridges the time until its first commit (or its
    /// last close); after that the disk holds it, or there is nothing to keep.
    Drop,
    /// Its bytes are written to disk at its path, as a plain file (SPEC §24): a temporary name
    /// (`x~`, `build.tmp`, `2020`) is as often a file a tool leaves behind as an editor's
    /// scratch file, and nothing a tool leaves may be lost.
    ToDisk,
}

/// The fate of a memory file at a path of kind `kind` with `open` handles left, which holds
/// the bytes of a document away (Vim's backup) when `holds_away`: a scratch file stays in
/// memory while a handle has it open (an editor's swap file, a `sed -i` temporary until its
/// rename) or while the document it holds is away; then it is written to disk.
pub fn memory_fate(kind: PathKind, open: u32, holds_away: bool) -> MemoryFate {
    match kind {
        _ if open > 0 => MemoryFate::Keep,
        PathKind::Document | PathKind::Derived => MemoryFate::Drop,
        _ if holds_away => MemoryFate::Keep,
        PathKind::Scratch | PathKind::Plain | PathKind::Private => MemoryFate::ToDisk,
    }
}

/// Documents renamed onto a scratch name (Vim's backup before it writes anew, see
/// [`RenameEffect::BackupAway`]): hidden from the mount but still in the store, until a new
/// save at the path replaces them (one transaction), or the scratch file holding their bytes is
/// deleted or moved off (then the document is deleted).
#[derive(Default, Debug)]
pub struct Away {
    /// Each hidden document's path, to the path of the scratch file holding its bytes.
    holders: HashMap<String, String>,
}

impl Away {
    /// The document `doc` is away; the scratch file `holder` holds its bytes.
    pub fn hide(&mut self, doc: &str, holder: &str) {
        self.holders.insert(doc.to_owned(), holder.to_owned());
    }

    /// Whether `path` is a document the mount hides.
    pub fn is_away(&self, path: &str) -> bool {
        self.holders.contains_key(path)
    }

    /// Whether the scratch file `holder` holds the bytes of a document away.
    pub fn holds(&self, holder: &str) -> bool {
        self.holders.values().any(|h| h == holder)
    }

    /// The scratch file holding the bytes of the away document `doc`, if it is away.
    pub fn holder_of(&self, doc: &str) -> Option<&str> {
        self.holders.get(doc).map(String::as_str)
    }

    /// A save (or a delete) replaced the document at `doc`: it is no longer away.
    pub fn settle(&mut self, doc: &str) {
        self.holders.remove(doc);
    }

    /// The scratch file `from` was renamed to the scratch name `to`: it holds the same bytes.
    pub fn follow(&mut self, from: &str, to: &str) {
        for holder in self.holders.values_mut().filter(|h| *h == from) {
            *holder = to.to_owned();
        }
    }

    /// The scratch file `holder` is going away (deleted, or moved off its scratch name to
    /// `saved`): the documents whose bytes it held, to be deleted from the store, except
    /// `saved`, which the move saves again. Each stays away until the front settles it after
    /// its delete is committed, so a refused delete keeps the rest hidden as before. In path
    /// order, so the deletes are made in a stable order.
    pub fn released(&self, holder: &str, saved: Option<&str>) -> Vec<String> {
        let mut docs: Vec<String> = self
            .holders
            .iter()
            .filter(|(doc, held)| *held == holder && Some(doc.as_str()) != saved)
            .map(|(doc, _)| doc.clone())
            .collect();
        docs.sort();
        docs
    }
}

/// The moment a handle's bytes may be decided.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Moment {
    /// Each `close` (and `dup2` over the descriptor).
    Flush,
    Fsync,
    /// The last close; nobody hears the answer.
    Release,
}

/// What a handle open for writing holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Holds {
    /// A document's whole content, buffered in the handle.
    Document,
    /// A memory file's content (a scratch file or a document not committed yet).
    Memory,
}

/// The undecided state of a handle open for writing: whether something since the last
/// decision needs one. A decision is due at a flush, fsync or release after a write; a
/// document's handle truncated with no write since (`bash >` flushes a duplicate before it
/// writes) waits past flushes until an fsync or the last close. A memory file is decided only
/// while its path is a document's (a scratch file waits for a rename).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Pending {
    holds: Holds,
    written: bool,
    truncated: bool,
    /// A decision was made through this handle (whatever its answer).
    decided: bool,
}

impl Pending {
    /// A document's handle, opened with `O_TRUNC` or not.
    pub fn document(truncated: bool) -> Pending {
        Pending { holds: Holds::Document, written: false, truncated, decided: false }
    }

    /// A memory file's handle. An open that truncates leaves nothing to decide before the
    /// last close: a new document created empty (`touch x.json`, `tar` of an empty file) is
    /// offered to the store as it is at its last close, as the folder would keep it (SPEC §24).
    pub fn memory() -> Pending {
        Pending { holds: Holds::Memory, written: false, truncated: false, decided: false }
    }

    /// Bytes were written through the handle.
    pub fn write(&mut self) {
        self.written = true;
        self.truncated = false;
    }

    /// The file was resized through the handle (`ftruncate`).
    pub fn resize(&mut self, size: u64) {
        match self.holds {
            Holds::Document if size == 0 => {
                self.truncated = true;
                self.written = false;
            }
            Holds::Document => self.written = true,
            Holds::Memory => self.written = size > 0,
        }
    }

    /// Whether the handle's bytes differ from the committed document's, so that the document
    /// shows their size.
    pub fn shows_size(&self) -> bool {
        self.written || self.truncated
    }

    /// Whether a decision is due at `when`, for a handle whose path is now of kind `kind`
    /// (`None`: the file was unlinked while open, so there is nothing to save it as).
    pub fn due(&self, when: Moment, kind: Option<PathKind>) -> bool {
        let Some(kind) = kind else { return false };
        match self.holds {
            Holds::Document => self.written || (self.truncated && when != Moment::Flush),
            Holds::Memory => match kind {
                PathKind::Document => self.written || (when == Moment::Release && !self.decided),
                PathKind::Derived => self.written,
                _ => false,
            },
        }
    }

    /// The decision is being made: nothing is pending any more, whatever its answer, so a
    /// refused decision leaves the handle usable (the next write starts a new one).
    pub fn decided(&mut self) {
        self.written = false;
        self.truncated = false;
        self.decided = true;
    }
}

/// Distinguishes rejected files written in the same millisecond.
static REJECTED_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Store {
    /// What the store-relative path `rel` names. Files under `.git/` and the `ignore` globs
    /// are plain whatever their names, so tools that own those folders see ordinary files.
    pub fn path_kind(&self, rel: &str) -> PathKind {
        let first = rel.split('/').next().unwrap_or("");
        if first == PRIVATE_DIR {
            if projections::area(rel).is_none() {
                return PathKind::Private;
            }
            let snapshot = self.snapshot();
            return projections::kind(&snapshot.analysis, rel).unwrap_or(PathKind::Private);
        }
        let ctx = self.inner.ctx();
        let config = &ctx.config;
        if scan::PRIVATE_DIRS.contains(&first) || config.is_ignored(rel, false) {
            return PathKind::Plain;
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if is_scratch_name(name) {
            PathKind::Scratch
        } else if scan::is_document_path(config, rel) || self.is_code_file(rel) {
            PathKind::Document
        } else {
            PathKind::Plain
        }
    }

    /// [`Store::path_kind`] as far as a read-only open needs it: [`open_effect`] without
    /// `write` tells only private and derived paths from the rest, so every path outside the
    /// private folder answers [`PathKind::Plain`] here, without the ignore rules, the document
    /// globs and the language servers' configuration (checked on disk at every call). The
    /// mount's read-only opens ask this: one for each file `grep -r` reads.
    pub fn path_kind_to_read(&self, rel: &str) -> PathKind {
        if rel.split('/').next() == Some(PRIVATE_DIR) {
            self.path_kind(rel)
        } else {
            PathKind::Plain
        }
    }

    /// Let `check` decide which files are code files and their `code-error` rule.
    pub fn set_code_saves(&self, check: Arc<dyn CodeSaves>) {
        *crate::sync::write(&self.inner.code_saves) = Some(check);
    }

    /// Whether `rel` (not a document) is a code file, as the installed [`CodeSaves`] says
    /// (none installed: no file is).
    fn is_code_file(&self, rel: &str) -> bool {
        let check = crate::sync::read(&self.inner.code_saves).clone();
        check.is_some_and(|c| c.is_code(rel))
    }

    /// The folder holding refused saves (it may not exist yet).
    pub fn rejected_dir(&self) -> PathBuf {
        self.inner.root.join(PRIVATE_DIR).join(REJECTED_DIR)
    }

    /// Keep the bytes of a refused save of the document `path`, and beside them a `.why` file
    /// listing why (`path:line:col: severity[code] message` per problem, or the error's
    /// message). Both are synced before this returns. Returns the kept file's name inside
    /// [`Store::rejected_dir`].
    ///
    /// The same bytes refused again for the same path (a handle decided at `flush` and again at
    /// `release`, an editor retrying) are kept once: the name of the copy already kept is
    /// returned.
    pub fn keep_rejected(&self, path: &str, bytes: &[u8], why: &StoreError) -> StoreResult<String> {
        let dir = self.rejected_dir();
        fs::create_dir_all(&dir)
            .map_err(|e| StoreError::io(format!("cannot create {}", dir.display()), e))?;
        let time = rfc3339(SystemTime::now());
        let stamp: String = time.chars().filter(|c| !matches!(c, '-' | ':')).collect();
        let flat = path.replace('%', "%25").replace('/', "%2F");
        if let Some(kept) = last_kept(&dir, &flat)
            && fs::read(dir.join(&kept)).is_ok_and(|k| k == bytes)
        {
            return Ok(kept);
        }
        loop {
            let n = REJECTED_COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("{stamp}-{n}-{flat}");
            // The `.why` goes first, so whoever sees the kept bytes finds the reason beside them.
            let text = self.why_text(path, bytes, why, &time);
            match write_new(&dir.join(format!("{name}.why")), text.as_bytes()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(StoreError::io(
                        format!("cannot write why the save of {path} was refused"),
                        e,
                    ));
                }
            }
            write_new(&dir.join(&name), bytes).map_err(|e| {
                StoreError::io(format!("cannot keep the refused save of {path}"), e)
            })?;
            if let Ok(folder) = fs::File::open(&dir) {
                // Best effort: the files themselves are synced.
                let _ = folder.sync_all();
            }
            let mut refusals = crate::sync::lock(&self.inner.refusals);
            if refusals.len() == RECENT_REFUSALS {
                refusals.pop_front();
            }
            refusals.push_back(KeptRefusal {
                time: time.clone(),
                path: path.to_owned(),
                code: why.code().to_string(),
                message: why.to_string(),
                kept: name.clone(),
            });
            return Ok(name);
        }
    }

    /// The latest refused saves kept by [`Store::keep_rejected`], oldest first.
    pub fn refusals(&self) -> Vec<KeptRefusal> {
        crate::sync::lock(&self.inner.refusals).iter().cloned().collect()
    }

    fn why_text(&self, path: &str, bytes: &[u8], why: &StoreError, time: &str) -> String {
        let mut out = format!("the save of {path} at {time} was refused [{}]\n", why.code());
        if let StoreError::CodeRefused { errors } = why {
            for line in errors {
                out.push_str(line);
                out.push('\n');
            }
            return out;
        }
        let StoreError::Refused { problems } = why else {
            out.push_str(&why.to_string());
            out.push('\n');
            return out;
        };
        let snapshot = self.snapshot();
        let saved = String::from_utf8_lossy(bytes);
        // A derived file's save rewrote its document: positions there are in the rewritten text.
        let rewritten: Vec<(String, String)> = match projections::area(path) {
            None => Vec::new(),
            Some(_) => {
                let change = Change::put(path, bytes.to_vec());
                projections::translate(&snapshot.analysis, vec![change])
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|c| match c.op {
                        ChangeOp::Put(b) | ChangeOp::Create(b) => {
                            Some((c.path, String::from_utf8_lossy(&b).into_owned()))
                        }
                        ChangeOp::Delete => None,
                    })
                    .collect()
            }
        };
        for (doc_path, d) in problems {
            let rewrite = rewritten.iter().find(|(p, _)| p == doc_path);
            let (text, index) = if doc_path == path {
                (saved.to_string(), LineIndex::new(&saved))
            } else if let Some((_, text)) = rewrite {
                (text.clone(), LineIndex::new(text))
            } else {
                match snapshot.analysis.document(doc_path) {
                    Some(doc) => (doc.text.to_string(), doc.line_index.clone()),
                    None => (String::new(), LineIndex::new("")),
                }
            };
            let pos = index.position(&text, d.span.start, Encoding::Utf32);
            out.push_str(&format!(
                "{doc_path}:{}:{}: {}[{}] {}\n",
                pos.line + 1,
                pos.column + 1,
                d.severity.as_str(),
                d.code,
                d.message
            ));
        }
        out
    }
}

/// The name of the newest refused save of the path flattened as `flat` kept in `dir`: names
/// start with their time stamp and a counter, so the greatest name among those ending in
/// `-<flat>` is the newest.
fn last_kept(dir: &Path, flat: &str) -> Option<String> {
    let suffix = format!("-{flat}");
    fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.strip_suffix(&suffix)
                .and_then(|head| head.rsplit_once('-'))
                .is_some_and(|(_, n)| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .max_by(|a, b| kept_order(a).cmp(&kept_order(b)))
}

/// A kept name's time stamp and counter, which order kept saves (the counter restarts with the
/// process, the stamp does not).
fn kept_order(name: &str) -> (&str, u64) {
    let mut parts = name.splitn(3, '-');
    let stamp = parts.next().unwrap_or("");
    let n = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    (stamp, n)
}

fn write_new(path: &std::path::Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Change, Origin};

    #[test]
    fn scratch_names() {
        let scratch = [
            ".dune.dust.swp",
            ".dune.dust.swo",
            "4913",
            "5036",
            "dune.dust~",
            "sedAbC123",
            "tmpk3j_x9a1",
            "tmpk3j_x9a1.json",
            ".tmp-dune.dust",
            "dune.json.tmp",
            ".goutputstream-ABC123",
            ".#dune.dust",
            "#dune.dust#",
        ];
        for name in scratch {
            assert!(is_scratch_name(name), "{name} should be scratch");
        }
        let not =
            ["dune.dust", "README.md", "sed.json", "tmp.json", "swp", ".swp", "a.sw", "#", "notes"];
        for name in not {
            assert!(!is_scratch_name(name), "{name} should not be scratch");
        }
    }

    use crate::store::test_store as store;

    #[test]
    fn path_kinds() {
        let (_dir, store) = store(&[("stardust.toml", "[store]\nignore = [\"vendor/**\"]\n")]);
        let cases = [
            ("books/dune.dust", PathKind::Document),
            ("people/frank.json", PathKind::Document),
            ("books/.dune.dust.swp", PathKind::Scratch),
            ("books/4913", PathKind::Scratch),
            ("books/dune.dust~", PathKind::Scratch),
            ("README.md", PathKind::Plain),
            ("vendor/x.json", PathKind::Plain),
            ("vendor/4913", PathKind::Plain),
            (".git/x.json", PathKind::Plain),
            (".stardust/log/x", PathKind::Private),
            (".stardust", PathKind::Private),
        ];
        for (path, kind) in cases {
            assert_eq!(store.path_kind(path), kind, "{path}");
            // A read-only open is the same whichever kind answers.
            for in_memory in [false, true] {
                assert_eq!(
                    open_effect(store.path_kind_to_read(path), in_memory, false),
                    open_effect(kind, in_memory, false),
                    "{path}"
                );
            }
        }
    }

    #[test]
    fn keeps_refused_bytes_with_why() {
        let (_dir, store) = store(&[("a.json", "{\"id\": \"a\", \"type\": \"t\"}\n")]);
        let bad = b"{\"id\": \"a\", \"type\": \"t\",\n  oops}\n".to_vec();
        let err = store.commit(Origin::Mount, vec![Change::put("books/a.json", bad.clone())]);
        let err = err.unwrap_err();
        assert_eq!(err.code(), "refused");
        let name = store.keep_rejected("books/a.json", &bad, &err).unwrap();
        assert!(name.ends_with("-books%2Fa.json"), "{name}");
        let kept = fs::read(store.rejected_dir().join(&name)).unwrap();
        assert_eq!(kept, bad);
        let why = fs::read_to_string(store.rejected_dir().join(format!("{name}.why"))).unwrap();
        let lines: Vec<&str> = why.lines().collect();
        assert!(lines[0].starts_with("the save of books/a.json at "), "{why}");
        assert!(lines[0].ends_with(" was refused [refused]"), "{why}");
        // Positions in the refused bytes, and in the other documents the save would break.
        assert!(lines.iter().any(|l| l.starts_with("books/a.json:2:3: error[syntax] ")), "{why}");
        assert!(lines.iter().any(|l| l.starts_with("a.json:1:8: error[duplicate-id] ")), "{why}");

        // The same bytes refused again are kept once; other bytes of the same path in the
        // same millisecond get their own file.
        assert_eq!(store.keep_rejected("books/a.json", &bad, &err).unwrap(), name);
        let other = store.keep_rejected("books/a.json", b"x", &err).unwrap();
        assert_ne!(other, name);
        let kept = fs::read_dir(store.rejected_dir()).unwrap().count();
        assert_eq!(kept, 4, "two saves, each with its .why");
        // Each kept refusal is listed for `stardust.status`.
        let listed: Vec<(String, String)> =
            store.refusals().into_iter().map(|r| (r.path, r.kept)).collect();
        assert_eq!(listed, [("books/a.json".to_owned(), name), ("books/a.json".to_owned(), other)]);
    }

    /// The kind of `path` under the default configuration with `ignore = ["vendor/**"]`, as
    /// [`Store::path_kind`] gives it (checked against the store in `kinds_match_the_store`).
    fn kind(path: &str) -> PathKind {
        let name = path.rsplit('/').next().unwrap_or(path);
        if path.split('/').next() == Some(PRIVATE_DIR) {
            PathKind::Private
        } else if path.starts_with("vendor/") {
            PathKind::Plain
        } else if is_scratch_name(name) {
            PathKind::Scratch
        } else if name.ends_with(".json") || name.ends_with(".dust") {
            PathKind::Document
        } else {
            PathKind::Plain
        }
    }

    const PATHS: &[&str] = &[
        "books/dune.json",
        "books/dune.dust",
        "books/sedAbC123",
        "books/.goutputstream-ABC123",
        "books/tmpk3j_x9a1",
        "books/.dune.json.swp",
        "books/4913",
        "books/dune.json~",
        "books/dune.json.new",
        "books/dune.bak",
        "vendor/dune.json",
        ".stardust/rejected/x",
        "books",
    ];

    #[test]
    fn kinds_match_the_store() {
        let (_dir, store) = store(&[("stardust.toml", "[store]\nignore = [\"vendor/**\"]\n")]);
        for path in PATHS {
            assert_eq!(kind(path), store.path_kind(path), "{path}");
        }
    }

    fn rename<'a>(from: (&'a str, Held), to: (&'a str, Held), mode: RenameMode) -> Rename<'a> {
        Rename {
            from: from.0,
            to: to.0,
            from_kind: kind(from.0),
            to_kind: kind(to.0),
            from_held: from.1,
            to_held: to.1,
            mode,
        }
    }

    /// The pattern, the source and what it holds, the target and what it holds, the mode, and
    /// what the rename means.
    type RenameRow<'a> = (&'a str, (&'a str, Held), (&'a str, Held), RenameMode, RenameEffect);

    #[test]
    fn renames() {
        use Held::*;
        use RenameEffect::{
            BackupAway, LeaveDocuments, MoveDocument, MoveFolder, Plain, Refuse, Save, Scratch,
        };
        use RenameMode::{NoReplace, Replace};
        let rows: &[RenameRow<'_>] = &[
            // Write-temp-then-rename: the temporary file is a scratch file in memory, or a
            // plain file on disk; either way the rename is one save of the document.
            (
                "sed -i",
                ("books/sedAbC123", Memory),
                ("books/dune.json", File),
                Replace,
                Save { from: Source::Memory },
            ),
            (
                "gedit",
                ("books/.goutputstream-ABC123", Memory),
                ("books/dune.json", File),
                Replace,
                Save { from: Source::Memory },
            ),
            (
                "python mkstemp + os.replace",
                ("books/tmpk3j_x9a1", Memory),
                ("books/dune.json", File),
                Replace,
                Save { from: Source::Memory },
            ),
            (
                "Helix, libraries: x.json.new onto x.json",
                ("books/dune.json.new", File),
                ("books/dune.json", File),
                Replace,
                Save { from: Source::Disk },
            ),
            (
                "a new document written in memory, renamed onto a new document path",
                ("books/dune.json", Memory),
                ("books/dune.dust", Nothing),
                Replace,
                Save { from: Source::Memory },
            ),
            (
                "a scratch file onto a document that is away",
                ("books/dune.json~", Memory),
                ("books/dune.json", Nothing),
                Replace,
                Save { from: Source::Memory },
            ),
            // Rename-original-then-write (Vim `backupcopy=no`).
            (
                "vim backupcopy=no: the document moved to its backup",
                ("books/dune.json", File),
                ("books/dune.json~", Nothing),
                Replace,
                BackupAway,
            ),
            (
                "a document onto an existing swap file",
                ("books/dune.json", File),
                ("books/.dune.json.swp", Memory),
                Replace,
                BackupAway,
            ),
            // Scratch files stay outside the store.
            (
                "a scratch file renamed to another scratch name",
                ("books/4913", Memory),
                ("books/dune.json~", Nothing),
                Replace,
                Scratch,
            ),
            (
                "a plain file on disk renamed to a scratch name stays on disk",
                ("books/dune.bak", File),
                ("books/dune.json~", Nothing),
                Replace,
                Plain { from: Source::Disk },
            ),
            (
                "a scratch file renamed to a plain name lands on disk",
                ("books/dune.json~", Memory),
                ("books/dune.bak", Nothing),
                Replace,
                Plain { from: Source::Memory },
            ),
            // Documents moved.
            (
                "mv a.json b.json",
                ("books/dune.json", File),
                ("books/dune.dust", Nothing),
                Replace,
                MoveDocument,
            ),
            (
                "a document moved out of the documents",
                ("books/dune.json", File),
                ("books/dune.bak", Nothing),
                Replace,
                LeaveDocuments,
            ),
            (
                "a document moved into an ignored folder",
                ("books/dune.json", File),
                ("vendor/dune.json", Nothing),
                Replace,
                LeaveDocuments,
            ),
            ("a folder", ("books", Folder), ("shelf", Nothing), Replace, MoveFolder),
            // Plain files pass through.
            (
                "a plain file",
                ("books/dune.bak", File),
                ("vendor/dune.json", Nothing),
                Replace,
                Plain { from: Source::Disk },
            ),
            (
                "a link named like a document keeps being a link",
                ("books/dune.json", Special),
                ("books/dune.json~", Nothing),
                Replace,
                Plain { from: Source::Disk },
            ),
            // Refused.
            (
                "a link onto a document",
                ("books/dune.bak", Special),
                ("books/dune.json", File),
                Replace,
                Refuse(Refusal::NotRegular),
            ),
            (
                "into the private folder",
                ("books/dune.json", File),
                (".stardust/rejected/x", Nothing),
                Replace,
                Refuse(Refusal::ReadOnly),
            ),
            (
                "out of the private folder",
                (".stardust/rejected/x", File),
                ("books/dune.bak", Nothing),
                Replace,
                Refuse(Refusal::ReadOnly),
            ),
            (
                "RENAME_NOREPLACE onto an existing document",
                ("books/sedAbC123", Memory),
                ("books/dune.json", File),
                NoReplace,
                Refuse(Refusal::Exists),
            ),
            (
                "RENAME_NOREPLACE onto a free name",
                ("books/sedAbC123", Memory),
                ("books/dune.json", Nothing),
                NoReplace,
                Save { from: Source::Memory },
            ),
            (
                "RENAME_EXCHANGE",
                ("books/dune.json", File),
                ("books/dune.dust", File),
                RenameMode::Unsupported,
                Refuse(Refusal::Unsupported),
            ),
            (
                "a memory file onto a folder",
                ("books/dune.json~", Memory),
                ("books", Folder),
                Replace,
                Refuse(Refusal::IsFolder),
            ),
            (
                "a document onto a folder",
                ("books/dune.json", File),
                ("books", Folder),
                Replace,
                Refuse(Refusal::IsFolder),
            ),
            (
                "a document hidden while away",
                ("books/dune.json", Nothing),
                ("books/dune.dust", Nothing),
                Replace,
                Refuse(Refusal::Missing),
            ),
            (
                "onto itself",
                ("books/dune.json", File),
                ("books/dune.json", File),
                Replace,
                RenameEffect::Nothing,
            ),
            (
                "onto itself, even when it does not replace",
                ("books/dune.json", File),
                ("books/dune.json", File),
                NoReplace,
                Refuse(Refusal::Exists),
            ),
        ];
        for (pattern, from, to, mode, expected) in rows {
            assert_eq!(rename_effect(&rename(*from, *to, *mode)), *expected, "{pattern}");
        }
    }

    /// Every combination of kinds, holdings and modes (the table is finite) keeps SPEC §14's
    /// promises: the private folder is never written, only a document path receives a save,
    /// only a document on disk leaves the documents, a scratch name never reaches the store.
    #[test]
    fn every_rename_keeps_the_spec_promises() {
        use PathKind::*;
        use RenameEffect as E;
        let kinds = [Document, Scratch, Private, Plain];
        let held = [Held::Nothing, Held::Memory, Held::File, Held::Folder, Held::Special];
        let modes = [RenameMode::Replace, RenameMode::NoReplace, RenameMode::Unsupported];
        let mut seen = std::collections::HashSet::new();
        for (from_kind, from_held, to_kind, to_held, mode, same) in combinations(kinds, held, modes)
        {
            let r = Rename {
                from: "a",
                to: if same { "a" } else { "b" },
                from_kind,
                to_kind,
                from_held,
                to_held,
                mode,
            };
            let effect = rename_effect(&r);
            seen.insert(format!("{effect:?}"));
            let case = format!("{r:?} -> {effect:?}");
            if mode == RenameMode::Unsupported {
                assert_eq!(effect, E::Refuse(Refusal::Unsupported), "{case}");
            } else if from_kind == Private || to_kind == Private {
                assert_eq!(effect, E::Refuse(Refusal::ReadOnly), "{case}");
            }
            let commits_to = matches!(effect, E::Save { .. } | E::MoveDocument);
            assert!(!commits_to || to_kind == Document, "only a document path is saved: {case}");
            let removes_document =
                matches!(effect, E::MoveDocument | E::BackupAway | E::LeaveDocuments);
            assert!(
                !removes_document || (from_kind == Document && from_held == Held::File),
                "only a document on disk leaves its path: {case}"
            );
            if to_kind == Scratch {
                assert!(
                    matches!(
                        effect,
                        E::Refuse(_)
                            | E::Nothing
                            | E::Scratch
                            | E::BackupAway
                            | E::MoveFolder
                            | E::Plain { from: Source::Disk }
                    ),
                    "a scratch name stays out of the store: {case}"
                );
            }
            if from_held == Held::Memory && !matches!(effect, E::Refuse(_) | E::Nothing) {
                assert!(
                    matches!(
                        effect,
                        E::Save { from: Source::Memory }
                            | E::Scratch
                            | E::Plain { from: Source::Memory }
                    ),
                    "a memory file's bytes move as a memory file's: {case}"
                );
            }
        }
        // Every effect is reachable.
        assert_eq!(seen.len(), 16, "{seen:?}");
    }

    /// From kind, from held, to kind, to held, mode, and whether both are the same path.
    type Case = (PathKind, Held, PathKind, Held, RenameMode, bool);

    /// Every [`Case`].
    fn combinations(kinds: [PathKind; 4], held: [Held; 5], modes: [RenameMode; 3]) -> Vec<Case> {
        let mut all = Vec::new();
        for fk in kinds {
            for fh in held {
                for tk in kinds {
                    for th in held {
                        for mode in modes {
                            for same in [false, true] {
                                all.push((fk, fh, tk, th, mode, same));
                            }
                        }
                    }
                }
            }
        }
        all
    }

    /// Derived files (`.stardust/entities/<id>.json`, `.stardust/json/<path>.json`): saved
    /// like documents, never moved.
    #[test]
    fn derived_files_are_saved_and_deleted_like_documents_and_never_moved() {
        use Held::*;
        use PathKind::{Derived, Document, Plain, Scratch};
        let rename = |from_kind, from_held, to_kind, to_held| {
            rename_effect(&Rename {
                from: "a",
                to: "b",
                from_kind,
                to_kind,
                from_held,
                to_held,
                mode: RenameMode::Replace,
            })
        };
        let cross = RenameEffect::Refuse(Refusal::CrossDerived);
        // sed -i, mkstemp + os.replace in a derived folder; a plain file moved onto one.
        assert_eq!(
            rename(Scratch, Memory, Derived, File),
            RenameEffect::Save { from: Source::Memory }
        );
        assert_eq!(rename(Plain, File, Derived, File), RenameEffect::Save { from: Source::Disk });
        // A derived file has no bytes of its own to move, and a document is not one.
        for (to_kind, to_held) in
            [(Derived, Nothing), (Document, File), (Scratch, Nothing), (Plain, Nothing)]
        {
            assert_eq!(rename(Derived, File, to_kind, to_held), cross, "to {to_kind:?}");
        }
        assert_eq!(rename(Document, File, Derived, File), cross);
        assert_eq!(create_effect(Derived, false, false), Ok(CreateEffect::Memory));
        assert_eq!(create_effect(Derived, true, false), Ok(CreateEffect::Open));
        assert_eq!(open_effect(Derived, false, false), Ok(OpenEffect::Derived));
        assert_eq!(open_effect(Derived, false, true), Ok(OpenEffect::Buffered));
        assert_eq!(open_effect(Derived, true, true), Ok(OpenEffect::Memory));
        assert_eq!(delete_effect(Derived, File), Ok(DeleteEffect::Document));
        assert_eq!(resize_effect(Derived, false), ResizeEffect::Save);
        assert_eq!(special_file(Derived), Err(Refusal::NotPlain));
        assert_eq!(memory_fate(Derived, 0, false), MemoryFate::Drop);
        let mut pending = Pending::memory();
        pending.write();
        assert!(pending.due(Moment::Flush, Some(Derived)));
    }

    #[test]
    fn documents_in_a_moved_folder() {
        let rows = [
            ("authors/frank.json", MovedDocument::Document),
            ("vendor/frank.json", MovedDocument::LeavesDocuments),
            ("authors/frank.txt", MovedDocument::LeavesDocuments),
        ];
        for (moved, expected) in rows {
            assert_eq!(moved_document(kind(moved)), expected, "{moved}");
        }
    }

    #[test]
    fn creates_opens_deletes_and_special_files() {
        use Held::*;
        // (path, exists, O_EXCL) -> create
        let creates = [
            ("books/a.json", false, false, Ok(CreateEffect::Memory)),
            ("books/.dune.json.swp", false, true, Ok(CreateEffect::Memory)),
            ("books/4913", false, false, Ok(CreateEffect::Memory)),
            ("books/dune.json~", false, false, Ok(CreateEffect::Memory)),
            ("books/notes.txt", false, false, Ok(CreateEffect::Disk)),
            ("vendor/dune.json", false, false, Ok(CreateEffect::Disk)),
            ("books/dune.json", true, false, Ok(CreateEffect::Open)),
            ("books/dune.json", true, true, Err(Refusal::Exists)),
            (".stardust/new", false, false, Err(Refusal::ReadOnly)),
        ];
        for (path, exists, excl, expected) in creates {
            assert_eq!(create_effect(kind(path), exists, excl), expected, "create {path}");
        }
        // (path, a memory file there, for writing) -> open
        let opens = [
            ("books/dune.json", false, true, Ok(OpenEffect::Buffered)),
            ("books/dune.json", false, false, Ok(OpenEffect::Disk)),
            ("books/dune.json", true, true, Ok(OpenEffect::Memory)),
            ("books/.dune.json.swp", true, true, Ok(OpenEffect::Memory)),
            ("books/4913", false, true, Ok(OpenEffect::Disk)),
            ("books/notes.txt", false, true, Ok(OpenEffect::Disk)),
            (".stardust/store.json", false, false, Ok(OpenEffect::Private)),
            (".stardust/store.json", false, true, Err(Refusal::ReadOnly)),
        ];
        for (path, mem, write, expected) in opens {
            assert_eq!(open_effect(kind(path), mem, write), expected, "open {path}");
        }
        let deletes = [
            ("books/dune.json", File, Ok(DeleteEffect::Document)),
            ("books/dune.json", Memory, Ok(DeleteEffect::Memory)),
            ("books/dune.json~", Memory, Ok(DeleteEffect::Memory)),
            ("books/4913", Memory, Ok(DeleteEffect::Memory)),
            ("books/dune.json", Special, Ok(DeleteEffect::Disk)),
            ("books/notes.txt", File, Ok(DeleteEffect::Disk)),
            ("vendor/dune.json", File, Ok(DeleteEffect::Disk)),
            ("books", Folder, Err(Refusal::IsFolder)),
            ("books/gone.json", Nothing, Err(Refusal::Missing)),
            (".stardust/store.json", File, Err(Refusal::ReadOnly)),
        ];
        for (path, held, expected) in deletes {
            assert_eq!(delete_effect(kind(path), held), expected, "delete {path}");
        }
        let resizes = [
            ("books/dune.json", false, ResizeEffect::Save),
            ("books/dune.json", true, ResizeEffect::Memory),
            ("books/dune.json~", true, ResizeEffect::Memory),
            ("books/notes.txt", false, ResizeEffect::Disk),
        ];
        for (path, mem, expected) in resizes {
            assert_eq!(resize_effect(kind(path), mem), expected, "truncate {path}");
        }
        let specials = [
            ("books/notes.txt", Ok(())),
            ("vendor/dune.json", Ok(())),
            ("books/dune.json", Err(Refusal::NotPlain)),
            ("books/4913", Err(Refusal::NotPlain)),
            (".stardust/x", Err(Refusal::ReadOnly)),
        ];
        for (path, expected) in specials {
            assert_eq!(special_file(kind(path)), expected, "mknod {path}");
        }
        let links = [
            ("books/notes.txt", File, "books/more.txt", Ok(())),
            ("books/notes.txt", File, "books/more.json", Err(Refusal::NotPlain)),
            ("books/dune.json", File, "books/more.txt", Err(Refusal::NotPlain)),
            ("books/dune.json", File, ".stardust/x", Err(Refusal::ReadOnly)),
            ("books/notes.txt", Memory, "books/more.txt", Err(Refusal::NotPlain)),
        ];
        for (from, held, to, expected) in links {
            assert_eq!(hard_link(kind(from), held, kind(to)), expected, "link {from} {to}");
        }
    }

    #[test]
    fn memory_files_live_until() {
        use MemoryFate::*;
        let rows = [
            ("books/a.json", 1, false, Keep),
            ("books/a.json", 0, false, Drop),
            ("books/.a.json.swp", 1, false, Keep),
            ("books/4913", 1, true, Keep),
            // Left behind by a tool: written to disk, never lost.
            ("books/.a.json.swp", 0, false, ToDisk),
            ("books/2020", 0, false, ToDisk),
            ("books/build.tmp", 0, false, ToDisk),
            // Vim's backup holds a document away until the new save settles it.
            ("books/a.json~", 0, true, Keep),
            ("books/a.json~", 0, false, ToDisk),
        ];
        for (path, open, holds_away, fate) in rows {
            assert_eq!(
                memory_fate(kind(path), open, holds_away),
                fate,
                "{path} with {open} open, holding away: {holds_away}"
            );
        }
    }

    /// One step on a handle open for writing.
    #[derive(Clone, Copy, Debug)]
    enum Op {
        Write,
        Resize(u64),
        Decide(Moment),
    }

    /// The pattern, the handle as opened, what happens to it, the kind of its path when it is
    /// asked (`None`: unlinked), and for each moment (flush, fsync, release) whether a decision
    /// is due.
    type HandleRow<'a> = (&'a str, Pending, &'a [Op], Option<PathKind>, [bool; 3]);

    #[test]
    fn handles_are_decided() {
        use Moment::{Flush, Fsync, Release};
        use Op::*;
        let doc = Some(PathKind::Document);
        let scratch = Some(PathKind::Scratch);
        let rows: &[HandleRow<'_>] = &[
            (
                "write-in-place (VS Code), closed",
                Pending::document(false),
                &[Write],
                doc,
                [true; 3],
            ),
            ("opened for writing, nothing written", Pending::document(false), &[], doc, [false; 3]),
            (
                "bash `>`: the duplicate flushed before the write",
                Pending::document(true),
                &[],
                doc,
                [false, true, true],
            ),
            ("bash `>`: after its write", Pending::document(true), &[Write], doc, [true; 3]),
            (
                "`truncate -s 0`: decided at fsync or the last close only",
                Pending::document(false),
                &[Resize(0)],
                doc,
                [false, true, true],
            ),
            ("`ftruncate` to a size", Pending::document(false), &[Resize(10)], doc, [true; 3]),
            (
                "a write after a truncation",
                Pending::document(false),
                &[Resize(0), Write],
                doc,
                [true; 3],
            ),
            ("already decided", Pending::document(false), &[Write, Decide(Flush)], doc, [false; 3]),
            (
                "a refused decision leaves the handle usable: the next write is decided",
                Pending::document(false),
                &[Write, Decide(Fsync), Write],
                doc,
                [true; 3],
            ),
            ("unlinked while open", Pending::document(false), &[Write], None, [false; 3]),
            ("a new document written", Pending::memory(), &[Write], doc, [true; 3]),
            ("a new document closed empty", Pending::memory(), &[], doc, [false, false, true]),
            (
                "a new document written then truncated to nothing",
                Pending::memory(),
                &[Write, Resize(0)],
                doc,
                [false, false, true],
            ),
            (
                "a new document decided, then closed",
                Pending::memory(),
                &[Write, Decide(Fsync)],
                doc,
                [false; 3],
            ),
            ("a new document given a size", Pending::memory(), &[Resize(5)], doc, [true; 3]),
            (
                "a swap file written (waits for a rename)",
                Pending::memory(),
                &[Write],
                scratch,
                [false; 3],
            ),
            ("a memory file unlinked while open", Pending::memory(), &[Write], None, [false; 3]),
        ];
        for (pattern, opened, ops, kind, due) in rows {
            let mut handle = *opened;
            for op in *ops {
                match op {
                    Write => handle.write(),
                    Resize(size) => handle.resize(*size),
                    Decide(when) => {
                        assert!(handle.due(*when, Some(PathKind::Document)), "{pattern}: {op:?}");
                        handle.decided();
                    }
                }
            }
            let got = [Flush, Fsync, Release].map(|when| handle.due(when, *kind));
            assert_eq!(got, *due, "{pattern}");
        }
    }

    #[test]
    fn pending_sizes_show_while_undecided() {
        let mut handle = Pending::document(false);
        assert!(!handle.shows_size(), "nothing written: the committed size");
        handle.resize(0);
        assert!(handle.shows_size(), "truncated: the handle's size");
        handle.write();
        assert!(handle.shows_size());
        handle.decided();
        assert!(!handle.shows_size(), "decided: the committed size again");
        assert!(Pending::document(true).shows_size(), "opened with O_TRUNC");
    }

    /// Vim with `backupcopy=no`, step by step as the mount sees it: every step's effect, and
    /// one decision in all.
    #[test]
    fn vim_backupcopy_no_is_one_save() {
        let (doc, backup) = ("books/dune.json", "books/dune.json~");
        let mut away = Away::default();
        // rename(dune.json, dune.json~)
        let r = rename((doc, Held::File), (backup, Held::Nothing), RenameMode::Replace);
        assert_eq!(rename_effect(&r), RenameEffect::BackupAway);
        away.hide(doc, backup);
        // open(dune.json, O_CREAT|O_TRUNC|O_WRONLY): the file is still on disk, but the mount
        // hides it while it is away, so the open creates a new document.
        let on_disk = true;
        let exists = on_disk && !away.is_away(doc);
        assert_eq!(create_effect(kind(doc), exists, false), Ok(CreateEffect::Memory));
        assert_eq!(open_effect(kind(doc), true, true), Ok(OpenEffect::Memory));
        let mut handle = Pending::memory();
        handle.write();
        // fsync, then close: one decision; the save settles the document.
        assert!(handle.due(Moment::Fsync, Some(kind(doc))));
        handle.decided();
        away.settle(doc);
        assert!(!handle.due(Moment::Flush, Some(kind(doc))));
        assert!(!handle.due(Moment::Release, Some(kind(doc))));
        assert_eq!(memory_fate(kind(doc), 0, false), MemoryFate::Drop, "goes at close");
        // Holding nothing away any more, the backup is a file left behind: on disk.
        assert_eq!(memory_fate(kind(backup), 0, away.holds(backup)), MemoryFate::ToDisk);
        // unlink(dune.json~): a file on disk, holding nothing away.
        assert_eq!(delete_effect(kind(backup), Held::File), Ok(DeleteEffect::Disk));
        assert_eq!(away.released(backup, None), Vec::<String>::new());
    }

    #[test]
    fn away_documents() {
        let mut away = Away::default();
        // Vim `backupcopy=no`: the document moves to its backup, a new save replaces it, then
        // the backup is deleted: nothing left to delete.
        away.hide("books/dune.json", "books/dune.json~");
        assert!(away.is_away("books/dune.json"));
        assert!(!away.is_away("books/dune.json~"));
        away.settle("books/dune.json");
        assert!(!away.is_away("books/dune.json"));
        assert_eq!(away.released("books/dune.json~", None), Vec::<String>::new());

        // Moved aside and then deleted: the document is deleted.
        away.hide("books/gone.json", "books/gone.json~");
        assert_eq!(away.released("books/gone.json~", None), ["books/gone.json"]);
        assert!(away.is_away("books/gone.json"), "until its delete is committed");
        away.settle("books/gone.json");

        // The backup moved to another scratch name carries the document along; moved back onto
        // the document's path, it saves that one and deletes the others it held.
        away.hide("books/a.json", "books/x~");
        away.hide("books/b.json", "books/x~");
        away.follow("books/x~", "books/.x.swp");
        assert_eq!(away.released("books/x~", None), Vec::<String>::new());
        assert_eq!(away.released("books/.x.swp", None), ["books/a.json", "books/b.json"]);
        assert_eq!(away.released("books/.x.swp", Some("books/a.json")), ["books/b.json"]);
    }
}

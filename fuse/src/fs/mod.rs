//! The FUSE filesystem: kernel requests converted into store reads and commits.
//!
//! Three kinds of file live in the mount (the core's `PathKind` decides which a path is, and
//! `stardust_core::store::saves` what each operation on it means and when a handle is decided):
//! - documents: read from disk (which always holds the committed content); a handle opened for
//!   writing buffers the whole content and hands it to the save authority at `flush`, `fsync`,
//!   `release` and when a file is renamed onto a document path;
//! - memory files: editors' scratch files, and documents created but not yet committed; they
//!   never touch the store's folder;
//! - plain files and folders: passed through to the store's folder as they are, except that a
//!   plain file opened with `O_TRUNC` or created is written into a spare the core keeps
//!   (`stardust_core::store::spare_writes`) and put in place at its last writer's close; its
//!   path shows the spare meanwhile (attributes, listing, opens, changes by path).
//!
//! The virtual `.stardust/` folder is read-only (see `private`).
//!
//! Invariants: a just-truncated handle with no write since (`bash >` closes a duplicate
//! before writing) is never decided at `flush`; a refused decision leaves the handle usable;
//! the handle map's lock is never held while waiting for a handle's lock (a handle stays
//! locked for the whole of a commit).

use stardust_core::sync::{self, lock};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::time::{Duration, SystemTime};

use fuser::{
    BackingId, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr,
    ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use nix::fcntl::OFlag;
use nix::sys::stat::{Mode, SFlag};
use stardust_core::Code;
use stardust_core::store::saves::{
    Away, CreateEffect, DeleteEffect, Held, MemoryFate, Moment, OpenEffect, Pending, Refusal,
    ResizeEffect, create_effect, delete_effect, hard_link, memory_fate, open_effect, resize_effect,
    special_file, symbolic_link,
};
use stardust_core::store::{
    Change, FolderWatch, Origin, PRIVATE_DIR, PathKind, Store, StoreError, Version,
};
use stardust_core::views::Live;

use crate::nodes::{self, Nodes, ROOT};
use crate::passthrough::{Answer, Passthrough};
use crate::private;

mod attr;
mod projections;
mod rename;
mod views;

use attr::{disk_attr, mem_attr, synthetic_attr, time_of, timespec};

/// How long the kernel may cache the names and attributes of files and folders on disk whose
/// changes made in the folder the mount does not hear of (a store not watched, or a folder the
/// watcher could not watch): this bounds how long such an edit goes unseen.
const TTL: Duration = Duration::from_secs(1);

/// How long the kernel may cache the names and attributes of files whose every change the
/// mount hears of, and which invalidates the kernel's entries at once (`lib.rs`): every file
/// and folder the store's watcher hears of (`FolderWatch::hears`: edits made in the folder),
/// documents and code files (commits through any path), derived files (made from commits) and
/// memory files (held by the mount).
const KNOWN_TTL: Duration = Duration::from_secs(60);

/// A kernel cache entry to drop, sent to the thread that talks to the kernel (the kernel may
/// wait on a request in flight before it answers, so never from a request handler).
#[derive(Debug)]
pub enum Inval {
    Inode(u64),
    Entry(u64, String),
}

/// A handle's part in a spare it writes into.
#[derive(Debug, Clone, Copy)]
struct Spare {
    id: u64,
    /// Whether the handle wrote since it opened (a close that wrote nothing decides nothing).
    written: bool,
}

/// A file held in memory: a scratch file, or a document created and not yet committed.
#[derive(Debug)]
struct MemFile {
    content: Vec<u8>,
    perm: u16,
    uid: u32,
    gid: u32,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
    /// Open handles; a document's entry goes away with its last handle.
    open: u32,
}

#[derive(Debug)]
enum Handle {
    /// A file on disk: plain files, documents opened for reading, kept rejected saves. Shared
    /// so that reads (the kernel reads ahead in parallel) need not hold the handle's lock.
    /// `spare`: the spare a plain file is written into until its last writer closes it
    /// (`stardust_core::store::spare_writes`).
    Disk { ino: u64, file: Arc<File>, spare: Option<Spare> },
    /// A generated read-only file (`.stardust/`), fixed at open.
    Bytes(Vec<u8>),
    /// A memory file; its content lives in the memory table under its current path.
    Mem { ino: u64, pending: Pending },
    /// A document opened for writing, with its whole content buffered.
    Doc { ino: u64, content: Vec<u8>, pending: Pending },
}

pub struct StardustFs {
    store: Arc<Store>,
    /// The views' latest results (views.rs).
    views: Arc<Live>,
    root: PathBuf,
    mountpoint: PathBuf,
    max_size: u64,
    /// Shared with the invalidation thread, which maps store paths to inode numbers.
    nodes: Arc<Mutex<Nodes>>,
    mem: Mutex<HashMap<String, MemFile>>,
    /// Held for reading by deletes and renames, for writing by a release that may move a
    /// closed memory file to disk: the kernel does not wait for a close's release, so without
    /// it a delete or a rename looking at the memory file and then the disk could find the
    /// file in neither, or act on a memory file that has just left.
    moving: RwLock<()>,
    /// Documents hidden while a scratch file holds their bytes (Vim's backup rename).
    away: Mutex<Away>,
    handles: Mutex<HashMap<u64, Arc<Mutex<Handle>>>>,
    dirs: Mutex<HashMap<u64, Arc<DirListing>>>,
    next_fh: AtomicU64,
    inval: mpsc::Sender<Inval>,
    /// The document version each derived file was last opened at, which a save of it expects.
    seen: Mutex<HashMap<String, Version>>,
    /// Owner and time of the virtual files.
    owner: (u32, u32),
    started: SystemTime,
    /// The backing files of read-only opens the kernel reads directly (passthrough.rs).
    passthrough: Arc<Passthrough>,
    /// What the store's watcher hears of: the paths whose kernel entries `lib.rs` drops on
    /// every change made in the folder. `None`: the store is not watched.
    folder: Option<FolderWatch>,
}

/// An open folder. Its entries are read at the first `readdir`: a folder whose listing the
/// kernel caches is opened without being read.
#[derive(Debug)]
struct DirListing {
    path: String,
    entries: std::sync::OnceLock<Vec<(String, FileType)>>,
}

fn io_errno(e: io::Error) -> Errno {
    errno_of(&e)
}

fn errno_of(e: &io::Error) -> Errno {
    match e.raw_os_error() {
        Some(code) => Errno::from_i32(code),
        None if e.kind() == io::ErrorKind::NotFound => Errno::ENOENT,
        None => Errno::EIO,
    }
}

/// The errno of a refusal the core decided. `Missing` is answered with the error of the lookup
/// that found nothing where the caller has it; this is the answer when there is none.
fn refusal_errno(refusal: Refusal) -> Errno {
    match refusal {
        Refusal::Unsupported | Refusal::NotRegular => Errno::EINVAL,
        Refusal::CrossDerived => Errno::EXDEV,
        Refusal::ReadOnly => Errno::EROFS,
        Refusal::Exists => Errno::EEXIST,
        Refusal::IsFolder => Errno::EISDIR,
        Refusal::NotPlain => Errno::EPERM,
        Refusal::Missing => Errno::ENOENT,
    }
}

impl StardustFs {
    pub fn new(
        store: Arc<Store>,
        views: Arc<Live>,
        mountpoint: PathBuf,
        max_size: u64,
        inval: mpsc::Sender<Inval>,
        nodes: Arc<Mutex<Nodes>>,
        passthrough: Arc<Passthrough>,
    ) -> StardustFs {
        let root = store.root().to_owned();
        let owner = fs::metadata(&root).map(|m| (m.uid(), m.gid())).unwrap_or((0, 0));
        let folder = store.folder_watch();
        StardustFs {
            store,
            views,
            root,
            mountpoint,
            max_size,
            nodes,
            mem: Mutex::new(HashMap::new()),
            moving: RwLock::new(()),
            away: Mutex::new(Away::default()),
            handles: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            inval,
            seen: Mutex::new(HashMap::new()),
            owner,
            started: SystemTime::now(),
            passthrough,
            folder,
        }
    }

    /// Whether every change made in the folder to `path` reaches the mount (which then drops
    /// the kernel's entries for it, `lib.rs`).
    fn hears(&self, path: &str) -> bool {
        self.folder.as_ref().is_some_and(|folder| folder.hears(path))
    }

    fn path_of(&self, ino: INodeNo) -> Result<String, Errno> {
        lock(&self.nodes).path(ino.0).ok_or(Errno::ENOENT)
    }

    fn ino_of(&self, path: &str) -> u64 {
        lock(&self.nodes).ino(path)
    }

    fn forget_path(&self, path: &str) {
        lock(&self.nodes).remove(path);
    }

    fn move_path(&self, from: &str, to: &str) {
        lock(&self.nodes).rename(from, to);
    }

    /// The store-relative path of `name` in the folder `parent`. Names that are not UTF-8 or
    /// that could step outside the folder are refused.
    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<String, Errno> {
        Ok(nodes::join(&self.path_of(parent)?, checked_name(name)?))
    }

    fn abs(&self, path: &str) -> PathBuf {
        if path.is_empty() { self.root.clone() } else { self.root.join(path) }
    }

    /// The metadata of `path` on disk, unless the mount hides it (moved away).
    fn disk_meta(&self, path: &str) -> io::Result<fs::Metadata> {
        if lock(&self.away).is_away(path) {
            return Err(io::Error::from_raw_os_error(Errno::ENOENT.code()));
        }
        fs::symlink_metadata(self.abs(path))
    }

    /// What `path` holds: its memory file if it has one, else what the disk holds.
    fn held(&self, path: &str) -> Held {
        self.held_with(path, &self.disk_meta(path))
    }

    /// What `path`, whose lookup on disk gave `meta`, holds: its memory file if it has one,
    /// else what the disk holds.
    fn held_with(&self, path: &str, meta: &io::Result<fs::Metadata>) -> Held {
        if lock(&self.mem).contains_key(path) {
            Held::Memory
        } else if Self::is_private(path) {
            self.derived_held(path)
        } else {
            disk_held(meta)
        }
    }

    /// A save replaced the document at `path`: it is no longer away, and shows in its folder's
    /// listing again (which the kernel may cache).
    fn settle(&self, path: &str) {
        let mut away = lock(&self.away);
        if away.is_away(path) {
            away.settle(path);
            drop(away);
            self.send(Inval::Inode(ino_parent(&self.nodes, path)));
        }
    }

    fn kind(&self, path: &str) -> PathKind {
        self.kind_by(path, Store::path_kind)
    }

    /// [`StardustFs::kind`] as far as a read-only open needs it (`Store::path_kind_to_read`).
    fn kind_to_read(&self, path: &str) -> PathKind {
        self.kind_by(path, Store::path_kind_to_read)
    }

    /// The kind of `path`, the store's `kind_of` it for every path but the root and views.
    fn kind_by(&self, path: &str, kind_of: impl Fn(&Store, &str) -> PathKind) -> PathKind {
        if path.is_empty() {
            PathKind::Plain
        } else if self.is_view_path(path) {
            // A view's file is derived: read-only, like the private folder.
            PathKind::Private
        } else {
            kind_of(&self.store, path)
        }
    }

    fn is_private(path: &str) -> bool {
        path.split('/').next() == Some(PRIVATE_DIR)
    }

    fn fh(&self, handle: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(Mutex::new(handle)));
        fh
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<Mutex<Handle>>, Errno> {
        lock(&self.handles).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// The size a document shows while a handle holds unsaved bytes for it.
    fn pending_size(&self, ino: u64) -> Option<u64> {
        let handles: Vec<Arc<Mutex<Handle>>> = lock(&self.handles).values().cloned().collect();
        handles.iter().find_map(|h| {
            // A handle busy with a commit is skipped rather than waited for: `stat` of any file
            // must not wait for a save.
            let handle = match h.try_lock() {
                Ok(handle) => handle,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return None,
            };
            match &*handle {
                Handle::Doc { ino: i, content, pending } if *i == ino && pending.shows_size() => {
                    Some(content.len() as u64)
                }
                _ => None,
            }
        })
    }

    /// The attributes of `path` (and its inode number, given on first sight).
    fn stat(&self, path: &str) -> Result<(FileAttr, Duration), Errno> {
        self.stat_as(path, false)
    }

    /// The attributes of `path` for an entry the kernel makes for its name (`lookup`,
    /// `readdirplus`): a file replaced under passthrough readers gets a new inode here.
    fn entry(&self, path: &str) -> Result<(FileAttr, Duration), Errno> {
        self.stat_as(path, true)
    }

    fn stat_as(&self, path: &str, naming: bool) -> Result<(FileAttr, Duration), Errno> {
        if let Some(node) = self.view_node(path) {
            return Ok(self.view_attr(path, &node));
        }
        // Memory files first: scratch files live in the derived folders of `.stardust/` too.
        if let Some(attr) = lock(&self.mem).get(path).map(mem_attr) {
            let ino = self.ino_of(path);
            return Ok((FileAttr { ino: INodeNo(ino), ..attr }, KNOWN_TTL));
        }
        if Self::is_private(path) {
            let attr = self.private_attr(path)?;
            let ino = self.ino_of(path);
            // Derived files are cached like documents: commits invalidate them (`lib.rs`). The
            // folder itself never changes, and every path to a derived file walks through it.
            let derived = stardust_core::store::projections::area(path).is_some();
            let ttl = if derived || path == PRIVATE_DIR { KNOWN_TTL } else { Duration::ZERO };
            return Ok((FileAttr { ino: INodeNo(ino), ..attr }, ttl));
        }
        // A plain file being written into a spare shows the spare.
        let spare = self.store.spare_writes().metadata(path);
        let spared = spare.is_some();
        let meta = match spare {
            Some(meta) => meta,
            None => self.disk_meta(path).map_err(io_errno)?,
        };
        if naming && !spared {
            self.renumber_outdated(path, &meta);
        }
        let ino = self.ino_of(path);
        let mut attr = disk_attr(ino, &meta);
        if meta.is_file()
            && let Some(size) = self.pending_size(ino)
        {
            attr.size = size;
        }
        let known = self.hears(path) || (meta.is_file() && self.kind(path) == PathKind::Document);
        Ok((attr, if known { KNOWN_TTL } else { TTL }))
    }

    fn private_attr(&self, path: &str) -> Result<FileAttr, Errno> {
        if let Some(attr) = self.derived_attr(path) {
            return attr;
        }
        let base =
            |kind, size: u64, perm| synthetic_attr(kind, size, perm, self.started, self.owner);
        match private::resolve(&self.store, &self.mountpoint, path).ok_or(Errno::ENOENT)? {
            private::Entry::Dir => Ok(base(FileType::Directory, 0, 0o555)),
            private::Entry::File(bytes) => {
                Ok(base(FileType::RegularFile, bytes.len() as u64, 0o444))
            }
            private::Entry::OnDisk(file) => {
                let meta = fs::metadata(file).map_err(io_errno)?;
                let mut attr = disk_attr(0, &meta);
                attr.perm &= 0o444;
                Ok(attr)
            }
        }
    }

    /// Commit `content` as the document at `path`. A refusal (or any failure) keeps the bytes
    /// under `.stardust/rejected/` and answers `errno`.
    fn decide(&self, ino: u64, path: &str, content: Vec<u8>, errno: Errno) -> Result<(), Errno> {
        let started = std::time::Instant::now();
        let result =
            self.store.commit(Origin::Mount, vec![self.save_change(path, content.clone())]);
        self.send(Inval::Inode(ino));
        match result {
            Ok(committed) => {
                self.saved(path, &committed);
                if let Some(txn) = committed.transaction {
                    let took = started.elapsed();
                    tracing::info!(
                        "saved {path} through the mount as seq {} ({took:.1?})",
                        txn.seq
                    );
                }
                self.settle(path);
                Ok(())
            }
            Err(err) => Err(self.failed(path, Some(&content), &err, errno)),
        }
    }

    /// [`StardustFs::decide`] for bytes written through a handle: a save that replaced a
    /// document away (Vim's new file after its backup rename) leaves the backup holding
    /// nothing, and a backup nobody deletes is a file left behind (Vim's `backup` option).
    fn decide_written(
        &self,
        ino: u64,
        path: &str,
        content: Vec<u8>,
        errno: Errno,
    ) -> Result<(), Errno> {
        let holder = lock(&self.away).holder_of(path).map(str::to_owned);
        self.decide(ino, path, content, errno)?;
        if let Some(holder) = holder {
            self.rest_memory_file(&holder);
        }
        Ok(())
    }

    /// Log a failed save, keep its bytes, and choose the answer.
    fn failed(&self, path: &str, content: Option<&[u8]>, err: &StoreError, errno: Errno) -> Errno {
        let kept = content.map(|bytes| self.store.keep_rejected(path, bytes, err));
        match kept {
            Some(Ok(name)) => tracing::warn!(
                "the save of {path} failed: {err}; the bytes are kept at {PRIVATE_DIR}/rejected/{name}"
            ),
            Some(Err(keep)) => {
                tracing::error!(
                    "the save of {path} failed: {err}; and keeping its bytes failed: {keep}"
                )
            }
            None => tracing::warn!("the change of {path} failed: {err}"),
        }
        match err.code() {
            Code::Refused => errno,
            Code::NotFound => Errno::ENOENT,
            Code::InvalidArguments | Code::OutsideStore => Errno::EINVAL,
            _ => Errno::EIO,
        }
    }

    /// Commit several changes as one transaction (renames), without bytes to keep.
    fn commit(&self, path: &str, changes: Vec<Change>, errno: Errno) -> Result<(), Errno> {
        match self.store.commit(Origin::Mount, changes) {
            Ok(committed) => {
                if let Some(txn) = committed.transaction {
                    tracing::info!("changed {path} through the mount as seq {}", txn.seq);
                }
                Ok(())
            }
            Err(err) => Err(self.failed(path, None, &err, errno)),
        }
    }

    fn send(&self, inval: Inval) {
        let _ = self.inval.send(inval);
    }

    fn check_size(&self, end: u64) -> Result<(), Errno> {
        if end > self.max_size {
            tracing::warn!(
                "refused a write up to byte {end}: documents and scratch files are held in \
                 memory and capped at {} bytes (stardust mount --max-file-size)",
                self.max_size
            );
            return Err(Errno::EFBIG);
        }
        Ok(())
    }

    fn new_mem(&self, req: &Request, perm: u16) -> MemFile {
        let now = SystemTime::now();
        MemFile {
            content: Vec::new(),
            perm,
            uid: req.uid(),
            gid: req.gid(),
            atime: now,
            mtime: now,
            ctime: now,
            open: 0,
        }
    }

    /// Open `path` (known to exist) and answer with a handle and its open flags.
    fn open_path(
        &self,
        ino: u64,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(u64, FopenFlags), Errno> {
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY;
        let trunc = flags.0 & OFlag::O_TRUNC.bits() != 0;
        let kind = if write { self.kind(path) } else { self.kind_to_read(path) };
        // The memory table stays locked from the look to the count of open handles, so the
        // memory file cannot go in between.
        let mut mem = lock(&self.mem);
        let effect = open_effect(kind, mem.contains_key(path), write).map_err(refusal_errno)?;
        if let (OpenEffect::Memory, Some(file)) = (effect, mem.get_mut(path)) {
            file.open += 1;
            if trunc {
                file.content.clear();
            }
            drop(mem);
            let handle = Handle::Mem { ino, pending: Pending::memory() };
            return Ok((self.fh(handle), FopenFlags::FOPEN_DIRECT_IO));
        }
        drop(mem);
        match effect {
            OpenEffect::Private => self.open_private(ino, path),
            OpenEffect::Derived => self.open_derived(path),
            OpenEffect::Buffered => {
                let content = match (trunc, kind) {
                    // Opening a derived file notes the version a save of it expects.
                    (_, PathKind::Derived) => {
                        let content = self.derived_content(path)?;
                        if trunc { Vec::new() } else { content }
                    }
                    (true, _) => Vec::new(),
                    (false, _) => fs::read(self.abs(path)).map_err(gone_stale)?,
                };
                let handle = Handle::Doc { ino, content, pending: Pending::document(trunc) };
                Ok((self.fh(handle), FopenFlags::FOPEN_DIRECT_IO))
            }
            OpenEffect::Memory | OpenEffect::Disk => {
                let read = flags.acc_mode() != OpenAccMode::O_WRONLY;
                let spares = self.store.spare_writes();
                if let Some(opened) =
                    spares.open(path, effect, read, write, trunc).map_err(gone_stale)?
                {
                    let spare = opened.spare.map(|id| Spare { id, written: false });
                    let handle = Handle::Disk { ino, file: Arc::new(opened.file), spare };
                    return Ok((self.fh(handle), FopenFlags::empty()));
                }
                let file = fs::OpenOptions::new()
                    .read(flags.acc_mode() != OpenAccMode::O_WRONLY)
                    .write(write)
                    .truncate(trunc)
                    .open(self.abs(path))
                    .map_err(gone_stale)?;
                let handle = Handle::Disk { ino, file: Arc::new(file), spare: None };
                Ok((self.fh(handle), FopenFlags::empty()))
            }
        }
    }

    /// How to answer the open of handle `fh` of `ino` (opened with `open`, answered by the
    /// mount with `flags`): in passthrough mode where the kernel allows it (passthrough.rs). Only
    /// a read-only open of a file on disk may be read by the kernel directly: documents and
    /// code files opened read-only are read from disk too, which always holds their committed
    /// content.
    fn answer(
        &self,
        ino: u64,
        fh: u64,
        open: OpenFlags,
        flags: FopenFlags,
        register: impl FnOnce(&File) -> io::Result<BackingId>,
    ) -> Answer {
        let disk = (open.acc_mode() == OpenAccMode::O_RDONLY)
            .then(|| lock(&self.handles).get(&fh).cloned())
            .flatten()
            .and_then(|handle| match &*lock(&handle) {
                // A read-only create writes a spare: its close puts it in place.
                Handle::Disk { file, spare: None, .. } => Some(file.clone()),
                _ => None,
            });
        // Closing a read-only file on disk decides nothing: the kernel need not ask.
        let flags = if disk.is_some() { flags | FopenFlags::FOPEN_NOFLUSH } else { flags };
        self.passthrough.open(ino, fh, flags, disk.as_deref(), register)
    }

    /// Give `path` a new inode number if its file on disk is no longer the backing file that
    /// passthrough readers of its inode keep open (a commit or a tool replaced it), so that
    /// new opens read the new file directly, as they would after a rename over a file on any
    /// disk. Not while a handle that is decided at its inode's path (a buffered document, a
    /// memory file) is open on the inode: that path must stay its.
    fn renumber_outdated(&self, path: &str, meta: &fs::Metadata) {
        let Some(ino) = lock(&self.nodes).get(path) else { return };
        if !meta.is_file() || !self.passthrough.outdated(ino, meta) || self.decides_at(ino) {
            return;
        }
        tracing::debug!("{path} was replaced while readers keep the old file: a new inode");
        lock(&self.nodes).remove(path);
    }

    /// A spare was put in place at `path` (inode `ino`): the kernel's attributes and pages of
    /// the inode are dropped, and its name too when passthrough readers keep the file it
    /// replaced (their backing file), so the next lookup gives the path a new inode.
    fn placed(&self, ino: u64, path: &str) {
        self.send(Inval::Inode(ino));
        if let Ok(meta) = fs::symlink_metadata(self.abs(path))
            && self.passthrough.outdated(ino, &meta)
        {
            self.send(Inval::Entry(ino_parent(&self.nodes, path), nodes_name(path)));
        }
    }

    /// Put the spares open at `path` or under it in place (before a rename, an unlink, an
    /// `rmdir` or a hard link acts there on disk).
    fn settle_spares(&self, path: &str) {
        for placed in self.store.spare_writes().settle(path) {
            let ino = self.ino_of(&placed);
            self.placed(ino, &placed);
        }
    }

    /// Whether a handle decided at its inode's path is open on `ino`; a handle busy with a
    /// commit counts (it is not waited for).
    fn decides_at(&self, ino: u64) -> bool {
        let decides = |h: &Handle| matches!(h, Handle::Doc { ino: i, .. } | Handle::Mem { ino: i, .. } if *i == ino);
        let handles: Vec<Arc<Mutex<Handle>>> = lock(&self.handles).values().cloned().collect();
        handles.iter().any(|h| match h.try_lock() {
            Ok(handle) => decides(&handle),
            Err(std::sync::TryLockError::Poisoned(e)) => decides(&e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => true,
        })
    }

    /// The attributes of a file on disk that a handle holds open as inode `ino`.
    fn open_file_attr(&self, ino: u64) -> Option<(FileAttr, Duration)> {
        let handles: Vec<Arc<Mutex<Handle>>> = lock(&self.handles).values().cloned().collect();
        let meta = handles.iter().find_map(|h| match &*lock(h) {
            Handle::Disk { ino: i, file, .. } if *i == ino => file.metadata().ok(),
            _ => None,
        });
        meta.map(|meta| (disk_attr(ino, &meta), TTL))
    }

    /// Open a file of the virtual private folder for reading.
    fn open_private(&self, ino: u64, path: &str) -> Result<(u64, FopenFlags), Errno> {
        if let Some(node) = self.view_node(path) {
            return self.open_view(node, false);
        }
        match private::resolve(&self.store, &self.mountpoint, path) {
            Some(private::Entry::File(bytes)) => {
                Ok((self.fh(Handle::Bytes(bytes)), FopenFlags::FOPEN_DIRECT_IO))
            }
            Some(private::Entry::OnDisk(file)) => {
                let file = File::open(file).map_err(io_errno)?;
                let handle = Handle::Disk { ino, file: Arc::new(file), spare: None };
                Ok((self.fh(handle), FopenFlags::empty()))
            }
            Some(private::Entry::Dir) => Err(Errno::EISDIR),
            None => Err(Errno::ENOENT),
        }
    }

    /// Close one handle of a memory file.
    fn release_mem(&self, ino: u64) {
        let Some(path) = lock(&self.nodes).path(ino) else { return };
        if let Some(file) = lock(&self.mem).get_mut(&path) {
            file.open = file.open.saturating_sub(1);
        }
        self.rest_memory_file(&path);
    }

    /// Carry out what the core says becomes of the memory file at `path` now (after a close,
    /// a rename, or the document it held away settling): kept, dropped, or written to disk.
    pub(super) fn rest_memory_file(&self, path: &str) {
        let mut mem = lock(&self.mem);
        let Some(file) = mem.get(path) else { return };
        let holds_away = lock(&self.away).holds(path);
        let ino = self.ino_of(path);
        match memory_fate(self.kind(path), file.open, holds_away) {
            MemoryFate::Keep => {}
            MemoryFate::Drop => {
                mem.remove(path);
                drop(mem);
                if self.disk_meta(path).is_err() {
                    self.forget_path(path);
                    let parent = ino_parent(&self.nodes, path);
                    self.send(Inval::Entry(parent, nodes_name(path)));
                    // Its folder's listing, which the kernel may cache, no longer has it.
                    self.send(Inval::Inode(parent));
                }
                self.send(Inval::Inode(ino));
            }
            MemoryFate::ToDisk => {
                let written = rename::write_file(&self.abs(path), &file.content, file.perm)
                    .and_then(|()| {
                        let times =
                            fs::FileTimes::new().set_accessed(file.atime).set_modified(file.mtime);
                        fs::File::options().write(true).open(self.abs(path))?.set_times(times)
                    });
                match written {
                    Ok(()) => {
                        let (uid, gid) = (file.uid, file.gid);
                        mem.remove(path);
                        drop(mem);
                        if let Err(e) =
                            std::os::unix::fs::lchown(self.abs(path), Some(uid), Some(gid))
                        {
                            tracing::debug!("cannot give {path} to uid {uid}: {e}");
                        }
                        self.send(Inval::Inode(ino));
                    }
                    // Kept in memory rather than lost; the next close or rename tries again.
                    Err(e) => tracing::warn!("cannot write the file {path} left behind: {e}"),
                }
            }
        }
    }

    /// Decide what a handle holds, if the core says a decision is due at `when`.
    fn decide_handle(&self, handle: &mut Handle, when: Moment) -> Result<(), Errno> {
        let errno = Errno::EIO;
        match handle {
            Handle::Doc { ino, content, pending } => {
                let Some(path) = self.due_path(*ino, pending, when) else { return Ok(()) };
                pending.decided();
                self.decide_written(*ino, &path, content.clone(), errno)
            }
            Handle::Mem { ino, pending } => {
                let Some(path) = self.due_path(*ino, pending, when) else { return Ok(()) };
                let Some(content) = lock(&self.mem).get(&path).map(|f| f.content.clone()) else {
                    return Ok(());
                };
                pending.decided();
                self.decide_written(*ino, &path, content, errno)
            }
            Handle::Disk { ino, file, spare } => {
                if let Some(spare) = spare {
                    let placed = self.store.spare_writes().decide(spare.id, when, spare.written);
                    match placed {
                        Ok(Some(path)) => self.placed(*ino, &path),
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(
                                "cannot put a file written through the mount in place: {e}"
                            );
                            return Err(io_errno(e));
                        }
                    }
                }
                if when == Moment::Fsync {
                    file.sync_all().map_err(io_errno)?;
                }
                Ok(())
            }
            Handle::Bytes(_) => Ok(()),
        }
    }

    /// The path to decide the handle of `ino` as, when a decision is due.
    fn due_path(&self, ino: u64, pending: &Pending, when: Moment) -> Option<String> {
        let path = lock(&self.nodes).path(ino);
        let kind = path.as_deref().map(|path| self.kind(path));
        pending.due(when, kind).then_some(path).flatten()
    }

    /// The entries of an open folder, read at the first call.
    fn entries_of<'a>(&self, listing: &'a DirListing) -> Result<&'a [(String, FileType)], Errno> {
        if let Some(entries) = listing.entries.get() {
            return Ok(entries.as_slice());
        }
        let entries = self.listing(&listing.path)?;
        Ok(listing.entries.get_or_init(|| entries).as_slice())
    }

    fn listing(&self, path: &str) -> Result<Vec<(String, FileType)>, Errno> {
        let mut entries = self.listing_of(path)?;
        self.add_view_entries(path, &mut entries);
        Ok(entries)
    }

    fn listing_of(&self, path: &str) -> Result<Vec<(String, FileType)>, Errno> {
        if let Some(entries) = self.derived_listing(path) {
            return entries;
        }
        if Self::is_private(path) {
            let names = private::list(&self.store, path).ok_or(Errno::ENOTDIR)?;
            return Ok(names
                .into_iter()
                .map(|(name, dir)| {
                    (name, if dir { FileType::Directory } else { FileType::RegularFile })
                })
                .collect());
        }
        if let Some(views::ViewNode::Dir) = self.view_node(path) {
            return Ok(Vec::new());
        }
        let mut entries = Vec::new();
        for entry in fs::read_dir(self.abs(path)).map_err(io_errno)? {
            let entry = entry.map_err(io_errno)?;
            let Ok(name) = entry.file_name().into_string() else { continue };
            if path.is_empty() && name == PRIVATE_DIR {
                continue;
            }
            if lock(&self.away).is_away(&nodes::join(path, &name)) {
                continue;
            }
            let kind = entry
                .file_type()
                .ok()
                .and_then(FileType::from_std)
                .unwrap_or(FileType::RegularFile);
            entries.push((name, kind));
        }
        for name in self.store.spare_writes().names_in(path) {
            if !entries.iter().any(|(n, _)| *n == name) {
                entries.push((name, FileType::RegularFile));
            }
        }
        let prefix = if path.is_empty() { String::new() } else { format!("{path}/") };
        for key in lock(&self.mem).keys() {
            if let Some(name) = key.strip_prefix(&prefix)
                && !name.contains('/')
                && !entries.iter().any(|(n, _)| n == name)
            {
                entries.push((name.to_owned(), FileType::RegularFile));
            }
        }
        // The virtual `.stardust/` is reachable by name but left out of the root's listing
        // (SPEC §24), so tools that walk the tree (`git clean -fdx`, `rm -rf .`, `find`,
        // `grep -r`, `tar`, `rsync`) never enter it and no recursive delete reaches a derived
        // file.
        Ok(entries)
    }

    fn set_size(
        &self,
        ino: u64,
        path: &str,
        size: u64,
        fh: Option<FileHandle>,
    ) -> Result<(), Errno> {
        if let Some(fh) = fh {
            let handle = self.handle(fh)?;
            let mut handle = lock(&handle);
            match &mut *handle {
                Handle::Doc { content, pending, .. } => {
                    self.check_size(size)?;
                    content.resize(size as usize, 0);
                    pending.resize(size);
                    return Ok(());
                }
                Handle::Mem { pending, .. } => {
                    self.check_size(size)?;
                    pending.resize(size);
                }
                Handle::Disk { file, .. } => return file.set_len(size).map_err(io_errno),
                Handle::Bytes(_) => return Err(Errno::EROFS),
            }
        }
        let kind = self.kind(path);
        let mut mem = lock(&self.mem);
        match resize_effect(kind, mem.contains_key(path)) {
            ResizeEffect::Memory => {
                let Some(file) = mem.get_mut(path) else { return Err(Errno::ENOENT) };
                self.check_size(size)?;
                file.content.resize(size as usize, 0);
                file.mtime = SystemTime::now();
                Ok(())
            }
            ResizeEffect::Save => {
                drop(mem);
                self.check_size(size)?;
                let mut content = if kind == PathKind::Derived {
                    self.derived_content(path)?
                } else {
                    fs::read(self.abs(path)).map_err(io_errno)?
                };
                content.resize(size as usize, 0);
                self.decide(ino, path, content, Errno::EIO)
            }
            ResizeEffect::Disk => {
                drop(mem);
                self.store.spare_writes().change(path, |abs| {
                    let file = fs::OpenOptions::new().write(true).open(abs).map_err(io_errno)?;
                    file.set_len(size).map_err(io_errno)
                })
            }
        }
    }
}

/// Up to `size` bytes of `file` from `offset` (fewer only at the end of the file).
fn read_at(file: &File, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0; size as usize];
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_errno(e)),
        }
    }
    buf.truncate(done);
    Ok(buf)
}

/// The answer to opening a file the kernel holds a name for and the disk no longer has (removed
/// in the folder, which the kernel was not told of): `ESTALE` makes the kernel look the name up
/// again and retry, so `open(O_CREAT)` creates the file instead of failing with `ENOENT`.
fn gone_stale(e: io::Error) -> Errno {
    if e.kind() == io::ErrorKind::NotFound { Errno::ESTALE } else { io_errno(e) }
}

/// What the disk holds, from a lookup of the path.
fn disk_held(meta: &io::Result<fs::Metadata>) -> Held {
    match meta {
        Ok(meta) if meta.is_dir() => Held::Folder,
        Ok(meta) if meta.is_file() => Held::File,
        Ok(_) => Held::Special,
        Err(_) => Held::Nothing,
    }
}

/// One file name as the store names it: UTF-8, and never a way out of its folder.
fn checked_name(name: &OsStr) -> Result<&str, Errno> {
    let name = name.to_str().ok_or(Errno::EINVAL)?;
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(Errno::EINVAL);
    }
    Ok(name)
}

fn ino_parent(nodes: &Mutex<Nodes>, path: &str) -> u64 {
    lock(nodes).get(nodes::parent(path)).unwrap_or(ROOT)
}

fn nodes_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_owned()
}

/// Give a new file or folder the requesting user's ownership (the mount runs as root).
fn chown_to(path: &Path, req: &Request) {
    if let Err(e) = std::os::unix::fs::lchown(path, Some(req.uid()), Some(req.gid())) {
        tracing::debug!("cannot give {} to uid {}: {e}", path.display(), req.uid());
    }
}

impl Filesystem for StardustFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // `O_TRUNC` must arrive with the open it belongs to: without this the kernel truncates
        // by path first, which would look like a save of an empty document.
        // `ls -l` gets names and attributes in one round trip where the kernel offers it.
        // Always, not READDIRPLUS_AUTO: that gives attributes only with a folder's first chunk,
        // and `ls -l` reads every name before it stats, so each later name cost a LOOKUP (a
        // folder of 50,000 entity files, SPEC §19).
        let plus = InitFlags::FUSE_DO_READDIRPLUS;
        if config.add_capabilities(plus).is_err() {
            tracing::debug!("the kernel does not offer READDIRPLUS");
        }
        // Lookups and listings in one folder need not wait for each other (the kernel still
        // takes changes to a folder one at a time); every handler here may run beside another.
        if config.add_capabilities(InitFlags::FUSE_PARALLEL_DIROPS).is_err() {
            tracing::debug!("the kernel does not offer parallel lookups in one folder");
        }
        // Read-only opens of files on disk are read by the kernel directly where it offers
        // passthrough (Linux >= 6.9). Depth 2: the store may itself be on a stacked file system
        // (overlayfs, as in containers).
        if config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
            && config.set_max_stack_depth(2).is_ok()
        {
            self.passthrough.enable();
        } else {
            tracing::debug!(
                "the kernel does not offer FUSE passthrough: reads go through the mount"
            );
        }
        config.add_capabilities(InitFlags::FUSE_ATOMIC_O_TRUNC).map_err(|_| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's FUSE lacks atomic O_TRUNC, which the mount needs to tell `>` from \
                 truncate",
            )
        })
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result =
            self.child(parent, name).map_err(|_| Errno::ENOENT).and_then(|p| self.entry(&p));
        match result {
            Ok((attr, ttl)) => reply.entry(&ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let result = match self.path_of(ino) {
            // An open file keeps its attributes after its name is gone (`fstat` of an unlinked
            // file): ask any handle open on it.
            Err(_) => self.open_file_attr(ino.0).ok_or(Errno::ENOENT),
            Ok(path) => match self.stat(&path) {
                // The name went behind the kernel's back (removed in the folder): a handle open
                // on the file still answers `fstat`; else `ESTALE` makes `stat` look the name up
                // again instead of trusting the kernel's cached entry.
                Err(Errno::ENOENT) => self.open_file_attr(ino.0).ok_or(Errno::ESTALE),
                other => other,
            },
        };
        match result {
            Ok((mut attr, ttl)) => {
                if let Some(fh) = fh
                    && let Ok(handle) = self.handle(fh)
                    && let Handle::Doc { content, .. } = &*lock(&handle)
                {
                    attr.size = content.len() as u64;
                }
                reply.attr(&ttl, &attr)
            }
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = (|| {
            let path = self.path_of(ino)?;
            // In `.stardust/` only derived files (their size: a save) and memory files (the
            // scratch files of `sed -i` and editors) take attributes; views take none.
            let derived = self.kind(&path) == PathKind::Derived;
            let private = Self::is_private(&path);
            if self.is_view_path(&path)
                || (private && !derived && !lock(&self.mem).contains_key(&path))
            {
                return Err(Errno::EROFS);
            }
            if let Some(size) = size {
                self.set_size(ino.0, &path, size, fh)?;
            }
            let in_mem = {
                let mut mem = lock(&self.mem);
                match mem.get_mut(&path) {
                    Some(file) => {
                        if let Some(mode) = mode {
                            file.perm = (mode & 0o7777) as u16;
                        }
                        if let Some(uid) = uid {
                            file.uid = uid;
                        }
                        if let Some(gid) = gid {
                            file.gid = gid;
                        }
                        if let Some(t) = atime {
                            file.atime = time_of(t);
                        }
                        if let Some(t) = mtime {
                            file.mtime = time_of(t);
                        }
                        file.ctime = SystemTime::now();
                        true
                    }
                    None => false,
                }
            };
            // A derived file has no mode, owner or times of its own to change.
            if !in_mem && !private {
                // On the spare while one is open at the path (it is not put in place meanwhile).
                self.store.spare_writes().change(&path, |abs| {
                    if let Some(mode) = mode {
                        fs::set_permissions(abs, fs::Permissions::from_mode(mode & 0o7777))
                            .map_err(io_errno)?;
                    }
                    if uid.is_some() || gid.is_some() {
                        std::os::unix::fs::lchown(abs, uid, gid).map_err(io_errno)?;
                    }
                    if atime.is_some() || mtime.is_some() {
                        // By path and without following links: opening a FIFO would block.
                        nix::sys::stat::utimensat(
                            nix::fcntl::AT_FDCWD,
                            abs,
                            &timespec(atime),
                            &timespec(mtime),
                            nix::sys::stat::UtimensatFlags::NoFollowSymlink,
                        )
                        .map_err(|e| Errno::from_i32(e as i32))?;
                    }
                    Ok::<(), Errno>(())
                })?;
            }
            self.stat(&path)
        })();
        match result {
            Ok((mut attr, ttl)) => {
                if let Some(fh) = fh
                    && let Ok(handle) = self.handle(fh)
                    && let Handle::Doc { content, .. } = &*lock(&handle)
                {
                    attr.size = content.len() as u64;
                }
                reply.attr(&ttl, &attr)
            }
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let result =
            self.path_of(ino).and_then(|path| fs::read_link(self.abs(&path)).map_err(io_errno));
        match result {
            Ok(target) => reply.data(target.as_os_str().as_encoded_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let result = self.child(parent, name).and_then(|path| {
            if Self::is_private(&path) || self.is_view_path(&path) {
                return Err(Errno::EROFS);
            }
            if lock(&self.mem).contains_key(&path) {
                return Err(Errno::EEXIST);
            }
            let abs = self.abs(&path);
            fs::DirBuilder::new().mode(mode & !umask & 0o7777).create(&abs).map_err(io_errno)?;
            fs::set_permissions(&abs, fs::Permissions::from_mode(mode & !umask & 0o7777))
                .map_err(io_errno)?;
            chown_to(&abs, req);
            self.stat(&path)
        });
        match result {
            Ok((attr, ttl)) => reply.entry(&ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _moving = sync::read(&self.moving);
        let result = self.child(parent, name).and_then(|path| {
            self.settle_spares(&path);
            let meta = self.disk_meta(&path);
            let held = self.held_with(&path, &meta);
            match delete_effect(self.kind(&path), held) {
                Err(Refusal::Missing) => return Err(meta.err().map_or(Errno::ENOENT, io_errno)),
                Err(refusal) => return Err(refusal_errno(refusal)),
                Ok(DeleteEffect::Memory) => {
                    self.release_away(&path, None)?;
                    lock(&self.mem).remove(&path);
                }
                Ok(DeleteEffect::Document) => {
                    self.commit(&path, vec![Change::delete(path.clone())], Errno::EPERM)?;
                }
                Ok(DeleteEffect::Disk) => fs::remove_file(self.abs(&path)).map_err(io_errno)?,
            }
            self.forget_path(&path);
            Ok(())
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.child(parent, name).and_then(|path| {
            if Self::is_private(&path) || self.is_view_path(&path) {
                return Err(Errno::EROFS);
            }
            let prefix = format!("{path}/");
            if lock(&self.mem).keys().any(|k| k.starts_with(&prefix)) {
                return Err(Errno::ENOTEMPTY);
            }
            self.settle_spares(&path);
            fs::remove_dir(self.abs(&path)).map_err(io_errno)?;
            self.forget_path(&path);
            Ok(())
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let result = self.child(parent, name).and_then(|path| {
            // Devices, FIFOs and sockets are plain files to the store.
            special_file(self.kind(&path)).map_err(refusal_errno)?;
            let abs = self.abs(&path);
            let kind = SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits());
            let perm = Mode::from_bits_truncate(mode & !umask & 0o7777);
            nix::sys::stat::mknod(&abs, kind, perm, u64::from(rdev))
                .map_err(|e| Errno::from_i32(e as i32))?;
            fs::set_permissions(&abs, fs::Permissions::from_mode(mode & !umask & 0o7777))
                .map_err(io_errno)?;
            chown_to(&abs, req);
            self.stat(&path)
        });
        match result {
            Ok((attr, ttl)) => reply.entry(&ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let result = self.path_of(ino).and_then(|from| {
            let to = self.child(newparent, newname)?;
            self.settle_spares(&from);
            self.settle_spares(&to);
            let held = self.held(&from);
            hard_link(self.kind(&from), held, self.kind(&to)).map_err(refusal_errno)?;
            fs::hard_link(self.abs(&from), self.abs(&to)).map_err(io_errno)?;
            lock(&self.nodes).link(ino.0, &to);
            self.stat(&to)
        });
        match result {
            Ok((attr, ttl)) => reply.entry(&ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let result = self.child(parent, link_name).and_then(|path| {
            symbolic_link(self.kind(&path)).map_err(refusal_errno)?;
            let abs = self.abs(&path);
            std::os::unix::fs::symlink(target, &abs).map_err(io_errno)?;
            chown_to(&abs, req);
            self.stat(&path)
        });
        match result {
            Ok((attr, ttl)) => reply.entry(&ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = self
            .child(parent, name)
            .and_then(|from| Ok((from, self.child(newparent, newname)?)))
            .and_then(|(from, to)| self.do_rename(&from, &to, flags));
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let result = self.path_of(ino).and_then(|path| self.open_path(ino.0, &path, flags));
        match result {
            Ok((fh, fopen)) => {
                let answer = self.answer(ino.0, fh, flags, fopen, |file| reply.open_backing(file));
                match answer.backing {
                    Some(backing) => {
                        reply.opened_passthrough(FileHandle(fh), answer.flags, &backing)
                    }
                    None => reply.opened(FileHandle(fh), answer.flags),
                }
            }
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let perm = (mode & !umask & 0o7777) as u16;
        let result = self.child(parent, name).and_then(|path| {
            let excl = flags & OFlag::O_EXCL.bits() != 0;
            let exists = lock(&self.mem).contains_key(&path)
                || self.store.spare_writes().holds(&path)
                || self.disk_meta(&path).is_ok()
                || self.derived_held(&path) != Held::Nothing;
            match create_effect(self.kind(&path), exists, excl).map_err(refusal_errno)? {
                CreateEffect::Memory => {
                    lock(&self.mem).insert(path.clone(), self.new_mem(req, perm));
                }
                CreateEffect::Disk => {
                    // Written into a spare, put in place at the last writer's close.
                    let access = OpenFlags(flags).acc_mode();
                    let read = access != OpenAccMode::O_WRONLY;
                    let write = access != OpenAccMode::O_RDONLY;
                    let owner = Some((req.uid(), req.gid()));
                    let opened = self
                        .store
                        .spare_writes()
                        .create(&path, u32::from(perm), read, write, owner)
                        .map_err(io_errno)?;
                    let ino = self.ino_of(&path);
                    let spare = opened.spare.map(|id| Spare { id, written: false });
                    let handle = Handle::Disk { ino, file: Arc::new(opened.file), spare };
                    let (attr, ttl) = self.stat(&path)?;
                    return Ok((attr, ttl, self.fh(handle), FopenFlags::empty()));
                }
                CreateEffect::Open => {}
            }
            let ino = self.ino_of(&path);
            let (fh, open_flags) = self.open_path(ino, &path, OpenFlags(flags))?;
            let (attr, ttl) = self.stat(&path)?;
            Ok((attr, ttl, fh, open_flags))
        });
        match result {
            Ok((attr, ttl, fh, fopen)) => {
                let open = OpenFlags(flags);
                let answer =
                    self.answer(attr.ino.0, fh, open, fopen, |file| reply.open_backing(file));
                let (fh, generation) = (FileHandle(fh), Generation(0));
                match answer.backing {
                    Some(backing) => reply.created_passthrough(
                        &ttl,
                        &attr,
                        generation,
                        fh,
                        answer.flags,
                        &backing,
                    ),
                    None => reply.created(&ttl, &attr, generation, fh, answer.flags),
                }
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let slice = |bytes: &[u8]| -> Vec<u8> {
            let start = (offset as usize).min(bytes.len());
            let end = start.saturating_add(size as usize).min(bytes.len());
            bytes[start..end].to_vec()
        };
        let handle = self.handle(fh);
        let disk = handle.as_ref().ok().and_then(|h| match &*lock(h) {
            Handle::Disk { file, .. } => Some(file.clone()),
            _ => None,
        });
        let result = match (handle, disk) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(file)) => read_at(&file, offset, size),
            (Ok(handle), None) => match &*lock(&handle) {
                Handle::Bytes(bytes) => Ok(slice(bytes)),
                Handle::Doc { content, .. } => Ok(slice(content)),
                Handle::Mem { .. } => self.path_of(ino).and_then(|path| {
                    let mem = lock(&self.mem);
                    mem.get(&path).map(|f| slice(&f.content)).ok_or(Errno::ENOENT)
                }),
                Handle::Disk { .. } => Err(Errno::EBADF),
            },
        };
        match result {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let end = offset.saturating_add(data.len() as u64);
        let put = |content: &mut Vec<u8>| {
            let (start, end) = (offset as usize, end as usize);
            if content.len() < end {
                content.resize(end, 0);
            }
            content[start..end].copy_from_slice(data);
        };
        let result = self.handle(fh).and_then(|handle| match &mut *lock(&handle) {
            Handle::Disk { file, spare, .. } => {
                if let Some(spare) = spare {
                    spare.written = true;
                }
                file.write_all_at(data, offset).map_err(io_errno)
            }
            Handle::Bytes(_) => Err(Errno::EROFS),
            Handle::Doc { content, pending, .. } => {
                self.check_size(end)?;
                put(content);
                pending.write();
                Ok(())
            }
            Handle::Mem { pending, .. } => {
                self.check_size(end)?;
                let path = self.path_of(ino)?;
                let mut mem = lock(&self.mem);
                let file = mem.get_mut(&path).ok_or(Errno::ENOENT)?;
                put(&mut file.content);
                file.mtime = SystemTime::now();
                pending.write();
                Ok(())
            }
        });
        match result {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        let result = self
            .handle(fh)
            .and_then(|handle| self.decide_handle(&mut lock(&handle), Moment::Flush));
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = self
            .handle(fh)
            .and_then(|handle| self.decide_handle(&mut lock(&handle), Moment::Fsync));
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.passthrough.release(fh.0);
        let handle = lock(&self.handles).remove(&fh.0);
        if let Some(handle) = handle {
            let mut handle = lock(&handle);
            // The last chance to save: `truncate` with no write after it is decided here.
            // Nobody hears the answer, so a failure is only logged (and its bytes kept).
            let _ = self.decide_handle(&mut handle, Moment::Release);
            if let Handle::Mem { .. } = &*handle {
                drop(handle);
                let _moving = sync::write(&self.moving);
                self.release_mem(ino.0);
            }
        }
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let result = self.path_of(ino).and_then(|path| {
            // The kernel keeps the listing of a folder on disk whose every change reaches the
            // mount: a change made through the mount resets it in the kernel, one made in the
            // folder (`lib.rs`), a memory file dropped, a document shown again or a view's
            // result drop it. Other folders are read here, so a missing one fails its open.
            let cached = self.hears(&path) && self.view_node(&path).is_none() && {
                let held = self.disk_meta(&path).map_err(gone_stale)?;
                if !held.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
                true
            };
            let entries = std::sync::OnceLock::new();
            if !cached {
                let _ = entries.set(self.listing(&path)?);
            }
            let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
            lock(&self.dirs).insert(fh, Arc::new(DirListing { path, entries }));
            let flags = if cached {
                FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE
            } else {
                FopenFlags::empty()
            };
            Ok((fh, flags))
        });
        match result {
            Ok((fh, flags)) => reply.opened(FileHandle(fh), flags),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(listing) = lock(&self.dirs).get(&fh.0).cloned() else {
            reply.error(Errno::EBADF);
            return;
        };
        let entries = match self.entries_of(&listing) {
            Ok(entries) => entries,
            Err(e) => return reply.error(e),
        };
        let parent = lock(&self.nodes).get(nodes::parent(&listing.path)).unwrap_or(ROOT);
        let dots = [(".", ino.0), ("..", parent)];
        let mut index = offset as usize;
        while index < 2 {
            let (name, ino) = dots[index];
            index += 1;
            if reply.add(INodeNo(ino), index as u64, FileType::Directory, name) {
                reply.ok();
                return;
            }
        }
        let mut nodes = lock(&self.nodes);
        for (name, kind) in entries.iter().skip(index - 2) {
            index += 1;
            let child = nodes.ino(&nodes::join(&listing.path, name));
            if reply.add(INodeNo(child), index as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let Some(listing) = lock(&self.dirs).get(&fh.0).cloned() else {
            reply.error(Errno::EBADF);
            return;
        };
        let entries = match self.entries_of(&listing) {
            Ok(entries) => entries,
            Err(e) => return reply.error(e),
        };
        let parent = nodes::parent(&listing.path).to_owned();
        let mut index = offset as usize;
        while index < entries.len() + 2 {
            let path = match index {
                0 => listing.path.clone(),
                1 => parent.clone(),
                _ => nodes::join(&listing.path, &entries[index - 2].0),
            };
            let name = match index {
                0 => ".",
                1 => "..",
                _ => entries[index - 2].0.as_str(),
            };
            index += 1;
            // An entry gone since `opendir` is left out, as a fresh listing would.
            let named = if index > 2 { self.entry(&path) } else { self.stat(&path) };
            let Ok((mut attr, ttl)) = named else { continue };
            if index == 1 {
                attr.ino = ino;
            }
            if reply.add(attr.ino, index as u64, name, &ttl, &attr, Generation(0)) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        lock(&self.dirs).remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let value = self
            .path_of(ino)
            .map(|path| name.to_str().and_then(|name| self.view_xattr(&path, name)));
        match value {
            Err(e) => reply.error(e),
            Ok(None) => reply.error(Errno::NO_XATTR),
            Ok(Some(value)) if size == 0 => reply.size(value.len() as u32),
            Ok(Some(value)) if value.len() > size as usize => reply.error(Errno::ERANGE),
            Ok(Some(value)) => reply.data(&value),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let names = match self.path_of(ino) {
            Err(e) => return reply.error(e),
            Ok(path) => match self.view_xattr(&path, views::SEQ_XATTR) {
                Some(_) => format!("{}\0", views::SEQ_XATTR).into_bytes(),
                None => Vec::new(),
            },
        };
        if size == 0 {
            reply.size(names.len() as u32);
        } else if names.len() > size as usize {
            reply.error(Errno::ERANGE);
        } else {
            reply.data(&names);
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match nix::sys::statvfs::statvfs(&self.root) {
            Ok(s) => reply.statfs(
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
                s.block_size() as u32,
                s.name_max() as u32,
                s.fragment_size() as u32,
            ),
            Err(e) => reply.error(Errno::from_i32(e as i32)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[test]
    fn names_that_could_leave_their_folder_are_refused() {
        for bad in ["", ".", "..", "a/b", "../x.json", "a\0b"] {
            assert_eq!(checked_name(OsStr::new(bad)), Err(Errno::EINVAL), "{bad:?}");
        }
        assert_eq!(checked_name(OsStr::from_bytes(b"caf\xe9.json")), Err(Errno::EINVAL));
        assert_eq!(checked_name(OsStr::new("..x.json")), Ok("..x.json"));
        assert_eq!(checked_name(OsStr::new("dune.json")), Ok("dune.json"));
    }
}

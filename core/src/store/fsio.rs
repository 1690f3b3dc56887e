//! Document files on disk: checked paths, atomic replacement, and failures injected by tests.
//!
//! A document is replaced by writing its new content to another file and swapping the two
//! names (or renaming the file over the document), so a process crash leaves either the old
//! or the new content, never a mix. A commit does
//! not sync either (its log record is the durable copy); a checkpoint later syncs the files
//! and their folders ([`Disk::sync_documents`]). [`Disk::write`], for recovery and undo, syncs
//! at once. Nothing here follows a symbolic link: a link (or a linked folder) on the way to a
//! document makes the path unusable, so a write can never land outside the store.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::error::{StoreError, StoreResult};
use crate::sync;

/// A step of the commit path where a test can make the I/O fail.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FailPoint {
    /// Reading a document.
    Read,
    /// Writing a document's temporary file (and syncing it, for a durable write).
    WriteTemp,
    /// Appending a transaction to the log (and syncing it, for a commit that waits for no
    /// other).
    AppendLog,
    /// Syncing the log once for a group of commits appended together (group commit).
    SyncLog,
    /// Renaming a temporary file over a document.
    Rename,
    /// Removing a deleted document.
    Remove,
    /// Syncing a document (its path) or a folder (its path, `""` for the root) in a checkpoint.
    Sync,
    /// Appending an `applied` marker to the log (the log's own name).
    Mark,
    /// Compacting the log (SPEC §26): `"write"` before the compacted copy is written,
    /// `"rename"` once it is synced and before it is renamed over the log.
    Compact,
}

/// Called before each step with the step and the store-relative path (the log's own name for
/// `AppendLog`); an `Err` is returned by the step instead of doing it.
pub type FailHook = Arc<dyn Fn(FailPoint, &str) -> io::Result<()> + Send + Sync>;

/// The suffix of temporary files; `.{name}{TEMP_SUFFIX}` is never a document name.
const TEMP_SUFFIX: &str = ".stardust-tmp";

/// Where a replaced or deleted document's file is kept until it is let go off the commit
/// path ([`Buried`]), and where empty files wait to take a document's next content
/// ([`Spare`]); emptied at every open ([`Disk::clear_replaced`]).
pub const REPLACED_DIR: &str = ".stardust/replaced";

/// The start of the names, in [`REPLACED_DIR`], of the spares plain files are written into
/// through the mount (`spare_writes`); emptied at every open like the rest of the folder.
pub const SPARE_WRITE_PREFIX: &str = "written-";

/// Spare files kept ready ([`Disk::restock`]): a commit of this many replaced documents
/// creates no file.
const SPARES: usize = 8;

/// Reads and writes documents under one store root.
#[derive(Clone)]
pub struct Disk {
    root: PathBuf,
    fail: Option<FailHook>,
    graves: Arc<Graves>,
}

/// The files of [`REPLACED_DIR`]: those not yet handed over ([`Disk::take_buried`]), the
/// spares, and the next free name there.
#[derive(Default)]
struct Graves {
    /// Whether [`REPLACED_DIR`] is this store's own folder, not reached through a link: set
    /// by [`Disk::clear_replaced`]. Without it nothing is linked, moved or made there.
    usable: AtomicBool,
    /// Set once the filesystem refused to exchange two names, or for a team store's copy
    /// ([`Disk::rename_over`]): replacing then renames.
    no_exchange: AtomicBool,
    next: AtomicU64,
    buried: Mutex<Vec<Buried>>,
    spares: Mutex<Vec<Spare>>,
}

impl Drop for Graves {
    /// The store closed: its spares go with it (what a crash leaves, the next open clears).
    fn drop(&mut self) {
        for spare in sync::lock(&self.spares).drain(..) {
            let _ = fs::remove_file(spare.path);
        }
    }
}

/// An empty file in [`REPLACED_DIR`], made off the commit path, that a commit writes a
/// document's new content into and then swaps with the document ([`Disk::install`]).
/// Creating a file is most of what a small commit costs the filesystem (ext4 looks for a
/// free inode past every one freed in the last seconds), and renaming a new file over an
/// existing one makes ext4 start writing the new file's data there and then (its
/// `auto_da_alloc`); swapping names does neither. Afterwards the spare's name holds the
/// document's old file, kept as a [`Buried`].
#[derive(Debug)]
struct Spare {
    path: PathBuf,
    /// The filesystem and group the file was made with: it replaces only a document with the
    /// same (a swap cannot cross filesystems, and a document keeps its group).
    dev: u64,
    gid: u32,
    /// Its permissions (`st_mode`), so that a commit changes them only when they differ.
    mode: u32,
}

/// A link, in [`REPLACED_DIR`], to the file a document had before a commit replaced or
/// deleted it. While it exists, the commit's rename or removal frees nothing; dropping it
/// frees the old file. That work is the filesystem's, and not small: on a disk mounted with
/// `discard` it is a synchronous discard of the file's blocks, most of a rename's time on a
/// busy VM. So a commit hands these to the store's reaper thread with the snapshot it
/// replaced, and the thread drops them.
#[derive(Debug)]
pub struct Buried(PathBuf);

impl Drop for Buried {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

impl std::fmt::Debug for Disk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Disk").field("root", &self.root).finish_non_exhaustive()
    }
}

/// A document's new content written to its temporary file, not yet in place.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    target: PathBuf,
    /// `temp` is a [`Spare`], to be swapped with the document it replaces.
    spare: bool,
}

impl Disk {
    pub fn new(root: PathBuf, fail: Option<FailHook>) -> Disk {
        Disk { root, fail, graves: Arc::default() }
    }

    /// Empty [`REPLACED_DIR`], creating it when missing: at open, under the store's lock,
    /// so that what a crash left there is let go. Keeping replaced files and spares only
    /// saves time, so this cannot fail: without the folder, a commit frees what it replaces
    /// at once and writes a temporary sibling. A folder reached through a symbolic link (a
    /// cloned repository can hold one) is not the store's: nothing there is touched.
    pub fn clear_replaced(&self) {
        let dir = self.root.join(REPLACED_DIR);
        let private = dir.parent().expect("REPLACED_DIR is in a folder");
        if fs::symlink_metadata(private).is_ok_and(|m| !m.is_dir()) {
            tracing::warn!("{} is not a folder; replaced files are not kept", private.display());
            return;
        }
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {
                for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
                    let _ = fs::remove_file(entry.path());
                }
            }
            Ok(_) => {
                tracing::warn!("{} is not a folder; replaced files are not kept", dir.display());
                return;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Err(e) = fs::create_dir(&dir) {
                    tracing::warn!("cannot create {}: {e}", dir.display());
                    return;
                }
            }
            Err(e) => {
                tracing::warn!("cannot read {}: {e}", dir.display());
                return;
            }
        }
        sync::lock(&self.graves.spares).clear();
        self.graves.usable.store(true, Ordering::Relaxed);
    }

    /// Whether [`REPLACED_DIR`] is the store's own folder, usable for temporaries.
    pub fn replaced_usable(&self) -> bool {
        self.graves.usable.load(Ordering::Relaxed)
    }

    /// Make spare files until [`SPARES`] are ready: off the commit path (the store's reaper
    /// thread, after each commit it cleans up for). A failure only means fewer spares.
    pub fn restock(&self) {
        if !self.graves.usable.load(Ordering::Relaxed) {
            return;
        }
        while sync::lock(&self.graves.spares).len() < SPARES {
            let path = self.grave();
            let made = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|file| file.metadata());
            match made {
                Ok(meta) => sync::lock(&self.graves.spares).push(Spare {
                    path,
                    dev: meta.dev(),
                    gid: meta.gid(),
                    mode: meta.mode(),
                }),
                Err(e) => {
                    tracing::debug!("cannot make a spare file {}: {e}", path.display());
                    return;
                }
            }
        }
    }

    /// Replace documents by renaming the spare over them rather than swapping: what a team
    /// store's copy does. Its log is not synced (the database is the durable copy), so a new
    /// file's data must not wait in memory longer than it did: renaming over a file makes
    /// ext4 start writing the new file's data at once (`auto_da_alloc`), a swap does not, and
    /// a file a system crash left empty would be taken for an edit at the next open. A folder
    /// store's commit is durable in its synced log, which redoes any write a crash lost.
    pub fn rename_over(&self) {
        self.graves.no_exchange.store(true, Ordering::Relaxed);
    }

    /// A spare that can replace the regular file described by `current`.
    fn take_spare(&self, current: &fs::Metadata) -> Option<Spare> {
        let mut spares = sync::lock(&self.graves.spares);
        let last = spares.last()?;
        (last.dev == current.dev() && last.gid == current.gid()).then(|| spares.pop())?
    }

    /// The replaced files kept since the last call, to be dropped off the commit path.
    pub fn take_buried(&self) -> Vec<Buried> {
        std::mem::take(&mut *sync::lock(&self.graves.buried))
    }

    /// A free name in [`REPLACED_DIR`].
    fn grave(&self) -> PathBuf {
        let n = self.graves.next.fetch_add(1, Ordering::Relaxed);
        self.root.join(REPLACED_DIR).join(n.to_string())
    }

    fn keep(&self, buried: Buried) {
        sync::lock(&self.graves.buried).push(buried);
    }

    #[cfg(test)]
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn check(&self, point: FailPoint, rel: &str) -> io::Result<()> {
        match &self.fail {
            Some(hook) => hook(point, rel),
            None => Ok(()),
        }
    }

    /// The absolute path of a store-relative document path, refusing paths that are not
    /// plain relative paths or that pass through a symbolic link.
    pub fn resolve(&self, rel: &str) -> StoreResult<PathBuf> {
        let outside =
            || StoreError::OutsideStore { path: rel.to_owned(), store: self.root.clone() };
        if rel.is_empty() || rel.starts_with('/') || rel.contains('\0') {
            return Err(outside());
        }
        if rel.split('/').any(|part| matches!(part, "" | "." | "..")) {
            return Err(outside());
        }
        let mut path = self.root.clone();
        for part in rel.split('/') {
            path.push(part);
            match fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let inside =
                        fs::canonicalize(&path).is_ok_and(|real| real.starts_with(&self.root));
                    if !inside {
                        return Err(outside());
                    }
                    return Err(StoreError::InvalidArguments(format!(
                        "{rel} passes through a symbolic link; Stardust does not follow links, \
                         so name the file it points to instead"
                    )));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        Ok(self.root.join(rel))
    }

    /// The content of the document at `rel`, or `None` if there is no regular file there (it
    /// is missing, a folder, a link, or behind a link).
    pub fn read(&self, rel: &str) -> StoreResult<Option<Vec<u8>>> {
        let Ok(path) = self.resolve(rel) else { return Ok(None) };
        self.read_at(rel, &path).map_err(|e| StoreError::io(format!("cannot read {rel}"), e))
    }

    /// The content of the regular file `path`, known to be the document `rel`.
    pub fn read_at(&self, rel: &str, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.check(FailPoint::Read, rel)?;
        read_regular(path)
    }

    /// Write `content` to a file that will replace `rel`, and with `sync` make it durable:
    /// a [`Spare`] when `rel` is a regular file one can replace, else a temporary sibling.
    /// The file takes the permissions of the document it will replace.
    pub fn stage(&self, rel: &str, content: &[u8], sync: bool) -> io::Result<Staged> {
        let target = self.root.join(rel);
        let parent = target.parent().expect("a document path has a parent");
        let current = fs::symlink_metadata(&target).ok().filter(fs::Metadata::is_file);
        if current.is_none() {
            self.ensure_dir(parent)?;
        }
        let spare = current.as_ref().and_then(|meta| self.take_spare(meta));
        let (staged, made) = match spare {
            Some(spare) => (Staged { temp: spare.path, target, spare: true }, Some(spare.mode)),
            None => {
                let name = target.file_name().expect("a document path has a name");
                let temp = parent.join(format!(".{}{TEMP_SUFFIX}", name.to_string_lossy()));
                (Staged { temp, target, spare: false }, None)
            }
        };
        let written = self
            .check(FailPoint::WriteTemp, rel)
            .and_then(|()| write_temp(&staged.temp, made, current.as_ref(), content, sync));
        match written {
            Ok(()) => Ok(staged),
            Err(e) => {
                staged.discard();
                Err(e)
            }
        }
    }

    /// Put a staged document in place. The swap or rename is durable once its folder is
    /// synced ([`Disk::sync_parents`], [`Disk::sync_documents`]).
    ///
    /// The file replaced is kept ([`Buried`]): a spare swapped with it holds it, else it is
    /// linked there first when it can be; a document that did not exist, or one that cannot
    /// be linked, is simply replaced.
    pub fn install(&self, rel: &str, staged: &Staged) -> io::Result<()> {
        let result = self.check(FailPoint::Rename, rel).and_then(|()| {
            if staged.spare && !self.graves.no_exchange.load(Ordering::Relaxed) {
                match exchange(&staged.temp, &staged.target) {
                    Ok(()) => {
                        self.keep(Buried(staged.temp.clone()));
                        return Ok(());
                    }
                    // The document went meanwhile: there is nothing to swap with.
                    Err(nix::errno::Errno::ENOENT) if staged.temp.exists() => {
                        return fs::rename(&staged.temp, &staged.target);
                    }
                    Err(nix::errno::Errno::EINVAL | nix::errno::Errno::ENOSYS) => {
                        self.graves.no_exchange.store(true, Ordering::Relaxed);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            let grave = self.grave();
            let kept = (self.graves.usable.load(Ordering::Relaxed)
                && fs::hard_link(&staged.target, &grave).is_ok())
            .then(|| Buried(grave));
            fs::rename(&staged.temp, &staged.target)?;
            if let Some(kept) = kept {
                self.keep(kept);
            }
            Ok(())
        });
        if result.is_err() {
            staged.discard();
        }
        result
    }

    /// Remove the document at `rel` (already gone is fine). The removal is durable once its
    /// folder is synced.
    ///
    /// The file is moved aside and kept ([`Buried`]) when it can be; else removed here.
    pub fn unlink(&self, rel: &str) -> io::Result<()> {
        self.check(FailPoint::Remove, rel)?;
        let (target, grave) = (self.root.join(rel), self.grave());
        if self.graves.usable.load(Ordering::Relaxed)
            && fs::symlink_metadata(&target).is_ok_and(|m| m.is_file())
            && fs::rename(&target, &grave).is_ok()
        {
            self.keep(Buried(grave));
            return Ok(());
        }
        match fs::remove_file(target) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Sync the folder of each document, once per folder, making renames and removals in
    /// them durable.
    pub fn sync_parents<'a>(&self, rels: impl IntoIterator<Item = &'a str>) -> io::Result<()> {
        let mut dirs: Vec<PathBuf> = rels
            .into_iter()
            .filter_map(|rel| self.root.join(rel).parent().map(Path::to_owned))
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs.iter().try_for_each(|dir| sync_dir(dir))
    }

    /// Remove the document at `rel` durably.
    pub fn remove(&self, rel: &str) -> io::Result<()> {
        self.unlink(rel)?;
        self.sync_parents([rel])
    }

    /// Make the documents at `rels` and their folders durable: what a checkpoint does before
    /// it may mark their transactions applied. A path that is no longer a regular file has
    /// nothing to sync (a later transaction deleted or replaced it); its folder still is.
    pub fn sync_documents<'a>(&self, rels: impl IntoIterator<Item = &'a str>) -> io::Result<()> {
        let rels: Vec<&str> = rels.into_iter().collect();
        if rels.len() > SYNC_ONE_BY_ONE {
            for rel in &rels {
                self.check(FailPoint::Sync, rel)?;
            }
            return sync_filesystem(&self.root);
        }
        let mut dirs: Vec<&str> = Vec::new();
        for rel in rels {
            self.check(FailPoint::Sync, rel)?;
            sync_regular(&self.root.join(rel))?;
            dirs.push(rel.rsplit_once('/').map_or("", |(dir, _)| dir));
        }
        dirs.sort_unstable();
        dirs.dedup();
        for dir in dirs {
            self.check(FailPoint::Sync, dir)?;
            match sync_dir(&self.root.join(dir)) {
                Err(e) if is_absent(&e) => {}
                other => other?,
            }
        }
        Ok(())
    }

    /// Write `content` at `rel` atomically, not synced: durable once a checkpoint syncs it
    /// ([`Disk::sync_documents`]).
    pub fn put(&self, rel: &str, content: &[u8]) -> io::Result<()> {
        let staged = self.stage(rel, content, false)?;
        self.install(rel, &staged)
    }

    /// Write `content` at `rel` atomically and durably.
    pub fn write(&self, rel: &str, content: &[u8]) -> io::Result<()> {
        let staged = self.stage(rel, content, true)?;
        self.install(rel, &staged)?;
        self.sync_parents([rel])
    }

    /// Remove a temporary file a crash may have left beside `rel`.
    pub fn remove_stale_temp(&self, rel: &str) {
        let target = self.root.join(rel);
        if let (Some(parent), Some(name)) = (target.parent(), target.file_name()) {
            let _ =
                fs::remove_file(parent.join(format!(".{}{TEMP_SUFFIX}", name.to_string_lossy())));
        }
    }

    /// Create `dir` and any missing parents inside the store, syncing each parent so the new
    /// folders survive a crash.
    fn ensure_dir(&self, dir: &Path) -> io::Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent()
            && parent.starts_with(&self.root)
            && parent != dir
        {
            self.ensure_dir(parent)?;
        }
        match fs::create_dir(dir) {
            Ok(()) => sync_dir(dir.parent().unwrap_or(dir)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Staged {
    /// Remove the temporary file (the commit did not go ahead).
    pub fn discard(&self) {
        let _ = fs::remove_file(&self.temp);
    }
}

/// Past this many documents, one `syncfs(2)` of the store's filesystem is cheaper than a
/// sync of each file and folder (6 ms each on a VM's disk): a new machine's copy of a team
/// store, or an import, writes every document at once.
const SYNC_ONE_BY_ONE: usize = 256;

/// Make everything written on the filesystem holding `root` durable, in one call.
fn sync_filesystem(root: &Path) -> io::Result<()> {
    let dir = fs::File::open(root)?;
    nix::unistd::syncfs(&dir).map_err(io::Error::from)
}

/// Write `content` to `temp` with the permissions of `current`, the file it will replace, if
/// any; with `sync`, durably. `temp` is made here, unless it is an empty spare already made
/// with the permissions `made`.
fn write_temp(
    temp: &Path,
    made: Option<u32>,
    current: Option<&fs::Metadata>,
    content: &[u8],
    sync: bool,
) -> io::Result<()> {
    let create = made.is_none();
    let mut file = OpenOptions::new().write(true).create(create).truncate(create).open(temp)?;
    if let Some(meta) = current
        && made != Some(meta.mode())
    {
        file.set_permissions(meta.permissions())?;
    }
    file.write_all(content)?;
    if sync { file.sync_data() } else { Ok(()) }
}

/// Swap the names `a` and `b` in one step (`renameat2(RENAME_EXCHANGE)`): each then names
/// the other's file.
fn exchange(a: &Path, b: &Path) -> nix::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (a, b);
        Err(nix::errno::Errno::ENOSYS)
    }
}

/// Replace the file at `target` (a path without symbolic links) with `content` atomically
/// and durably, outside any store's commit path (`stardust fmt` on files given by path): the
/// temporary sibling, permissions and rename of a commit ([`Disk::stage`], [`Disk::install`]),
/// then the folder synced. A reader sees the old or the new content, never a mix. The
/// temporary file's name holds this process's id, so two processes replacing one file never
/// write into the same temporary file; it is removed when the replacement fails.
pub fn replace_file(target: &Path, content: &[u8]) -> io::Result<()> {
    let parent = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let temp = parent.join(format!(".{name}.{}{TEMP_SUFFIX}", std::process::id()));
    let current = fs::symlink_metadata(target).ok().filter(fs::Metadata::is_file);
    let result = write_temp(&temp, None, current.as_ref(), content, true)
        .and_then(|()| fs::rename(&temp, target));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result?;
    sync_dir(parent)
}

/// The content of a regular file, or `None` if `path` is missing or not a regular file.
pub(crate) fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(None),
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    file.read_to_end(&mut out)?;
    Ok(Some(out))
}

/// Sync the regular file at `path`; nothing to do if it is missing, a folder or a link.
fn sync_regular(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(()),
        Err(e) if is_absent(&e) => return Ok(()),
        Err(e) => return Err(e),
    }
    match File::open(path) {
        Ok(file) => file.sync_data(),
        Err(e) if is_absent(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Errors that mean "there is nothing there" (a path component is missing or is a file).
fn is_absent(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

/// Make a folder's entries (a rename, a new or removed file) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn disk() -> (tempfile::TempDir, Disk) {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        (dir, Disk::new(root, None))
    }

    /// The names and contents of the files in the replaced folder.
    fn replaced(disk: &Disk) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = fs::read_dir(disk.root().join(REPLACED_DIR))
            .unwrap()
            .map(|e| fs::read(e.unwrap().path()).unwrap())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_replaced_or_deleted_file_is_kept_until_let_go() {
        let (_dir, disk) = disk();
        fs::create_dir(disk.root().join(".stardust")).unwrap();
        disk.clear_replaced();
        disk.put("a.json", b"1").unwrap();
        disk.put("b.json", b"2").unwrap();
        // New files replace nothing.
        assert!(replaced(&disk).is_empty());
        disk.put("a.json", b"1 again").unwrap();
        disk.unlink("b.json").unwrap();
        assert_eq!(fs::read(disk.root().join("a.json")).unwrap(), b"1 again");
        assert!(!disk.root().join("b.json").exists());
        // The old files stay linked (so replacing them freed nothing) until let go.
        assert_eq!(replaced(&disk), [b"1".to_vec(), b"2".to_vec()]);
        let buried = disk.take_buried();
        assert_eq!(buried.len(), 2);
        assert!(disk.take_buried().is_empty());
        drop(buried);
        assert!(replaced(&disk).is_empty());
        // What a crash left there goes at the next open.
        disk.put("a.json", b"3").unwrap();
        std::mem::forget(disk.take_buried());
        assert_eq!(replaced(&disk), [b"1 again".to_vec()]);
        disk.clear_replaced();
        assert!(replaced(&disk).is_empty());
    }

    /// A disk whose replaced folder is ready, with its spares made.
    fn spared() -> (tempfile::TempDir, Disk) {
        let (dir, disk) = disk();
        fs::create_dir(disk.root().join(".stardust")).unwrap();
        disk.clear_replaced();
        disk.restock();
        (dir, disk)
    }

    fn inode(path: &Path) -> u64 {
        fs::symlink_metadata(path).unwrap().ino()
    }

    /// The inodes of the spares ready.
    fn spares(disk: &Disk) -> Vec<u64> {
        sync::lock(&disk.graves.spares).iter().map(|s| inode(&s.path)).collect()
    }

    #[test]
    fn a_replacement_is_written_into_a_spare_swapped_with_the_document() {
        let (_dir, disk) = spared();
        assert_eq!(replaced(&disk), vec![Vec::<u8>::new(); SPARES]);
        // A new document has nothing to swap with: it is a new file, and takes no spare.
        disk.put("a.json", b"1").unwrap();
        assert_eq!(spares(&disk).len(), SPARES);
        let path = disk.root().join("a.json");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        fs::hard_link(&path, disk.root().join("elsewhere.json")).unwrap();
        let mut reader = File::open(&path).unwrap();
        let next = *spares(&disk).last().unwrap();

        disk.put("a.json", b"2").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"2");
        assert_eq!(inode(&path), next, "the spare's file became the document's");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        // The old file is untouched: a reader that had it open and another link to it still
        // see the old content, and the spare's name keeps it until it is let go.
        let mut old = Vec::new();
        reader.read_to_end(&mut old).unwrap();
        assert_eq!(old, b"1");
        assert_eq!(fs::read(disk.root().join("elsewhere.json")).unwrap(), b"1");
        let mut kept = vec![Vec::new(); SPARES - 1];
        kept.push(b"1".to_vec());
        assert_eq!(replaced(&disk), kept);
        let mut names: Vec<_> =
            fs::read_dir(disk.root()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, [".stardust", "a.json", "elsewhere.json"], "no temporary file left");
        drop(disk.take_buried());
        assert_eq!(replaced(&disk), vec![Vec::<u8>::new(); SPARES - 1]);
        disk.restock();
        assert_eq!(spares(&disk).len(), SPARES);
    }

    #[test]
    fn a_team_stores_copy_renames_the_spare_over_the_document() {
        let (_dir, disk) = spared();
        disk.rename_over();
        disk.put("a.json", b"1").unwrap();
        let spare = sync::lock(&disk.graves.spares).last().unwrap().path.clone();
        let next = inode(&spare);
        disk.put("a.json", b"2").unwrap();
        let path = disk.root().join("a.json");
        assert_eq!(fs::read(&path).unwrap(), b"2");
        assert_eq!(inode(&path), next, "the spare was used");
        // Renamed, not swapped: the spare's name is gone, the old file is linked elsewhere.
        assert!(!spare.exists());
        let buried = disk.take_buried();
        assert_eq!(buried.len(), 1);
        assert_eq!(fs::read(&buried[0].0).unwrap(), b"1");
    }

    #[test]
    fn a_document_of_another_group_is_replaced_through_a_sibling() {
        if !nix::unistd::getuid().is_root() {
            eprintln!("skipped: giving a file another group needs root");
            return;
        }
        let (_dir, disk) = spared();
        disk.put("a.json", b"1").unwrap();
        let path = disk.root().join("a.json");
        let group = fs::metadata(&path).unwrap().gid() + 1;
        std::os::unix::fs::chown(&path, None, Some(group)).unwrap();
        disk.put("a.json", b"2").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"2");
        assert_eq!(spares(&disk).len(), SPARES, "no spare was taken");
        assert_eq!(replaced(&disk).iter().filter(|c| !c.is_empty()).count(), 1, "old one kept");
    }

    #[test]
    fn a_replaced_folder_reached_through_a_link_is_never_touched() {
        let (outside, _) = disk();
        fs::write(outside.path().join("precious"), b"keep me").unwrap();
        let (_dir, disk) = disk();
        fs::create_dir(disk.root().join(".stardust")).unwrap();
        std::os::unix::fs::symlink(outside.path(), disk.root().join(REPLACED_DIR)).unwrap();
        disk.clear_replaced();
        disk.restock();
        disk.put("a.json", b"1").unwrap();
        disk.put("a.json", b"2").unwrap();
        disk.put("b.json", b"1").unwrap();
        disk.unlink("b.json").unwrap();
        assert_eq!(fs::read(disk.root().join("a.json")).unwrap(), b"2");
        assert!(!disk.root().join("b.json").exists());
        let names: Vec<_> =
            fs::read_dir(outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["precious"], "nothing was removed, linked or made outside the store");
        assert!(disk.take_buried().is_empty());
    }

    #[test]
    fn without_the_replaced_folder_files_are_replaced_and_deleted_in_place() {
        let (_dir, disk) = disk();
        disk.put("a.json", b"1").unwrap();
        disk.put("a.json", b"2").unwrap();
        disk.unlink("a.json").unwrap();
        assert!(!disk.root().join("a.json").exists());
        assert!(disk.take_buried().is_empty());
    }

    #[test]
    fn resolve_refuses_paths_that_leave_the_store() {
        let (_dir, disk) = disk();
        for bad in ["", "/etc/x.json", "../x.json", "a/../../x.json", "a//b.json", "./a.json"] {
            let err = disk.resolve(bad).unwrap_err();
            assert_eq!(err.code(), "outside-store", "{bad}: {err}");
        }
        assert!(disk.resolve("a/b/c.json").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn links_are_never_followed() {
        let (outside, _) = disk();
        let (_dir, disk) = disk();
        std::os::unix::fs::symlink(outside.path(), disk.root().join("out")).unwrap();
        fs::create_dir(disk.root().join("real")).unwrap();
        std::os::unix::fs::symlink(disk.root().join("real"), disk.root().join("in")).unwrap();
        assert_eq!(disk.resolve("out/x.json").unwrap_err().code(), "outside-store");
        assert_eq!(disk.resolve("in/x.json").unwrap_err().code(), "invalid-arguments");
        fs::write(outside.path().join("x.json"), "{}").unwrap();
        assert_eq!(disk.read("out/x.json").unwrap(), None);
    }

    #[test]
    fn read_sees_only_regular_files() {
        let (_dir, disk) = disk();
        fs::create_dir(disk.root().join("dir.json")).unwrap();
        fs::write(disk.root().join("file.json"), "{}").unwrap();
        assert_eq!(disk.read("dir.json").unwrap(), None);
        assert_eq!(disk.read("missing.json").unwrap(), None);
        assert_eq!(disk.read("file.json/below.json").unwrap(), None);
        assert_eq!(disk.read("file.json").unwrap(), Some(b"{}".to_vec()));
    }

    #[cfg(unix)]
    #[test]
    fn write_keeps_permissions_and_leaves_no_temp() {
        let (_dir, disk) = disk();
        disk.write("a/b/doc.json", b"1").unwrap();
        let path = disk.root().join("a/b/doc.json");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        disk.write("a/b/doc.json", b"2").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"2");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let names: Vec<_> = fs::read_dir(disk.root().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["doc.json"]);
    }

    #[test]
    fn a_failed_stage_leaves_nothing() {
        let (_dir, disk) = disk();
        let disk = Disk::new(
            disk.root().to_owned(),
            Some(Arc::new(|_, _| Err(io::Error::from(io::ErrorKind::StorageFull)))),
        );
        let err = disk.stage("doc.json", b"x", false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
        assert_eq!(fs::read_dir(disk.root()).unwrap().count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn replace_file_keeps_permissions_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.json");
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        replace_file(&path, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "only the document is left");
        let missing = dir.path().join("no/such/doc.json");
        assert!(replace_file(&missing, b"x").is_err());
    }
}

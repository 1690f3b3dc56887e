//! Plain files written whole through the mount (SPEC §24, issue 39): a plain file opened for
//! writing with `O_TRUNC`, or created, is written into a spare file in the store's folder of
//! temporaries ([`REPLACED_DIR`], on the store's filesystem, never listed, emptied at every
//! open) and renamed into place when its last writer closes it. A core killed meanwhile
//! leaves the previous content (or no file), never the first pieces of what a tool wrote.
//!
//! While a spare is open its path *is* the spare for everyone who asks through the mount: the
//! front shows its attributes, lists its name, opens it (a second writer shares it; a reader
//! reads it), and applies `chmod`, `utimes` and `truncate` by path to it
//! ([`SpareWrites::file`]). Before a rename, unlink, `rmdir` or hard link reaches a path with
//! a spare at or under it, the spare is put in place first ([`SpareWrites::settle`]), so
//! those operations act on the disk alone. The rules (which opens get a spare, when it is put
//! in place) are [`spare_open`] and [`spare_due`]; this table carries them out.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::fsio::{REPLACED_DIR, SPARE_WRITE_PREFIX};
use super::saves::{Moment, OpenEffect};
use crate::sync::lock;

/// What an open of a path does with spares ([`spare_open`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SpareOpen {
    /// Opens the file on disk as it is: reads, writes that keep the content (appends,
    /// in-place edits such as `.git/index`), anything that is not a lone regular file.
    Direct,
    /// Writes a new spare, which replaces the file when its last writer closes it.
    New,
    /// Opens the spare already being written at the path (a second writer, or a reader: the
    /// name holds what the writer wrote so far, as on any disk).
    Shared,
}

/// The file an open finds at a plain path on disk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OnDisk {
    /// A regular file with one name.
    LoneFile,
    /// A regular file with other hard links: replacing it would split them, so it is written
    /// in place, as `O_TRUNC` does on any disk.
    LinkedFile,
    /// Anything else (a FIFO, a device, nothing): never replaced.
    Other,
}

/// Whether a file name is a lock file's (`index.lock`, `HEAD.lock`, `config.lock`: git's, and
/// most tools' `*.lock`): what it says is that it exists, to every process, those working in
/// the folder included, and to the core (a git operation is under way while
/// `.git/index.lock` is there, SPEC §24). So it is created, and written, on disk at once,
/// never into a spare.
pub fn is_lock_name(name: &str) -> bool {
    name.ends_with(".lock")
}

/// Whether creating the plain file `path`, opened for writing or not (`write`), writes a spare
/// (else the file is created on disk at once, as before): every new plain file but lock files
/// ([`is_lock_name`]) and files created read-only (`open(O_CREAT | O_RDONLY)`: nothing can be
/// written through it, so nothing can be half; and putting a spare in place changes the
/// file's `ctime`, which its creator may have seen).
pub fn spare_create(path: &str, write: bool) -> bool {
    write && !is_lock_name(path.rsplit('/').next().unwrap_or(path))
}

/// How an open of a path is carried out, given what the core's [`open_effect`] decided
/// (`effect`), whether a spare is open at the path (`spare_open`), the open's flags and what
/// the disk holds there, and whether the path is a lock file's ([`is_lock_name`]). Only plain files ([`OpenEffect::Disk`]) take spares: documents are
/// buffered whole already, memory files never touch the disk.
///
/// [`open_effect`]: super::saves::open_effect
pub fn spare_open(
    effect: OpenEffect,
    spare_open: bool,
    write: bool,
    trunc: bool,
    disk: OnDisk,
    lock: bool,
) -> SpareOpen {
    match effect {
        OpenEffect::Disk if spare_open => SpareOpen::Shared,
        OpenEffect::Disk if write && trunc && disk == OnDisk::LoneFile && !lock => SpareOpen::New,
        _ => SpareOpen::Direct,
    }
}

/// Whether a spare is put in place at `when`, by a handle that wrote since it opened
/// (`written`), with `writers` handles open for writing on it (counting this one), for a
/// file that was `created` (else truncated): at the close of the last writer (`close`, so
/// that the file is in place when `close` returns: a rename changes the file's `ctime`, which
/// must not move after a `stat` that follows the close), and at `fsync` (what it made durable
/// must be the file's); not at the close of a handle that wrote nothing into a truncated
/// file (`bash >` closes a duplicate before it writes), which waits for the release. After
/// that, the handles write straight to the file.
pub fn spare_due(when: Moment, written: bool, writers: u32, created: bool) -> bool {
    match when {
        Moment::Flush | Moment::Fsync => (written || created) && writers <= 1,
        Moment::Release => writers == 0,
    }
}

/// A file opened through [`SpareWrites`]: a spare (`spare`: its id) or the file on disk.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    /// The spare's id, for [`SpareWrites::decide`], when the handle writes into one.
    pub spare: Option<u64>,
}

/// The spares open in one store, by store-relative path.
#[derive(Debug)]
pub struct SpareWrites {
    root: PathBuf,
    /// Whether [`REPLACED_DIR`] is the store's own folder (else plain files are written in
    /// place, as before).
    usable: bool,
    /// The device of [`REPLACED_DIR`]: a spare can replace only a file on the same one.
    dev: u64,
    next: AtomicU64,
    open: Mutex<BTreeMap<String, Spare>>,
}

#[derive(Debug)]
struct Spare {
    id: u64,
    /// Its name in [`REPLACED_DIR`].
    name: PathBuf,
    /// Kept open, so that a spare whose name went (the private folder deleted) still has its
    /// content to put in place.
    file: Arc<File>,
    writers: u32,
    /// Made by a create (else by an `O_TRUNC` open of a file).
    created: bool,
}

impl SpareWrites {
    /// The spares of the store at `root`, whose [`REPLACED_DIR`] was emptied at open (so a
    /// spare a killed core left is gone before anything is written) when `usable`.
    pub fn new(root: PathBuf, usable: bool) -> SpareWrites {
        let dev = fs::metadata(root.join(REPLACED_DIR)).map(|m| m.dev());
        SpareWrites {
            usable: usable && dev.is_ok(),
            dev: dev.unwrap_or(0),
            root,
            next: AtomicU64::new(1),
            open: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether a spare is open at `path`.
    pub fn holds(&self, path: &str) -> bool {
        lock(&self.open).contains_key(path)
    }

    /// The spare's file at `path`, if one is open there: what a change by path (mode, owner,
    /// times, size) applies to.
    pub fn file(&self, path: &str) -> Option<PathBuf> {
        lock(&self.open).get(path).map(|spare| spare.name.clone())
    }

    /// Run `change` on the file a change by path of `path` (mode, owner, times, size) applies
    /// to: the spare open there, else the file itself. No spare is put in place meanwhile.
    pub fn change<T>(&self, path: &str, change: impl FnOnce(&Path) -> T) -> T {
        let open = lock(&self.open);
        match open.get(path) {
            Some(spare) => change(&spare.name),
            None => {
                drop(open);
                change(&self.root.join(path))
            }
        }
    }

    /// The attributes of the spare open at `path`.
    pub fn metadata(&self, path: &str) -> Option<fs::Metadata> {
        let file = lock(&self.open).get(path).map(|spare| spare.file.clone())?;
        file.metadata().ok()
    }

    /// The names of the spares open directly in `folder` (`""`: the root).
    pub fn names_in(&self, folder: &str) -> Vec<String> {
        let prefix = if folder.is_empty() { String::new() } else { format!("{folder}/") };
        lock(&self.open)
            .range(prefix.clone()..)
            .take_while(|(path, _)| path.starts_with(&prefix))
            .map(|(path, _)| &path[prefix.len()..])
            .filter(|name| !name.contains('/'))
            .map(str::to_owned)
            .collect()
    }

    /// Open `path` (a plain path the core's `open_effect` answered with `effect`) for reading
    /// and/or writing, with `O_TRUNC` or not: a spare when [`spare_open`] says so, else `None`
    /// (the front opens the file on disk as before).
    pub fn open(
        &self,
        path: &str,
        effect: OpenEffect,
        read: bool,
        write: bool,
        trunc: bool,
    ) -> io::Result<Option<Opened>> {
        let mut open = lock(&self.open);
        let target = self.root.join(path);
        let held = open.contains_key(path);
        // What the disk holds matters only to a truncating writer that finds no spare: a
        // read-only open (`grep -r`, every file read) costs no `lstat` here.
        let disk = if held || !(write && trunc) || !self.usable {
            OnDisk::Other
        } else {
            match fs::symlink_metadata(&target) {
                Ok(meta) if meta.is_file() && meta.nlink() == 1 && meta.dev() == self.dev => {
                    OnDisk::LoneFile
                }
                Ok(meta) if meta.is_file() => OnDisk::LinkedFile,
                _ => OnDisk::Other,
            }
        };
        let lock = is_lock_name(path.rsplit('/').next().unwrap_or(path));
        match spare_open(effect, held, write, trunc, disk, lock) {
            SpareOpen::Direct => Ok(None),
            SpareOpen::Shared => {
                let spare = open.get_mut(path).expect("a spare is open at the path");
                let file = OpenOptions::new().read(read).write(write).open(&spare.name)?;
                if trunc {
                    file.set_len(0)?;
                }
                let id = write.then_some(spare.id);
                spare.writers += u32::from(write);
                Ok(Some(Opened { file, spare: id }))
            }
            SpareOpen::New => {
                let meta = fs::symlink_metadata(&target)?;
                let (name, file) = self.make(meta.mode() & 0o7777)?;
                // The file keeps its owner and mode (a tool truncating a file it can write
                // need not own it).
                let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
                let id = self.insert(&mut open, path, name, &file, false)?;
                Ok(Some(Opened { file, spare: Some(id) }))
            }
        }
    }

    /// Create the plain file `path` (absent) with permissions `perm`, owned by `owner` when
    /// given: a spare, put in place when its last writer closes it, or the file itself for a
    /// lock file ([`spare_create`]), or when the store has no usable folder of temporaries or
    /// `path`'s folder is on another device.
    pub fn create(
        &self,
        path: &str,
        perm: u32,
        read: bool,
        write: bool,
        owner: Option<(u32, u32)>,
    ) -> io::Result<Opened> {
        let target = self.root.join(path);
        let parent = target.parent().expect("a created file has a folder");
        let same_device = fs::metadata(parent)?.dev() == self.dev;
        let mut open = lock(&self.open);
        if !self.usable || !same_device || !spare_create(path, write) {
            drop(open);
            let file = OpenOptions::new()
                .read(read)
                .write(true)
                .create_new(true)
                .mode(perm)
                .open(&target)?;
            file.set_permissions(fs::Permissions::from_mode(perm))?;
            give(&file, owner);
            let file = if write { file } else { File::open(&target)? };
            return Ok(Opened { file, spare: None });
        }
        if open.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        let (name, file) = self.make(perm)?;
        give(&file, owner);
        let id = self.insert(&mut open, path, name, &file, true)?;
        Ok(Opened { file, spare: Some(id) })
    }

    /// A new empty spare file with permissions `perm`, opened for reading and writing.
    fn make(&self, perm: u32) -> io::Result<(PathBuf, File)> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let file_name = format!("{SPARE_WRITE_PREFIX}{}-{n}", std::process::id());
        let name = self.root.join(REPLACED_DIR).join(file_name);
        let file =
            OpenOptions::new().read(true).write(true).create_new(true).mode(perm).open(&name)?;
        file.set_permissions(fs::Permissions::from_mode(perm))?;
        Ok((name, file))
    }

    fn insert(
        &self,
        open: &mut BTreeMap<String, Spare>,
        path: &str,
        name: PathBuf,
        file: &File,
        created: bool,
    ) -> io::Result<u64> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let kept = Arc::new(file.try_clone()?);
        open.insert(path.to_owned(), Spare { id, name, file: kept, writers: 1, created });
        Ok(id)
    }

    /// A handle writing into spare `id` reached `when` (`written`: it wrote since it opened):
    /// at a release it stops counting as a writer; when [`spare_due`] says so the spare is
    /// put in place. Answers the path it was put at, if it was (`None` too when the spare had
    /// already been put in place, or its path unlinked or renamed away).
    pub fn decide(&self, id: u64, when: Moment, written: bool) -> io::Result<Option<String>> {
        let mut open = lock(&self.open);
        let Some((path, spare)) = open.iter_mut().find(|(_, spare)| spare.id == id) else {
            return Ok(None);
        };
        if when == Moment::Release {
            spare.writers = spare.writers.saturating_sub(1);
        }
        if !spare_due(when, written, spare.writers, spare.created) {
            return Ok(None);
        }
        let path = path.clone();
        let spare = open.remove(&path).expect("the spare was just found");
        // Under the table's lock: a change by path ([`SpareWrites::change`]) finds the spare
        // or the file in place, never neither.
        self.place(&path, &spare)?;
        Ok(Some(path))
    }

    /// Put every spare open at `path` or under it in place now: before a rename, an unlink, an
    /// `rmdir` or a hard link acts on the disk there. The handles keep writing, to the file in
    /// place. Answers the paths put in place.
    pub fn settle(&self, path: &str) -> Vec<String> {
        let mut open = lock(&self.open);
        if open.is_empty() {
            return Vec::new();
        }
        let under = format!("{path}/");
        let paths: Vec<String> = open
            .range(path.to_owned()..)
            .take_while(|(p, _)| p.starts_with(path))
            .filter(|(p, _)| *p == path || p.starts_with(&under))
            .map(|(p, _)| p.clone())
            .collect();
        let spares: Vec<(String, Spare)> =
            paths.into_iter().filter_map(|p| open.remove(&p).map(|s| (p, s))).collect();
        spares
            .into_iter()
            .filter_map(|(path, spare)| match self.place(&path, &spare) {
                Ok(()) => Some(path),
                Err(e) => {
                    tracing::warn!("cannot put {path} in place: {e}; what was written is lost");
                    None
                }
            })
            .collect()
    }

    /// Rename the spare over `path`; if its name went (the private folder was deleted), write
    /// its content there instead.
    fn place(&self, path: &str, spare: &Spare) -> io::Result<()> {
        let target = self.root.join(path);
        match fs::rename(&spare.name, &target) {
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && target.parent().is_some_and(Path::is_dir) =>
            {
                super::fsio::replace_file(&target, &read_all(&spare.file)?)
            }
            other => other,
        }
    }
}

impl Drop for SpareWrites {
    /// The store closed (the mount is gone): what is open is put in place, as a close would.
    fn drop(&mut self) {
        let open = std::mem::take(&mut *lock(&self.open));
        for (path, spare) in open {
            let _ = self.place(&path, &spare);
        }
    }
}

/// The whole content of `file`, whatever its offset.
fn read_all(file: &File) -> io::Result<Vec<u8>> {
    let mut content = vec![0; file.metadata()?.len() as usize];
    let mut done = 0;
    while done < content.len() {
        match file.read_at(&mut content[done..], done as u64)? {
            0 => break,
            n => done += n,
        }
    }
    content.truncate(done);
    Ok(content)
}

fn give(file: &File, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner
        && let Err(e) = std::os::unix::fs::fchown(file, Some(uid), Some(gid))
    {
        tracing::debug!("cannot give a new file to uid {uid}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{OpenOptions as StoreOptions, Store};
    use std::os::unix::fs::FileExt;

    use crate::store::test_store as store;

    fn read(dir: &Path, path: &str) -> Option<String> {
        fs::read_to_string(dir.join(path)).ok()
    }

    #[test]
    fn which_opens_write_a_spare() {
        use OnDisk::*;
        use SpareOpen::*;
        let disk = OpenEffect::Disk;
        // (effect, a spare open at the path, write, O_TRUNC, on disk, a lock file) -> what the open does
        let cases = [
            ((disk, false, true, true, LoneFile, false), New),
            // A lock file says what it says by existing: written on disk.
            ((disk, false, true, true, LoneFile, true), Direct),
            // Appends and in-place edits (`.git/index`, a log) write the file itself.
            ((disk, false, true, false, LoneFile, false), Direct),
            ((disk, false, false, false, LoneFile, false), Direct),
            // Replacing a file with other names would split them.
            ((disk, false, true, true, LinkedFile, false), Direct),
            // FIFOs and devices are opened, never replaced.
            ((disk, false, true, true, Other, false), Direct),
            // While a spare is open, the name is the spare, for writers and readers.
            ((disk, true, true, true, LoneFile, false), Shared),
            ((disk, true, true, false, Other, false), Shared),
            ((disk, true, false, false, LoneFile, false), Shared),
            // Documents are buffered whole, memory files never touch the disk.
            ((OpenEffect::Buffered, false, true, true, LoneFile, false), Direct),
            ((OpenEffect::Memory, false, true, true, LoneFile, false), Direct),
            ((OpenEffect::Private, false, false, false, LoneFile, false), Direct),
        ];
        for ((effect, open, write, trunc, on_disk, lock), expected) in cases {
            assert_eq!(
                spare_open(effect, open, write, trunc, on_disk, lock),
                expected,
                "{effect:?} open={open} write={write} trunc={trunc} {on_disk:?} lock={lock}"
            );
        }
    }

    #[test]
    fn when_a_spare_is_put_in_place() {
        use Moment::*;
        // (moment, written since open, writers counting this one (after a release, the rest),
        // created) -> put in place
        let cases = [
            ((Flush, true, 1, false), true),
            // `bash >` closes a duplicate before writing; `cp` closes after.
            ((Flush, false, 1, false), false),
            // A new file closed empty (`touch`) is in place when `close` returns.
            ((Flush, false, 1, true), true),
            // Another writer still has it open: its last close puts it in place.
            ((Flush, true, 2, false), false),
            ((Flush, true, 2, true), false),
            ((Fsync, true, 1, false), true),
            ((Fsync, false, 1, false), false),
            ((Release, false, 0, false), true),
            ((Release, true, 1, true), false),
        ];
        for ((when, written, writers, created), expected) in cases {
            let due = spare_due(when, written, writers, created);
            assert_eq!(due, expected, "{when:?} {written} {writers} {created}");
        }
    }

    #[test]
    fn a_truncated_file_keeps_its_content_until_its_writer_closes() {
        let (dir, store) = store(&[("notes.txt", "old\n")]);
        let spares = store.spare_writes();
        let opened = spares.open("notes.txt", OpenEffect::Disk, false, true, true).unwrap();
        let Opened { file, spare: Some(id) } = opened.unwrap() else { panic!("no spare") };
        file.write_all_at(b"new, in two ", 0).unwrap();
        // The folder still holds the old content; the name (through the mount) the new.
        assert_eq!(read(dir.path(), "notes.txt").as_deref(), Some("old\n"));
        assert_eq!(spares.metadata("notes.txt").unwrap().len(), 12);
        file.write_all_at(b"pieces\n", 12).unwrap();
        // A reader through the mount shares the spare.
        let reader = spares.open("notes.txt", OpenEffect::Disk, true, false, false).unwrap();
        assert_eq!(reader.as_ref().unwrap().spare, None);
        assert_eq!(read_all(&reader.unwrap().file).unwrap(), b"new, in two pieces\n");
        // `close` puts it in place; the release after it finds nothing to do.
        assert_eq!(spares.decide(id, Moment::Flush, true).unwrap().as_deref(), Some("notes.txt"));
        assert_eq!(spares.decide(id, Moment::Release, true).unwrap(), None);
        assert_eq!(read(dir.path(), "notes.txt").as_deref(), Some("new, in two pieces\n"));
        assert!(!spares.holds("notes.txt"));
        // An append writes the file itself.
        let append = spares.open("notes.txt", OpenEffect::Disk, false, true, false).unwrap();
        assert!(append.is_none());
    }

    #[test]
    fn a_created_file_appears_in_the_folder_whole() {
        let (dir, store) = store(&[("src/keep.txt", "")]);
        let spares = store.spare_writes();
        let opened = spares.create("src/new.txt", 0o640, false, true, None).unwrap();
        let id = opened.spare.unwrap();
        opened.file.write_all_at(b"hello\n", 0).unwrap();
        assert_eq!(read(dir.path(), "src/new.txt"), None);
        assert_eq!(spares.names_in("src"), ["new.txt"]);
        assert_eq!(spares.names_in(""), Vec::<String>::new());
        // Mode, by path, applies to the spare.
        let spare_file = spares.file("src/new.txt").unwrap();
        assert!(spare_file.starts_with(dir.path().join(REPLACED_DIR)));
        fs::set_permissions(&spare_file, fs::Permissions::from_mode(0o600)).unwrap();
        // A created file closed: in place when `close` returns.
        assert_eq!(
            spares.decide(id, Moment::Flush, false).unwrap().as_deref(),
            Some("src/new.txt")
        );
        assert_eq!(spares.decide(id, Moment::Release, false).unwrap(), None);
        assert_eq!(read(dir.path(), "src/new.txt").as_deref(), Some("hello\n"));
        let meta = fs::metadata(dir.path().join("src/new.txt")).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o600);
        assert!(spares.names_in("src").is_empty());
    }

    #[test]
    fn a_second_writer_shares_the_spare_and_the_last_close_places_it() {
        let (dir, store) = store(&[("a.txt", "old")]);
        let spares = store.spare_writes();
        let first = spares.open("a.txt", OpenEffect::Disk, false, true, true).unwrap().unwrap();
        first.file.write_all_at(b"first", 0).unwrap();
        let second = spares.open("a.txt", OpenEffect::Disk, true, true, true).unwrap().unwrap();
        assert_eq!(second.spare, first.spare);
        assert_eq!(read_all(&second.file).unwrap(), b"", "O_TRUNC empties the shared spare");
        second.file.write_all_at(b"second", 0).unwrap();
        let (a, b) = (first.spare.unwrap(), second.spare.unwrap());
        assert_eq!(spares.decide(a, Moment::Flush, true).unwrap(), None);
        assert_eq!(spares.decide(a, Moment::Release, true).unwrap(), None);
        assert_eq!(read(dir.path(), "a.txt").as_deref(), Some("old"));
        assert_eq!(spares.decide(b, Moment::Release, true).unwrap().as_deref(), Some("a.txt"));
        assert_eq!(read(dir.path(), "a.txt").as_deref(), Some("second"));
    }

    #[test]
    fn renames_and_deletes_find_the_spare_in_place() {
        let (dir, store) = store(&[("d/old.txt", "old")]);
        let spares = store.spare_writes();
        let opened = spares.open("d/old.txt", OpenEffect::Disk, false, true, true).unwrap();
        let opened = opened.unwrap();
        opened.file.write_all_at(b"so far", 0).unwrap();
        let made = spares.create("d/made.txt", 0o644, false, true, None).unwrap();
        // An rmdir or a rename of the folder settles what is under it.
        let mut settled = spares.settle("d");
        settled.sort();
        assert_eq!(settled, ["d/made.txt", "d/old.txt"]);
        assert_eq!(read(dir.path(), "d/old.txt").as_deref(), Some("so far"));
        // The handles go on writing, to the file in place.
        made.file.write_all_at(b"later", 0).unwrap();
        assert_eq!(read(dir.path(), "d/made.txt").as_deref(), Some("later"));
        assert_eq!(spares.decide(made.spare.unwrap(), Moment::Release, true).unwrap(), None);
        assert!(spares.settle("d/old.txt").is_empty());
    }

    #[test]
    fn a_lock_file_is_created_on_disk_at_once() {
        let (dir, store) = store(&[(".git/HEAD", "ref: refs/heads/main\n")]);
        let opened =
            store.spare_writes().create(".git/index.lock", 0o644, false, true, None).unwrap();
        assert_eq!(opened.spare, None);
        assert!(dir.path().join(".git/index.lock").is_file());
        assert!(spare_create("a/index", true) && !spare_create("a/index.lock", true));
        // Created read-only: nothing can be written through it.
        assert!(!spare_create("a/index", false));
    }

    #[test]
    fn a_hard_linked_file_is_written_in_place() {
        let (dir, store) = store(&[("a.txt", "shared")]);
        fs::hard_link(dir.path().join("a.txt"), dir.path().join("b.txt")).unwrap();
        let opened = store.spare_writes().open("a.txt", OpenEffect::Disk, false, true, true);
        assert!(opened.unwrap().is_none());
    }

    #[test]
    fn a_spare_left_by_a_killed_core_is_removed_at_the_next_open() {
        let (dir, store) = store(&[("a.txt", "old")]);
        let opened = store.spare_writes().open("a.txt", OpenEffect::Disk, false, true, true);
        opened.unwrap().unwrap().file.write_all_at(b"half", 0).unwrap();
        let spares = |dir: &Path| -> Vec<PathBuf> {
            let entries = fs::read_dir(dir.join(REPLACED_DIR)).unwrap().flatten();
            let spare =
                |e: &fs::DirEntry| e.file_name().to_string_lossy().starts_with(SPARE_WRITE_PREFIX);
            entries.filter(spare).map(|e| e.path()).collect()
        };
        let left = spares(dir.path());
        assert_eq!(left.len(), 1);
        // A kill runs no destructor: the spare stays where it is. (Dropping the store would
        // put it in place; so it is copied aside and back after the close.)
        let kept = fs::read(&left[0]).unwrap();
        drop(store);
        fs::write(&left[0], &kept).unwrap();
        fs::write(dir.path().join("a.txt"), "old").unwrap();
        let options = StoreOptions { watch: false, ..StoreOptions::default() };
        let reopened = Store::open(dir.path(), options).unwrap();
        assert!(spares(dir.path()).is_empty(), "the spare is gone");
        assert_eq!(read(dir.path(), "a.txt").as_deref(), Some("old"));
        assert!(!reopened.spare_writes().holds("a.txt"));
    }
}

//! FUSE passthrough (Linux ≥ 6.9, SPEC §24): a read-only open of a file on disk is answered
//! with that file as its backing file, so the kernel reads it directly, with no round trip to
//! the mount per read.
//!
//! The kernel's rules for an inode (fs/fuse/iomode.c), which every answer here keeps:
//! - while any handle of the inode is open in passthrough mode, every open of it must be
//!   answered in passthrough mode naming the same backing file (else the open fails with
//!   `EIO`);
//! - a passthrough open fails while a handle of the inode is open in caching mode (neither
//!   passthrough nor `FOPEN_DIRECT_IO`).
//!
//! So this module keeps, per inode, the backing file its passthrough handles share and the
//! number of its handles open in caching mode, and answers an open:
//! - with a backing file registered: naming it. An open that must not read it (a write, a
//!   document buffered by the mount, a memory file, or a file on disk that is no longer the
//!   backing file because a commit or a tool replaced it) also gets `FOPEN_DIRECT_IO`, which
//!   the kernel lets override passthrough: its reads and writes come to the mount as before.
//! - with no backing file and no caching handle: a read-only open of a file on disk registers
//!   that file as the inode's backing file;
//! - otherwise as the mount answered before.
//!
//! The kernel leaves an inode's mode before it sends the release that ends it, and a handle is
//! counted here before its open is answered, so this view is never less busy than the
//! kernel's. A file replaced on disk while a passthrough handle keeps the old one open is the
//! one case where new opens of the same inode are slower (direct), and where `mmap` of such an
//! open maps the old file: `StardustFs::lookup` gives the path a new inode when only readers
//! hold the old one, so later opens start afresh.
//!
//! The kernel refuses backing files to a mount without `CAP_SYS_ADMIN`, on a kernel without
//! passthrough, or on a file system stacked too deep: the first refusal turns passthrough off
//! for the mount (logged at debug) and every open is answered as before.

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};

use fuser::{BackingId, FopenFlags};
use stardust_core::sync::lock;

/// Which file on disk a backing file is (device and inode number).
type FileId = (u64, u64);

/// The kernel's backing files (`B`: [`BackingId`], whose drop closes it; tests use another).
#[derive(Debug)]
pub struct Passthrough<B = BackingId> {
    state: Mutex<State<B>>,
}

#[derive(Debug)]
struct State<B> {
    /// Whether the kernel offered passthrough and has not refused a backing file yet.
    enabled: bool,
    inodes: HashMap<u64, InodeIo<B>>,
    /// The open handles counted in `inodes`: (inode, how it was answered).
    handles: HashMap<u64, (u64, Mode)>,
}

#[derive(Debug)]
struct InodeIo<B> {
    backing: Option<Backing<B>>,
    /// Handles open in the kernel's caching mode.
    caching: u32,
}

#[derive(Debug)]
struct Backing<B> {
    id: Arc<B>,
    file: FileId,
    /// Handles answered in passthrough mode naming `id`.
    users: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Passthrough,
    Caching,
}

/// How to answer an open.
#[derive(Debug)]
pub struct Answer<B = BackingId> {
    pub flags: FopenFlags,
    /// Answer in passthrough mode naming this backing file.
    pub backing: Option<Arc<B>>,
}

impl<B> Default for Passthrough<B> {
    fn default() -> Self {
        Passthrough {
            state: Mutex::new(State {
                enabled: false,
                inodes: HashMap::new(),
                handles: HashMap::new(),
            }),
        }
    }
}

impl<B> Passthrough<B> {
    /// The kernel offered passthrough at `init`.
    pub fn enable(&self) {
        lock(&self.state).enabled = true;
    }

    /// Answer the open of handle `fh` of inode `ino`, which the mount would answer with
    /// `flags`. `disk` is the file of a read-only open of a file on disk (the only kind that
    /// may become a backing file); `register` makes it a backing file (the kernel's
    /// `FUSE_DEV_IOC_BACKING_OPEN`).
    pub fn open(
        &self,
        ino: u64,
        fh: u64,
        flags: FopenFlags,
        disk: Option<&File>,
        register: impl FnOnce(&File) -> io::Result<B>,
    ) -> Answer<B> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let io = state.inodes.entry(ino).or_insert(InodeIo { backing: None, caching: 0 });
        if let Some(backing) = &mut io.backing {
            backing.users += 1;
            let reads_backing = disk.and_then(file_id) == Some(backing.file);
            let flags = if reads_backing { flags } else { flags | FopenFlags::FOPEN_DIRECT_IO };
            state.handles.insert(fh, (ino, Mode::Passthrough));
            return Answer { flags, backing: Some(backing.id.clone()) };
        }
        if let Some(file) = disk
            && state.enabled
            && io.caching == 0
            && let Some(id) = file_id(file)
        {
            match register(file) {
                Ok(backing) => {
                    let backing = Arc::new(backing);
                    io.backing = Some(Backing { id: backing.clone(), file: id, users: 1 });
                    state.handles.insert(fh, (ino, Mode::Passthrough));
                    return Answer { flags, backing: Some(backing) };
                }
                Err(e) => {
                    state.enabled = false;
                    tracing::debug!(
                        "the kernel refused a passthrough backing file ({e}); reads go through \
                         the mount from now on"
                    );
                }
            }
        }
        if flags.contains(FopenFlags::FOPEN_DIRECT_IO) {
            if io.idle() {
                state.inodes.remove(&ino);
            }
        } else {
            io.caching += 1;
            state.handles.insert(fh, (ino, Mode::Caching));
        }
        Answer { flags, backing: None }
    }

    /// The handle `fh` was released. The last passthrough handle of an inode closes its
    /// backing file.
    pub fn release(&self, fh: u64) {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let Some((ino, mode)) = state.handles.remove(&fh) else { return };
        let Some(io) = state.inodes.get_mut(&ino) else { return };
        match mode {
            Mode::Caching => io.caching = io.caching.saturating_sub(1),
            Mode::Passthrough => {
                if let Some(backing) = &mut io.backing {
                    backing.users = backing.users.saturating_sub(1);
                    if backing.users == 0 {
                        io.backing = None;
                    }
                }
            }
        }
        if io.idle() {
            state.inodes.remove(&ino);
        }
    }

    /// Whether inode `ino` has a backing file open.
    pub fn backed(&self, ino: u64) -> bool {
        lock(&self.state).inodes.get(&ino).is_some_and(|io| io.backing.is_some())
    }

    /// Whether inode `ino` has a backing file that is not the file `meta` describes (the file
    /// at its path was replaced while passthrough handles kept the old one open).
    pub fn outdated(&self, ino: u64, meta: &Metadata) -> bool {
        let state = lock(&self.state);
        let backing = state.inodes.get(&ino).and_then(|io| io.backing.as_ref());
        backing.is_some_and(|b| b.file != (meta.dev(), meta.ino()))
    }
}

impl<B> InodeIo<B> {
    fn idle(&self) -> bool {
        self.backing.is_none() && self.caching == 0
    }
}

fn file_id(file: &File) -> Option<FileId> {
    file.metadata().ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIRECT: FopenFlags = FopenFlags::FOPEN_DIRECT_IO;
    const CACHED: FopenFlags = FopenFlags::empty();

    /// A file on disk, and a second file for "the same path after a commit replaced it".
    fn files() -> (tempfile::TempDir, File, File) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "old").unwrap();
        std::fs::write(dir.path().join("b"), "new").unwrap();
        let a = File::open(dir.path().join("a")).unwrap();
        let b = File::open(dir.path().join("b")).unwrap();
        (dir, a, b)
    }

    fn enabled() -> Passthrough<u32> {
        let p = Passthrough::default();
        p.enable();
        p
    }

    /// (backing named, flags)
    fn open(
        p: &Passthrough<u32>,
        fh: u64,
        flags: FopenFlags,
        disk: Option<&File>,
    ) -> (Option<u32>, FopenFlags) {
        let next = fh as u32 + 100;
        let answer = p.open(7, fh, flags, disk, |_| Ok(next));
        (answer.backing.map(|b| *b), answer.flags)
    }

    #[test]
    fn a_read_only_disk_open_registers_a_backing_file_that_later_opens_share() {
        let (_dir, a, _) = files();
        let p = enabled();
        assert_eq!(open(&p, 1, CACHED, Some(&a)), (Some(101), CACHED));
        // Another reader of the same file: the same backing file, read by the kernel.
        assert_eq!(open(&p, 2, CACHED, Some(&a)), (Some(101), CACHED));
        // A write, a buffered document: the same backing file (or the kernel says EIO), but
        // their reads and writes come to the mount.
        assert_eq!(open(&p, 3, CACHED, None), (Some(101), DIRECT));
        assert_eq!(open(&p, 4, DIRECT, None), (Some(101), DIRECT));
        for fh in 1..=4 {
            p.release(fh);
        }
        // All closed: the next reader registers afresh.
        assert_eq!(open(&p, 5, CACHED, Some(&a)), (Some(105), CACHED));
    }

    #[test]
    fn a_file_replaced_on_disk_is_read_through_the_mount_while_the_old_backing_lives() {
        let (_dir, a, b) = files();
        let p = enabled();
        assert_eq!(open(&p, 1, CACHED, Some(&a)), (Some(101), CACHED));
        assert!(!p.outdated(7, &a.metadata().unwrap()));
        assert!(p.outdated(7, &b.metadata().unwrap()));
        assert_eq!(open(&p, 2, CACHED, Some(&b)), (Some(101), DIRECT));
        p.release(1);
        p.release(2);
        assert!(!p.outdated(7, &b.metadata().unwrap()));
        assert_eq!(open(&p, 3, CACHED, Some(&b)), (Some(103), CACHED));
    }

    #[test]
    fn no_passthrough_while_a_caching_handle_is_open() {
        let (_dir, a, _) = files();
        let p = enabled();
        // A plain file opened for writing, answered in caching mode as before.
        assert_eq!(open(&p, 1, CACHED, None), (None, CACHED));
        assert_eq!(open(&p, 2, CACHED, Some(&a)), (None, CACHED));
        p.release(1);
        assert_eq!(open(&p, 3, CACHED, Some(&a)), (None, CACHED));
        p.release(2);
        p.release(3);
        assert_eq!(open(&p, 4, CACHED, Some(&a)), (Some(104), CACHED));
        // Direct handles do not count: the kernel lets passthrough open beside them.
        let p = enabled();
        assert_eq!(open(&p, 1, DIRECT, None), (None, DIRECT));
        assert_eq!(open(&p, 2, CACHED, Some(&a)), (Some(102), CACHED));
    }

    #[test]
    fn a_refused_backing_file_turns_passthrough_off_for_good() {
        let (_dir, a, _) = files();
        let p = enabled();
        let refused = p.open(7, 1, CACHED, Some(&a), |_| Err(io::Error::from_raw_os_error(1)));
        assert!(refused.backing.is_none());
        let mut asked = false;
        let answer = p.open(8, 2, CACHED, Some(&a), |_| {
            asked = true;
            Ok(1)
        });
        assert!(answer.backing.is_none() && !asked);
        // Not offered by the kernel: never asked.
        let p = Passthrough::<u32>::default();
        assert_eq!(open(&p, 1, CACHED, Some(&a)), (None, CACHED));
    }
}

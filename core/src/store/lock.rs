//! The exclusive lock that makes one process the owner of a store.
//!
//! The lock is an advisory `flock` on the store's folder itself, held for as long as the
//! [`StoreLock`] lives; the kernel releases it when the process dies, so a crash never leaves a
//! store locked. It is taken on the folder, not on a file inside `.stardust/`, because tools
//! delete that folder (`git clean -fdx`, SPEC §24): a lock on a deleted file would let a second
//! core open the store beside the first. `.stardust/lock` only names the owner's pid, so a
//! second opener can say who owns the store.

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::{StoreError, StoreResult};

/// The file inside the private folder that names the owner's pid.
const PID_FILE: &str = "lock";

#[derive(Debug)]
pub struct StoreLock {
    _folder: File,
}

impl StoreLock {
    /// Take the lock of the store at `store` (whose private folder is `private_dir`), or fail
    /// with `busy` naming the owner's pid when it is known.
    pub fn acquire(store: &Path, private_dir: &Path) -> StoreResult<StoreLock> {
        let folder = File::open(store).map_err(|e| {
            StoreError::io(format!("cannot open the store's folder {}", store.display()), e)
        })?;
        match folder.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let pid = owner(private_dir);
                return Err(StoreError::Busy { store: store.to_owned(), pid });
            }
            Err(TryLockError::Error(e)) => {
                return Err(StoreError::io(format!("cannot lock {}", store.display()), e));
            }
        }
        let lock = StoreLock { _folder: folder };
        lock.write_pid(private_dir)?;
        Ok(lock)
    }

    /// Name this process as the owner in `private_dir` (again, after the folder was deleted).
    pub fn write_pid(&self, private_dir: &Path) -> StoreResult<()> {
        let path = private_dir.join(PID_FILE);
        std::fs::write(&path, std::process::id().to_string())
            .map_err(|e| StoreError::io(format!("cannot write {}", path.display()), e))
    }
}

/// How long a refused opener waits for the owner to name itself: two processes started at once
/// race, and the winner writes its pid just after taking the lock.
const OWNER_WAIT: Duration = Duration::from_millis(500);

/// The pid of the live process that holds the store's lock, read from `private_dir`; `None`
/// when no live process is named there within [`OWNER_WAIT`] (a pid left by a process that
/// has died since is no owner).
fn owner(private_dir: &Path) -> Option<u32> {
    let deadline = Instant::now() + OWNER_WAIT;
    loop {
        let named = std::fs::read_to_string(private_dir.join(PID_FILE))
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
            .filter(|&pid| alive(pid));
        if named.is_some() || Instant::now() >= deadline {
            return named;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process with `pid` exists (signal 0 checks without sending anything).
fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(err) => err == nix::errno::Errno::EPERM,
    }
}

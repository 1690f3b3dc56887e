//! The exclusive lock that makes one process the owner of a store.
//!
//! The lock is an advisory `flock` on `.stardust/lock`, held for as long as the [`StoreLock`]
//! lives; the kernel releases it when the process dies, so a crash never leaves a store
//! locked. The file holds the owner's pid so a second opener can say who owns the store.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::error::{StoreError, StoreResult};

#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Take the lock of the store whose private folder is `private_dir`, or fail with `busy`.
    pub fn acquire(store: &Path, private_dir: &Path) -> StoreResult<StoreLock> {
        let path = private_dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| {
                StoreError::io(format!("cannot open the lock file {}", path.display()), e)
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let pid = text.trim().parse().ok();
                return Err(StoreError::Busy { store: store.to_owned(), pid });
            }
            Err(TryLockError::Error(e)) => {
                return Err(StoreError::io(format!("cannot lock {}", path.display()), e));
            }
        }
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| write!(file, "{}", std::process::id()));
        written.map_err(|e| StoreError::io(format!("cannot write {}", path.display()), e))?;
        Ok(StoreLock { _file: file })
    }
}

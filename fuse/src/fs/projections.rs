//! Derived files in the mount (SPEC §19): `.stardust/json/<path>.json` and
//! `.stardust/entities/<id>.json`. The core decides what each path is and what a write or a
//! delete of one means (`stardust_core::store::projections`, and `saves` for the file
//! operations); this module shows them: attributes and listings from the current snapshot,
//! content fixed at open, and the document version each path was last opened at, which a save
//! of it expects (a save based on a read made before its document changed is a `conflict`).

use stardust_core::sync::lock;
use std::fs;
use std::time::SystemTime;

use fuser::{Errno, FileAttr, FileType, FopenFlags};
use stardust_core::store::projections::{self, Derived};
use stardust_core::store::saves::Held;
use stardust_core::store::{Change, Committed, PathKind};

use super::attr::disk_attr;
use super::{Handle, StardustFs};

impl StardustFs {
    /// The content of the derived file at `path` as of the current snapshot, noting the
    /// version of its document as the one a save of `path` expects.
    pub(super) fn derived_content(&self, path: &str) -> Result<Vec<u8>, Errno> {
        let target = projections::target(path).ok_or(Errno::ENOENT)?;
        let read =
            projections::read(&self.store.snapshot().analysis, &target).ok_or(Errno::ENOENT)?;
        lock(&self.seen).insert(path.to_owned(), read.version);
        Ok(read.bytes)
    }

    /// Open a derived file for reading: its bytes are fixed for the life of the handle, so a
    /// reader sees one snapshot however long it reads.
    pub(super) fn open_derived(&self, path: &str) -> Result<(u64, FopenFlags), Errno> {
        let bytes = self.derived_content(path)?;
        Ok((self.fh(Handle::Bytes(bytes)), FopenFlags::FOPEN_DIRECT_IO))
    }

    /// What a derived path holds (nothing outside the derived folders).
    pub(super) fn derived_held(&self, path: &str) -> Held {
        if projections::area(path).is_none() {
            return Held::Nothing;
        }
        match projections::resolve(&self.store.snapshot().analysis, path) {
            Some(Derived::Folder) => Held::Folder,
            Some(Derived::File(_)) => Held::File,
            None => Held::Nothing,
        }
    }

    /// The attributes of a path in a derived folder (`None` outside them): a folder, or a
    /// file with its generated size and its document's times.
    pub(super) fn derived_attr(&self, path: &str) -> Option<Result<FileAttr, Errno>> {
        projections::area(path)?;
        let snapshot = self.store.snapshot();
        let owner = self.owner;
        let attr = |kind: FileType, size: u64, perm: u16, time: SystemTime| {
            super::attr::synthetic_attr(kind, size, perm, time, owner)
        };
        Some(match projections::resolve(&snapshot.analysis, path) {
            None => Err(Errno::ENOENT),
            Some(Derived::Folder) => Ok(attr(FileType::Directory, 0, 0o755, self.started)),
            Some(Derived::File(target)) => {
                let Some(read) = projections::read(&snapshot.analysis, &target) else {
                    return Some(Err(Errno::ENOENT));
                };
                let size = read.bytes.len() as u64;
                match fs::metadata(self.abs(&read.source)) {
                    Ok(meta) => {
                        let disk = disk_attr(0, &meta);
                        Ok(FileAttr {
                            perm: disk.perm & 0o666,
                            ..attr(FileType::RegularFile, size, 0o644, disk.mtime)
                        })
                    }
                    Err(_) => Ok(attr(FileType::RegularFile, size, 0o644, self.started)),
                }
            }
        })
    }

    /// The entries of a derived folder and the memory files in it (`None` outside them).
    pub(super) fn derived_listing(
        &self,
        path: &str,
    ) -> Option<Result<Vec<(String, FileType)>, Errno>> {
        projections::area(path)?;
        let Some(names) = projections::list(&self.store.snapshot().analysis, path) else {
            return Some(Err(Errno::ENOTDIR));
        };
        let mut entries: Vec<(String, FileType)> = names
            .into_iter()
            .map(|(name, dir)| {
                (name, if dir { FileType::Directory } else { FileType::RegularFile })
            })
            .collect();
        let prefix = format!("{path}/");
        for key in lock(&self.mem).keys() {
            if let Some(name) = key.strip_prefix(&prefix)
                && !name.contains('/')
                && !entries.iter().any(|(n, _)| n == name)
            {
                entries.push((name.to_owned(), FileType::RegularFile));
            }
        }
        Some(Ok(entries))
    }

    /// The change that saves `content` at `path`: a derived path expects the version of its
    /// document that it was last opened at.
    pub(super) fn save_change(&self, path: &str, content: Vec<u8>) -> Change {
        let change = Change::put(path, content);
        if self.kind(path) != PathKind::Derived {
            return change;
        }
        match lock(&self.seen).get(path) {
            Some(version) => change.expecting(*version),
            None => change,
        }
    }

    /// A save of `path` was committed: a derived path now expects its document's new version,
    /// so a handle that goes on writing does not conflict with its own save.
    pub(super) fn saved(&self, path: &str, committed: &Committed) {
        if projections::area(path).is_none() {
            return;
        }
        let target = projections::target(path);
        let read = target.and_then(|t| projections::read(&self.store.snapshot().analysis, &t));
        let after = committed.transaction.as_ref().and_then(|txn| {
            let source = read.as_ref()?.source.as_str();
            txn.documents.iter().find(|d| d.path == source).and_then(|d| d.after)
        });
        let mut seen = lock(&self.seen);
        match after.or(read.map(|r| r.version)) {
            Some(version) => seen.insert(path.to_owned(), version),
            None => seen.remove(path),
        };
    }
}

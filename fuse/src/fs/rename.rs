//! Renames: what a rename means depends on what kind of file it moves and where (a save, a
//! document move in one transaction, Vim's backup dance, a plain rename on disk).

use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::SystemTime;

use fuser::{Errno, RenameFlags};
use stardust_core::store::{Change, Origin, PathKind};

use super::{MemFile, StardustFs, io_errno, lock};

impl StardustFs {
    /// The scratch file `holder` is going away (deleted, or moved to `to`): the documents whose
    /// bytes it held are deleted from the store, except one that the move saves again.
    pub(super) fn release_away(&self, holder: &str, to: Option<&str>) -> Result<(), Errno> {
        let docs: Vec<String> = lock(&self.away)
            .iter()
            .filter(|(doc, held)| *held == holder && Some(doc.as_str()) != to)
            .map(|(doc, _)| doc.clone())
            .collect();
        for doc in docs {
            self.commit(&doc, vec![Change::delete(doc.clone())], Errno::EPERM)?;
            self.settle(&doc);
        }
        Ok(())
    }

    pub(super) fn do_rename(&self, from: &str, to: &str, flags: RenameFlags) -> Result<(), Errno> {
        if flags.contains(RenameFlags::RENAME_EXCHANGE)
            || flags.contains(RenameFlags::RENAME_WHITEOUT)
        {
            return Err(Errno::EINVAL);
        }
        if Self::is_private(from) || Self::is_private(to) {
            return Err(Errno::EROFS);
        }
        let to_exists = lock(&self.mem).contains_key(to) || self.disk_meta(to).is_ok();
        if flags.contains(RenameFlags::RENAME_NOREPLACE) && to_exists {
            return Err(Errno::EEXIST);
        }
        if from == to {
            return Ok(());
        }
        let to_kind = self.kind(to);
        let to_dir = self.disk_meta(to).is_ok_and(|m| m.is_dir());

        // A memory file: its bytes either become a document (a commit), stay in memory, or
        // land on disk as a plain file.
        let from_mem = lock(&self.mem).get(from).map(|f| f.content.clone());
        if let Some(content) = from_mem {
            if to_dir {
                return Err(Errno::EISDIR);
            }
            match to_kind {
                PathKind::Document => {
                    let ino = self.ino_of(from);
                    self.decide(ino, to, content, Errno::EINVAL)?;
                    self.release_away(from, Some(to))?;
                    let mut mem = lock(&self.mem);
                    mem.remove(to);
                    // Handles still open keep their bytes in memory (under the new name) until
                    // the last one closes; the disk holds the committed document.
                    if let Some(file) = mem.remove(from).filter(|f| f.open > 0) {
                        mem.insert(to.to_owned(), file);
                    }
                }
                PathKind::Scratch => {
                    let mut mem = lock(&self.mem);
                    if let Some(file) = mem.remove(from) {
                        mem.insert(to.to_owned(), file);
                    }
                    drop(mem);
                    for held in lock(&self.away).values_mut().filter(|held| *held == from) {
                        *held = to.to_owned();
                    }
                }
                PathKind::Plain | PathKind::Private => {
                    let (perm, _) =
                        lock(&self.mem).get(from).map(|f| (f.perm, f.uid)).unwrap_or((0o644, 0));
                    write_file(&self.abs(to), &content, perm).map_err(io_errno)?;
                    if let Err(errno) = self.release_away(from, None) {
                        let _ = fs::remove_file(self.abs(to));
                        return Err(errno);
                    }
                    lock(&self.mem).remove(from);
                }
            }
            self.move_path(from, to);
            return Ok(());
        }

        let meta = self.disk_meta(from).map_err(io_errno)?;
        let from_kind = self.kind(from);
        if meta.is_dir() {
            return self.rename_dir(from, to);
        }
        if to_dir {
            return Err(Errno::EISDIR);
        }
        let from_doc = from_kind == PathKind::Document && meta.is_file();
        match (from_doc, to_kind) {
            (true, PathKind::Document) => {
                let content = fs::read(self.abs(from)).map_err(io_errno)?;
                let changes = vec![Change::delete(from), Change::put(to, content.clone())];
                match self.store.commit(Origin::Mount, changes) {
                    Ok(_) => self.settle(to),
                    Err(err) => return Err(self.failed(to, Some(&content), &err, Errno::EINVAL)),
                }
            }
            (true, PathKind::Scratch) => {
                // Vim's backup rename before it writes the file anew: the bytes move to the
                // scratch file and the document hides until the new save replaces it.
                let mut file = self.mem_from_meta(&meta);
                file.content = fs::read(self.abs(from)).map_err(io_errno)?;
                lock(&self.mem).insert(to.to_owned(), file);
                lock(&self.away).insert(from.to_owned(), to.to_owned());
                self.move_path(from, to);
                return Ok(());
            }
            (true, _) => {
                // A document moved out of the documents (`mv x.json x.bak`): its bytes go to
                // the new name first, then the store deletes the document.
                let content = fs::read(self.abs(from)).map_err(io_errno)?;
                let perm = (meta.mode() & 0o7777) as u16;
                write_file(&self.abs(to), &content, perm).map_err(io_errno)?;
                if let Err(errno) = self.commit(from, vec![Change::delete(from)], Errno::EINVAL) {
                    let _ = fs::remove_file(self.abs(to));
                    return Err(errno);
                }
            }
            (false, PathKind::Document) => {
                // A plain file renamed onto a document (`x.json.new` -> `x.json`): a save.
                if !meta.is_file() {
                    return Err(Errno::EINVAL);
                }
                let content = fs::read(self.abs(from)).map_err(io_errno)?;
                let ino = self.ino_of(from);
                self.decide(ino, to, content, Errno::EINVAL)?;
                fs::remove_file(self.abs(from)).map_err(io_errno)?;
            }
            (false, PathKind::Scratch) if meta.is_file() => {
                let content = fs::read(self.abs(from)).map_err(io_errno)?;
                let mut file = self.mem_from_meta(&meta);
                file.content = content;
                lock(&self.mem).insert(to.to_owned(), file);
                fs::remove_file(self.abs(from)).map_err(io_errno)?;
            }
            (false, _) => {
                fs::rename(self.abs(from), self.abs(to)).map_err(io_errno)?;
            }
        }
        lock(&self.mem).remove(to);
        self.move_path(from, to);
        Ok(())
    }

    fn mem_from_meta(&self, meta: &fs::Metadata) -> MemFile {
        let now = SystemTime::now();
        MemFile {
            content: Vec::new(),
            perm: (meta.mode() & 0o7777) as u16,
            uid: meta.uid(),
            gid: meta.gid(),
            atime: now,
            mtime: now,
            ctime: now,
            open: 0,
        }
    }

    /// Rename a folder. The documents in it move in one transaction (deleted at the old path,
    /// created at the new one); everything else follows on disk.
    fn rename_dir(&self, from: &str, to: &str) -> Result<(), Errno> {
        let abs_from = self.abs(from);
        let abs_to = self.abs(to);
        if let Ok(meta) = fs::symlink_metadata(&abs_to) {
            if !meta.is_dir() {
                return Err(Errno::ENOTDIR);
            }
            if fs::read_dir(&abs_to).map_err(io_errno)?.next().is_some() {
                return Err(Errno::ENOTEMPTY);
            }
        }
        if to.starts_with(&format!("{from}/")) {
            return Err(Errno::EINVAL);
        }
        let mut documents = Vec::new();
        let mut stack = vec![abs_from.clone()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).map_err(io_errno)? {
                let entry = entry.map_err(io_errno)?;
                let kind = entry.file_type().map_err(io_errno)?;
                let path = entry.path();
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file()
                    && let Some(rel) = relative(&self.root, &path)
                    && self.kind(&rel) == PathKind::Document
                {
                    documents.push(rel);
                }
            }
        }
        if documents.is_empty() {
            fs::rename(&abs_from, &abs_to).map_err(io_errno)?;
        } else {
            let mut changes = Vec::new();
            for doc in &documents {
                let content = fs::read(self.abs(doc)).map_err(io_errno)?;
                let moved = format!("{to}{}", &doc[from.len()..]);
                changes.push(Change::delete(doc.clone()));
                if self.kind(&moved) == PathKind::Document {
                    changes.push(Change::put(moved, content));
                } else {
                    let target = self.abs(&moved);
                    if let Some(parent) = target.parent() {
                        fs::create_dir_all(parent).map_err(io_errno)?;
                    }
                    write_file(&target, &content, 0o644).map_err(io_errno)?;
                }
            }
            self.commit(from, changes, Errno::EINVAL)?;
            merge_move(&abs_from, &abs_to).map_err(io_errno)?;
        }
        let prefix = format!("{from}/");
        let mut mem = lock(&self.mem);
        let moved: Vec<String> = mem.keys().filter(|k| k.starts_with(&prefix)).cloned().collect();
        for key in moved {
            if let Some(file) = mem.remove(&key) {
                mem.insert(format!("{to}{}", &key[from.len()..]), file);
            }
        }
        drop(mem);
        self.move_path(from, to);
        Ok(())
    }
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

/// Move everything in `from` into `to` (created if missing), then remove `from`.
fn merge_move(from: &Path, to: &Path) -> io::Result<()> {
    if fs::symlink_metadata(to).is_err() {
        return fs::rename(from, to);
    }
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() && target.is_dir() {
            merge_move(&entry.path(), &target)?;
        } else {
            fs::rename(entry.path(), target)?;
        }
    }
    fs::remove_dir(from)
}

fn write_file(path: &Path, content: &[u8], perm: u16) -> io::Result<()> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(u32::from(perm))
        .open(path)?;
    file.write_all_at(content, 0)?;
    file.sync_data()
}

//! Renames: the core decides what a rename means (`stardust_core::store::saves::rename_effect`:
//! a save, a document move in one transaction, Vim's backup rename, a plain rename on disk);
//! each function here carries out one of those effects on the mount's files, memory files and
//! inode numbers.

use stardust_core::sync::{self, lock};
use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::SystemTime;

use fuser::{Errno, RenameFlags};
use stardust_core::store::saves::{
    Held, MovedDocument, Refusal, Rename, RenameEffect, RenameMode, Source, moved_document,
    rename_effect,
};
use stardust_core::store::{Change, Origin, PathKind};

use super::{MemFile, StardustFs, disk_held, errno_of, io_errno, refusal_errno};

impl StardustFs {
    /// The scratch file `holder` is going away (deleted, or moved to `to`): the documents whose
    /// bytes it held are deleted from the store, except one that the move saves again.
    pub(super) fn release_away(&self, holder: &str, to: Option<&str>) -> Result<(), Errno> {
        let docs = lock(&self.away).released(holder, to);
        for doc in docs {
            self.commit(&doc, vec![Change::delete(doc.clone())], Errno::EPERM)?;
            self.settle(&doc);
        }
        Ok(())
    }

    /// Rename `from` to `to`: gather what each path is and holds, ask the core what that
    /// means, and carry it out.
    pub(super) fn do_rename(&self, from: &str, to: &str, flags: RenameFlags) -> Result<(), Errno> {
        let _moving = sync::read(&self.moving);
        // A file written into a spare is put in place first (what was written so far), so the
        // rename acts on the disk alone (rsync renames its temporary file after its close,
        // whose release may not have arrived yet).
        self.settle_spares(from);
        self.settle_spares(to);
        let from_meta = self.disk_meta(from);
        let to_meta = self.disk_meta(to);
        let rename = Rename {
            from,
            to,
            from_kind: self.kind(from),
            to_kind: self.kind(to),
            from_held: self.held_with(from, &from_meta),
            to_held: self.target_held(to, &to_meta),
            mode: rename_mode(flags),
        };
        let meta = || from_meta.as_ref().map_err(errno_of);
        match rename_effect(&rename) {
            // The source was looked for and not found: answer what the lookup said.
            RenameEffect::Refuse(Refusal::Missing) => Err(meta().err().unwrap_or(Errno::ENOENT)),
            RenameEffect::Refuse(refusal) => Err(refusal_errno(refusal)),
            RenameEffect::Nothing => Ok(()),
            RenameEffect::Save { from: Source::Memory } => self.save_memory_file(from, to),
            RenameEffect::Save { from: Source::Disk } => self.save_file(from, to),
            RenameEffect::Scratch => self.move_memory_file(from, to),
            RenameEffect::Plain { from: Source::Memory } => self.write_memory_file(from, to),
            RenameEffect::Plain { from: Source::Disk } => self.rename_on_disk(from, to),
            RenameEffect::MoveDocument => self.move_document(from, to),
            RenameEffect::BackupAway => self.back_up(from, to, meta()?),
            RenameEffect::LeaveDocuments => self.leave_documents(from, to, meta()?),
            RenameEffect::MoveFolder => self.rename_dir(from, to),
        }
    }

    /// What a rename's target holds: a folder on disk, else its memory file, else what the
    /// disk holds.
    fn target_held(&self, path: &str, meta: &io::Result<fs::Metadata>) -> Held {
        match disk_held(meta) {
            Held::Folder => Held::Folder,
            _ if lock(&self.mem).contains_key(path) => Held::Memory,
            _ if Self::is_private(path) => self.derived_held(path),
            held => held,
        }
    }

    fn mem_content(&self, path: &str) -> Result<Vec<u8>, Errno> {
        lock(&self.mem).get(path).map(|f| f.content.clone()).ok_or(Errno::ENOENT)
    }

    /// A memory file renamed onto a document: its bytes are saved there, then the documents it
    /// held away are released. Handles still open keep their bytes in memory (under the new
    /// name) until the last one closes; the disk holds the committed document.
    fn save_memory_file(&self, from: &str, to: &str) -> Result<(), Errno> {
        let content = self.mem_content(from)?;
        let ino = self.ino_of(from);
        self.decide(ino, to, content, Errno::EINVAL)?;
        self.release_away(from, Some(to))?;
        let mut mem = lock(&self.mem);
        mem.remove(to);
        if let Some(file) = mem.remove(from).filter(|f| f.open > 0) {
            mem.insert(to.to_owned(), file);
        }
        drop(mem);
        self.move_path(from, to);
        Ok(())
    }

    /// A memory file renamed to another scratch name: the documents it holds away follow it.
    fn move_memory_file(&self, from: &str, to: &str) -> Result<(), Errno> {
        let mut mem = lock(&self.mem);
        if let Some(file) = mem.remove(from) {
            mem.insert(to.to_owned(), file);
        }
        drop(mem);
        lock(&self.away).follow(from, to);
        self.move_path(from, to);
        self.rest_memory_file(to);
        Ok(())
    }

    /// A memory file renamed to a plain name: written there on disk, then the documents it held
    /// away are released (if that fails, the written file goes again).
    fn write_memory_file(&self, from: &str, to: &str) -> Result<(), Errno> {
        let content = self.mem_content(from)?;
        let perm = lock(&self.mem).get(from).map_or(0o644, |f| f.perm);
        write_file(&self.abs(to), &content, perm).map_err(io_errno)?;
        if let Err(errno) = self.release_away(from, None) {
            let _ = fs::remove_file(self.abs(to));
            return Err(errno);
        }
        lock(&self.mem).remove(from);
        self.move_path(from, to);
        Ok(())
    }

    /// A file on disk renamed onto a document (`x.json.new` -> `x.json`): a save; the source
    /// goes once it is committed.
    fn save_file(&self, from: &str, to: &str) -> Result<(), Errno> {
        let content = fs::read(self.abs(from)).map_err(io_errno)?;
        let ino = self.ino_of(from);
        self.decide(ino, to, content, Errno::EINVAL)?;
        fs::remove_file(self.abs(from)).map_err(io_errno)?;
        self.moved_on_disk(from, to);
        Ok(())
    }

    /// A plain rename on disk (plain files, links, FIFOs).
    fn rename_on_disk(&self, from: &str, to: &str) -> Result<(), Errno> {
        fs::rename(self.abs(from), self.abs(to)).map_err(io_errno)?;
        self.moved_on_disk(from, to);
        Ok(())
    }

    /// A document renamed onto another document path: one transaction.
    fn move_document(&self, from: &str, to: &str) -> Result<(), Errno> {
        let content = fs::read(self.abs(from)).map_err(io_errno)?;
        let changes = vec![Change::delete(from), Change::put(to, content.clone())];
        match self.store.commit(Origin::Mount, changes) {
            Ok(_) => self.settle(to),
            Err(err) => return Err(self.failed(to, Some(&content), &err, Errno::EINVAL)),
        }
        self.moved_on_disk(from, to);
        Ok(())
    }

    /// Vim's backup rename before it writes the file anew: the bytes move to the scratch file
    /// and the document hides until the new save replaces it.
    fn back_up(&self, from: &str, to: &str, meta: &fs::Metadata) -> Result<(), Errno> {
        let mut file = self.mem_from_meta(meta);
        file.content = fs::read(self.abs(from)).map_err(io_errno)?;
        lock(&self.mem).insert(to.to_owned(), file);
        lock(&self.away).hide(from, to);
        self.move_path(from, to);
        Ok(())
    }

    /// A document moved out of the documents (`mv x.json x.bak`): its bytes go to the new name
    /// first, then the store deletes the document (if that is refused, the new file goes).
    fn leave_documents(&self, from: &str, to: &str, meta: &fs::Metadata) -> Result<(), Errno> {
        let content = fs::read(self.abs(from)).map_err(io_errno)?;
        let perm = (meta.mode() & 0o7777) as u16;
        write_file(&self.abs(to), &content, perm).map_err(io_errno)?;
        if let Err(errno) = self.commit(from, vec![Change::delete(from)], Errno::EINVAL) {
            let _ = fs::remove_file(self.abs(to));
            return Err(errno);
        }
        self.moved_on_disk(from, to);
        Ok(())
    }

    /// A file on disk now lives at `to`: a memory file there is replaced, and the inode number
    /// follows.
    fn moved_on_disk(&self, from: &str, to: &str) {
        lock(&self.mem).remove(to);
        self.move_path(from, to);
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
        let documents = self.documents_under(&abs_from)?;
        if documents.is_empty() {
            fs::rename(&abs_from, &abs_to).map_err(io_errno)?;
        } else {
            let mut changes = Vec::new();
            for doc in &documents {
                let content = fs::read(self.abs(doc)).map_err(io_errno)?;
                let moved = format!("{to}{}", &doc[from.len()..]);
                changes.push(Change::delete(doc.clone()));
                match moved_document(self.kind(&moved)) {
                    MovedDocument::Document => changes.push(Change::put(moved, content)),
                    MovedDocument::LeavesDocuments => {
                        let target = self.abs(&moved);
                        if let Some(parent) = target.parent() {
                            fs::create_dir_all(parent).map_err(io_errno)?;
                        }
                        write_file(&target, &content, 0o644).map_err(io_errno)?;
                    }
                }
            }
            self.commit(from, changes, Errno::EINVAL)?;
            merge_move(&abs_from, &abs_to).map_err(io_errno)?;
        }
        self.move_memory_files_under(from, to);
        self.move_path(from, to);
        Ok(())
    }

    /// The store-relative paths of the documents in the folder `abs` and its subfolders.
    fn documents_under(&self, abs: &Path) -> Result<Vec<String>, Errno> {
        let mut documents = Vec::new();
        let mut stack = vec![abs.to_owned()];
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
        Ok(documents)
    }

    /// The memory files in the folder `from` follow it to `to`.
    fn move_memory_files_under(&self, from: &str, to: &str) {
        let prefix = format!("{from}/");
        let mut mem = lock(&self.mem);
        let moved: Vec<String> = mem.keys().filter(|k| k.starts_with(&prefix)).cloned().collect();
        for key in moved {
            if let Some(file) = mem.remove(&key) {
                mem.insert(format!("{to}{}", &key[from.len()..]), file);
            }
        }
    }
}

fn rename_mode(flags: RenameFlags) -> RenameMode {
    if flags.contains(RenameFlags::RENAME_EXCHANGE) || flags.contains(RenameFlags::RENAME_WHITEOUT)
    {
        RenameMode::Unsupported
    } else if flags.contains(RenameFlags::RENAME_NOREPLACE) {
        RenameMode::NoReplace
    } else {
        RenameMode::Replace
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

pub(super) fn write_file(path: &Path, content: &[u8], perm: u16) -> io::Result<()> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(u32::from(perm))
        .open(path)?;
    file.write_all_at(content, 0)?;
    file.sync_data()
}

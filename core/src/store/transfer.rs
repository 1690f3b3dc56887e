//! Moving a store between a folder and a team store's database (SPEC §22), byte for byte:
//! `export` writes a store's documents as of one seq into an empty folder (a folder store,
//! with the configuration minus its backend), `import` makes a store's documents exactly a
//! folder's, as one `external` transaction (never refused: a move keeps what it finds).

use std::path::Path;

use super::{Found, Inner, Store, StoreError, StoreResult, Transaction, Version};
use crate::config::{self, CONFIG_FILE, Config};
use crate::scan;

/// What an export wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    pub seq: u64,
    pub documents: usize,
}

impl Store {
    /// Write every document as of the current snapshot into `dir` (absent or empty), with
    /// the store's `stardust.toml` made a folder store's.
    pub fn export(&self, dir: &Path) -> StoreResult<Exported> {
        if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
            return Err(StoreError::InvalidArguments(format!(
                "{} is not empty; export into a new or empty folder",
                dir.display()
            )));
        }
        let io = |what: String| move |e| StoreError::io(what, e);
        std::fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
        // One snapshot, and the writer held, so no commit replaces a file while it is copied.
        let _writer = self.inner.writer()?;
        let snapshot = self.snapshot();
        let mut count = 0;
        for doc in snapshot.analysis.documents() {
            let bytes = self.inner.disk.read(&doc.path)?.unwrap_or_default();
            if Some(Version::of(&bytes)) != snapshot.version(&doc.path) {
                return Err(StoreError::io(
                    format!("cannot export {}", doc.path),
                    std::io::Error::other("it changed on disk; run the export again"),
                ));
            }
            let target = dir.join(&doc.path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(io(format!("cannot create {}", parent.display())))?;
            }
            std::fs::write(&target, &bytes)
                .map_err(io(format!("cannot write {}", target.display())))?;
            count += 1;
        }
        if let Ok(text) = std::fs::read_to_string(self.root().join(CONFIG_FILE)) {
            let target = dir.join(CONFIG_FILE);
            std::fs::write(&target, config::without_backend(&text))
                .map_err(io(format!("cannot write {}", target.display())))?;
        }
        Ok(Exported { seq: snapshot.seq, documents: count })
    }

    /// Make the store's documents exactly those of the folder store at `dir`, as one
    /// `external` transaction (`None` when they already are). The store keeps its own
    /// `stardust.toml`.
    pub fn import(&self, dir: &Path) -> StoreResult<Option<Transaction>> {
        let config = Config::load(dir)?;
        let files = scan::documents(dir, &config)?;
        let mut found: Found = Vec::with_capacity(files.len());
        for (rel, abs) in files {
            let bytes = std::fs::read(&abs)
                .map_err(|e| StoreError::io(format!("cannot read {}", abs.display()), e))?;
            found.push((rel, Some(bytes)));
        }
        let mut writer = self.inner.writer()?;
        let snapshot = self.snapshot();
        super::add_deletions(&snapshot.analysis, &mut found);
        found.retain(|(path, bytes)| bytes.as_deref().map(Version::of) != snapshot.version(path));
        let previous = self.inner.put_files(&found)?;
        // The record that follows is `external`, which recovery never redoes: the files must
        // be durable before it (one sync of the filesystem for many).
        let paths = found.iter().map(|(p, _)| p.as_str());
        self.inner
            .disk
            .sync_documents(paths)
            .map_err(|e| StoreError::io("cannot make the imported documents durable", e))?;
        match self.inner.ingest_locked(&mut writer, found) {
            Ok(txn) => Ok(txn),
            Err(err) => {
                // Not committed: put the folder back as it was.
                if let Err(undo) = self.inner.put_files(&previous) {
                    tracing::warn!(
                        "cannot put the store's files back after a failed import: {undo}"
                    );
                }
                Err(err)
            }
        }
    }
}

impl Inner {
    /// Write (or remove) files of the store's folder, not synced; returns what they held
    /// before.
    fn put_files(&self, files: &[(String, Option<Vec<u8>>)]) -> StoreResult<Found> {
        let mut previous = Vec::with_capacity(files.len());
        for (path, bytes) in files {
            self.disk.resolve(path)?;
            previous.push((path.clone(), self.disk.read(path)?));
            let done = match bytes {
                Some(bytes) => self.disk.put(path, bytes),
                None => self.disk.unlink(path),
            };
            done.map_err(|e| StoreError::io(format!("cannot write {path}"), e))?;
        }
        Ok(previous)
    }
}

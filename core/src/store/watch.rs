//! The file watcher: edits made behind Stardust's back while a store is open, debounced and
//! recorded as `external` transactions.
//!
//! Events only name paths; what changed is decided by reading the files and comparing their
//! versions with the current snapshot, so the store's own writes (already in the snapshot)
//! and events that changed nothing are ignored without bookkeeping.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Weak;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher as _};

use super::error::{StoreError, StoreResult};
use super::{Inner, PRIVATE_DIR};

/// A burst of events longer than this is taken in without waiting for it to end.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// Watches a store while it lives; dropping it stops the watching thread.
pub struct Watcher {
    notify: Option<notify::RecommendedWatcher>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Batch {
    /// Store-relative paths that had events.
    paths: BTreeSet<String>,
    /// Events were lost: compare the whole store.
    rescan: bool,
    /// Something of the private folder was removed: put it back (see `Inner::restore_private`).
    private: bool,
}

impl Watcher {
    pub(super) fn start(
        inner: Weak<Inner>,
        root: &Path,
        debounce: Duration,
    ) -> StoreResult<Watcher> {
        let (tx, rx) = mpsc::channel::<notify::Result<notify::Event>>();
        let mut notify =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Opening a file (every read of the store, ours included) changes nothing: not
                // passed on, so a read does not wake this thread too.
                if event.as_ref().is_ok_and(|e| matches!(e.kind, EventKind::Access(_))) {
                    return;
                }
                let _ = tx.send(event);
            })
            .map_err(|e| watch_error(root, e))?;
        notify.watch(root, RecursiveMode::Recursive).map_err(|e| watch_error(root, e))?;
        let root = root.to_owned();
        let thread = std::thread::Builder::new()
            .name("stardust-watch".to_owned())
            .spawn(move || {
                while let Some(batch) = next_batch(&rx, &root, debounce) {
                    let Some(inner) = inner.upgrade() else { return };
                    if batch.private {
                        // Taking the writer puts the private folder back.
                        if let Err(err) = inner.writer() {
                            tracing::error!("cannot put the store's private folder back: {err}");
                        }
                    }
                    let config = inner.ctx();
                    let reconfigure = batch.paths.iter().any(|rel| config.config.is_rule_file(rel));
                    let result = if reconfigure {
                        inner.reconfigure()
                    } else if batch.rescan {
                        inner.rescan()
                    } else {
                        inner.ingest_paths(batch.paths.into_iter().collect())
                    };
                    if let Err(err) = result {
                        tracing::error!("cannot record edits made outside Stardust: {err}");
                    }
                }
            })
            .map_err(|e| StoreError::io("cannot start the file watcher thread", e))?;
        Ok(Watcher { notify: Some(notify), thread: Some(thread) })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // Dropping the notify watcher drops the sender, which ends the thread's loop.
        self.notify.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn watch_error(root: &Path, err: notify::Error) -> StoreError {
    let source = match err.kind {
        notify::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    };
    StoreError::io(format!("cannot watch {} for edits", root.display()), source)
}

/// Wait for events, then until none has come for `debounce`; `None` once the watcher stops.
fn next_batch(
    rx: &mpsc::Receiver<notify::Result<notify::Event>>,
    root: &Path,
    debounce: Duration,
) -> Option<Batch> {
    let mut batch = Batch::default();
    let mut started: Option<Instant> = None;
    loop {
        let event = match started {
            None => rx.recv().ok()?,
            Some(_) => match rx.recv_timeout(debounce) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => return Some(batch),
                Err(RecvTimeoutError::Disconnected) => return None,
            },
        };
        if add(&mut batch, event, root) && started.is_none() {
            started = Some(Instant::now());
        }
        if started.is_some_and(|s| s.elapsed() > MAX_DELAY) {
            return Some(batch);
        }
    }
}

/// Add an event's paths to the batch; whether it could change a document.
fn add(batch: &mut Batch, event: notify::Result<notify::Event>, root: &Path) -> bool {
    let event = match event {
        Ok(event) => event,
        Err(err) => {
            tracing::warn!("the file watcher reported a problem, rescanning: {err}");
            batch.rescan = true;
            return true;
        }
    };
    if event.need_rescan() {
        batch.rescan = true;
        return true;
    }
    // Opening and reading files (ours included) changes nothing.
    if matches!(event.kind, EventKind::Access(_)) {
        return false;
    }
    let mut relevant = false;
    for path in &event.paths {
        let Some(rel) = crate::scan::relative(root, path) else { continue };
        if rel.is_empty() {
            // The root itself: anything may have happened.
            batch.rescan = true;
            relevant = true;
        } else if rel == PRIVATE_DIR || rel.starts_with(".stardust/") {
            if matches!(event.kind, EventKind::Remove(_)) {
                batch.private = true;
                relevant = true;
            }
        } else {
            batch.paths.insert(rel);
            relevant = true;
        }
    }
    relevant
}

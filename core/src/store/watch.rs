//! The file watcher: edits made behind Stardust's back while a store is open, debounced and
//! recorded as `external` transactions; and every change it sees in the folder, passed on at
//! once to fronts that cache what the folder holds ([`FolderWatch`]: the mount's kernel caches,
//! SPEC §24).
//!
//! Events only name paths; what changed is decided by reading the files and comparing their
//! versions with the current snapshot, so the store's own writes (already in the snapshot)
//! and events that changed nothing are ignored without bookkeeping.
//!
//! What is watched: every folder under the store's root, the ones the ignore rules leave out
//! (`node_modules/`, `.git/`) included, and every folder created or moved in later; not the
//! private folder's contents (`.stardust/`: only its removal matters, see below). A folder the
//! kernel's watch limit (`fs.inotify.max_user_watches`) leaves unwatched ends the watch's
//! completeness for good: [`FolderWatch::hears`] says no from then on.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
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
    folder: FolderWatch,
}

/// What happened to a path, as far as a cache of the folder needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FolderChangeKind {
    /// What the path holds changed: its bytes, mode, owner or times.
    Changed,
    /// The name appeared (created, renamed to it): its folder's listing changed too.
    Created,
    /// The name went (removed, renamed from it): its folder's listing changed too.
    Removed,
}

/// A change the watcher saw in the store's folder, passed on as it comes (not debounced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FolderChange {
    /// A store-relative path (`""`: the root folder itself).
    Path { path: String, kind: FolderChangeKind },
    /// Events were lost (the kernel's queue overflowed, the watcher failed, a folder could not
    /// be watched): anything may have changed.
    Lost,
}

/// The changes the watcher sees in the folder, for fronts that cache what it holds (the
/// mount). Cheap to clone; every clone shares the subscribers.
#[derive(Clone, Default)]
pub struct FolderWatch {
    shared: Arc<FolderShared>,
}

#[derive(Default)]
struct FolderShared {
    subscribers: Mutex<Vec<mpsc::Sender<FolderChange>>>,
    /// Set once a folder could not be watched.
    incomplete: AtomicBool,
}

impl std::fmt::Debug for FolderWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FolderWatch")
            .field("incomplete", &self.shared.incomplete.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl FolderWatch {
    /// Receive every change seen from now on.
    pub fn subscribe(&self) -> mpsc::Receiver<FolderChange> {
        let (tx, rx) = mpsc::channel();
        crate::sync::lock(&self.shared.subscribers).push(tx);
        rx
    }

    /// Whether every change made in the folder to the store-relative `path` (its bytes, mode,
    /// owner, times, existence) is reported to subscribers: so a cache of it may be kept as
    /// long as it is dropped on each report. Not for the private folder, and for nothing once a
    /// folder could not be watched.
    pub fn hears(&self, path: &str) -> bool {
        !self.shared.incomplete.load(Ordering::Relaxed)
            && path != PRIVATE_DIR
            && !path.starts_with(".stardust/")
    }

    /// Pass an event on to the subscribers.
    fn publish(&self, event: &notify::Result<notify::Event>, root: &Path) {
        if let Err(err) = event
            && matches!(err.kind, notify::ErrorKind::MaxFilesWatch)
        {
            tracing::warn!(
                "a folder of {} could not be watched (raise fs.inotify.max_user_watches and \
                 restart): edits made there outside Stardust reach caches of the folder (the \
                 mount's) only when they expire",
                root.display()
            );
            self.shared.incomplete.store(true, Ordering::Relaxed);
        }
        let mut subscribers = crate::sync::lock(&self.shared.subscribers);
        if subscribers.is_empty() {
            return;
        }
        let changes = folder_changes(event, root);
        subscribers.retain(|tx| changes.iter().all(|c| tx.send(c.clone()).is_ok()));
    }
}

/// What an event tells a cache of the folder.
fn folder_changes(event: &notify::Result<notify::Event>, root: &Path) -> Vec<FolderChange> {
    use notify::event::{ModifyKind, RenameMode};
    let event = match event {
        Ok(event) => event,
        Err(_) => return vec![FolderChange::Lost],
    };
    if event.need_rescan() {
        return vec![FolderChange::Lost];
    }
    let kind = match event.kind {
        EventKind::Access(_) => return Vec::new(),
        // `Both` repeats the paths of its `From` and `To`.
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => return Vec::new(),
        EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(RenameMode::From)) => {
            FolderChangeKind::Removed
        }
        // A rename whose side is not known counts as a name that appeared (the stronger).
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_)) => FolderChangeKind::Created,
        EventKind::Modify(_) => FolderChangeKind::Changed,
        EventKind::Any | EventKind::Other => return vec![FolderChange::Lost],
    };
    let mut changes = Vec::new();
    for path in &event.paths {
        let Some(rel) = crate::scan::relative(root, path) else { continue };
        if rel == PRIVATE_DIR || rel.starts_with(".stardust/") {
            continue;
        }
        if rel.is_empty() && kind != FolderChangeKind::Changed {
            // The root itself went or moved.
            return vec![FolderChange::Lost];
        }
        changes.push(FolderChange::Path { path: rel, kind });
    }
    changes
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
        let folder = FolderWatch::default();
        let (publisher, at) = (folder.clone(), root.to_owned());
        let mut notify =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                publisher.publish(&event, &at);
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
        Ok(Watcher { notify: Some(notify), thread: Some(thread), folder })
    }

    /// The changes this watcher sees in the folder.
    pub(super) fn folder(&self) -> FolderWatch {
        self.folder.clone()
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use notify::event::{
        AccessKind, CreateKind, DataChange, MetadataKind, ModifyKind, RemoveKind, RenameMode,
    };

    use super::*;

    #[test]
    fn what_each_event_tells_a_cache_of_the_folder() {
        let root = Path::new("/s");
        let event = |kind: EventKind, paths: &[&str]| {
            let mut event = notify::Event::new(kind);
            for path in paths {
                event = event.add_path(PathBuf::from(path));
            }
            Ok(event)
        };
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        let cases: Vec<(&str, notify::Result<notify::Event>)> = vec![
            ("write", event(data, &["/s/a/notes.md"])),
            ("chmod", event(EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)), &["/s/a"])),
            ("create", event(EventKind::Create(CreateKind::File), &["/s/new.txt"])),
            ("remove", event(EventKind::Remove(RemoveKind::Folder), &["/s/node_modules/x"])),
            (
                "rename from",
                event(EventKind::Modify(ModifyKind::Name(RenameMode::From)), &["/s/a"]),
            ),
            ("rename to", event(EventKind::Modify(ModifyKind::Name(RenameMode::To)), &["/s/b"])),
            (
                "rename both",
                event(EventKind::Modify(ModifyKind::Name(RenameMode::Both)), &["/s/a", "/s/b"]),
            ),
            ("read", event(EventKind::Access(AccessKind::Any), &["/s/a/notes.md"])),
            ("private", event(data, &["/s/.stardust/log/log", "/s/.stardust"])),
            (
                "the root's mode",
                event(EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)), &["/s"]),
            ),
            ("the root removed", event(EventKind::Remove(RemoveKind::Folder), &["/s"])),
            ("outside", event(data, &["/elsewhere/x"])),
            (
                "overflow",
                Ok(notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan)),
            ),
            ("watch limit", Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch))),
        ];
        let mut out = String::new();
        for (name, event) in &cases {
            out.push_str(&format!("{name}: {:?}\n", folder_changes(event, root)));
        }
        expect_test::expect![[r#"
            write: [Path { path: "a/notes.md", kind: Changed }]
            chmod: [Path { path: "a", kind: Changed }]
            create: [Path { path: "new.txt", kind: Created }]
            remove: [Path { path: "node_modules/x", kind: Removed }]
            rename from: [Path { path: "a", kind: Removed }]
            rename to: [Path { path: "b", kind: Created }]
            rename both: []
            read: []
            private: []
            the root's mode: [Path { path: "", kind: Changed }]
            the root removed: [Lost]
            outside: []
            overflow: [Lost]
            watch limit: [Lost]
        "#]]
        .assert_eq(&out);
    }

    #[test]
    fn a_folder_left_unwatched_ends_what_the_watch_hears() {
        let watch = FolderWatch::default();
        let rx = watch.subscribe();
        assert!(watch.hears("node_modules/x/index.js"));
        assert!(watch.hears(""));
        assert!(!watch.hears(".stardust"));
        assert!(!watch.hears(".stardust/rejected/a.json"));
        watch.publish(&Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch)), Path::new("/s"));
        assert!(!watch.hears("node_modules/x/index.js"));
        assert_eq!(rx.try_recv(), Ok(FolderChange::Lost));
    }
}

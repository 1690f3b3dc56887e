//! stardust-fuse: the store shown as ordinary files (SPEC §14). Every program reads the
//! committed documents, and every save goes through the core's save authority.
//!
//! This crate converts FUSE requests into store calls and back; the rules (which names are
//! documents or scratch files, what a rename or a close means, what a refusal keeps) live in
//! `stardust_core::store::saves`. It keeps inodes, errno mapping and kernel cache invalidation.

mod fs;
mod nodes;
mod passthrough;
mod private;

use stardust_core::sync;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use fuser::{Config, INodeNo, MountOption, Notifier, Session, SessionACL, SessionUnmounter};
use stardust_core::store::projections::{self, Target};
use stardust_core::store::{ChangeKind, FolderChange, FolderChangeKind, Notice, Store};
use stardust_core::views::{Live, ViewEvent};

use crate::fs::{Inval, StardustFs};
use crate::nodes::Nodes;
use crate::passthrough::Passthrough;

/// How to mount.
#[derive(Clone, Debug)]
pub struct MountOptions {
    /// The largest document or scratch file accepted (they are held in memory while written);
    /// a write beyond it fails with `EFBIG`.
    pub max_file_size: u64,
    /// Threads serving kernel requests.
    pub threads: usize,
}

impl Default for MountOptions {
    fn default() -> MountOptions {
        MountOptions { max_file_size: 64 * 1024 * 1024, threads: 4 }
    }
}

/// A running mount. Dropping it without [`Mount::unmount`] unmounts too, less politely.
pub struct Mount {
    dir: PathBuf,
    unmounter: SessionUnmounter,
    session: Option<JoinHandle<io::Result<()>>>,
    stop: Arc<AtomicBool>,
    feed: Option<JoinHandle<()>>,
    /// Turns the changes the store's watcher sees in the folder into invalidations.
    folder: Option<JoinHandle<()>>,
    inval: Option<JoinHandle<()>>,
    /// The views' results, and the thread turning their changes into invalidations.
    views: Option<(Arc<Live>, JoinHandle<()>)>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount").field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// Show `store` at the folder `dir` until [`Mount::unmount`]. `on_end` runs when the mount
/// ends for any reason (unmounted from outside, say), so a foreground process can stop.
pub fn mount(
    store: Arc<Store>,
    dir: &Path,
    options: &MountOptions,
    on_end: impl FnOnce() + Send + 'static,
) -> io::Result<Mount> {
    let dir = std::fs::canonicalize(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot mount at {}: {e}", dir.display())))?;
    if dir.starts_with(store.root()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "cannot mount at {}: it is inside the store {}, so the mount would show itself; \
                 choose a folder outside the store",
                dir.display(),
                store.root().display()
            ),
        ));
    }
    let nodes = Arc::new(Mutex::new(Nodes::default()));
    let passthrough = Arc::new(Passthrough::default());
    // Subscribed before the first request: no change made in the folder from then on is missed.
    let folder_changes = store.folder_watch().map(|watch| watch.subscribe());
    let (tx, rx) = mpsc::channel();
    let views = Live::of(&store)?;
    let view_events = views.subscribe();
    let filesystem = StardustFs::new(
        store.clone(),
        views.clone(),
        dir.clone(),
        options.max_file_size,
        tx.clone(),
        nodes.clone(),
        passthrough.clone(),
    );
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(format!("stardust:{}", store.root().display())),
        MountOption::Subtype("stardust".to_owned()),
        MountOption::DefaultPermissions,
        MountOption::NoAtime,
    ];
    config.n_threads = Some(options.threads.max(1));
    // Run by root (a system mount, CI), every user reaches the files, as on any mounted disk;
    // the kernel checks permissions against the files' modes (`default_permissions`).
    if nix::unistd::geteuid().is_root() {
        config.acl = SessionACL::All;
    }
    let mut session = Session::new(filesystem, &dir, &config)?;
    let notifier = session.notifier();
    let unmounter = session.unmount_callable();
    let session =
        std::thread::Builder::new().name("stardust-fuse".to_owned()).spawn(move || {
            let result = session.run();
            on_end();
            result
        })?;
    let inval = std::thread::Builder::new()
        .name("stardust-fuse-inval".to_owned())
        .spawn(move || invalidate(&notifier, &rx))?;
    let stop = Arc::new(AtomicBool::new(false));
    // Stopped by `stop`: the views may outlive the mount (the core's service shares them).
    let view_thread = {
        let (nodes, tx, stop) = (nodes.clone(), tx.clone(), stop.clone());
        std::thread::Builder::new().name("stardust-fuse-views".to_owned()).spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match view_events.recv_timeout(Duration::from_millis(200)) {
                    Ok(event) => forward_views(&event, &nodes, &tx),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
        })?
    };
    let folder = match folder_changes {
        Some(changes) => {
            let (nodes, tx, stop) = (nodes.clone(), tx.clone(), stop.clone());
            let thread = std::thread::Builder::new().name("stardust-fuse-folder".to_owned());
            Some(thread.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match changes.recv_timeout(Duration::from_millis(200)) {
                        Ok(first) => {
                            // What came meanwhile too, each path once.
                            let batch = std::iter::once(first).chain(changes.try_iter().take(4096));
                            forward_folder(batch, &nodes, &tx);
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                }
            })?)
        }
        None => None,
    };
    let feed = {
        let stop = stop.clone();
        let subscription = store.subscribe();
        std::thread::Builder::new().name("stardust-fuse-feed".to_owned()).spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(notice) = subscription.next_timeout(Duration::from_millis(200)) {
                    forward(&notice, &nodes, &passthrough, &tx);
                }
            }
        })?
    };
    Ok(Mount {
        dir,
        unmounter,
        session: Some(session),
        stop,
        feed: Some(feed),
        folder,
        inval: Some(inval),
        views: Some((views, view_thread)),
    })
}

impl Mount {
    /// The mounted folder (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Unmount and wait until every request in flight is answered. If programs still hold
    /// files open, the folder is detached at once and the mount goes on serving them until
    /// they close.
    pub fn unmount(mut self) -> io::Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> io::Result<()> {
        let Some(session) = self.session.take() else { return Ok(()) };
        if let Err(e) = self.unmounter.unmount() {
            tracing::warn!("cannot unmount {} ({e}); detaching it instead", self.dir.display());
            let status = std::process::Command::new("fusermount3")
                .arg("-u")
                .arg("-z")
                .arg(&self.dir)
                .status();
            if !status.is_ok_and(|s| s.success()) {
                tracing::warn!("fusermount3 -uz {} failed", self.dir.display());
            }
        }
        let result = session.join().map_err(|_| io::Error::other("the mount's thread panicked"))?;
        // Once the kernel tears a detached mount down, a reader of the device may hear
        // ECONNABORTED instead of ENODEV: both mean the mount is over.
        let result = match result {
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ECONNABORTED as i32) => Ok(()),
            other => other,
        };
        self.stop.store(true, Ordering::Relaxed);
        if let Some(feed) = self.feed.take() {
            let _ = feed.join();
        }
        if let Some(folder) = self.folder.take() {
            let _ = folder.join();
        }
        // The filesystem's share of the views went with the session; `stop` ends the thread
        // forwarding their events.
        if let Some((views, thread)) = self.views.take() {
            drop(views);
            let _ = thread.join();
        }
        if let Some(inval) = self.inval.take() {
            let _ = inval.join();
        }
        result
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            tracing::warn!("unmounting {} failed: {e}", self.dir.display());
        }
    }
}

/// Turn a commit made by any path into the kernel cache entries it outdates.
fn forward(
    notice: &Notice,
    nodes: &Mutex<Nodes>,
    passthrough: &Passthrough,
    tx: &mpsc::Sender<Inval>,
) {
    let nodes = sync::lock(nodes);
    match notice {
        Notice::Changes { documents, entities, .. } => {
            derived(documents, entities, &nodes, tx);
            for doc in documents {
                let ino = nodes.get(&doc.path);
                if let Some(ino) = ino {
                    let _ = tx.send(Inval::Inode(ino));
                }
                // The commit replaced the file on disk: where passthrough readers keep the old
                // one, the name goes too, and the next lookup gives the path a new inode.
                let renamed = ino.is_some_and(|ino| passthrough.backed(ino));
                if (doc.change != ChangeKind::Changed || renamed)
                    && let Some(parent) = nodes.get(nodes::parent(&doc.path))
                {
                    let name = doc.path.rsplit('/').next().unwrap_or(&doc.path).to_owned();
                    let _ = tx.send(Inval::Entry(parent, name));
                    if doc.change != ChangeKind::Changed {
                        // The folder's listing, which the kernel may cache.
                        let _ = tx.send(Inval::Inode(parent));
                    }
                }
            }
        }
        Notice::Overflow { .. } => invalidate_all(&nodes, tx),
    }
}

/// Drop every kernel entry the mount ever gave.
fn invalidate_all(nodes: &Nodes, tx: &mpsc::Sender<Inval>) {
    for (ino, path) in nodes.all() {
        let _ = tx.send(Inval::Inode(ino));
        if let Some(parent) = nodes.get(nodes::parent(&path)).filter(|_| !path.is_empty()) {
            let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
            let _ = tx.send(Inval::Entry(parent, name));
        }
    }
}

/// Turn changes the store's watcher saw in the folder into the kernel cache entries they
/// outdate: the path's attributes (and content cache); for a name that appeared or went, also
/// the name and its folder's attributes and listing. The kernel holds no name the mount never
/// gave it (a name answered `ENOENT` is not cached), and every name in a listing it holds was
/// given: so a name gone that the mount does not know (its own delete or rename forgot it)
/// outdates nothing, and one that appeared outdates only its folder. The mount's own changes
/// come back this way too: dropping entries the kernel already updated costs a lookup at most.
fn forward_folder(
    changes: impl Iterator<Item = FolderChange>,
    nodes: &Mutex<Nodes>,
    tx: &mpsc::Sender<Inval>,
) {
    // Per path: whether a name appeared, whether its name changed at all.
    let mut paths = std::collections::BTreeMap::new();
    for change in changes {
        match change {
            FolderChange::Lost => {
                invalidate_all(&sync::lock(nodes), tx);
                return;
            }
            FolderChange::Path { path, kind } => {
                let (created, named) = paths.entry(path).or_insert((false, false));
                *created |= kind == FolderChangeKind::Created;
                *named |= kind != FolderChangeKind::Changed;
            }
        }
    }
    let nodes = sync::lock(nodes);
    let mut folders = std::collections::BTreeSet::new();
    for (path, (created, named)) in paths {
        let ino = nodes.get(&path);
        if let Some(ino) = ino {
            let _ = tx.send(Inval::Inode(ino));
        }
        if !named || path.is_empty() {
            continue;
        }
        let Some(parent) = nodes.get(nodes::parent(&path)) else { continue };
        if ino.is_some() {
            let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
            let _ = tx.send(Inval::Entry(parent, name));
            folders.insert(parent);
        } else if created {
            folders.insert(parent);
        }
    }
    for folder in folders {
        let _ = tx.send(Inval::Inode(folder));
    }
}

/// Turn a change of views' results into the kernel cache entries it outdates: each path's
/// inode and name (a view's file can appear or go), and the index.
fn forward_views(event: &ViewEvent, nodes: &Mutex<Nodes>, tx: &mpsc::Sender<Inval>) {
    let nodes = sync::lock(nodes);
    let index = format!("{}/views.json", stardust_core::store::PRIVATE_DIR);
    let mut folders = std::collections::BTreeSet::new();
    for path in event.paths.iter().map(|(path, _)| path).chain([&index]) {
        if let Some(ino) = nodes.get(path) {
            let _ = tx.send(Inval::Inode(ino));
        }
        if let Some(parent) = nodes.get(nodes::parent(path)) {
            let name = path.rsplit('/').next().unwrap_or(path).to_owned();
            let _ = tx.send(Inval::Entry(parent, name));
        }
        // Every folder above it lists it or a virtual folder leading to it; the kernel may
        // cache those listings.
        let mut above = path.as_str();
        while !above.is_empty() {
            above = nodes::parent(above);
            folders.extend(nodes.get(above));
        }
    }
    for folder in folders {
        let _ = tx.send(Inval::Inode(folder));
    }
}

/// The derived files (SPEC §19) a commit outdates: the projection of each changed document
/// and the file of each changed entity (and the folder entries of those created or deleted).
fn derived(
    documents: &[stardust_core::store::DocumentNotice],
    entities: &[stardust_core::store::EntityNotice],
    nodes: &Nodes,
    tx: &mpsc::Sender<Inval>,
) {
    let targets = documents
        .iter()
        .map(|d| (Target::Projection(d.path.clone()), d.change))
        .chain(entities.iter().map(|e| (Target::Entity(e.id.clone()), e.change)));
    for (target, change) in targets {
        let path = projections::path_of(&target);
        if let Some(ino) = nodes.get(&path) {
            let _ = tx.send(Inval::Inode(ino));
        }
        if change != ChangeKind::Changed
            && let Some(parent) = nodes.get(nodes::parent(&path))
        {
            let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
            let _ = tx.send(Inval::Entry(parent, name));
        }
    }
}

/// Send invalidations to the kernel until every sender is gone. The kernel answers `ENOENT`
/// for entries it does not cache, which is fine.
fn invalidate(notifier: &Notifier, rx: &mpsc::Receiver<Inval>) {
    for inval in rx {
        let result = match &inval {
            Inval::Inode(ino) => notifier.inval_inode(INodeNo(*ino), 0, 0),
            Inval::Entry(parent, name) => notifier.inval_entry(INodeNo(*parent), OsStr::new(name)),
        };
        if let Err(e) = result
            && e.raw_os_error() != Some(2)
        {
            tracing::debug!("cannot invalidate {inval:?}: {e}");
        }
    }
}

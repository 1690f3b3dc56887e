//! Every view's latest result, kept fresh off the commit path (SPEC §19).
//!
//! A [`Live`] owns one thread that follows the store's change feed. For each batch of
//! transactions it takes the store's snapshot, works out which views the batch can have
//! changed, recomputes only those on that snapshot, and then publishes the new
//! [`ViewState`] with one pointer swap. A commit only queues its transaction for the feed, so
//! views never slow a commit; a reader takes one `Arc<ViewState>` and every result in it is
//! complete and of one seq.
//!
//! Which views a batch changes: a view whose definition changed (or appeared, went, or whose
//! path became usable or not), and a view whose query reads ([`Reads`]) an entity the batch
//! changed: one of the read types before or after, with a read attribute whose value differs
//! between the previous snapshot and this one. The entity ids come from the feed; to compare
//! exactly the snapshots they lie between, the thread gathers notices until their seq is the
//! snapshot's (or, failing that, recomputes every view: always correct, only slower).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Rendered, compute};
use crate::analysis::{Analysis, ViewDef};
use crate::qlang::{Query, Reads};
use crate::query::MAX_BINDINGS;
use crate::store::ChangeKind;
use crate::store::{Notice, Snapshot, Store};
use crate::sync::lock;

/// Every view's result as of the last recomputation.
#[derive(Debug, Default)]
pub struct ViewState {
    /// The seq every result here is current as of.
    pub seq: u64,
    /// By view id.
    pub views: BTreeMap<String, Arc<Rendered>>,
    /// The view shown at each usable path.
    by_path: BTreeMap<String, String>,
    /// What each view's query reads (`None` when the query cannot be read).
    reads: BTreeMap<String, Option<Reads>>,
    /// Each view's definition, to notice changes to it.
    defs: BTreeMap<String, ViewDef>,
}

impl ViewState {
    /// The result the mount shows at `path`.
    pub fn at_path(&self, path: &str) -> Option<&Arc<Rendered>> {
        self.views.get(self.by_path.get(path)?)
    }

    /// Every shown path with its view id, in path order.
    pub fn paths(&self) -> impl Iterator<Item = (&str, &str)> {
        self.by_path.iter().map(|(p, id)| (p.as_str(), id.as_str()))
    }

    /// The `.stardust/views.json` index: `{"seq", "views": [{id, path, format, _seq, rows,
    /// error?}]}` in id order.
    pub fn index_json(&self) -> Value {
        let views: Vec<Value> = self
            .views
            .values()
            .map(|r| {
                let mut v = json!({
                    "id": r.id,
                    "path": r.path,
                    "format": r.format,
                    "_seq": r.seq,
                    "rows": r.rows,
                    "bytes": r.bytes.len(),
                });
                if let (Some((code, message)), Some(map)) = (&r.error, v.as_object_mut()) {
                    map.insert("error".into(), json!({"code": code, "message": message}));
                }
                v
            })
            .collect();
        json!({"seq": self.seq, "views": views})
    }
}

/// What one recomputation changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewEvent {
    /// The seq the new results are as of.
    pub seq: u64,
    /// Views whose result changed, appeared or went, in id order.
    pub ids: Vec<String>,
    /// Paths whose file changed, appeared or went, in path order, with which of those.
    pub paths: Vec<(String, ChangeKind)>,
}

struct Shared {
    state: RwLock<Arc<ViewState>>,
    listeners: Mutex<Vec<mpsc::Sender<ViewEvent>>>,
    stop: AtomicBool,
    /// The seq of the last published state, for [`Live::wait_for`].
    done: (Mutex<u64>, Condvar),
    max_bindings: u64,
}

/// The views of one store, kept fresh by a background thread until dropped.
pub struct Live {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").field("seq", &self.state().seq).finish_non_exhaustive()
    }
}

/// How long the thread waits after a notice before it starts a batch (see `follow`).
const LET_THE_COMMIT_RETURN: Duration = Duration::from_millis(1);

/// How long the thread waits for the notices that bring it up to a snapshot's seq.
const CATCH_UP: Duration = Duration::from_millis(200);

impl Live {
    /// Compute every view of `store` now and keep them fresh.
    pub fn start(store: Arc<Store>) -> std::io::Result<Live> {
        Live::with_bounds(store, MAX_BINDINGS)
    }

    /// The one `Live` of `store` in this process, started on first use: the mount, MCP and
    /// LSP fronts of one core share it, so each view is computed once per change.
    pub fn of(store: &Arc<Store>) -> std::io::Result<Arc<Live>> {
        static ALL: Mutex<Vec<(std::sync::Weak<Store>, std::sync::Weak<Live>)>> =
            Mutex::new(Vec::new());
        let mut all = lock(&ALL);
        all.retain(|(s, l)| s.strong_count() > 0 && l.strong_count() > 0);
        let found = all.iter().find_map(|(s, l)| {
            std::ptr::eq(s.as_ptr(), Arc::as_ptr(store)).then(|| l.upgrade()).flatten()
        });
        if let Some(live) = found {
            return Ok(live);
        }
        let live = Arc::new(Live::start(store.clone())?);
        all.push((Arc::downgrade(store), Arc::downgrade(&live)));
        Ok(live)
    }

    /// [`Live::start`] with a bound on each query's bindings.
    pub fn with_bounds(store: Arc<Store>, max_bindings: u64) -> std::io::Result<Live> {
        // Subscribed before the first snapshot, so no commit after it is missed.
        let subscription = store.subscribe();
        let snapshot = store.snapshot();
        let state = Arc::new(recompute(None, &snapshot, None, max_bindings));
        let shared = Arc::new(Shared {
            done: (Mutex::new(state.seq), Condvar::new()),
            state: RwLock::new(state),
            listeners: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            max_bindings,
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("stardust-views".to_owned())
                .spawn(move || follow(&store, &subscription, snapshot, &shared))?
        };
        Ok(Live { shared, thread: Some(thread) })
    }

    /// The latest results: one consistent state.
    pub fn state(&self) -> Arc<ViewState> {
        self.shared.state.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Events for every later recomputation that changed something.
    pub fn subscribe(&self) -> mpsc::Receiver<ViewEvent> {
        let (tx, rx) = mpsc::channel();
        lock(&self.shared.listeners).push(tx);
        rx
    }

    /// Wait until the results are as of `seq` or later; false after `timeout`.
    pub fn wait_for(&self, seq: u64, timeout: Duration) -> bool {
        let (done, cond) = &self.shared.done;
        let deadline = Instant::now() + timeout;
        let mut at = lock(done);
        while *at < seq {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            at = cond.wait_timeout(at, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        true
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread: follow the feed, recompute, publish.
fn follow(
    store: &Store,
    subscription: &crate::store::Subscription,
    mut last: Arc<Snapshot>,
    shared: &Shared,
) {
    while !shared.stop.load(Ordering::Relaxed) {
        let asked = Instant::now();
        let Some(first) = subscription.next_timeout(Duration::from_millis(200)) else {
            // A closed store answers at once: do not spin until the owner drops us.
            if asked.elapsed() < Duration::from_millis(10) {
                std::thread::sleep(Duration::from_millis(100));
            }
            continue;
        };
        // Let the commit that published the notice return first. Woken by its publish, this
        // thread, having slept, may take the committing thread's processor at once (the
        // scheduler favours a waking sleeper) and keep it for a time slice of its batch,
        // which the commit's caller then waits out.
        std::thread::sleep(LET_THE_COMMIT_RETURN);
        // The entity ids changed since `last`, and the seq they reach; `None`: unknown.
        let mut changed: Option<BTreeSet<String>> = Some(BTreeSet::new());
        let mut reached = merge(&mut changed, &first);
        let mut snapshot = store.snapshot();
        let deadline = Instant::now() + CATCH_UP;
        while snapshot.seq != reached {
            if reached > snapshot.seq {
                // The feed is ahead of the snapshot read: read it again.
                snapshot = store.snapshot();
                if snapshot.seq < reached && Instant::now() > deadline {
                    changed = None;
                    break;
                }
                continue;
            }
            match subscription.next_timeout(deadline.saturating_duration_since(Instant::now())) {
                Some(notice) => reached = merge(&mut changed, &notice),
                None => {
                    changed = None;
                    break;
                }
            }
        }
        if snapshot.seq <= last.seq && changed.as_ref().is_some_and(BTreeSet::is_empty) {
            continue;
        }
        let before = shared.state.read().unwrap_or_else(|e| e.into_inner()).clone();
        let state =
            recompute(Some((&*before, &*last)), &snapshot, changed.as_ref(), shared.max_bindings);
        let event = event_of(&before, &state);
        let seq = state.seq;
        *shared.state.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(state);
        {
            let (done, cond) = &shared.done;
            *lock(done) = seq;
            cond.notify_all();
        }
        if !event.ids.is_empty() || !event.paths.is_empty() {
            lock(&shared.listeners).retain(|tx| tx.send(event.clone()).is_ok());
        }
        last = snapshot;
    }
}

/// Add a notice's entity ids to `changed` (an overflow makes it unknown); its seq.
fn merge(changed: &mut Option<BTreeSet<String>>, notice: &Notice) -> u64 {
    match notice {
        Notice::Changes { seq, entities, .. } => {
            if let Some(set) = changed {
                set.extend(entities.iter().map(|e| e.id.clone()));
            }
            *seq
        }
        Notice::Overflow { seq } => {
            *changed = None;
            *seq
        }
    }
}

/// The views of `snapshot`: each kept from `previous` when nothing it depends on changed,
/// else computed on `snapshot`.
fn recompute(
    previous: Option<(&ViewState, &Snapshot)>,
    snapshot: &Snapshot,
    changed: Option<&BTreeSet<String>>,
    max_bindings: u64,
) -> ViewState {
    let analysis = &snapshot.analysis;
    let views = analysis.views();
    let mut state = ViewState { seq: snapshot.seq, ..ViewState::default() };
    // The first view to recompute carries the previous snapshot's query index over (its
    // attributes are rebuilt from the unchanged documents' values, not read again).
    let mut carried = false;
    for def in &views.list {
        // A duplicate id: the first definition, by document path, is the view.
        if state.defs.contains_key(&def.id) {
            continue;
        }
        let usable = analysis.view_path_usable(def).then(|| def.path.clone()).flatten();
        let kept = previous.and_then(|(before, last)| {
            let old = before.views.get(&def.id)?;
            let same_def = before.defs.get(&def.id).is_some_and(|d| same_definition(d, def));
            if !same_def || old.path != usable {
                return None;
            }
            let reads = before.reads.get(&def.id)?;
            let affected = match (changed, reads) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(ids), Some(reads)) => {
                    ids.iter().any(|id| touches(reads, &last.analysis, analysis, id))
                }
            };
            (!affected).then(|| old.clone())
        });
        let rendered = kept.unwrap_or_else(|| {
            if let (false, Some((_, last))) = (carried, previous) {
                analysis.query_index_from(&last.analysis);
                carried = true;
            }
            Arc::new(compute(analysis, def, snapshot.seq, max_bindings))
        });
        let reads = def.query.as_ref().and_then(|q| Query::from_json(q).ok()).map(|q| q.reads());
        if let Some(path) = &rendered.path {
            state.by_path.entry(path.clone()).or_insert_with(|| def.id.clone());
        }
        state.reads.insert(def.id.clone(), reads);
        state.defs.insert(def.id.clone(), def.clone());
        state.views.insert(def.id.clone(), rendered);
    }
    state
}

/// The same view, as far as its result goes (its place in a document aside).
fn same_definition(a: &ViewDef, b: &ViewDef) -> bool {
    a.path == b.path && a.format == b.format && a.query == b.query
}

/// Whether a change of entity `id` from `before` to `after` can change a query reading
/// `reads`.
fn touches(reads: &Reads, before: &Analysis, after: &Analysis, id: &str) -> bool {
    if let Some(types) = &reads.types {
        let typed = |a: &Analysis| a.type_of(id).is_some_and(|t| types.contains(t));
        if !typed(before) && !typed(after) {
            return false;
        }
    }
    let Some(attrs) = &reads.attrs else { return true };
    let (old, new) = (entity_value(before, id), entity_value(after, id));
    attrs.iter().any(|attr| field(old, attr) != field(new, attr))
}

fn field<'a>(entity: Option<&'a Value>, attr: &str) -> Option<&'a Value> {
    entity?.get(attr)
}

fn entity_value<'a>(analysis: &'a Analysis, id: &str) -> Option<&'a Value> {
    let loc = analysis.entity(id).first()?;
    let doc = analysis.document(&loc.path)?;
    doc.entity_node(loc.index).map(|(_, value)| value)
}

/// What changed from one state to the next.
fn event_of(before: &ViewState, after: &ViewState) -> ViewEvent {
    let mut ids = BTreeSet::new();
    let mut paths = BTreeSet::new();
    for (id, new) in &after.views {
        match before.views.get(id) {
            Some(old) if Arc::ptr_eq(old, new) => {}
            Some(old) => {
                ids.insert(id.clone());
                paths.extend(old.path.clone());
                paths.extend(new.path.clone());
            }
            None => {
                ids.insert(id.clone());
                paths.extend(new.path.clone());
            }
        }
    }
    for (id, old) in &before.views {
        if !after.views.contains_key(id) {
            ids.insert(id.clone());
            paths.extend(old.path.clone());
        }
    }
    let paths = paths
        .into_iter()
        .map(|path: String| {
            let kind = match (before.at_path(&path).is_some(), after.at_path(&path).is_some()) {
                (false, true) => ChangeKind::Created,
                (true, false) => ChangeKind::Deleted,
                _ => ChangeKind::Changed,
            };
            (path, kind)
        })
        .collect();
    ViewEvent { seq: after.seq, ids: ids.into_iter().collect(), paths }
}

//! Checkpoints: making the documents that commits wrote durable, then marking their
//! transactions applied in the log, so that the next open has less to redo.
//!
//! A commit syncs only its log record; its document writes sit in the page cache until a
//! checkpoint syncs them (files, then folders) and appends an `applied` marker through the
//! last seq. The marker is appended only after every sync succeeded, so it never claims more
//! than is on disk. A background thread checkpoints once the store has been idle for
//! [`IDLE`] or after [`EVERY`] commits; [`super::Store::close`] and dropping the store do too.

use crate::sync;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::error::{StoreError, StoreResult};
use super::fsio::FailPoint;
use super::{Inner, log};

/// How long the store must be free of commits before the background checkpoint runs.
pub const IDLE: Duration = Duration::from_millis(50);

/// How many commits may pile up, commits still coming, before a checkpoint runs anyway.
pub const EVERY: u64 = 128;

/// The id of the running boot, which changes when the machine restarts (Linux only).
pub fn boot_id() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(text.trim().to_owned()).filter(|id| !id.is_empty())
}

/// Commits not yet checkpointed, shared by the committing threads and the checkpoint thread.
pub struct Trigger {
    state: Mutex<State>,
    wake: Condvar,
    every: u64,
}

#[derive(Default)]
struct State {
    pending: u64,
    last: Option<Instant>,
    stop: bool,
}

impl Trigger {
    pub fn new(every: u64) -> Trigger {
        Trigger { state: Mutex::default(), wake: Condvar::new(), every: every.max(1) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        sync::lock(&self.state)
    }

    /// Count a commit. The thread is woken only when its wait changes: at the first pending
    /// commit (to start the idle clock) and when enough have piled up.
    pub fn committed(&self) {
        let mut state = self.state();
        state.pending += 1;
        state.last = Some(Instant::now());
        if state.pending == 1 || state.pending == self.every {
            self.wake.notify_one();
        }
    }

    /// A checkpoint took every pending commit.
    fn taken(&self) {
        self.state().pending = 0;
    }

    fn stop(&self) {
        self.state().stop = true;
        self.wake.notify_one();
    }

    /// Wait until a checkpoint is due; `false` once stopped.
    fn wait_due(&self, idle: Duration) -> bool {
        let mut state = self.state();
        loop {
            if state.stop {
                return false;
            }
            let quiet = state.last.map_or(Duration::ZERO, |last| last.elapsed());
            if state.pending > 0 && (state.pending >= self.every || quiet >= idle) {
                return true;
            }
            state = if state.pending == 0 {
                sync::wait(&self.wake, state)
            } else {
                sync::wait_timeout(&self.wake, state, idle - quiet).0
            };
        }
    }
}

/// The background checkpoint thread; dropping it stops the thread (without a last checkpoint:
/// the store's own drop does that).
pub struct Thread {
    trigger: Arc<Trigger>,
    handle: Option<JoinHandle<()>>,
}

impl Thread {
    /// Start checkpointing `inner` when `trigger` says so. The thread holds the store only
    /// while it checkpoints, never while it waits.
    pub(super) fn start(
        inner: Weak<Inner>,
        trigger: Arc<Trigger>,
        idle: Duration,
    ) -> StoreResult<Thread> {
        let waiting = trigger.clone();
        let handle = std::thread::Builder::new()
            .name("stardust-checkpoint".to_owned())
            .spawn(move || {
                while waiting.wait_due(idle) {
                    let Some(inner) = inner.upgrade() else { return };
                    if let Err(err) = inner.checkpoint() {
                        tracing::warn!("{err}");
                    }
                }
            })
            .map_err(|e| StoreError::io("cannot start the checkpoint thread", e))?;
        Ok(Thread { trigger, handle: Some(handle) })
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        self.trigger.stop();
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Inner {
    /// Sync the documents written since the last checkpoint and their folders, then append an
    /// `applied` marker through the seq they were taken at. Returns that seq.
    pub(super) fn checkpoint(&self) -> StoreResult<u64> {
        let _one = sync::lock(&self.checkpointing);
        let (paths, through) = {
            let mut writer = sync::lock(&self.writer);
            // Whatever happens below, the commits counted so far are dealt with: a failure is
            // retried by the next commit's trigger, not in a loop.
            self.trigger.taken();
            // A poisoned store's last record may be half-applied: it must stay unmarked so
            // the next open finishes it.
            if let Some(reason) = &writer.poisoned {
                return Err(StoreError::Poisoned {
                    store: self.root.clone(),
                    reason: reason.clone(),
                });
            }
            let through = self.snapshot().seq;
            if writer.dirty.is_empty() && writer.applied == through {
                return Ok(through);
            }
            (std::mem::take(&mut writer.dirty), through)
        };
        // Commits go on meanwhile. One that rewrites a document taken here is after `through`,
        // so the marker does not speak for it.
        let synced = self.disk.sync_documents(paths.iter().map(String::as_str));
        let mut writer = sync::lock(&self.writer);
        if let Err(e) = synced {
            writer.dirty.extend(paths);
            return Err(StoreError::io(
                format!(
                    "cannot checkpoint seq {through}: its documents could not be synced; they \
                     stay in the log and the next checkpoint or open writes them again"
                ),
                e,
            ));
        }
        if let Some(reason) = &writer.poisoned {
            return Err(StoreError::Poisoned { store: self.root.clone(), reason: reason.clone() });
        }
        // Not synced: a lost marker only means more to redo, and the next commit's sync of the
        // log carries it.
        let marker = log::encode_applied(through, self.boot.as_deref());
        let marked = self
            .disk
            .check(FailPoint::Mark, log::LOG_FILE)
            .and_then(|()| writer.log.append(&marker, false));
        match marked {
            Ok(_) => {
                writer.applied = through;
                // `[history] keep` (SPEC §26), under the same writer lock.
                self.compact_if_due(&mut writer, through);
                Ok(through)
            }
            Err(e) => {
                if writer.log.is_broken() {
                    writer.poisoned = Some(format!("the log could not be cut back: {e}"));
                }
                Err(StoreError::io(format!("cannot mark seq {through} as applied"), e))
            }
        }
    }
}

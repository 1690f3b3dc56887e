//! Freeing replaced snapshots off the commit path.
//!
//! A commit replaces the current snapshot; when no reader holds the old one, dropping it frees
//! the index shards and document-map nodes that the new one copied, which costs about as much
//! as a commit's sync. A thread does that instead. The queue is short: when it is full, the
//! commit frees its snapshot itself, so memory stays bounded however fast commits come.

use std::sync::Arc;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

use super::Snapshot;
use super::error::{StoreError, StoreResult};

/// Snapshots waiting to be freed, at most.
const BACKLOG: usize = 4;

pub struct Reaper {
    queue: Option<SyncSender<Arc<Snapshot>>>,
    thread: Option<JoinHandle<()>>,
}

impl Reaper {
    pub fn start() -> StoreResult<Reaper> {
        let (queue, freed) = mpsc::sync_channel::<Arc<Snapshot>>(BACKLOG);
        let thread = std::thread::Builder::new()
            .name("stardust-reaper".to_owned())
            .spawn(move || freed.into_iter().for_each(drop))
            .map_err(|e| StoreError::io("cannot start the snapshot reaper thread", e))?;
        Ok(Reaper { queue: Some(queue), thread: Some(thread) })
    }

    /// Let go of `old` without waiting for it to be freed (unless the queue is full).
    pub fn free(&self, old: Arc<Snapshot>) {
        if let Some(queue) = &self.queue
            && let Err(TrySendError::Full(old) | TrySendError::Disconnected(old)) =
                queue.try_send(old)
        {
            drop(old);
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has freed what is queued.
        self.queue.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

//! Freeing what a commit replaced off the commit path.
//!
//! A commit replaces the current snapshot; when no reader holds the old one, dropping it frees
//! the index shards and document-map nodes that the new one copied, which costs about as much
//! as a commit's sync. It also replaces documents' files, whose freeing the filesystem does
//! when the last link goes (`fsio::Buried`). A thread does both instead, and after each
//! hand-over runs the store's chore for the next commit (making spare files). The queue is short:
//! when it is full, the commit frees what it replaced itself, so memory and the kept files
//! stay bounded however fast commits come.

use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

use super::error::{StoreError, StoreResult};

/// Snapshots waiting to be freed, at most.
const BACKLOG: usize = 4;

/// Drops the values handed to it (a replaced snapshot and files) on its own thread.
pub struct Reaper<T: Send + 'static> {
    queue: Option<SyncSender<T>>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> Reaper<T> {
    /// Start the thread; it runs `after` after each value it frees (not at its start: a store
    /// opened only to be read never needs what the chore prepares).
    pub fn start(mut after: impl FnMut() + Send + 'static) -> StoreResult<Reaper<T>> {
        let (queue, freed) = mpsc::sync_channel::<T>(BACKLOG);
        let thread = std::thread::Builder::new()
            .name("stardust-reaper".to_owned())
            .spawn(move || {
                for old in freed {
                    drop(old);
                    after();
                }
            })
            .map_err(|e| StoreError::io("cannot start the snapshot reaper thread", e))?;
        Ok(Reaper { queue: Some(queue), thread: Some(thread) })
    }

    /// Let go of `old` without waiting for it to be freed (unless the queue is full).
    pub fn free(&self, old: T) {
        if let Some(queue) = &self.queue
            && let Err(TrySendError::Full(old) | TrySendError::Disconnected(old)) =
                queue.try_send(old)
        {
            drop(old);
        }
    }
}

impl<T: Send + 'static> Drop for Reaper<T> {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has freed what is queued.
        self.queue.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn everything_handed_over_is_freed_by_the_time_the_reaper_is_dropped() {
        let chores = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = chores.clone();
        let reaper = Reaper::start(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        let mut watched = Vec::new();
        for i in 0..100 {
            let value = Arc::new(vec![i; 1000]);
            watched.push(Arc::downgrade(&value));
            reaper.free(value);
        }
        // One still shared: handing it over only lets go of the reaper's part.
        let kept = Arc::new(vec![7u8]);
        reaper.free(kept.clone());
        drop(reaper);
        assert!(watched.iter().all(|w| w.upgrade().is_none()), "a value was leaked");
        assert_eq!(*kept, [7]);
        // Once per value freed on the thread (a value freed by the caller, when the queue was
        // full, runs no chore).
        let chores = chores.load(std::sync::atomic::Ordering::Relaxed);
        assert!((1..=101).contains(&chores), "{chores} chores");
    }
}

//! An in-memory team store database (the `Remote` seam of SPEC §22), shared by several
//! stores in one test as several machines share one PostgreSQL database. Faults on demand:
//! unreachable, wake-ups lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use stardust_core::store::remote::{Appended, Remote, Shipped};
use stardust_core::store::{StoreError, StoreResult, Transaction};

#[derive(Debug, Default)]
pub struct MemRemote {
    history: Mutex<Vec<Shipped>>,
    /// Bumped on every append (when wake-ups are not lost).
    wakes: (Mutex<u64>, Condvar),
    /// The database cannot be reached.
    pub down: AtomicBool,
    /// Appends wake no one (a NOTIFY lost, or a core killed before it).
    pub mute: AtomicBool,
    /// The thread holding the head (`Remote::reserve`), as PostgreSQL's advisory lock does
    /// for a session: every other thread's append waits until it releases. A store's commit
    /// reserves, catches up, appends and releases on its caller's thread.
    reserved: (Mutex<Option<std::thread::ThreadId>>, Condvar),
}

impl MemRemote {
    pub fn new() -> Arc<MemRemote> {
        Arc::new(MemRemote::default())
    }

    pub fn seqs(&self) -> Vec<u64> {
        self.history.lock().unwrap().iter().map(|s| s.transaction.seq).collect()
    }

    /// Wait while another thread holds the head; the holder slot, locked.
    fn wait_for_head(&self) -> std::sync::MutexGuard<'_, Option<std::thread::ThreadId>> {
        let (lock, condvar) = &self.reserved;
        let me = std::thread::current().id();
        let mut holder = lock.lock().unwrap();
        while holder.is_some_and(|h| h != me) {
            holder = condvar.wait(holder).unwrap();
        }
        holder
    }

    fn reachable(&self) -> StoreResult<()> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable { what: "cannot reach the test database".into() });
        }
        Ok(())
    }
}

impl Remote for MemRemote {
    fn head(&self) -> StoreResult<u64> {
        self.reachable()?;
        Ok(self.history.lock().unwrap().len() as u64)
    }

    fn since(&self, seq: u64, limit: usize) -> StoreResult<Vec<Shipped>> {
        self.reachable()?;
        let history = self.history.lock().unwrap();
        Ok(history.iter().skip(seq as usize).take(limit).cloned().collect())
    }

    fn append(&self, transaction: &Transaction, contents: &[&[u8]]) -> StoreResult<Appended> {
        self.reachable()?;
        drop(self.wait_for_head());
        let mut history = self.history.lock().unwrap();
        let head = history.len() as u64;
        if transaction.seq != head + 1 {
            return Ok(Appended::Behind { head });
        }
        history.push(Shipped {
            transaction: transaction.clone(),
            contents: contents.iter().map(|c| c.to_vec()).collect(),
        });
        drop(history);
        if !self.mute.load(Ordering::SeqCst) {
            *self.wakes.0.lock().unwrap() += 1;
            self.wakes.1.notify_all();
        }
        Ok(Appended::Committed)
    }

    fn reserve(&self) -> StoreResult<()> {
        self.reachable()?;
        *self.wait_for_head() = Some(std::thread::current().id());
        Ok(())
    }

    fn release(&self) {
        let (lock, condvar) = &self.reserved;
        let mut holder = lock.lock().unwrap();
        if *holder == Some(std::thread::current().id()) {
            *holder = None;
            condvar.notify_all();
        }
    }

    fn wait(&self, timeout: Duration) -> bool {
        let (lock, condvar) = &self.wakes;
        let guard = lock.lock().unwrap();
        let seen = *guard;
        let (now, _) = condvar.wait_timeout_while(guard, timeout, |n| *n == seen).unwrap();
        *now != seen
    }
}

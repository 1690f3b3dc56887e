//! Poison-tolerant locking: the one place that decides what a panicked lock holder means.
//!
//! Every lock in Stardust guards plain data that each holder leaves consistent between
//! statements (whole values are swapped in, counters are bumped in one step), so a panic in one
//! thread while it held a lock leaves nothing half-written. Serving on after such a panic is
//! better than failing every later request of every session with a poison error: the panic
//! itself is reported where it happened.

use std::sync::{
    Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use std::time::Duration;

/// Lock `mutex`, whether or not an earlier holder panicked.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Take `lock` for reading, whether or not an earlier writer panicked.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Take `lock` for writing, whether or not an earlier holder panicked.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// Wait on `condvar`, giving back `guard`'s lock meanwhile.
pub fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// Wait on `condvar` for at most `timeout`; the guard, and whether the time ran out.
pub fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> (MutexGuard<'a, T>, bool) {
    let (guard, result) =
        condvar.wait_timeout(guard, timeout).unwrap_or_else(PoisonError::into_inner);
    (guard, result.timed_out())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_lock_whose_holder_panicked_still_opens_with_its_data() {
        let mutex = Arc::new(Mutex::new(41));
        let rw = Arc::new(RwLock::new(vec![1]));
        let (m, r) = (mutex.clone(), rw.clone());
        let _ = std::thread::spawn(move || {
            *m.lock().unwrap() += 1;
            r.write().unwrap().push(2);
            let _held = (m.lock().unwrap(), r.write().unwrap());
            panic!("holder panics");
        })
        .join();
        assert!(mutex.is_poisoned() && rw.is_poisoned());
        assert_eq!(*lock(&mutex), 42);
        assert_eq!(*read(&rw), [1, 2]);
        write(&rw).push(3);
        assert_eq!(*read(&rw), [1, 2, 3]);
    }

    #[test]
    fn wait_timeout_says_when_the_time_ran_out() {
        let (mutex, condvar) = (Mutex::new(()), Condvar::new());
        let (_guard, timed_out) = wait_timeout(&condvar, lock(&mutex), Duration::from_millis(1));
        assert!(timed_out);
    }
}

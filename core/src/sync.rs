//! Poison-tolerant locking: the one place that decides what a panicked lock holder means;
//! and long waits, which a front may ask to be run its way ([`long_wait`], [`escaping`]).
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

/// How a thread runs a wait that may be long, when its caller asked ([`escaping`]).
pub type Escape = fn(&mut dyn FnMut());

thread_local! {
    static ESCAPE: std::cell::Cell<Option<Escape>> = const { std::cell::Cell::new(None) };
}

/// Run `wait`, a wait that may block for long (a language server's answer or start, another
/// request's speculative check): in place, or as the caller of this thread's current work
/// asked through [`escaping`]. A front that runs a call on a thread others depend on (an
/// async runtime's worker) moves the thread's other duties away first, this way, so that only
/// short work ever holds it. Every such wait in the core and the language-server client goes
/// through here.
pub fn long_wait<T>(wait: impl FnOnce() -> T) -> T {
    let Some(escape) = ESCAPE.with(|e| e.take()) else { return wait() };
    // Put back when done: once the escape returns, the thread may be the caller's again,
    // and a later wait of the same call must escape too. A wait inside it runs in place.
    let _restore = Restore(Some(escape));
    let (mut wait, mut out) = (Some(wait), None);
    escape(&mut || out = wait.take().map(|wait| wait()));
    out.expect("an escape runs the wait it is given")
}

/// Run `call` with `escape` as the way this thread runs [`long_wait`]s, then as before.
pub fn escaping<T>(escape: Escape, call: impl FnOnce() -> T) -> T {
    let _restore = Restore(ESCAPE.with(|e| e.replace(Some(escape))));
    call()
}

/// Sets the thread's escape back to what it holds when dropped (a panic included).
struct Restore(Option<Escape>);

impl Drop for Restore {
    fn drop(&mut self) {
        ESCAPE.with(|e| e.set(self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    thread_local! {
        static ESCAPED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn counting(wait: &mut dyn FnMut()) {
        ESCAPED.with(|n| n.set(n.get() + 1));
        wait();
    }

    #[test]
    fn a_long_wait_runs_in_place_unless_the_caller_asked_otherwise() {
        assert_eq!(long_wait(|| 1), 1);
        assert_eq!(ESCAPED.with(std::cell::Cell::get), 0);
        let got = escaping(counting, || {
            // Each wait of the call escapes, a wait inside an escape runs in place.
            let a = long_wait(|| long_wait(|| 2));
            let b = long_wait(|| 3);
            a + b
        });
        assert_eq!(got, 5);
        assert_eq!(ESCAPED.with(std::cell::Cell::get), 2);
        // Afterwards, in place again.
        assert_eq!(long_wait(|| 4), 4);
        assert_eq!(ESCAPED.with(std::cell::Cell::get), 2);
    }

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

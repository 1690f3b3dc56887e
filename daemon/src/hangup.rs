//! Noticing that a connection's peer has gone, even while its front has stopped reading.
//!
//! A front that holds back under backpressure (bounded queues, a full output) stops reading
//! its socket, so it would never see the end of input when the peer goes away: the session,
//! and with it the core, would live on. A watcher thread polls the socket for `POLLHUP`, which
//! Linux reports once the peer has closed its end completely, unread input or not (a peer
//! that only shuts down its writing half is still there and waiting for answers), and resolves
//! a [`Hangup`] the front selects on.

use stardust_core::sync::lock;
use std::future::Future;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// Resolves once the connection's peer has gone. Never resolves for a peer that stays.
#[derive(Clone, Debug, Default)]
pub struct Hangup(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    gone: bool,
    waiting: Vec<Waker>,
}

impl Hangup {
    /// Whether the peer has gone.
    pub fn gone(&self) -> bool {
        lock(&self.0).gone
    }

    fn fire(&self) {
        let waiting = {
            let mut state = lock(&self.0);
            state.gone = true;
            std::mem::take(&mut state.waiting)
        };
        waiting.into_iter().for_each(Waker::wake);
    }
}

impl Future for Hangup {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.0);
        if state.gone {
            return Poll::Ready(());
        }
        if !state.waiting.iter().any(|w| w.will_wake(cx.waker())) {
            state.waiting.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// The watcher of one connection; dropping it stops the watcher thread and waits for it, so
/// that its copy of the socket is closed by the time the connection is.
#[derive(Debug)]
pub struct Watcher {
    hangup: Hangup,
    /// Dropping our end wakes the thread's `poll` (its end becomes readable at end of file).
    stop: Option<UnixStream>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Watch `stream` (a copy of it) until the peer goes or the watcher is dropped.
    pub fn start(stream: &UnixStream) -> std::io::Result<Watcher> {
        let socket = stream.try_clone()?;
        let (stop, stopped) = UnixStream::pair()?;
        let hangup = Hangup::default();
        let fired = hangup.clone();
        let thread =
            std::thread::Builder::new().name("stardust-hangup".to_owned()).spawn(move || {
                // Also fires when the core itself shuts the socket down at the end of a session;
                // the front, which selects on it, says when it ended a session.
                if wait_for_hangup(&socket, &stopped) {
                    fired.fire();
                }
            })?;
        Ok(Watcher { hangup, stop: Some(stop), thread: Some(thread) })
    }

    pub fn hangup(&self) -> Hangup {
        self.hangup.clone()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Block until `socket`'s peer has closed its end (`true`) or `stopped` is closed (`false`).
fn wait_for_hangup(socket: &UnixStream, stopped: &UnixStream) -> bool {
    // No events asked for on the socket: POLLHUP and POLLERR are always reported, and asking
    // for POLLIN would wake us for every request the front has not read yet.
    let hangup = PollFlags::POLLHUP | PollFlags::POLLERR;
    loop {
        let mut fds = [
            PollFd::new(socket.as_fd(), PollFlags::empty()),
            PollFd::new(stopped.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                tracing::warn!("cannot watch a connection for its peer's hangup: {e}");
                return false;
            }
        }
        let revents = |fd: &PollFd<'_>| fd.revents().unwrap_or(PollFlags::empty());
        if !revents(&fds[1]).is_empty() {
            return false;
        }
        if revents(&fds[0]).intersects(hangup) {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;

    fn resolved(hangup: &Hangup) -> bool {
        let mut hangup = hangup.clone();
        let waker = Waker::noop();
        Pin::new(&mut hangup).poll(&mut Context::from_waker(waker)).is_ready()
    }

    fn eventually(done: impl Fn() -> bool) -> bool {
        for _ in 0..250 {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_peer_that_closes_with_unread_input_is_noticed() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let watcher = Watcher::start(&ours).unwrap();
        let hangup = watcher.hangup();
        theirs.write_all(&[b'x'; 100_000]).ok();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!resolved(&hangup), "unread input is not a hangup");
        drop(theirs);
        assert!(eventually(|| hangup.gone()), "the peer's close was not noticed");
        assert!(resolved(&hangup));
    }

    #[test]
    fn a_peer_that_only_stops_writing_is_still_there() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let watcher = Watcher::start(&ours).unwrap();
        theirs.shutdown(std::net::Shutdown::Write).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!watcher.hangup().gone(), "a half-closed peer still waits for answers");
        // Dropping the watcher ends its thread without a hangup.
        let hangup = watcher.hangup();
        drop(watcher);
        assert!(!hangup.gone());
    }
}

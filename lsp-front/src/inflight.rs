//! A bound on the requests in flight: the reader stops taking requests from the client while
//! [`MAX_IN_FLIGHT`] are unanswered.
//!
//! `async-lsp`'s `ConcurrencyLayer` waits for a free slot without polling the requests that
//! would free one (its pull request #30 is still open): a client with 1,024 requests in
//! flight wedged the main loop for good, reading and writing nothing more. The reader thread
//! takes a slot for each request it hands to the main loop, and the outermost layer gives it
//! back when the request's answer is ready or the request is dropped, so that limit is never
//! reached.

use stardust_core::sync;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use async_lsp::{AnyEvent, AnyNotification, AnyRequest, LspService};
use tower::{Layer, Service};

/// Requests read from the client and not yet answered, past which reading waits.
pub const MAX_IN_FLIGHT: usize = 256;

#[derive(Debug, Default)]
pub struct InFlight {
    count: Mutex<usize>,
    freed: Condvar,
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, usize> {
        sync::lock(&self.count)
    }

    /// Wait for a free slot and take it; `false` if `give_up` says to stop waiting first.
    pub fn acquire(&self, give_up: impl Fn() -> bool) -> bool {
        let mut count = self.lock();
        while *count >= MAX_IN_FLIGHT {
            if give_up() {
                return false;
            }
            count = sync::wait_timeout(&self.freed, count, Duration::from_millis(100)).0;
        }
        *count += 1;
        true
    }

    fn release(&self) {
        let mut count = self.lock();
        *count = count.saturating_sub(1);
        self.freed.notify_one();
    }

    #[cfg(test)]
    fn count(&self) -> usize {
        *self.lock()
    }
}

/// Gives a request's slot back when dropped.
struct Slot(Arc<InFlight>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// The outermost layer: every request the main loop takes passes it.
pub struct InFlightLayer(pub Arc<InFlight>);

impl<S> Layer<S> for InFlightLayer {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted { inner, in_flight: self.0.clone() }
    }
}

pub struct Counted<S> {
    inner: S,
    in_flight: Arc<InFlight>,
}

/// A request's future holding its slot.
pub struct Answer<F> {
    inner: Pin<Box<F>>,
    _slot: Slot,
}

impl<F: Future> Future for Answer<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<S: Service<AnyRequest>> Service<AnyRequest> for Counted<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = Answer<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: AnyRequest) -> Self::Future {
        Answer { inner: Box::pin(self.inner.call(req)), _slot: Slot(self.in_flight.clone()) }
    }
}

impl<S: LspService> LspService for Counted<S> {
    fn notify(&mut self, notif: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
        self.inner.notify(notif)
    }

    fn emit(&mut self, event: AnyEvent) -> ControlFlow<async_lsp::Result<()>> {
        self.inner.emit(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_waits_for_a_free_slot_and_gives_up_when_told() {
        let in_flight = Arc::new(InFlight::default());
        for _ in 0..MAX_IN_FLIGHT {
            assert!(in_flight.acquire(|| false));
        }
        assert!(!in_flight.acquire(|| true), "no slot is free");
        let waiter = {
            let in_flight = in_flight.clone();
            std::thread::spawn(move || in_flight.acquire(|| false))
        };
        drop(Slot(in_flight.clone()));
        assert!(waiter.join().unwrap(), "a released slot lets the reader go on");
        assert_eq!(in_flight.count(), MAX_IN_FLIGHT);
    }
}

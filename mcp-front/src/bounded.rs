//! Backpressure for a client that does not read its answers: the connection stops reading
//! requests while too many are answered-but-unwritten or still running.
//!
//! `rmcp` reads every request as it comes and runs it, queueing the answers for the output
//! without bound, so a client that sends and never reads grows the server (the shared core)
//! by every answer. Wrapping the two halves of the transport bounds that: the line transport
//! ([`crate::lines`]) takes a slot for each line it reads that will be answered (a request, or
//! input it refuses), the writer frees one for each message line the client's side has taken,
//! and past [`MAX_IN_FLIGHT`] the reader waits. A message the server sends on its own (a
//! resource update) also frees a slot, so the bound is approximate; but a write completes
//! only as the client drains its socket, so a client that stops reading still stops the
//! reader after a socket's worth of messages.

use stardust_core::sync::lock;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Requests read and not yet answered on the wire, past which reading waits.
pub const MAX_IN_FLIGHT: usize = 256;

#[derive(Default)]
struct State {
    in_flight: usize,
    reader: Option<Waker>,
}

/// The count of answers owed on one connection, shared by its reader and writer.
#[derive(Clone, Default)]
pub struct Slots(Arc<Mutex<State>>);

impl Slots {
    /// A line was read that will get one answer line.
    pub fn take(&self) {
        lock(&self.0).in_flight += 1;
    }

    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        lock(&self.0).in_flight
    }
}

/// The transport's two halves, sharing one count of answers owed.
pub fn pair<R, W>(read: R, write: W) -> (Reader<R>, Writer<W>, Slots) {
    let slots = Slots::default();
    (
        Reader { inner: read, slots: slots.clone() },
        Writer { inner: write, slots: slots.clone() },
        slots,
    )
}

pub struct Reader<R> {
    inner: R,
    slots: Slots,
}

pub struct Writer<W> {
    inner: W,
    slots: Slots,
}

impl<R: AsyncRead + Unpin> AsyncRead for Reader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        {
            let mut state = lock(&this.slots.0);
            if state.in_flight >= MAX_IN_FLIGHT {
                state.reader = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Writer<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &written {
            let messages = buf[..*n].iter().filter(|&&b| b == b'\n').count();
            if messages > 0 {
                let waker = {
                    let mut state = lock(&this.slots.0);
                    state.in_flight = state.in_flight.saturating_sub(messages);
                    state.reader.take()
                };
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

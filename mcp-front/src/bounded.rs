//! Backpressure for a client that does not read its answers: the connection stops reading
//! requests while too many are answered-but-unwritten or still running.
//!
//! `rmcp` reads every request as it comes and runs it, queueing the answers for the output
//! without bound, so a client that sends and never reads grows the server (the shared core)
//! by every answer. Wrapping the two halves of the transport bounds that: the reader counts
//! each request line it delivers, the writer counts each message line the client's side has
//! taken, and past [`MAX_IN_FLIGHT`] the reader waits. A message the server sends on its own
//! (a resource update) also frees a slot, so the bound is approximate; but a write completes
//! only as the client drains its socket, so a client that stops reading still stops the
//! reader after a socket's worth of messages.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Requests read and not yet answered on the wire, past which reading waits.
pub const MAX_IN_FLIGHT: usize = 256;

#[derive(Default)]
struct Slots {
    in_flight: usize,
    reader: Option<Waker>,
}

fn lock(slots: &Mutex<Slots>) -> std::sync::MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|e| e.into_inner())
}

/// The transport's two halves, sharing one count of requests in flight.
pub fn pair<R, W>(read: R, write: W) -> (Reader<R>, Writer<W>) {
    let slots = Arc::new(Mutex::new(Slots::default()));
    (Reader { inner: read, slots: slots.clone(), line: Vec::new() }, Writer { inner: write, slots })
}

pub struct Reader<R> {
    inner: R,
    slots: Arc<Mutex<Slots>>,
    /// The start of a request line not yet complete.
    line: Vec<u8>,
}

pub struct Writer<W> {
    inner: W,
    slots: Arc<Mutex<Slots>>,
}

/// Whether a complete line is a request (a `method` and an `id`): one that will be answered.
fn is_request(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .is_ok_and(|m| m.get("method").is_some() && m.get("id").is_some_and(|id| !id.is_null()))
}

impl<R: AsyncRead + Unpin> AsyncRead for Reader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        {
            let mut slots = lock(&this.slots);
            if slots.in_flight >= MAX_IN_FLIGHT {
                slots.reader = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        let before = buf.filled().len();
        let ready = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &ready {
            let mut requests = 0;
            for &byte in &buf.filled()[before..] {
                if byte == b'\n' {
                    requests += usize::from(is_request(&this.line));
                    this.line.clear();
                } else {
                    this.line.push(byte);
                }
            }
            lock(&this.slots).in_flight += requests;
        }
        ready
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
                    let mut slots = lock(&this.slots);
                    slots.in_flight = slots.in_flight.saturating_sub(messages);
                    slots.reader.take()
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn only_requests_take_a_slot() {
        assert!(is_request(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#));
        assert!(!is_request(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#));
        assert!(!is_request(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_request(b"not json"));
    }

    #[tokio::test]
    async fn reading_waits_while_answers_are_unwritten_and_resumes_as_they_go() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server);
        let (mut reader, mut writer) = pair(read, write);
        let request = |id: usize| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"m\"}}\n");
        let all: String = (0..MAX_IN_FLIGHT + 10).map(request).collect();
        client.write_all(all.as_bytes()).await.unwrap();
        // Read in small pieces (the bound is checked before each read) until the reader holds
        // back, with the rest still waiting in the pipe.
        let mut buffer = [0u8; 64];
        let mut got = 0;
        while let Ok(Ok(n)) =
            tokio::time::timeout(std::time::Duration::from_millis(50), reader.read(&mut buffer))
                .await
        {
            got += n;
        }
        assert!(got < all.len(), "the reader took every request with none answered");
        let in_flight = lock(&reader.slots).in_flight;
        assert!(in_flight >= MAX_IN_FLIGHT, "{in_flight}");
        let over = in_flight - MAX_IN_FLIGHT;
        // Answers written free slots: once one is free, reading goes on.
        for _ in 0..=over {
            writer.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n").await.unwrap();
        }
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), reader.read(&mut buffer))
            .await
            .expect("reading resumed")
            .unwrap();
        assert!(n > 0);
    }
}

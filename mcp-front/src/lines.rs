//! The newline-delimited JSON-RPC transport of stdio and the daemon socket, in place of
//! rmcp's: each inbound line is checked ([`crate::jsonrpc`]) before rmcp sees it, input that
//! is not a message is answered on the spot with the JSON-RPC error it calls for, and the
//! connection goes on reading after it.
//!
//! Invariants: every outbound message is exactly one line, written whole before the next one
//! starts (a partly written line is finished first, even when the future writing it was
//! cancelled), so error answers never split another message. Every line that will get exactly
//! one answer (a request, or refused input) takes one slot of the connection's bound
//! ([`crate::bounded`]) as it is read; each line written frees one.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::bounded::{self, Slots};
use crate::jsonrpc::{self, Inbound};

/// The longest inbound line taken (rmcp's own bound, and the HTTP side's 16 MiB for events);
/// past it the line is skipped to its end and answered with a parse error, without holding
/// it in memory.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The transport of one connection over `read` and `write`, bounded.
pub fn transport<R, W>(read: R, write: W) -> Lines<bounded::Reader<R>, bounded::Writer<W>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (read, write, slots) = bounded::pair(read, write);
    Lines::new(read, write, slots)
}

/// One connection: lines in from `R`, lines out to `W`.
pub struct Lines<R, W> {
    read: BufReader<R>,
    /// The start of a line not yet complete (kept when a read is cancelled mid-line).
    line: Vec<u8>,
    /// Skipping the rest of a line longer than [`MAX_LINE`].
    skipping: bool,
    /// An error answer decided and not yet handed to the writer.
    answer: Option<Vec<u8>>,
    /// A write this side started may not have finished (its future was cancelled).
    owed: bool,
    out: Arc<Mutex<Out<W>>>,
    slots: Slots,
}

struct Out<W> {
    /// `None` once closed.
    write: Option<W>,
    /// Bytes of whole lines not yet written, oldest first.
    pending: Vec<u8>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Lines<R, W> {
    pub fn new(read: R, write: W, slots: Slots) -> Lines<R, W> {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: false,
            answer: None,
            owed: false,
            out: Arc::new(Mutex::new(Out { write: Some(write), pending: Vec::new() })),
            slots,
        }
    }

    /// The next complete line in `self.line` (without its `\n`), `Ok(false)` for one that was
    /// too long (dropped), or `None` at the end of input. Cancel-safe: bytes are consumed
    /// from the buffer only as they are copied into `self.line`, with no await in between.
    async fn next_line(&mut self) -> io::Result<Option<bool>> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                // A last line without its newline is incomplete: nothing to deliver.
                return Ok(None);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let whole = newline.is_some();
            if self.skipping {
                self.read.consume(take);
                if whole {
                    self.skipping = false;
                    return Ok(Some(false));
                }
                continue;
            }
            if self.line.len() + take > MAX_LINE + 1 {
                self.line.clear();
                self.read.consume(take);
                if whole {
                    return Ok(Some(false));
                }
                self.skipping = true;
                continue;
            }
            self.line.extend_from_slice(&available[..take]);
            self.read.consume(take);
            if whole {
                self.line.pop();
                return Ok(Some(true));
            }
        }
    }
}

/// Write every pending byte and flush. Cancel-safe: what was written leaves `pending` as
/// soon as the write returns, and what was not stays for the next caller.
async fn drain<W: AsyncWrite + Unpin>(out: &mut Out<W>) -> io::Result<()> {
    let Some(write) = out.write.as_mut() else {
        return Err(io::Error::new(io::ErrorKind::NotConnected, "the transport is closed"));
    };
    while !out.pending.is_empty() {
        let n = write.write(&out.pending).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        out.pending.drain(..n);
    }
    write.flush().await
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut out = out.lock().await;
            out.pending.extend_from_slice(&line);
            drain(&mut out).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.answer.is_some() || self.owed {
                let mut out = self.out.lock().await;
                if let Some(answer) = self.answer.take() {
                    out.pending.extend_from_slice(&answer);
                    self.owed = true;
                }
                if let Err(err) = drain(&mut out).await {
                    tracing::debug!("cannot answer the client: {err}");
                    return None;
                }
                self.owed = false;
            }
            let whole = match self.next_line().await {
                Ok(Some(whole)) => whole,
                Ok(None) => return None,
                Err(err) => {
                    tracing::debug!("cannot read from the client: {err}");
                    return None;
                }
            };
            let checked = if whole {
                jsonrpc::inbound(&self.line)
            } else {
                tracing::warn!(
                    "an inbound line is longer than {MAX_LINE} bytes: answered, not read"
                );
                Inbound::Refused(jsonrpc::too_long(MAX_LINE))
            };
            self.line.clear();
            match checked {
                Inbound::Blank => {}
                Inbound::Message { message, answered } => {
                    if answered {
                        self.slots.take();
                    }
                    return Some(*message);
                }
                Inbound::Dropped(why) => tracing::debug!("{why}"),
                Inbound::Refused(answer) => {
                    tracing::debug!("answering unusable input: {answer}");
                    self.slots.take();
                    let mut line = answer.to_string().into_bytes();
                    line.push(b'\n');
                    self.answer = Some(line);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // As rmcp's own transport does: the writer goes, and with it what a client that
        // stopped reading was never going to take.
        self.out.lock().await.write = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounded::MAX_IN_FLIGHT;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

    /// A transport over an in-memory pipe, and the client's end of it.
    fn connected() -> (impl Transport<RoleServer>, tokio::io::DuplexStream) {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server);
        (transport(read, write), client)
    }

    #[tokio::test]
    async fn unusable_lines_are_answered_and_reading_goes_on() {
        let (mut server, client) = connected();
        let (read, mut write) = tokio::io::split(client);
        let mut answers = tokio::io::BufReader::new(read).lines();
        let lines = "not json\n\n[]\n{\"jsonrpc\":\"2.0\",\"id\":7}\n\
                     {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        write.write_all(lines.as_bytes()).await.unwrap();
        let message = tokio::time::timeout(WAIT, server.receive()).await.unwrap().unwrap();
        assert!(matches!(message, rmcp::model::JsonRpcMessage::Request(_)), "{message:?}");
        let mut next = async || {
            let line = tokio::time::timeout(WAIT, answers.next_line()).await.unwrap();
            serde_json::from_str::<Value>(&line.unwrap().unwrap()).unwrap()
        };
        let (first, second, third) = (next().await, next().await, next().await);
        assert_eq!((&first["id"], &first["error"]["code"]), (&Value::Null, &json!(-32700)));
        assert_eq!((&second["id"], &second["error"]["code"]), (&Value::Null, &json!(-32600)));
        assert_eq!((&third["id"], &third["error"]["code"]), (&json!(7), &json!(-32600)));
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_answered_without_being_kept() {
        let (mut server, client) = connected();
        let (read, mut write) = tokio::io::split(client);
        let mut answers = tokio::io::BufReader::new(read).lines();
        let writing = tokio::spawn(async move {
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..=MAX_LINE >> 20 {
                write.write_all(&chunk).await.unwrap();
            }
            write
                .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
                .await
                .unwrap();
            write
        });
        let message = tokio::time::timeout(WAIT, server.receive()).await.unwrap().unwrap();
        assert!(matches!(message, rmcp::model::JsonRpcMessage::Request(_)), "{message:?}");
        let line = tokio::time::timeout(WAIT, answers.next_line()).await.unwrap().unwrap().unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&Value::Null, &json!(-32700)));
        drop(writing.await.unwrap());
    }

    #[tokio::test]
    async fn reading_waits_while_answers_are_unwritten_and_resumes_as_they_go() {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server);
        let (read, write, slots) = bounded::pair(read, write);
        let mut server = Lines::new(read, write, slots.clone());
        let (_answers, mut client) = tokio::io::split(client);
        let request =
            |id: usize| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        // More than the bound plus what one buffered read holds.
        let total = MAX_IN_FLIGHT * 4;
        let all: String = (0..total).map(request).collect();
        client.write_all(all.as_bytes()).await.unwrap();
        // Take requests until the transport holds back, with the rest still in the pipe.
        let mut got = 0;
        while let Ok(Some(_)) =
            tokio::time::timeout(std::time::Duration::from_millis(50), server.receive()).await
        {
            got += 1;
        }
        assert!(got < total, "the transport took every request with none answered");
        let in_flight = slots.in_flight();
        assert!(in_flight >= MAX_IN_FLIGHT, "{in_flight}");
        let over = in_flight - MAX_IN_FLIGHT;
        // Answers written free slots: once one is free, reading goes on.
        for _ in 0..=over {
            let answer: TxJsonRpcMessage<RoleServer> =
                serde_json::from_value(json!({"jsonrpc": "2.0", "id": 0, "result": {}})).unwrap();
            server.send(answer).await.unwrap();
        }
        let message = tokio::time::timeout(WAIT, server.receive()).await.expect("reading resumed");
        assert!(message.is_some());
    }
}

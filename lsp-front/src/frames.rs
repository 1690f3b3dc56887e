//! The stdio transport: Content-Length frames in, checked before the main loop sees them.
//!
//! `async-lsp`'s main loop stops on the first frame it cannot decode. A client bug must not
//! take the server down, so a reader thread re-frames stdin and drops (with a warning on
//! stderr) every frame whose headers or body are not a JSON-RPC message; only well-formed
//! frames reach the loop. Output goes through a writer thread so that a slow client never
//! blocks the runtime's workers.
//!
//! Both directions are bounded, so a client that stops reading its input costs bounded memory:
//! past `MAX_QUEUED_OUTPUT` bytes not yet written, writing waits (the main loop then stops
//! reading requests), and the reader thread holds at most `MAX_QUEUED_FRAMES` frames before it
//! stops reading stdin (the client's writes then block, as with any pipe).

use stardust_core::sync::lock;
use std::io::{BufRead, BufReader, Read, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures::channel::mpsc;
use futures::{AsyncBufRead, AsyncWrite, SinkExt, TryStreamExt};
use serde_json::Value;

use crate::inflight::InFlight;

/// Frames larger than this are refused: no editor sends a 256 MiB message.
const MAX_FRAME: usize = 256 << 20;

/// Checked frames waiting for the main loop.
const MAX_QUEUED_FRAMES: usize = 64;

/// Bytes handed to the writer thread and not yet written to the client.
const MAX_QUEUED_OUTPUT: usize = 16 << 20;

/// Start a thread that reads frames from `input` and returns the checked byte stream.
/// Each request takes a slot of `in_flight` before the main loop sees it.
pub fn checked_input(
    input: impl Read + Send + 'static,
    in_flight: Arc<InFlight>,
) -> impl AsyncBufRead + Send + Unpin {
    let (mut tx, rx) = mpsc::channel::<std::io::Result<Vec<u8>>>(MAX_QUEUED_FRAMES);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(input);
        while let Some(body) = next_frame(&mut reader) {
            match check_message(&body) {
                Ok(request) => {
                    if request && !in_flight.acquire(|| tx.is_closed()) {
                        break;
                    }
                    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
                    frame.extend_from_slice(&body);
                    // Waits while the main loop is behind: this thread then stops reading.
                    if futures::executor::block_on(tx.send(Ok(frame))).is_err() {
                        break;
                    }
                }
                Err(why) => tracing::warn!("ignoring a malformed message: {why}"),
            }
        }
    });
    rx.into_async_read()
}

/// The body of the next frame, skipping frames with unusable headers; `None` at end of input.
fn next_frame(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    loop {
        let mut length: Option<usize> = None;
        let mut bad_header = false;
        let mut saw_header = false;
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if saw_header {
                    break;
                }
                continue;
            }
            saw_header = true;
            match line.split_once(':') {
                Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                    match value.trim().parse::<usize>() {
                        Ok(n) if n <= MAX_FRAME => length = Some(n),
                        _ => bad_header = true,
                    }
                }
                Some(_) => {}
                None => bad_header = true,
            }
        }
        let Some(length) = length.filter(|_| !bad_header) else {
            tracing::warn!("ignoring a frame without a usable Content-Length header");
            continue;
        };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return None;
        }
        return Some(body);
    }
}

/// The members of a JSON-RPC message that decide what it is. `params` and `result` are
/// skipped, not built: a whole-text `didChange` of a 2 MB document is checked without
/// allocating its text.
#[derive(serde::Deserialize)]
struct Shape {
    #[serde(default)]
    jsonrpc: Present<Value>,
    #[serde(default)]
    method: Present<Value>,
    #[serde(default)]
    id: Present<Value>,
    #[serde(default)]
    result: Present<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Present<Value>,
}

/// A member that is there, `null` included (an `Option` would take `null` for absent).
struct Present<T>(Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Present(None)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Present<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|t| Present(Some(t)))
    }
}

/// Whether `body` is a message the main loop can decode: a request or notification (a string
/// `method`), or a response (a number or string `id` with a `result` or an `error`).
/// Whether `body` is a usable JSON-RPC message, and a request (one the server answers).
fn check_message(body: &[u8]) -> Result<bool, String> {
    // A struct also deserializes from an array: only an object is a message.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err("not a JSON object".to_owned());
    }
    let shape: Shape = match serde_json::from_slice(body) {
        Ok(shape) => shape,
        Err(e) if e.is_data() => return Err(format!("not a JSON-RPC object: {e}")),
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    if shape.jsonrpc.0.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err("'jsonrpc' is not \"2.0\"".to_owned());
    }
    let id = shape.id.0;
    if let Some(method) = shape.method.0 {
        if !method.is_string() {
            return Err("'method' is not a string".to_owned());
        }
        if let Some(id) = &id
            && !(id.is_string() || id.is_i64())
        {
            return Err("a request's 'id' must be an integer or a string".to_owned());
        }
        return Ok(id.is_some());
    }
    let id_ok = id.is_some_and(|id| id.is_string() || id.is_i64());
    let error = shape.error.0;
    let error_ok = error.as_ref().is_none_or(|e| {
        e.get("code").is_some_and(Value::is_i64) && e.get("message").is_some_and(Value::is_string)
    });
    if id_ok && error_ok && (shape.result.0.is_some() || error.is_some()) {
        Ok(false)
    } else {
        Err("neither a request, a notification nor a response".to_owned())
    }
}

/// An `AsyncWrite` that hands every write to a thread writing `output`, with at most
/// `MAX_QUEUED_OUTPUT` bytes in flight.
pub struct ThreadWriter {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
    budget: Arc<Mutex<Budget>>,
}

/// The bytes queued for the writer thread, and who waits for room.
#[derive(Default)]
struct Budget {
    queued: usize,
    waiting: Option<Waker>,
    /// The output failed (the client went away): every later write fails at once instead of
    /// waiting for room that will never come.
    closed: bool,
}

impl ThreadWriter {
    pub fn new(mut output: impl Write + Send + 'static) -> ThreadWriter {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let budget = Arc::new(Mutex::new(Budget::default()));
        let room = budget.clone();
        std::thread::spawn(move || {
            while let Ok(bytes) = rx.recv() {
                let mut written = bytes.len();
                let mut result = output.write_all(&bytes);
                // Flush only when nothing else is queued, so bursts are written together.
                if result.is_ok() {
                    for more in rx.try_iter() {
                        written += more.len();
                        result = output.write_all(&more);
                        if result.is_err() {
                            break;
                        }
                    }
                }
                let result = result.and_then(|()| output.flush());
                let waiting = {
                    let mut budget = lock(&room);
                    budget.queued = budget.queued.saturating_sub(written);
                    budget.closed = result.is_err();
                    budget.waiting.take()
                };
                if let Some(waker) = waiting {
                    waker.wake();
                }
                if let Err(err) = result {
                    tracing::warn!("cannot write to the client: {err}");
                    break;
                }
            }
        });
        ThreadWriter { tx, budget }
    }
}

impl AsyncWrite for ThreadWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        {
            let mut budget = lock(&self.budget);
            if budget.closed {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the client's output is closed",
                )));
            }
            if budget.queued >= MAX_QUEUED_OUTPUT {
                budget.waiting = Some(cx.waker().clone());
                return Poll::Pending;
            }
            budget.queued += buf.len();
        }
        match self.tx.send(buf.to_vec()) {
            Ok(()) => Poll::Ready(Ok(buf.len())),
            Err(_) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the client's output is closed",
            ))),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_with_bad_headers_are_skipped() {
        let input =
            b"Content-Length: x\r\n\r\nContent-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\nnul";
        let mut reader = BufReader::new(&input[..]);
        assert_eq!(next_frame(&mut reader).as_deref(), Some(&b"{}"[..]));
        assert_eq!(next_frame(&mut reader).as_deref(), Some(&b"nul"[..]));
        assert_eq!(next_frame(&mut reader), None);
    }

    #[test]
    fn only_json_rpc_messages_pass() {
        // Only requests are counted as in flight.
        assert_eq!(check_message(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#), Ok(true));
        assert_eq!(check_message(br#"{"jsonrpc":"2.0","method":"x","params":[]}"#), Ok(false));
        assert_eq!(check_message(br#"{"jsonrpc":"2.0","id":"a","result":null}"#), Ok(false));
        assert!(
            check_message(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#).is_ok()
        );
        assert!(check_message(br#"{"jsonrpc":"2.0","id":1,"method":"x""#).is_err());
        assert!(check_message(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#).is_err());
        assert!(check_message(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).is_err());
        assert!(check_message(br#"{"jsonrpc":"2.0","id":1}"#).is_err());
        assert!(check_message(br#"[1]"#).is_err());
        assert!(check_message(br#"["2.0", "x"]"#).is_err(), "an array is no message");
        assert!(check_message(br#"{"jsonrpc":"2.0","method":null,"id":1,"result":1}"#).is_err());
        assert_eq!(
            check_message(br#" {"params":{"text":"a\"b"},"jsonrpc":"2.0","method":"x"}"#),
            Ok(false)
        );
    }
}

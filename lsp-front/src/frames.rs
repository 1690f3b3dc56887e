//! The stdio transport: Content-Length frames in, checked and decoded before the main loop
//! sees them.
//!
//! `async-lsp`'s main loop stops on the first frame it cannot decode. A client bug must not
//! take the server down, so a reader thread re-frames stdin and drops (with a warning on
//! stderr) every frame whose headers or body are not a JSON-RPC message; only well-formed
//! frames reach the loop. Output goes through a writer thread so that a slow client never
//! blocks the runtime's workers.
//!
//! Each message is decoded once, on the reader thread: the check parses the body, `params`
//! included, and the `params` of a request or notification wait in [`Decoded`] while the main
//! loop is handed a stand-in of a few bytes (method [`DECODED`], its ticket as `params`), which
//! the outermost layer ([`DecodedLayer`]) turns back into the message. So a whole-text
//! `didChange` of a 2 MB document is unescaped once and never copied between the threads,
//! where the main loop would otherwise decode it again (twice over: `async-lsp` buffers a
//! message whole to find which kind it is). Stand-ins travel in the same queue as the other
//! frames, so the order of messages is kept.
//!
//! Both directions are bounded, so a client that stops reading its input costs bounded memory:
//! past `MAX_QUEUED_OUTPUT` bytes not yet written, writing waits (the main loop then stops
//! reading requests), and the reader thread holds at most `MAX_QUEUED_FRAMES` frames (and so
//! as many decoded `params`) before it stops reading stdin (the client's writes then block,
//! as with any pipe).

use stardust_core::sync::lock;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use async_lsp::{AnyEvent, AnyNotification, AnyRequest, LspService};
use futures::channel::mpsc;
use futures::{AsyncBufRead, AsyncWrite, SinkExt, TryStreamExt};
use serde_json::Value;

use crate::inflight::InFlight;

/// Frames larger than this are refused: no editor sends a 256 MiB message.
const MAX_FRAME: usize = 256 << 20;

/// The reader thread keeps the memory of a frame body up to this size for the next frame: a
/// whole-text change of a large document then reads into memory the process already has,
/// instead of memory new to it (each new page is a fault, costly on a loaded VM).
const KEPT_BODY: usize = 32 << 20;

/// Checked frames waiting for the main loop.
const MAX_QUEUED_FRAMES: usize = 64;

/// Bytes handed to the writer thread and not yet written to the client.
const MAX_QUEUED_OUTPUT: usize = 16 << 20;

/// The method of a stand-in for a message decoded on the reader thread. A client's own message
/// with this method is dropped: only the reader makes stand-ins.
const DECODED: &str = "$/stardust/decoded";

/// Start a thread that reads frames from `input` and returns the checked byte stream; the
/// `params` it decoded wait in `decoded` for the main loop's [`DecodedLayer`]. Each request
/// takes a slot of `in_flight` before the main loop sees it.
pub fn checked_input(
    input: impl Read + Send + 'static,
    in_flight: Arc<InFlight>,
    decoded: Arc<Decoded>,
) -> impl AsyncBufRead + Send + Unpin {
    let (mut tx, rx) = mpsc::channel::<std::io::Result<Vec<u8>>>(MAX_QUEUED_FRAMES);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(input);
        let mut body = Vec::new();
        while next_frame(&mut reader, &mut body) {
            let frame = match check_message(&body) {
                Ok(message) => {
                    if message.is_request() && !in_flight.acquire(|| tx.is_closed()) {
                        break;
                    }
                    match message {
                        Checked::Call { method, id, params: Some(params) } => {
                            let ticket = decoded.put(method, params);
                            stand_in(ticket, id)
                        }
                        Checked::Call { params: None, .. } | Checked::Response => framed(&body),
                    }
                }
                Err(why) => {
                    tracing::warn!("ignoring a malformed message: {why}");
                    continue;
                }
            };
            // Waits while the main loop is behind: this thread then stops reading.
            if futures::executor::block_on(tx.send(Ok(frame))).is_err() {
                break;
            }
        }
    });
    rx.into_async_read()
}

/// `body` with its header.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body);
    frame
}

/// The frame standing for the message decoded under `ticket`: its id (a request's) kept, so
/// that `async-lsp` answers it, and its method and `params` to be put back by [`DecodedLayer`].
fn stand_in(ticket: u64, id: Option<Value>) -> Vec<u8> {
    let mut message = serde_json::json!({"jsonrpc": "2.0", "method": DECODED, "params": ticket});
    if let Some(id) = id {
        message["id"] = id;
    }
    framed(&serde_json::to_vec(&message).expect("a JSON value serializes"))
}

/// The `params` of requests and notifications decoded on the reader thread, in the order read,
/// until the main loop takes each back by its ticket.
#[derive(Default)]
pub struct Decoded {
    inner: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    next: u64,
    /// `(ticket, method, params)`, tickets increasing.
    queue: VecDeque<(u64, String, Value)>,
}

impl Decoded {
    /// Keep a message's method and `params`; answers its ticket.
    fn put(&self, method: String, params: Value) -> u64 {
        let mut waiting = lock(&self.inner);
        let ticket = waiting.next;
        waiting.next += 1;
        waiting.queue.push_back((ticket, method, params));
        ticket
    }

    /// The method and `params` kept under `ticket`. Stand-ins arrive in ticket order, so older
    /// entries are those of stand-ins that never will (none should): they are dropped, which
    /// keeps what waits bounded by the frames in the queue.
    fn take(&self, ticket: u64) -> Option<(String, Value)> {
        let mut waiting = lock(&self.inner);
        while let Some((first, ..)) = waiting.queue.front() {
            if *first > ticket {
                break;
            }
            let (first, method, params) = waiting.queue.pop_front().expect("not empty");
            if first == ticket {
                return Some((method, params));
            }
            tracing::warn!("dropping the decoded {method}, whose stand-in never arrived");
        }
        None
    }

    /// Turn a stand-in's method and `params` back into the message's; `false` when `params`
    /// names no waiting message (the method is left as the stand-in's, which nothing handles).
    fn restore(&self, method: &mut String, params: &mut Value) -> bool {
        let Some((real, decoded)) = params.as_u64().and_then(|ticket| self.take(ticket)) else {
            tracing::error!("a stand-in for a decoded message names none: {params}");
            return false;
        };
        *method = real;
        *params = decoded;
        true
    }
}

/// The outermost layer: every stand-in becomes the message it stands for before any other
/// layer sees it.
pub struct DecodedLayer(pub Arc<Decoded>);

impl<S> tower::Layer<S> for DecodedLayer {
    type Service = Restored<S>;

    fn layer(&self, inner: S) -> Restored<S> {
        Restored { inner, decoded: self.0.clone() }
    }
}

pub struct Restored<S> {
    inner: S,
    decoded: Arc<Decoded>,
}

impl<S: tower::Service<AnyRequest>> tower::Service<AnyRequest> for Restored<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: AnyRequest) -> S::Future {
        if req.method == DECODED {
            // Unrestored, the router answers that no such method exists.
            self.decoded.restore(&mut req.method, &mut req.params);
        }
        self.inner.call(req)
    }
}

impl<S: LspService> LspService for Restored<S> {
    fn notify(&mut self, mut notif: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
        if notif.method == DECODED && !self.decoded.restore(&mut notif.method, &mut notif.params) {
            return ControlFlow::Continue(());
        }
        self.inner.notify(notif)
    }

    fn emit(&mut self, event: AnyEvent) -> ControlFlow<async_lsp::Result<()>> {
        self.inner.emit(event)
    }
}

/// Read the body of the next frame into `body` (its memory reused), skipping frames with
/// unusable headers; `false` at end of input.
fn next_frame(reader: &mut impl BufRead, body: &mut Vec<u8>) -> bool {
    loop {
        let mut length: Option<usize> = None;
        let mut bad_header = false;
        let mut saw_header = false;
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return false,
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
        if body.capacity() > KEPT_BODY.max(length) {
            *body = Vec::new();
        }
        body.clear();
        body.resize(length, 0);
        return reader.read_exact(body).is_ok();
    }
}

/// The members of a JSON-RPC message. `params` is decoded here, once, for the main loop;
/// `result` is skipped, not built (a response's is for a request of ours, which only checks
/// it is there).
#[derive(serde::Deserialize)]
struct Shape {
    #[serde(default)]
    jsonrpc: Present<Value>,
    #[serde(default)]
    method: Present<Value>,
    #[serde(default)]
    id: Present<Value>,
    #[serde(default)]
    params: Present<Value>,
    #[serde(default)]
    result: Present<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Present<Value>,
}

/// A checked message.
#[derive(Debug, PartialEq)]
enum Checked {
    /// A request (with an `id`) or a notification, and its decoded `params`.
    Call { method: String, id: Option<Value>, params: Option<Value> },
    /// A response to one of our requests, passed on as it came.
    Response,
}

impl Checked {
    /// Whether it is a request: one the server answers.
    fn is_request(&self) -> bool {
        matches!(self, Checked::Call { id: Some(_), .. })
    }
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

/// `body` as a message the main loop can take: a request or notification (a string
/// `method`, an integer or string `id` if any), or a response (an integer or string `id` with
/// a `result` or an `error`); else why not.
fn check_message(body: &[u8]) -> Result<Checked, String> {
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
    // `async-lsp` takes an id that is a string or a 32-bit integer, and ends the session on
    // any other.
    let id_ok =
        |id: &Value| id.is_string() || id.as_i64().is_some_and(|n| i32::try_from(n).is_ok());
    if let Some(method) = shape.method.0 {
        let Value::String(method) = method else {
            return Err("'method' is not a string".to_owned());
        };
        if method == DECODED {
            return Err(format!("'{DECODED}' is the server's own method"));
        }
        if let Some(id) = &id
            && !id_ok(id)
        {
            return Err("a request's 'id' must be a 32-bit integer or a string".to_owned());
        }
        return Ok(Checked::Call { method, id, params: shape.params.0 });
    }
    let error = shape.error.0;
    let error_ok = error.as_ref().is_none_or(|e| {
        e.get("code").is_some_and(Value::is_i64) && e.get("message").is_some_and(Value::is_string)
    });
    if id.as_ref().is_some_and(id_ok) && error_ok && (shape.result.0.is_some() || error.is_some()) {
        Ok(Checked::Response)
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
        let mut body = Vec::new();
        assert!(next_frame(&mut reader, &mut body));
        assert_eq!(body, b"{}");
        assert!(next_frame(&mut reader, &mut body));
        assert_eq!(body, b"nul");
        assert!(!next_frame(&mut reader, &mut body));
    }

    /// The next frame is read into the memory of the last one, up to `KEPT_BODY`.
    #[test]
    fn frames_are_read_into_the_memory_of_the_last_one() {
        let big = format!("\"{}\"", "a".repeat(1 << 20));
        let huge = format!("\"{}\"", "a".repeat(KEPT_BODY));
        let input = [big.as_str(), "{}", huge.as_str(), "{}"]
            .map(|b| format!("Content-Length: {}\r\n\r\n{b}", b.len()))
            .concat();
        let mut reader = BufReader::new(input.as_bytes());
        let mut body = Vec::new();
        assert!(next_frame(&mut reader, &mut body));
        let memory = body.as_ptr();
        assert!(next_frame(&mut reader, &mut body));
        assert_eq!(body, b"{}");
        assert_eq!(body.as_ptr(), memory, "the same memory");
        assert!(body.capacity() >= big.len());
        assert!(next_frame(&mut reader, &mut body));
        assert_eq!(body.len(), huge.len());
        assert!(next_frame(&mut reader, &mut body));
        assert_eq!(body, b"{}");
        assert!(body.capacity() < KEPT_BODY, "a body larger than KEPT_BODY is not kept");
    }

    /// What `check_message` makes of `body`: whether it is a request, or why it is refused.
    fn kind(body: &[u8]) -> Result<bool, String> {
        check_message(body).map(|m| m.is_request())
    }

    #[test]
    fn only_json_rpc_messages_pass() {
        // Only requests are counted as in flight.
        assert_eq!(kind(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#), Ok(true));
        assert_eq!(kind(br#"{"jsonrpc":"2.0","method":"x","params":[]}"#), Ok(false));
        assert_eq!(kind(br#"{"jsonrpc":"2.0","id":"a","result":null}"#), Ok(false));
        assert_eq!(
            check_message(br#"{"jsonrpc":"2.0","id":"a","result":null}"#),
            Ok(Checked::Response)
        );
        assert!(kind(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#).is_ok());
        assert!(kind(br#"{"jsonrpc":"2.0","id":1,"method":"x""#).is_err());
        assert!(kind(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#).is_err());
        assert!(kind(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).is_err());
        // `async-lsp` would end the session on an id past 32 bits.
        assert!(kind(br#"{"jsonrpc":"2.0","id":3000000000,"method":"x"}"#).is_err());
        assert!(kind(br#"{"jsonrpc":"2.0","id":1}"#).is_err());
        assert!(kind(br#"[1]"#).is_err());
        assert!(kind(br#"["2.0", "x"]"#).is_err(), "an array is no message");
        assert!(kind(br#"{"jsonrpc":"2.0","method":null,"id":1,"result":1}"#).is_err());
        assert!(
            kind(br#"{"jsonrpc":"2.0","method":"$/stardust/decoded","params":0}"#).is_err(),
            "only the reader makes stand-ins"
        );
        assert_eq!(kind(br#" {"params":{"text":"a\"b"},"jsonrpc":"2.0","method":"x"}"#), Ok(false));
    }

    #[test]
    fn params_are_decoded_with_their_escapes() {
        // Escaped quotes and backslashes, a surrogate pair, CRLF, and `params` before `method`.
        let body = br#"{"params":{"contentChanges":[{"text":"{\"a\": \"\\\ud83d\ude00\u00e9\"}\r\n"}]},"jsonrpc":"2.0","method":"textDocument/didChange"}"#;
        let Ok(Checked::Call { method, id, params: Some(params) }) = check_message(body) else {
            panic!("a notification with params")
        };
        assert_eq!((method.as_str(), id), ("textDocument/didChange", None));
        assert_eq!(params["contentChanges"][0]["text"], "{\"a\": \"\\😀é\"}\r\n");
    }

    /// The messages the main loop reads when the client sends `bodies`, each stand-in restored
    /// as the outermost layer restores it: `(method, id, params)`.
    fn through_reader(bodies: &[&str]) -> Vec<(String, Value, Value)> {
        let input: Vec<u8> = bodies.iter().flat_map(|b| framed(b.as_bytes())).collect();
        let input = std::io::Cursor::new(input);
        let decoded = Arc::new(Decoded::default());
        let mut stream = checked_input(input, Arc::new(InFlight::default()), decoded.clone());
        let mut out = Vec::new();
        futures::executor::block_on(async {
            use futures::AsyncReadExt;
            let mut bytes = Vec::new();
            stream.read_to_end(&mut bytes).await.unwrap();
            let mut reader = BufReader::new(&bytes[..]);
            let mut body = Vec::new();
            while next_frame(&mut reader, &mut body) {
                let mut message: Value = serde_json::from_slice(&body).unwrap();
                assert!(
                    body.len() < 100,
                    "the main loop gets a stand-in, not {} bytes",
                    body.len()
                );
                let mut method = message["method"].as_str().unwrap().to_owned();
                let mut params = message["params"].take();
                if method == DECODED {
                    assert!(decoded.restore(&mut method, &mut params));
                }
                out.push((method, message["id"].take(), params));
            }
        });
        out
    }

    #[test]
    fn the_main_loop_gets_stand_ins_in_order_and_no_malformed_frame() {
        let got = through_reader(&[
            r#"{"jsonrpc":"2.0","method":"a","params":{"text":"\"one\"\r\n\u00e9"}}"#,
            r#"{"jsonrpc":"2.0","method":"b","params":"#,
            r#"{"jsonrpc":"2.0","method":"$/stardust/decoded","params":0}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"c","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":"shutdown"}"#,
        ]);
        let expected = [
            ("a".to_owned(), Value::Null, serde_json::json!({"text": "\"one\"\r\né"})),
            ("c".to_owned(), Value::from(7), serde_json::json!([1])),
            // Nothing to decode: the frame as it came.
            ("shutdown".to_owned(), Value::from("s"), Value::Null),
        ];
        assert_eq!(got, expected, "the truncated and the reserved frames are dropped");
    }

    #[test]
    fn a_stand_in_naming_no_message_is_not_restored() {
        let decoded = Decoded::default();
        let first = decoded.put("a".to_owned(), Value::from(1));
        let second = decoded.put("b".to_owned(), Value::from(2));
        let (mut method, mut params) = (DECODED.to_owned(), Value::from(second));
        assert!(decoded.restore(&mut method, &mut params));
        assert_eq!((method.as_str(), params), ("b", Value::from(2)));
        // The older one was dropped on the way: nothing waits any more.
        let (mut method, mut params) = (DECODED.to_owned(), Value::from(first));
        assert!(!decoded.restore(&mut method, &mut params));
        assert_eq!(method, DECODED);
        assert!(lock(&decoded.inner).queue.is_empty());
    }
}

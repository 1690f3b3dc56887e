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
//! frames, so the order of messages is kept. A member named `text` (a document's whole text)
//! is unescaped straight into the `String` the core's buffer and document keep ([`Params`]):
//! no scratch buffer and no second copy, which for a 2 MB text are memory the process may never
//! have touched.
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
        if body.capacity() < length {
            // Room for the next whole text after a few characters typed; nothing of the old
            // body is kept, so nothing is copied.
            *body = Vec::with_capacity(length + length / 16);
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
    params: Present<Params>,
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

/// `params` as a [`Value`], except that every member named `text` holding a string (the
/// document's text in `didOpen`, `didChange` and `didSave`) is unescaped here, once, straight
/// into a `String` of its own ([`unescaped`]): serde_json would unescape it into a scratch
/// buffer, grown by doubling, and then copy it out; for a 2 MB text that is about 6 MB of
/// memory the process may never have touched (docs/DECISIONS.md "The first edit after an
/// open"). The `String` is the one the core's buffer and document keep. Everything else is
/// decoded as serde_json decodes a `Value` (the last of duplicate keys wins, nesting is
/// bounded by serde_json's recursion limit). Only for bodies read whole (`from_slice`): the
/// text is borrowed raw from the body.
struct Params(Value);

impl<'de> serde::Deserialize<'de> for Params {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ParamsVisitor).map(Params)
    }
}

struct ParamsVisitor;

impl<'de> serde::de::Visitor<'de> for ParamsVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(Params(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "text" {
                let raw: &'de serde_json::value::RawValue = map.next_value()?;
                decoded_text(raw.get()).map_err(serde::de::Error::custom)?
            } else {
                map.next_value::<Params>()?.0
            };
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// The value of a member named `text`, given raw: a string unescaped by [`unescaped`],
/// anything else as serde_json decodes it.
fn decoded_text(raw: &str) -> Result<Value, String> {
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) => unescaped(inner).map(Value::String),
        None => serde_json::from_str::<Params>(raw).map(|p| p.0).map_err(|e| e.to_string()),
    }
}

/// The JSON string whose text between the quotes is `escaped`, unescaped into one `String`
/// allocated once (an unescaped string is never longer than its escaped form), with
/// serde_json's rules for a UTF-8 string: a control character or an unknown escape is an
/// error, and so is a surrogate `\u` escape that is not a high one followed by a low one.
fn unescaped(escaped: &str) -> Result<String, String> {
    let bytes = escaped.as_bytes();
    let mut out = String::with_capacity(escaped.len());
    let mut run = 0;
    let mut i = 0;
    loop {
        i = next_special(bytes, i);
        match bytes.get(i) {
            None => break,
            Some(b'\\') => {}
            Some(b'"') => return Err("an unescaped quote inside a string".to_owned()),
            Some(_) => return Err("a control character inside a string".to_owned()),
        }
        out.push_str(&escaped[run..i]);
        let escape = bytes.get(i + 1).copied().ok_or("a string ends inside an escape")?;
        i += 2;
        let c = match escape {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = hex4(bytes, i)?;
                i += 4;
                match high {
                    0xD800..=0xDBFF => {
                        if bytes.get(i..i + 2) != Some(b"\\u") {
                            return Err("a high surrogate escape without its low one".to_owned());
                        }
                        let low = hex4(bytes, i + 2)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err("a high surrogate escape without its low one".to_owned());
                        }
                        i += 6;
                        let code = 0x1_0000
                            + ((u32::from(high) - 0xD800) << 10)
                            + (u32::from(low) - 0xDC00);
                        char::from_u32(code).ok_or("an invalid escaped character")?
                    }
                    0xDC00..=0xDFFF => {
                        return Err("a low surrogate escape without its high one".to_owned());
                    }
                    code => {
                        char::from_u32(u32::from(code)).ok_or("an invalid escaped character")?
                    }
                }
            }
            _ => return Err("an invalid escape inside a string".to_owned()),
        };
        out.push(c);
        run = i;
    }
    out.push_str(&escaped[run..]);
    Ok(out)
}

/// The index of the first byte at or after `from` that a JSON string cannot hold as it is (a
/// quote, a backslash, a control character), or `bytes.len()`: eight bytes at a time, as
/// serde_json's own scan does (a document's text escapes a quote every few bytes, so this loop
/// is most of a whole-text change's decoding).
fn next_special(bytes: &[u8], mut from: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    // The high bit of each byte that is zero; a false one only above a true one.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = bytes.get(from..from + 8) {
        let v = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let found = zero(v ^ (ONES * u64::from(b'"')))
            | zero(v ^ (ONES * u64::from(b'\\')))
            | (v.wrapping_sub(ONES * 0x20) & !v & HIGH);
        if found != 0 {
            return from + (found.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    let rest = bytes.get(from..).unwrap_or_default();
    from + rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(rest.len())
}

/// The four hex digits at `at` of `bytes`, as a UTF-16 code unit.
fn hex4(bytes: &[u8], at: usize) -> Result<u16, String> {
    let digits = bytes.get(at..at + 4).ok_or("a string ends inside a \\u escape")?;
    let digits = std::str::from_utf8(digits).map_err(|_| "an invalid \\u escape")?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("an invalid \\u escape".to_owned());
    }
    u16::from_str_radix(digits, 16).map_err(|_| "an invalid \\u escape".to_owned())
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
        return Ok(Checked::Call { method, id, params: shape.params.0.map(|p| p.0) });
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
        // A whole text after some typing.
        let longer = format!("\"{}\"", "a".repeat((1 << 20) + (1 << 15)));
        let huge = format!("\"{}\"", "a".repeat(KEPT_BODY));
        let input = [big.as_str(), "{}", longer.as_str(), huge.as_str(), "{}"]
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
        assert_eq!(body, longer.as_bytes());
        assert_eq!(body.as_ptr(), memory, "room was kept for a slightly longer body");
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

    /// A member named `text` is unescaped by `unescaped`, not by serde_json: the same string
    /// where serde_json decodes one, refused where serde_json refuses it.
    #[test]
    fn texts_are_unescaped_as_serde_json_unescapes_them() {
        let good = [
            r#""""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u20AC\ud83d\ude00 é😀 \u0000""#,
            r#""x\uD83D\uDE00y\u007f""#,
        ];
        for raw in good {
            let theirs: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(decoded_text(raw), Ok(theirs), "{raw}");
        }
        let bad = [
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83dx""#,
            r#""\ud83d\n""#,
            r#""\ud83d\u0041""#,
            r#""\x""#,
            r#""\u12""#,
            r#""\u12g4""#,
            "\"a\u{1}\"",
        ];
        for raw in bad {
            assert!(serde_json::from_str::<Value>(raw).is_err(), "{raw}");
            assert!(decoded_text(raw).is_err(), "{raw}");
        }
        // A member named `text` that is no string is any value, its own `text`s included.
        let raw = r#"{"text": "a\nb", "n": [1, -2, 2.5, 1e300, null, true, {"text": 3}]}"#;
        assert_eq!(
            decoded_text(raw),
            serde_json::from_str::<Value>(raw).map_err(|e| e.to_string())
        );
        // A message whose text cannot be decoded is dropped, as serde_json's refusal did.
        let body = br#"{"jsonrpc":"2.0","method":"x","params":{"text":"\ud800"}}"#;
        assert!(check_message(body).is_err());
    }

    /// The scan eight bytes at a time finds the first quote, backslash or control character
    /// wherever it is, and nothing else (a space, DEL, the bytes of non-ASCII characters).
    #[test]
    fn the_scan_finds_the_first_special_byte() {
        let plain = " \u{7f}aé😀~".repeat(4);
        assert_eq!(next_special(plain.as_bytes(), 0), plain.len());
        for special in ["\"", "\\", "\u{0}", "\u{1f}"] {
            for at in 0..plain.len() {
                if !plain.is_char_boundary(at) {
                    continue;
                }
                let text = format!("{}{special}{}\"", &plain[..at], &plain[at..]);
                assert_eq!(next_special(text.as_bytes(), 0), at, "{special:?} at {at}");
                assert_eq!(next_special(text.as_bytes(), at + 1), text.len() - 1);
            }
        }
    }

    /// `s` as a JSON string, each character written as `how` picks: as it is (when JSON allows
    /// it), as its short escape, or as `\u` escapes of its UTF-16 units.
    fn escaped(s: &str, how: &[u8]) -> String {
        let mut out = String::from("\"");
        for (n, c) in s.chars().enumerate() {
            let short = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\t' => Some("\\t"),
                '/' => Some("\\/"),
                _ => None,
            };
            match (how.get(n % how.len().max(1)).copied().unwrap_or(0) % 3, short) {
                (0, _) if c != '"' && c != '\\' && c >= ' ' => out.push(c),
                (1, Some(short)) => out.push_str(short),
                (2, _) if n % 2 == 0 => {
                    c.encode_utf16(&mut [0; 2]).iter().for_each(|u| out += &format!("\\u{u:04x}"))
                }
                _ => c.encode_utf16(&mut [0; 2]).iter().for_each(|u| out += &format!("\\u{u:04X}")),
            }
        }
        out.push('"');
        out
    }

    proptest::proptest! {
        /// Any string, escaped in any way JSON allows, decodes to itself.
        #[test]
        fn any_escaped_text_decodes_to_itself(s in "\\PC*|[\"\\\\/\n\t\r\u{0}-\u{1f}é😀]*", how in proptest::collection::vec(0u8..3, 1..8)) {
            let raw = escaped(&s, &how);
            proptest::prop_assert_eq!(&serde_json::from_str::<String>(&raw).unwrap(), &s, "{}", raw);
            proptest::prop_assert_eq!(decoded_text(&raw), Ok(Value::String(s)), "{}", raw);
        }
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

//! One LSP connection to a store's core: attach (starting a core when allowed), `initialize`
//! with the notifications wanted, then JSON-RPC requests and notifications over
//! Content-Length frames.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use serde_json::{Value, json};
use stardust_core::Code;
use stardust_daemon::attach::{self, Autostart};
use stardust_daemon::{Front, Hello};

use crate::{ConnectOptions, Error, Result};

/// The largest frame accepted from the core; anything bigger is a protocol error rather than
/// an allocation of whatever size a header claims.
const MAX_FRAME: usize = 512 * 1024 * 1024;

/// JSON-RPC "method not found", the answer to requests from the core this client does not serve.
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "request cancelled" (LSP).
const REQUEST_CANCELLED: i64 = -32800;

/// A notification from the core: its method and params.
pub(crate) type Notification = (String, Value);

pub(crate) struct Conn {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
    /// Notifications that arrived while waiting for an answer, oldest first.
    pending: VecDeque<Notification>,
}

impl Conn {
    /// Attach to the core of `store` as the LSP client `name` and initialize, opting in to the
    /// change notifications in `wants` (`"entitiesChanged"`, `"documentsChanged"`).
    pub fn open(
        store: &Path,
        name: &str,
        options: &ConnectOptions,
        wants: &[&str],
    ) -> Result<Conn> {
        // Looked for only when a core may be started; used only when none runs.
        let exe = options.autostart.then(|| options.executable());
        let autostart = match &exe {
            Some(Ok(exe)) => Some(Autostart { exe, idle_exit: options.idle_exit }),
            _ => None,
        };
        let stream =
            attach::connect(store, &Hello::new(Front::Sdk, name), autostart).map_err(|err| {
                let mut message = format!("{err:#}");
                if let Some(Err(not_found)) = &exe {
                    message.push_str(&format!(
                        "; {not_found}; install stardust on PATH, or set STARDUST_BIN or \
                         ConnectOptions::exe to it"
                    ));
                }
                Error::Connect { store: store.to_owned(), message }
            })?;
        let mut conn = Conn {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
            next_id: 1,
            pending: VecDeque::new(),
        };
        conn.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "clientInfo": {"name": name, "version": env!("CARGO_PKG_VERSION")},
                "capabilities": {"experimental": {"stardust": {"notifications": wants}}},
            }),
        )?;
        conn.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))?;
        Ok(conn)
    }

    /// Run a registry command (`workspace/executeCommand` with one argument object).
    pub fn execute(&mut self, command: &str, arguments: Value) -> Result<Value> {
        self.request(
            "workspace/executeCommand",
            json!({"command": command, "arguments": [arguments]}),
        )
    }

    /// Send a request and wait for its answer, keeping notifications that come meanwhile.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let mut message = self.read()?;
            if message.get("method").is_some() {
                self.incoming(message)?;
                continue;
            }
            if message.get("id").and_then(Value::as_u64) != Some(id) {
                // An answer to a request this connection no longer waits for: ignore it.
                continue;
            }
            if let Some(error) = message.get_mut("error") {
                return Err(command_error(error.take()));
            }
            return Ok(message.get_mut("result").map(Value::take).unwrap_or(Value::Null));
        }
    }

    /// The next notification from the core, waiting for one.
    pub fn notification(&mut self) -> Result<Notification> {
        loop {
            if let Some(notification) = self.pending.pop_front() {
                return Ok(notification);
            }
            let message = self.read()?;
            if message.get("method").is_some() {
                self.incoming(message)?;
            }
        }
    }

    /// A message from the core that carries a method: queue a notification, refuse a request.
    fn incoming(&mut self, mut message: Value) -> Result<()> {
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        match message.get("id") {
            Some(id) => {
                let id = id.clone();
                self.send(&json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": METHOD_NOT_FOUND, "message": format!("the stardust SDK does not serve {method}")},
                }))
            }
            None => {
                let params = message.get_mut("params").map(Value::take).unwrap_or(Value::Null);
                self.pending.push_back((method, params));
                Ok(())
            }
        }
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let body = message.to_string();
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(body.as_bytes());
        self.writer.write_all(&frame).map_err(disconnect)?;
        Ok(())
    }

    /// One frame from the core.
    fn read(&mut self) -> Result<Value> {
        let mut length: Option<usize> = None;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).map_err(disconnect)? == 0 {
                return Err(Error::Disconnected);
            }
            let line = line.trim_end();
            if line.is_empty() {
                if length.is_some() {
                    break;
                }
                continue;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                let n = value.trim().parse::<usize>().map_err(|_| {
                    Error::Protocol(format!("a Content-Length that is not a number: {line:?}"))
                })?;
                if n > MAX_FRAME {
                    return Err(Error::Protocol(format!("a frame of {n} bytes is too large")));
                }
                length = Some(n);
            }
        }
        let mut body = vec![0; length.unwrap_or(0)];
        self.reader.read_exact(&mut body).map_err(disconnect)?;
        serde_json::from_slice(&body)
            .map_err(|err| Error::Protocol(format!("a frame that is not JSON: {err}")))
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // The core ends the session (and drops its previews) when the connection closes.
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
    }
}

/// A connection that ends (end of file, reset, broken pipe) is `Disconnected`.
fn disconnect(err: std::io::Error) -> Error {
    use std::io::ErrorKind::*;
    match err.kind() {
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected => {
            Error::Disconnected
        }
        _ => Error::Io(err),
    }
}

/// A JSON-RPC error as the SDK's error: the error code is in `data.code`.
fn command_error(error: Value) -> Error {
    let message = error["message"].as_str().unwrap_or("the core gave no message").to_owned();
    // A code this SDK does not know (a newer core's) is `internal`.
    let code = match error["data"]["code"].as_str() {
        Some(code) => Code::parse(code).unwrap_or(Code::Internal),
        None if error["code"].as_i64() == Some(REQUEST_CANCELLED) => Code::Cancelled,
        None => Code::Internal,
    };
    let data = match error.get("data") {
        Some(data) if !data.is_null() => data.clone(),
        _ => json!({"code": code}),
    };
    Error::Command { code, message, data }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_errors_carry_the_spec_code_and_details() {
        let err = command_error(json!({
            "code": -32803, "message": "refused",
            "data": {"code": "refused", "problems": [1]},
        }));
        assert_eq!(err.code(), "refused");
        let Error::Command { data, .. } = err else { panic!("a command error") };
        assert_eq!(data["problems"], json!([1]));
        assert_eq!(command_error(json!({"code": -32800, "message": "x"})).code(), "cancelled");
        assert_eq!(command_error(json!({"code": -32603})).code(), "internal");
    }

    #[test]
    fn frames_are_read_and_bounded() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut conn = Conn {
            writer: a.try_clone().unwrap(),
            reader: BufReader::new(a),
            next_id: 1,
            pending: VecDeque::new(),
        };
        b.write_all(b"Content-Length: 2\r\nContent-Type: x\r\n\r\n{}").unwrap();
        assert_eq!(conn.read().unwrap(), json!({}));
        b.write_all(b"content-length: 99999999999\r\n\r\n").unwrap();
        assert!(matches!(conn.read(), Err(Error::Protocol(_))));
        drop(b);
        assert!(matches!(conn.read(), Err(Error::Disconnected)));
    }
}

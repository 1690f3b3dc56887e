//! LSP base protocol framing: `Content-Length` headers, a blank line, a JSON body.

use std::io::{self, BufRead, Write};

use serde_json::Value;

/// The largest body accepted from a server (a bigger `Content-Length` is garbage).
pub const MAX_BODY: usize = 256 << 20;

/// Why a frame could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The stream ended (cleanly, between frames, or inside one).
    Eof,
    /// The bytes are not LSP frames; the stream cannot be resynchronised.
    Garbage(String),
    Io(io::Error),
}

/// Reads one frame's body. A body that is not JSON is `Ok(Err(..))`: the stream is still in
/// step and the next frame can be read.
pub fn read_frame(input: &mut impl BufRead) -> Result<Result<Value, String>, ReadError> {
    let mut length: Option<usize> = None;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let n = bounded_line(input, &mut line)?;
        if n == 0 {
            return Err(ReadError::Eof);
        }
        if !line.ends_with(b"\n") {
            return Err(if first {
                ReadError::Eof
            } else {
                ReadError::Garbage("a header line without an end".into())
            });
        }
        first = false;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(ReadError::Garbage(format!("not an LSP header: {:?}", truncate(text, 80))));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let n: usize = value.trim().parse().map_err(|_| {
                ReadError::Garbage(format!(
                    "Content-Length is not a number: {:?}",
                    truncate(value, 40)
                ))
            })?;
            if n > MAX_BODY {
                return Err(ReadError::Garbage(format!("Content-Length {n} exceeds {MAX_BODY}")));
            }
            length = Some(n);
        }
    }
    let Some(length) = length else {
        return Err(ReadError::Garbage("a frame without Content-Length".into()));
    };
    let mut body = vec![0; length];
    input.read_exact(&mut body).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => ReadError::Eof,
        _ => ReadError::Io(e),
    })?;
    Ok(serde_json::from_slice(&body).map_err(|e| e.to_string()))
}

/// One header line, at most 8 KiB (a longer one is garbage, never buffered without bound).
fn bounded_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> Result<usize, ReadError> {
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        if available.is_empty() {
            return Ok(line.len());
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..take]);
        input.consume(take);
        if line.len() > 8192 {
            return Err(ReadError::Garbage("a header line longer than 8 KiB".into()));
        }
        if done {
            return Ok(line.len());
        }
    }
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `message` as one frame's bytes: its header and its body.
pub fn frame(message: &Value) -> io::Result<Vec<u8>> {
    let body = serde_json::to_vec(message).map_err(io::Error::other)?;
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    Ok(frame)
}

/// Writes `message` as one frame and flushes.
pub fn write_frame(output: &mut impl Write, message: &Value) -> io::Result<()> {
    output.write_all(&frame(message)?)?;
    output.flush()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read_all(bytes: &[u8]) -> Vec<String> {
        let mut input = io::BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            match read_frame(&mut input) {
                Ok(Ok(v)) => out.push(v.to_string()),
                Ok(Err(_)) => out.push("bad json".into()),
                Err(ReadError::Eof) => {
                    out.push("eof".into());
                    return out;
                }
                Err(ReadError::Garbage(m)) => {
                    out.push(format!("garbage: {m}"));
                    return out;
                }
                Err(ReadError::Io(e)) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn frames_round_trip_and_bad_bodies_keep_the_stream_in_step() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &json!({"a": 1})).unwrap();
        bytes.extend_from_slice(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 3\r\n\r\n{x}");
        write_frame(&mut bytes, &json!([2])).unwrap();
        assert_eq!(read_all(&bytes), [r#"{"a":1}"#, "bad json", "[2]", "eof"]);
    }

    #[test]
    fn garbage_and_truncation() {
        assert_eq!(
            read_all(b"hello world\r\n\r\n"),
            [r#"garbage: not an LSP header: "hello world""#]
        );
        assert_eq!(
            read_all(b"Content-Length: x\r\n\r\n"),
            [r#"garbage: Content-Length is not a number: " x""#]
        );
        assert_eq!(
            read_all(b"Content-Type: a\r\n\r\n{}"),
            ["garbage: a frame without Content-Length"]
        );
        assert_eq!(read_all(b"Content-Length: 10\r\n\r\n{}"), ["eof"]);
        assert_eq!(read_all(b""), ["eof"]);
        assert_eq!(read_all(&[b'x'; 9000]), ["garbage: a header line longer than 8 KiB"]);
    }
}

//! What one inbound JSON-RPC line (stdio, the daemon socket) or body (streamable HTTP) is,
//! decided before rmcp sees it: a message for rmcp, a notification or response nobody
//! answers, or input answered with the error JSON-RPC 2.0 calls for.
//!
//! rmcp drops a line that is not JSON without a word and answers other unusable input with an
//! `-32600` that has no `id` member, which JSON-RPC 2.0 does not allow. Here, input that is
//! not JSON gets `-32700` Parse error, and JSON that is not a message gets `-32600` Invalid
//! Request carrying the input's `id` when one is readable (a string or a number) and
//! `"id": null` otherwise. A notification or a response rmcp cannot take gets no answer:
//! JSON-RPC answers neither, and answering a peer's malformed answers invites a loop of
//! errors.

use rmcp::RoleServer;
use rmcp::service::RxJsonRpcMessage;
use serde_json::{Value, json};

/// JSON-RPC 2.0: invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: the JSON sent is not a valid Request object.
pub const INVALID_REQUEST: i64 = -32600;

/// One inbound line, checked.
pub enum Inbound {
    /// A blank line: nothing was sent.
    Blank,
    /// A message for rmcp; `answered` when it is a request, which rmcp answers.
    Message { message: Box<RxJsonRpcMessage<RoleServer>>, answered: bool },
    /// A notification or a response rmcp cannot take, with why (for the log).
    Dropped(String),
    /// Input that gets this JSON-RPC error as its answer.
    Refused(Value),
}

/// Check one line (without its `\n`). A trailing `\r` and a leading UTF-8 byte order mark
/// are not part of the message (RFC 8259 §8.1), as rmcp also reads them.
pub fn inbound(line: &[u8]) -> Inbound {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Inbound::Blank;
    }
    // The common case parses once; only input rmcp refuses is looked at again.
    let typed = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => {
            let answered = matches!(message, rmcp::model::JsonRpcMessage::Request(_));
            return Inbound::Message { message: Box::new(message), answered };
        }
        Err(err) => err,
    };
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(err) => return Inbound::Refused(parse_error(&err)),
    };
    let unanswered = match Shape::of(&value) {
        Shape::Notification => "notification",
        Shape::Response => "response",
        Shape::Request | Shape::None => return Inbound::Refused(invalid_request(&value)),
    };
    Inbound::Dropped(format!("ignoring a {unanswered} that does not match MCP: {typed}"))
}

/// The error answering a whole input (an HTTP body) that rmcp could not take as a message.
pub fn refusal(input: &[u8]) -> Value {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    match serde_json::from_slice::<Value>(input) {
        Ok(value) => invalid_request(&value),
        Err(err) => parse_error(&err),
    }
}

/// The kind of message an object's members make it, by the members JSON-RPC 2.0 names (as
/// rmcp tells them apart): `method` with an `id` is a request, without one a notification;
/// `result` or `error` without `method` is a response.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Request,
    Notification,
    Response,
    /// Not an object, or an object that is none of the above.
    None,
}

impl Shape {
    fn of(value: &Value) -> Shape {
        let Some(object) = value.as_object() else { return Shape::None };
        let has = |key: &str| object.contains_key(key);
        match (has("method"), has("id"), has("result"), has("error")) {
            (true, true, false, false) => Shape::Request,
            (true, false, false, false) => Shape::Notification,
            (false, _, true, false) | (false, _, false, true) => Shape::Response,
            _ => Shape::None,
        }
    }
}

fn error(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn parse_error(err: &serde_json::Error) -> Value {
    error(
        Value::Null,
        PARSE_ERROR,
        format!("parse error: the input is not JSON ({err}); send each message as one JSON object"),
    )
}

/// The answer to a line longer than `max` bytes, which is not read: `-32700`, since it was
/// never parsed.
pub fn too_long(max: usize) -> Value {
    error(
        Value::Null,
        PARSE_ERROR,
        format!(
            "parse error: the line is longer than {} MiB and was not read; send smaller messages",
            max / (1024 * 1024)
        ),
    )
}

/// `-32600` for JSON that is not a message, with the input's `id` when it is a string or a
/// number (a request's id may only be one of those), else `null`.
fn invalid_request(value: &Value) -> Value {
    let id = value.get("id").filter(|id| id.is_string() || id.is_number());
    let why = match value {
        Value::Array(_) => "a batch (a JSON array) is not taken: send each message as one JSON \
                            object"
            .to_owned(),
        Value::Object(object) => {
            if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
                "the message must have \"jsonrpc\": \"2.0\"".to_owned()
            } else if object.contains_key("id") && id.is_none() {
                "\"id\" must be a string or a number".to_owned()
            } else if Shape::of(value) == Shape::None {
                "a request needs a \"method\" (and an \"id\"); this object has neither a \
                 method nor exactly one of \"result\" and \"error\""
                    .to_owned()
            } else {
                match object.get("method").and_then(Value::as_str) {
                    Some(method) => format!("the {method} request does not match MCP"),
                    None => "\"method\" must be a string".to_owned(),
                }
            }
        }
        other => format!(
            "{} is not a message: send a JSON object with \"jsonrpc\": \"2.0\", an \"id\" and a \
             \"method\"",
            stardust_core::model::value_kind(other)
        ),
    };
    error(id.cloned().unwrap_or(Value::Null), INVALID_REQUEST, format!("invalid request: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> Value {
        match inbound(line.as_bytes()) {
            Inbound::Refused(reply) => reply,
            Inbound::Blank => panic!("{line}: blank"),
            Inbound::Message { .. } => panic!("{line}: taken as a message"),
            Inbound::Dropped(why) => panic!("{line}: dropped ({why})"),
        }
    }

    #[test]
    fn requests_are_messages_and_answered() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(matches!(inbound(line.as_bytes()), Inbound::Message { answered: true, .. }));
        let line = "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r";
        assert!(matches!(inbound(line.as_bytes()), Inbound::Message { answered: false, .. }));
        let line = r#"{"jsonrpc":"2.0","id":"a","result":{}}"#;
        assert!(matches!(inbound(line.as_bytes()), Inbound::Message { answered: false, .. }));
        assert!(matches!(inbound(b"  \r"), Inbound::Blank));
    }

    #[test]
    fn input_that_is_not_json_is_a_parse_error_with_a_null_id() {
        for line in ["{", "not json", "{\"jsonrpc\":\"2.0\",", "\u{0}"] {
            let reply = refused(line);
            assert_eq!(reply["error"]["code"], PARSE_ERROR, "{line}: {reply}");
            assert!(reply.as_object().unwrap().contains_key("id"), "{reply}");
            assert_eq!(reply["id"], Value::Null);
            assert_eq!(reply["jsonrpc"], "2.0");
        }
        assert_eq!(refusal(b"\xff")["error"]["code"], PARSE_ERROR);
    }

    #[test]
    fn json_that_is_not_a_message_is_an_invalid_request_with_its_readable_id() {
        let cases = [
            ("[]", Value::Null),
            ("42", Value::Null),
            (r#""ping""#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":7}"#, json!(7)),
            (r#"{"jsonrpc":"2.0","id":"seven"}"#, json!("seven")),
            (r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#, json!(8)),
            (r#"{"jsonrpc":"2.0","id":{"n":1},"method":"ping"}"#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":9,"result":{},"error":{}}"#, json!(9)),
        ];
        for (line, id) in cases {
            let reply = refused(line);
            assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{line}: {reply}");
            assert!(reply.as_object().unwrap().contains_key("id"), "{line}: {reply}");
            assert_eq!(reply["id"], id, "{line}: {reply}");
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("invalid request: "), "{message}");
        }
        assert_eq!(refusal(b"[]"), refused("[]"));
    }

    #[test]
    fn notifications_and_responses_rmcp_cannot_take_get_no_answer() {
        for line in [
            r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":"not an error object"}"#,
        ] {
            assert!(matches!(inbound(line.as_bytes()), Inbound::Dropped(_)), "{line}");
        }
    }
}

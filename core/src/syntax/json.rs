//! The tolerant JSON parser: strict RFC 8259, with the common mistakes (comments, trailing or
//! missing commas, unquoted or single-quoted strings, malformed numbers, unclosed brackets)
//! reported and read anyway; and its JSONC mode (SPEC §23), JSON with comments as VS Code and
//! TypeScript read it: `//` and `/* */` comments (recorded in the parse's `comments`, which do
//! not nest) and trailing commas in arrays and objects are accepted, the rest is JSON.

use serde_json::Value;

use super::lex::{self, Dialect, JSON_WORD as WORD, node};
use super::{MAX_DEPTH, Node, NodeKind, Parse, SyntaxError};
use crate::text::Span;

/// Parses `text` as JSON. Never fails: the result holds what could be read and every error.
pub fn parse_json(text: &str) -> Parse {
    parse_with(text, false)
}

/// Parses `text` as JSON with comments (JSONC): comments and trailing commas are accepted.
/// Never fails: the result holds what could be read and every error.
pub fn parse_jsonc(text: &str) -> Parse {
    parse_with(text, true)
}

fn parse_with(text: &str, jsonc: bool) -> Parse {
    if let Some(parse) = lex::refuse_too_large(text) {
        return parse;
    }
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: lex::bom_len(text),
        jsonc,
        comments: Vec::new(),
        errors: Vec::new(),
        open: Vec::new(),
        unterminated_end: usize::MAX,
        scratch: lex::Scratch::default(),
    };
    let mut root = None;
    let mut value = Value::Null;
    loop {
        p.skip_ws();
        match p.peek() {
            None => {
                // Report the missing value unless what stood in its place was reported. JSONC
                // may hold no value at all (an empty text, or only comments): TypeScript reads
                // such a tsconfig.json as `{}`, and VS Code reports nothing.
                if p.errors.is_empty() && !p.jsonc {
                    p.error(
                        p.pos,
                        p.pos,
                        "expected a JSON value, found the end of the text".into(),
                    );
                }
                break;
            }
            Some(c @ (b'}' | b']')) => p.unmatched(c),
            Some(b) if starts_value(b) => {
                let (n, v) = p.value();
                (root, value) = (Some(n), v);
                p.after_root();
                break;
            }
            Some(_) => p.junk("a JSON value"),
        }
    }
    Parse {
        value,
        root,
        implicit_object: false,
        comments: p.comments,
        errors: lex::sorted(p.errors),
    }
}

/// Where comments may be written, for the messages about a comment in plain JSON.
const COMMENTS_ALLOWED: &str =
    "comments are allowed in .jsonc files and in .json files matched by [store] jsonc";

/// Whether `b` begins a value (or a key): a bracket, a quote or an unquoted token.
fn starts_value(b: u8) -> bool {
    matches!(b, b'{' | b'[' | b'"' | b'\'') || WORD[usize::from(b)]
}

/// What came last inside a container, for the comma diagnostics.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sep {
    /// Nothing yet: right after the opening bracket.
    Start,
    /// An item or member, which must be followed by a comma or the closer.
    Item,
    /// An item followed by a problem already reported; the next item is not reported again.
    Reported,
    /// A comma at this offset.
    Comma(usize),
}

/// The two containers one loop reads ([`Parser::container`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Array,
    Object,
}

impl Container {
    /// Its closer, and the other container's.
    fn closers(self) -> (u8, u8) {
        match self {
            Container::Array => (b']', b'}'),
            Container::Object => (b'}', b']'),
        }
    }

    /// What its elements are called in messages.
    fn element(self) -> &'static str {
        match self {
            Container::Array => "an item",
            Container::Object => "a member",
        }
    }

    /// What is expected where an element starts.
    fn first(self) -> &'static str {
        match self {
            Container::Array => "a value",
            Container::Object => "a key",
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// JSONC: comments and trailing commas are accepted.
    jsonc: bool,
    /// The comments read, in source order (JSONC only: in JSON each is an error instead).
    comments: Vec<Span>,
    errors: Vec<SyntaxError>,
    /// The closers of the containers being read, innermost last; its length is the depth.
    open: Vec<u8>,
    /// The end of the last unterminated string: a comma after it was likely swallowed by it,
    /// so a missing comma there is not reported again.
    unterminated_end: usize,
    scratch: lex::Scratch,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn error(&mut self, start: usize, end: usize, message: String) {
        lex::error(&mut self.errors, start, end, message);
    }

    /// Describes the token at the cursor and returns where it ends.
    fn found(&self) -> (String, usize) {
        lex::found(self.text, self.pos, &WORD)
    }

    /// Reports "expected `what`, found ..." at the cursor and moves past one character that
    /// cannot start anything (`:`, `,` or a control character; all ASCII).
    fn junk(&mut self, what: &str) {
        let (found, _) = self.found();
        self.error(self.pos, self.pos + 1, format!("expected {what}, found {found}"));
        self.pos += 1;
    }

    fn unmatched(&mut self, closer: u8) {
        lex::unmatched(&mut self.errors, self.pos, closer);
        self.pos += 1;
    }

    /// Skips whitespace and comments: recorded in JSONC, an error each in JSON.
    fn skip_ws(&mut self) {
        loop {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
                self.pos += 1;
            }
            if self.peek() != Some(b'/') || !self.comment() {
                return;
            }
        }
    }

    /// Reads the comment at the cursor (a `/`), if one starts there; whether one did. Kept out
    /// of [`Parser::skip_ws`]'s loop, which runs between every two tokens.
    #[inline(never)]
    fn comment(&mut self) -> bool {
        let start = self.pos;
        let end = match self.bytes.get(start + 1) {
            Some(b'/') => lex::line_end(self.bytes, start),
            Some(b'*') => match lex::block_comment_end(self.text, start) {
                Some(end) => end,
                None => {
                    let message = if self.jsonc {
                        "unterminated comment: add '*/' where it ends".into()
                    } else {
                        format!("unterminated comment: add '*/' ({COMMENTS_ALLOWED})")
                    };
                    self.error(start, self.bytes.len(), message);
                    self.pos = self.bytes.len();
                    return false;
                }
            },
            _ => return false,
        };
        if self.jsonc {
            self.comments.push(lex::span(start, end));
        } else {
            self.error(
                start,
                end,
                format!("comments are not allowed in JSON; remove it ({COMMENTS_ALLOWED})"),
            );
        }
        self.pos = end;
        true
    }

    /// The end of the unquoted token starting at `start`. In JSONC a comment ends it (`1// c`);
    /// in JSON a `/` inside a token is part of it (`http://x`), the whole token being an error.
    fn word_end(&self, start: usize) -> usize {
        let end = self.bytes[start..]
            .iter()
            .position(|&b| !WORD[usize::from(b)])
            .map_or(self.bytes.len(), |n| start + n);
        if !self.jsonc {
            return end;
        }
        // A token never starts with a comment (whitespace and comments are skipped first), and
        // must not be empty.
        let from = (start + 1).min(end);
        (from..end).find(|&i| self.comment_at(i)).unwrap_or(end)
    }

    /// Whether a comment starts at `at`.
    fn comment_at(&self, at: usize) -> bool {
        self.bytes.get(at) == Some(&b'/') && matches!(self.bytes.get(at + 1), Some(b'/' | b'*'))
    }

    /// After the root value: only whitespace may follow.
    fn after_root(&mut self) {
        loop {
            self.skip_ws();
            match self.peek() {
                None => return,
                Some(c @ (b'}' | b']')) => self.unmatched(c),
                Some(_) => {
                    let (found, _) = self.found();
                    let end = lex::trimmed_end(self.text).max(self.pos + 1);
                    self.error(
                        self.pos,
                        end,
                        format!(
                            "expected the end of the text after the JSON value, found {found}; \
                             a JSON text holds one value (wrap several in an array)"
                        ),
                    );
                    self.pos = self.bytes.len();
                    return;
                }
            }
        }
    }

    /// Reads the value at the cursor, which must be where [`starts_value`] holds.
    fn value(&mut self) -> (Node, Value) {
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string(),
            Some(b'\'') => {
                let (node, value) = self.string();
                self.error(
                    node.span.start as usize,
                    node.span.end as usize,
                    "JSON strings use double quotes; replace the single quotes with '\"'".into(),
                );
                (node, value)
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.word(),
        }
    }

    fn string(&mut self) -> (Node, Value) {
        let start = self.pos;
        let (s, end, terminated) = lex::string(self.text, start, Dialect::Json, &mut self.errors);
        self.pos = end;
        if !terminated {
            self.unterminated_end = end;
        }
        (node(start, end, NodeKind::String { quoted: true }), Value::String(s))
    }

    /// A number in JSON's grammar, or else whatever unquoted token starts here.
    fn number(&mut self) -> (Node, Value) {
        let start = self.pos;
        match lex::number_end(self.bytes, start) {
            Some((end, integer))
                if !self.bytes.get(end).is_some_and(|&b| WORD[usize::from(b)])
                    || (self.jsonc && self.comment_at(end)) =>
            {
                self.pos = end;
                let token = &self.text[start..end];
                match lex::number_value(token, integer) {
                    Some(value) => (node(start, end, NodeKind::Number), value),
                    None => self.out_of_range(start, end),
                }
            }
            _ => self.word(),
        }
    }

    fn out_of_range(&mut self, start: usize, end: usize) -> (Node, Value) {
        let token = lex::shorten(&self.text[start..end]);
        self.error(
            start,
            end,
            format!(
                "number {token} is out of range for a 64-bit float; write a smaller number, or \
                 a string"
            ),
        );
        (node(start, end, NodeKind::Error), Value::Null)
    }

    /// An unquoted token: a literal, a malformed number, a mistyped literal or a string
    /// missing its quotes.
    fn word(&mut self) -> (Node, Value) {
        let start = self.pos;
        let end = self.word_end(start);
        self.pos = end;
        let word = &self.text[start..end];
        let error_node = (node(start, end, NodeKind::Error), Value::Null);
        match word {
            "true" => return (node(start, end, NodeKind::Bool), Value::Bool(true)),
            "false" => return (node(start, end, NodeKind::Bool), Value::Bool(false)),
            "null" => return (node(start, end, NodeKind::Null), Value::Null),
            "NaN" | "-NaN" | "+NaN" | "Infinity" | "-Infinity" | "+Infinity" => {
                self.error(
                    start,
                    end,
                    format!("{word} is not a JSON number; write null or a string instead"),
                );
                return error_node;
            }
            _ => {}
        }
        if word.starts_with(['-', '+', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) {
            return self.malformed_number(start, end);
        }
        let shown = lex::shorten(word);
        if let Some(literal) = literal_typo(word) {
            self.error(
                start,
                end,
                format!("expected a JSON value, found '{shown}'; did you mean {literal}?"),
            );
            return error_node;
        }
        let quoted = serde_json::to_string(word).unwrap_or_default();
        self.error(
            start,
            end,
            format!("expected a JSON value, found '{shown}'; strings must be quoted: {quoted}"),
        );
        (node(start, end, NodeKind::String { quoted: false }), Value::String(word.to_owned()))
    }

    /// A token that looks like a number but is not in JSON's grammar: reported, and read when
    /// its meaning is plain (`+1`, `007`, `.5`, `1.`), otherwise an `Error` node.
    fn malformed_number(&mut self, start: usize, end: usize) -> (Node, Value) {
        let token = &self.text[start..end];
        let shown = lex::shorten(token);
        let unsigned = token.trim_start_matches(['-', '+']);
        let readable = token.len() - unsigned.len() <= 1
            && unsigned
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
            && unsigned.parse::<f64>().is_ok();
        let problem = if !readable {
            None
        } else if token.starts_with('+') {
            Some("remove the leading '+'")
        } else if unsigned.starts_with('.') {
            Some("write a digit before the '.', as in 0.5")
        } else if unsigned.starts_with('0')
            && unsigned[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            Some("remove the leading zeros")
        } else if unsigned.contains('.')
            && !unsigned
                .split('.')
                .nth(1)
                .is_some_and(|f| f.starts_with(|c: char| c.is_ascii_digit()))
        {
            Some("write a digit after the '.', as in 1.0")
        } else {
            None
        };
        let Some(problem) = problem else {
            self.error(start, end, format!("invalid number '{shown}'; write a JSON number such as -1.5e3, or quote a string"));
            return (node(start, end, NodeKind::Error), Value::Null);
        };
        self.error(start, end, format!("invalid number '{shown}': {problem}"));
        let integer = !unsigned.contains(['.', 'e', 'E']);
        match lex::number_value(token, integer) {
            Some(value) => (node(start, end, NodeKind::Number), value),
            None => self.out_of_range(start, end),
        }
    }

    /// Reports the comma of `sep` as trailing, if it is one (JSONC allows it).
    fn trailing_comma(&mut self, sep: Sep, closer: char) {
        if let Sep::Comma(at) = sep
            && !self.jsonc
        {
            self.error(at, at + 1, format!("trailing comma before '{closer}'; remove it"));
        }
    }

    /// Reads the comma at the cursor; returns the separator state after it.
    fn comma(&mut self, sep: Sep) -> Sep {
        let at = self.pos;
        self.pos += 1;
        match sep {
            Sep::Item | Sep::Reported => Sep::Comma(at),
            Sep::Start | Sep::Comma(_) => {
                self.error(at, at + 1, "extra ','; remove it".into());
                sep
            }
        }
    }

    fn array(&mut self) -> (Node, Value) {
        self.container(Container::Array)
    }

    fn object(&mut self) -> (Node, Value) {
        self.container(Container::Object)
    }

    /// Reads the array or object whose opener is at the cursor: elements separated by commas
    /// up to the closer, each problem reported once (a missing or extra comma, junk, the other
    /// container's closer) and skipped, so reading always goes on.
    fn container(&mut self, kind: Container) -> (Node, Value) {
        let start = self.pos;
        if self.open.len() >= MAX_DEPTH {
            let (node, end) = lex::skip_too_deep(self.text, start, Dialect::Json, &mut self.errors);
            self.pos = end;
            return (node, Value::Null);
        }
        let (closer, other) = kind.closers();
        let shown = char::from(closer);
        self.open.push(closer);
        self.pos += 1;
        let mark = self.scratch.mark();
        let mut sep = Sep::Start;
        let mut end = start + 1;
        loop {
            self.skip_ws();
            let Some(b) = self.peek() else {
                lex::unclosed(&mut self.errors, start, closer);
                break;
            };
            match b {
                _ if b == closer => {
                    self.trailing_comma(sep, shown);
                    self.pos += 1;
                    end = self.pos;
                    break;
                }
                _ if b == other && self.open.contains(&other) => {
                    lex::unclosed(&mut self.errors, start, closer);
                    break;
                }
                _ if b == other => self.unmatched(b),
                b',' => sep = self.comma(sep),
                _ if !starts_value(b) => {
                    if sep == Sep::Item {
                        self.junk(&format!("',' or '{shown}' after {}", kind.element()));
                        sep = Sep::Reported;
                    } else {
                        self.junk(kind.first());
                    }
                }
                _ => {
                    if sep == Sep::Item {
                        let (found, found_end) = self.found();
                        self.error(
                            self.pos,
                            found_end,
                            format!(
                                "expected ',' or '{shown}' after {}, found {found}",
                                kind.element()
                            ),
                        );
                    }
                    sep = Sep::Item;
                    let element_end = match kind {
                        Container::Array => Some(self.item()),
                        Container::Object => self.member(),
                    };
                    if let Some(element_end) = element_end {
                        end = element_end;
                        if end == self.unterminated_end {
                            sep = Sep::Reported;
                        }
                    }
                }
            }
        }
        self.open.pop();
        match kind {
            Container::Array => {
                let (items, value) = self.scratch.array(mark);
                (node(start, end, NodeKind::Array(items)), value)
            }
            Container::Object => {
                let (members, value) = self.scratch.object(mark, &mut self.errors);
                (node(start, end, NodeKind::Object(members)), value)
            }
        }
    }

    /// Reads an array item starting at the cursor and adds it; returns where it ends.
    fn item(&mut self) -> usize {
        let (item, value) = self.value();
        let end = item.span.end as usize;
        self.scratch.push_item(item, value);
        end
    }

    /// Reads a member (`key: value`) starting at the cursor, which is where [`starts_value`]
    /// holds, and adds it; returns where it ends, or `None` when what stood there was no key.
    fn member(&mut self) -> Option<usize> {
        let key_start = self.pos;
        let key = match self.peek() {
            Some(b'"') => {
                let (key, end, _) =
                    lex::string(self.text, key_start, Dialect::Json, &mut self.errors);
                (key, end)
            }
            Some(b'\'') => {
                let (key, end, _) =
                    lex::string(self.text, key_start, Dialect::Json, &mut self.errors);
                self.error(
                    key_start,
                    end,
                    "JSON keys use double quotes; replace the single quotes with '\"'".into(),
                );
                (key, end)
            }
            Some(open @ (b'{' | b'[')) => {
                let open = char::from(open);
                self.error(
                    key_start,
                    key_start + 1,
                    format!("expected a key, found '{open}'; a member is \"key\": value"),
                );
                // Read the value to get past it; it has no key, so it is not in the tree.
                let _ = self.value();
                return None;
            }
            _ => {
                let end = self.word_end(key_start);
                let key = &self.text[key_start..end];
                let quoted = serde_json::to_string(key).unwrap_or_default();
                self.error(key_start, end, format!("JSON keys must be quoted: write {quoted}"));
                (key.to_owned(), end)
            }
        };
        let (key, key_end) = key;
        self.pos = key_end;
        let key_span = lex::span(key_start, key_end);

        self.skip_ws();
        // Where the value's `Error` node goes when there is no value.
        let mut missing_at = key_end;
        let mut reported = false;
        if self.peek() == Some(b':') {
            self.pos += 1;
            missing_at = self.pos;
        } else {
            let (found, found_end) = self.found();
            self.error(
                self.pos,
                found_end.max(self.pos),
                format!("expected ':' after the key, found {found}"),
            );
            reported = true;
        }
        let (value_node, value) = loop {
            self.skip_ws();
            match self.peek() {
                Some(b) if starts_value(b) => break self.value(),
                Some(b) if b == b':' || lex::is_control(b) => {
                    self.junk("a value");
                    reported = true;
                }
                _ => {
                    if !reported {
                        let (found, found_end) = self.found();
                        self.error(
                            self.pos,
                            found_end,
                            format!("expected a value after ':', found {found}"),
                        );
                    }
                    break (node(missing_at, missing_at, NodeKind::Error), Value::Null);
                }
            }
        };
        let end = value_node.span.end as usize;
        self.scratch.push_member(key, key_span, value_node, value);
        Some(end)
    }
}

/// The literal a token seems to be a mistyped or truncated spelling of (`tru`, `True`, `NULL`).
fn literal_typo(word: &str) -> Option<&'static str> {
    let lower = word.to_ascii_lowercase();
    ["true", "false", "null"].into_iter().find(|literal| literal.starts_with(lower.as_str()))
}

//! Lexing shared by the JSON and DUST parsers: quoted strings and their escapes, numbers,
//! members with duplicate keys, the iterative skip of too-deep containers, and the wording of
//! what was found where something else was expected.

use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use super::{Member, Node, NodeKind, Parse, SyntaxError, SyntaxErrorKind};
use crate::text::Span;

/// The notation being read, where the two differ in small lexical ways.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Dialect {
    Json,
    Dust,
}

/// A span from byte offsets. Texts are at most `u32::MAX` bytes (see [`refuse_too_large`]),
/// so the casts never truncate.
pub(super) fn span(start: usize, end: usize) -> Span {
    Span::new(start as u32, end as u32)
}

/// The parse of a text too large for `u32` spans, or `None` when the text can be parsed.
pub(super) fn refuse_too_large(text: &str) -> Option<Parse> {
    (u32::try_from(text.len()).is_err()).then(|| Parse {
        value: Value::Null,
        root: None,
        implicit_object: false,
        comments: Vec::new(),
        errors: vec![SyntaxError {
            span: Span::empty(0),
            message: "the document is larger than 4 GiB; split it into smaller documents".into(),
            kind: SyntaxErrorKind::Syntax,
        }],
    })
}

/// The length of a leading byte order mark, which both notations accept and ignore.
pub(super) fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 }
}

pub(super) fn error(errors: &mut Vec<SyntaxError>, start: usize, end: usize, message: String) {
    errors.push(SyntaxError { span: span(start, end), message, kind: SyntaxErrorKind::Syntax });
}

/// The errors in source order. Some are found after later ones (an unclosed container is
/// reported at its opening bracket once its end is reached), so they are sorted, stably.
pub(super) fn sorted(mut errors: Vec<SyntaxError>) -> Vec<SyntaxError> {
    errors.sort_by_key(|e| e.span.start);
    errors
}

/// The end of the text without its trailing whitespace (the end of its last content).
pub(super) fn trimmed_end(text: &str) -> usize {
    text.trim_end_matches([' ', '\t', '\n', '\r']).len()
}

/// Stacks on which the items and members of the containers being read accumulate. A
/// container notes the stack heights when it opens and takes what lies above them when it
/// closes, so its vectors and map are allocated once, at their final size, instead of growing.
#[derive(Default)]
pub(super) struct Scratch {
    items: Vec<Node>,
    values: Vec<Value>,
    members: Vec<Member>,
    entries: Vec<(String, Value)>,
}

/// The stack heights when a container opened.
#[derive(Clone, Copy)]
pub(super) struct Mark {
    items: usize,
    members: usize,
}

impl Scratch {
    pub(super) fn mark(&self) -> Mark {
        Mark { items: self.items.len(), members: self.members.len() }
    }

    pub(super) fn push_item(&mut self, node: Node, value: Value) {
        self.items.push(node);
        self.values.push(value);
    }

    pub(super) fn push_member(&mut self, key: String, key_span: Span, node: Node, value: Value) {
        self.members.push(Member { key: key_span, value: node, duplicate: false });
        self.entries.push((key, value));
    }

    /// The array of the items pushed since `mark`.
    pub(super) fn array(&mut self, mark: Mark) -> (Vec<Node>, Value) {
        (self.items.split_off(mark.items), Value::Array(self.values.split_off(mark.items)))
    }

    /// The object of the members pushed since `mark`. Of repeated keys the first goes into the
    /// map; later ones stay in the tree as duplicates and are reported at their key.
    pub(super) fn object(
        &mut self,
        mark: Mark,
        errors: &mut Vec<SyntaxError>,
    ) -> (Vec<Member>, Value) {
        let mut members = self.members.split_off(mark.members);
        let mut map = Map::with_capacity(members.len());
        for (member, (key, value)) in members.iter_mut().zip(self.entries.drain(mark.members..)) {
            match map.entry(key) {
                Entry::Vacant(entry) => {
                    entry.insert(value);
                }
                Entry::Occupied(entry) => {
                    member.duplicate = true;
                    errors.push(SyntaxError {
                        span: member.key,
                        message: format!(
                            "duplicate key '{}': keys of an object must be unique; rename or \
                             remove this one",
                            shorten(entry.key())
                        ),
                        kind: SyntaxErrorKind::DuplicateKey,
                    });
                }
            }
        }
        (members, Value::Object(map))
    }
}

/// A node of `kind` spanning `start..end`.
pub(super) fn node(start: usize, end: usize, kind: NodeKind) -> Node {
    Node { span: span(start, end), kind }
}

/// `s` cut to a length that reads well inside a message.
pub(super) fn shorten(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// Describes the token at `pos` for a message ("found ..."), and returns where it ends.
/// `word` tells which bytes continue a word (a bareword in DUST, an unquoted token in JSON).
pub(super) fn found(text: &str, pos: usize, word: &[bool; 256]) -> (String, usize) {
    let bytes = text.as_bytes();
    match bytes.get(pos) {
        None => ("the end of the text".into(), pos),
        Some(b'"' | b'\'') => ("a string".into(), pos + 1),
        Some(&b) if is_control(b) => (format!("control character {}", unicode_name(b)), pos + 1),
        Some(&b) if word[usize::from(b)] => {
            let end = bytes[pos..]
                .iter()
                .position(|&b| !word[usize::from(b)])
                .map_or(bytes.len(), |n| pos + n);
            (format!("'{}'", shorten(&text[pos..end])), end)
        }
        Some(_) => match text[pos..].chars().next() {
            Some(ch) => (format!("'{ch}'"), pos + ch.len_utf8()),
            None => ("the end of the text".into(), pos),
        },
    }
}

/// Whether `b` is a control character: U+0000–U+001F or U+007F.
pub(super) const fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

fn unicode_name(b: u8) -> String {
    format!("U+{b:04X}")
}

/// Reports a container left unclosed (at the end of the text, or where an enclosing
/// container's closer ends it). The error spans its opening bracket, one byte: that says which
/// container it is, where an empty span at the end of the text would not. The container's
/// own span then runs from that bracket to the end of its last content.
pub(super) fn unclosed(errors: &mut Vec<SyntaxError>, open: usize, closer: u8) {
    let message = match closer {
        b']' => "unclosed array; add ']' after its last item",
        _ => "unclosed object; add '}' after its last member",
    };
    error(errors, open, open + 1, message.into());
}

/// Reports a closing bracket that closes nothing, at `pos`.
pub(super) fn unmatched(errors: &mut Vec<SyntaxError>, pos: usize, closer: u8) {
    let (what, opener) = if closer == b']' { ("array", '[') } else { ("object", '{') };
    let closer = closer as char;
    error(
        errors,
        pos,
        pos + 1,
        format!("unmatched '{closer}': no {what} opened with '{opener}' is open here; remove it"),
    );
}

/// Skips the container whose opening bracket is at `start`, which is nested too deeply to be
/// read, without recursion: it counts brackets outside strings (and comments) up to the one
/// that closes it. Reports the nesting, and returns the `Error` node standing for the
/// container and the offset after it.
pub(super) fn skip_too_deep(
    text: &str,
    start: usize,
    dialect: Dialect,
    errors: &mut Vec<SyntaxError>,
) -> (Node, usize) {
    error(
        errors,
        start,
        start + 1,
        format!(
            "too deeply nested: arrays and objects may nest at most {} levels; this value \
             is skipped, flatten the data",
            super::MAX_DEPTH
        ),
    );
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return (node(start, i + 1, NodeKind::Error), i + 1);
                }
            }
            quote @ (b'"' | b'\'') => {
                i = skip_string(bytes, i, quote);
                continue;
            }
            b';' if dialect == Dialect::Dust => {
                i = line_end(bytes, i);
                continue;
            }
            b'/' if dialect == Dialect::Json && !JSON_WORD[usize::from(bytes[i - 1])] => {
                i = match bytes.get(i + 1) {
                    Some(b'/') => line_end(bytes, i),
                    Some(b'*') => block_comment_end(text, i).unwrap_or(bytes.len()),
                    _ => i + 1,
                };
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let end = trimmed_end(text).max(start + 1);
    (node(start, end, NodeKind::Error), bytes.len())
}

/// Bytes that continue an unquoted JSON token (a literal, a number, or a mistaken unquoted
/// string): everything but whitespace, punctuation, quotes and control characters. Every byte
/// of a multi-byte character continues a token, so tokens end on char boundaries. A `/`
/// inside a token is part of it (`http://x`); only one where a token could start begins a
/// comment.
pub(super) static JSON_WORD: [bool; 256] = {
    let mut table = [true; 256];
    let mut b = 0;
    while b < 256 {
        if is_control(b as u8) {
            table[b] = false;
        }
        b += 1;
    }
    let stops = b" \t\n\r{}[],:\"'";
    let mut i = 0;
    while i < stops.len() {
        table[stops[i] as usize] = false;
        i += 1;
    }
    table
};

/// The end of the quoted string starting at `start`, as [`string`] reads it.
fn skip_string(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\n' | b'\r' => return i,
            b'\\' => match bytes.get(i + 1) {
                None | Some(b'\n' | b'\r') => return i + 1,
                Some(_) => i += 2,
            },
            _ if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The offset of the line terminator at or after `from`, or the end of the text.
pub(super) fn line_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..].iter().position(|&b| b == b'\n' || b == b'\r').map_or(bytes.len(), |n| from + n)
}

/// The end of the `/* ... */` comment starting at `start`, if it is terminated.
pub(super) fn block_comment_end(text: &str, start: usize) -> Option<usize> {
    text.get(start + 2..)?.find("*/").map(|n| start + 2 + n + 2)
}

/// Bytes that end the fast scan of a string: quotes, the backslash and control characters.
static STRING_SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b < 0x20
            || b == 0x7f
            || b == b'"' as usize
            || b == b'\'' as usize
            || b == b'\\' as usize;
        b += 1;
    }
    table
};

/// Reads the quoted string whose opening quote is at `start` (either quote character) and
/// returns its decoded content, the offset after it, and whether it was terminated. Never
/// fails: problems are reported to `errors` and the string decoded as well as it can be. An
/// unterminated string ends at the end of its line.
pub(super) fn string(
    text: &str,
    start: usize,
    dialect: Dialect,
    errors: &mut Vec<SyntaxError>,
) -> (String, usize, bool) {
    let bytes = text.as_bytes();
    let quote = bytes[start];
    let mut i = start + 1;
    // The fast path: a string without escapes or control characters is one copy.
    loop {
        while i < bytes.len() && !STRING_SPECIAL[usize::from(bytes[i])] {
            i += 1;
        }
        match bytes.get(i) {
            Some(&b) if b == quote => return (text[start + 1..i].to_owned(), i + 1, true),
            Some(b'"' | b'\'') => i += 1,
            Some(0x7f) if dialect == Dialect::Json => i += 1,
            _ => break,
        }
    }
    let mut out = String::with_capacity(i - start + 16);
    out.push_str(&text[start + 1..i]);
    loop {
        let run = i;
        while i < bytes.len() && !STRING_SPECIAL[usize::from(bytes[i])] {
            i += 1;
        }
        out.push_str(&text[run..i]);
        let Some(&b) = bytes.get(i) else {
            unterminated(errors, start, i, quote);
            return (out, i, false);
        };
        match b {
            _ if b == quote => return (out, i + 1, true),
            b'"' | b'\'' => {
                out.push(char::from(b));
                i += 1;
            }
            b'\n' | b'\r' => {
                unterminated(errors, start, i, quote);
                return (out, i, false);
            }
            b'\\' => match escape(text, i, quote, dialect, &mut out, errors) {
                Some(next) => i = next,
                None => {
                    // A backslash at the end of a line or of the text: the string ends there.
                    unterminated(errors, start, i + 1, quote);
                    return (out, i + 1, false);
                }
            },
            b'\t' if dialect == Dialect::Dust => {
                out.push('\t');
                i += 1;
            }
            0x7f if dialect == Dialect::Json => {
                out.push('\u{7f}');
                i += 1;
            }
            _ => {
                let hint = match b {
                    b'\t' => "\\t".to_owned(),
                    _ => format!("\\u{b:04x}"),
                };
                let notation = if dialect == Dialect::Json { "JSON" } else { "DUST" };
                error(
                    errors,
                    i,
                    i + 1,
                    format!(
                        "control character {} is not allowed in a {notation} string; write \
                         '{hint}' instead",
                        unicode_name(b)
                    ),
                );
                out.push(char::from(b));
                i += 1;
            }
        }
    }
}

fn unterminated(errors: &mut Vec<SyntaxError>, start: usize, end: usize, quote: u8) {
    let quote = if quote == b'\'' { "\"'\"" } else { "'\"'" };
    error(errors, start, end, format!("unterminated string: add the closing {quote}"));
}

/// Decodes the escape whose backslash is at `at` into `out`; returns the offset after it, or
/// `None` when the backslash ends a line or the text.
fn escape(
    text: &str,
    at: usize,
    quote: u8,
    dialect: Dialect,
    out: &mut String,
    errors: &mut Vec<SyntaxError>,
) -> Option<usize> {
    let bytes = text.as_bytes();
    let decoded = match *bytes.get(at + 1)? {
        b'\n' | b'\r' => return None,
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        // `\'` is DUST's; in a (wrongly) single-quoted JSON string it is read too.
        b'\'' if dialect == Dialect::Dust || quote == b'\'' => '\'',
        b'u' => return Some(unicode_escape(text, at, out, errors)),
        _ => {
            let ch = text[at + 1..].chars().next()?;
            let shown =
                if ch.is_control() { format!("U+{:04X}", u32::from(ch)) } else { ch.into() };
            error(
                errors,
                at,
                at + 1 + ch.len_utf8(),
                format!("invalid escape '\\{shown}'; write '\\\\' for a backslash"),
            );
            out.push(ch);
            return Some(at + 1 + ch.len_utf8());
        }
    };
    out.push(decoded);
    Some(at + 2)
}

/// The four hex digits at `at`, if they are there.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let mut n = 0u16;
    for &d in digits {
        n = n * 16 + char::from(d).to_digit(16)? as u16;
    }
    Some(n)
}

/// Decodes the `\uXXXX` escape (or surrogate pair) whose backslash is at `at`; returns the
/// offset after it. A lone surrogate or a malformed escape decodes as U+FFFD.
fn unicode_escape(text: &str, at: usize, out: &mut String, errors: &mut Vec<SyntaxError>) -> usize {
    let bytes = text.as_bytes();
    let Some(unit) = hex4(bytes, at + 2) else {
        let digits = bytes[at + 2..].iter().take(4).take_while(|b| b.is_ascii_hexdigit()).count();
        let end = at + 2 + digits;
        error(
            errors,
            at,
            end,
            format!("invalid escape '{}': '\\u' takes 4 hex digits", &text[at..end]),
        );
        out.push(char::REPLACEMENT_CHARACTER);
        return end;
    };
    let end = at + 6;
    match unit {
        0xd800..=0xdbff => {
            let low = match bytes.get(end..end + 2) {
                Some(b"\\u") => hex4(bytes, end + 2).filter(|u| (0xdc00..=0xdfff).contains(u)),
                _ => None,
            };
            if let Some(low) = low {
                let code = 0x10000 + ((u32::from(unit) - 0xd800) << 10) + (u32::from(low) - 0xdc00);
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                return end + 6;
            }
            lone_surrogate(text, at, errors, "a high surrogate must be followed by a low one");
        }
        0xdc00..=0xdfff => {
            lone_surrogate(text, at, errors, "a low surrogate must follow a high one");
        }
        _ => out.push(char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)),
    }
    if (0xd800..=0xdfff).contains(&unit) {
        out.push(char::REPLACEMENT_CHARACTER);
    }
    end
}

fn lone_surrogate(text: &str, at: usize, errors: &mut Vec<SyntaxError>, rule: &str) {
    error(
        errors,
        at,
        at + 6,
        format!(
            "lone surrogate '{}' is not a character ({rule}); write the character itself",
            &text[at..at + 6]
        ),
    );
}

/// The end of the JSON number (RFC 8259: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`)
/// starting at `start`, and whether it is an integer; `None` when none starts there.
pub(super) fn number_end(bytes: &[u8], start: usize) -> Option<(usize, bool)> {
    let digits = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut i = start;
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(i + 1),
        _ => return None,
    }
    let mut integer = true;
    if bytes.get(i) == Some(&b'.') {
        integer = false;
        if !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        i = digits(i + 1);
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        integer = false;
        i += 1;
        if let Some(b'+' | b'-') = bytes.get(i) {
            i += 1;
        }
        if !bytes.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        i = digits(i);
    }
    Some((i, integer))
}

/// The value of a number token as `serde_json` reads it: an integer that fits `i64` or `u64`
/// is one (except `-0`, which is the float `-0.0`), anything else an `f64`. `None` when the
/// `f64` is infinite. Tokens need not be in JSON's grammar (leading zeros, `+`, `.5` and `1.`
/// are read too), but must consist of digits, signs, `.` and exponents only.
pub(super) fn number_value(token: &str, integer: bool) -> Option<Value> {
    if integer {
        if token.starts_with('-') {
            if let Ok(n) = token.parse::<i64>() {
                return Some(if n == 0 { float(-0.0)? } else { Value::from(n) });
            }
        } else if let Ok(n) = token.parse::<u64>() {
            return Some(Value::from(n));
        }
    }
    token.parse::<f64>().ok().and_then(float)
}

fn float(f: f64) -> Option<Value> {
    Number::from_f64(f).filter(|_| f.is_finite()).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        for token in [
            "0",
            "-0",
            "1",
            "-1",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901234567890",
            "1.5",
            "-0.0",
            "1e10",
            "1E-10",
            "2.5e+3",
            "1e308",
            "4.9e-324",
            "1e-400",
        ] {
            let (end, integer) = number_end(token.as_bytes(), 0).unwrap();
            assert_eq!(end, token.len(), "{token}");
            let expected: Value = serde_json::from_str(token).unwrap();
            let actual = number_value(token, integer).unwrap();
            assert_eq!(actual, expected, "{token}");
            assert_eq!(actual.to_string(), expected.to_string(), "{token}");
        }
    }

    #[test]
    fn number_grammar_is_strict() {
        for bad in ["-", "+1", ".5", "1.", "1e", "1e+", "-.5", "x"] {
            assert_eq!(number_end(bad.as_bytes(), 0).map(|(e, _)| e == bad.len()), None, "{bad}");
        }
        // A number followed by more digits after a leading zero ends after the zero.
        assert_eq!(number_end(b"0123", 0), Some((1, true)));
        assert_eq!(number_value("1e400", false), None);
        assert_eq!(number_value("-1e400", false), None);
    }

    #[test]
    fn strings_decode_escapes_and_report_problems() {
        let decode = |text: &str, dialect| {
            let mut errors = Vec::new();
            let (s, end, _) = string(text, 0, dialect, &mut errors);
            (s, end, errors.into_iter().map(|e| e.message).collect::<Vec<_>>())
        };
        assert_eq!(decode(r#""plain" x"#, Dialect::Json), ("plain".into(), 7, vec![]));
        assert_eq!(
            decode(r#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud834\udd1e""#, Dialect::Json),
            ("a\"b\\c/d\u{8}\u{c}\n\r\té𝄞".into(), 40, vec![])
        );
        assert_eq!(decode(r"'it\'s'", Dialect::Dust), ("it's".into(), 7, vec![]));
        assert_eq!(decode("'a\tb'", Dialect::Dust), ("a\tb".into(), 5, vec![]));
        let (s, end, errors) = decode(r#""\ud800x\q""#, Dialect::Json);
        assert_eq!((s.as_str(), end), ("\u{fffd}xq", 11));
        assert_eq!(errors.len(), 2, "{errors:?}");
        let (s, end, errors) = decode("\"abc\ndef\"", Dialect::Json);
        assert_eq!((s.as_str(), end), ("abc", 4));
        assert_eq!(errors, vec!["unterminated string: add the closing '\"'".to_owned()]);
    }
}

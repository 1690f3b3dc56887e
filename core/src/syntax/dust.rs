//! The tolerant DUST parser (SPEC §4): a text is one `{...}` or `[...]` value, or else the
//! members of an implicit top-level object. Mistakes (unclosed or stray brackets, keys without
//! a value, a JSON-style `:` after a key) are reported and read past.

use serde_json::Value;

use super::lex::{self, Dialect, node};
use super::{MAX_DEPTH, Member, Node, NodeKind, Parse, SyntaxError};
use crate::text::Span;

/// How a byte reads inside a bareword.
const END: u8 = 0;
const PLAIN: u8 = 1;
/// A control character: part of the bareword (so the text reads as the grammar says) but an
/// error.
const CONTROL: u8 = 2;

/// The class of every byte in a bareword: whitespace, commas, brackets, quotes and `;` end it.
/// Every byte of a multi-byte character continues it, so barewords end on char boundaries.
static BARE: [u8; 256] = {
    let mut table = [PLAIN; 256];
    let mut b = 0;
    while b < 256 {
        if lex::is_control(b as u8) {
            table[b] = CONTROL;
        }
        b += 1;
    }
    let stops = b" \t\n\r,{}[]'\";";
    let mut i = 0;
    while i < stops.len() {
        table[stops[i] as usize] = END;
        i += 1;
    }
    table
};

/// [`BARE`] as the set of bytes that continue a bareword, for [`lex::found`].
static BARE_SET: [bool; 256] = {
    let mut set = [false; 256];
    let mut b = 0;
    while b < 256 {
        set[b] = BARE[b] != END;
        b += 1;
    }
    set
};

/// Parses `text` as DUST. Never fails: the result holds what could be read and every error.
pub fn parse_dust(text: &str) -> Parse {
    if let Some(parse) = lex::refuse_too_large(text) {
        return parse;
    }
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: lex::bom_len(text),
        errors: Vec::new(),
        comments: Vec::new(),
        open: Vec::new(),
        scratch: lex::Scratch::default(),
    };
    p.skip_trivia();
    let (root, value, implicit_object) = if let Some(b'{' | b'[') = p.peek() {
        let (root, value) = p.value();
        p.after_root();
        (root, value, false)
    } else {
        // The implicit object counts as one level of nesting, as its value does.
        p.open.push(IMPLICIT);
        let (members, value, _) = p.members(0, false);
        let span = match (members.first(), members.last()) {
            (Some(first), Some(last)) => Span::new(first.key.start, last.value.span.end),
            _ => Span::empty(0),
        };
        (Node { span, kind: NodeKind::Object(members) }, value, true)
    };
    Parse {
        value,
        root: Some(root),
        implicit_object,
        comments: p.comments,
        errors: lex::sorted(p.errors),
    }
}

/// The entry of the implicit top-level object on the stack of open containers: it is closed
/// by no bracket.
const IMPLICIT: u8 = 0;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    errors: Vec<SyntaxError>,
    comments: Vec<Span>,
    /// The closers of the containers being read, innermost last; its length is the depth.
    open: Vec<u8>,
    scratch: lex::Scratch,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn error(&mut self, start: usize, end: usize, message: String) {
        lex::error(&mut self.errors, start, end, message);
    }

    fn unmatched(&mut self, closer: u8) {
        lex::unmatched(&mut self.errors, self.pos, closer);
        self.pos += 1;
    }

    /// Skips whitespace, commas and comments, recording the comments.
    fn skip_trivia(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | b',' => self.pos += 1,
                b';' => {
                    let end = lex::line_end(self.bytes, self.pos);
                    self.comments.push(lex::span(self.pos, end));
                    self.pos = end;
                }
                _ => return,
            }
        }
    }

    /// After an explicit top-level `{...}` or `[...]`: only trivia may follow.
    fn after_root(&mut self) {
        loop {
            self.skip_trivia();
            match self.peek() {
                None => return,
                Some(c @ (b'}' | b']')) => self.unmatched(c),
                Some(_) => {
                    let (found, _) = lex::found(self.text, self.pos, &BARE_SET);
                    let end = lex::trimmed_end(self.text).max(self.pos + 1);
                    self.error(
                        self.pos,
                        end,
                        format!(
                            "expected the end of the text after the top-level value, found \
                             {found}; a DUST text is one '{{...}}' or '[...]', or members \
                             without braces"
                        ),
                    );
                    self.pos = self.bytes.len();
                    return;
                }
            }
        }
    }

    /// Whether the container being read ends at `closer`, here or in an enclosing container.
    fn closes_open(&self, closer: u8) -> bool {
        self.open.contains(&closer)
    }

    /// The end of the bareword starting at the cursor; reports its control characters.
    fn bareword_end(&mut self) -> usize {
        let mut i = self.pos;
        loop {
            match self.bytes.get(i).map(|&b| BARE[usize::from(b)]) {
                Some(PLAIN) => i += 1,
                Some(CONTROL) => {
                    let b = self.bytes[i];
                    self.error(
                        i,
                        i + 1,
                        format!(
                            "control character U+{b:04X} is not allowed in a bareword; remove \
                             it, or quote the string and write '\\u{b:04x}'"
                        ),
                    );
                    i += 1;
                }
                _ => return i,
            }
        }
    }

    /// Reads the value at the cursor, which must be a byte that begins one (not trivia, not a
    /// closing bracket).
    fn value(&mut self) -> (Node, Value) {
        let start = self.pos;
        match self.peek() {
            Some(b'{' | b'[') if self.open.len() >= MAX_DEPTH => {
                let (node, end) =
                    lex::skip_too_deep(self.text, start, Dialect::Dust, &mut self.errors);
                self.pos = end;
                (node, Value::Null)
            }
            Some(b'{') => {
                self.open.push(b'}');
                let (members, value, end) = self.members(start, true);
                self.open.pop();
                (node(start, end, NodeKind::Object(members)), value)
            }
            Some(b'[') => self.array(),
            Some(b'\'' | b'"') => {
                let (s, end, _) = lex::string(self.text, start, Dialect::Dust, &mut self.errors);
                self.pos = end;
                (node(start, end, NodeKind::String { quoted: true }), Value::String(s))
            }
            _ => self.bareword(),
        }
    }

    /// A bareword: the number it spells if it is a JSON number, a literal, or else a string.
    fn bareword(&mut self) -> (Node, Value) {
        let start = self.pos;
        let end = self.bareword_end();
        self.pos = end;
        let word = &self.text[start..end];
        match word {
            "true" => return (node(start, end, NodeKind::Bool), Value::Bool(true)),
            "false" => return (node(start, end, NodeKind::Bool), Value::Bool(false)),
            "null" => return (node(start, end, NodeKind::Null), Value::Null),
            _ => {}
        }
        if let Some((number_end, integer)) = lex::number_end(self.bytes, start)
            && number_end == end
        {
            return match lex::number_value(word, integer) {
                Some(value) => (node(start, end, NodeKind::Number), value),
                None => {
                    let shown = lex::shorten(word);
                    self.error(
                        start,
                        end,
                        format!(
                            "number {shown} is out of range for a 64-bit float; quote it to \
                             keep it as a string"
                        ),
                    );
                    (node(start, end, NodeKind::Error), Value::Null)
                }
            };
        }
        (node(start, end, NodeKind::String { quoted: false }), Value::String(word.to_owned()))
    }

    fn array(&mut self) -> (Node, Value) {
        let start = self.pos;
        self.open.push(b']');
        self.pos += 1;
        let mark = self.scratch.mark();
        let mut end = start + 1;
        loop {
            self.skip_trivia();
            match self.peek() {
                None => {
                    lex::unclosed(&mut self.errors, start, b']');
                    break;
                }
                Some(b']') => {
                    self.pos += 1;
                    end = self.pos;
                    break;
                }
                Some(b'}') if self.closes_open(b'}') => {
                    lex::unclosed(&mut self.errors, start, b']');
                    break;
                }
                Some(b'}') => self.unmatched(b'}'),
                Some(_) => {
                    let (item, value) = self.value();
                    end = item.span.end as usize;
                    self.scratch.push_item(item, value);
                }
            }
        }
        self.open.pop();
        let (items, value) = self.scratch.array(mark);
        (node(start, end, NodeKind::Array(items)), value)
    }

    /// Reads members up to the closing brace of the object opened at `start` (`explicit`), or
    /// to the end of the text (the implicit top-level object). Returns the members, the
    /// object's value, and its end: the closing brace or else the end of its last member.
    fn members(&mut self, start: usize, explicit: bool) -> (Vec<Member>, Value, usize) {
        if explicit {
            self.pos += 1;
        }
        let mark = self.scratch.mark();
        let mut end = start + 1;
        loop {
            self.skip_trivia();
            let Some(b) = self.peek() else {
                if explicit {
                    lex::unclosed(&mut self.errors, start, b'}');
                }
                break;
            };
            match b {
                b'}' if explicit => {
                    self.pos += 1;
                    end = self.pos;
                    break;
                }
                b'}' | b']' if self.closes_open(b) => {
                    // An enclosing container ends here, so this object is unclosed.
                    lex::unclosed(&mut self.errors, start, b'}');
                    break;
                }
                b'}' | b']' => self.unmatched(b),
                b'{' | b'[' => {
                    let (found, _) = lex::found(self.text, self.pos, &BARE_SET);
                    self.error(
                        self.pos,
                        self.pos + 1,
                        format!(
                            "expected a key, found {found}; a member is a key followed by its \
                             value"
                        ),
                    );
                    // Read the value to get past it; it has no key, so it is not in the tree.
                    let _ = self.value();
                }
                _ => end = self.member(),
            }
        }
        let (members, value) = self.scratch.object(mark, &mut self.errors);
        (members, value, end)
    }

    /// Reads a member whose key starts at the cursor and adds it; returns where it ends.
    fn member(&mut self) -> usize {
        let key_start = self.pos;
        let quoted = matches!(self.peek(), Some(b'\'' | b'"'));
        let (key, key_end) = if quoted {
            let (key, end, _) = lex::string(self.text, key_start, Dialect::Dust, &mut self.errors);
            self.pos = end;
            (key, end)
        } else {
            // SPEC §4: `:` and `=` are bareword characters, so `title:` is the key "title:"
            // (a schema then reports it as an unknown property).
            let end = self.bareword_end();
            self.pos = end;
            (self.text[key_start..end].to_owned(), end)
        };
        let key_span = lex::span(key_start, key_end);
        let (value_node, value) = loop {
            self.skip_trivia();
            match self.peek() {
                Some(c @ (b'}' | b']')) if !self.closes_open(c) => self.unmatched(c),
                None | Some(b'}' | b']') => {
                    let shown = lex::shorten(&key);
                    self.error(
                        key_start,
                        key_end,
                        format!("key '{shown}' has no value; add one or remove the key"),
                    );
                    break (node(key_end, key_end, NodeKind::Error), Value::Null);
                }
                Some(_) => break self.value(),
            }
        };
        let end = value_node.span.end as usize;
        self.scratch.push_member(key, key_span, value_node, value);
        end
    }
}

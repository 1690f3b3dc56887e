//! Byte spans and the conversion between byte offsets and (line, column) positions.
//!
//! Every range inside the core is a byte [`Span`] into one document's text. Lines and columns
//! exist only at the edges (the CLI, LSP, MCP), computed through a [`LineIndex`] in the
//! encoding the client speaks. `\n`, `\r\n` and a lone `\r` each end a line, as in LSP.

use std::fmt;

pub mod diff;
pub mod merge;

/// A half-open byte range `start..end` into a document's text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    /// An empty span at `offset`.
    pub const fn empty(offset: u32) -> Span {
        Span { start: offset, end: offset }
    }

    pub fn from_range(range: std::ops::Range<usize>) -> Span {
        Span { start: to_u32(range.start), end: to_u32(range.end) }
    }

    pub fn len(self) -> u32 {
        self.end - self.start
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// Whether `offset` lies inside the span or touches its end (a cursor right after a value
    /// still belongs to it).
    pub fn contains_inclusive(self, offset: u32) -> bool {
        self.start <= offset && offset <= self.end
    }

    pub fn cover(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// Offsets are `u32`: a document larger than 4 GiB is refused before it is parsed.
pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).expect("documents larger than 4 GiB are refused before parsing")
}

/// How a client counts columns.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Encoding {
    /// Bytes of UTF-8.
    Utf8,
    /// UTF-16 code units (the LSP default).
    #[default]
    Utf16,
    /// Unicode scalar values ("characters"; what the CLI and MCP use).
    Utf32,
}

/// A zero-based line and a zero-based column counted in some [`Encoding`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

/// Line starts of one text, for offset <-> position conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset where each line starts; `line_starts[0] == 0`.
    line_starts: Vec<u32>,
    /// Whether the text is pure ASCII, in which case every encoding counts bytes.
    ascii: bool,
    len: u32,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => line_starts.push(to_u32(i + 1)),
                b'\r' => {
                    if bytes.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    line_starts.push(to_u32(i + 1));
                }
                _ => {}
            }
            i += 1;
        }
        LineIndex { line_starts, ascii: text.is_ascii(), len: to_u32(text.len()) }
    }

    /// Update the index to `text`, which differs from the indexed text only in the bytes
    /// `start..old_end` of the old text (now `start..old_end + delta`).
    pub fn splice(&mut self, text: &str, start: usize, old_end: usize, delta: i64) {
        let bytes = text.as_bytes();
        let new_end = usize::try_from(old_end as i64 + delta).expect("the edit lies in the text");
        // A line starts at `q` when byte `q - 1` ends a line, which looks at bytes `q - 1` and
        // `q` (for `\r\n`): starts before `start` and after `old_end` keep their bytes.
        let keep = self.line_starts.partition_point(|&q| (q as usize) < start.max(1));
        let tail = self.line_starts.partition_point(|&q| (q as usize) <= old_end);
        let mut middle = Vec::new();
        for i in start.max(1) - 1..new_end.min(bytes.len()) {
            let ends = match bytes[i] {
                b'\n' => true,
                b'\r' => bytes.get(i + 1) != Some(&b'\n'),
                _ => false,
            };
            if ends && i + 1 >= start.max(1) {
                middle.push(to_u32(i + 1));
            }
        }
        let moved: Vec<u32> = self.line_starts[tail..]
            .iter()
            .map(|&q| to_u32((i64::from(q) + delta) as usize))
            .collect();
        self.line_starts.truncate(keep);
        self.line_starts.extend(middle);
        self.line_starts.extend(moved);
        self.ascii = if self.ascii { bytes[start..new_end].is_ascii() } else { text.is_ascii() };
        self.len = to_u32(text.len());
    }

    pub fn line_count(&self) -> u32 {
        to_u32(self.line_starts.len())
    }

    /// The span of line `line` without its terminator.
    pub fn line_span(&self, text: &str, line: u32) -> Option<Span> {
        let start = *self.line_starts.get(line as usize)?;
        let next = self.line_starts.get(line as usize + 1).copied().unwrap_or(self.len);
        let mut end = next;
        let bytes = text.as_bytes();
        while end > start && matches!(bytes[end as usize - 1], b'\n' | b'\r') {
            end -= 1;
        }
        Some(Span::new(start, end))
    }

    /// The position of byte `offset`. An offset inside a multi-byte character or a `\r\n`
    /// is moved back to the character's start; an offset past the end is clamped.
    pub fn position(&self, text: &str, offset: u32, encoding: Encoding) -> Position {
        let offset = offset.min(self.len);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        };
        let start = self.line_starts[line];
        let column = if self.ascii || encoding == Encoding::Utf8 {
            offset - start
        } else {
            let mut end = offset as usize;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            count_units(&text[start as usize..end], encoding)
        };
        Position { line: to_u32(line), column }
    }

    /// The byte offset of `position`, or `None` when the line does not exist or the column
    /// lies past the end of the line or inside a character.
    pub fn offset(&self, text: &str, position: Position, encoding: Encoding) -> Option<u32> {
        let span = self.line_span(text, position.line)?;
        let line = &text[span.range()];
        if self.ascii || encoding == Encoding::Utf8 {
            let offset = span.start.checked_add(position.column)?;
            return (offset <= span.end && text.is_char_boundary(offset as usize))
                .then_some(offset);
        }
        let mut units = 0u32;
        for (i, ch) in line.char_indices() {
            if units == position.column {
                return Some(span.start + to_u32(i));
            }
            if units > position.column {
                return None;
            }
            units += unit_len(ch, encoding);
        }
        (units == position.column).then_some(span.end)
    }
}

fn unit_len(ch: char, encoding: Encoding) -> u32 {
    match encoding {
        Encoding::Utf8 => to_u32(ch.len_utf8()),
        Encoding::Utf16 => to_u32(ch.len_utf16()),
        Encoding::Utf32 => 1,
    }
}

pub(crate) fn count_units(s: &str, encoding: Encoding) -> u32 {
    match encoding {
        Encoding::Utf8 => to_u32(s.len()),
        Encoding::Utf16 => to_u32(s.encode_utf16().count()),
        Encoding::Utf32 => to_u32(s.chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip_all(text: &str) {
        let index = LineIndex::new(text);
        for enc in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            for (offset, _) in text.char_indices().chain([(text.len(), ' ')]) {
                let offset = to_u32(offset);
                let pos = index.position(text, offset, enc);
                let back = index.offset(text, pos, enc);
                // Offsets inside a line terminator map to the end of that line.
                let on_terminator = matches!(text.as_bytes().get(offset as usize), Some(b'\n'))
                    && offset > 0
                    && text.as_bytes()[offset as usize - 1] == b'\r';
                if !on_terminator {
                    assert_eq!(back, Some(offset), "{enc:?} {text:?} at {offset} -> {pos:?}");
                }
            }
        }
    }

    #[test]
    fn columns_in_every_encoding() {
        let text = "a😀b\r\nxé\rz\n";
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 4);
        let b = text.find('b').unwrap() as u32;
        assert_eq!(index.position(text, b, Encoding::Utf8), Position { line: 0, column: 5 });
        assert_eq!(index.position(text, b, Encoding::Utf16), Position { line: 0, column: 3 });
        assert_eq!(index.position(text, b, Encoding::Utf32), Position { line: 0, column: 2 });
        let z = text.find('z').unwrap() as u32;
        assert_eq!(index.position(text, z, Encoding::Utf32), Position { line: 2, column: 0 });
        let x = text.find('x').unwrap() as u32;
        assert_eq!(index.position(text, x, Encoding::Utf16), Position { line: 1, column: 0 });
        roundtrip_all(text);
        roundtrip_all("");
        roundtrip_all("\n\n");
        roundtrip_all("\u{feff}{\"a\": \"𝄞\"}\r\n");
    }

    #[test]
    fn out_of_range_positions_are_refused() {
        let text = "ab\ncd";
        let index = LineIndex::new(text);
        assert_eq!(index.offset(text, Position { line: 0, column: 3 }, Encoding::Utf16), None);
        assert_eq!(index.offset(text, Position { line: 5, column: 0 }, Encoding::Utf16), None);
        assert_eq!(index.offset(text, Position { line: 1, column: 2 }, Encoding::Utf16), Some(5));
        // The middle of a surrogate pair is not a position.
        let text = "😀";
        let index = LineIndex::new(text);
        assert_eq!(index.offset(text, Position { line: 0, column: 1 }, Encoding::Utf16), None);
        assert_eq!(index.offset(text, Position { line: 0, column: 2 }, Encoding::Utf16), Some(4));
    }
}

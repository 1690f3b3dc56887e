//! Range formatting (DUST and JSON) and on-type formatting (DUST's top-level value column).
//!
//! Range formatting brings what lies inside a range to the document's canonical text and
//! touches nothing outside it: the canonical text is diffed against the document (lines
//! first, then characters inside a changed run of lines) into small edits, the edits that lie
//! wholly inside the range are kept, and the result is checked: it must parse without error
//! to the same value, else nothing is edited (declined, never a broken document). Inside the
//! range that re-aligns values to the document's column, re-quotes strings and re-flows
//! containers the formatter would; outside it every byte stays.
//!
//! On-type formatting moves only the whitespace between a top-level key and its value, so it
//! works on a half-typed document too.

use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, capture_diff_slices, capture_diff_slices_deadline};

use crate::edit::{TextEdit, apply};
use crate::format::{self, FormatError};
use crate::syntax::{self, Lang, NodeKind, Parse};
use crate::text::Span;

/// A character diff inside one changed run of lines gives up after this long and edits the
/// run whole; only a run of many thousands of lines comes near it.
const CHAR_DIFF_BUDGET: Duration = Duration::from_millis(250);

/// The edits that make the part of `text` (in `lang`) inside `range` canonical, each wholly
/// inside `range`, in text order. Empty when that part is canonical already, or when no set
/// of edits inside the range keeps the document's value (a range that cuts a change in two).
/// A text with syntax errors is refused, as whole-document formatting refuses it.
pub fn format_range(text: &str, lang: Lang, range: Span) -> Result<Vec<TextEdit>, FormatError> {
    let canonical = format::format(text, lang)?;
    if canonical == text {
        return Ok(Vec::new());
    }
    let edits: Vec<TextEdit> = diff_edits(text, &canonical)
        .into_iter()
        .filter(|e| range.start <= e.span.start && e.span.end <= range.end)
        .collect();
    if edits.is_empty() {
        return Ok(edits);
    }
    let before = syntax::parse(text, lang);
    let after = syntax::parse(&apply(text, &edits), lang);
    if after.is_clean() && after.value == before.value { Ok(edits) } else { Ok(Vec::new()) }
}

/// Edits turning `old` into `new`, small and in order: changed runs of lines, each cut down to
/// the characters that differ.
pub(crate) fn diff_edits(old: &str, new: &str) -> Vec<TextEdit> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let offsets = |lines: &[&str]| {
        let mut at = vec![0usize];
        for l in lines {
            at.push(at.last().copied().unwrap_or(0) + l.len());
        }
        at
    };
    let (old_at, new_at) = (offsets(&old_lines), offsets(&new_lines));
    let mut out = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines) {
        if let DiffOp::Equal { .. } = op {
            continue;
        }
        let (o, n) = (op.old_range(), op.new_range());
        let old_run = old_at[o.start]..old_at[o.end];
        let new_run = &new[new_at[n.start]..new_at[n.end]];
        if o.len() == n.len() {
            // Line for line (a re-aligned member): one small edit a line.
            for (i, j) in o.clone().zip(n.clone()) {
                let line = old_at[i]..old_at[i + 1];
                char_edits(old, line, &new[new_at[j]..new_at[j + 1]], &mut out);
            }
        } else {
            char_edits(old, old_run, new_run, &mut out);
        }
    }
    out
}

/// The edits turning `old[run]` into `new_run`, by characters.
fn char_edits(old: &str, run: std::ops::Range<usize>, new_run: &str, out: &mut Vec<TextEdit>) {
    let base = run.start;
    let old_run = &old[run];
    let old_chars: Vec<(usize, char)> = old_run.char_indices().collect();
    let new_chars: Vec<(usize, char)> = new_run.char_indices().collect();
    let (a, b): (Vec<char>, Vec<char>) =
        (old_chars.iter().map(|c| c.1).collect(), new_chars.iter().map(|c| c.1).collect());
    let byte = |chars: &[(usize, char)], len: usize, i: usize| chars.get(i).map_or(len, |c| c.0);
    let deadline = Instant::now() + CHAR_DIFF_BUDGET;
    let ops = capture_diff_slices_deadline(Algorithm::Myers, &a, &b, Some(deadline));
    for op in ops {
        if let DiffOp::Equal { .. } = op {
            continue;
        }
        let (o, n) = (op.old_range(), op.new_range());
        let start = base + byte(&old_chars, old_run.len(), o.start);
        let end = base + byte(&old_chars, old_run.len(), o.end);
        let text = &new_run
            [byte(&new_chars, new_run.len(), n.start)..byte(&new_chars, new_run.len(), n.end)];
        // Adjacent changes (a delete then an insert) become one replacement.
        match out.last_mut() {
            Some(last) if last.span.end as usize == start => {
                last.span.end = end as u32;
                last.text.push_str(text);
            }
            _ => out.push(TextEdit {
                span: Span::new(start as u32, end as u32),
                text: text.to_owned(),
            }),
        }
    }
}

/// The edits that put every top-level value of a DUST document in one column, the
/// formatter's: the widest key plus the formatter's gap ([`format::value_column`]). Only the
/// blanks between a key and a value on the same line are rewritten, so a document being typed
/// (with syntax errors) is aligned as far as it reads, and nothing else moves. Keys are
/// measured as written. JSON and a DUST document that is one `{...}` or `[...]` get none.
pub fn align_values(text: &str, lang: Lang, parse: &Parse) -> Vec<TextEdit> {
    if lang != Lang::Dust || !parse.implicit_object {
        return Vec::new();
    }
    let Some(NodeKind::Object(members)) = parse.root.as_ref().map(|r| &r.kind) else {
        return Vec::new();
    };
    let width = |span: Span| text[span.range()].chars().count();
    // The members whose value starts on the key's line, after blanks only.
    let aligned: Vec<(Span, Span)> = members
        .iter()
        .filter(|m| !matches!(m.value.kind, NodeKind::Error) && m.value.span.start > m.key.end)
        .map(|m| (m.key, Span::new(m.key.end, m.value.span.start)))
        .filter(|(_, gap)| text[gap.range()].bytes().all(|b| b == b' ' || b == b'\t'))
        .collect();
    let Some(widest) = aligned.iter().map(|(key, _)| width(*key)).max() else {
        return Vec::new();
    };
    let column = format::value_column(widest);
    aligned
        .into_iter()
        .filter_map(|(key, gap)| {
            let want = " ".repeat(column - width(key));
            (text[gap.range()] != want).then_some(TextEdit { span: gap, text: want })
        })
        .collect()
}

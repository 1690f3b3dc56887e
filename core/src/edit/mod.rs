//! Minimal text edits: rewrite a document so that it holds a new value, touching only what changed.
//!
//! Mutations work on values (simple to get right); this module turns "the document's value
//! becomes `new`" into edits of the original text. Unchanged values keep their exact text,
//! comments, key order and alignment; a changed scalar is replaced in place; a removed member
//! or item is cut with its separator; a new member is appended after the last kept one in the
//! style around it (JSON indentation and commas, DUST column alignment). Whatever cannot be
//! matched (a container whose kind changed, an array reordered) is rewritten as a whole value.
//!
//! In JSONC a comment stays with what it is written beside: a removed element takes its comma
//! and the comment after it on its line, and leaves the comments on the lines before it; a
//! new element goes after the comment that ends its anchor's line; a container keeps or
//! leaves out its trailing comma as it was written.
//!
//! Invariant (checked by a property test): `parse(rewrite(text, new)).value == new` for any
//! text without syntax errors.

use serde_json::Value;

use crate::format;
use crate::syntax::{Lang, Member, Node, NodeKind, Parse};
use crate::text::Span;

/// Replace `span` of a text with `text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub span: Span,
    pub text: String,
}

/// Apply non-overlapping edits to `text`. Edits are applied in span order; insertions at the
/// same offset keep their given order.
pub fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.span.start, e.span.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    for edit in sorted {
        let (start, end) = (edit.span.start as usize, edit.span.end as usize);
        debug_assert!(start >= at, "overlapping edits");
        let start = start.max(at);
        out.push_str(&text[at..start]);
        out.push_str(&edit.text);
        at = end.max(start);
    }
    out.push_str(&text[at..]);
    out
}

/// The text of a document in `lang` that holds `new`, edited minimally from `text` (whose
/// parse is `parse`). A text without a value is written canonically.
pub fn rewrite(text: &str, parse: &Parse, lang: Lang, new: &Value) -> String {
    apply(text, &edits(text, parse, lang, new))
}

/// The edits [`rewrite`] applies, non-overlapping, for fronts that send edits (an LSP
/// `WorkspaceEdit`) rather than whole texts.
pub fn edits(text: &str, parse: &Parse, lang: Lang, new: &Value) -> Vec<TextEdit> {
    let whole =
        || vec![TextEdit { span: Span::new(0, text.len() as u32), text: canonical(new, lang) }];
    let Some(root) = &parse.root else { return whole() };
    if parse.implicit_object && !new.is_object() {
        return whole();
    }
    let mut differ = Differ { text, lang, edits: Vec::new() };
    if parse.implicit_object {
        differ.object(root, &parse.value, new, true);
    } else {
        differ.value(root, &parse.value, new);
    }
    differ.edits.sort_by_key(|e| (e.span.start, e.span.end));
    differ.edits
}

/// A value written as a whole new document.
pub fn canonical(value: &Value, lang: Lang) -> String {
    match lang {
        Lang::Json | Lang::Jsonc => format::value_to_json(value),
        Lang::Dust => format::value_to_dust(value).unwrap_or_else(|_| format::value_to_json(value)),
    }
}

struct Differ<'a> {
    text: &'a str,
    lang: Lang,
    edits: Vec<TextEdit>,
}

/// One member or item of a container: where it starts and ends, and its new fate.
struct Part {
    start: u32,
    end: u32,
    removed: bool,
}

impl Differ<'_> {
    fn value(&mut self, node: &Node, old: &Value, new: &Value) {
        if old == new && !matches!(node.kind, NodeKind::Error) {
            return;
        }
        match (&node.kind, old, new) {
            (NodeKind::Object(_), Value::Object(_), Value::Object(_)) => {
                self.object(node, old, new, false)
            }
            (NodeKind::Array(_), Value::Array(_), Value::Array(_)) => self.array(node, old, new),
            _ => self.replace(node.span, new),
        }
    }

    fn object(&mut self, node: &Node, old: &Value, new: &Value, implicit: bool) {
        let NodeKind::Object(members) = &node.kind else { return self.replace(node.span, new) };
        let new_map = new.as_object().expect("checked by the caller");
        let mut parts = Vec::with_capacity(members.len());
        let mut kept_any = false;
        let mut last_kept: Option<&Member> = None;
        let mut entries = node.entries(old).peekable();
        for member in members {
            let removed = if member.duplicate {
                false
            } else {
                let (key, _, old_value) = entries.next().expect("entries follow members");
                match new_map.get(key) {
                    Some(new_value) => {
                        self.value(&member.value, old_value, new_value);
                        false
                    }
                    None => true,
                }
            };
            if !removed {
                kept_any = true;
                last_kept = Some(member);
            }
            parts.push(Part { start: member.key.start, end: member.value.span.end, removed });
        }
        let old_map = old.as_object().expect("an object node holds an object");
        let added: Vec<(&String, &Value)> =
            new_map.iter().filter(|(k, _)| !old_map.contains_key(*k)).collect();
        if !kept_any && !added.is_empty() {
            // Nothing to anchor new members to: write the whole value.
            return if implicit {
                self.edits.push(TextEdit {
                    span: node.span,
                    text: canonical(new, self.lang).trim_end().to_owned(),
                })
            } else {
                self.replace(node.span, new)
            };
        }
        self.remove_runs(node, &parts, !added.is_empty());
        let Some(anchor) = last_kept else { return };
        if self.lang == Lang::Jsonc {
            let anchor_span = Span::new(anchor.key.start, anchor.value.span.end);
            let added = added.into_iter().map(|(key, value)| (Some(key.as_str()), value));
            return self.jsonc_append(node, anchor_span, &parts, added.collect());
        }
        for (key, value) in added {
            self.insert_member(node, anchor, key, value, implicit);
        }
    }

    fn array(&mut self, node: &Node, old: &Value, new: &Value) {
        let NodeKind::Array(items) = &node.kind else { return self.replace(node.span, new) };
        let (old_items, new_items) = (old.as_array().unwrap(), new.as_array().unwrap());
        // Align by deletion: walk both, pairing an old item with the next new one when they are
        // equal or are the same entity; unpaired old items are removed, new items left over at
        // the end are appended. Anything else is rewritten whole.
        let mut pairs = Vec::new();
        let mut parts = Vec::with_capacity(items.len());
        let mut j = 0;
        for (i, item) in items.iter().enumerate() {
            let keep = j < new_items.len()
                && (old_items.len() == new_items.len()
                    || old_items[i] == new_items[j]
                    || same_entity(&old_items[i], &new_items[j]));
            if keep {
                pairs.push((i, j));
                j += 1;
            }
            parts.push(Part { start: item.span.start, end: item.span.end, removed: !keep });
        }
        // Paired items are new_items[..j] in order, so the result is exactly `new_items`.
        let appended = &new_items[j..];
        if pairs.is_empty() && !appended.is_empty() {
            return self.replace(node.span, new);
        }
        for &(i, j) in &pairs {
            self.value(&items[i], &old_items[i], &new_items[j]);
        }
        self.remove_runs(node, &parts, !appended.is_empty());
        let Some(&(last, _)) = pairs.last() else { return };
        if self.lang == Lang::Jsonc {
            let added = appended.iter().map(|value| (None, value)).collect();
            return self.jsonc_append(node, items[last].span, &parts, added);
        }
        for value in appended {
            self.insert_item(node, &items[last], value);
        }
    }

    /// Cut every run of consecutive removed parts with its separators. `appending`: new
    /// elements follow the last kept part.
    fn remove_runs(&mut self, node: &Node, parts: &[Part], appending: bool) {
        let mut i = 0;
        while i < parts.len() {
            if !parts[i].removed {
                i += 1;
                continue;
            }
            let first = i;
            while i < parts.len() && parts[i].removed {
                i += 1;
            }
            let last = i - 1;
            let span = match self.lang {
                Lang::Json => self.json_cut(node, parts, first, last),
                Lang::Jsonc => self.jsonc_cut(node, parts, first, last, appending),
                Lang::Dust => self.dust_cut(parts, first, last),
            };
            self.edits.push(TextEdit { span, text: String::new() });
        }
    }

    /// The span of a run of removed JSONC parts, with the comma and same-line comment after
    /// its last part: whole lines when it stands on lines of its own, else inline. When the
    /// run ends the container and nothing is appended, the comma before it goes too, unless
    /// the container was written with a trailing comma.
    fn jsonc_cut(
        &mut self,
        node: &Node,
        parts: &[Part],
        first: usize,
        last: usize,
        appending: bool,
    ) -> Span {
        let text = self.text;
        let start = parts[first].start as usize;
        let tail = self.tail_end(parts[last].end as usize);
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let rest_end = self.line_end(tail);
        let alone_before = text[line_start..start].trim().is_empty();
        let alone_after = text[tail..rest_end].trim().is_empty();
        let ends = last + 1 == parts.len();
        let inner = (node.span.start as usize + 1, (node.span.end as usize).saturating_sub(1));
        if first == 0 && ends && inner.0 <= inner.1 {
            // Everything goes: keep the brackets, and the comments before the first part.
            let before = &text[inner.0..start];
            if (alone_after || text[tail..inner.1].trim().is_empty()) && before.trim().is_empty() {
                return Span::new(inner.0 as u32, inner.1 as u32);
            }
        }
        if ends && first > 0 && !appending && self.comma_after(parts[last].end as usize).is_none() {
            // The part before the run becomes the last: its comma goes, as none was written
            // after the last part.
            if let Some(comma) = self.comma_after(parts[first - 1].end as usize) {
                self.edits.push(TextEdit {
                    span: Span::new(comma as u32, comma as u32 + 1),
                    text: String::new(),
                });
            }
        }
        if alone_before && alone_after {
            let cut_end = if rest_end < text.len() { rest_end + 1 } else { rest_end };
            return Span::new(line_start as u32, cut_end as u32);
        }
        if ends {
            // Inline at the end: back over the spaces before the run, up to the closer.
            let back = text[..start].trim_end_matches([' ', '\t']).len().max(line_start);
            return Span::new(back as u32, tail as u32);
        }
        // Inline with more after it: up to the next thing on the line.
        let next = tail + (text[tail..rest_end].len() - text[tail..rest_end].trim_start().len());
        Span::new(start as u32, next as u32)
    }

    /// Append `added` (keys for an object's members, `None` for an array's items) after the
    /// JSONC part `anchor`, the last kept one of `node`: a comma after the anchor's value when
    /// it has none, the elements after the comment that ends its line, each in the style
    /// around it, the last with a comma when the container was written with a trailing one.
    fn jsonc_append(
        &mut self,
        node: &Node,
        anchor: Span,
        parts: &[Part],
        added: Vec<(Option<&str>, &Value)>,
    ) {
        if added.is_empty() {
            return;
        }
        let text = self.text;
        let start = anchor.start as usize;
        let end = anchor.end as usize;
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let on_own_line = text[line_start..start].trim().is_empty()
            && text[node.span.start as usize..start].contains('\n');
        let indent = &text[line_start..start];
        let trailing_comma =
            parts.last().is_some_and(|last| self.comma_after(last.end as usize).is_some());
        if self.comma_after(end).is_none() {
            self.edits.push(TextEdit { span: Span::empty(end as u32), text: ",".into() });
        }
        let unit = self.json_unit(node, indent);
        let (at, comment) = self.tail(end);
        // After a line comment the next element needs a line of its own.
        let after_line_comment = comment.is_some_and(|c| text[c..].starts_with("//"));
        let line_indent: String =
            text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        let mut out = String::new();
        for (i, (key, value)) in added.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if on_own_line {
                out.push('\n');
                out.push_str(indent);
            } else if i == 0 && after_line_comment {
                out.push('\n');
                out.push_str(&line_indent);
            } else {
                out.push(' ');
            }
            if let Some(key) = key {
                out.push_str(&Value::String((*key).to_owned()).to_string());
                out.push_str(": ");
            }
            if on_own_line {
                out.push_str(&format::json_block(value, indent, &unit));
            } else {
                out.push_str(&format::json_inline(value));
            }
        }
        if trailing_comma {
            out.push(',');
        }
        self.edits.push(TextEdit { span: Span::empty(at as u32), text: out });
    }

    /// The offset after the whitespace and JSONC comments at `at`.
    fn skip_trivia(&self, mut at: usize) -> usize {
        let bytes = self.text.as_bytes();
        loop {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
                at += 1;
            }
            match self.comment_end(at) {
                Some(end) => at = end,
                None => return at,
            }
        }
    }

    /// The end of the JSONC comment starting at `at`, if one does.
    fn comment_end(&self, at: usize) -> Option<usize> {
        let rest = self.text.get(at..)?;
        if rest.starts_with("//") {
            Some(self.line_end(at))
        } else {
            let inner = rest.strip_prefix("/*")?;
            Some(inner.find("*/").map_or(self.text.len(), |n| at + 2 + n + 2))
        }
    }

    /// The offset of the comma after the part ending at `end`, if one follows it.
    fn comma_after(&self, end: usize) -> Option<usize> {
        let at = self.skip_trivia(end);
        (self.text.as_bytes().get(at) == Some(&b',')).then_some(at)
    }

    /// The end of what goes with the part ending at `end`: its comma, and a comment after
    /// that on the same line.
    fn tail_end(&self, end: usize) -> usize {
        self.tail(end).0
    }

    /// [`Differ::tail_end`], and where the comment it ends with starts, if it does.
    fn tail(&self, end: usize) -> (usize, Option<usize>) {
        let at = self.comma_after(end).map_or(end, |comma| comma + 1);
        let start =
            at + self.text[at..].len() - self.text[at..].trim_start_matches([' ', '\t']).len();
        match self.comment_end(start) {
            Some(comment_end) if !self.text[at..comment_end].contains('\n') => {
                (comment_end, Some(start))
            }
            _ => (at, None),
        }
    }

    fn json_cut(&self, node: &Node, parts: &[Part], first: usize, last: usize) -> Span {
        if first > 0 {
            // From the end of the previous part: its comma goes with the removed run.
            Span::new(parts[first - 1].end, parts[last].end)
        } else if last + 1 < parts.len() {
            Span::new(parts[first].start, parts[last + 1].start)
        } else {
            // Everything goes: keep the brackets.
            Span::new(node.span.start + 1, node.span.end.saturating_sub(1).max(node.span.start + 1))
        }
    }

    fn dust_cut(&self, parts: &[Part], first: usize, last: usize) -> Span {
        let bytes = self.text.as_bytes();
        let start = parts[first].start as usize;
        let end = parts[last].end as usize;
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let alone_before = self.text[line_start..start].trim().is_empty();
        let rest_end = self.text[end..].find('\n').map_or(self.text.len(), |i| end + i);
        let rest = &self.text[end..rest_end];
        if alone_before && (rest.trim().is_empty() || rest.trim_start().starts_with(';')) {
            // Whole lines, with a comment that ends the last: remove them with their newline.
            let cut_end = if rest_end < self.text.len() { rest_end + 1 } else { rest_end };
            return Span::new(line_start as u32, cut_end as u32);
        }
        // Inline: up to the next thing on the line, or back to the previous part before a
        // closing bracket so that no space is left dangling.
        let next = end + rest.len() - rest.trim_start().len();
        let closes = next < bytes.len() && matches!(bytes[next], b'}' | b']');
        if (closes || next == rest_end) && first > 0 {
            Span::new(parts[first - 1].end, end as u32)
        } else {
            Span::new(start as u32, next as u32)
        }
    }

    fn insert_member(
        &mut self,
        node: &Node,
        anchor: &Member,
        key: &str,
        value: &Value,
        implicit: bool,
    ) {
        let key_start = anchor.key.start as usize;
        let line_start = self.text[..key_start].rfind('\n').map_or(0, |i| i + 1);
        let on_own_line = self.text[line_start..key_start].trim().is_empty()
            && (implicit || self.text[node.span.start as usize..key_start].contains('\n'));
        let indent = &self.text[line_start..key_start];
        let indent_width = indent.chars().count();
        let value_end = anchor.value.span.end as usize;
        match self.lang {
            Lang::Json | Lang::Jsonc => {
                let key_text = Value::String(key.to_owned()).to_string();
                let text = if on_own_line {
                    let unit = self.json_unit(node, indent);
                    format!(",\n{indent}{key_text}: {}", format::json_block(value, indent, &unit))
                } else {
                    format!(", {key_text}: {}", format::json_inline(value))
                };
                self.edits.push(TextEdit { span: Span::empty(value_end as u32), text });
            }
            Lang::Dust => {
                let key_text = format::dust_key(key);
                if on_own_line {
                    // Align with the anchor's value column when the key fits before it.
                    let value_col = self.column_of(anchor.value.span.start as usize);
                    let key_width = key_text.chars().count();
                    let pad = if indent_width + key_width < value_col {
                        value_col - indent_width - key_width
                    } else {
                        1
                    };
                    let column = indent_width + key_width + pad;
                    let text = format!(
                        "\n{indent}{key_text}{}{}",
                        " ".repeat(pad),
                        format::dust_value(value, indent_width, column)
                    );
                    // After a trailing comment, not before it.
                    let at = self.line_end(value_end);
                    self.edits.push(TextEdit { span: Span::empty(at as u32), text });
                } else {
                    let column = self.column_of(value_end) + 2 + key_text.chars().count();
                    let text = format!(
                        " {key_text} {}",
                        format::dust_value(value, self.indent_of(value_end), column)
                    );
                    self.edits.push(TextEdit { span: Span::empty(value_end as u32), text });
                }
            }
        }
    }

    fn insert_item(&mut self, node: &Node, anchor: &Node, value: &Value) {
        let start = anchor.span.start as usize;
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let on_own_line = self.text[line_start..start].trim().is_empty()
            && self.text[node.span.start as usize..start].contains('\n');
        let indent = &self.text[line_start..start];
        let end = anchor.span.end as usize;
        let text = match (self.lang, on_own_line) {
            (Lang::Json | Lang::Jsonc, true) => {
                let unit = self.json_unit(node, indent);
                format!(",\n{indent}{}", format::json_block(value, indent, &unit))
            }
            (Lang::Json | Lang::Jsonc, false) => format!(", {}", format::json_inline(value)),
            (Lang::Dust, true) => {
                let width = indent.chars().count();
                format!("\n{indent}{}", format::dust_value(value, width, width))
            }
            (Lang::Dust, false) => {
                format!(
                    " {}",
                    format::dust_value(value, self.indent_of(end), self.column_of(end) + 1)
                )
            }
        };
        let at = if self.lang == Lang::Dust && on_own_line { self.line_end(end) } else { end };
        self.edits.push(TextEdit { span: Span::empty(at as u32), text });
    }

    /// Replace one value's text by `new`, written where it stands.
    fn replace(&mut self, span: Span, new: &Value) {
        let start = span.start as usize;
        let text = match self.lang {
            Lang::Json | Lang::Jsonc => {
                let old = &self.text[start..span.end as usize];
                if old.contains('\n') && (new.is_object() || new.is_array()) {
                    let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
                    let indent: String = self.text[line_start..]
                        .chars()
                        .take_while(|c| *c == ' ' || *c == '\t')
                        .collect();
                    format::json_block(new, &indent, "  ")
                } else {
                    format::json_inline(new)
                }
            }
            Lang::Dust => format::dust_value(new, self.indent_of(start), self.column_of(start)),
        };
        self.edits.push(TextEdit { span, text });
    }

    /// The indentation unit of a JSON container: its members' indent minus its own line's.
    fn json_unit(&self, node: &Node, member_indent: &str) -> String {
        let start = node.span.start as usize;
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let own = self.text[line_start..].len() - self.text[line_start..].trim_start().len();
        let own = own.min(start - line_start);
        if member_indent.len() > own { member_indent[own..].to_owned() } else { "  ".to_owned() }
    }

    fn column_of(&self, offset: usize) -> usize {
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        self.text[line_start..offset].chars().count()
    }

    /// The indentation of the line holding `offset`, in columns.
    fn indent_of(&self, offset: usize) -> usize {
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        self.text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').count()
    }

    /// The end of the line holding `offset` (before its newline).
    fn line_end(&self, offset: usize) -> usize {
        self.text[offset..].find('\n').map_or(self.text.len(), |i| offset + i)
    }
}

/// Whether two values are objects with the same `id`: one entity, changed.
fn same_entity(a: &Value, b: &Value) -> bool {
    match (a.get("id"), b.get("id")) {
        (Some(x), Some(y)) => x == y && a.is_object() && b.is_object(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;

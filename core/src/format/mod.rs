//! The canonical DUST formatter, the JSON normaliser, the JSONC formatter, and conversion
//! between the notations.
//!
//! Canonical DUST (SPEC §4): the top-level object written without braces, values of every
//! object written one member a line aligned in one column, containers inline when they fit in
//! [`MAX_WIDTH`](layout::MAX_WIDTH) columns and hold no comment, strings quoted only when a
//! bareword would not read back as the same string, comments and blank-line groups kept.
//! Normalised JSON is `serde_json`'s pretty printing. Canonical JSONC is the same printing
//! with the comments and blank-line groups kept (placed as DUST's are) and no trailing comma.
//! Only texts without syntax errors are formatted: rewriting a broken or duplicate-keyed text
//! could lose data.

mod from_parse;
mod from_value;
mod layout;
mod scalar;

#[cfg(test)]
mod tests;

pub use layout::value_column;
use serde_json::Value;

use crate::syntax::{self, Lang, SyntaxError};
use from_value::Spelling;

/// Why a text or value cannot be formatted.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The text has syntax errors (duplicate keys included); it is left as it is.
    #[error("{}", syntax_message(.0))]
    Syntax(Vec<SyntaxError>),
    /// DUST cannot write a scalar at the top level.
    #[error(
        "a DUST document's top level is an object or an array, not {0}; \
         wrap the value in an array or keep the document in JSON"
    )]
    TopLevelScalar(&'static str),
    /// A JSONC text holding only comments (or nothing) has no value to write in another
    /// notation.
    #[error(
        "the document holds no value, only comments; add a value (such as {{}}) before converting it"
    )]
    NoValue,
}

fn syntax_message(errors: &[SyntaxError]) -> String {
    let first = errors.first().map_or("", |e| e.message.as_str());
    match errors.len() {
        1 => format!("the text has a syntax error ({first}); fix it before formatting"),
        n => format!("the text has {n} syntax errors (first: {first}); fix them before formatting"),
    }
}

impl FormatError {
    /// The stable error code (SPEC §16).
    pub fn code(&self) -> crate::Code {
        match self {
            FormatError::Syntax(_) => crate::Code::InvalidArguments,
            FormatError::TopLevelScalar(_) | FormatError::NoValue => crate::Code::Unsupported,
        }
    }
}

impl From<FormatError> for crate::Error {
    fn from(err: FormatError) -> crate::Error {
        match err {
            FormatError::Syntax(_) => crate::Error::InvalidArguments(err.to_string()),
            FormatError::TopLevelScalar(_) | FormatError::NoValue => {
                crate::Error::Unsupported(err.to_string())
            }
        }
    }
}

/// A text converted to another notation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversion {
    pub text: String,
    /// How many comments were dropped because plain JSON has none. Callers tell the user.
    pub lost_comments: usize,
}

/// The canonical text of a document: canonical DUST with its comments for DUST, normalised JSON
/// for JSON, canonical JSONC with its comments for JSONC. Refuses a text with syntax errors.
pub fn format(text: &str, lang: Lang) -> Result<String, FormatError> {
    let parse = clean_parse(text, lang)?;
    write(text, &parse, lang, lang)
}

/// `text` (in `from`) written canonically in `to`. Comments go from DUST to JSONC and back
/// (a JSONC block comment becomes `;` lines); plain JSON has none, so they are dropped and
/// counted in [`Conversion::lost_comments`].
pub fn convert(text: &str, from: Lang, to: Lang) -> Result<Conversion, FormatError> {
    let parse = clean_parse(text, from)?;
    let lost_comments = if to == Lang::Json { parse.comments.len() } else { 0 };
    Ok(Conversion { text: write(text, &parse, from, to)?, lost_comments })
}

/// The canonical text in `to` of `text`, whose clean parse in `from` is `parse`. The layout
/// of DUST and JSONC (comments, blank lines) is kept; plain JSON is written from its value.
fn write(text: &str, parse: &syntax::Parse, from: Lang, to: Lang) -> Result<String, FormatError> {
    if parse.root.is_none() {
        // A clean parse without a value: JSONC holding only comments, which stay JSONC.
        return match to {
            Lang::Jsonc => Ok(from_parse::comments_only(text, parse)),
            Lang::Json | Lang::Dust => Err(FormatError::NoValue),
        };
    }
    let spelling = match to {
        Lang::Json => return Ok(value_to_json(&parse.value)),
        Lang::Jsonc => Spelling::Json,
        Lang::Dust => Spelling::Dust,
    };
    let document = match from {
        Lang::Json => from_value_document(&parse.value, spelling),
        Lang::Jsonc | Lang::Dust => from_parse::document(text, parse, spelling),
    };
    match document {
        Some(document) if to == Lang::Dust => Ok(document.render()),
        Some(document) => Ok(document.render_json()),
        None => Err(FormatError::TopLevelScalar(crate::model::value_kind(&parse.value))),
    }
}

/// The layout of a value in `spelling`'s notation; `None` for a scalar in DUST.
fn from_value_document(value: &Value, spelling: Spelling) -> Option<layout::Document> {
    match value {
        Value::Object(map) if spelling == Spelling::Dust => {
            Some(layout::Document::Object(from_value::object(map, spelling)))
        }
        Value::Object(_) | Value::Array(_) => Some(layout::Document::Bracketed {
            header: Vec::new(),
            root: from_value::tree(value, spelling),
            trailing: None,
            footer: Vec::new(),
        }),
        // DUST cannot write a scalar document; JSON writes it alone.
        _ if spelling == Spelling::Dust => None,
        scalar => Some(layout::Document::Bracketed {
            header: Vec::new(),
            root: from_value::tree(scalar, spelling),
            trailing: None,
            footer: Vec::new(),
        }),
    }
}

/// The canonical DUST of a value. A scalar cannot be a DUST document.
pub fn value_to_dust(value: &Value) -> Result<String, FormatError> {
    match from_value_document(value, Spelling::Dust) {
        Some(document) => Ok(document.render()),
        None => Err(FormatError::TopLevelScalar(crate::model::value_kind(value))),
    }
}

/// The normalised JSON of a value: `serde_json`'s pretty printing and a final newline.
pub fn value_to_json(value: &Value) -> String {
    // Writing a `Value` to a string cannot fail: its keys are strings and there is no I/O.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// A value written as canonical DUST at `column` of a line indented by `indent`: inline when it
/// fits in the line, else as a block whose closing bracket is at `indent`. Used by minimal
/// edits, which write one value into an existing document.
pub fn dust_value(value: &Value, indent: usize, column: usize) -> String {
    let mut out = String::new();
    layout::write_value(&from_value::tree(value, Spelling::Dust), indent, column, &mut out);
    out
}

/// A value written as JSON on one line, with a space after each `:` and `,`.
pub fn json_inline(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(json_inline).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), json_inline(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

/// A value written as pretty JSON whose first line continues a line indented by `indent`
/// (inner lines indented by `unit` more per level).
pub fn json_block(value: &Value, indent: &str, unit: &str) -> String {
    use serde::Serialize;
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    // Serialising a `Value` into memory cannot fail.
    let _ = value.serialize(&mut ser);
    let text = String::from_utf8(buf).unwrap_or_default();
    text.replace('\n', &format!("\n{indent}"))
}

/// A key as canonical DUST writes it: bare when it reads back as the same key, else quoted.
pub fn dust_key(key: &str) -> String {
    scalar::key(key)
}

/// A string value as canonical DUST writes it: bare when it reads back as the same string,
/// else quoted.
pub fn dust_string(s: &str) -> String {
    scalar::scalar(&Value::String(s.to_owned())).expect("a string is a scalar")
}

fn clean_parse(text: &str, lang: Lang) -> Result<syntax::Parse, FormatError> {
    let parse = syntax::parse(text, lang);
    if parse.is_clean() { Ok(parse) } else { Err(FormatError::Syntax(parse.errors)) }
}

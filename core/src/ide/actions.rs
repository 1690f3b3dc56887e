//! Repairs and refactorings without a protocol: the code actions of SPEC §5 computed from the
//! diagnostics' `data`, conversion between JSON and DUST, and renaming an entity id.
//!
//! Every repair is a set of minimal text edits of one document (byte spans of its current
//! text): a value replaced in place, or the document's value changed and rewritten with
//! `crate::edit`, so comments and layout around the change stay.

use serde_json::{Map, Value};

use crate::analysis::{Analysis, Document};
use crate::diagnostics::{Diagnostic, DiagnosticCode};
use crate::edit::{self, TextEdit};
use crate::error::{Error, Result};
use crate::format::{self, FormatError};
use crate::model;
use crate::patch::{self, Op, Patch};
use crate::syntax::{self, Lang};
use crate::text::Span;

/// How many allowed values of an enum are offered as separate repairs.
const MAX_ENUM_ACTIONS: usize = 20;

/// What kind of action, for the client's menus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    /// Repairs one diagnostic.
    QuickFix,
    /// Rewrites the whole document in the other notation under the other extension.
    Convert,
}

/// One code action on a document.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub title: String,
    pub kind: ActionKind,
    /// The diagnostic repaired (`QuickFix` only).
    pub diagnostic: Option<Diagnostic>,
    /// The best of several repairs of one diagnostic: the id or allowed value nearest (by
    /// edit distance) to what is written, when one is nearer than the others.
    pub preferred: bool,
    /// Edits of the document asked about. Empty for `Convert`: see [`convert`].
    pub edits: Vec<TextEdit>,
    /// For `Convert`: the notation converted to.
    pub to: Option<Lang>,
}

/// The actions for the range `span` of document `path`: a repair of every diagnostic touching
/// the range that has one, then the conversion to the other notation when the document parses.
pub fn code_actions(analysis: &Analysis, path: &str, span: Span) -> Vec<Action> {
    let Some(doc) = analysis.document(path) else { return Vec::new() };
    let mut out = Vec::new();
    for d in analysis.diagnostics_of(path) {
        let touches = d.span.start <= span.end && span.start <= d.span.end;
        if touches {
            out.extend(repairs(analysis, doc, &d));
        }
    }
    if doc.parse.is_clean() && doc.parse.root.is_some() {
        let to = other(doc.lang);
        let new_path = converted_path(path, to);
        let scalar_to_dust =
            to == Lang::Dust && !doc.parse.value.is_object() && !doc.parse.value.is_array();
        if analysis.document(&new_path).is_none() && !scalar_to_dust {
            out.push(Action {
                title: format!("Convert to {} ({new_path})", lang_name(to)),
                kind: ActionKind::Convert,
                diagnostic: None,
                preferred: false,
                edits: Vec::new(),
                to: Some(to),
            });
        }
    }
    out
}

/// The document at `path` converted to the other notation: its new path and text, and how
/// many comments JSON could not keep.
pub fn convert(analysis: &Analysis, path: &str) -> Result<(String, format::Conversion)> {
    let doc = analysis
        .document(path)
        .ok_or_else(|| Error::NotFound(format!("no document {path}; open or create it first")))?;
    let to = other(doc.lang);
    let conversion = format::convert(&doc.text, doc.lang, to).map_err(|err| match err {
        FormatError::TopLevelScalar(_) | FormatError::NoValue => {
            Error::Unsupported(err.to_string())
        }
        other => Error::InvalidArguments(other.to_string()),
    })?;
    Ok((converted_path(path, to), conversion))
}

/// The notation a document converts to: DUST for JSON and JSONC (whose comments DUST keeps),
/// JSON for DUST.
fn other(lang: Lang) -> Lang {
    match lang {
        Lang::Json | Lang::Jsonc => Lang::Dust,
        Lang::Dust => Lang::Json,
    }
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Json => "JSON",
        Lang::Jsonc => "JSONC",
        Lang::Dust => "DUST",
    }
}

fn converted_path(path: &str, to: Lang) -> String {
    let stem = [".json", ".jsonc", ".dust"]
        .into_iter()
        .find_map(|ext| path.strip_suffix(ext))
        .unwrap_or(path);
    format!("{stem}.{}", to.as_str())
}

/// The repairs of one diagnostic, from its code and `data`.
fn repairs(analysis: &Analysis, doc: &Document, d: &Diagnostic) -> Vec<Action> {
    let fix = |title: String, preferred: bool, edits: Vec<TextEdit>| Action {
        title,
        kind: ActionKind::QuickFix,
        diagnostic: Some(d.clone()),
        preferred,
        edits,
        to: None,
    };
    let replace = |value: &Value| vec![TextEdit { span: d.span, text: inline(value, doc.lang) }];
    let data = &d.data;
    match d.code {
        DiagnosticCode::DanglingRef => {
            let ids: Vec<&str> = data["candidates"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let best = closest(data["id"].as_str().unwrap_or_default(), ids.iter().copied());
            ids.iter()
                .enumerate()
                .map(|(i, id)| {
                    let edits = replace(&Value::String(format!("@{id}")));
                    fix(format!("Change to @{id}"), best == Some(i), edits)
                })
                .collect()
        }
        DiagnosticCode::Schema => match data["rule"].as_str() {
            Some("enum" | "const") => {
                let allowed: Vec<&Value> = data["allowed"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .take(MAX_ENUM_ACTIONS)
                    .collect();
                let text = doc.text.get(d.span.range()).unwrap_or_default();
                let value = syntax::parse(text, doc.lang);
                let current =
                    if value.is_clean() { compared(&value.value) } else { text.to_owned() };
                let best = closest(&current, allowed.iter().map(|v| compared(v)));
                allowed
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        fix(
                            format!("Change to {}", inline(v, doc.lang)),
                            best == Some(i),
                            replace(v),
                        )
                    })
                    .collect()
            }
            Some("type") if expects_string(data) => {
                let text = doc.text.get(d.span.range()).unwrap_or_default();
                // A DUST bareword that reads as a number, boolean or null is JSON's literal.
                let bare = syntax::parse(text, Lang::Json);
                let scalar = matches!(bare.value, Value::Number(_) | Value::Bool(_) | Value::Null)
                    && bare.is_clean()
                    && !text.is_empty();
                if !scalar {
                    return Vec::new();
                }
                vec![fix(format!("Quote {text} as a string"), true, quoted_edit(doc, d.span, text))]
            }
            Some("required") => {
                let Some(property) = data["property"].as_str() else { return Vec::new() };
                let default = match &data["default"] {
                    Value::Null => placeholder(analysis, doc, d, property),
                    value => value.clone(),
                };
                let edits = change_object(doc, d, |object| {
                    object.insert(property.to_owned(), default.clone());
                });
                match edits {
                    Some(edits) => vec![fix(
                        format!("Add {property}: {}", inline(&default, doc.lang)),
                        true,
                        edits,
                    )],
                    None => Vec::new(),
                }
            }
            Some("additionalProperties" | "unevaluatedProperties") => {
                let Some(property) = data["property"].as_str() else { return Vec::new() };
                let edits = change_object(doc, d, |object| {
                    object.shift_remove(property);
                });
                match edits {
                    Some(edits) => vec![fix(format!("Remove {property}"), true, edits)],
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The index of the candidate nearest to `current` by edit distance, when it is nearer than
/// every other: the repair an editor applies by default (`isPreferred`). A tie prefers none.
fn closest<S: AsRef<str>>(current: &str, candidates: impl Iterator<Item = S>) -> Option<usize> {
    let distances: Vec<usize> =
        candidates.map(|c| model::edit_distance(current, c.as_ref())).collect();
    let best = *distances.iter().min()?;
    let mut at = distances.iter().enumerate().filter(|(_, d)| **d == best).map(|(i, _)| i);
    match (at.next(), at.next()) {
        (Some(i), None) => Some(i),
        _ => None,
    }
}

/// What a value is compared by: a string's own characters, any other value's JSON.
fn compared(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn expects_string(data: &Value) -> bool {
    data["expected"].as_str().is_some_and(|e| e.split(" or ").any(|t| t == "a string"))
}

/// A bareword or JSON literal quoted: DUST gets `'...'`, JSON `"..."`.
fn quoted_edit(doc: &Document, span: Span, text: &str) -> Vec<TextEdit> {
    let quoted = match doc.lang {
        Lang::Json | Lang::Jsonc => Value::String(text.to_owned()).to_string(),
        Lang::Dust => format!("'{text}'"),
    };
    vec![TextEdit { span, text: quoted }]
}

/// A value written on one line in `lang`.
fn inline(value: &Value, lang: Lang) -> String {
    match lang {
        Lang::Json | Lang::Jsonc => format::json_inline(value),
        Lang::Dust => format::dust_value(value, 0, 0),
    }
}

/// The edits that change the object a schema diagnostic is about with `change`. The
/// diagnostic's `pointer` is relative to its entity (or the document when it holds none).
fn change_object(
    doc: &Document,
    d: &Diagnostic,
    change: impl FnOnce(&mut Map<String, Value>),
) -> Option<Vec<TextEdit>> {
    if !doc.parse.is_clean() {
        // Rewriting values around syntax errors could drop what the user is typing.
        return None;
    }
    let pointer = document_pointer(doc, d)?;
    let mut value = doc.parse.value.clone();
    change(value.pointer_mut(&pointer)?.as_object_mut()?);
    let edits = edit::edits(&doc.text, &doc.parse, doc.lang, &value);
    (!edits.is_empty()).then_some(edits)
}

/// The JSON Pointer from the document's root of the instance a schema diagnostic names.
fn document_pointer(doc: &Document, d: &Diagnostic) -> Option<String> {
    let pointer = d.data["pointer"].as_str()?;
    let entity =
        doc.entities.iter().find(|e| e.span.start <= d.span.start && d.span.end <= e.span.end);
    Some(match entity.and_then(|e| e.index) {
        Some(index) => format!("/{index}{pointer}"),
        None => pointer.to_owned(),
    })
}

/// A value to fill in for a required property without a schema default: the first allowed
/// value, else an empty value of the property's type, else null.
fn placeholder(analysis: &Analysis, doc: &Document, d: &Diagnostic, property: &str) -> Value {
    let schema = (|| {
        let entity = doc
            .entities
            .iter()
            .find(|e| e.span.start <= d.span.start && d.span.end <= e.span.end)?;
        let (schema_path, _) = analysis.type_schema(&entity.ty)?;
        let root = &analysis.document(&schema_path)?.parse.value;
        let mut tokens: Vec<String> = d.data["pointer"]
            .as_str()?
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        tokens.push(property.to_owned());
        super::schema_at(root, &tokens).cloned()
    })();
    let Some(schema) = schema else { return Value::Null };
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|a| a.first()) {
        return first.clone();
    }
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.first().and_then(Value::as_str),
        Some(ty) => ty.as_str(),
        None => None,
    };
    match ty {
        Some("string") => Value::String(String::new()),
        Some("integer" | "number") => Value::from(0),
        Some("boolean") => Value::Bool(false),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => Value::Object(Map::new()),
        _ => Value::Null,
    }
}

/// The entity id at `offset` that can be renamed: an entity's `id` value or a reference.
/// Returns the id and the span of the value under the cursor.
pub fn rename_target(analysis: &Analysis, path: &str, offset: u32) -> Option<(String, Span)> {
    let doc = analysis.document(path)?;
    match super::target(doc, offset)? {
        super::Target::Reference { id, span } | super::Target::EntityId { id, span } => {
            Some((id.to_owned(), span))
        }
        _ => None,
    }
}

/// The edits, per document in path order, that rename entity `from` to `to` and rewrite every
/// reference to it, planned like the `rename` patch operation (`invalid-arguments` when the
/// new id is invalid or taken).
pub fn rename(analysis: &Analysis, from: &str, to: &str) -> Result<Vec<(String, Vec<TextEdit>)>> {
    let to = to.strip_prefix('@').unwrap_or(to);
    if let Some(why) = model::id_problem(to) {
        return Err(Error::InvalidArguments(format!("'{to}' is not a valid id: {why}")));
    }
    let plan = patch::plan(
        analysis,
        &Patch { ops: vec![Op::Rename { from: from.to_owned(), to: to.to_owned() }] },
    )?;
    let mut out = Vec::new();
    for planned in plan.documents {
        let (Some(before), Some(after)) = (&planned.before, &planned.after) else { continue };
        let after_value = syntax::parse(after, before.lang).value;
        let edits = edit::edits(&before.text, &before.parse, before.lang, &after_value);
        if !edits.is_empty() {
            out.push((planned.path, edits));
        }
    }
    Ok(out)
}

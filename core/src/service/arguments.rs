//! Argument validation for every contract with its one compiled `jsonschema` validator, and
//! the message in our words: the field (dotted, from the argument object), what was
//! expected, what was found, and the field's description where the schema has one.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::Value;

use super::Contract;
use crate::error::Error;

/// `Ok` when `args` fits the contract's argument schema; else `invalid-arguments` naming
/// the first failing field.
pub(super) fn validate(contract: &Contract, args: &Value) -> Result<(), Error> {
    // Every call is checked: the yes-or-no check allocates no error iterator, and only
    // arguments that fail it are walked again for the message.
    if contract.validator.is_valid(args) {
        return Ok(());
    }
    match contract.validator.iter_errors(args).next() {
        None => Ok(()),
        Some(err) => Err(Error::InvalidArguments(format!(
            "invalid arguments for {}: {}",
            contract.name,
            message(&contract.arguments, &err)
        ))),
    }
}

/// A field's name as a reader writes it: `position.line`, `entities[0]`.
fn field(pointer: &str, more: Option<&str>) -> String {
    let mut out = String::new();
    let tokens = pointer.split('/').skip(1).map(|t| t.replace("~1", "/").replace("~0", "~"));
    for token in tokens.map(Some).chain([more.map(str::to_owned)]).flatten() {
        if token.parse::<usize>().is_ok() && !out.is_empty() {
            out.push_str(&format!("[{token}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// The schema at a JSON Pointer of the contract's argument schema.
fn schema_at<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() { Some(root) } else { root.pointer(pointer) }
}

/// The schema a failing keyword belongs to: its location without the keyword itself.
fn owner<'a>(root: &'a Value, err: &ValidationError<'_>) -> Option<&'a Value> {
    let path = err.schema_path().as_str();
    let parent = path.rsplit_once('/').map_or("", |(parent, _)| parent);
    schema_at(root, parent)
}

fn a(ty: &str) -> String {
    match ty {
        "object" | "array" | "integer" => format!("an {ty}"),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    }
}

fn json_type(ty: JsonType) -> &'static str {
    match ty {
        JsonType::Array => "array",
        JsonType::Boolean => "boolean",
        JsonType::Integer => "integer",
        JsonType::Null => "null",
        JsonType::Number => "number",
        JsonType::Object => "object",
        JsonType::String => "string",
    }
}

fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn message(root: &Value, err: &ValidationError<'_>) -> String {
    let at = err.instance_path().as_str();
    let name = field(at, None);
    let found = err.instance();
    let owner = owner(root, err);
    let described = |schema: Option<&Value>| {
        schema
            .and_then(|s| s.get("description"))
            .and_then(Value::as_str)
            .map_or_else(String::new, |d| format!(" ({d})"))
    };
    let this = described(owner);
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let property = property.as_str().unwrap_or_default();
            let schema = owner.and_then(|s| s.get("properties")).and_then(|p| p.get(property));
            format!("`{}` is required{}", field(at, Some(property)), described(schema))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let known: Vec<String> = owner
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            let first = unexpected.first().map_or("", String::as_str);
            let arguments = if known.is_empty() {
                "it takes none".to_owned()
            } else {
                format!("the arguments are {}", known.join(", "))
            };
            let place = if name.is_empty() { String::new() } else { format!(" of `{name}`") };
            format!("`{}` is not an argument{place}; {arguments}", field(at, Some(first)))
        }
        ValidationErrorKind::Type { kind } => {
            let want: Vec<String> = match kind {
                TypeKind::Single(ty) => vec![a(json_type(*ty))],
                TypeKind::Multiple(set) => set.iter().map(|t| a(json_type(t))).collect(),
            };
            format!("`{name}` must be {}, not {found}{this}", or_list(&want))
        }
        ValidationErrorKind::AnyOf { .. } => {
            // The branches of a portable union of types (`anyOf: [{type}, ...]`).
            let want: Vec<String> = owner
                .and_then(|s| s.get("anyOf"))
                .and_then(Value::as_array)
                .map(|b| b.iter().filter_map(|b| b["type"].as_str()).map(a).collect())
                .unwrap_or_default();
            if want.is_empty() {
                format!("`{name}` fits none of the allowed shapes, not {found}{this}")
            } else {
                format!("`{name}` must be {}, not {found}{this}", or_list(&want))
            }
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("`{name}` must be at least {limit}, not {found}{this}")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("`{name}` must be at most {limit}, not {found}{this}")
        }
        ValidationErrorKind::MinLength { limit: 1 } => format!("`{name}` must not be empty{this}"),
        ValidationErrorKind::MinLength { limit } => {
            format!("`{name}` must have at least {limit} characters{this}")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("`{name}` must have at most {limit} characters{this}")
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("`{name}` must have at least {limit} items{this}")
        }
        ValidationErrorKind::Enum { options } => {
            let options: Vec<String> =
                options.as_array().into_iter().flatten().map(Value::to_string).collect();
            format!("`{name}` must be {}, not {found}{this}", or_list(&options))
        }
        _ if name.is_empty() => format!("the arguments: {err}"),
        _ => format!("`{name}`: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_as_readers_write_them() {
        assert_eq!(field("", Some("newId")), "newId");
        assert_eq!(field("/position", Some("line")), "position.line");
        assert_eq!(field("/entities/0", None), "entities[0]");
        assert_eq!(field("/a~1b", None), "a/b");
    }
}

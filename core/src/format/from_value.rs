//! The layout of a bare [`Value`]: the canonical text of data that carries no comments, with
//! scalars and keys spelled in DUST or in JSON.

use serde_json::Value;

use super::layout::{Container, Element, Entry, Kind, Text, Tree};
use super::scalar;

/// How scalars and keys are spelled in a layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Spelling {
    /// Barewords where they read back unchanged, else quoted.
    Dust,
    /// JSON: strings and keys always quoted.
    Json,
}

impl Spelling {
    pub(crate) fn key(self, key: &str) -> Text {
        Text::new(match self {
            Spelling::Dust => scalar::key(key),
            Spelling::Json => Value::String(key.to_owned()).to_string(),
        })
    }

    fn scalar(self, value: &Value) -> Text {
        Text::new(match self {
            Spelling::Dust => scalar::scalar(value).unwrap_or_default(),
            Spelling::Json => value.to_string(),
        })
    }
}

pub(crate) fn tree(value: &Value, spelling: Spelling) -> Tree {
    match value {
        Value::Array(items) => Tree::Container(array(items, spelling)),
        Value::Object(map) => Tree::Container(object(map, spelling)),
        scalar => Tree::Scalar(spelling.scalar(scalar)),
    }
}

pub(crate) fn array(items: &[Value], spelling: Spelling) -> Container {
    let elements = items
        .iter()
        .map(|item| {
            Element::Entry(Entry { key: None, value: tree(item, spelling), trailing: None })
        })
        .collect();
    Container::new(Kind::Array, None, elements)
}

pub(crate) fn object(map: &serde_json::Map<String, Value>, spelling: Spelling) -> Container {
    let elements = map
        .iter()
        .map(|(key, value)| {
            Element::Entry(Entry {
                key: Some(spelling.key(key)),
                value: tree(value, spelling),
                trailing: None,
            })
        })
        .collect();
    Container::new(Kind::Object, None, elements)
}

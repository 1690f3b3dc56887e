//! The layout of a bare [`Value`]: the canonical DUST of data that carries no comments.

use serde_json::Value;

use super::layout::{Container, Element, Entry, Kind, Text, Tree};
use super::scalar;

pub(crate) fn tree(value: &Value) -> Tree {
    match value {
        Value::Array(items) => Tree::Container(array(items)),
        Value::Object(map) => Tree::Container(object(map)),
        scalar => Tree::Scalar(Text::new(scalar::scalar(scalar).unwrap_or_default())),
    }
}

pub(crate) fn array(items: &[Value]) -> Container {
    let elements = items
        .iter()
        .map(|item| Element::Entry(Entry { key: None, value: tree(item), trailing: None }))
        .collect();
    Container::new(Kind::Array, None, elements)
}

pub(crate) fn object(map: &serde_json::Map<String, Value>) -> Container {
    let elements = map
        .iter()
        .map(|(key, value)| {
            Element::Entry(Entry {
                key: Some(Text::new(scalar::key(key))),
                value: tree(value),
                trailing: None,
            })
        })
        .collect();
    Container::new(Kind::Object, None, elements)
}

//! Attributes of patterns: a field name or a dotted path, and the values it reads in an entity.

use serde_json::Value;

use super::value::Val;

/// An attribute of a pattern: a top-level field name, or a dotted path into nested objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    pub name: String,
    segments: Vec<String>,
}

impl Attr {
    pub fn new(name: &str) -> Attr {
        Attr { name: name.to_owned(), segments: name.split('.').map(str::to_owned).collect() }
    }

    /// The distinct values of this attribute in `entity`, as patterns bind them: a field
    /// named exactly like the attribute wins over a dotted path; arrays met along a path are
    /// looked into; an array at the end gives each of its elements.
    pub fn values<'a>(&self, entity: &'a Value, out: &mut Vec<Val<'a>>) {
        let Some(object) = entity.as_object() else { return };
        if let Some(value) = object.get(&self.name) {
            push_values(value, out);
            return;
        }
        if self.segments.len() < 2 {
            return;
        }
        let mut current: Vec<&'a Value> = vec![entity];
        for segment in &self.segments {
            let mut next = Vec::new();
            for value in current {
                match value {
                    Value::Object(map) => next.extend(map.get(segment)),
                    Value::Array(items) => {
                        next.extend(items.iter().filter_map(|item| item.get(segment.as_str())));
                    }
                    _ => {}
                }
            }
            current = next;
        }
        for value in current {
            push_values(value, out);
        }
    }
}

fn push_values<'a>(value: &'a Value, out: &mut Vec<Val<'a>>) {
    match value {
        Value::Array(items) => {
            for item in items {
                push_distinct(Val::from_data(item), out);
            }
        }
        other => push_distinct(Val::from_data(other), out),
    }
}

fn push_distinct<'a>(value: Val<'a>, out: &mut Vec<Val<'a>>) {
    if !out.contains(&value) {
        out.push(value);
    }
}

//! Which draft a schema declares, where its identifiers and references are, and how a schema
//! of an older draft is read when the store follows widely used validators rather than the
//! letter of the draft (`[validation] dialect`, SPEC §23).
//!
//! The walk visits schema positions only: the values of `enum`, `const`, `default`,
//! `examples` and `example` are data, so an `"id"` or `"$ref"` inside them is never taken
//! for a keyword.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// How schemas that declare an older draft are read (`[validation] dialect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Dialect {
    /// As ajv 8 and vscode-json-languageservice read them (docs/DECISIONS.md): keywords beside
    /// `$ref` apply, keywords of later drafts apply, `contentMediaType`/`contentEncoding` are
    /// annotations. A schema of draft 4, 6 or 7 is rewritten into its 2019-09 equivalent
    /// before it is compiled ([`readable`]).
    #[default]
    Compatible,
    /// The letter of the declared draft.
    Strict,
}

/// The JSON Schema draft a `$schema` value names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draft {
    Draft4,
    Draft6,
    Draft7,
    Draft2019,
    Draft2020,
    /// Some other meta-schema (a custom one, or an unknown draft).
    Other,
}

pub const DRAFT_2019: &str = "https://json-schema.org/draft/2019-09/schema";

/// Keywords whose values are data, never schemas.
const DATA: [&str; 5] = ["enum", "const", "default", "examples", "example"];

impl Draft {
    /// The draft `$schema` names.
    pub fn of(dollar_schema: &str) -> Draft {
        let s = dollar_schema.trim_end_matches('#');
        let known =
            s.starts_with("http://json-schema.org/") || s.starts_with("https://json-schema.org/");
        match s.rsplit_once("json-schema.org/").map(|(_, rest)| rest) {
            Some("draft-04/schema") if known => Draft::Draft4,
            Some("draft-06/schema") if known => Draft::Draft6,
            Some("draft-07/schema") if known => Draft::Draft7,
            Some("draft/2019-09/schema") if known => Draft::Draft2019,
            Some("draft/2020-12/schema") if known => Draft::Draft2020,
            _ => Draft::Other,
        }
    }

    /// Drafts 4, 6 and 7: an identifier beside `$ref` is ignored, one that is only a fragment
    /// is an anchor.
    fn legacy(self) -> bool {
        matches!(self, Draft::Draft4 | Draft::Draft6 | Draft::Draft7)
    }
}

/// The draft a schema object declares, `None` when it declares none.
pub fn declared(value: &Value) -> Option<Draft> {
    value.get("$schema").and_then(Value::as_str).map(Draft::of)
}

/// The identifier of one schema object as its draft reads it: `$id` (draft 4: `id`; a schema
/// declaring no draft: `$id`, else an `id` that is an absolute URI, as vscode reads it).
/// Returns the key and the value; `None` when the object has no identifier that moves the
/// base (one beside `$ref` in drafts 4 to 7, or a fragment-only one, which is an anchor).
pub fn identifier(map: &Map<String, Value>, draft: Option<Draft>) -> Option<(&'static str, &str)> {
    let key = match draft {
        Some(Draft::Draft4) => "id",
        None if !map.contains_key("$id")
            && map.get("id").and_then(Value::as_str).is_some_and(is_absolute) =>
        {
            "id"
        }
        _ => "$id",
    };
    let id = map.get(key)?.as_str()?;
    if id.starts_with('#') || (draft.is_some_and(Draft::legacy) && map.contains_key("$ref")) {
        return None;
    }
    Some((key, id))
}

/// Whether `s` starts with a URI scheme (`https:`, `urn:`, ...).
pub fn is_absolute(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else { return false };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The schema `value` as `dialect` reads it. In the compatible dialect a schema that declares
/// draft 4, 6 or 7 is rewritten into its 2019-09 equivalent (the first draft that applies
/// keywords beside `$ref`, and one whose meta-schema still has the array form of `items` and
/// `additionalItems`); each case is in docs/DECISIONS.md:
/// - `$schema` names 2019-09: keywords beside `$ref` then apply, `const`, `if`, `contains` and
///   the other later keywords apply, `contentMediaType`/`contentEncoding` are annotations;
/// - draft 4's `id` becomes `$id`; a fragment-only identifier becomes `$anchor`, a fragment
///   after a URI is split off into `$anchor`; an identifier beside `$ref`, ignored by those
///   drafts, is dropped;
/// - draft 4's boolean `exclusiveMinimum`/`exclusiveMaximum` become the numeric form.
///
/// A schema that declares no draft is read as 2020-12 (the latest), except that an `id`
/// holding an absolute URI is its `$id` (as vscode reads it) and a boolean
/// `exclusiveMinimum`/`exclusiveMaximum` is draft 4's. Anything else (drafts 2019-09 and
/// 2020-12, custom meta-schemas, the strict dialect) is returned as it is.
pub fn readable(value: &Value, dialect: Dialect) -> Cow<'_, Value> {
    if dialect == Dialect::Strict || !value.is_object() {
        return Cow::Borrowed(value);
    }
    let draft = declared(value);
    if !draft.is_none_or(Draft::legacy) {
        return Cow::Borrowed(value);
    }
    let mut out = value.clone();
    rewrite(&mut out, draft);
    Cow::Owned(out)
}

fn rewrite(value: &mut Value, draft: Option<Draft>) {
    match value {
        Value::Object(map) => {
            let draft = match map.get("$schema").and_then(Value::as_str).map(Draft::of) {
                Some(d) if d.legacy() => {
                    map.insert("$schema".to_owned(), Value::String(DRAFT_2019.to_owned()));
                    Some(d)
                }
                // A subschema of a later draft, or of a custom meta-schema, is left alone.
                Some(_) => return,
                None => draft,
            };
            rewrite_object(map, draft);
            for (key, v) in map.iter_mut() {
                if DATA.contains(&key.as_str()) || key.starts_with("x-") {
                    continue;
                }
                rewrite(v, draft);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite(v, draft)),
        _ => {}
    }
}

fn rewrite_object(map: &mut Map<String, Value>, draft: Option<Draft>) {
    // Identifiers.
    let key = match draft {
        Some(Draft::Draft4) => Some("id"),
        None if !map.contains_key("$id")
            && map.get("id").and_then(Value::as_str).is_some_and(is_absolute) =>
        {
            Some("id")
        }
        _ => None,
    };
    if let Some(key) = key
        && map.get(key).is_some_and(Value::is_string)
        && !map.contains_key("$id")
        && let Some(id) = map.remove(key)
    {
        map.insert("$id".to_owned(), id);
    }
    if draft.is_some()
        && let Some(id) = map.get("$id").and_then(Value::as_str).map(str::to_owned)
    {
        if map.contains_key("$ref") {
            map.remove("$id");
        } else if let Some((uri, fragment)) = id.split_once('#') {
            if !fragment.is_empty() && !fragment.starts_with('/') && !map.contains_key("$anchor") {
                map.insert("$anchor".to_owned(), Value::String(fragment.to_owned()));
            }
            if uri.is_empty() {
                map.remove("$id");
            } else {
                map.insert("$id".to_owned(), Value::String(uri.to_owned()));
            }
        }
    }
    // Draft 4's boolean exclusive limits.
    for (exclusive, limit) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(Value::Bool(on)) = map.get(exclusive) {
            let on = *on;
            map.remove(exclusive);
            if on && let Some(n) = map.get(limit).filter(|n| n.is_number()).cloned() {
                map.remove(limit);
                map.insert(exclusive.to_owned(), n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drafts_by_their_meta_schema_address() {
        assert_eq!(Draft::of("http://json-schema.org/draft-04/schema#"), Draft::Draft4);
        assert_eq!(Draft::of("https://json-schema.org/draft-07/schema"), Draft::Draft7);
        assert_eq!(Draft::of("https://json-schema.org/draft/2019-09/schema"), Draft::Draft2019);
        assert_eq!(Draft::of("https://json-schema.org/draft/2020-12/schema"), Draft::Draft2020);
        assert_eq!(Draft::of("https://example.com/json-schema.org/draft-07/schema"), Draft::Other);
        assert_eq!(Draft::of("../meta.json"), Draft::Other);
    }

    #[test]
    fn a_draft_04_schema_read_compatibly() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "id": "https://example.com/a.json#",
            "properties": {
                "id": {"type": "string", "default": {"id": "not-an-identifier"}},
                "n": {"minimum": 0, "exclusiveMinimum": true},
                "m": {"maximum": 9, "exclusiveMaximum": false},
                "t": {"items": [{"type": "string"}], "additionalItems": false},
                "r": {"id": "#here", "type": "string"},
                "s": {"$ref": "#/definitions/x", "id": "https://example.com/ignored"}
            }
        });
        expect_test::expect![[r##"{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"id":{"type":"string","default":{"id":"not-an-identifier"}},"n":{"exclusiveMinimum":0},"m":{"maximum":9},"t":{"items":[{"type":"string"}],"additionalItems":false},"r":{"type":"string","$anchor":"here"},"s":{"$ref":"#/definitions/x"}},"$id":"https://example.com/a.json"}"##]]
        .assert_eq(&readable(&schema, Dialect::Compatible).to_string());
        assert_eq!(*readable(&schema, Dialect::Strict), schema, "strict reads the letter");
    }

    #[test]
    fn later_drafts_are_read_as_written() {
        let schema =
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x#y"});
        assert!(matches!(readable(&schema, Dialect::Compatible), Cow::Borrowed(_)));
        let nested = json!({"$schema": "http://json-schema.org/draft-07/schema#", "$defs": {
            "a": {"$schema": "https://json-schema.org/draft/2019-09/schema", "$id": "x#y"}}});
        let read = readable(&nested, Dialect::Compatible);
        assert_eq!(read["$defs"]["a"]["$id"], "x#y", "a 2019-09 subschema is left alone");
        let none = json!({"id": "https://e.com/n", "$defs": {"a": {"$id": "b#c"}}});
        let read = readable(&none, Dialect::Compatible);
        assert_eq!(read["$id"], "https://e.com/n", "an absolute id of no draft is its $id");
        assert_eq!(read.get("$schema"), None, "no draft stays the latest");
        assert_eq!(read["$defs"]["a"]["$id"], "b#c");
    }

    #[test]
    fn identifiers_as_each_draft_reads_them() {
        let map = |v: Value| v.as_object().unwrap().clone();
        let d4 = map(json!({"id": "https://e.com/a"}));
        assert_eq!(identifier(&d4, Some(Draft::Draft4)), Some(("id", "https://e.com/a")));
        assert_eq!(identifier(&d4, Some(Draft::Draft7)), None);
        assert_eq!(identifier(&d4, None), Some(("id", "https://e.com/a")));
        let relative = map(json!({"id": "a.json"}));
        assert_eq!(identifier(&relative, None), None, "a relative id of no draft is data");
        let beside_ref = map(json!({"$id": "https://e.com/b", "$ref": "#"}));
        assert_eq!(identifier(&beside_ref, Some(Draft::Draft7)), None);
        assert_eq!(identifier(&beside_ref, None), Some(("$id", "https://e.com/b")));
        assert_eq!(
            identifier(&beside_ref, Some(Draft::Draft2020)),
            Some(("$id", "https://e.com/b"))
        );
    }
}

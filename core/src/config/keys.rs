//! Every key `stardust.toml` accepts, read from the parser's own types rather than listed by
//! hand: a deserializer that hands each struct every field it names and records their paths.
//! The reference (docs/reference/configuration.md) is checked against this list, so a key
//! added to the parser and not documented fails a test.
//!
//! Paths are dotted as TOML writes them: `store.ignore`, `schema.glob` (a field of every
//! `[[schema]]` entry), `types.<name>.dir` and `servers.<name>.timeouts.startup` (`<name>`:
//! the table's key, which the user chooses).

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

/// The name standing for a key the user chooses (`[types.<name>]`).
pub const NAME: &str = "<name>";

/// Every key of `T` (a configuration type), sorted: each field of each struct, at its path.
pub(super) fn keys_of<'de, T: serde::Deserialize<'de>>() -> Vec<String> {
    let found = RefCell::new(BTreeSet::new());
    // A field the tracer cannot give a value to ends the walk below it, never the list: every
    // struct records its fields before any is visited.
    let _ = T::deserialize(Tracer { path: String::new(), found: &found });
    found.into_inner().into_iter().collect()
}

struct Tracer<'a> {
    path: String,
    found: &'a RefCell<BTreeSet<String>>,
}

impl<'a> Tracer<'a> {
    fn at(&self, key: &str) -> Tracer<'a> {
        let path =
            if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) };
        Tracer { path, found: self.found }
    }
}

#[derive(Debug)]
struct Stop(String);

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Stop(msg.to_string())
    }
}

impl<'de, 'a> de::Deserializer<'de> for Tracer<'a> {
    type Error = Stop;

    /// A value of no particular type (an untagged enum, `toml::Value`): a string.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_str("")
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_bool(false)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(0)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(0)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(0)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_u64(0)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_i64(0)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_i64(0)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_f64(0.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_newtype_struct(self)
    }

    /// A list: one element, traced at the list's own path (`[[schema]]` entries' fields are
    /// `schema.<field>`).
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_seq(One { tracer: Some(self) })
    }

    /// A table of user-chosen keys: one entry, `<name>`.
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        let value = self.at(NAME);
        visitor.visit_map(Fields { keys: vec![NAME], tracers: vec![value].into_iter(), at: 0 })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        let tracers: Vec<Tracer<'a>> = fields.iter().map(|f| self.at(f)).collect();
        self.found.borrow_mut().extend(tracers.iter().map(|t| t.path.clone()));
        visitor.visit_map(Fields { keys: fields.to_vec(), tracers: tracers.into_iter(), at: 0 })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        let first = variants.first().copied().unwrap_or_default();
        visitor.visit_enum(first.into_deserializer())
    }

    forward_to_deserialize_any! {
        i8 i16 i128 u128 f32 char str string bytes byte_buf unit unit_struct tuple
        tuple_struct identifier ignored_any
    }
}

/// The one element of a traced list.
struct One<'a> {
    tracer: Option<Tracer<'a>>,
}

impl<'de, 'a> SeqAccess<'de> for One<'a> {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        match self.tracer.take() {
            Some(tracer) => seed.deserialize(tracer).map(Some),
            None => Ok(None),
        }
    }
}

/// A struct's fields (or a table's one `<name>` entry), each with a tracer at its path.
struct Fields<'a> {
    keys: Vec<&'static str>,
    tracers: std::vec::IntoIter<Tracer<'a>>,
    at: usize,
}

impl<'de, 'a> MapAccess<'de> for Fields<'a> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        let Some(key) = self.keys.get(self.at) else { return Ok(None) };
        self.at += 1;
        let key: de::value::StrDeserializer<'_, Stop> = key.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        let tracer = self.tracers.next().ok_or_else(|| Stop("no value".to_owned()))?;
        seed.deserialize(tracer)
    }
}

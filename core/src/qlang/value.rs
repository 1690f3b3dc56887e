//! The values queries and expressions work on: borrowed from the store's data where possible,
//! with one notion of equality, hashing and order for joins, grouping, sorting and `=`.
//!
//! Strings read from the data are normalised: a reference `"@x"` reads as the id `x` and the
//! escaped literal `"@@x"` as the string `@x`, so that a reference binds the referenced
//! entity's id (SPEC §8). Numbers are `Int` when they are whole and within ±2^53, else `Float`,
//! so that `1965` and `1965.0` are one value.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use serde_json::{Number, Value};

use crate::model::reference_target;

/// Whole floats within this bound are stored as `Int`, exactly.
const EXACT: f64 = 9_007_199_254_740_992.0;

#[derive(Clone, Debug)]
pub enum Val<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// Finite, and never a whole number within ±2^53 (those are `Int`).
    Float(f64),
    Str(Cow<'a, str>),
    /// An entity named by its id (`@book/dune`, or a reference read through a path); its
    /// value is looked up when it is needed.
    Entity(Cow<'a, str>),
    /// An array or an object of the data (never a scalar).
    Json(&'a Value),
    /// An array made by an expression.
    List(Vec<Val<'a>>),
}

/// The string a stored string stands for: the id of a reference, the literal of `@@`.
pub fn data_str(s: &str) -> &str {
    if let Some(id) = reference_target(s) {
        id
    } else if s.starts_with("@@") {
        &s[1..]
    } else {
        s
    }
}

impl<'a> Val<'a> {
    /// A value of the data as a pattern binds it: references read as ids.
    pub fn from_data(value: &'a Value) -> Val<'a> {
        match value {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => Val::number(n),
            Value::String(s) => Val::Str(Cow::Borrowed(data_str(s))),
            Value::Array(_) | Value::Object(_) => Val::Json(value),
        }
    }

    /// A value of the data as an expression path reads it: a reference is the entity it names.
    pub fn from_field(value: &'a Value) -> Val<'a> {
        match value {
            Value::String(s) => match reference_target(s) {
                Some(id) => Val::Entity(Cow::Borrowed(id)),
                None => Val::Str(Cow::Borrowed(data_str(s))),
            },
            other => Val::from_data(other),
        }
    }

    pub fn number(n: &Number) -> Val<'a> {
        match n.as_i64() {
            Some(i) => Val::Int(i),
            None => Val::float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    /// A float, stored as `Int` when it is a whole number that fits exactly. `None` when it
    /// is not finite (JSON has no such number).
    pub fn try_float(f: f64) -> Option<Val<'a>> {
        if !f.is_finite() {
            None
        } else if f.fract() == 0.0 && f.abs() <= EXACT {
            Some(Val::Int(f as i64))
        } else {
            Some(Val::Float(f))
        }
    }

    fn float(f: f64) -> Val<'a> {
        Val::try_float(f).unwrap_or(Val::Null)
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The string this value is, for id lookups: a string or an entity's id.
    pub fn as_id(&self) -> Option<&str> {
        match self {
            Val::Str(s) | Val::Entity(s) => Some(s),
            _ => None,
        }
    }

    /// The name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "boolean",
            Val::Int(_) | Val::Float(_) => "number",
            Val::Str(_) => "string",
            Val::Entity(_) => "entity",
            Val::Json(Value::Array(_)) | Val::List(_) => "array",
            Val::Json(_) => "object",
        }
    }

    /// The elements of an array value, read as patterns read them.
    pub fn elements(&self) -> Option<Vec<Val<'a>>> {
        match self {
            Val::Json(Value::Array(items)) => Some(items.iter().map(Val::from_data).collect()),
            Val::List(items) => Some(items.clone()),
            _ => None,
        }
    }

    /// The value as JSON. An entity is written as its id here; the caller resolves entities
    /// when it wants whole objects.
    pub fn to_json(&self) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => Value::from(*i),
            Val::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Val::Str(s) | Val::Entity(s) => Value::String(s.to_string()),
            Val::Json(v) => (*v).clone(),
            Val::List(items) => Value::Array(items.iter().map(Val::to_json).collect()),
        }
    }

    /// A short rendering for messages: JSON, cut at 40 characters.
    pub fn describe(&self) -> String {
        let text = match self {
            Val::Entity(id) => format!("@{id}"),
            other => other.to_json().to_string(),
        };
        if text.chars().count() > 40 {
            let cut: String = text.chars().take(37).collect();
            format!("{cut}...")
        } else {
            text
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Val::Null => 0,
            Val::Bool(false) => 1,
            Val::Bool(true) => 2,
            Val::Int(_) | Val::Float(_) => 3,
            Val::Str(_) | Val::Entity(_) => 4,
            Val::Json(Value::Array(_)) | Val::List(_) => 5,
            Val::Json(_) => 6,
        }
    }

    /// A stable 64-bit hash, equal for equal values (see [`PartialEq`]); the attribute
    /// indexes are keyed by it.
    pub fn hash64(&self) -> u64 {
        let mut hasher = FastHasher::default();
        self.hash(&mut hasher);
        hasher.finish()
    }
}

/// A fast, deterministic hash (the multiply-rotate of rustc's FxHash) for the hash tables of
/// queries. It does not resist chosen collisions; the keys are the store's own data, and a
/// collision costs time, never a wrong answer.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

/// Hash maps and sets keyed with [`FastHasher`].
pub type FastBuild = BuildHasherDefault<FastHasher>;

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// Equality of the data model: numbers by value, strings by content (an entity equals its
/// id), arrays element-wise, objects by their set of entries.
impl PartialEq for Val<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Val::Null, Val::Null) => true,
            (Val::Bool(a), Val::Bool(b)) => a == b,
            (Val::Int(a), Val::Int(b)) => a == b,
            (Val::Float(a), Val::Float(b)) => a == b,
            (Val::Str(a) | Val::Entity(a), Val::Str(b) | Val::Entity(b)) => a == b,
            (Val::Json(Value::Object(a)), Val::Json(Value::Object(b))) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        b.get(k).is_some_and(|w| Val::from_data(v) == Val::from_data(w))
                    })
            }
            (Val::Json(Value::Object(_)), _) | (_, Val::Json(Value::Object(_))) => false,
            (a, b) => match (a.elements(), b.elements()) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
        }
    }
}

impl Eq for Val<'_> {}

impl Hash for Val<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Val::Null | Val::Bool(_) => {}
            Val::Int(i) => i.hash(state),
            Val::Float(f) => f.to_bits().hash(state),
            Val::Str(s) | Val::Entity(s) => s.hash(state),
            Val::Json(Value::Object(map)) => {
                // Order-independent, as equality is.
                let mut sum = 0u64;
                for (k, v) in map {
                    let mut h = FastHasher::default();
                    k.hash(&mut h);
                    Val::from_data(v).hash(&mut h);
                    sum = sum.wrapping_add(h.finish());
                }
                sum.hash(state);
            }
            other => {
                for item in other.elements().unwrap_or_default() {
                    item.hash(state);
                }
            }
        }
    }
}

/// The total order of results (as jq orders JSON): null < false < true < numbers < strings <
/// arrays < objects; strings by code point, arrays element by element, objects by their
/// sorted keys, then by the values in that key order.
impl Ord for Val<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        let by_rank = self.rank().cmp(&other.rank());
        if by_rank != Ordering::Equal {
            return by_rank;
        }
        match (self, other) {
            (Val::Int(a), Val::Int(b)) => a.cmp(b),
            (a, b) if a.rank() == 3 => {
                a.as_f64().unwrap_or(0.0).total_cmp(&b.as_f64().unwrap_or(0.0))
            }
            (Val::Str(a) | Val::Entity(a), Val::Str(b) | Val::Entity(b)) => a.cmp(b),
            (Val::Json(Value::Object(a)), Val::Json(Value::Object(b))) => {
                let mut ka: Vec<&String> = a.keys().collect();
                let mut kb: Vec<&String> = b.keys().collect();
                ka.sort();
                kb.sort();
                ka.cmp(&kb).then_with(|| {
                    for k in ka {
                        let ord =
                            Val::from_data(&a[k.as_str()]).cmp(&Val::from_data(&b[k.as_str()]));
                        if ord != Ordering::Equal {
                            return ord;
                        }
                    }
                    Ordering::Equal
                })
            }
            (a, b) => a.elements().unwrap_or_default().cmp(&b.elements().unwrap_or_default()),
        }
    }
}

impl PartialOrd for Val<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn references_read_as_ids_and_escapes_as_literals() {
        let r = json!("@person/x");
        let lit = json!("@@handle");
        assert_eq!(Val::from_data(&r), Val::Str("person/x".into()));
        assert_eq!(Val::from_data(&lit), Val::Str("@handle".into()));
        assert!(matches!(Val::from_field(&r), Val::Entity(id) if id == "person/x"));
        assert!(matches!(Val::from_field(&lit), Val::Str(s) if s == "@handle"));
    }

    #[test]
    fn whole_numbers_are_one_value_whatever_their_spelling() {
        let a = json!(1965);
        let b = json!(1965.0);
        assert_eq!(Val::from_data(&a), Val::from_data(&b));
        assert_eq!(Val::from_data(&a).hash64(), Val::from_data(&b).hash64());
        assert!(matches!(Val::try_float(2.5), Some(Val::Float(_))));
        assert!(Val::try_float(f64::INFINITY).is_none());
    }

    #[test]
    fn objects_are_equal_whatever_their_key_order() {
        let a = json!({"a": 1, "b": [1, "@x"]});
        let b = json!({"b": [1.0, "@x"], "a": 1});
        assert_eq!(Val::from_data(&a), Val::from_data(&b));
        assert_eq!(Val::from_data(&a).hash64(), Val::from_data(&b).hash64());
        assert_eq!(Val::from_data(&a).cmp(&Val::from_data(&b)), Ordering::Equal);
    }

    #[test]
    fn the_order_of_types_is_jqs() {
        let values = [
            json!(null),
            json!(false),
            json!(true),
            json!(-1),
            json!(2.5),
            json!("a"),
            json!([]),
            json!({}),
        ];
        let vals: Vec<Val> = values.iter().map(Val::from_data).collect();
        for pair in vals.windows(2) {
            assert_eq!(pair[0].cmp(&pair[1]), Ordering::Less, "{pair:?}");
        }
        let list = Val::List(vec![Val::Int(1)]);
        assert_eq!(list, Val::from_data(&json!([1])));
        assert_eq!(list.hash64(), Val::from_data(&json!([1])).hash64());
    }
}

//! Evaluation of expressions against a store snapshot and the variables of one binding.
//!
//! Errors are typed (SPEC §8): `type-error` names the operator or function and the operand
//! types (and a division by zero is one), `not-found` names a missing entity. Missing fields
//! read as `null`, and `null` never satisfies an ordering comparison (`<` `<=` `>` `>=`), so a
//! filter over entities that lack a field drops them instead of failing.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::expr::{BinOp, Expr, ExprKind, Expression, Func};
use super::index::QueryIndex;
use super::value::Val;
use crate::error::{Error, Result};

/// What an expression can see.
pub struct Env<'a, 'b> {
    pub idx: &'a QueryIndex,
    /// Values of the variables by slot; `None` when unbound.
    pub vars: &'b [Option<Val<'a>>],
    /// The context entity, whose fields bare names read.
    pub this: Option<&'a Value>,
}

/// Evaluate `expr`.
pub fn eval<'a>(expr: &'a Expression, env: &Env<'a, '_>) -> Result<Val<'a>> {
    Evaluator { src: &expr.src, env }.eval(&expr.root)
}

/// A value as JSON for output: entities become their whole value.
pub fn to_output(value: &Val, idx: &QueryIndex) -> Result<Value> {
    Ok(match value {
        Val::Entity(id) => idx.entity_value(id).cloned().ok_or_else(|| missing(id))?,
        Val::List(items) => {
            Value::Array(items.iter().map(|v| to_output(v, idx)).collect::<Result<_>>()?)
        }
        other => other.to_json(),
    })
}

fn missing(id: &str) -> Error {
    Error::NotFound(format!("no entity has the id '{id}'; check the id or create the entity"))
}

struct Evaluator<'a, 'b, 'e> {
    src: &'a str,
    env: &'e Env<'a, 'b>,
}

impl<'a> Evaluator<'a, '_, '_> {
    fn type_error(&self, e: &Expr, message: String) -> Error {
        Error::TypeError(format!("in '{}': {message}", &self.src[e.start..e.end]))
    }

    fn resolve(&self, id: &str, e: &Expr) -> Result<&'a Value> {
        self.env.idx.entity_value(id).ok_or_else(|| {
            Error::NotFound(format!("in '{}': {}", &self.src[e.start..e.end], missing(id)))
        })
    }

    fn eval(&self, e: &'a Expr) -> Result<Val<'a>> {
        match &e.kind {
            ExprKind::Lit(v) => Ok(v.clone()),
            ExprKind::List(items) => {
                Ok(Val::List(items.iter().map(|i| self.eval(i)).collect::<Result<_>>()?))
            }
            ExprKind::Entity(text) => self.entity_path(text, e),
            ExprKind::Var { name, slot } => match self.env.vars.get(*slot) {
                Some(Some(v)) => Ok(v.clone()),
                _ => {
                    Err(Error::InvalidArguments(format!("the variable ?{name} has no value here")))
                }
            },
            ExprKind::Field(name) => match self.env.this {
                Some(this) => Ok(this.get(name).map_or(Val::Null, Val::from_field)),
                None => Err(Error::InvalidArguments(format!(
                    "'{name}' reads a field of the context entity, and there is none; give an entity or write @id.{name}"
                ))),
            },
            ExprKind::Path(base, segments) => {
                let mut value = self.eval(base)?;
                for segment in segments {
                    value = self.get(value, segment, e)?;
                }
                Ok(value)
            }
            ExprKind::Neg(inner) => match self.eval(inner)? {
                Val::Int(i) => {
                    Ok(i.checked_neg().map_or_else(|| Val::Float(-(i as f64)), Val::Int))
                }
                Val::Float(f) => Ok(Val::Float(-f)),
                other => Err(self.type_error(
                    e,
                    format!(
                        "'-' expects a number, found {} ({})",
                        other.type_name(),
                        other.describe()
                    ),
                )),
            },
            ExprKind::Not(inner) => match self.eval(inner)? {
                Val::Bool(b) => Ok(Val::Bool(!b)),
                other => Err(self.type_error(
                    e,
                    format!(
                        "'not' expects a boolean, found {} ({})",
                        other.type_name(),
                        other.describe()
                    ),
                )),
            },
            ExprKind::Binary(op, left, right) => self.binary(*op, left, right, e),
            ExprKind::Call(func, args) => self.call(*func, args, e),
        }
    }

    /// `@id.path`: the longest prefix at a `.` that is an existing id is the entity.
    fn entity_path(&self, text: &'a str, e: &Expr) -> Result<Val<'a>> {
        let mut cut = text.len();
        loop {
            let id = &text[..cut];
            if self.env.idx.lookup(id).is_some() {
                let mut value = Val::Entity(Cow::Borrowed(id));
                if cut < text.len() {
                    for segment in text[cut + 1..].split('.') {
                        value = self.get(value, segment, e)?;
                    }
                }
                return Ok(value);
            }
            match id.rfind('.') {
                Some(dot) => cut = dot,
                None => {
                    return Err(Error::NotFound(format!(
                        "in '{}': {}",
                        &self.src[e.start..e.end],
                        missing(id)
                    )));
                }
            }
        }
    }

    /// One step of a path. References are followed; a string that is an entity id reads as
    /// that entity (variables bound by patterns hold ids).
    fn get(&self, value: Val<'a>, segment: &str, e: &Expr) -> Result<Val<'a>> {
        let field = |object: &'a Value| object.get(segment).map_or(Val::Null, Val::from_field);
        match value {
            Val::Null => Ok(Val::Null),
            Val::Entity(id) => Ok(field(self.resolve(&id, e)?)),
            Val::Json(object @ Value::Object(_)) => Ok(field(object)),
            Val::Str(s) => match self.env.idx.entity_value(&s) {
                Some(object) => Ok(field(object)),
                None => Err(self.type_error(
                    e,
                    format!(
                        "cannot read '.{segment}' of a string ({}), which is not an entity id",
                        Val::Str(s.clone()).describe()
                    ),
                )),
            },
            Val::Json(Value::Array(items)) => match index(segment) {
                Some(i) => Ok(items.get(i).map_or(Val::Null, Val::from_field)),
                None => Err(self.type_error(
                    e,
                    format!("cannot read '.{segment}' of an array; use an index such as .0"),
                )),
            },
            Val::List(items) => match index(segment) {
                Some(i) => Ok(items.get(i).cloned().unwrap_or(Val::Null)),
                None => Err(self.type_error(
                    e,
                    format!("cannot read '.{segment}' of an array; use an index such as .0"),
                )),
            },
            other => Err(self.type_error(
                e,
                format!(
                    "cannot read '.{segment}' of a {} ({})",
                    other.type_name(),
                    other.describe()
                ),
            )),
        }
    }

    fn boolean(&self, value: Val, op: &str, e: &Expr) -> Result<bool> {
        match value {
            Val::Bool(b) => Ok(b),
            other => Err(self.type_error(
                e,
                format!(
                    "'{op}' expects booleans, found {} ({})",
                    other.type_name(),
                    other.describe()
                ),
            )),
        }
    }

    fn binary(&self, op: BinOp, left: &'a Expr, right: &'a Expr, e: &Expr) -> Result<Val<'a>> {
        match op {
            BinOp::And => {
                let l = self.boolean(self.eval(left)?, "and", e)?;
                Ok(Val::Bool(l && self.boolean(self.eval(right)?, "and", e)?))
            }
            BinOp::Or => {
                let l = self.boolean(self.eval(left)?, "or", e)?;
                Ok(Val::Bool(l || self.boolean(self.eval(right)?, "or", e)?))
            }
            _ => {
                let l = self.eval(left)?;
                let r = self.eval(right)?;
                match op {
                    BinOp::Eq => Ok(Val::Bool(l == r)),
                    BinOp::Ne => Ok(Val::Bool(l != r)),
                    BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                        let Some(ord) = self.compare(&l, &r, op, e)? else {
                            return Ok(Val::Bool(false));
                        };
                        Ok(Val::Bool(match op {
                            BinOp::Lt => ord == Ordering::Less,
                            BinOp::Le => ord != Ordering::Greater,
                            BinOp::Gt => ord == Ordering::Greater,
                            _ => ord != Ordering::Less,
                        }))
                    }
                    _ => self.arithmetic(op, l, r, e),
                }
            }
        }
    }

    /// The order of two numbers or two strings; `None` when either is null.
    fn compare(&self, l: &Val, r: &Val, op: BinOp, e: &Expr) -> Result<Option<Ordering>> {
        match (l, r) {
            (Val::Null, _) | (_, Val::Null) => Ok(None),
            (Val::Int(_) | Val::Float(_), Val::Int(_) | Val::Float(_))
            | (Val::Str(_) | Val::Entity(_), Val::Str(_) | Val::Entity(_)) => Ok(Some(l.cmp(r))),
            _ => Err(self.type_error(
                e,
                format!(
                    "cannot compare {} ({}) with {} ({}) using '{}'; compare numbers with numbers or strings with strings",
                    l.type_name(),
                    l.describe(),
                    r.type_name(),
                    r.describe(),
                    op.symbol()
                ),
            )),
        }
    }

    fn arithmetic(&self, op: BinOp, l: Val<'a>, r: Val<'a>, e: &Expr) -> Result<Val<'a>> {
        if let (BinOp::Add, Val::Str(a), Val::Str(b)) = (op, &l, &r) {
            return Ok(Val::Str(Cow::Owned(format!("{a}{b}"))));
        }
        let (Some(a), Some(b)) = (l.as_f64(), r.as_f64()) else {
            let verb = match op {
                BinOp::Add => "add",
                BinOp::Sub => "subtract",
                BinOp::Mul => "multiply",
                _ => "divide",
            };
            return Err(self.type_error(
                e,
                format!(
                    "cannot {verb} {} ({}) and {} ({}) with '{}'; arithmetic needs numbers ('+' also joins two strings)",
                    l.type_name(),
                    l.describe(),
                    r.type_name(),
                    r.describe(),
                    op.symbol()
                ),
            ));
        };
        if op == BinOp::Div && b == 0.0 {
            return Err(self.type_error(
                e,
                "division by zero; guard the divisor, as in '?d != 0 and ?n / ?d > 1'".to_owned(),
            ));
        }
        let exact = match (&l, &r) {
            (Val::Int(x), Val::Int(y)) => match op {
                BinOp::Add => x.checked_add(*y),
                BinOp::Sub => x.checked_sub(*y),
                BinOp::Mul => x.checked_mul(*y),
                _ => (x.checked_rem(*y) == Some(0)).then(|| x.checked_div(*y)).flatten(),
            },
            _ => None,
        };
        if let Some(n) = exact {
            return Ok(Val::Int(n));
        }
        let result = match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            _ => a / b,
        };
        Val::try_float(result).ok_or_else(|| {
            self.type_error(
                e,
                format!("the result of '{}' is out of the range of numbers", op.symbol()),
            )
        })
    }

    fn call(&self, func: Func, args: &'a [Expr], e: &Expr) -> Result<Val<'a>> {
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            values.push(self.eval(arg)?);
        }
        let name = func.name();
        let wrong = |what: &str, v: &Val| {
            self.type_error(
                e,
                format!("{name} expects {what}, found {} ({})", v.type_name(), v.describe()),
            )
        };
        let first = values.first().cloned().unwrap_or(Val::Null);
        match func {
            Func::Count => match &first {
                Val::Null => Ok(Val::Int(0)),
                v => match v.elements() {
                    Some(items) => Ok(Val::Int(items.len() as i64)),
                    None => Err(wrong("an array (use len for strings and objects)", v)),
                },
            },
            Func::Len => match &first {
                Val::Null => Ok(Val::Int(0)),
                Val::Str(s) => Ok(Val::Int(s.chars().count() as i64)),
                Val::Json(Value::Object(map)) => Ok(Val::Int(map.len() as i64)),
                Val::Entity(id) => {
                    Ok(Val::Int(self.resolve(id, e)?.as_object().map_or(0, |m| m.len()) as i64))
                }
                v => v
                    .elements()
                    .map(|items| Val::Int(items.len() as i64))
                    .ok_or_else(|| wrong("a string, an array or an object", v)),
            },
            Func::Lower | Func::Upper => match &first {
                Val::Null => Ok(Val::Null),
                Val::Str(s) => Ok(Val::Str(Cow::Owned(if func == Func::Lower {
                    s.to_lowercase()
                } else {
                    s.to_uppercase()
                }))),
                v => Err(wrong("a string", v)),
            },
            Func::Contains => {
                let needle = &values[1];
                match &first {
                    Val::Null => Ok(Val::Bool(false)),
                    Val::Str(s) => match needle {
                        Val::Str(n) => Ok(Val::Bool(s.contains(n.as_ref()))),
                        v => Err(wrong("a string to look for in a string", v)),
                    },
                    Val::Json(Value::Object(map)) => {
                        Ok(Val::Bool(needle.as_id().is_some_and(|k| map.contains_key(k))))
                    }
                    Val::Entity(id) => {
                        let object = self.resolve(id, e)?;
                        Ok(Val::Bool(needle.as_id().is_some_and(|k| object.get(k).is_some())))
                    }
                    v => match v.elements() {
                        Some(items) => Ok(Val::Bool(items.contains(needle))),
                        None => Err(wrong("a string, an array or an object", v)),
                    },
                }
            }
            Func::StartsWith => match (&first, &values[1]) {
                (Val::Null, _) => Ok(Val::Bool(false)),
                (Val::Str(s), Val::Str(p)) => Ok(Val::Bool(s.starts_with(p.as_ref()))),
                (Val::Str(_), v) => Err(wrong("a string prefix", v)),
                (v, _) => Err(wrong("a string", v)),
            },
            Func::Keys => {
                let object = match &first {
                    Val::Json(object @ Value::Object(_)) => *object,
                    Val::Entity(id) => self.resolve(id, e)?,
                    v => return Err(wrong("an object or an entity", v)),
                };
                let keys = object.as_object().into_iter().flatten();
                Ok(Val::List(keys.map(|(k, _)| Val::Str(Cow::Borrowed(k.as_str()))).collect()))
            }
            Func::Sum => {
                let items = match &first {
                    Val::Null => Vec::new(),
                    v => v.elements().ok_or_else(|| wrong("an array of numbers", v))?,
                };
                let mut total = Val::Int(0);
                for item in items {
                    if item.as_f64().is_none() {
                        return Err(wrong("numbers only", &item));
                    }
                    total = self.arithmetic(BinOp::Add, total, item, e)?;
                }
                Ok(total)
            }
            Func::Min | Func::Max => {
                let items = if values.len() == 1 {
                    match &first {
                        Val::Null => Vec::new(),
                        v => v.elements().ok_or_else(|| wrong("an array, or several values", v))?,
                    }
                } else {
                    values
                };
                let mut best: Option<Val<'a>> = None;
                for item in items {
                    if item.as_f64().is_none() && !matches!(item, Val::Str(_)) {
                        return Err(wrong("numbers or strings", &item));
                    }
                    if let Some(b) = best.as_ref().filter(|b| b.rank_kind() != item.rank_kind()) {
                        return Err(self.type_error(
                            e,
                            format!(
                                "{name} cannot order {} ({}) against {} ({})",
                                b.type_name(),
                                b.describe(),
                                item.type_name(),
                                item.describe()
                            ),
                        ));
                    }
                    let better = best.as_ref().is_none_or(|b| {
                        let ord = item.cmp(b);
                        if func == Func::Min {
                            ord == Ordering::Less
                        } else {
                            ord == Ordering::Greater
                        }
                    });
                    if better {
                        best = Some(item);
                    }
                }
                Ok(best.unwrap_or(Val::Null))
            }
            Func::Referrers => {
                let id = match &first {
                    Val::Str(s) | Val::Entity(s) => s.clone(),
                    Val::Json(object @ Value::Object(_)) => {
                        match object.get("id").and_then(Value::as_str) {
                            Some(id) => Cow::Borrowed(id),
                            None => return Err(wrong("an entity", &first)),
                        }
                    }
                    v => return Err(wrong("an entity or an id", v)),
                };
                let idx = self.env.idx;
                if idx.lookup(&id).is_none() {
                    return Err(Error::NotFound(format!(
                        "in '{}': {}",
                        &self.src[e.start..e.end],
                        missing(&id)
                    )));
                }
                let mut ids: Vec<&'a str> = idx.referrers(&id).iter().map(|n| idx.id(*n)).collect();
                ids.sort_unstable();
                Ok(Val::List(ids.into_iter().map(|s| Val::Str(Cow::Borrowed(s))).collect()))
            }
        }
    }
}

fn index(segment: &str) -> Option<usize> {
    if segment.bytes().all(|b| b.is_ascii_digit()) { segment.parse().ok() } else { None }
}

impl Val<'_> {
    /// Numbers and strings are the two kinds `min` and `max` order.
    fn rank_kind(&self) -> u8 {
        if self.as_f64().is_some() { 0 } else { 1 }
    }
}

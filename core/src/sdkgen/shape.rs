//! The model as data: the "shapes" a generated SDK carries so that its runtime checks every
//! value the core sends against the generated type (a decode error naming the field, not a
//! silent cast). Both runtimes read the same JSON.

use serde_json::{Map, Value, json};

use super::{Model, Ty};

/// A type as a shape: `{"kind": ...}` with the kind's details.
pub(super) fn shape(model: &Model, ty: &Ty) -> Value {
    match ty {
        Ty::Unknown => json!({"kind": "unknown"}),
        Ty::Null => json!({"kind": "null"}),
        Ty::Bool => json!({"kind": "boolean"}),
        Ty::Int => json!({"kind": "integer"}),
        Ty::Num => json!({"kind": "number"}),
        Ty::Str => json!({"kind": "string"}),
        Ty::Lit(values) => json!({"kind": "literal", "values": values}),
        Ty::Ref(t) => json!({"kind": "ref", "type": t}),
        Ty::Id(t) => json!({"kind": "id", "type": t}),
        Ty::Array(item) => json!({"kind": "array", "items": shape(model, item)}),
        Ty::Map(value) => json!({"kind": "map", "values": shape(model, value)}),
        Ty::Named(i) => json!({"kind": "named", "name": model.decls[*i].name}),
        Ty::Union(tys) => {
            json!({"kind": "union", "of": tys.iter().map(|t| shape(model, t)).collect::<Vec<_>>()})
        }
    }
}

/// Every declaration by name: `{"fields": [{"key", "shape", "required"}], "extra": shape or
/// null}` (`null`: no other keys allowed).
pub(super) fn decls(model: &Model) -> Value {
    let mut out = Map::new();
    for decl in &model.decls {
        let fields: Vec<Value> = decl
            .fields
            .iter()
            .map(|f| json!({"key": f.key, "shape": shape(model, &f.ty), "required": f.required}))
            .collect();
        let extra = decl.extra.as_ref().map_or(Value::Null, |t| shape(model, t));
        out.insert(decl.name.clone(), json!({"fields": fields, "extra": extra}));
    }
    Value::Object(out)
}

/// What a query variable bound through a field holds: a reference binds the referenced
/// entity's id, an array binds once per element (SPEC §8).
pub(super) fn binding(ty: &Ty) -> Ty {
    match ty {
        Ty::Ref(t) => Ty::Id(t.clone()),
        Ty::Array(item) => binding(item),
        Ty::Union(tys) => Ty::Union(tys.iter().map(binding).collect()),
        other => other.clone(),
    }
}

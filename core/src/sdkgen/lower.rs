//! JSON Schema -> the generator's model. Total: every schema, however hostile, lowers to a
//! sound type (one that accepts every value the schema accepts); where it is wider than the
//! schema, a note says why.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::names::Names;
use super::{Decl, Field, Lang, Model, Ty, TypeSchema};
use crate::schema::REF_KEYWORD;

/// How deep schemas nest before the rest is typed as unknown (schemas are data; the parser
/// already bounds their depth, this bounds what `$ref`s can chain).
const MAX_DEPTH: usize = 64;
/// How many schema nodes one generation reads at most; `$ref`s to non-object schemas are
/// inlined, so a chain of them could otherwise multiply.
const MAX_NODES: usize = 200_000;

pub(super) fn lower(types: &[&TypeSchema], lang: Lang) -> Model {
    let mut names = Names::new(lang);
    let mut lowerer = Lowerer {
        names: &mut names,
        decls: Vec::new(),
        targets: BTreeSet::new(),
        refs: HashMap::new(),
        budget: MAX_NODES,
    };
    // Entity types take their names first, so they keep their plain PascalCase names.
    let mut types_out = Vec::new();
    for ty in types {
        let name = lowerer.names.take(&[&ty.name]);
        lowerer.decls.push(Decl {
            name,
            doc: None,
            fields: Vec::new(),
            extra: None,
            notes: Vec::new(),
        });
        types_out.push((ty.name.clone(), lowerer.decls.len() - 1));
    }
    for (ty, (_, index)) in types.iter().zip(&types_out) {
        let prefix = lowerer.decls[*index].name.clone();
        let mut cx = Cx {
            root: &ty.schema,
            entity: Some(ty.name.as_str()),
            // `#` is the entity's own schema: a `$ref` to it is a recursion.
            stack: vec!["#".to_owned()],
            depth: 0,
        };
        let mut notes = Vec::new();
        let schema = match ty.schema.get("allOf").and_then(Value::as_array) {
            Some(parts) => {
                merge_all_of(&ty.schema, parts, &mut notes).unwrap_or_else(|| ty.schema.clone())
            }
            None => ty.schema.clone(),
        };
        let decl = lowerer.object(&mut cx, &schema, &prefix, &mut notes);
        let slot = &mut lowerer.decls[*index];
        slot.doc = decl.doc;
        slot.fields = decl.fields;
        slot.extra = decl.extra;
        slot.notes = notes;
        slot.notes.extend(decl.notes);
        if !is_object_schema(&schema) {
            slot.notes.push(
                "the schema does not say the entity is an object; it is typed as one because \
                 every entity is"
                    .to_owned(),
            );
        }
    }
    Model { decls: lowerer.decls, types: types_out, targets: lowerer.targets.into_iter().collect() }
}

struct Lowerer<'n> {
    names: &'n mut Names,
    decls: Vec<Decl>,
    targets: BTreeSet<String>,
    /// Object schemas reached by `$ref`, by (entity type, pointer): declared once, reused.
    refs: HashMap<(String, String), usize>,
    budget: usize,
}

/// Where lowering is: the schema document (for `$ref`), the entity type it belongs to, and
/// the `$ref`s being expanded (a cycle among them is a recursive schema).
struct Cx<'a> {
    root: &'a Value,
    entity: Option<&'a str>,
    stack: Vec<String>,
    depth: usize,
}

fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => schema.get("properties").is_some(),
    }
}

/// The text a declaration or field shows as its documentation.
fn doc_of(schema: &Value) -> Option<String> {
    let text =
        |key| schema.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    text("description").or_else(|| text("title")).map(str::to_owned)
}

impl Lowerer<'_> {
    /// The fields of an object schema, as a declaration (name and place filled by the caller).
    fn object(
        &mut self,
        cx: &mut Cx,
        schema: &Value,
        prefix: &str,
        notes: &mut Vec<String>,
    ) -> Decl {
        let mut decl = Decl {
            name: String::new(),
            doc: doc_of(schema),
            fields: Vec::new(),
            extra: None,
            notes: Vec::new(),
        };
        let empty = Map::new();
        let props = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let is_entity = cx.entity.is_some() && cx.depth == 0;
        for (key, sub) in props {
            let mut field_notes = Vec::new();
            let ty = if is_entity && key == "id" && !has_ref(sub) {
                let entity = cx.entity.unwrap_or_default().to_owned();
                self.targets.insert(entity.clone());
                Ty::Id(entity)
            } else {
                cx.depth += 1;
                let ty = self.ty(cx, sub, &[prefix, key], &mut field_notes);
                cx.depth -= 1;
                ty
            };
            decl.fields.push(Field {
                key: key.clone(),
                ty,
                required: required.contains(key.as_str()),
                doc: doc_of(sub),
                notes: field_notes,
            });
        }
        for key in &required {
            if !props.contains_key(*key) {
                decl.fields.push(Field {
                    key: (*key).to_owned(),
                    ty: Ty::Unknown,
                    required: true,
                    doc: None,
                    notes: vec!["required but not described under `properties`".to_owned()],
                });
            }
        }
        decl.extra = match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) | None => Some(Ty::Unknown),
            Some(sub) => {
                let mut sub_notes = Vec::new();
                let ty = self.ty(cx, sub, &[prefix, "extra"], &mut sub_notes);
                if decl.fields.is_empty() && sub_notes.is_empty() {
                    Some(ty)
                } else {
                    decl.notes.push(
                        "other keys hold values of the `additionalProperties` schema; typed as \
                         unknown, since a key's type cannot differ from the named fields' here"
                            .to_owned(),
                    );
                    Some(Ty::Unknown)
                }
            }
        };
        if let Some(patterns) = schema.get("patternProperties").and_then(Value::as_object)
            && !patterns.is_empty()
        {
            let list: Vec<String> = patterns.keys().map(|k| format!("`{k}`")).collect();
            decl.notes.push(format!(
                "patternProperties ({}) cannot be expressed: keys matching them are typed as \
                 unknown",
                list.join(", ")
            ));
            decl.extra = Some(Ty::Unknown);
        }
        for keyword in ["dependentSchemas", "dependentRequired", "unevaluatedProperties", "if"] {
            if schema.get(keyword).is_some() {
                notes.push(format!("`{keyword}` is not expressed: the type may accept more"));
            }
        }
        decl
    }

    /// Declare an object schema as a named type.
    fn declare(
        &mut self,
        cx: &mut Cx,
        schema: &Value,
        words: &[&str],
        notes: &mut Vec<String>,
    ) -> Ty {
        let name = self.names.take(words);
        let index = self.decls.len();
        self.decls.push(Decl {
            name: name.clone(),
            doc: None,
            fields: Vec::new(),
            extra: None,
            notes: Vec::new(),
        });
        let mut decl = self.object(cx, schema, &name, notes);
        decl.name = name;
        self.decls[index] = decl;
        Ty::Named(index)
    }

    fn ty(&mut self, cx: &mut Cx, schema: &Value, words: &[&str], notes: &mut Vec<String>) -> Ty {
        if self.budget == 0 || cx.depth > MAX_DEPTH {
            notes.push("the schema nests too deep to type here: typed as unknown".to_owned());
            return Ty::Unknown;
        }
        self.budget -= 1;
        let map = match schema {
            Value::Bool(true) => return Ty::Unknown,
            Value::Bool(false) => {
                notes.push("the schema `false` accepts nothing: typed as unknown".to_owned());
                return Ty::Unknown;
            }
            Value::Object(map) => map,
            _ => {
                notes.push("not a schema: typed as unknown".to_owned());
                return Ty::Unknown;
            }
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(cx, reference, words, notes);
        }
        if let Some(target) = map.get(REF_KEYWORD) {
            let targets: Vec<&str> = match target {
                Value::String(t) => vec![t.as_str()],
                Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !targets.is_empty() {
                for t in &targets {
                    self.targets.insert((*t).to_owned());
                }
                return union(targets.into_iter().map(|t| Ty::Ref(t.to_owned())).collect());
            }
        }
        if let Some(value) = map.get("const") {
            return self.literals(std::slice::from_ref(value), notes);
        }
        if let Some(values) = map.get("enum").and_then(Value::as_array) {
            return self.literals(values, notes);
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(branches) = map.get(keyword).and_then(Value::as_array) {
                let objects = branches.iter().filter(|b| is_object_schema(b)).count();
                if keyword == "oneOf" && objects > 1 {
                    notes.push(
                        "oneOf of objects: typed as their union, which does not exclude a value \
                         that matches several"
                            .to_owned(),
                    );
                }
                let mut tys = Vec::new();
                for (i, branch) in branches.iter().enumerate() {
                    let option = format!("option{}", i + 1);
                    let mut words = words.to_vec();
                    words.push(&option);
                    cx.depth += 1;
                    tys.push(self.ty(cx, branch, &words, notes));
                    cx.depth -= 1;
                }
                if tys.is_empty() {
                    notes.push(format!("an empty `{keyword}`: typed as unknown"));
                    return Ty::Unknown;
                }
                return union(tys);
            }
        }
        if let Some(parts) = map.get("allOf").and_then(Value::as_array) {
            return self.all_of(cx, map, parts, words, notes);
        }
        if map.get("not").is_some() {
            notes.push("`not` is not expressed: the type may accept more".to_owned());
        }
        match map.get("type") {
            Some(Value::String(t)) => self.of_type(cx, schema, t, words, notes),
            Some(Value::Array(list)) => {
                let mut tys = Vec::new();
                for t in list.iter().filter_map(Value::as_str) {
                    tys.push(self.of_type(cx, schema, t, words, notes));
                }
                if tys.is_empty() { Ty::Unknown } else { union(tys) }
            }
            Some(_) => {
                notes.push("a `type` that is not a type name: typed as unknown".to_owned());
                Ty::Unknown
            }
            None if map.contains_key("properties") => {
                self.of_type(cx, schema, "object", words, notes)
            }
            None if map.contains_key("items") => self.of_type(cx, schema, "array", words, notes),
            None => Ty::Unknown,
        }
    }

    fn of_type(
        &mut self,
        cx: &mut Cx,
        schema: &Value,
        t: &str,
        words: &[&str],
        notes: &mut Vec<String>,
    ) -> Ty {
        match t {
            "null" => Ty::Null,
            "boolean" => Ty::Bool,
            "integer" => Ty::Int,
            "number" => Ty::Num,
            "string" => Ty::Str,
            "array" => {
                if schema.get("prefixItems").is_some() {
                    notes.push("prefixItems (a tuple) is typed as an array of unknown".to_owned());
                    return Ty::Array(Box::new(Ty::Unknown));
                }
                let Some(items) = schema.get("items") else {
                    return Ty::Array(Box::new(Ty::Unknown));
                };
                let mut words = words.to_vec();
                words.push("item");
                cx.depth += 1;
                let ty = self.ty(cx, items, &words, notes);
                cx.depth -= 1;
                Ty::Array(Box::new(ty))
            }
            "object" => {
                let has_props = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| !p.is_empty())
                    || schema.get("required").is_some()
                    || schema.get("patternProperties").is_some();
                if !has_props {
                    return match schema.get("additionalProperties") {
                        Some(Value::Bool(true)) | None => Ty::Map(Box::new(Ty::Unknown)),
                        Some(Value::Bool(false)) => Ty::Map(Box::new(Ty::Unknown)),
                        Some(sub) => {
                            let mut words = words.to_vec();
                            words.push("value");
                            cx.depth += 1;
                            let ty = self.ty(cx, sub, &words, notes);
                            cx.depth -= 1;
                            Ty::Map(Box::new(ty))
                        }
                    };
                }
                self.declare(cx, schema, words, notes)
            }
            other => {
                notes.push(format!("the unknown type `{other}`: typed as unknown"));
                Ty::Unknown
            }
        }
    }

    fn literals(&mut self, values: &[Value], notes: &mut Vec<String>) -> Ty {
        if values.iter().all(|v| !v.is_object() && !v.is_array()) && !values.is_empty() {
            let mut out: Vec<Value> = Vec::new();
            for v in values {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            return Ty::Lit(out);
        }
        notes.push("an `enum` or `const` holding objects or arrays: typed as unknown".to_owned());
        Ty::Unknown
    }

    /// `allOf`: merged into one object when every part is an object schema (see
    /// `merge_all_of`), else typed by its first part alone, with a note.
    fn all_of(
        &mut self,
        cx: &mut Cx,
        map: &Map<String, Value>,
        parts: &[Value],
        words: &[&str],
        notes: &mut Vec<String>,
    ) -> Ty {
        match merge_all_of_in(cx.root, map, parts, notes) {
            Some(merged) => self.ty(cx, &merged, words, notes),
            None => {
                notes.push(
                    "allOf of schemas that are not all objects: typed by the first one alone"
                        .to_owned(),
                );
                let first = parts.first().cloned().unwrap_or(Value::Bool(true));
                self.ty(cx, &first, words, notes)
            }
        }
    }

    fn reference(
        &mut self,
        cx: &mut Cx,
        reference: &str,
        words: &[&str],
        notes: &mut Vec<String>,
    ) -> Ty {
        let Some(target) = pointer(cx.root, reference) else {
            notes.push(format!(
                "the `$ref` {reference} points outside this schema document: typed as unknown"
            ));
            return Ty::Unknown;
        };
        if cx.stack.iter().any(|r| r == reference) {
            notes.push(format!(
                "the recursive `$ref` {reference}: typed as unknown at the recursion"
            ));
            return Ty::Unknown;
        }
        let key = (cx.entity.unwrap_or_default().to_owned(), reference.to_owned());
        if let Some(index) = self.refs.get(&key) {
            return Ty::Named(*index);
        }
        let target = target.clone();
        cx.stack.push(reference.to_owned());
        cx.depth += 1;
        let last = reference.rsplit('/').next().unwrap_or("ref").to_owned();
        let mut ref_words: Vec<&str> = words.first().copied().into_iter().collect();
        ref_words.push(&last);
        let ty = if is_object_schema(&target) && target.get(REF_KEYWORD).is_none() {
            let mut own = Vec::new();
            let ty = self.ty(cx, &target, &ref_words, &mut own);
            notes.extend(own);
            if let Ty::Named(index) = ty {
                self.refs.insert(key, index);
            }
            ty
        } else {
            self.ty(cx, &target, words, notes)
        };
        cx.depth -= 1;
        cx.stack.pop();
        ty
    }
}

fn has_ref(schema: &Value) -> bool {
    schema.get(REF_KEYWORD).is_some()
}

/// The schema at a local reference (`#`, `#/$defs/x`), if it is one.
fn pointer<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    let fragment = fragment.strip_prefix('/')?;
    fragment.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).try_fold(root, |v, t| {
        match v {
            Value::Object(m) => m.get(&t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
    })
}

/// A union, flattened, without repeats; one member is itself; `unknown` absorbs the rest.
fn union(tys: Vec<Ty>) -> Ty {
    let mut out: Vec<Ty> = Vec::new();
    for ty in tys {
        let members = match ty {
            Ty::Union(inner) => inner,
            other => vec![other],
        };
        for m in members {
            if m == Ty::Unknown {
                return Ty::Unknown;
            }
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    if out.len() == 1 { out.pop().unwrap_or(Ty::Unknown) } else { Ty::Union(out) }
}

/// An entity schema's `allOf` merged into it (`None` when a part is not an object schema).
fn merge_all_of(root: &Value, parts: &[Value], notes: &mut Vec<String>) -> Option<Value> {
    let map = root.as_object()?;
    let merged = merge_all_of_in(root, map, parts, notes);
    if merged.is_none() {
        notes.push(
            "allOf of schemas that are not all objects: only the schema's own properties are typed"
                .to_owned(),
        );
    }
    merged
}

/// The object `map` with the properties and `required` of every `allOf` part (a part may be
/// a local `$ref`). `None` when a part is not an object schema. Each part's
/// `additionalProperties` speaks only of its own properties, so the merge cannot keep a
/// `false` soundly: the merged object is open.
fn merge_all_of_in(
    root: &Value,
    map: &Map<String, Value>,
    parts: &[Value],
    notes: &mut Vec<String>,
) -> Option<Value> {
    let mut merged = map.clone();
    merged.remove("allOf");
    let mut props =
        merged.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut required: Vec<Value> =
        merged.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    for part in parts {
        let part = match part.get("$ref").and_then(Value::as_str) {
            Some(r) => pointer(root, r)?,
            None => part,
        };
        if !is_object_schema(part) {
            return None;
        }
        if let Some(p) = part.get("properties").and_then(Value::as_object) {
            for (k, v) in p {
                props.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        if let Some(r) = part.get("required").and_then(Value::as_array) {
            required.extend(r.iter().cloned());
        }
    }
    if merged.get("additionalProperties") == Some(&Value::Bool(false)) {
        notes.push("allOf merged into one object, which is open: each part's `additionalProperties` speaks only of its own properties".to_owned());
    }
    merged.remove("additionalProperties");
    merged.insert("type".into(), Value::from("object"));
    merged.insert("properties".into(), Value::Object(props));
    merged.insert("required".into(), Value::Array(required));
    Some(Value::Object(merged))
}

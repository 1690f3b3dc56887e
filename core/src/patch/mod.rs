//! Patches (SPEC §9): entity operations planned against one snapshot into document changes.
//!
//! A plan works on values: every operation changes the working value of the documents it
//! touches, in order, and at the end each touched document is rewritten with minimal text
//! edits (`crate::edit`). A plan never writes; the caller commits it through the store, whose
//! save authority decides. Temporary names `?name` are resolved before any operation runs, so
//! a `set` may reference an entity created later in the same patch.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::analysis::{Analysis, Document};
use crate::edit;
use crate::error::{Error, Result};
use crate::model;
use crate::syntax::{self, Lang};

/// One operation of a patch.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Create an entity (its `id` may be a temporary name `?name`).
    Create(Map<String, Value>),
    /// Set fields (dotted keys set nested fields) of entity `id`.
    Set { id: String, fields: Vec<(String, Value)> },
    /// Remove fields of entity `id`.
    Unset { id: String, fields: Vec<String> },
    /// Change an entity's id and every reference to it.
    Rename { from: String, to: String },
    /// Delete an entity.
    Delete(String),
}

impl Op {
    fn name(&self) -> &'static str {
        match self {
            Op::Create(_) => "create",
            Op::Set { .. } => "set",
            Op::Unset { .. } => "unset",
            Op::Rename { .. } => "rename",
            Op::Delete(_) => "delete",
        }
    }
}

/// A list of operations applied in one transaction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Patch {
    pub ops: Vec<Op>,
}

impl Patch {
    /// Read a patch from DUST or JSON text (`ops [...]`).
    pub fn from_text(text: &str) -> Result<Patch> {
        Patch::from_value(&read_value(text, "patch")?)
    }

    /// Read a patch from its value `{ops: [...]}`.
    pub fn from_value(value: &Value) -> Result<Patch> {
        let bad = |msg: String| Error::InvalidArguments(msg);
        let ops = value
            .get("ops")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("a patch is an object with an array `ops`, e.g. `ops [{create {id ?x type person name Ann}}]`".into()))?;
        let mut out = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            out.push(read_op(op).map_err(|why| bad(format!("ops[{i}]: {why}")))?);
        }
        Ok(Patch { ops: out })
    }
}

/// Read a value given as JSON or DUST text; a syntax error is `invalid-arguments`.
pub fn read_value(text: &str, what: &str) -> Result<Value> {
    let trimmed = text.trim_start();
    let json = syntax::parse(text, Lang::Json);
    if (trimmed.starts_with('{') || trimmed.starts_with('[')) && json.is_clean() {
        return Ok(json.value);
    }
    let dust = syntax::parse(text, Lang::Dust);
    match dust.errors.first() {
        None => Ok(dust.value),
        Some(e) => Err(Error::InvalidArguments(format!(
            "the {what} is neither JSON nor DUST: {} at byte {}",
            e.message, e.span.start
        ))),
    }
}

fn read_op(op: &Value) -> std::result::Result<Op, String> {
    let map = op.as_object().filter(|m| m.len() == 1).ok_or(
        "an operation is an object with one key: create, set, unset, rename or delete".to_owned(),
    )?;
    let (name, body) = map.iter().next().expect("one key");
    let text = |v: Option<&Value>, field: &str| -> std::result::Result<String, String> {
        v.and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("{name} needs a string `{field}`"))
    };
    match name.as_str() {
        "create" => {
            let entity = body.as_object().ok_or("create takes the entity object")?;
            Ok(Op::Create(entity.clone()))
        }
        "set" => {
            let id = text(body.get("id"), "id")?;
            let fields: Vec<(String, Value)> = body
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.as_str() != "id")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if fields.is_empty() {
                return Err("set needs at least one field besides `id`".into());
            }
            Ok(Op::Set { id, fields })
        }
        "unset" => {
            let id = text(body.get("id"), "id")?;
            let mut fields = Vec::new();
            if let Some(field) = body.get("field") {
                fields.push(text(Some(field), "field")?);
            }
            if let Some(list) = body.get("fields") {
                let list = list.as_array().ok_or("unset `fields` is a list of field names")?;
                for f in list {
                    fields.push(text(Some(f), "fields")?);
                }
            }
            if fields.is_empty() {
                return Err("unset needs `field` or `fields`".into());
            }
            Ok(Op::Unset { id, fields })
        }
        "rename" => Ok(Op::Rename {
            from: text(body.get("from"), "from")?,
            to: text(body.get("to"), "to")?,
        }),
        "delete" => {
            let id = match body {
                Value::String(s) => s.clone(),
                other => text(other.get("id"), "id")?,
            };
            Ok(Op::Delete(id))
        }
        other => {
            Err(format!("unknown operation `{other}`; use create, set, unset, rename or delete"))
        }
    }
}

/// What a patch would do: the new text of every touched document and what happens to entities.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Touched documents in path order.
    pub documents: Vec<PlannedDocument>,
    /// Every temporary name (with its `?`) and the id it resolves to.
    pub resolved: BTreeMap<String, String>,
    pub created: Vec<String>,
    pub changed: Vec<String>,
    pub deleted: Vec<String>,
}

/// One document a plan touches.
#[derive(Clone, Debug)]
pub struct PlannedDocument {
    pub path: String,
    /// The document as the plan found it; `None` for a new document.
    pub before: Option<Arc<Document>>,
    /// The new text; `None` when the document is deleted.
    pub after: Option<String>,
}

/// Plan `patch` against `analysis`. Fails with `invalid-arguments` naming the operation when an
/// operation cannot apply (unknown id or temporary name, duplicate id, ...); nothing is written.
pub fn plan(analysis: &Analysis, patch: &Patch) -> Result<Plan> {
    let mut work = Work { analysis, docs: BTreeMap::new(), moved: HashMap::new() };
    let resolved = resolve_temporary_names(analysis, patch)?;
    for (i, op) in patch.ops.iter().enumerate() {
        let fail =
            |why: String| Error::InvalidArguments(format!("ops[{i}] ({}): {why}", op.name()));
        work.apply(op, &resolved).map_err(fail)?;
    }
    Ok(work.finish(resolved))
}

/// Resolve every `?name` of a create to `<type>/<slug>`, unique in the store and the patch.
fn resolve_temporary_names(analysis: &Analysis, patch: &Patch) -> Result<BTreeMap<String, String>> {
    let mut resolved = BTreeMap::new();
    let explicit: HashSet<&str> = patch
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Create(e) => e.get("id").and_then(Value::as_str).filter(|id| !id.starts_with('?')),
            Op::Rename { to, .. } => Some(to.as_str()),
            _ => None,
        })
        .collect();
    let mut taken: HashSet<String> = HashSet::new();
    for (i, op) in patch.ops.iter().enumerate() {
        let Op::Create(entity) = op else { continue };
        let Some(name) = entity.get("id").and_then(Value::as_str).filter(|id| id.starts_with('?'))
        else {
            continue;
        };
        let fail = |why: String| Error::InvalidArguments(format!("ops[{i}] (create): {why}"));
        if name.len() < 2 {
            return Err(fail("a temporary name is `?` followed by a name, e.g. `?messiah`".into()));
        }
        if resolved.contains_key(name) {
            return Err(fail(format!("the temporary name {name} is created twice")));
        }
        let ty = entity
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| fail("a new entity needs a string `type`".into()))?;
        let base = ["title", "name"]
            .iter()
            .find_map(|k| entity.get(*k).and_then(Value::as_str))
            .map(slug)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| slug(&name[1..]));
        let base = if base.is_empty() { "entity".to_owned() } else { base };
        let mut id = format!("{ty}/{base}");
        let mut n = 2;
        while !analysis.entity(&id).is_empty()
            || explicit.contains(id.as_str())
            || taken.contains(&id)
        {
            id = format!("{ty}/{base}-{n}");
            n += 1;
        }
        if let Some(why) = model::id_problem(&id) {
            return Err(fail(format!(
                "the id {id} made for {name} is not valid ({why}); give an explicit id"
            )));
        }
        taken.insert(id.clone());
        resolved.insert(name.to_owned(), id);
    }
    Ok(resolved)
}

/// A slug: lowercase ASCII letters and digits, other runs turned into one `-`, at most 60 chars.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= 60 {
            break;
        }
    }
    out.trim_end_matches('-').to_owned()
}

struct WorkDoc {
    before: Option<Arc<Document>>,
    lang: Lang,
    /// `None` when the document is deleted.
    value: Option<Value>,
}

struct Work<'a> {
    analysis: &'a Analysis,
    docs: BTreeMap<String, WorkDoc>,
    /// Entities whose place differs from the snapshot's: created or renamed ids (`Some(path)`)
    /// and deleted or renamed-away ids (`None`).
    moved: HashMap<String, Option<String>>,
}

type Step = std::result::Result<(), String>;

impl Work<'_> {
    fn apply(&mut self, op: &Op, resolved: &BTreeMap<String, String>) -> Step {
        let id_of = |id: &str| -> std::result::Result<String, String> {
            if id.starts_with('?') {
                resolved.get(id).cloned().ok_or_else(|| unknown_name(id))
            } else {
                Ok(id.to_owned())
            }
        };
        match op {
            Op::Create(entity) => {
                let mut entity = Value::Object(entity.clone());
                resolve_refs(&mut entity, resolved)?;
                let id = entity
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or("a new entity needs a string `id`")?;
                let id = id_of(id)?;
                if let Some(why) = model::id_problem(&id) {
                    return Err(format!("{id} is not a valid id: {why}"));
                }
                if self.exists(&id) {
                    return Err(format!("an entity {id} already exists; choose another id"));
                }
                let ty = entity
                    .get("type")
                    .and_then(Value::as_str)
                    .ok_or("a new entity needs a string `type`")?;
                let ty = ty.to_owned();
                let config = self.analysis.config().type_config(&ty);
                entity["id"] = Value::String(id.clone());
                let path = self.new_path(&config.dir, &id, &ty, config.format);
                self.docs.insert(
                    path.clone(),
                    WorkDoc { before: None, lang: config.format, value: Some(entity) },
                );
                self.moved.insert(id, Some(path));
            }
            Op::Set { id, fields } => {
                let id = id_of(id)?;
                let entity = self.entity_mut(&id)?;
                for (key, value) in fields {
                    if key == "id" {
                        return Err("the id cannot be set; use rename".into());
                    }
                    let mut value = value.clone();
                    resolve_refs(&mut value, resolved)?;
                    set_path(entity, key, value)?;
                }
            }
            Op::Unset { id, fields } => {
                let id = id_of(id)?;
                let entity = self.entity_mut(&id)?;
                for key in fields {
                    if key == "id" || key == "type" {
                        return Err(format!("`{key}` cannot be removed from an entity"));
                    }
                    if !unset_path(entity, key) {
                        return Err(format!("{id} has no field {key}"));
                    }
                }
            }
            Op::Rename { from, to } => {
                let from = id_of(from)?;
                if let Some(why) = model::id_problem(to) {
                    return Err(format!("{to} is not a valid id: {why}"));
                }
                if self.exists(to) {
                    return Err(format!("an entity {to} already exists; choose another new id"));
                }
                let path = self.locate(&from)?;
                self.entity_mut(&from)?.insert("id".into(), Value::String(to.clone()));
                self.moved.insert(from.clone(), None);
                self.moved.insert(to.clone(), Some(path));
                let mut paths: BTreeSet<String> =
                    self.analysis.referrers(&from).into_iter().map(str::to_owned).collect();
                paths.extend(self.docs.keys().cloned());
                let (old_ref, new_ref) = (format!("@{from}"), format!("@{to}"));
                for path in paths {
                    self.load(&path)?;
                    if let Some(value) = self.docs.get_mut(&path).and_then(|d| d.value.as_mut()) {
                        replace_string(value, &old_ref, &new_ref);
                    }
                }
            }
            Op::Delete(id) => {
                let id = id_of(id)?;
                let path = self.locate(&id)?;
                let doc = self.docs.get_mut(&path).expect("located documents are loaded");
                let value = doc.value.as_mut().expect("a located entity's document exists");
                match value {
                    Value::Array(items) => {
                        items.retain(|item| item.get("id").and_then(Value::as_str) != Some(&id))
                    }
                    _ => doc.value = None,
                }
                self.moved.insert(id, None);
            }
        }
        Ok(())
    }

    fn exists(&self, id: &str) -> bool {
        match self.moved.get(id) {
            Some(place) => place.is_some(),
            None => !self.analysis.entity(id).is_empty(),
        }
    }

    /// The document holding `id` now, loaded into the working set.
    fn locate(&mut self, id: &str) -> std::result::Result<String, String> {
        let path = match self.moved.get(id) {
            Some(Some(path)) => path.clone(),
            Some(None) => return Err(format!("{id} was deleted or renamed earlier in this patch")),
            None => match self.analysis.entity(id) {
                [] => {
                    let hint = self.analysis.closest_ids(id, 1);
                    return Err(match hint.first() {
                        Some(near) => format!("no entity {id}; did you mean {near}?"),
                        None => format!("no entity {id}; check the id"),
                    });
                }
                [loc] => loc.path.to_string(),
                many => {
                    return Err(format!(
                        "{id} is defined in {} places; fix the duplicate-id first",
                        many.len()
                    ));
                }
            },
        };
        self.load(&path)?;
        Ok(path)
    }

    fn load(&mut self, path: &str) -> Step {
        if self.docs.contains_key(path) {
            return Ok(());
        }
        let doc = self.analysis.document(path).ok_or_else(|| format!("no document {path}"))?;
        if doc.parse.root.is_none() {
            return Err(format!("{path} holds no readable value; fix its syntax first"));
        }
        let value = Some(doc.parse.value.clone());
        self.docs
            .insert(path.to_owned(), WorkDoc { before: Some(doc.clone()), lang: doc.lang, value });
        Ok(())
    }

    fn entity_mut(&mut self, id: &str) -> std::result::Result<&mut Map<String, Value>, String> {
        let path = self.locate(id)?;
        let value = self.docs.get_mut(&path).and_then(|d| d.value.as_mut());
        let found = match value {
            Some(Value::Array(items)) => {
                items.iter_mut().find(|item| item.get("id").and_then(Value::as_str) == Some(id))
            }
            Some(other) => Some(other).filter(|v| v.get("id").and_then(Value::as_str) == Some(id)),
            None => None,
        };
        found.and_then(Value::as_object_mut).ok_or_else(|| format!("no entity {id} in {path}"))
    }

    /// A new document path for entity `id` under `dir`, unused in the store and the patch.
    fn new_path(&self, dir: &str, id: &str, ty: &str, lang: Lang) -> String {
        let stem = id.strip_prefix(&format!("{ty}/")).unwrap_or(id).replace('/', "-");
        let dir = dir.trim_end_matches('/');
        let ext = lang.as_str();
        let join = |name: &str| {
            if dir.is_empty() || dir == "." { name.to_owned() } else { format!("{dir}/{name}") }
        };
        let mut path = join(&format!("{stem}.{ext}"));
        let mut n = 2;
        while self.analysis.document(&path).is_some() || self.docs.contains_key(&path) {
            path = join(&format!("{stem}-{n}.{ext}"));
            n += 1;
        }
        path
    }

    fn finish(self, resolved: BTreeMap<String, String>) -> Plan {
        let (mut created, mut changed, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
        let mut documents = Vec::new();
        for (path, doc) in self.docs {
            let old =
                doc.before.as_ref().map(|d| entity_values(&d.parse.value)).unwrap_or_default();
            let new = doc.value.as_ref().map(entity_values).unwrap_or_default();
            for (id, value) in &new {
                match old.get(id) {
                    None => created.push(id.to_string()),
                    Some(before) if before != value => changed.push(id.to_string()),
                    Some(_) => {}
                }
            }
            deleted.extend(old.keys().filter(|id| !new.contains_key(*id)).map(|id| id.to_string()));
            let after = match (&doc.before, &doc.value) {
                (_, None) => None,
                (Some(before), Some(value)) if before.parse.value == *value => continue,
                (Some(before), Some(value)) => {
                    Some(edit::rewrite(&before.text, &before.parse, doc.lang, value))
                }
                (None, Some(value)) => Some(edit::canonical(value, doc.lang)),
            };
            documents.push(PlannedDocument { path, before: doc.before, after });
        }
        for list in [&mut created, &mut changed, &mut deleted] {
            list.sort();
            list.dedup();
        }
        Plan { documents, resolved, created, changed, deleted }
    }
}

/// The entities of a document value by id.
fn entity_values(value: &Value) -> BTreeMap<&str, &Value> {
    let one = |v: &'_ Value| v.get("id").and_then(Value::as_str).is_some();
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().filter(|v| v.is_object() && one(v)).collect(),
        Value::Object(_) if one(value) => vec![value],
        _ => Vec::new(),
    };
    items.into_iter().map(|v| (v["id"].as_str().expect("filtered"), v)).collect()
}

fn unknown_name(name: &str) -> String {
    format!(
        "unknown temporary name {name}; create it in this patch with `create {{id {name} ...}}`"
    )
}

/// Replace every `@?name` string with `@<resolved id>`. Depth is bounded by the parser.
fn resolve_refs(value: &mut Value, resolved: &BTreeMap<String, String>) -> Step {
    match value {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix('@').filter(|n| n.starts_with('?')) {
                let id = resolved.get(name).ok_or_else(|| unknown_name(name))?;
                *s = format!("@{id}");
            }
        }
        Value::Array(items) => items.iter_mut().try_for_each(|v| resolve_refs(v, resolved))?,
        Value::Object(map) => map.values_mut().try_for_each(|v| resolve_refs(v, resolved))?,
        _ => {}
    }
    Ok(())
}

fn replace_string(value: &mut Value, old: &str, new: &str) {
    match value {
        Value::String(s) if s == old => *s = new.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_string(v, old, new)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_string(v, old, new)),
        _ => {}
    }
}

/// Set a dotted field, creating the objects on the way.
fn set_path(entity: &mut Map<String, Value>, key: &str, value: Value) -> Step {
    let mut parts = key.split('.').peekable();
    let mut at = entity;
    while let Some(part) = parts.next() {
        if part.is_empty() {
            return Err(format!("`{key}` is not a field name (empty part)"));
        }
        if parts.peek().is_none() {
            at.insert(part.to_owned(), value);
            return Ok(());
        }
        let next = at.entry(part.to_owned()).or_insert_with(|| Value::Object(Map::new()));
        at = next
            .as_object_mut()
            .ok_or_else(|| format!("cannot set {key}: {part} is not an object"))?;
    }
    Ok(())
}

/// Remove a dotted field; whether it was there.
fn unset_path(entity: &mut Map<String, Value>, key: &str) -> bool {
    match key.split_once('.') {
        None => entity.shift_remove(key).is_some(),
        Some((head, rest)) => match entity.get_mut(head).and_then(Value::as_object_mut) {
            Some(inner) => unset_path(inner, rest),
            None => false,
        },
    }
}

#[cfg(test)]
mod tests;

//! The handlers of the commands of SPEC §7 and of the command line's operations: each reads
//! its (already validated) arguments from a [`Call`] and answers JSON. Mutation commands only
//! plan and answer with a preview; `stardust.preview.confirm` commits through the service.

use serde_json::{Map, Value, json};

use super::{Call, CommandError, CommandResult, describe as describe_all, page};
use crate::analysis::Analysis;
use crate::answers;
use crate::backup::{self, Phase};
use crate::error::Error;
use crate::patch::{self, Op, Patch};
use crate::query::{self, Query, QueryOptions};
use crate::store::ChangesSince;

pub(super) fn describe(_: &mut Call<'_>) -> CommandResult {
    Ok(describe_all())
}

pub(super) fn status(call: &mut Call<'_>) -> CommandResult {
    Ok(call.service.status())
}

pub(super) fn evaluate(call: &mut Call<'_>) -> CommandResult {
    let entity = call.args.get("entity").and_then(Value::as_str);
    let value = query::evaluate(&call.snapshot.analysis, &call.text("expression"), entity)?;
    Ok(json!({ "value": value }))
}

pub(super) fn query(call: &mut Call<'_>) -> CommandResult {
    let query = read_query(&call.args["document"])?;
    let options = QueryOptions {
        limit: call.args.get("limit").and_then(Value::as_u64),
        offset: call.args.get("offset").and_then(Value::as_u64),
        ..QueryOptions::default()
    };
    Ok(query::execute(&call.snapshot.analysis, &query, &options)?.to_json())
}

pub(super) fn entity_get(call: &mut Call<'_>) -> CommandResult {
    entity_get_in(&call.snapshot.analysis, &call.text("id"))
}

pub(super) fn entity_validate(call: &mut Call<'_>) -> CommandResult {
    let entity = read_document(&call.args["entity"], "entity")?;
    Ok(entity_validate_in(&call.snapshot.analysis, entity)?)
}

pub(super) fn entity_create(call: &mut Call<'_>) -> CommandResult {
    let mut ops = Vec::new();
    for entity in call.args["entities"].as_array().into_iter().flatten() {
        ops.push(Op::Create(entity_object(read_document(entity, "entity")?)?));
    }
    call.preview(&Patch { ops })
}

pub(super) fn mutation_execute(call: &mut Call<'_>) -> CommandResult {
    let patch = mutation_patch(&call.snapshot.analysis, &call.args)?;
    call.preview(&patch)
}

pub(super) fn patch_apply(call: &mut Call<'_>) -> CommandResult {
    let patch = match &call.args["document"] {
        Value::String(text) => Patch::from_text(text)?,
        value => Patch::from_value(value)?,
    };
    call.preview(&patch)
}

pub(super) fn entity_rename(call: &mut Call<'_>) -> CommandResult {
    let patch = Patch { ops: vec![Op::Rename { from: call.text("id"), to: call.text("newId") }] };
    call.preview(&patch)
}

pub(super) fn backup_define(call: &mut Call<'_>) -> CommandResult {
    let args = &call.args;
    let mut entity = Map::new();
    entity.insert("id".into(), args["id"].clone());
    entity.insert("type".into(), json!("backup"));
    entity.insert("include".into(), args.get("include").cloned().unwrap_or(json!(["**"])));
    entity.insert("target".into(), args["target"].clone());
    entity.insert("keep".into(), args.get("keep").cloned().unwrap_or(json!(7)));
    call.preview(&Patch { ops: vec![Op::Create(entity)] })
}

pub(super) fn preview_confirm(call: &mut Call<'_>) -> CommandResult {
    call.service.confirm(call.session, &call.text("previewId"))
}

pub(super) fn previews_list(call: &mut Call<'_>) -> CommandResult {
    Ok(call.service.previews_list(call.session))
}

/// `preview_get`: a page of an open preview's documents, from `offset` (an agent's answer to
/// a mutation shows the first page; `nextOffset` says where the rest starts).
pub(super) fn preview_get(call: &mut Call<'_>) -> CommandResult {
    let preview = call.service.preview_json(call.session, &call.text("previewId"))?;
    let (limit, offset) = page::window(&call.args)?;
    let at = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Ok(page::preview_page(preview, at(offset), at(limit)))
}

pub(super) fn preview_discard(call: &mut Call<'_>) -> CommandResult {
    let discarded = call.service.discard(call.session, &call.text("previewId"));
    Ok(json!({ "discarded": discarded }))
}

pub(super) fn changes_since(call: &mut Call<'_>) -> CommandResult {
    let since = call.args["seq"].as_u64().unwrap_or(0);
    Ok(match call.service.store().changes_since(since, 10_000)? {
        ChangesSince::Changes { seq, documents, entities, more } => json!({
            "seq": seq,
            "documents": documents,
            "entities": entities,
            "more": more,
        }),
        ChangesSince::Overflow { seq } => json!({"seq": seq, "overflow": true}),
    })
}

/// `stardust.backup.run`: archive the service's own store (as of its latest commit), sending
/// `{phase, done, total, path}` progress to the caller before the answer.
pub(super) fn backup_run(call: &mut Call<'_>) -> CommandResult {
    let id = call.text("id");
    let progress = &mut *call.progress;
    let mut report = |p: &backup::Progress<'_>| {
        let phase = match p.phase {
            Phase::Archiving => "archiving",
            Phase::Verifying => "verifying",
            Phase::Restoring => "restoring",
        };
        progress(json!({"phase": phase, "done": p.done, "total": p.total, "path": p.path}));
    };
    let written =
        backup::run(call.service.store(), &id, &mut report).map_err(CommandError::Backup)?;
    Ok(json!({
        "archive": written.archive,
        "seq": written.seq,
        "entries": written.entries,
        "bytes": written.bytes,
        "removed": written.removed,
    }))
}

/// A query, patch or entity argument: an object, or DUST or JSON text.
fn read_document(value: &Value, what: &str) -> Result<Value, Error> {
    match value {
        Value::String(text) => patch::read_value(text, what),
        other => Ok(other.clone()),
    }
}

fn read_query(value: &Value) -> Result<Query, Error> {
    match value {
        Value::String(text) => Query::parse(text),
        other => Query::from_json(other),
    }
}

fn entity_object(value: Value) -> Result<Map<String, Value>, Error> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Error::InvalidArguments(format!(
            "an entity is an object with `id` and `type`, not {}",
            crate::model::value_kind(&other)
        ))),
    }
}

fn entity_get_in(analysis: &Analysis, id: &str) -> CommandResult {
    let not_found = || {
        let hint = analysis.closest_ids(id, 1);
        Error::NotFound(match hint.first() {
            Some(near) => format!("no entity has the id '{id}'; did you mean '{near}'?"),
            None => format!("no entity has the id '{id}'; check the id"),
        })
    };
    let loc = analysis.entity(id).first().ok_or_else(not_found)?;
    let doc = analysis.document(&loc.path).ok_or_else(not_found)?;
    let (_, value) = doc.entity_node(loc.index).ok_or_else(not_found)?;
    let entity = &doc.entities[loc.index];
    Ok(json!({
        "id": id,
        "value": value,
        "path": doc.path,
        "range": answers::range_json(doc, entity.span),
        "version": doc.version,
    }))
}

/// Diagnose an entity as if it were in the store: a new entity goes where `create` would put
/// it; an existing one is diagnosed as a replacement of its current value.
fn entity_validate_in(analysis: &Analysis, entity: Value) -> Result<Value, Error> {
    let map = entity_object(entity)?;
    let id = map.get("id").and_then(Value::as_str).map(str::to_owned);
    let exists = id.as_deref().is_some_and(|id| analysis.entity(id).len() == 1);
    let ty = map.get("type").and_then(Value::as_str).unwrap_or("entity").to_owned();
    let (path, text) = match (exists, &id) {
        (true, Some(id)) => {
            // Replace the entity in place: its document with the new value.
            let loc = &analysis.entity(id)[0];
            let doc = analysis.document(&loc.path).expect("an indexed entity's document exists");
            let mut value = doc.parse.value.clone();
            match (&mut value, doc.entities[loc.index].index) {
                (Value::Array(items), Some(i)) => items[i] = Value::Object(map),
                (slot, _) => *slot = Value::Object(map),
            }
            (doc.path.clone(), crate::edit::rewrite(&doc.text, &doc.parse, doc.lang, &value))
        }
        _ => {
            let config = analysis.config().type_config(&ty);
            let path = format!("{}/.stardust-validate.{}", config.dir, config.format.as_str());
            (path, crate::edit::canonical(&Value::Object(map), config.format))
        }
    };
    let after = analysis.with_changes(vec![(path.clone(), Some(text.into_bytes()))]);
    let doc = after.document(&path).expect("just added");
    let found: Vec<Value> = after
        .diagnostics_of(&path)
        .iter()
        .map(|d| {
            let mut v = answers::diagnostic_json(&after, doc, d);
            // The document is hypothetical: name the entity, not a path that does not exist.
            if !exists {
                v["path"] = Value::Null;
            }
            v
        })
        .collect();
    let valid = !found.iter().any(|d| d["severity"] == "error");
    Ok(json!({"valid": valid, "diagnostics": found}))
}

/// The patch of `stardust.mutation.execute`: `set` / `unset` on every entity the query's first
/// `find` variable binds (every page of it).
fn mutation_patch(analysis: &Analysis, args: &Map<String, Value>) -> Result<Patch, Error> {
    let query = read_query(&args["document"])?;
    let set: Vec<(String, Value)> = args
        .get("set")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let unset: Vec<String> = args
        .get("unset")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if set.is_empty() && unset.is_empty() {
        return Err(Error::InvalidArguments(
            "give `set` (fields to set) or `unset` (fields to remove), or both".to_owned(),
        ));
    }
    let mut ids: Vec<String> = Vec::new();
    let mut offset = 0;
    loop {
        let options = QueryOptions {
            limit: Some(query::MAX_LIMIT),
            offset: Some(offset),
            ..QueryOptions::default()
        };
        let page = query::execute(analysis, &query, &options)?;
        for row in &page.rows {
            match row.first() {
                Some(Value::String(id)) if !analysis.entity(id).is_empty() => ids.push(id.clone()),
                Some(other) => {
                    return Err(Error::InvalidArguments(format!(
                        "the query's first find variable must bind entities; it bound {other}"
                    )));
                }
                None => {}
            }
        }
        match page.next_offset {
            Some(next) => offset = next,
            None => break,
        }
    }
    ids.sort();
    ids.dedup();
    let snapshot_has = |id: &str, field: &str| {
        analysis
            .query_index()
            .entity_value(id)
            .is_some_and(|v| field.split('.').try_fold(v, |v, part| v.get(part)).is_some())
    };
    let mut ops = Vec::new();
    for id in ids {
        if !set.is_empty() {
            ops.push(Op::Set { id: id.clone(), fields: set.clone() });
        }
        // Only fields an entity has are removed: the query may find entities without them.
        let fields: Vec<String> = unset.iter().filter(|f| snapshot_has(&id, f)).cloned().collect();
        if !fields.is_empty() {
            ops.push(Op::Unset { id, fields });
        }
    }
    Ok(Patch { ops })
}

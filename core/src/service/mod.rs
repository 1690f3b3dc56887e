//! The capability core as fronts see it: one open store, its sessions and previews, and the
//! dispatcher of every command of the registry (SPEC §7).
//!
//! A front opens a [`Session`] per connection and calls [`Service::execute`] with a command
//! name and its one argument object; arguments are validated against the contract before any
//! handler runs. Mutation commands only plan and answer with a preview; the change is committed
//! by `stardust.preview.confirm` through the store's save authority, the same rule as every
//! other path. Reads work on the current immutable snapshot.

mod contracts;
mod gate;
mod preview;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};

use crate::analysis::Analysis;
use crate::diagnostics;
use crate::error::Error;
use crate::patch::{self, Op, Patch};
use crate::query::{self, Query, QueryOptions};
use crate::store::{ChangesSince, Origin, Store, StoreError, rfc3339};

pub use contracts::{Confirmation, Contract, Effect, contract, describe, registry};
pub use gate::{GateDecision, mutation_gate};
pub use preview::PREVIEW_LIFETIME;
use preview::Previews;

/// Why a command failed. `code()` is the stable wire name of SPEC §16.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Core(#[from] Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("unknown command {0}; `stardust.commands.describe` lists every command")]
    UnknownCommand(String),
    #[error("no preview {0} in this session; it was confirmed, discarded, or made elsewhere")]
    PreviewNotFound(String),
    #[error("the preview {0} expired; run the command again for a fresh preview")]
    PreviewExpired(String),
    #[error("{path} changed since the preview was made; run the command again for a fresh preview")]
    PreviewStale { path: String },
    #[error("{0}")]
    MutationDisabled(String),
}

impl CommandError {
    pub fn code(&self) -> &'static str {
        match self {
            CommandError::Core(e) => e.code(),
            CommandError::Store(e) => e.code(),
            CommandError::UnknownCommand(_) => "invalid-arguments",
            CommandError::PreviewNotFound(_) => "preview-not-found",
            CommandError::PreviewExpired(_) => "preview-expired",
            CommandError::PreviewStale { .. } => "preview-stale",
            CommandError::MutationDisabled(_) => "mutation-disabled",
        }
    }

    /// The details a front sends beside the code and message (`data` in LSP, MCP's
    /// `structuredContent.error`): the refused diagnostics, the stale document.
    pub fn details(&self, analysis: &Analysis) -> Value {
        match self {
            CommandError::Store(StoreError::Refused { problems }) => {
                json!({"problems": problems_json(analysis, problems)})
            }
            CommandError::Store(StoreError::Conflict { path, .. })
            | CommandError::PreviewStale { path } => json!({"path": path}),
            _ => json!({}),
        }
    }
}

fn problems_json(
    analysis: &Analysis,
    problems: &[(String, crate::diagnostics::Diagnostic)],
) -> Vec<Value> {
    problems
        .iter()
        .map(|(path, d)| match analysis.document(path) {
            Some(doc) => diagnostics::to_json(analysis, doc, d),
            None => json!({"path": path, "code": d.code, "message": d.message}),
        })
        .collect()
}

pub type CommandResult<T = Value> = Result<T, CommandError>;

/// Which front a session came through; with the client's name it makes the commit origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    Lsp,
    Mcp,
    Sdk,
    Cli,
}

impl Front {
    fn as_str(self) -> &'static str {
        match self {
            Front::Lsp => "lsp",
            Front::Mcp => "mcp",
            Front::Sdk => "sdk",
            Front::Cli => "cli",
        }
    }
}

/// One connection's identity. Previews are bound to the session that made them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: u64,
    pub front: Front,
    pub client: String,
}

impl Session {
    /// Who commits on this session's behalf. The command line commits as the SDK client `cli`.
    pub fn origin(&self) -> Origin {
        match self.front {
            Front::Lsp => Origin::Lsp(self.client.clone()),
            Front::Mcp => Origin::Mcp(self.client.clone()),
            Front::Sdk => Origin::Sdk(self.client.clone()),
            Front::Cli => Origin::Sdk("cli".to_owned()),
        }
    }
}

/// How many recent save-authority and gate decisions `stardust.status` shows.
const RECENT_DECISIONS: usize = 50;

/// One open store served to any number of sessions.
pub struct Service {
    store: Arc<Store>,
    previews: Mutex<Previews>,
    sessions: Mutex<BTreeMap<u64, Session>>,
    next_session: AtomicU64,
    decisions: Mutex<VecDeque<Value>>,
    mount: Mutex<Option<String>>,
    preview_lifetime: Duration,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("store", &self.store.root()).finish_non_exhaustive()
    }
}

impl Service {
    pub fn new(store: Store) -> Service {
        Service {
            store: Arc::new(store),
            previews: Mutex::new(Previews::default()),
            sessions: Mutex::new(BTreeMap::new()),
            next_session: AtomicU64::new(1),
            decisions: Mutex::new(VecDeque::new()),
            mount: Mutex::new(None),
            preview_lifetime: PREVIEW_LIFETIME,
        }
    }

    /// How long previews of this service can be confirmed (tests shorten it).
    pub fn with_preview_lifetime(mut self, lifetime: Duration) -> Service {
        self.preview_lifetime = lifetime;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, for parts of the process that outlive a borrow (the mount's threads).
    pub fn store_arc(&self) -> Arc<Store> {
        self.store.clone()
    }

    /// Start a session for a connection of `front` from the client named `client`.
    pub fn open_session(&self, front: Front, client: &str) -> Session {
        let id = self.next_session.fetch_add(1, Ordering::Relaxed);
        let client = if client.is_empty() { "unknown".to_owned() } else { client.to_owned() };
        let session = Session { id, front, client };
        lock(&self.sessions).insert(id, session.clone());
        session
    }

    /// End a session; its previews go with it.
    pub fn close_session(&self, session: &Session) {
        lock(&self.sessions).remove(&session.id);
        lock(&self.previews).drop_session(session.id);
    }

    /// Record where the store is mounted, for `stardust.status`.
    pub fn set_mount(&self, dir: Option<String>) {
        *lock(&self.mount) = dir;
    }

    /// Record a decision (save authority, mutation gate) for `stardust.status`.
    pub fn record_decision(&self, kind: &str, allowed: bool, subject: &str, reason: &str) {
        let mut decisions = lock(&self.decisions);
        if decisions.len() == RECENT_DECISIONS {
            decisions.pop_front();
        }
        decisions.push_back(json!({
            "time": rfc3339(SystemTime::now()),
            "kind": kind,
            "allowed": allowed,
            "subject": subject,
            "reason": reason,
        }));
    }

    /// Run command `name` with its argument object for `session`.
    pub fn execute(&self, session: &Session, name: &str, args: Value) -> CommandResult {
        let contract =
            contract(name).ok_or_else(|| CommandError::UnknownCommand(name.to_owned()))?;
        let args = if args.is_null() { json!({}) } else { args };
        if let Some(err) = contract.validator.iter_errors(&args).next() {
            let at = err.instance_path().as_str();
            let at = if at.is_empty() { "the arguments".to_owned() } else { format!("`{at}`") };
            return Err(Error::InvalidArguments(format!(
                "invalid arguments for {name}: {at}: {err}"
            ))
            .into());
        }
        let snapshot = self.store.snapshot();
        let analysis = &snapshot.analysis;
        let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        match name {
            "stardust.commands.describe" => Ok(describe()),
            "stardust.status" => Ok(self.status()),
            "stardust.expression.evaluate" => {
                let entity = args.get("entity").and_then(Value::as_str);
                let value = query::evaluate(analysis, &text("expression"), entity)?;
                Ok(json!({ "value": value }))
            }
            "stardust.query.execute" => {
                let query = read_query(&args["document"])?;
                let options = QueryOptions {
                    limit: args.get("limit").and_then(Value::as_u64),
                    offset: args.get("offset").and_then(Value::as_u64),
                    ..QueryOptions::default()
                };
                Ok(query::execute(analysis, &query, &options)?.to_json())
            }
            "stardust.entity.get" => entity_get(analysis, &text("id")),
            "stardust.entity.validate" => {
                let entity = read_document(&args["entity"], "entity")?;
                Ok(entity_validate(analysis, entity)?)
            }
            "stardust.entity.create" => {
                let mut ops = Vec::new();
                for entity in args["entities"].as_array().into_iter().flatten() {
                    ops.push(Op::Create(entity_object(read_document(entity, "entity")?)?));
                }
                self.preview(session, name, analysis, snapshot.seq, &Patch { ops })
            }
            "stardust.mutation.execute" => {
                let patch = mutation_patch(analysis, &args)?;
                self.preview(session, name, analysis, snapshot.seq, &patch)
            }
            "stardust.patch.apply" => {
                let patch = match &args["document"] {
                    Value::String(text) => Patch::from_text(text)?,
                    value => Patch::from_value(value)?,
                };
                self.preview(session, name, analysis, snapshot.seq, &patch)
            }
            "stardust.entity.rename" => {
                let patch = Patch { ops: vec![Op::Rename { from: text("id"), to: text("newId") }] };
                self.preview(session, name, analysis, snapshot.seq, &patch)
            }
            "stardust.backup.define" => {
                let mut entity = Map::new();
                entity.insert("id".into(), args["id"].clone());
                entity.insert("type".into(), json!("backup"));
                entity.insert(
                    "include".into(),
                    args.get("include").cloned().unwrap_or(json!(["**"])),
                );
                entity.insert("target".into(), args["target"].clone());
                entity.insert("keep".into(), args.get("keep").cloned().unwrap_or(json!(7)));
                let patch = Patch { ops: vec![Op::Create(entity)] };
                self.preview(session, name, analysis, snapshot.seq, &patch)
            }
            "stardust.preview.confirm" => self.confirm(session, &text("previewId")),
            "stardust.preview.discard" => {
                let discarded = lock(&self.previews).take(&text("previewId"), session.id).is_some();
                Ok(json!({ "discarded": discarded }))
            }
            "stardust.changes.since" => {
                let since = args["seq"].as_u64().unwrap_or(0);
                Ok(match self.store.changes_since(since, 10_000)? {
                    ChangesSince::Changes { seq, documents, entities, more } => json!({
                        "seq": seq,
                        "documents": documents,
                        "entities": entities,
                        "more": more,
                    }),
                    ChangesSince::Overflow { seq } => json!({"seq": seq, "overflow": true}),
                })
            }
            other => Err(CommandError::UnknownCommand(other.to_owned())),
        }
    }

    fn status(&self) -> Value {
        let snapshot = self.store.snapshot();
        let sessions: Vec<Value> = lock(&self.sessions)
            .values()
            .map(|s| json!({"id": s.id, "front": s.front.as_str(), "client": s.client}))
            .collect();
        json!({
            "store": self.store.root().display().to_string(),
            "seq": snapshot.seq,
            "documents": snapshot.analysis.document_count(),
            "entities": snapshot.analysis.entity_count(),
            "sessions": sessions,
            "previews": lock(&self.previews).len(),
            "mount": *lock(&self.mount),
            "decisions": lock(&self.decisions).iter().cloned().collect::<Vec<_>>(),
        })
    }

    fn preview(
        &self,
        session: &Session,
        command: &str,
        analysis: &Analysis,
        seq: u64,
        patch: &Patch,
    ) -> CommandResult {
        let plan = patch::plan(analysis, patch)?;
        let preview = preview::build(analysis, seq, command, plan, self.preview_lifetime);
        let answer = preview.to_json();
        lock(&self.previews).insert(session.id, preview);
        Ok(answer)
    }

    fn confirm(&self, session: &Session, id: &str) -> CommandResult {
        let preview = lock(&self.previews)
            .take(id, session.id)
            .ok_or_else(|| CommandError::PreviewNotFound(id.to_owned()))?;
        let subject = format!("preview {} ({})", preview.id, preview.command);
        let outcome = preview.commit(&self.store, session.origin());
        match &outcome {
            Ok(value) => self.record_decision(
                "save",
                true,
                &subject,
                &format!("committed as seq {}", value["seq"]),
            ),
            Err(err) => self.record_decision("save", false, &subject, &err.to_string()),
        }
        outcome
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind; keep serving.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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

fn entity_get(analysis: &Analysis, id: &str) -> CommandResult {
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
        "range": diagnostics::range_json(doc, entity.span),
        "version": doc.version,
    }))
}

/// Diagnose an entity as if it were in the store: a new entity goes where `create` would put
/// it; an existing one is diagnosed as a replacement of its current value.
fn entity_validate(analysis: &Analysis, entity: Value) -> Result<Value, Error> {
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
            let mut v = diagnostics::to_json(&after, doc, d);
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
fn mutation_patch(analysis: &Analysis, args: &Value) -> Result<Patch, Error> {
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

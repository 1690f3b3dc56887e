//! The capability core as fronts see it: one open store, its sessions and previews, and the
//! dispatcher of every command and tool of the registry (SPEC §7, §13).
//!
//! A front opens a [`Session`] per connection and calls [`Service::execute`] with a command
//! name and its one argument object. Dispatch goes through the command's [`Contract`]: the
//! session's front must show it, the arguments are validated against its schema (one
//! validator for every command and tool, the error naming the field), then its handler runs.
//! Mutation commands only plan and answer with a preview; the change is committed by
//! `stardust.preview.confirm` through the store's save authority, the same rule as every
//! other path, and only for a session whose capabilities allow it (the mutation gate).

mod arguments;
pub mod code;
mod code_edit;
mod commands;
mod contracts;
mod gate;
mod history;
mod nav;
pub mod page;
mod preview;

use crate::sync::lock;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::analysis::Analysis;
use crate::answers;
use crate::backup::BackupError;
use crate::error::{Code, Error, error_object};
use crate::patch::{self, Patch};
use crate::store::{Origin, Snapshot, Store, StoreError, rfc3339};

pub use contracts::{
    BACKUP_RUN, Confirmation, Contract, Effect, contract, describe, registry, shown_in,
};
pub use gate::{GateDecision, mutation_gate};
pub use history::EditorTexts;
pub use preview::PREVIEW_LIFETIME;
use preview::Previews;

/// Why a command failed. `code()` is the stable code of SPEC §16.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Core(#[from] Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Backup(#[from] BackupError),
    #[error("unknown command {0}; `stardust.commands.describe` lists every command")]
    UnknownCommand(String),
    #[error("no preview {0} in this session; it was confirmed, discarded, or made elsewhere")]
    PreviewNotFound(String),
    #[error("the preview {0} expired; run the command again for a fresh preview")]
    PreviewExpired(String),
    #[error("{path} changed since the preview was made; run the command again for a fresh preview")]
    PreviewStale { path: String },
    #[error(
        "no code action {0} in this session; it was used, or listed elsewhere: list code_actions \
         again for fresh handles"
    )]
    ActionNotFound(String),
    #[error("the code action {0} expired; list code_actions again for fresh handles")]
    ActionExpired(String),
    #[error(
        "{path} changed since its code actions were listed; list code_actions again for fresh \
         handles"
    )]
    ActionStale { path: String },
    /// The session may not confirm previews; the message is the gate's reason.
    #[error("{0}")]
    MutationDisabled(String),
    /// An answer that stays over one page's 64 KiB after its lists were paged or cut.
    #[error(
        "the answer is {} KiB, more than the 64 KiB one answer may hold; ask for a part of it \
         (a query on some fields, hover at a place), or read a whole entity or document as a \
         resource",
        bytes.div_ceil(1024)
    )]
    TooLarge { bytes: usize },
    /// A language server could not answer (SPEC §17).
    #[error(transparent)]
    Server(crate::codefiles::CodeError),
    /// A language server may not start: untrusted, or its program is missing.
    #[error(transparent)]
    Launch(crate::codefiles::LaunchError),
    /// A language server was not ready within the timeout (SPEC §25): its answer would miss
    /// what it has not analysed yet.
    #[error(
        "language server '{server}' is {} (since {}) and was not ready within {}s, so its \
         answer could be incomplete; ask again once server_status shows it ready",
        readiness.as_str(),
        rfc3339(*since),
        waited.as_secs()
    )]
    NotReady {
        server: String,
        readiness: crate::codefiles::Readiness,
        since: SystemTime,
        waited: Duration,
    },
}

impl CommandError {
    pub fn code(&self) -> Code {
        match self {
            CommandError::Core(e) => e.code(),
            CommandError::Store(e) => e.code(),
            CommandError::Backup(e) => e.code(),
            CommandError::UnknownCommand(_) => Code::InvalidArguments,
            CommandError::PreviewNotFound(_) => Code::PreviewNotFound,
            CommandError::PreviewExpired(_) => Code::PreviewExpired,
            CommandError::PreviewStale { .. } => Code::PreviewStale,
            CommandError::ActionNotFound(_) => Code::PreviewNotFound,
            CommandError::ActionExpired(_) => Code::PreviewExpired,
            CommandError::ActionStale { .. } => Code::PreviewStale,
            CommandError::MutationDisabled(_) => Code::MutationDisabled,
            CommandError::TooLarge { .. } => Code::Unsupported,
            CommandError::Server(e) => e.code,
            CommandError::Launch(e) => e.code(),
            CommandError::NotReady { .. } => Code::Busy,
        }
    }

    /// The details a front sends beside the code and message: the refused diagnostics, the
    /// stale document.
    pub fn details(&self, analysis: &Analysis) -> Value {
        match self {
            CommandError::Store(StoreError::Refused { problems }) => {
                json!({"problems": problems_json(analysis, problems)})
            }
            CommandError::Store(StoreError::Conflict { path, .. })
            | CommandError::PreviewStale { path }
            | CommandError::ActionStale { path } => json!({"path": path}),
            CommandError::Store(StoreError::RevertConflict { path, later, .. }) => {
                json!({"path": path, "seq": later})
            }
            CommandError::TooLarge { bytes } => json!({"bytes": bytes}),
            CommandError::Server(e) => json!({"server": e.server}),
            CommandError::Launch(e) => e.details(),
            CommandError::NotReady { server, readiness, since, .. } => json!({
                "server": server,
                "readiness": readiness.as_str(),
                "since": rfc3339(*since),
            }),
            _ => json!({}),
        }
    }

    /// The error object `{code, message, ...details}` every front sends (SPEC §13, §16).
    pub fn to_json(&self, analysis: &Analysis) -> Value {
        error_object(self.code(), &self.to_string(), self.details(analysis))
    }
}

fn problems_json(
    analysis: &Analysis,
    problems: &[(String, crate::diagnostics::Diagnostic)],
) -> Vec<Value> {
    problems
        .iter()
        .map(|(path, d)| match analysis.document(path) {
            Some(doc) => answers::diagnostic_json(analysis, doc, d),
            None => json!({"path": path, "code": d.code, "message": d.message}),
        })
        .collect()
}

pub type CommandResult<T = Value> = Result<T, CommandError>;

/// Which front a session came through; with the client's name it makes the commit origin.
/// It is also what a connection to a core names in its hello (serialised in lowercase).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Front {
    Lsp,
    Mcp,
    /// The LSP protocol, for a program using the SDK: its commits have origin `sdk:<client>`.
    Sdk,
    /// JSON lines of registry commands, for the command line.
    Cli,
}

impl Front {
    pub fn as_str(self) -> &'static str {
        match self {
            Front::Lsp => "lsp",
            Front::Mcp => "mcp",
            Front::Sdk => "sdk",
            Front::Cli => "cli",
        }
    }
}

/// What a session may do beyond reading and previewing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// May it confirm previews, and why (or why not).
    pub confirm: GateDecision,
    /// Whether the mutation gate made `confirm` (agent sessions): each confirm attempt is
    /// then a gate decision too, recorded for `stardust.status`.
    pub gated: bool,
}

/// One connection's identity. Previews are bound to the session that made them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: u64,
    pub front: Front,
    pub client: String,
    pub capabilities: Capabilities,
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

    /// Whether this session may confirm previews (an MCP front lists `preview_confirm` only
    /// then).
    pub fn may_confirm(&self) -> bool {
        self.capabilities.confirm.allowed
    }
}

/// How a session is opened.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionOptions<'a> {
    /// The client's own name (`clientInfo.name`); `None` or empty when it gave none.
    pub client: Option<&'a str>,
    /// `stardust mcp --allow-mutation`: the gate lets every agent confirm.
    pub allow_mutation: bool,
}

/// An open preview shown on one file it touches (SPEC §18: an editor's code lenses): who made
/// it, and the line where its change of that file starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviewLens {
    pub preview_id: String,
    /// The client name and front of the session that made it.
    pub client: String,
    pub front: &'static str,
    /// The command that made it (`rename_preview`, `stardust.entity.rename`, ...).
    pub command: String,
    pub mine: bool,
    /// 0-based, in the file's text now.
    pub line: u32,
}

/// How many recent save-authority and gate decisions `stardust.status` shows.
const RECENT_DECISIONS: usize = 50;

/// One open store served to any number of sessions.
pub struct Service {
    store: Arc<Store>,
    previews: Mutex<Previews>,
    /// The code actions `code_actions` listed, by the handles it minted (SPEC §18).
    actions: Mutex<code_edit::Actions>,
    sessions: Mutex<BTreeMap<u64, Session>>,
    next_session: AtomicU64,
    decisions: Mutex<VecDeque<Value>>,
    mount: Mutex<Option<String>>,
    preview_lifetime: Duration,
    /// The language servers of code files and the code files editors hold open.
    code: code::CodeFiles,
    /// The views' results (SPEC §19), kept fresh from the first time a front asks.
    views: std::sync::OnceLock<Arc<crate::views::Live>>,
    /// `serve --share-previews` (or `[previews] share` in the store's config): editors may
    /// confirm or discard every session's previews (SPEC §18).
    share_previews: bool,
    /// Each editor session's open texts (SPEC §26: a revert refuses a file held unsaved).
    editors: Mutex<BTreeMap<u64, Arc<dyn EditorTexts>>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("store", &self.store.root()).finish_non_exhaustive()
    }
}

/// One command being run: the service, the session, the validated arguments, the snapshot
/// it reads, and where progress goes.
pub(crate) struct Call<'a> {
    service: &'a Service,
    session: &'a Session,
    name: &'static str,
    args: Map<String, Value>,
    snapshot: Arc<Snapshot>,
    progress: &'a mut dyn FnMut(Value),
}

impl Call<'_> {
    /// A string argument ("" when absent: the schema made the required ones present).
    fn text(&self, key: &str) -> String {
        self.args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
    }

    /// The snapshot's analysis, the store's (canonical) root and the arguments.
    fn parts(&self) -> (&Analysis, &std::path::Path, &Map<String, Value>) {
        (&self.snapshot.analysis, self.service.store.root(), &self.args)
    }

    /// Plan `patch` on the call's snapshot and answer with its preview.
    fn preview(&self, patch: &Patch) -> CommandResult {
        let analysis = &self.snapshot.analysis;
        let plan = patch::plan(analysis, patch)?;
        let lifetime = self.service.preview_lifetime;
        let preview = preview::build(analysis, self.snapshot.seq, self.name, plan, lifetime);
        let answer = preview.to_json();
        lock(&self.service.previews).insert(self.session.id, preview);
        Ok(answer)
    }
}

/// A command's handler.
pub(crate) type Handler = fn(&mut Call<'_>) -> CommandResult;

impl Service {
    pub fn new(store: Store) -> Service {
        Service {
            store: Arc::new(store),
            previews: Mutex::new(Previews::default()),
            actions: Mutex::new(code_edit::Actions::default()),
            sessions: Mutex::new(BTreeMap::new()),
            next_session: AtomicU64::new(1),
            decisions: Mutex::new(VecDeque::new()),
            mount: Mutex::new(None),
            preview_lifetime: PREVIEW_LIFETIME,
            code: code::CodeFiles::default(),
            views: std::sync::OnceLock::new(),
            share_previews: false,
            editors: Mutex::new(BTreeMap::new()),
        }
    }

    /// The views of the store, kept fresh by a background thread from the first call on (the
    /// mount of this process shares them). `None` when the thread cannot start.
    pub fn views(&self) -> Option<Arc<crate::views::Live>> {
        if let Some(live) = self.views.get() {
            return Some(live.clone());
        }
        match crate::views::Live::of(&self.store) {
            Ok(live) => Some(self.views.get_or_init(|| live).clone()),
            Err(err) => {
                tracing::warn!("views are not available: cannot start their thread: {err}");
                None
            }
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
        self.open_session_with(
            front,
            SessionOptions { client: Some(client), allow_mutation: false },
        )
    }

    /// Start a session. An agent's (MCP) session may confirm only as the mutation gate
    /// decides from the store's `[mcp]` posture, the client's name and `--allow-mutation`,
    /// and the decision is recorded; an editor's, an SDK program's and the command line's
    /// sessions act for the user, who sees the preview, and may confirm.
    pub fn open_session_with(&self, front: Front, options: SessionOptions<'_>) -> Session {
        let id = self.next_session.fetch_add(1, Ordering::Relaxed);
        let named = options.client.filter(|c| !c.is_empty());
        let client = named.unwrap_or("unknown").to_owned();
        let capabilities = if front == Front::Mcp {
            let config = self.store.snapshot().analysis.config().clone();
            let confirm = mutation_gate(&config, options.allow_mutation, named);
            let subject =
                format!("stardust.preview.confirm for mcp client '{client}' (session {id})");
            self.record_decision("gate", confirm.allowed, &subject, &confirm.reason);
            tracing::info!(
                client,
                allowed = confirm.allowed,
                "mcp session {id}: {}",
                confirm.reason
            );
            Capabilities { confirm, gated: true }
        } else {
            let reason =
                format!("{} sessions confirm the previews their user sees", front.as_str());
            Capabilities { confirm: GateDecision { allowed: true, reason }, gated: false }
        };
        let session = Session { id, front, client, capabilities };
        lock(&self.sessions).insert(id, session.clone());
        // A session attaching warms the servers up (SPEC §25), in the background.
        self.warm_up();
        session
    }

    /// End a session; its previews go with it.
    pub fn close_session(&self, session: &Session) {
        lock(&self.sessions).remove(&session.id);
        lock(&self.editors).remove(&session.id);
        lock(&self.previews).drop_session(session.id);
        lock(&self.actions).drop_session(session.id);
        self.close_code_session(session);
    }

    /// Record where the store is mounted, for `stardust.status`.
    pub fn set_mount(&self, dir: Option<String>) {
        *lock(&self.mount) = dir;
    }

    /// The roots this core's documents can be addressed under: the store, and the mount it
    /// serves (SPEC §12, §13).
    pub fn roots(&self) -> crate::ide::Roots {
        let roots = crate::ide::Roots::new(self.store.root());
        match lock(&self.mount).as_deref() {
            Some(dir) => roots.with_mount(std::path::Path::new(dir)),
            None => roots,
        }
    }

    /// The recent decisions, oldest first: this core's (confirms, the mutation gate) and the
    /// saves the store refused through the mount, each with where its bytes are kept.
    fn decisions(&self) -> Vec<Value> {
        let mut all: Vec<Value> = lock(&self.decisions).iter().cloned().collect();
        all.extend(self.store.refusals().into_iter().map(|r| {
            json!({
                "time": r.time,
                "kind": "save",
                "allowed": false,
                "subject": format!("mount: {}", r.path),
                "reason": format!(
                    "{} [{}]; the bytes are kept at {}/{}/{}",
                    r.message,
                    r.code,
                    crate::store::PRIVATE_DIR,
                    crate::store::REJECTED_DIR,
                    r.kept
                ),
            })
        }));
        all.sort_by(|a, b| a["time"].as_str().cmp(&b["time"].as_str()));
        let skip = all.len().saturating_sub(RECENT_DECISIONS);
        all.split_off(skip)
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
        self.execute_with_progress(session, name, args, &mut |_| {})
    }

    /// Run command `name` for `session`, handing each progress step of a long operation
    /// (`stardust.backup.run`: `{phase, done, total, path}`) to `progress`.
    pub fn execute_with_progress(
        &self,
        session: &Session,
        name: &str,
        args: Value,
        progress: &mut dyn FnMut(Value),
    ) -> CommandResult {
        let contract = contract(name)
            .filter(|c| c.shown_in(session.front))
            .ok_or_else(|| CommandError::UnknownCommand(name.to_owned()))?;
        let args = if args.is_null() { Value::Object(Map::new()) } else { args };
        arguments::validate(contract, &args)?;
        let args = match args {
            Value::Object(map) => map,
            // Every argument schema is an object's, so validation refused anything else.
            _ => Map::new(),
        };
        let mut call = Call {
            service: self,
            session,
            name: contract.name,
            args,
            snapshot: self.store.snapshot(),
            progress,
        };
        (contract.handler)(&mut call)
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
            "decisions": self.decisions(),
        })
    }

    /// Commit preview `id` of `session`, if the session may confirm: an agent's session asks
    /// the mutation gate's decision it was opened with, and each attempt is recorded.
    pub fn confirm(&self, session: &Session, id: &str) -> CommandResult {
        let Capabilities { confirm, gated } = &session.capabilities;
        if *gated {
            let subject = format!(
                "stardust.preview.confirm by {} client '{}' (session {})",
                session.front.as_str(),
                session.client,
                session.id
            );
            self.record_decision("gate", confirm.allowed, &subject, &confirm.reason);
        }
        if !confirm.allowed {
            return Err(CommandError::MutationDisabled(confirm.reason.clone()));
        }
        let preview = lock(&self.previews)
            .take(id, session.id, self.may_share(session))
            .ok_or_else(|| CommandError::PreviewNotFound(id.to_owned()))?;
        let subject = format!("preview {} ({})", preview.id, preview.command);
        let paths = preview.paths();
        let outcome = preview.commit(&self.store, session.origin());
        if outcome.is_ok() {
            self.code_committed(&paths);
        }
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

    /// Preview `id` as it was answered (every document), if `session` may act on it.
    fn preview_json(&self, session: &Session, id: &str) -> CommandResult {
        match lock(&self.previews).get(id, session.id, self.may_share(session)) {
            Ok(preview) => Ok(preview.to_json()),
            Err(true) => Err(CommandError::PreviewExpired(id.to_owned())),
            Err(false) => Err(CommandError::PreviewNotFound(id.to_owned())),
        }
    }

    /// Drop preview `id` of `session`; whether there was one.
    fn discard(&self, session: &Session, id: &str) -> bool {
        lock(&self.previews).take(id, session.id, self.may_share(session)).is_some()
    }

    /// Let editors confirm or discard every session's previews (`serve --share-previews`).
    pub fn with_shared_previews(mut self, share: bool) -> Service {
        self.share_previews = share;
        self
    }

    /// Whether `session` may act on another session's preview: an editor's (or an SDK
    /// program's) session while previews are shared. An agent never may: the mutation gate
    /// decides only about its own.
    fn may_share(&self, session: &Session) -> bool {
        matches!(session.front, Front::Lsp | Front::Sdk)
            && (self.share_previews || self.store.snapshot().analysis.config().share_previews)
    }

    /// The open previews touching the file at store path `path` that `session` may act on:
    /// its own, and every session's while previews are shared with it; oldest first.
    pub fn preview_lenses(&self, session: &Session, path: &str) -> Vec<PreviewLens> {
        let share = self.may_share(session);
        let now: Option<String> = std::fs::read(self.store.root().join(path))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let sessions = lock(&self.sessions);
        let previews = lock(&self.previews);
        previews
            .open()
            .into_iter()
            .filter(|p| share || p.session() == session.id)
            .filter_map(|p| {
                let after = p.planned(path)?;
                let owner = sessions.get(&p.session());
                Some(PreviewLens {
                    preview_id: p.id.clone(),
                    client: owner.map_or_else(|| "unknown".to_owned(), |s| s.client.clone()),
                    front: owner.map_or("unknown", |s| s.front.as_str()),
                    command: p.command.clone(),
                    mine: p.session() == session.id,
                    line: first_changed_line(now.as_deref().unwrap_or(""), after.unwrap_or("")),
                })
            })
            .collect()
    }

    /// `stardust.previews.list`: every open preview of every session, with who made it, the
    /// files it touches and its diagnostics delta. Another session's preview shows its id only
    /// to a session that may act on it.
    fn previews_list(&self, session: &Session) -> Value {
        let share = self.may_share(session);
        let sessions = lock(&self.sessions);
        let previews = lock(&self.previews);
        let items: Vec<Value> = previews
            .open()
            .into_iter()
            .map(|p| {
                let json = p.to_json();
                let owner = sessions.get(&p.session());
                let mine = p.session() == session.id;
                json!({
                    "previewId": if mine || share { json["previewId"].clone() } else { Value::Null },
                    "mine": mine,
                    "session": p.session(),
                    "front": owner.map(|s| s.front.as_str()),
                    "client": owner.map(|s| s.client.clone()),
                    "command": json["command"],
                    "seq": json["seq"],
                    "expiresAt": json["expiresAt"],
                    "files": p.paths(),
                    "documents": json["documents"],
                    "diagnostics": json["diagnostics"],
                    "diagnosticsUnknown": json.get("diagnosticsUnknown").cloned().unwrap_or(json!(false)),
                    "committable": json["committable"],
                    "reasons": json["reasons"],
                })
            })
            .collect();
        json!({"previews": items, "shared": share})
    }
}

/// The 0-based line of `before` where `after` first differs from it.
fn first_changed_line(before: &str, after: &str) -> u32 {
    let common = before.bytes().zip(after.bytes()).take_while(|(a, b)| a == b).count();
    let lines = before.as_bytes()[..common].iter().filter(|b| **b == b'\n').count();
    u32::try_from(lines).unwrap_or(u32::MAX)
}

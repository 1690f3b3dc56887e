//! A Rust client for a Stardust store's core: typed queries, patches that report the ids they
//! created, and subscriptions to what changed.
//!
//! The client speaks to the store's one core (`stardust serve`) over its Unix socket,
//! as an LSP session: every method is a registry command. It is
//! synchronous: each call blocks until the core answers, and a [`Subscription`] is a blocking
//! [`Iterator`] with a connection of its own. A [`Client`] may be shared between threads
//! (calls take turns on its one connection); from async code, call it inside
//! `spawn_blocking` or run a subscription on a thread of its own.
//!
//! # Connecting
//!
//! When no core runs for the store, [`Client::connect`] starts one in the background, as
//! `stardust lsp` does: it needs the `stardust` executable, taken from
//! [`ConnectOptions::exe`], else from the `STARDUST_BIN` environment variable, else `stardust`
//! on `PATH`, else beside the running executable (for a cargo example or test, also in the
//! folder above its `examples/` or `deps/`, so the examples work after `cargo build`). When
//! none is found, only a running core is used, and the error names every place tried. A core started this way exits after
//! [`ConnectOptions::idle_exit`] without connections.
//!
//! ```no_run
//! # fn main() -> Result<(), stardust_sdk::Error> {
//! use stardust_sdk::{Client, ConnectOptions};
//!
//! let client = Client::connect("library", "my-sync-job")?;
//! let options = ConnectOptions { exe: Some("/usr/local/bin/stardust".into()), ..Default::default() };
//! let client = Client::connect_with("library", "my-sync-job", options)?;
//! # Ok(()) }
//! ```
//!
//! # Queries, entities and expressions
//!
//! Query rows deserialize into any type that reads from a sequence: a tuple, or a struct
//! with `#[derive(Deserialize)]` (fields in `find` order).
//!
//! ```no_run
//! # fn main() -> Result<(), stardust_sdk::Error> {
//! # let client = stardust_sdk::Client::connect("library", "docs")?;
//! #[derive(serde::Deserialize)]
//! struct Book { id: String, title: String }
//!
//! let page = client.query::<Book>("find [?b ?t] where [[?b type book] [?b title ?t]]")?;
//! for book in &page.rows {
//!     println!("{} {}", book.id, book.title);
//! }
//! let next = client.query_page::<(String, String)>(
//!     "find [?b ?t] where [[?b type book] [?b title ?t]]", 10, page.next_offset.unwrap_or(0))?;
//!
//! let dune = client.get("book/dune")?;
//! println!("{} is in {}", dune.value["title"], dune.path);
//!
//! let year = client.evaluate("@book/dune.year + 1")?;
//! # Ok(()) }
//! ```
//!
//! # History
//!
//! An entity as of a seq (its value after that transaction), and the transactions that
//! touched an entity or a path, newest first:
//!
//! ```no_run
//! # fn main() -> Result<(), stardust_sdk::Error> {
//! # let client = stardust_sdk::Client::connect("library", "docs")?;
//! use stardust_sdk::HistoryFilter;
//!
//! let filter = HistoryFilter { entity: Some("book/dune".into()), ..Default::default() };
//! for txn in client.history(&filter)?.transactions {
//!     let then = client.get_at("book/dune", txn.seq)?;
//!     println!("{} by {}: {}", txn.seq, txn.origin, then.value["title"]);
//! }
//! # Ok(()) }
//! ```
//!
//! # Patches
//!
//! A patch is previewed, then confirmed or discarded. Temporary names (`?name`)
//! resolve to the ids that end up on disk.
//!
//! ```no_run
//! # fn main() -> Result<(), stardust_sdk::Error> {
//! # let client = stardust_sdk::Client::connect("library", "docs")?;
//! let preview = client.patch("ops [{create {id ?m type book title 'Dune Messiah'}}]")?;
//! for doc in &preview.documents {
//!     print!("{}", doc.diff);
//! }
//! if preview.committable {
//!     let committed = preview.confirm()?;
//!     println!("seq {}: {:?}", committed.seq, committed.resolved.get("?m"));
//! } else {
//!     println!("refused: {:?}", preview.reasons);
//!     preview.discard()?;
//! }
//! # Ok(()) }
//! ```
//!
//! Any other mutation command goes through [`Client::preview`], any command through
//! [`Client::execute`]:
//!
//! ```no_run
//! # fn main() -> Result<(), stardust_sdk::Error> {
//! # let client = stardust_sdk::Client::connect("library", "docs")?;
//! use serde_json::json;
//! let rename = client.preview("stardust.entity.rename", json!({"id": "book/dune", "newId": "book/dune-1965"}))?;
//! rename.confirm()?;
//! let status = client.execute("stardust.status", json!({}))?;
//! # Ok(()) }
//! ```
//!
//! # Subscriptions
//!
//! ```no_run
//! # fn main() -> Result<(), stardust_sdk::Error> {
//! # let client = stardust_sdk::Client::connect("library", "docs")?;
//! use stardust_sdk::Event;
//!
//! for event in client.subscribe_entities()? {
//!     match event? {
//!         Event::Changed { seq, changes } => println!("{seq}: {changes:?}"),
//!         Event::Reread { seq } => println!("{seq}: changes were dropped; re-read"),
//!     }
//! }
//! // Resume where a previous run stopped (its last event's seq):
//! let documents = client.subscribe_documents_since(42)?;
//! # Ok(()) }
//! ```
//!
//! # Errors
//!
//! Every failure is an [`Error`]; [`Error::code`] is the error code, and a command the core
//! refused is [`Error::Command`] with the core's details:
//!
//! ```no_run
//! # fn main() -> Result<(), stardust_sdk::Error> {
//! # let client = stardust_sdk::Client::connect("library", "docs")?;
//! match client.get("book/nope") {
//!     Err(err) if err.code() == "not-found" => println!("no such book"),
//!     other => { other?; }
//! }
//! # Ok(()) }
//! ```
//!
//! The examples in these docs are compiled but not run (`no_run`): they need a store and a
//! core. The integration tests (`tests/sdk.rs` at the repository root) run the same calls
//! against a real core.
#![deny(clippy::print_stdout)]

mod error;
mod history;
mod preview;
mod subscribe;
mod wire;

use stardust_core::sync;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub use error::{Error, Result};
pub use history::{EntityAt, History, HistoryFilter, Transaction, TransactionDocument};
pub use preview::{Committed, DiagnosticsDelta, DocumentDiff, EntityIds, Preview};
/// Stardust's stable error codes, as [`Error::code`] gives them.
pub use stardust_core::Code;
pub use subscribe::{Change, ChangeKind, DocumentChange, EntityChange, Event, Subscription};

use wire::Conn;

/// How to reach a store's core.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// The `stardust` executable used to start a core when none runs; `None` means
    /// `STARDUST_BIN`, else `stardust` on PATH, else beside the running executable.
    pub exe: Option<PathBuf>,
    /// Whether to start a core when none runs (default `true`).
    pub autostart: bool,
    /// How long a core started by this client stays up with no connection: by default
    /// `STARDUST_IDLE_EXIT` seconds, else 300, as for `stardust lsp`.
    pub idle_exit: Duration,
    /// How long a subscription keeps trying to reconnect after the core went away (default
    /// 30 s).
    pub reconnect_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> ConnectOptions {
        ConnectOptions {
            exe: None,
            autostart: true,
            idle_exit: Duration::from_secs(
                std::env::var("STARDUST_IDLE_EXIT")
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(300),
            ),
            reconnect_timeout: Duration::from_secs(30),
        }
    }
}

impl ConnectOptions {
    /// The executable to start a core with: [`ConnectOptions::exe`], else as `stardust lsp` finds one
    /// (`STARDUST_BIN`, `stardust` on PATH, beside the running executable).
    fn executable(&self) -> std::result::Result<PathBuf, stardust_daemon::attach::NotFound> {
        match &self.exe {
            Some(exe) => Ok(exe.clone()),
            None => stardust_daemon::attach::find_stardust(),
        }
    }
}

/// A connection to a store's core.
#[derive(Debug)]
pub struct Client {
    store: PathBuf,
    name: String,
    options: ConnectOptions,
    conn: Mutex<Conn>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Conn")
    }
}

/// A page of query results.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    /// The `find` columns (`?b`, `count(?b)`, ...).
    pub columns: Vec<String>,
    pub rows: Vec<T>,
    /// How many rows the query has in all.
    pub total: u64,
    /// The offset of the next page, `None` on the last one.
    pub next_offset: Option<u64>,
}

/// An entity as the core holds it (`stardust.entity.get`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Entity {
    pub id: String,
    /// The entity's value (its whole object).
    pub value: Value,
    /// The document holding it, relative to the store root.
    pub path: String,
    /// Where in the document: `{line, column, endLine, endColumn}`, 1-based.
    pub range: Value,
    /// The document's version (SHA-256).
    pub version: String,
}

impl Entity {
    /// The value as a typed record.
    pub fn value_as<T: DeserializeOwned>(&self) -> Result<T> {
        T::deserialize(&self.value)
            .map_err(|err| Error::Decode(format!("entity {}: {err}", self.id)))
    }
}

impl Client {
    /// Connect to the core of `store` as the client `name` (shown in `stardust.status` and
    /// recorded as the origin `lsp:<name>` of commits), starting a core when none runs with
    /// the `stardust` executable found as [`ConnectOptions::exe`] says.
    pub fn connect(store: impl AsRef<Path>, name: &str) -> Result<Client> {
        Client::connect_with(store, name, ConnectOptions::default())
    }

    /// [`Client::connect`] with explicit options.
    pub fn connect_with(
        store: impl AsRef<Path>,
        name: &str,
        options: ConnectOptions,
    ) -> Result<Client> {
        let store = store.as_ref().to_owned();
        let conn = Conn::open(&store, name, &options, &[])?;
        Ok(Client { store, name: name.to_owned(), options, conn: Mutex::new(conn) })
    }

    /// Run any registry command with its argument object and return its result.
    pub fn execute(&self, command: &str, arguments: Value) -> Result<Value> {
        sync::lock(&self.conn).execute(command, arguments)
    }

    /// The store's current seq (the newest committed transaction).
    pub fn seq(&self) -> Result<u64> {
        subscribe::status_seq(&mut sync::lock(&self.conn))
    }

    /// Run a query (DUST or JSON text, or a JSON object) and read each row as a `T`: the
    /// first page (the query's own `limit`, default 100).
    pub fn query<T: DeserializeOwned>(&self, query: impl Into<Value>) -> Result<Page<T>> {
        self.run_query(json!({"document": query.into()}))
    }

    /// One page of a query: `limit` rows (at most 1000) from `offset`.
    pub fn query_page<T: DeserializeOwned>(
        &self,
        query: impl Into<Value>,
        limit: u32,
        offset: u64,
    ) -> Result<Page<T>> {
        self.run_query(json!({"document": query.into(), "limit": limit, "offset": offset}))
    }

    fn run_query<T: DeserializeOwned>(&self, arguments: Value) -> Result<Page<T>> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            columns: Vec<String>,
            rows: Vec<Value>,
            total: u64,
            next_offset: Option<u64>,
        }
        let answer = self.execute("stardust.query.execute", arguments)?;
        let raw: Raw = serde_json::from_value(answer)
            .map_err(|err| Error::Protocol(format!("query results that do not read: {err}")))?;
        let rows = raw
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                T::deserialize(row).map_err(|err| Error::Decode(format!("row {i} ({row}): {err}")))
            })
            .collect::<Result<Vec<T>>>()?;
        Ok(Page { columns: raw.columns, rows, total: raw.total, next_offset: raw.next_offset })
    }

    /// One entity by id (`not-found` when there is none).
    pub fn get(&self, id: &str) -> Result<Entity> {
        let answer = self.execute("stardust.entity.get", json!({"id": id}))?;
        serde_json::from_value(answer)
            .map_err(|err| Error::Protocol(format!("an entity that does not read: {err}")))
    }

    /// Evaluate an expression, such as `@book/dune.author.name`.
    pub fn evaluate(&self, expression: &str) -> Result<Value> {
        self.evaluate_at(expression, None)
    }

    /// Evaluate an expression with an entity as its context (`entity`: its id).
    pub fn evaluate_at(&self, expression: &str, entity: Option<&str>) -> Result<Value> {
        let mut arguments = json!({"expression": expression});
        if let Some(id) = entity {
            arguments["entity"] = json!(id);
        }
        let mut answer = self.execute("stardust.expression.evaluate", arguments)?;
        Ok(answer.get_mut("value").map(Value::take).unwrap_or(Value::Null))
    }

    /// Preview a patch (`ops [...]`: DUST or JSON text, or a JSON object).
    pub fn patch(&self, patch: impl Into<Value>) -> Result<Preview<'_>> {
        self.preview("stardust.patch.apply", json!({"document": patch.into()}))
    }

    /// Preview any mutation command (`stardust.entity.create`, `stardust.entity.rename`, ...).
    pub fn preview(&self, command: &str, arguments: Value) -> Result<Preview<'_>> {
        let answer = self.execute(command, arguments)?;
        Preview::new(self, answer)
    }

    /// Follow entity changes from now on.
    pub fn subscribe_entities(&self) -> Result<Subscription<EntityChange>> {
        self.subscribe(None)
    }

    /// Follow entity changes after `seq`: first what changed since then, then what changes.
    pub fn subscribe_entities_since(&self, seq: u64) -> Result<Subscription<EntityChange>> {
        self.subscribe(Some(seq))
    }

    /// Follow document changes from now on.
    pub fn subscribe_documents(&self) -> Result<Subscription<DocumentChange>> {
        self.subscribe(None)
    }

    /// Follow document changes after `seq`.
    pub fn subscribe_documents_since(&self, seq: u64) -> Result<Subscription<DocumentChange>> {
        self.subscribe(Some(seq))
    }

    fn subscribe<C: Change>(&self, since: Option<u64>) -> Result<Subscription<C>> {
        Subscription::open(self.store.clone(), self.name.clone(), self.options.clone(), since)
    }
}

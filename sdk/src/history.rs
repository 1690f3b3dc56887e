//! History (SPEC §26): an entity as of a seq, and the transactions that touched a path or an
//! entity, newest first.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::subscribe::ChangeKind;
use crate::{Client, EntityIds, Error, Result};

/// An entity as of a seq (`stardust.entity.at`): its value after that transaction.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntityAt {
    pub id: String,
    /// The seq it was read at.
    pub seq: u64,
    /// The entity's value then (its whole object).
    pub value: Value,
    /// The document that held it then, relative to the store root.
    pub path: String,
    /// The seq of the transaction that left that document so.
    pub changed_at: u64,
    /// That document's version then (SHA-256).
    pub version: String,
}

impl EntityAt {
    /// The value as a typed record.
    pub fn value_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        T::deserialize(&self.value)
            .map_err(|err| Error::Decode(format!("entity {} at {}: {err}", self.id, self.seq)))
    }
}

/// Which transactions [`Client::history`] lists: those touching `path` or `entity` (or
/// all), `limit` of them (default 100) from `offset`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// A file's path, relative to the store root or absolute inside it.
    pub path: Option<String>,
    /// An entity's id: the transactions that created, changed or deleted it.
    pub entity: Option<String>,
    pub limit: Option<u32>,
    pub offset: Option<u64>,
}

/// A page of transactions, newest first.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct History {
    pub transactions: Vec<Transaction>,
    /// How many transactions match in all.
    pub total: u64,
    /// The offset of the next page, `None` on the last one.
    pub next_offset: Option<u64>,
}

/// A committed transaction as the log records it (`stardust log --format json`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Transaction {
    pub seq: u64,
    /// UTC, RFC 3339.
    pub time: String,
    /// Who made it: `external`, `lsp:<client>`, `sdk:<client>`, ...
    pub origin: String,
    pub documents: Vec<TransactionDocument>,
}

/// One document's part in a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct TransactionDocument {
    pub path: String,
    pub change: ChangeKind,
    /// The document's version (SHA-256) before, `None` when the transaction created it.
    pub before: Option<String>,
    /// Its version after, `None` when the transaction deleted it.
    pub after: Option<String>,
    /// The entities that appeared in, changed in, and disappeared from the document.
    #[serde(default)]
    pub entities: EntityIds,
}

impl Client {
    /// One entity as of `seq`: its value after that transaction (`not-found` when it did not
    /// exist then, or `seq` is past the head or compacted away).
    pub fn get_at(&self, id: &str, seq: u64) -> Result<EntityAt> {
        let answer = self.execute("stardust.entity.at", json!({"id": id, "seq": seq}))?;
        serde_json::from_value(answer)
            .map_err(|err| Error::Protocol(format!("an entity that does not read: {err}")))
    }

    /// The transactions touching a path or an entity (or all), newest first, paged.
    pub fn history(&self, filter: &HistoryFilter) -> Result<History> {
        let mut arguments = Map::new();
        if let Some(path) = &filter.path {
            arguments.insert("path".into(), json!(path));
        }
        if let Some(entity) = &filter.entity {
            arguments.insert("entity".into(), json!(entity));
        }
        if let Some(limit) = filter.limit {
            arguments.insert("limit".into(), json!(limit));
        }
        if let Some(offset) = filter.offset {
            arguments.insert("offset".into(), json!(offset));
        }
        let answer = self.execute("stardust.history.list", Value::Object(arguments))?;
        serde_json::from_value(answer)
            .map_err(|err| Error::Protocol(format!("a history that does not read: {err}")))
    }
}

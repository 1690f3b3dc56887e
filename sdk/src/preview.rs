//! Previews of mutations: what a patch would change, confirmed or discarded by
//! the session that made it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::subscribe::ChangeKind;
use crate::{Client, Error, Result};

/// A mutation's preview. Nothing is written until [`Preview::confirm`]; a preview expires
/// after 10 minutes and is dropped when its client disconnects.
#[derive(Debug)]
pub struct Preview<'c> {
    client: &'c Client,
    /// The preview's opaque id.
    pub id: String,
    /// When it expires (RFC 3339).
    pub expires_at: String,
    /// The store's seq the preview was computed at.
    pub seq: u64,
    /// Whether the save authority would accept it; when not, `reasons` says why.
    pub committable: bool,
    pub reasons: Vec<String>,
    /// The documents it would touch, each with a unified diff.
    pub documents: Vec<DocumentDiff>,
    /// The entities it would create, change and delete.
    pub entities: EntityIds,
    /// Every temporary name (`?name`) and the id it would get (final at confirm).
    pub resolved: BTreeMap<String, String>,
    /// Diagnostics the change would add and resolve (objects with code, severity, range, message).
    pub diagnostics: DiagnosticsDelta,
    /// The core's whole answer, for fields this type does not name.
    pub raw: Value,
}

/// One touched document in a preview.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct DocumentDiff {
    pub path: String,
    pub change: ChangeKind,
    /// The version read, `None` for a new document.
    pub before: Option<String>,
    /// The version it would have, `None` when deleted.
    pub after: Option<String>,
    /// A unified diff of the change.
    pub diff: String,
}

/// Entity ids a preview would create, change and delete.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct EntityIds {
    pub created: Vec<String>,
    pub changed: Vec<String>,
    pub deleted: Vec<String>,
}

/// New and resolved diagnostics.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DiagnosticsDelta {
    pub new: Vec<Value>,
    pub resolved: Vec<Value>,
}

/// A committed preview.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Committed {
    /// The transaction's seq.
    pub seq: u64,
    /// Every temporary name and the id that ended up on disk.
    #[serde(default)]
    pub resolved: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fields {
    preview_id: String,
    expires_at: String,
    #[serde(default)]
    seq: u64,
    committable: bool,
    #[serde(default)]
    reasons: Vec<String>,
    documents: Vec<DocumentDiff>,
    #[serde(default)]
    entities: EntityIds,
    #[serde(default)]
    resolved: BTreeMap<String, String>,
    #[serde(default)]
    diagnostics: DiagnosticsDelta,
}

impl<'c> Preview<'c> {
    pub(crate) fn new(client: &'c Client, raw: Value) -> Result<Preview<'c>> {
        let f: Fields = serde_json::from_value(raw.clone())
            .map_err(|err| Error::Protocol(format!("a preview that does not read: {err}")))?;
        Ok(Preview {
            client,
            id: f.preview_id,
            expires_at: f.expires_at,
            seq: f.seq,
            committable: f.committable,
            reasons: f.reasons,
            documents: f.documents,
            entities: f.entities,
            resolved: f.resolved,
            diagnostics: f.diagnostics,
            raw,
        })
    }

    /// Commit exactly what was previewed. Fails with `refused` (the save authority's
    /// `problems` in `data`), `preview-stale` (a document changed since; preview again) or
    /// `preview-expired`. A preview is single-use: this consumes it, success or failure.
    pub fn confirm(self) -> Result<Committed> {
        let answer =
            self.client.execute("stardust.preview.confirm", json!({"previewId": self.id}))?;
        serde_json::from_value(answer)
            .map_err(|err| Error::Protocol(format!("a confirm answer that does not read: {err}")))
    }

    /// Drop the preview. `false` when the core no longer had it (expired or already used).
    pub fn discard(self) -> Result<bool> {
        let answer =
            self.client.execute("stardust.preview.discard", json!({"previewId": self.id}))?;
        Ok(answer["discarded"] == true)
    }
}

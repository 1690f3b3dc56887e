//! Previews (SPEC §7): what a mutation would do, held until it is confirmed, discarded or expires.
//!
//! A preview records the version of every document it was computed from. Confirming it
//! commits exactly its planned texts, each expecting that version, so any change in between is
//! `preview-stale` and nothing is written. The first confirm attempt consumes it.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::{CommandError, CommandResult};
use crate::analysis::{Analysis, diagnostics_delta};
use crate::answers;
use crate::diagnostics::Diagnostic;
use crate::patch::Plan;
use crate::store::{Change, Origin, Prepared, Store, StoreError, Version, rfc3339};

/// How long a preview can be confirmed.
pub const PREVIEW_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The most previews one session may hold; the oldest is dropped past it.
const MAX_PER_SESSION: usize = 64;

pub(super) struct Preview {
    pub id: String,
    pub command: String,
    session: u64,
    expires: Instant,
    /// Store-relative path, version it was computed from, planned text.
    documents: Vec<(String, Option<Version>, Option<String>)>,
    json: Value,
    resolved: BTreeMap<String, String>,
    /// The analysis made for the preview, reused by the commit if nothing changed since.
    prepared: Prepared,
    /// Why confirming is refused, decided when the preview was made (a code edit adding
    /// errors under `code-error`, SPEC §18); empty when it may be committed.
    refusals: Vec<String>,
}

impl Preview {
    pub fn to_json(&self) -> Value {
        self.json.clone()
    }

    /// The session that made the preview.
    pub fn session(&self) -> u64 {
        self.session
    }

    /// The text the preview plans for `path` (`Some(None)`: it deletes it; `None`: it does not
    /// touch it).
    pub fn planned(&self, path: &str) -> Option<Option<&str>> {
        self.documents.iter().find(|(p, _, _)| p == path).map(|(_, _, after)| after.as_deref())
    }

    /// The store paths the preview writes.
    pub fn paths(&self) -> Vec<String> {
        self.documents.iter().map(|(path, _, _)| path.clone()).collect()
    }

    /// A preview of whole file texts computed outside the analysis (a code edit): each
    /// `(path, version read, planned text)`, with what refuses its confirmation.
    #[allow(clippy::too_many_arguments)]
    pub fn of_files(
        id: String,
        command: &str,
        expires: Instant,
        documents: Vec<(String, Option<Version>, Option<String>)>,
        json: Value,
        refusals: Vec<String>,
        seq: u64,
        analysis: Analysis,
    ) -> Preview {
        Preview {
            id,
            command: command.to_owned(),
            session: 0,
            expires,
            documents,
            json,
            resolved: BTreeMap::new(),
            // Code files take no part in the analysis: it is the snapshot's, unchanged.
            prepared: Prepared { seq, changes: Vec::new(), after: analysis },
            refusals,
        }
    }

    /// Commit the planned texts, each expecting the version it was computed from.
    pub fn commit(self, store: &Store, origin: Origin) -> CommandResult {
        if Instant::now() >= self.expires {
            return Err(CommandError::PreviewExpired(self.id));
        }
        if !self.refusals.is_empty() {
            return Err(crate::error::Error::Refused(format!(
                "the save authority refuses this edit: {}; nothing was written",
                self.refusals.join("; ")
            ))
            .into());
        }
        // Staleness is checked once, by the store under its writer lock: every change expects
        // the version the preview read, and a mismatch (`conflict`) is `preview-stale`.
        let changes: Vec<Change> = self
            .documents
            .into_iter()
            .map(|(path, before, after)| match (before, after) {
                (None, Some(text)) => Change::create(path, text),
                (Some(v), Some(text)) => Change::put(path, text).expecting(v),
                (Some(v), None) => Change::delete(path).expecting(v),
                (None, None) => Change::delete(path),
            })
            .collect();
        match store.commit_prepared(origin, changes, Some(self.prepared)) {
            Ok(committed) => Ok(json!({"seq": committed.seq, "resolved": self.resolved})),
            Err(StoreError::Conflict { path, .. }) => Err(CommandError::PreviewStale { path }),
            Err(err) => Err(err.into()),
        }
    }
}

/// Every open preview, by id.
#[derive(Default)]
pub(super) struct Previews {
    by_id: HashMap<String, Preview>,
}

impl Previews {
    pub fn insert(&mut self, session: u64, mut preview: Preview) {
        let now = Instant::now();
        self.by_id.retain(|_, p| p.expires > now);
        let mut mine: Vec<(Instant, String)> = self
            .by_id
            .values()
            .filter(|p| p.session == session)
            .map(|p| (p.expires, p.id.clone()))
            .collect();
        if mine.len() >= MAX_PER_SESSION {
            mine.sort();
            for (_, id) in &mine[..=mine.len() - MAX_PER_SESSION] {
                self.by_id.remove(id);
            }
        }
        preview.session = session;
        self.by_id.insert(preview.id.clone(), preview);
    }

    /// Remove and return preview `id` if `session` made it, or if `any` (an editor's session
    /// while previews are shared). Another session's preview is otherwise left alone and
    /// reported as not found, so ids cannot be probed or consumed across sessions.
    pub fn take(&mut self, id: &str, session: u64, any: bool) -> Option<Preview> {
        match self.by_id.get(id) {
            Some(p) if any || p.session == session => self.by_id.remove(id),
            _ => None,
        }
    }

    /// Preview `id`, left in place, on the terms of [`Previews::take`]: `Err(true)` when it
    /// has expired, `Err(false)` when there is none this session may see.
    pub fn get(&self, id: &str, session: u64, any: bool) -> Result<&Preview, bool> {
        match self.by_id.get(id) {
            Some(p) if any || p.session == session => {
                if Instant::now() >= p.expires {
                    Err(true)
                } else {
                    Ok(p)
                }
            }
            _ => Err(false),
        }
    }

    /// Every preview that has not expired, oldest first (then by id).
    pub fn open(&self) -> Vec<&Preview> {
        let now = Instant::now();
        let mut open: Vec<&Preview> = self.by_id.values().filter(|p| p.expires > now).collect();
        open.sort_by(|a, b| a.expires.cmp(&b.expires).then_with(|| a.id.cmp(&b.id)));
        open
    }

    pub fn drop_session(&mut self, session: u64) {
        self.by_id.retain(|_, p| p.session != session);
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// Build the preview of `plan`, computed on `analysis` (the snapshot at `seq`).
pub(super) fn build(
    analysis: &Analysis,
    seq: u64,
    command: &str,
    plan: Plan,
    lifetime: Duration,
) -> Preview {
    let changes: Vec<(String, Option<Vec<u8>>)> = plan
        .documents
        .iter()
        .map(|d| (d.path.clone(), d.after.as_ref().map(|t| t.clone().into_bytes())))
        .collect();
    let paths: Vec<String> = changes.iter().map(|(p, _)| p.clone()).collect();
    let after = analysis.with_changes(changes);
    let (added, removed) = diagnostics_delta(analysis, &after, &paths);
    // The save authority's rule (`analysis::new_problems`): new diagnostics it refuses.
    let refuse = &analysis.config().refuse;
    let reasons: Vec<String> = added
        .iter()
        .filter(|(_, d)| refuse.contains(&d.code))
        .map(|(path, d)| format!("{path}: {}[{}] {}", d.severity.as_str(), d.code, d.message))
        .collect();
    let to_json = |a: &Analysis, list: &[(String, Diagnostic)]| -> Vec<Value> {
        list.iter()
            .filter_map(|(path, d)| Some(answers::diagnostic_json(a, a.document(path)?, d)))
            .collect()
    };
    let (new, resolved_diags) = (to_json(&after, &added), to_json(analysis, &removed));
    let mut documents_json = Vec::new();
    let mut documents = Vec::new();
    let mut prepared = Vec::new();
    for doc in plan.documents {
        let before_text = doc.before.as_ref().map_or("", |d| &d.text);
        let after_text = doc.after.as_deref().unwrap_or("");
        let before = doc.before.as_ref().map(|d| Version::of(d.text.as_bytes()));
        let after_version = doc.after.as_ref().map(|t| Version::of(t.as_bytes()));
        let change = match (&doc.before, &doc.after) {
            (None, _) => "created",
            (Some(_), None) => "deleted",
            (Some(_), Some(_)) => "changed",
        };
        let diff = unified_diff(
            &doc.path,
            doc.before.as_ref().map(|_| before_text),
            doc.after.as_ref().map(|_| after_text),
        );
        documents_json.push(json!({
            "path": doc.path,
            "change": change,
            "before": before.map(|v| v.to_string()),
            "after": after_version.map(|v| v.to_string()),
            "diff": diff,
        }));
        prepared.push((doc.path.clone(), after_version));
        documents.push((doc.path, before, doc.after));
    }
    let id = new_id();
    let expires_at = SystemTime::now() + lifetime;
    let json = json!({
        "previewId": id,
        "expiresAt": rfc3339(expires_at),
        "seq": seq,
        "command": command,
        "documents": documents_json,
        "entities": {"created": plan.created, "changed": plan.changed, "deleted": plan.deleted},
        "resolved": plan.resolved,
        "diagnostics": {"new": new, "resolved": resolved_diags},
        "committable": reasons.is_empty(),
        "reasons": reasons,
    });
    Preview {
        id,
        command: command.to_owned(),
        session: 0,
        expires: Instant::now() + lifetime,
        documents,
        json,
        resolved: plan.resolved,
        prepared: Prepared { seq, changes: prepared, after },
        refusals: Vec::new(),
    }
}

/// The unified diff of a file from `before` to `after` ([`answers::unified_diff`]).
pub(super) fn unified_diff(path: &str, before: Option<&str>, after: Option<&str>) -> String {
    answers::unified_diff(path, before, after)
}

/// 128 random bits from the operating system, in hex: an id nobody can guess.
pub(super) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness (never seen on Linux): SipHash under std's random per-process keys.
        use std::hash::{BuildHasher, Hasher};
        let state = std::collections::hash_map::RandomState::new();
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = state.build_hasher();
            h.write_u128(now.as_nanos());
            h.write_usize(i);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One file a preview of whole contents changes (a revert, SPEC §26): its text now (`None`:
/// absent) and its planned text (`None`: deleted).
pub(super) struct WholeFile {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Build the preview of whole-file changes computed on `analysis` (the snapshot at `seq`):
/// documents go through the same diagnostics delta and save-authority rule as a patch's
/// preview; code files are committed as bytes, their servers' diagnostics not speculated.
pub(super) fn build_files(
    analysis: &Analysis,
    seq: u64,
    command: &str,
    files: Vec<WholeFile>,
    lifetime: Duration,
) -> Preview {
    let config = analysis.config();
    let is_document = |path: &str| crate::scan::is_document_path(config, path);
    let changes: Vec<(String, Option<Vec<u8>>)> = files
        .iter()
        .filter(|f| is_document(&f.path))
        .map(|f| (f.path.clone(), f.after.clone().map(String::into_bytes)))
        .collect();
    let paths: Vec<String> = changes.iter().map(|(p, _)| p.clone()).collect();
    let after = analysis.with_changes(changes);
    let (added, removed) = diagnostics_delta(analysis, &after, &paths);
    let refuse = &config.refuse;
    let reasons: Vec<String> = added
        .iter()
        .filter(|(_, d)| refuse.contains(&d.code))
        .map(|(path, d)| format!("{path}: {}[{}] {}", d.severity.as_str(), d.code, d.message))
        .collect();
    let to_json = |a: &Analysis, list: &[(String, Diagnostic)]| -> Vec<Value> {
        list.iter()
            .filter_map(|(path, d)| Some(answers::diagnostic_json(a, a.document(path)?, d)))
            .collect()
    };
    let (new, resolved_diags) = (to_json(&after, &added), to_json(analysis, &removed));
    let (mut created, mut changed, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    let mut documents_json = Vec::new();
    let mut documents = Vec::new();
    let mut prepared = Vec::new();
    let mut code = Vec::new();
    for file in files {
        let before = file.before.as_ref().map(|t| Version::of(t.as_bytes()));
        let after_version = file.after.as_ref().map(|t| Version::of(t.as_bytes()));
        let change = match (&file.before, &file.after) {
            (None, _) => "created",
            (Some(_), None) => "deleted",
            (Some(_), Some(_)) => "changed",
        };
        let diff = unified_diff(&file.path, file.before.as_deref(), file.after.as_deref());
        documents_json.push(json!({
            "path": file.path,
            "change": change,
            "before": before.map(|v| v.to_string()),
            "after": after_version.map(|v| v.to_string()),
            "diff": diff,
        }));
        if is_document(&file.path) {
            let ids = |a: &Analysis| -> BTreeMap<String, Value> {
                let Some(doc) = a.document(&file.path) else { return BTreeMap::new() };
                (0..doc.entities.len())
                    .filter_map(|i| {
                        let id = doc.entities[i].id.clone()?;
                        Some((id, doc.entity_node(i)?.1.clone()))
                    })
                    .collect()
            };
            let (old, mut new) = (ids(analysis), ids(&after));
            for (id, value) in old {
                match new.remove(&id) {
                    None => deleted.push(id),
                    Some(now) if now != value => changed.push(id),
                    Some(_) => {}
                }
            }
            created.extend(new.into_keys());
            prepared.push((file.path.clone(), after_version));
        } else {
            code.push(file.path.clone());
        }
        documents.push((file.path, before, file.after));
    }
    for list in [&mut created, &mut changed, &mut deleted] {
        list.sort();
        list.dedup();
    }
    let id = new_id();
    let mut json = json!({
        "previewId": id,
        "expiresAt": rfc3339(SystemTime::now() + lifetime),
        "seq": seq,
        "command": command,
        "documents": documents_json,
        "entities": {"created": created, "changed": changed, "deleted": deleted},
        "resolved": {},
        "diagnostics": {"new": new, "resolved": resolved_diags},
        "committable": reasons.is_empty(),
        "reasons": reasons,
    });
    if !code.is_empty() {
        json["diagnosticsUnknown"] = json!(true);
        json["diagnosticsUnknownReason"] = json!(format!(
            "code files are reverted as text; their language servers' diagnostics are not \
             checked in this preview: {}",
            code.join(", ")
        ));
    }
    Preview {
        id,
        command: command.to_owned(),
        session: 0,
        expires: Instant::now() + lifetime,
        documents,
        json,
        resolved: BTreeMap::new(),
        prepared: Prepared { seq, changes: prepared, after },
        refusals: Vec::new(),
    }
}

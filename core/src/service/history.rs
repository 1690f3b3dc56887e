//! The history commands of SPEC §26: transactions touching a path or an entity, any file or
//! entity as of a seq, what transactions changed, and the revert of one transaction as a
//! preview through the save authority like every mutation.

use std::sync::Arc;

use serde_json::{Value, json};

use super::preview::{self, WholeFile};
use super::{Call, CommandResult, Service, Session, page};
use crate::answers::unified_diff;
use crate::error::Error;
use crate::store::{AtContent, FileChange, HistoryFilter};
use crate::sync::lock;

/// What an editor connection holds open: the text of each buffer (SPEC §26: reverting a file
/// an editor holds with unsaved text is a `conflict`). The LSP front registers one per
/// session.
pub trait EditorTexts: Send + Sync {
    /// The text of the buffer open at store path `path`, if one is.
    fn text(&self, path: &str) -> Option<String>;
}

impl Service {
    /// Let the service ask `session`'s editor for the texts it holds open, until the session
    /// closes.
    pub fn register_editor(&self, session: &Session, texts: Arc<dyn EditorTexts>) {
        lock(&self.editors).insert(session.id, texts);
    }

    /// Whether an editor holds `path` open with a text other than `now` (`None`: absent).
    fn held_unsaved(&self, path: &str, now: Option<&[u8]>) -> bool {
        let now = now.unwrap_or_default();
        if self.code_buffer(path).is_some_and(|held| held.as_bytes() != now) {
            return true;
        }
        let editors: Vec<Arc<dyn EditorTexts>> = lock(&self.editors).values().cloned().collect();
        editors.iter().any(|e| e.text(path).is_some_and(|held| held.as_bytes() != now))
    }
}

/// A `path` argument as a store path (relative, absolute in the store or a mount, `file:`).
fn store_path(call: &Call<'_>, given: &str) -> Result<String, Error> {
    Ok(call.service.roots().to_store_path(given)?.path)
}

fn seq_arg(call: &Call<'_>, key: &str) -> Option<u64> {
    call.args.get(key).and_then(Value::as_u64)
}

fn text_json(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!(text),
        Err(_) => json!(String::from_utf8_lossy(bytes)),
    }
}

fn at_json(at: &AtContent) -> Value {
    json!({
        "path": at.path,
        "seq": at.seq,
        "changedAt": at.changed_at,
        "version": at.version.to_string(),
        "text": text_json(&at.bytes),
        "bytes": at.bytes.len(),
    })
}

/// `stardust.history.list`: the transactions touching a path or an entity (or all), newest
/// first, paged.
pub(super) fn list(call: &mut Call<'_>) -> CommandResult {
    let filter = HistoryFilter {
        path: match call.args.get("path").and_then(Value::as_str) {
            Some(given) => Some(store_path(call, given)?),
            None => None,
        },
        entity: call.args.get("entity").and_then(Value::as_str).map(str::to_owned),
    };
    let (limit, offset) = page::window(&call.args)?;
    let at = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let (txns, total) = call.service.store().history(&filter, at(limit), at(offset))?;
    let end = at(offset).saturating_add(txns.len());
    Ok(json!({
        "transactions": txns.iter().map(|t| t.to_json()).collect::<Vec<_>>(),
        "total": total,
        "nextOffset": if end < total { json!(end) } else { Value::Null },
    }))
}

/// `stardust.document.at`: a file as of a seq.
pub(super) fn document_at(call: &mut Call<'_>) -> CommandResult {
    let path = store_path(call, &call.text("path"))?;
    let seq = seq_arg(call, "seq").unwrap_or_default();
    Ok(at_json(&call.service.store().document_at(&path, seq)?))
}

/// `stardust.entity.at`: an entity's value as of a seq.
pub(super) fn entity_at(call: &mut Call<'_>) -> CommandResult {
    let seq = seq_arg(call, "seq").unwrap_or_default();
    let at = call.service.store().entity_at(&call.text("id"), seq)?;
    Ok(json!({
        "id": at.id,
        "seq": at.seq,
        "value": at.value,
        "path": at.document.path,
        "changedAt": at.document.changed_at,
        "version": at.document.version.to_string(),
    }))
}

fn change_json(file: &FileChange) -> Value {
    let text = |c: &Option<(crate::store::Version, Vec<u8>)>| {
        c.as_ref().map(|(_, b)| String::from_utf8_lossy(b).into_owned())
    };
    let (before, after) = (text(&file.before), text(&file.after));
    let change = match (&file.before, &file.after) {
        (None, _) => "created",
        (_, None) => "deleted",
        _ => "changed",
    };
    json!({
        "path": file.path,
        "change": change,
        "before": file.before.as_ref().map(|(v, _)| v.to_string()),
        "after": file.after.as_ref().map(|(v, _)| v.to_string()),
        "diff": unified_diff(&file.path, before.as_deref(), after.as_deref()),
    })
}

/// `stardust.transaction.diff`: what the transactions `seq..=toSeq` changed.
pub(super) fn diff(call: &mut Call<'_>) -> CommandResult {
    let seq = seq_arg(call, "seq").unwrap_or_default();
    let to = seq_arg(call, "toSeq").unwrap_or(seq);
    let paths: Option<Vec<String>> = match call.args.get("paths").and_then(Value::as_array) {
        Some(given) => Some(
            given
                .iter()
                .filter_map(Value::as_str)
                .map(|p| store_path(call, p))
                .collect::<Result<_, _>>()?,
        ),
        None => None,
    };
    let files = call.service.store().diff(seq, to, paths.as_deref())?;
    Ok(json!({
        "seq": seq,
        "toSeq": to,
        "documents": files.iter().map(change_json).collect::<Vec<_>>(),
    }))
}

/// `stardust.transaction.revert`: the inverse of a transaction at the head, as a preview.
pub(super) fn revert(call: &mut Call<'_>) -> CommandResult {
    let seq = seq_arg(call, "seq").unwrap_or_default();
    let store = call.service.store();
    let revert = store.revert(seq)?;
    if revert.head != call.snapshot.seq {
        // A commit came between: plan on the store as it is now.
        call.snapshot = store.snapshot();
        if revert.head != call.snapshot.seq {
            return Err(Error::Conflict(
                "the store changed while the revert was planned; ask again".to_owned(),
            )
            .into());
        }
    }
    let mut files = Vec::with_capacity(revert.files.len());
    for file in revert.files {
        let now = file.before.as_ref().map(|(_, b)| b.as_slice());
        if call.service.held_unsaved(&file.path, now) {
            return Err(Error::Conflict(format!(
                "{} has unsaved changes in an editor; save or close it there, then ask again",
                file.path
            ))
            .into());
        }
        let text = |c: Option<(crate::store::Version, Vec<u8>)>| -> Result<_, Error> {
            c.map(|(_, bytes)| {
                String::from_utf8(bytes).map_err(|_| {
                    Error::Unsupported(format!(
                        "{} is not UTF-8 text; revert it by restoring the file (stardust show \
                         --at {})",
                        file.path,
                        seq - 1
                    ))
                })
            })
            .transpose()
        };
        let path = file.path.clone();
        files.push(WholeFile { path, before: text(file.before)?, after: text(file.after)? });
    }
    let lifetime = call.service.preview_lifetime;
    let analysis = &call.snapshot.analysis;
    let held = preview::build_files(analysis, call.snapshot.seq, call.name, files, lifetime);
    let mut answer = held.to_json();
    answer["reverts"] = json!(seq);
    lock(&call.service.previews).insert(call.session.id, held);
    Ok(answer)
}

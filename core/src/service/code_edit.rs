//! Code edits as previews (SPEC §18): a language server's rename, or a code action from the
//! `code_actions` listing (by the handle the listing minted), becomes a Stardust preview of
//! whole file texts, with the speculative diagnostics delta of those texts; confirming it
//! commits them through the save authority like any other preview.
//!
//! Invariants:
//! - A preview never writes a file or an editor's buffer. The edited texts are given to the
//!   servers as unsaved versions while the diagnostics are collected, then the texts they had
//!   are given back; no other request of any session reaches a server in between (the
//!   `speculation` lock of [`super::code::CodeFiles`]).
//! - Its texts are computed from the files on disk and expect their versions: a file an editor
//!   holds with unsaved changes is refused (`conflict`), since the server's positions are in
//!   the editor's text and confirming would write that text too.
//! - Edits that create, rename or delete files, overlap, leave the store, touch a document or
//!   more than [`MAX_EDITED_FILES`] files are refused when the preview is made.
//! - A code action's handle is bound to the session that listed it and to the version of the
//!   file it was listed on, expires like a preview, and is spent by its first use.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::code::{CodeTarget, Texts, as_list, mcp_position, severity, tagged, text_position};
use super::preview::{self, Preview};
use super::{Call, CommandError, CommandResult, Service, page};
use crate::codefiles::{self, Activity, CodeError, Owner, Publication};
use crate::error::{Code, Error};
use crate::store::saves::CodeSaves;
use crate::store::{Version, rfc3339};
use crate::sync::lock;
use crate::text::{Encoding, LineIndex, Position};

/// The most files one code edit may touch.
pub const MAX_EDITED_FILES: usize = 1000;

/// One file of a code edit: its text on disk and the edited text.
pub(super) struct FileEdit {
    pub target: CodeTarget,
    pub before: String,
    pub after: String,
    /// The edit as byte spans of `before`, in order and apart: where a diagnostic of
    /// `before` is in `after`.
    pub spans: Vec<Span>,
}

/// One replaced span of a text: its start and end (bytes) and the length of what replaced it.
pub(super) type Span = (usize, usize, usize);

impl FileEdit {
    /// A file changed from `before` to `after` as a whole (a save): its one minimal edit.
    pub(super) fn whole(target: CodeTarget, before: String, after: String) -> FileEdit {
        let edit = crate::text::diff::minimal_edit(&before, &after);
        let spans = if edit.is_empty() {
            Vec::new()
        } else {
            vec![(edit.start, edit.old_end, edit.new_end - edit.start)]
        };
        FileEdit { target, before, after, spans }
    }

    /// A file the edit does not touch, whose diagnostics it may change (it imports a touched
    /// file, or names the renamed symbol): its text now, before and after.
    fn untouched(target: CodeTarget, text: String) -> FileEdit {
        FileEdit { target, before: text.clone(), after: text, spans: Vec::new() }
    }
}

/// The speculative diagnostics delta of a code edit, as MCP shows diagnostics.
pub(super) enum Delta {
    Known { new: Vec<Value>, resolved: Vec<Value> },
    Unknown(String),
}

/// What the server's `references` say of a rename's edit (SPEC §25): the places it reports
/// that the edit leaves out, as the tools show locations, and the files that name the symbol.
#[derive(Default)]
struct Coverage {
    missing: Vec<Value>,
    /// The server answered the rename or its references while not ready.
    indexing: bool,
    /// URIs of the files the references are in.
    referencing: Vec<String>,
}

/// `rename_preview` for a code file: the server's rename as a preview, made only on a ready
/// server and checked against the server's own references of the same symbol.
pub(super) fn rename_preview(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let service = call.service;
    let new_name = call.args.get("newName").and_then(Value::as_str).unwrap_or_default();
    let mut texts = Texts::new(service);
    let (place, text) = text_position(service, target, &call.args, &mut texts)?;
    let mut params = place.clone();
    params["newName"] = json!(new_name);
    let mut check = place;
    check["context"] = json!({"includeDeclaration": true});
    // The file is given to its server once, now (while it may still be loading: it then
    // checks the file during its start rather than after the question), so that the two
    // questions below, asked at once, find it given.
    service.code_sync(target)?;
    // The cross-check is asked while the rename is computed: a server answers them in turn,
    // but neither waits for the other's round trip (docs/DECISIONS.md, "A rename's preview
    // without idle waits").
    let (answer, references) = std::thread::scope(|scope| {
        let references = std::thread::Builder::new()
            .name("rename-references".into())
            .spawn_scoped(scope, || {
                service.ask_when_ready(target, &text, "textDocument/references", &check)
            });
        let answer = service.ask_when_ready(target, &text, "textDocument/rename", &params);
        let references = match references {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to spare: asked after the rename.
            Err(_) => service.ask_when_ready(target, &text, "textDocument/references", &check),
        };
        (answer, references)
    });
    let answer = answer?;
    tracing::debug!(server = target.server(), indexing = answer.indexing, "rename answered");
    if answer.result.is_null() {
        return Err(Error::Unsupported(format!(
            "{} cannot rename what is at that place of {}; prepare_rename says what can be \
             renamed",
            target.server(),
            target.path
        ))
        .into());
    }
    // A server without `references` cannot be checked against them; its rename stands alone.
    let references = match references {
        Ok(references) => references,
        Err(err) if err.code() == Code::Unsupported => {
            codefiles::CodeAnswer { result: Value::Null, indexing: false }
        }
        Err(err) => return Err(err),
    };
    let found = as_list(&references.result);
    tracing::debug!(server = target.server(), count = found.len(), "rename's references answered");
    let encoding = service.code_encoding(target.server());
    let missing = uncovered(&answer.result, &found)
        .iter()
        .filter_map(|l| texts.location(l, target.server(), encoding))
        .collect();
    let mut referencing: Vec<String> =
        found.iter().filter_map(|l| l["uri"].as_str().map(str::to_owned)).collect();
    referencing.sort();
    referencing.dedup();
    let coverage =
        Coverage { missing, indexing: answer.indexing || references.indexing, referencing };
    preview_edit(call, "rename_preview", target.server(), &answer.result, coverage)
}

/// The references (LSP `Location`s) that no edit of the `WorkspaceEdit` `edit` covers: a
/// rename that leaves one out would leave a use of the old name behind.
fn uncovered(edit: &Value, references: &[Value]) -> Vec<Value> {
    let mut by_uri: HashMap<&str, Vec<&Value>> = HashMap::new();
    if let Some(changes) = edit.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            let uri = change["textDocument"]["uri"].as_str().unwrap_or_default();
            by_uri.entry(uri).or_default().extend(change["edits"].as_array().into_iter().flatten());
        }
    }
    if let Some(changes) = edit.get("changes").and_then(Value::as_object) {
        for (uri, edits) in changes {
            by_uri.entry(uri).or_default().extend(edits.as_array().into_iter().flatten());
        }
    }
    let at = |p: &Value| (p["line"].as_u64().unwrap_or(0), p["character"].as_u64().unwrap_or(0));
    references
        .iter()
        .filter(|r| {
            let (start, end) = (at(&r["range"]["start"]), at(&r["range"]["end"]));
            let edits = by_uri.get(r["uri"].as_str().unwrap_or_default());
            !edits
                .into_iter()
                .flatten()
                .any(|e| at(&e["range"]["start"]) <= start && end <= at(&e["range"]["end"]))
        })
        .cloned()
        .collect()
}

/// The one way a server's `WorkspaceEdit` becomes a preview (a rename, a code action): whole
/// file texts, their speculative diagnostics delta (over the files they touch and those
/// that may break with them), held for the call's session.
fn preview_edit(
    call: &Call<'_>,
    command: &str,
    server: &str,
    edit: &Value,
    coverage: Coverage,
) -> CommandResult {
    let service = call.service;
    let encoding = service.code_encoding(server);
    let files = workspace_edit(service, edit, encoding)?;
    let delta = match dependents(service, &files, &coverage.referencing) {
        Ok(dependents) => {
            tracing::debug!(touched = files.len(), dependents = dependents.len(), "delta's files");
            speculate(service, &files, &dependents)
        }
        Err(reason) => Delta::Unknown(reason),
    };
    Ok(insert(call, command, files, delta, &coverage))
}

/// The most files a delta checks besides those the edit touches.
pub const MAX_DEPENDENTS: usize = 300;

/// The files whose diagnostics an edit of `files` may change without touching them (SPEC
/// §25): those that name the renamed symbol (`referencing`, URIs) and those that import a
/// touched file, among the code files of the touched files' servers. A file imports another
/// when one of its lines with an import word (`import`, `from`, `require`, `include`, `use`,
/// `mod`) names the other's module: its file name without the extension, or its folder's
/// name for an `__init__`, `index` or `mod` file. A guess that errs on the side of more
/// files: a file checked that did not need it only costs time. `Err`: more than
/// [`MAX_DEPENDENTS`] of them.
fn dependents(
    service: &Service,
    files: &[FileEdit],
    referencing: &[String],
) -> Result<Vec<FileEdit>, String> {
    let touched: std::collections::HashSet<&str> =
        files.iter().map(|f| f.target.path.as_str()).collect();
    let servers: std::collections::HashSet<&str> =
        files.iter().map(|f| f.target.server()).collect();
    let modules: Vec<String> = files.iter().filter_map(|f| module_name(&f.target.path)).collect();
    let roots = service.roots();
    let mut paths: std::collections::BTreeSet<String> = referencing
        .iter()
        .filter_map(|uri| roots.uri_to_store_path(uri).ok().map(|r| r.path))
        .filter(|p| !touched.contains(p.as_str()))
        .collect();
    let snapshot = service.store.snapshot();
    let config = snapshot.analysis.config();
    let Ok(all) = service.code_servers() else { return Ok(Vec::new()) };
    let root = service.store.root();
    let mut candidates = Vec::new();
    crate::scan::find_file(root, config, codefiles::FIRST_FILE_BUDGET, |rel| {
        if !touched.contains(rel)
            && let Ok(Owner::Server { server, .. }) = codefiles::route(config, &all, rel)
            && servers.contains(server)
        {
            candidates.push(rel.to_owned());
        }
        None::<()>
    });
    let texts = crate::scan::read_many(&candidates, |rel| {
        service.code_file_text(&root.join(rel).to_string_lossy())
    });
    for (rel, text) in candidates.into_iter().zip(texts) {
        if text.is_some_and(|t| imports_any(&t, &modules)) {
            paths.insert(rel);
        }
    }
    if paths.len() > MAX_DEPENDENTS {
        return Err(format!(
            "{} files besides those the edit touches import them or name the symbol; a delta \
             checks at most {MAX_DEPENDENTS}",
            paths.len()
        ));
    }
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let Ok(target) = service.code_target(&path) else { continue };
        let Ok(text) = service.code_text(&target) else { continue };
        out.push(FileEdit::untouched(target, text.to_string()));
    }
    Ok(out)
}

/// The name other files import the code file at store path `path` by (see [`dependents`]).
fn module_name(path: &str) -> Option<String> {
    let p = std::path::Path::new(path);
    let stem = p.file_stem()?.to_str()?;
    let name = match stem {
        "__init__" | "index" | "mod" => p.parent()?.file_name()?.to_str()?,
        stem => stem,
    };
    (!name.is_empty()).then(|| name.to_owned())
}

/// Whether a line of `text` with an import word names one of `modules` as a word.
fn imports_any(text: &str, modules: &[String]) -> bool {
    const IMPORT_WORDS: [&str; 6] = ["import", "from", "require", "include", "use", "mod"];
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let has_word = |line: &str, w: &str| {
        line.match_indices(w).any(|(i, _)| {
            !line[..i].chars().next_back().is_some_and(word)
                && !line[i + w.len()..].chars().next().is_some_and(word)
        })
    };
    text.lines().any(|line| {
        IMPORT_WORDS.iter().any(|w| has_word(line, w)) && modules.iter().any(|m| has_word(line, m))
    })
}

/// The most code-action handles one session holds; the oldest go past it.
const MAX_ACTIONS_PER_SESSION: usize = 1000;

/// A code action a `code_actions` listing offered, behind its handle.
pub(super) struct ActionHandle {
    session: u64,
    expires: Instant,
    /// The store path of the file it was listed for, and that file's version then (the text
    /// its server was given).
    path: String,
    version: Version,
    /// The server's `CodeAction` (or bare `Command`) as it sent it.
    action: Value,
}

/// Every live code-action handle, by handle.
#[derive(Default)]
pub(super) struct Actions {
    by_id: HashMap<String, ActionHandle>,
}

impl Actions {
    fn insert(&mut self, id: String, handle: ActionHandle) {
        let now = Instant::now();
        self.by_id.retain(|_, h| h.expires > now);
        let mut mine: Vec<(Instant, String)> = self
            .by_id
            .iter()
            .filter(|(_, h)| h.session == handle.session)
            .map(|(id, h)| (h.expires, id.clone()))
            .collect();
        if mine.len() >= MAX_ACTIONS_PER_SESSION {
            mine.sort();
            for (_, old) in &mine[..=mine.len() - MAX_ACTIONS_PER_SESSION] {
                self.by_id.remove(old);
            }
        }
        self.by_id.insert(id, handle);
    }

    /// Spend handle `id` of `session`. Another session's handle is left alone and reported as
    /// not found, like a forged one, so handles cannot be probed or spent across sessions.
    fn take(&mut self, id: &str, session: u64) -> Result<ActionHandle, CommandError> {
        match self.by_id.get(id) {
            Some(h) if h.session == session => {
                let handle = self.by_id.remove(id).expect("just found");
                if Instant::now() >= handle.expires {
                    return Err(CommandError::ActionExpired(id.to_owned()));
                }
                Ok(handle)
            }
            _ => Err(CommandError::ActionNotFound(id.to_owned())),
        }
    }

    pub(super) fn drop_session(&mut self, session: u64) {
        self.by_id.retain(|_, h| h.session != session);
    }
}

/// Mint the handle of `action`, listed by `call`'s session for `target` whose server was
/// given `text`; the handle and when it expires.
pub(super) fn mint(
    call: &Call<'_>,
    target: &CodeTarget,
    text: &str,
    action: &Value,
) -> (String, SystemTime) {
    let service = call.service;
    let id = preview::new_id();
    let handle = ActionHandle {
        session: call.session.id,
        expires: Instant::now() + service.preview_lifetime,
        path: target.path.clone(),
        version: Version::of(text.as_bytes()),
        action: action.clone(),
    };
    lock(&service.actions).insert(id.clone(), handle);
    (id, SystemTime::now() + service.preview_lifetime)
}

/// `code_actions` for a code file: its server's actions at the place, each with a handle for
/// `code_action_preview`.
pub(super) fn code_actions(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let mut texts = Texts::new(call.service);
    let (at, text) = text_position(call.service, target, &call.args, &mut texts)?;
    let host = call.service.host(target.server())?;
    let context_diagnostics: Vec<Value> = host
        .published(target.server(), &target.file)
        .map(|(_, ds)| {
            ds.into_iter()
                .filter(|d| {
                    let line = at["position"]["line"].as_u64();
                    d["range"]["start"]["line"].as_u64() <= line
                        && d["range"]["end"]["line"].as_u64() >= line
                })
                .collect()
        })
        .unwrap_or_default();
    let params = json!({
        "textDocument": at["textDocument"],
        "range": {"start": at["position"], "end": at["position"]},
        "context": {"diagnostics": context_diagnostics},
    });
    let answer =
        call.service.code_request_with(target, &text, "textDocument/codeAction", params)?;
    // Every action gets a handle for `code_action_preview`, bound to this session and to the
    // text the server computed it on.
    let items = as_list(&answer.result)
        .iter()
        .map(|a| {
            let (handle, expires) = mint(call, target, &text, a);
            // A bare `Command` has a string `command`; a `CodeAction` may carry one beside
            // (or instead of) its edit.
            let command = a["command"].as_str().or_else(|| a["command"]["command"].as_str());
            json!({
                "title": a["title"],
                "kind": a.get("kind").cloned().unwrap_or(Value::Null),
                "preferred": a.get("isPreferred").and_then(Value::as_bool).unwrap_or(false),
                "edit": a.get("edit").is_some_and(|e| !e.is_null()),
                "command": command,
                "handle": handle,
                "expiresAt": crate::store::rfc3339(expires),
                "server": target.server(),
            })
        })
        .collect();
    Ok(tagged(page::page("actions", items, &call.args)?, target, &answer))
}

/// `code_action_preview {handle}`: the code action a listing offered, as a preview. An action
/// with neither an edit nor a command is resolved (`codeAction/resolve`) when its server can;
/// an action that only
/// runs a command on the server is `unsupported` (Stardust never runs a server's command: its
/// edits would arrive as `workspace/applyEdit`, which is never honoured). A command an action
/// carries beside its edit is not run either: the preview is its edit.
pub(super) fn code_action_preview(call: &Call<'_>) -> CommandResult {
    let service = call.service;
    let id = call.text("handle");
    let handle = lock(&service.actions).take(&id, call.session.id)?;
    let target = service.code_target(&handle.path)?;
    // A preview is made only on a ready server (SPEC §25).
    service.code_sync(&target)?;
    service.await_ready(target.server(), target.spec.timeouts.request)?;
    let text = service.code_text(&target)?;
    if Version::of(text.as_bytes()) != handle.version {
        return Err(CommandError::ActionStale { path: handle.path });
    }
    let title = handle.action["title"].as_str().unwrap_or_default().to_owned();
    let mut action = handle.action;
    if let Some(command) = action["command"].as_str() {
        return Err(only_a_command(&target, &title, command).into());
    }
    let has_edit = |a: &Value| a.get("edit").is_some_and(|e| !e.is_null());
    let has_command = |a: &Value| a.get("command").is_some_and(|c| !c.is_null());
    // An action with neither is computed lazily: its server fills the edit in on resolve. One
    // with a command and no edit is that command (LSP runs it instead of an edit).
    if !has_edit(&action) && !has_command(&action) {
        let capabilities = service.code_capabilities(target.server());
        let resolves = capabilities["codeActionProvider"]["resolveProvider"] == true;
        if resolves {
            let answer =
                service.code_request_with(&target, &text, "codeAction/resolve", action.clone())?;
            if answer.result.is_object() {
                action = answer.result;
            }
        }
    }
    if !has_edit(&action) {
        let command = action["command"]["command"].as_str().unwrap_or_default().to_owned();
        if !command.is_empty() {
            return Err(only_a_command(&target, &title, &command).into());
        }
        return Err(Error::Unsupported(format!(
            "{}'s action \"{title}\" has no edit to preview",
            target.server()
        ))
        .into());
    }
    preview_edit(call, "code_action_preview", target.server(), &action["edit"], Coverage::default())
}

fn only_a_command(target: &CodeTarget, title: &str, command: &str) -> Error {
    Error::Unsupported(format!(
        "{}'s action \"{title}\" only runs the server command {command}, which Stardust does not \
         run (its edits would bypass the preview); choose an action that carries an edit",
        target.server()
    ))
}

/// The files a `WorkspaceEdit` changes, each with its text on disk and the edited text.
pub(super) fn workspace_edit(
    service: &Service,
    edit: &Value,
    encoding: Encoding,
) -> Result<Vec<FileEdit>, CommandError> {
    let mut by_uri: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    if let Some(changes) = edit.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            if let Some(kind) = change.get("kind").and_then(Value::as_str) {
                return Err(Error::Unsupported(format!(
                    "the server's edit would {kind} a file; Stardust previews only edits inside \
                     files that exist"
                ))
                .into());
            }
            let uri = change["textDocument"]["uri"].as_str().unwrap_or_default().to_owned();
            by_uri.entry(uri).or_default().extend(as_list(&change["edits"]));
        }
    } else if let Some(changes) = edit.get("changes").and_then(Value::as_object) {
        for (uri, edits) in changes {
            by_uri.entry(uri.clone()).or_default().extend(as_list(edits));
        }
    }
    by_uri.retain(|_, edits| !edits.is_empty());
    if by_uri.is_empty() {
        return Err(Error::Unsupported(
            "the server's edit changes nothing; check the new name, the place or the action".into(),
        )
        .into());
    }
    if by_uri.len() > MAX_EDITED_FILES {
        return Err(Error::Unsupported(format!(
            "the edit touches {} files; a code edit may touch at most {MAX_EDITED_FILES}",
            by_uri.len()
        ))
        .into());
    }
    let roots = service.roots();
    let snapshot = service.store.snapshot();
    let config = snapshot.analysis.config();
    let mut files = Vec::with_capacity(by_uri.len());
    for (uri, edits) in by_uri {
        let resolved = roots.uri_to_store_path(&uri)?;
        let path = resolved.path.clone();
        if crate::scan::is_document_path(config, &path) {
            return Err(Error::Unsupported(format!(
                "the server's edit touches the document {path}; rename entities with \
                 stardust.entity.rename"
            ))
            .into());
        }
        let target = service.code_target_of(resolved)?;
        let before = super::code::read_text(&target.file, &path)?;
        if service.code_buffer(&path).is_some_and(|held| *held != *before) {
            return Err(Error::Conflict(format!(
                "{path} has unsaved changes in an editor; save or close it there, then ask again"
            ))
            .into());
        }
        let (after, spans) = apply(&before, &edits, encoding, &path)?;
        files.push(FileEdit { target, before, after, spans });
    }
    Ok(files)
}

/// `text` with LSP `TextEdit`s (ranges in `encoding`) applied, and the edit's byte spans (see
/// [`FileEdit::spans`]); overlapping edits are refused.
fn apply(
    text: &str,
    edits: &[Value],
    encoding: Encoding,
    path: &str,
) -> Result<(String, Vec<Span>), Error> {
    let index = LineIndex::new(text);
    let offset = |at: &Value| -> Option<usize> {
        let position = Position {
            line: u32::try_from(at["line"].as_u64()?).ok()?,
            column: u32::try_from(at["character"].as_u64()?).ok()?,
        };
        index.offset(text, position, encoding).map(|o| o as usize)
    };
    let mut spans = Vec::with_capacity(edits.len());
    for edit in edits {
        let (Some(start), Some(end), Some(new)) = (
            offset(&edit["range"]["start"]),
            offset(&edit["range"]["end"]),
            edit["newText"].as_str(),
        ) else {
            return Err(Error::Unsupported(format!(
                "the server sent an edit of {path} outside its text; ask again once the server \
                 has caught up"
            )));
        };
        if start > end {
            return Err(Error::Unsupported(format!("the server sent a reversed range in {path}")));
        }
        spans.push((start, end, new));
    }
    // Stable: edits at one place apply in the order sent (LSP's rule for inserts).
    spans.sort_by_key(|(start, end, _)| (*start, *end));
    if let Some(pair) = spans.windows(2).find(|w| w[0].1 > w[1].0) {
        return Err(Error::Unsupported(format!(
            "the server's edits of {path} overlap (bytes {}..{} and {}..{}); Stardust applies \
             only edits that do not",
            pair[0].0, pair[0].1, pair[1].0, pair[1].1
        )));
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in &spans {
        out.push_str(&text[at..*start]);
        out.push_str(new);
        at = *end;
    }
    out.push_str(&text[at..]);
    Ok((out, spans.into_iter().map(|(start, end, new)| (start, end, new.len())).collect()))
}

/// The diagnostics the servers give for the edited texts against those for the texts now,
/// over the touched `files` and their `dependents` (files the edit leaves as they are, whose
/// diagnostics it may change): every text is given to its server, each file's diagnostics
/// collected, and the texts given back (a dependent the server did not have open is closed
/// again). A diagnostic is the same before and after when its severity, code and range (the
/// range before moved by the edit) agree, whatever its message (servers word one finding
/// differently from one check to the next); new ones are shown in the edited text, resolved
/// ones in the text now.
pub(super) fn speculate(service: &Service, files: &[FileEdit], dependents: &[FileEdit]) -> Delta {
    let all: Vec<&FileEdit> = files.iter().chain(dependents).collect();
    let _alone = service.speculating();
    let was_open: Vec<bool> = all
        .iter()
        .map(|f| {
            let server = f.target.server();
            service.host(server).is_ok_and(|h| h.version(server, &f.target.file).is_some())
        })
        .collect();
    let before = match collect(service, &all, |f| &f.before) {
        Ok(found) => found,
        Err(err) => return Delta::Unknown(format!("before the edit: {err}")),
    };
    tracing::debug!(files = all.len(), "delta: diagnostics before the edit collected");
    let after = collect(service, &all, |f| &f.after);
    tracing::debug!(files = all.len(), "delta: diagnostics with the edit collected");
    // Back to the texts every session sees, whatever happened; a server that crashed is
    // given them again when it restarts.
    for (file, was_open) in all.iter().zip(&was_open) {
        let (server, path) = (file.target.server(), &file.target.path);
        if !was_open && file.spans.is_empty() && service.code_buffer(path).is_none() {
            if let Ok(host) = service.host(server) {
                host.close(server, &file.target.file);
            }
            continue;
        }
        let now =
            service.code_text(&file.target).map_or_else(|_| file.before.clone(), |t| t.to_string());
        if let Err(err) = service.code_give(&file.target, &now) {
            tracing::warn!("cannot give {path} its text back after a preview: {err}");
        }
    }
    let after = match after {
        Ok(found) => found,
        Err(err) => return Delta::Unknown(format!("with the edit: {err}")),
    };
    let mut new = Vec::new();
    let mut resolved = Vec::new();
    for ((file, old), now) in all.iter().zip(&before).zip(&after) {
        let encoding = service.code_encoding(file.target.server());
        let (added, removed) = unmatched(file, old, now, encoding);
        let show = |text: &str, list: Vec<&Value>| -> Vec<Value> {
            let text: (Arc<str>, LineIndex) = (Arc::from(text), LineIndex::new(text));
            list.into_iter().map(|d| shown(&file.target, &text, d, encoding)).collect()
        };
        new.extend(show(&file.after, added));
        resolved.extend(show(&file.before, removed));
    }
    Delta::Known { new, resolved }
}

/// How long a server that publishes diagnostics, and has not reported work-done progress on
/// its connection, must stay quiet once it has published for every edited file before what it
/// published counts as its answer: pyright, for one, first publishes the diagnostics it had
/// under the new version and its checker's findings later, 60 to 130 ms apart
/// (docs/DECISIONS.md, "Speculative deltas wait for the server's state"); nothing tells such a
/// server's last stage from its first but the quiet after it.
const SETTLE: Duration = Duration::from_millis(400);

/// How long a server that reports its work (work-done progress) must stay quiet, and not at
/// work, once it has published for every edited file and not reported work done since: the
/// time it may take to announce the work that follows a publication. pyright announces its
/// checker's next stage (`window/workDoneProgress/create`) in the same turn as the
/// publications before it (measured under 1 ms apart); the rest is a margin for a loaded
/// machine. Once it reports that work done, its answer is complete without any wait.
const QUIET: Duration = Duration::from_millis(100);

/// How long a server that publishes without versions may keep its publication unchanged after
/// it was given a new text before that publication counts as its answer for the new text.
const UNVERSIONED_SETTLE: Duration = Duration::from_secs(2);

/// How often a wait for published diagnostics looks again.
const POLL: Duration = Duration::from_millis(5);

/// One server's side of a wait in [`collect`]: what it said about its work (read before its
/// publications), and the latest of those publications on its clock.
struct Waited {
    activity: Option<Activity>,
    latest: u64,
    /// Whether one of its files' publications carries no version.
    unversioned: bool,
}

impl Waited {
    /// Whether what the server has published for every file it was waited for is its answer:
    /// it is not at work, and it reported its work done after the last of those publications
    /// or has been quiet since long enough to have announced more work (see [`QUIET`],
    /// [`SETTLE`]). `quiet_since` is when the publications last changed, for a host that
    /// says nothing about its servers' work.
    fn settled(&self, quiet_since: Instant) -> bool {
        let quiet = |a: &Activity| a.last_heard.map_or(Duration::MAX, |at| at.elapsed());
        match &self.activity {
            None => quiet_since.elapsed() >= SETTLE,
            Some(a) if a.busy => false,
            Some(a) if self.unversioned => quiet(a) >= SETTLE,
            Some(a) if a.reports && a.done_at > self.latest => true,
            Some(a) if a.reports => quiet(a) >= QUIET,
            Some(a) => quiet(a) >= SETTLE,
        }
    }
}

/// Every file's diagnostics with the text `text_of` picks given to its server: pulled where
/// the server offers it, else what it publishes for that text once it has published for
/// every file and settled (not at work, and its work reported done or quiet: see
/// [`Waited::settled`]), bounded by the diagnostics tool's wait. A file whose server already
/// published for the text it has, and is idle, is answered at once.
fn collect(
    service: &Service,
    files: &[&FileEdit],
    text_of: impl Fn(&FileEdit) -> &String,
) -> Result<Vec<Vec<Value>>, CommandError> {
    // What each server had published before it was given the text, and whether the text was
    // new to it: a server that publishes without versions (typescript-language-server) has
    // answered for a new text only once its publication differs from the one before, or it
    // has stayed the same for [`UNVERSIONED_SETTLE`].
    let mut prior: Vec<Option<Vec<Value>>> = Vec::with_capacity(files.len());
    let mut changed = Vec::with_capacity(files.len());
    for file in files {
        let target = &file.target;
        let host = service.host(target.server())?;
        prior.push(host.published(target.server(), &target.file).map(|(_, items)| items));
        let sent = host.version(target.server(), &target.file);
        service.code_give(target, text_of(file))?;
        changed.push(host.version(target.server(), &target.file) != sent);
    }
    let given = Instant::now();
    let mut found: Vec<Option<Vec<Value>>> = vec![None; files.len()];
    let mut waiting = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let target = &file.target;
        let capabilities = service.code_capabilities(target.server());
        if capabilities.get("diagnosticProvider").is_some_and(|p| !p.is_null()) {
            found[i] =
                Some(as_list(&service.code_diagnostics_unlocked(target, text_of(file))?.result));
        } else {
            waiting.push(i);
        }
    }
    let deadline = Instant::now() + super::code::PUBLISH_WAIT;
    let mut seen: Vec<Option<Vec<Value>>> = vec![None; files.len()];
    let mut quiet_since = Instant::now();
    while !waiting.is_empty() {
        // Each server's activity is read before its publications, so that work reported done
        // after the latest publication read below is done after all of them.
        let mut servers: BTreeMap<&str, Waited> = BTreeMap::new();
        for &i in &waiting {
            let name = files[i].target.server();
            if servers.contains_key(name) {
                continue;
            }
            let activity = service.host(name)?.activity(name);
            if let Some(reason) = activity.as_ref().and_then(|a| a.stopped.as_deref()) {
                return Err(CommandError::Server(CodeError {
                    code: Code::ServerUnavailable,
                    message: format!("{name} stopped while checking the texts: {reason}"),
                    server: name.to_owned(),
                }));
            }
            servers.insert(name, Waited { activity, latest: 0, unversioned: false });
        }
        let mut all_published = true;
        for &i in &waiting {
            let target = &files[i].target;
            let host = service.host(target.server())?;
            let sent = host.version(target.server(), &target.file);
            let server = servers.get_mut(target.server()).expect("every waited server is listed");
            let now = match host.publication(target.server(), &target.file) {
                Some(Publication { version: Some(v), diagnostics, at }) if Some(v) >= sent => {
                    server.latest = server.latest.max(at);
                    Some(diagnostics)
                }
                Some(Publication { version: None, diagnostics, at })
                    if !changed[i]
                        || prior[i].as_ref() != Some(&diagnostics)
                        || given.elapsed() >= UNVERSIONED_SETTLE =>
                {
                    server.latest = server.latest.max(at);
                    server.unversioned = true;
                    Some(diagnostics)
                }
                _ => None,
            };
            all_published &= now.is_some();
            if now != seen[i] {
                seen[i] = now;
                quiet_since = Instant::now();
            }
        }
        if all_published && servers.values().all(|s| s.settled(quiet_since)) {
            break;
        }
        if Instant::now() >= deadline {
            let missing: Vec<&str> = waiting
                .iter()
                .filter(|&&i| seen[i].is_none())
                .map(|&i| files[i].target.path.as_str())
                .collect();
            let wait = super::code::PUBLISH_WAIT.as_secs();
            if !missing.is_empty() {
                return Err(Error::Unsupported(format!(
                    "the language server published no diagnostics for {} within {wait} s",
                    missing.join(", "),
                ))
                .into());
            }
            // What a server still at work has published may be a stage of its answer, not
            // the answer: unknown, never a delta made up from it.
            if let Some(name) = servers
                .iter()
                .find(|(_, s)| s.activity.as_ref().is_some_and(|a| a.busy))
                .map(|(name, _)| *name)
            {
                return Err(Error::Unsupported(format!(
                    "{name} was still checking the texts after {wait} s"
                ))
                .into());
            }
            break;
        }
        std::thread::sleep(POLL);
    }
    for i in waiting {
        found[i] = seen[i].take();
    }
    Ok(found.into_iter().map(Option::unwrap_or_default).collect())
}

/// What matches a diagnostic across an edit: its severity, its code and its range as byte
/// offsets of the text after the edit.
type Identity = (&'static str, String, usize, usize);

/// The byte offset of the LSP position `at` (in `encoding`) in `text`; a position past its
/// line's end (servers send them) is the line's end.
fn byte_offset(text: &str, index: &LineIndex, at: &Value, encoding: Encoding) -> usize {
    let position = Position {
        line: u32::try_from(at["line"].as_u64().unwrap_or(0)).unwrap_or(u32::MAX),
        column: u32::try_from(at["character"].as_u64().unwrap_or(0)).unwrap_or(u32::MAX),
    };
    let offset = index.offset(text, position, encoding).unwrap_or_else(|| {
        index.line_span(text, position.line).map_or(crate::text::to_u32(text.len()), |s| s.end)
    });
    offset as usize
}

/// Where the byte `offset` of the text before an edit of `spans` is in the text after it. An
/// offset inside an edited span goes to the start of what replaced it, or to its end for the
/// end of a range (`end`), so a diagnostic of the renamed word covers the new word.
fn shifted(spans: &[Span], offset: usize, end: bool) -> usize {
    let mut delta: isize = 0;
    let moved = |o: usize, delta: isize| o.saturating_add_signed(delta);
    for &(start, stop, len) in spans {
        if offset < start || (offset == start && (!end || stop > start)) {
            return moved(offset, delta);
        }
        if offset < stop {
            return moved(start, delta) + if end { len } else { 0 };
        }
        delta += len as isize - (stop - start) as isize;
    }
    moved(offset, delta)
}

/// The identities of `file`'s diagnostics: those of `before` (its text before the edit) moved
/// by the edit, or those of `after`.
fn identities(
    file: &FileEdit,
    diagnostics: &[Value],
    before: bool,
    encoding: Encoding,
) -> Vec<Identity> {
    let text = if before { &file.before } else { &file.after };
    let index = LineIndex::new(text);
    diagnostics
        .iter()
        .map(|d| {
            let mut start = byte_offset(text, &index, &d["range"]["start"], encoding);
            let mut end = byte_offset(text, &index, &d["range"]["end"], encoding);
            if before {
                start = shifted(&file.spans, start, false);
                end = shifted(&file.spans, end, true);
            }
            (severity(&d["severity"]), d["code"].to_string(), start, end)
        })
        .collect()
}

/// The diagnostics of `after` not in `before` and those of `before` not in `after`, each
/// counted: two equal diagnostics before and three after are one new.
fn unmatched<'a>(
    file: &FileEdit,
    before: &'a [Value],
    after: &'a [Value],
    encoding: Encoding,
) -> (Vec<&'a Value>, Vec<&'a Value>) {
    let old = identities(file, before, true, encoding);
    let now = identities(file, after, false, encoding);
    (minus(after, &now, &old), minus(before, &old, &now))
}

/// The diagnostics of `from` (with their identities `ids`) left when each identity of `take`
/// cancels one equal to it.
fn minus<'a>(from: &'a [Value], ids: &[Identity], take: &[Identity]) -> Vec<&'a Value> {
    let mut left: HashMap<&Identity, usize> = HashMap::new();
    for id in take {
        *left.entry(id).or_default() += 1;
    }
    from.iter()
        .zip(ids)
        .filter(|(_, id)| match left.get_mut(id) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .map(|(d, _)| d)
        .collect()
}

/// A server's diagnostic as the `diagnostics` tool shows it.
fn shown(
    target: &CodeTarget,
    text: &(Arc<str>, LineIndex),
    d: &Value,
    encoding: Encoding,
) -> Value {
    let start = mcp_position(Some(text), &d["range"]["start"], encoding);
    let end = mcp_position(Some(text), &d["range"]["end"], encoding);
    let mut item = json!({
        "path": target.path,
        "range": {"line": start.0, "column": start.1, "endLine": end.0, "endColumn": end.1},
        "severity": severity(&d["severity"]),
        "message": d["message"],
        "server": target.server(),
    });
    if let Some(code) = d.get("code").filter(|c| !c.is_null()) {
        item["code"] = code.clone();
    }
    item
}

/// The save authority's rule for code (`code-error`): each new error refuses the change, and
/// so do diagnostics that could not be had (`unknown`), since nobody can say it adds none.
fn code_errors(new: &[Value], unknown: Option<&str>) -> Vec<String> {
    let mut reasons: Vec<String> = new
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            format!(
                "{}:{}:{}: error[code-error] {} ({})",
                d["path"].as_str().unwrap_or_default(),
                d["range"]["line"],
                d["range"]["column"],
                d["message"].as_str().unwrap_or_default(),
                d["server"].as_str().unwrap_or_default()
            )
        })
        .collect();
    if let Some(reason) = unknown {
        reasons.push(format!(
            "the language server's diagnostics for the change are unknown ({reason}), and \
             [save] refuse lists code-error"
        ));
    }
    reasons
}

/// The service's side of [`CodeSaves`]: which files a language server covers, and the
/// speculative check of a save through the mount. Weak, since the store it is installed in
/// belongs to the service.
struct MountCodeSaves(Weak<Service>);

impl CodeSaves for MountCodeSaves {
    fn is_code(&self, rel: &str) -> bool {
        let Some(service) = self.0.upgrade() else { return false };
        let Ok(servers) = service.code_servers() else { return false };
        let snapshot = service.store.snapshot();
        matches!(
            codefiles::route(snapshot.analysis.config(), &servers, rel),
            Ok(Owner::Server { .. })
        )
    }

    fn refusals(&self, rel: &str, before: Option<&[u8]>, after: &[u8]) -> Vec<String> {
        let Some(service) = self.0.upgrade() else {
            return code_errors(&[], Some("the core is shutting down"));
        };
        let target = match service.code_target(rel) {
            Ok(target) => target,
            Err(err) => return code_errors(&[], Some(&err.to_string())),
        };
        let texts = (std::str::from_utf8(before.unwrap_or_default()), std::str::from_utf8(after));
        let (Ok(before), Ok(after)) = texts else {
            return code_errors(&[], Some(&format!("{rel} is not UTF-8 text")));
        };
        let files = [FileEdit::whole(target, before.to_owned(), after.to_owned())];
        let dependents = match dependents(&service, &files, &[]) {
            Ok(dependents) => dependents,
            Err(reason) => return code_errors(&[], Some(&reason)),
        };
        match speculate(&service, &files, &dependents) {
            Delta::Known { new, .. } => code_errors(&new, None),
            Delta::Unknown(reason) => code_errors(&[], Some(&reason)),
        }
    }
}

impl Service {
    /// Let the store's saves made as file operations (the mount) treat the files a language
    /// server covers as code files: each save one transaction, refused under `code-error`
    /// when its server reports new errors for it (SPEC §18).
    pub fn install_code_saves(self: &Arc<Self>) {
        self.store.set_code_saves(Arc::new(MountCodeSaves(Arc::downgrade(self))));
    }
}

/// Hold the preview of `files` for the call's session and answer it.
fn insert(
    call: &Call<'_>,
    command: &str,
    files: Vec<FileEdit>,
    delta: Delta,
    coverage: &Coverage,
) -> Value {
    let service = call.service;
    let refuse = call.snapshot.analysis.config().refuse_code_errors;
    let lifetime = service.preview_lifetime;
    let (new, resolved, unknown) = match delta {
        Delta::Known { new, resolved } => (new, resolved, None),
        Delta::Unknown(reason) => (Vec::new(), Vec::new(), Some(reason)),
    };
    let mut reasons = if refuse { code_errors(&new, unknown.as_deref()) } else { Vec::new() };
    // SPEC §25: an edit that leaves out a place the server's references report is refused.
    if !coverage.missing.is_empty() {
        let places: Vec<String> = coverage
            .missing
            .iter()
            .map(|l| {
                format!(
                    "{}:{}:{}",
                    l["path"].as_str().unwrap_or(""),
                    l["range"]["line"],
                    l["range"]["column"]
                )
            })
            .collect();
        reasons.push(format!(
            "incomplete: the edit leaves out {} place{} that the server's references report \
             for the same symbol ({}); ask again once server_status shows the server ready",
            places.len(),
            if places.len() == 1 { "" } else { "s" },
            places.join(", ")
        ));
    } else if coverage.indexing {
        reasons.push(
            "incomplete: the server was not ready when it answered, so the edit may leave out \
             places it has not analysed; ask again once server_status shows it ready"
                .to_owned(),
        );
    }
    let mut documents = Vec::with_capacity(files.len());
    let mut planned = Vec::with_capacity(files.len());
    for file in files {
        let before = Version::of(file.before.as_bytes());
        let after = Version::of(file.after.as_bytes());
        documents.push(json!({
            "path": file.target.path,
            "change": "changed",
            "before": before.to_string(),
            "after": after.to_string(),
            "diff": preview::unified_diff(&file.target.path, Some(&file.before), Some(&file.after)),
            "server": file.target.server(),
        }));
        planned.push((file.target.path, Some(before), Some(file.after)));
    }
    let snapshot = &call.snapshot;
    let id = preview::new_id();
    let mut json = json!({
        "previewId": id,
        "expiresAt": rfc3339(SystemTime::now() + lifetime),
        "seq": snapshot.seq,
        "command": command,
        "documents": documents,
        "entities": {"created": [], "changed": [], "deleted": []},
        "resolved": {},
        "diagnostics": {"new": new, "resolved": resolved},
        "committable": reasons.is_empty(),
        "reasons": reasons,
    });
    if !coverage.missing.is_empty() {
        json["incomplete"] = json!(coverage.missing);
    }
    if let Some(reason) = unknown {
        json["diagnosticsUnknown"] = json!(true);
        json["diagnosticsUnknownReason"] = json!(reason);
    }
    let held = Preview::of_files(
        id,
        command,
        Instant::now() + lifetime,
        planned,
        json.clone(),
        reasons,
        snapshot.seq,
        snapshot.analysis.clone(),
    );
    lock(&service.previews).insert(call.session.id, held);
    json
}

//! Code files through the core (SPEC §17): which server answers for a file and whether it may
//! start, the texts each server is given (an editor's unsaved buffer while one is open, else
//! the file on disk), requests in the server's encoding, and the navigation tools' answers for
//! code files in MCP's convention (1-based lines, columns in characters, every location
//! naming its `server`).
//!
//! The servers themselves are behind [`CodeHost`]; without one installed (a core started by a
//! test, a read-only checkout) every code request answers `server-unavailable`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{Call, CommandError, CommandResult, Service, Session, page};
use crate::codefiles::{
    self, CodeAnswer, CodeError, CodeEvent, CodeHost, LaunchError, LaunchSpec, Owner, Readiness,
    Servers, Trusted,
};
use crate::error::{Code, Error};
use crate::ide::{Buffer, Root, Roots};
pub use crate::ide::{Edit, Edited};
use crate::sync::lock;
use crate::text::{Encoding, LineIndex, Position};

/// How long `diagnostics` waits for a server to publish diagnostics for the text it was just
/// given, when it publishes them (push) and has not yet.
pub(super) const PUBLISH_WAIT: Duration = Duration::from_secs(10);

/// The code-file state of one core: the host, and the code files editors hold open.
#[derive(Default)]
pub(super) struct CodeFiles {
    host: Option<Arc<dyn CodeHost>>,
    /// The user's configuration folder, when not the environment's (`with_code_config_dir`).
    config_dir: Option<Option<PathBuf>>,
    /// The servers last parsed, with the bytes (and modes) of the files they came from.
    servers_cache: Mutex<Option<((FileKey, FileKey), Servers)>>,
    /// The trust last parsed, with the bytes (and mode) of `trusted.toml`.
    trusted_cache: Mutex<Option<(FileKey, Trusted)>>,
    /// Launch specs allowed to start, by what decided them: the table's hash, the hash trust
    /// recorded for it, and PATH (a program found once is not searched for on every request;
    /// one removed since fails its start as `server-unavailable`).
    launch_cache: Mutex<HashMap<LaunchKey, LaunchSpec>>,
    /// Editors' open code files by store path: the latest text and the sessions holding it.
    buffers: Mutex<BTreeMap<String, EditorBuffer>>,
    /// Held for reading by every request that gives a server a text and asks it something,
    /// and for writing by a speculative check (`code_edit::speculate`), so that no session's
    /// request sees the edited texts a preview gives the servers, nor puts the real ones back
    /// in the middle of the check.
    speculation: RwLock<()>,
    /// Texts of code files as last read from disk, with the `stat` they were read at.
    disk_texts: Mutex<HashMap<PathBuf, (DiskStamp, Arc<str>)>>,
    /// The servers a warm-up is starting now (SPEC §25): one warm-up per server however many
    /// sessions attach at once.
    warming: Arc<Mutex<HashSet<String>>>,
}

/// What a code file on disk is, from one `stat`: device, inode, size, and modification and
/// change times to the nanosecond.
type DiskStamp = (u64, u64, u64, [i64; 4]);

/// A file changed this recently is read again on every request, whatever its `stat` says:
/// file times are coarse (a kernel tick), so two writes of the same size within one tick
/// leave the same stamp (git's "racily clean" entries).
const RACY: Duration = Duration::from_secs(2);

/// The most texts [`CodeFiles::disk_texts`] keeps; past it, it starts again empty.
const MAX_DISK_TEXTS: usize = 512;

struct EditorBuffer {
    text: Arc<str>,
    sessions: Vec<u64>,
}

/// A code file of the store and the server that answers for it.
#[derive(Clone, Debug)]
pub struct CodeTarget {
    /// The store path (`/`-separated, relative to the store root).
    pub path: String,
    /// The root the client named it under (the store or a mount of it).
    pub root: Root,
    /// The file's absolute path in the store: what the server is told.
    pub file: PathBuf,
    pub language_id: String,
    pub spec: LaunchSpec,
}

/// How often a wait for a server's readiness looks again.
const READY_POLL: Duration = Duration::from_millis(10);

/// The answers of [`Service::code_workspace_symbols`].
#[derive(Debug, Default)]
pub struct CodeSymbols {
    /// Each server that answered: its name, its position encoding, its symbols as it sent them.
    pub found: Vec<(String, Encoding, Vec<Value>)>,
    /// The servers that could not answer (or may not start), with why.
    pub skipped: Vec<(String, CommandError)>,
    /// Whether one of them reported work in progress.
    pub indexing: bool,
    /// Whether every server answered ready (none skipped for its readiness).
    pub complete: bool,
}

impl CodeTarget {
    pub fn server(&self) -> &str {
        &self.spec.name
    }
}

impl From<CodeError> for CommandError {
    fn from(err: CodeError) -> CommandError {
        CommandError::Server(err)
    }
}

impl From<LaunchError> for CommandError {
    fn from(err: LaunchError) -> CommandError {
        CommandError::Launch(err)
    }
}

impl Service {
    /// Install the language servers' host (the binary's, from `stardust-servers`).
    pub fn with_code_host(mut self, host: Arc<dyn CodeHost>) -> Service {
        self.code.host = Some(host);
        self
    }

    pub(super) fn host(&self, server: &str) -> Result<&Arc<dyn CodeHost>, CommandError> {
        self.code.host.as_ref().ok_or_else(|| {
            CommandError::Server(CodeError {
                code: Code::ServerUnavailable,
                message: format!(
                    "language server '{server}' cannot start: this core runs no language \
                     servers; use `stardust serve`, `stardust lsp` or `stardust mcp`"
                ),
                server: server.to_owned(),
            })
        })
    }

    /// The store's servers, the user's first (SPEC §17), as the configuration files are now:
    /// `stardust.toml` is read again (the store's snapshot keeps the configuration it opened
    /// with), so a table edited while the core runs is the one checked against the recorded
    /// trust — a changed table needs trusting again — and the one started once trusted.
    ///
    /// Parsing is reused while the files are unchanged (size, mode, which decides whether the
    /// user file may be used, inode and times: `file_key`): every code request asks, and
    /// parsing and validating the tables costs more than the request itself.
    pub fn code_servers(&self) -> Result<Servers, CommandError> {
        let dir = self.code_config_dir();
        let store_file = self.store.root().join(crate::config::CONFIG_FILE);
        let key = (
            file_key(&store_file),
            dir.as_deref().and_then(|d| file_key(&codefiles::user_servers_path(d))),
        );
        if let Some((cached, servers)) = &*lock(&self.code.servers_cache)
            && *cached == key
        {
            return Ok(servers.clone());
        }
        let config = crate::config::Config::load(self.store.root())?;
        let servers = Servers::load(&config, dir.as_deref())?;
        *lock(&self.code.servers_cache) = Some((key, servers.clone()));
        Ok(servers)
    }

    /// The recorded trust, parsed again only when `trusted.toml` changed (as `code_servers`).
    fn code_trusted(&self) -> Result<Trusted, CommandError> {
        let Some(dir) = self.code_config_dir() else { return Ok(Trusted::default()) };
        let file = dir.join(codefiles::TRUSTED_FILE);
        let key = file_key(&file);
        if let Some((cached, trusted)) = &*lock(&self.code.trusted_cache)
            && *cached == key
        {
            return Ok(trusted.clone());
        }
        let trusted = Trusted::load(&file)?;
        *lock(&self.code.trusted_cache) = Some((key, trusted.clone()));
        Ok(trusted)
    }

    /// The user's configuration folder (`servers.toml`, `trusted.toml`): the one given to
    /// [`Service::with_code_config_dir`], else `$XDG_CONFIG_HOME/stardust` (or
    /// `~/.config/stardust`).
    fn code_config_dir(&self) -> Option<PathBuf> {
        match &self.code.config_dir {
            Some(dir) => dir.clone(),
            None => codefiles::user_config_dir(|v| std::env::var_os(v)),
        }
    }

    /// Read the user's servers and trust from `dir` (`None`: no user configuration) instead of
    /// the environment's: for a core embedded in a process whose environment is not the
    /// user's, and for tests.
    pub fn with_code_config_dir(mut self, dir: Option<PathBuf>) -> Service {
        self.code.config_dir = Some(dir);
        self
    }

    /// Whether `resolved` (a path under the store or a mount of it) is a code file: a path of
    /// the store that is not a document.
    pub fn is_code(&self, resolved: &crate::ide::Resolved) -> bool {
        !crate::scan::is_document_path(self.store.snapshot().analysis.config(), &resolved.path)
    }

    /// The code file `given` names and the server that answers for it, if that server may
    /// start: `unsupported` when no server covers it, `untrusted` / `server-unavailable` when
    /// its server may not start, `outside-store` for a path (or a link) leading out.
    pub fn code_target(&self, given: &str) -> Result<CodeTarget, CommandError> {
        self.code_target_of(self.roots().to_store_path(given)?)
    }

    /// [`Service::code_target`] of a path already resolved (a front that resolved it to choose
    /// where a request goes need not resolve it again).
    pub fn code_target_of(
        &self,
        resolved: crate::ide::Resolved,
    ) -> Result<CodeTarget, CommandError> {
        let snapshot = self.store.snapshot();
        let config = snapshot.analysis.config();
        let servers = self.code_servers()?;
        let (server, language_id) = match codefiles::route(config, &servers, &resolved.path)? {
            Owner::Document => {
                return Err(Error::Unsupported(format!(
                    "{} is a document of the store, served by Stardust itself",
                    resolved.path
                ))
                .into());
            }
            Owner::Server { server, language_id } => (server, language_id),
        };
        let server = servers.get(server).expect("route names a server of the list");
        let spec = self.launch(server)?;
        let root = self.store.root();
        let spec = with_root(spec, &resolved.path, root);
        Ok(CodeTarget {
            file: root.join(&resolved.path),
            path: resolved.path,
            root: resolved.root,
            language_id,
            spec,
        })
    }

    /// The launch spec of `server`, if it may start now.
    fn launch(&self, server: &codefiles::Server) -> Result<LaunchSpec, CommandError> {
        let trusted = self.code_trusted()?;
        let path = std::env::var_os("PATH");
        let recorded = trusted.hash(self.store.root(), server.name()).map(str::to_owned);
        let name = format!("{}:{:?}", server.name(), server.origin);
        let key = (name, server.config.hash.clone(), recorded, path);
        if let Some(spec) = lock(&self.code.launch_cache).get(&key) {
            return Ok(spec.clone());
        }
        let spec = codefiles::may_start(
            server,
            self.store.root(),
            &trusted,
            key.3.as_deref(),
            &codefiles::probe,
        )?;
        let mut cache = lock(&self.code.launch_cache);
        // Old keys are only configurations no longer in use: keep the cache small.
        if cache.len() > 64 {
            cache.clear();
        }
        cache.insert(key, spec.clone());
        Ok(spec)
    }

    /// The text the server is given for `target`: an editor's buffer while one is open, else
    /// the file on disk.
    pub fn code_text(&self, target: &CodeTarget) -> Result<Arc<str>, CommandError> {
        if let Some(buffer) = lock(&self.code.buffers).get(&target.path) {
            return Ok(buffer.text.clone());
        }
        self.disk_text(&target.file, &target.path)
    }

    /// The text of the code file `file` (shown as `rel`) on disk: as [`read_text`] reads it,
    /// but taken from the last read while one `stat` finds the file unchanged. Every code
    /// request needs its file's text, and opening the file wakes the store's watcher.
    fn disk_text(&self, file: &Path, rel: &str) -> Result<Arc<str>, CommandError> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(file).ok();
        let stamp = meta.as_ref().filter(|m| m.is_file()).and_then(|m| {
            let changed = m.modified().ok()?.max(
                std::time::UNIX_EPOCH
                    + Duration::new(u64::try_from(m.ctime()).ok()?, m.ctime_nsec() as u32),
            );
            // Not a stamp to trust yet: the file may change again within the same tick.
            (changed.elapsed().ok()? >= RACY).then(|| {
                (m.dev(), m.ino(), m.len(), [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()])
            })
        });
        if let Some(stamp) = stamp
            && let Some((seen, text)) = lock(&self.code.disk_texts).get(file)
            && *seen == stamp
        {
            return Ok(text.clone());
        }
        let text: Arc<str> = read_text(file, rel)?.into();
        if let Some(stamp) = stamp {
            let mut texts = lock(&self.code.disk_texts);
            if texts.len() >= MAX_DISK_TEXTS {
                texts.clear();
            }
            texts.insert(file.to_owned(), (stamp, text.clone()));
        }
        Ok(text)
    }

    /// Send `method` for `target` to its server, after giving the server the file's current
    /// text (so an agent sees what an editor has unsaved).
    pub fn code_request(
        &self,
        target: &CodeTarget,
        method: &str,
        params: Value,
    ) -> Result<CodeAnswer, CommandError> {
        let text = self.code_text(target)?;
        self.code_request_with(target, &text, method, params)
    }

    /// [`Service::code_request`] with the file's current text already read.
    pub(super) fn code_request_with(
        &self,
        target: &CodeTarget,
        text: &str,
        method: &str,
        params: Value,
    ) -> Result<CodeAnswer, CommandError> {
        let host = self.host(target.server())?;
        let _shared = self.not_speculating();
        host.sync(&target.spec, &target.file, &target.language_id, text)?;
        let asked = Instant::now();
        let answer = host.request(&target.spec, method, params)?;
        tracing::debug!(
            server = target.server(),
            method,
            ms = asked.elapsed().as_secs_f64() * 1000.0,
            indexing = answer.indexing,
            "answered"
        );
        Ok(answer)
    }

    /// Wait for a speculative check in progress, and keep the next one from starting.
    fn not_speculating(&self) -> RwLockReadGuard<'_, ()> {
        if let Ok(shared) = self.code.speculation.try_read() {
            return shared;
        }
        // A speculative check holds the servers for up to its settle time (or a holder
        // panicked, which `read` decides on).
        crate::sync::long_wait(|| crate::sync::read(&self.code.speculation))
    }

    /// Keep every other request away from the servers while a speculative check runs.
    pub(super) fn speculating(&self) -> RwLockWriteGuard<'_, ()> {
        self.code.speculation.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Give `target`'s server `text` (a speculative check holds [`Service::speculating`]).
    pub(super) fn code_give(&self, target: &CodeTarget, text: &str) -> Result<(), CommandError> {
        let host = self.host(target.server())?;
        Ok(host.sync(&target.spec, &target.file, &target.language_id, text)?)
    }

    /// Files of a commit: each code file a server has open is given its new text (or the
    /// editor's buffer, while one is open), so the server's view of the project follows the
    /// commit, not only the files asked about next.
    pub(super) fn code_committed(&self, paths: &[String]) {
        let Some(host) = &self.code.host else { return };
        let config = self.store.snapshot().analysis.config().clone();
        for path in paths.iter().filter(|p| !crate::scan::is_document_path(&config, p)) {
            let Ok(target) = self.code_target(path) else { continue };
            if host.version(target.server(), &target.file).is_some()
                && let Err(err) = self.code_sync(&target)
            {
                tracing::warn!("cannot give {path} its committed text: {err}");
            }
        }
    }

    /// The text an editor holds for the code file at store path `path`, if one does.
    pub(super) fn code_buffer(&self, path: &str) -> Option<Arc<str>> {
        lock(&self.code.buffers).get(path).map(|b| b.text.clone())
    }

    /// The position encoding of `target`'s running server (UTF-16, the LSP default, when it
    /// is not running yet).
    pub fn code_encoding(&self, server: &str) -> Encoding {
        self.code.host.as_ref().and_then(|h| h.encoding(server)).unwrap_or(Encoding::Utf16)
    }

    /// The running server's capabilities (`null` when none runs).
    pub fn code_capabilities(&self, server: &str) -> Value {
        self.code.host.as_ref().and_then(|h| h.capabilities(server)).unwrap_or(Value::Null)
    }

    /// What the running servers publish, for an editor's connection to relay (`None`: no
    /// host).
    pub fn code_events(&self) -> Option<std::sync::mpsc::Receiver<CodeEvent>> {
        self.code.host.as_ref().map(|h| h.subscribe())
    }

    /// An editor opened (or replaced) the code file at store path `path` with `text`: every
    /// session sees that text ([`Service::code_text`]) until the editors holding it close it.
    /// Nothing is sent to a server here ([`Service::code_sync`] does, off the editor's ordered
    /// loop): a file whose server may not start yet (untrusted, missing) is held all the same,
    /// so a server trusted later is given the editor's text, not the disk's.
    pub fn code_open(&self, session: &Session, path: &str, text: &str) {
        let mut buffers = lock(&self.code.buffers);
        let buffer = buffers
            .entry(path.to_owned())
            .or_insert_with(|| EditorBuffer { text: Arc::from(""), sessions: Vec::new() });
        buffer.text = Arc::from(text);
        if !buffer.sessions.contains(&session.id) {
            buffer.sessions.push(session.id);
        }
    }

    /// An editor changed a code file it holds: `edits` applied in order, each range resolved
    /// against the text as it is when that edit applies (the rule of the documents' buffers,
    /// [`crate::ide::Buffers::edit`]): an edit whose range is not inside the text is refused
    /// with every edit after it (computed against a text the core does not have), and the ones
    /// before it stand. `NotOpen` when this session holds no buffer at `path`.
    ///
    /// Editors holding one file share one text: two editors changing it at once are not merged.
    pub fn code_change<R>(
        &self,
        session: &Session,
        path: &str,
        edits: impl IntoIterator<Item = Edit<R>>,
        mut resolve: impl FnMut(&LineIndex, &str, &R) -> Option<std::ops::Range<u32>>,
    ) -> Edited {
        let mut buffers = lock(&self.code.buffers);
        let Some(held) = buffers.get_mut(path).filter(|b| b.sessions.contains(&session.id)) else {
            return Edited::NotOpen;
        };
        let mut buffer = Buffer::new(path.to_owned(), held.text.to_string(), 0, ());
        let mut outcome = Edited::Applied;
        for (i, edit) in edits.into_iter().enumerate() {
            if !buffer.apply(edit, &mut resolve) {
                outcome = Edited::Refused(i);
                break;
            }
        }
        if buffer.text() != &*held.text {
            held.text = Arc::from(buffer.text());
        }
        outcome
    }

    /// Give `target`'s server the file's current text (an editor's buffer, else the disk's),
    /// starting the server if it is not running. Nothing is sent when it has that text already.
    pub fn code_sync(&self, target: &CodeTarget) -> Result<(), CommandError> {
        let host = self.host(target.server())?;
        let text = self.code_text(target)?;
        let _shared = self.not_speculating();
        Ok(host.sync(&target.spec, &target.file, &target.language_id, &text)?)
    }

    /// An editor closed the code file at store path `path`. When no other editor holds it,
    /// every session sees the file on disk again, and its server (if it has it open) closes it.
    pub fn code_close(&self, session: &Session, path: &str) {
        let last = {
            let mut buffers = lock(&self.code.buffers);
            match buffers.get_mut(path) {
                Some(buffer) if buffer.sessions.contains(&session.id) => {
                    buffer.sessions.retain(|s| *s != session.id);
                    let last = buffer.sessions.is_empty();
                    if last {
                        buffers.remove(path);
                    }
                    last
                }
                _ => false,
            }
        };
        // A server that may not start was never given the file.
        if last
            && let Some(host) = &self.code.host
            && let Ok(target) = self.code_target(path)
        {
            host.close(target.server(), &target.file);
        }
    }

    /// The current text of a file an answer or a request names (a path or `file:` URI): a
    /// file of the store as [`Service::code_text`] has it (an editor's buffer, else the disk),
    /// a file outside it (a library's source, a stub) from the disk. `None` when it cannot be
    /// read as text.
    pub fn code_file_text(&self, given: &str) -> Option<Arc<str>> {
        self.code_file_text_of(given, self.roots().to_store_path(given).ok().as_ref())
    }

    /// [`Service::code_file_text`] of `given`, already resolved (`None`: not in the store).
    fn code_file_text_of(
        &self,
        given: &str,
        resolved: Option<&crate::ide::Resolved>,
    ) -> Option<Arc<str>> {
        match resolved {
            Some(resolved) => {
                if let Some(buffer) = lock(&self.code.buffers).get(&resolved.path) {
                    return Some(buffer.text.clone());
                }
                self.disk_text(&self.store.root().join(&resolved.path), &resolved.path).ok()
            }
            None => {
                let path = if given.starts_with("file:") {
                    crate::ide::uri_path(given).ok()?
                } else {
                    PathBuf::from(given)
                };
                self.disk_text(&path, given).ok()
            }
        }
    }

    /// A session ended: the code files only it held go back to their text on disk.
    pub(super) fn close_code_session(&self, session: &Session) {
        let held: Vec<String> = lock(&self.code.buffers)
            .iter()
            .filter(|(_, b)| b.sessions.contains(&session.id))
            .map(|(p, _)| p.clone())
            .collect();
        for path in held {
            self.code_close(session, &path);
        }
    }

    /// The diagnostics of `target` as its server has them for the file's current text (LSP
    /// `Diagnostic`s in the server's encoding, as one JSON array): pulled where the server
    /// offers it, and what it pushed for that text (waited for, bounded), merged without
    /// duplicates.
    pub fn code_diagnostics(&self, target: &CodeTarget) -> Result<CodeAnswer, CommandError> {
        let text = self.code_text(target)?;
        let _shared = self.not_speculating();
        self.code_diagnostics_unlocked(target, &text)
    }

    /// [`Service::code_diagnostics`] for `text`, given to the server first; the caller holds
    /// the speculation lock (either way).
    pub(super) fn code_diagnostics_unlocked(
        &self,
        target: &CodeTarget,
        text: &str,
    ) -> Result<CodeAnswer, CommandError> {
        let host = self.host(target.server())?;
        host.sync(&target.spec, &target.file, &target.language_id, text)?;
        let capabilities = host.capabilities(target.server()).unwrap_or(Value::Null);
        let mut found: Vec<Value> = Vec::new();
        let mut indexing = false;
        let mut pulled = false;
        // Pull where the server offers it; push (what it published for the text it was given)
        // otherwise or besides, merged without duplicates.
        if capabilities.get("diagnosticProvider").is_some_and(|p| !p.is_null()) {
            let params = json!({"textDocument": {"uri": uri_of(target)}});
            match host.request(&target.spec, "textDocument/diagnostic", params) {
                Ok(answer) => {
                    pulled = true;
                    indexing |= answer.indexing;
                    found.extend(as_list(&answer.result["items"]));
                }
                Err(err) if err.code == Code::Unsupported => {}
                Err(err) => return Err(err.into()),
            }
        }
        // A server that answered the pull (even with no items: a clean file) has said what it
        // knows, and a push adds to it only when it is for this text; one that only pushes is
        // waited for until it publishes for the text it was given (bounded).
        let version = host.version(target.server(), &target.file);
        let deadline = Instant::now() + PUBLISH_WAIT;
        // Past the wait, the server has not yet said anything about this text (a busy server
        // can take longer): no diagnostics, and `readiness: indexing`, never a clean bill made
        // up from an older text's.
        let pushed = loop {
            match host.published(target.server(), &target.file) {
                Some((v, items)) if v.is_none() || v >= version => break items,
                _ if pulled => break Vec::new(),
                _ if Instant::now() >= deadline => {
                    indexing = true;
                    break Vec::new();
                }
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        for d in pushed {
            if !found.contains(&d) {
                found.push(d);
            }
        }
        Ok(CodeAnswer { result: Value::Array(found), indexing })
    }

    /// `workspace/symbol` with `query` on every configured server that may start (or only
    /// `only`), started if needed: each one's raw answer (in its encoding), and the servers
    /// skipped with why. A configuration that does not load is the error.
    pub fn code_workspace_symbols(
        &self,
        query: &str,
        only: Option<&str>,
    ) -> Result<CodeSymbols, CommandError> {
        let mut out = CodeSymbols { complete: true, ..CodeSymbols::default() };
        let Some(host) = &self.code.host else { return Ok(out) };
        let servers = self.code_servers()?;
        for server in servers.iter().filter(|s| only.is_none_or(|o| o == s.name())) {
            let spec = match self.launch(server) {
                Ok(spec) => spec,
                Err(err) => {
                    out.skipped.push((server.name().to_owned(), err));
                    continue;
                }
            };
            let params = json!({"query": query});
            // A server that has no file open yet is first given the store's first file of its
            // own that it can be given (not too large, UTF-8), so that it roots where its file
            // requests would root it, and so that a server that builds its projects from open
            // files has one (tsserver answers "No Project" until then). One that answers with
            // an error anyway is given it and asked again, once.
            let first = || {
                let usable = |rel: &str| {
                    let target = self.code_target(rel).ok()?;
                    self.code_text(&target).is_ok().then_some(target)
                };
                let snapshot = self.store.snapshot();
                let (root, config) = (self.store.root(), snapshot.analysis.config());
                codefiles::first_file(root, config, &servers, server.name(), usable)
            };
            let cold = host.encoding(server.name()).is_none();
            let target = if cold { first() } else { None };
            if let Some(target) = &target
                && let Err(err) = self.code_sync(target)
            {
                out.skipped.push((server.name().to_owned(), err));
                continue;
            }
            // Symbols of a server still loading the workspace would be only some of them.
            if let Err(err) = self.await_ready(server.name(), spec.timeouts.request) {
                out.complete = false;
                out.skipped.push((server.name().to_owned(), err));
                continue;
            }
            // The first file was given above (to know the server's readiness).
            let spec = target.as_ref().map_or(&spec, |t| &t.spec);
            let mut answer = {
                let _shared = self.not_speculating();
                host.request(spec, "workspace/symbol", params.clone()).map_err(CommandError::from)
            };
            // Only an error the server answered: a crash or a timeout is never asked again
            // behind the caller's back.
            if let Err(err) = &answer
                && err.code() == Code::Internal
                && target.is_none()
                && let Some(target) = first()
            {
                answer = self.code_request(&target, "workspace/symbol", params);
            }
            match answer {
                Ok(answer) => {
                    out.indexing |= answer.indexing;
                    let encoding = self.code_encoding(server.name());
                    out.found.push((server.name().to_owned(), encoding, as_list(&answer.result)));
                }
                Err(err) => out.skipped.push((server.name().to_owned(), err)),
            }
        }
        Ok(out)
    }

    /// Wait until `server` is ready (SPEC §25), up to `timeout`: navigation and code-edit
    /// previews answer only from a server whose initial analysis is over, since an answer
    /// from one still loading the workspace misses what it has not loaded. `busy` naming the
    /// readiness past the timeout. A server that crashed is not waited for: the request
    /// that follows starts it again or answers why it cannot.
    pub(super) fn await_ready(&self, server: &str, timeout: Duration) -> Result<(), CommandError> {
        self.await_readiness(server, timeout, false)
    }

    /// [`Service::await_ready`] for a caller that asks at once and reads the answer's own
    /// readiness ([`Service::ask_when_ready`]): a server whose work ended within
    /// [`crate::codefiles::READY_SETTLE`] is asked without waiting the settle out. Work it
    /// announces meanwhile is seen before its answer (one connection, in order), so such an
    /// answer is marked as given at work and asked again; the settle only saves that second
    /// question, and costs every first one 100 ms (docs/DECISIONS.md, "A cold rename's time,
    /// step by step").
    fn await_askable(&self, server: &str, timeout: Duration) -> Result<(), CommandError> {
        self.await_readiness(server, timeout, true)
    }

    fn await_readiness(
        &self,
        server: &str,
        timeout: Duration,
        asking: bool,
    ) -> Result<(), CommandError> {
        let host = self.host(server)?;
        let deadline = Instant::now() + timeout;
        loop {
            match host.readiness(server) {
                None | Some((Readiness::Ready | Readiness::Crashed, _)) => return Ok(()),
                Some((Readiness::Indexing, _))
                    if asking
                        && host.activity(server).is_some_and(|a| {
                            // Only a host that keeps the server's clock says the same as its
                            // readiness did, less the settle.
                            a.initialized.is_some()
                                && codefiles::answer_readiness(&a, Instant::now())
                                    == Readiness::Ready
                        }) =>
                {
                    return Ok(());
                }
                Some((readiness, since)) if Instant::now() >= deadline => {
                    return Err(CommandError::NotReady {
                        server: server.to_owned(),
                        readiness,
                        since: wall_time(since),
                        waited: timeout,
                    });
                }
                Some(_) => {
                    host.used(server);
                    crate::sync::long_wait(|| std::thread::sleep(READY_POLL));
                }
            }
        }
    }

    /// `method` for `target` asked once its server is ready (SPEC §25), and asked again,
    /// within the server's request timeout, while the server answers at work (it took up a
    /// change, checking the file it was just given, say): an answer given at work may miss
    /// what that work adds. Past the timeout, the last answer (its `indexing` says it is not
    /// complete), or `busy` naming the readiness when there is none.
    pub(super) fn ask_when_ready(
        &self,
        target: &CodeTarget,
        text: &str,
        method: &str,
        params: &Value,
    ) -> Result<CodeAnswer, CommandError> {
        let deadline = Instant::now() + target.spec.timeouts.request;
        let mut last = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let waited = Instant::now();
            if let Err(err) = self.await_askable(target.server(), left) {
                return last.ok_or(err);
            }
            tracing::debug!(
                server = target.server(),
                method,
                ms = waited.elapsed().as_secs_f64() * 1000.0,
                "waited for readiness"
            );
            let answer = self.code_request_with(target, text, method, params.clone())?;
            if !answer.indexing || Instant::now() >= deadline {
                return Ok(answer);
            }
            last = Some(answer);
        }
    }

    /// Warm-up (SPEC §25): every eager server that may start (trusted, its program found) and
    /// covers a file of the store, not running and not being warmed already, is started in
    /// the background and given the store's first file it covers, so that its initial
    /// analysis runs while the agent or the editor is still starting. Nothing here waits: the
    /// caller (a session attaching, the core starting) goes on at once. A server that may
    /// not start is left alone and nothing is said; a request that needs it says why. A
    /// server that crashes while warming is started again within its `max_restarts`.
    pub fn warm_up(&self) {
        let Some(host) = self.code.host.clone() else { return };
        let Ok(servers) = self.code_servers() else { return };
        let mut specs = Vec::new();
        for server in servers.iter().filter(|s| s.config.start == crate::config::Start::Eager) {
            if host.readiness(server.name()).is_some() {
                continue;
            }
            let Ok(spec) = self.launch(server) else { continue };
            if lock(&self.code.warming).insert(server.name().to_owned()) {
                specs.push(spec);
            }
        }
        if specs.is_empty() {
            return;
        }
        let snapshot = self.store.snapshot();
        let config = snapshot.analysis.config().clone();
        let root = self.store.root().to_owned();
        let warming = self.code.warming.clone();
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let started = std::thread::Builder::new().name("code-warm-up".into()).spawn(move || {
            for spec in specs {
                warm(&*host, &root, &config, &servers, spec.clone());
                lock(&warming).remove(&spec.name);
            }
        });
        if let Err(err) = started {
            tracing::warn!("no warm-up of the language servers: cannot start a thread: {err}");
            let mut warming = lock(&self.code.warming);
            for name in names {
                warming.remove(&name);
            }
        }
    }

    /// Stop every language server (the core is stopping).
    pub fn shutdown_code_servers(&self) {
        if let Some(host) = &self.code.host {
            host.shutdown();
        }
    }
}

/// What decided a launch spec: the server's name and table hash, the trust recorded for it,
/// and PATH.
type LaunchKey = (String, String, Option<String>, Option<std::ffi::OsString>);

/// What a configuration file is now, from one `stat` (`None`: there is none): its size, mode,
/// inode and modification and change times, to the nanosecond. Not its bytes: every code
/// request asks, and opening `stardust.toml` wakes the store's file watcher each time.
type FileKey = Option<(u64, u32, u64, [i64; 4])>;

fn file_key(path: &Path) -> FileKey {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.mode(), m.ino(), [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()]))
}

/// `spec` rooted for the file at store path `rel`: the nearest folder holding one of its
/// `root_markers`, else the store root.
fn with_root(mut spec: LaunchSpec, rel: &str, store: &Path) -> LaunchSpec {
    if !spec.root_markers.is_empty() {
        let dir = codefiles::root_for(rel, &spec.root_markers, &|p| store.join(p).exists());
        spec.root = store.join(dir);
    }
    spec
}

/// A moment of this process as the time of day.
pub(super) fn wall_time(at: Instant) -> std::time::SystemTime {
    std::time::SystemTime::now() - Instant::now().saturating_duration_since(at)
}

/// Warm one server up (see [`Service::warm_up`]): give it the store's first file it covers
/// that has something in it (else the first file it covers), then follow it until it is
/// ready, starting it again after a crash while its restarts last.
///
/// A file with content, not an empty `__init__.py`: a server checks the files it has open
/// (pyright in its default `openFilesOnly` mode), and checking code evaluates what it names,
/// down to the language's own stubs (pyright's `builtins`, `typing`), which is the largest
/// fixed cost of the first question (measured: about a second of the first hover's 1.1 s on
/// a cold 500-module project, docs/DECISIONS.md, "Warm-up that evaluates"). Nothing else is
/// asked: a `workspace/symbol` that made pyright read every file cost 4 to 5 s of its one
/// thread, which the first questions waited behind, to save about a second of a rename.
fn warm(
    host: &dyn CodeHost,
    root: &Path,
    config: &crate::config::Config,
    servers: &Servers,
    spec: LaunchSpec,
) {
    let name = spec.name.clone();
    let mut empty = None;
    let first = codefiles::first_file(root, config, servers, &name, |rel| {
        let Ok(Owner::Server { language_id, .. }) = codefiles::route(config, servers, rel) else {
            return None;
        };
        let file = root.join(rel);
        let text = read_text(&file, rel).ok()?;
        let found = (with_root(spec.clone(), rel, root), file, language_id, text);
        if found.3.trim().is_empty() {
            empty.get_or_insert(found);
            return None;
        }
        Some(found)
    })
    .or(empty);
    let Some((spec, file, language_id, text)) = first else {
        tracing::debug!(server = name, "no warm-up: it covers no file of the store");
        return;
    };
    tracing::debug!(server = name, file = %file.display(), "warm-up: starting");
    let deadline = Instant::now() + spec.timeouts.startup + spec.timeouts.request;
    loop {
        if let Err(err) = host.sync(&spec, &file, &language_id, &text) {
            tracing::info!(server = name, "warm-up stopped: {err}");
            return;
        }
        loop {
            match host.readiness(&name) {
                Some((Readiness::Ready, _)) => {
                    tracing::debug!(server = name, "warm-up: ready");
                    return;
                }
                None => return,
                Some((Readiness::Crashed, _)) => break,
                Some(_) if Instant::now() >= deadline => return,
                Some(_) => std::thread::sleep(READY_POLL * 5),
            }
        }
        tracing::info!(server = name, "it crashed while warming up: starting it again");
    }
}

/// Files larger than this are not sent to a server (a generated bundle, a data dump).
const MAX_CODE_FILE: u64 = 16 * 1024 * 1024;

pub(super) fn read_text(file: &Path, rel: &str) -> Result<String, CommandError> {
    let meta = std::fs::metadata(file).map_err(|err| {
        Error::NotFound(format!("cannot read {rel}: {err}; give a file of the store"))
    })?;
    if !meta.is_file() {
        return Err(
            Error::NotFound(format!("{rel} is not a file; give a file of the store")).into()
        );
    }
    if meta.len() > MAX_CODE_FILE {
        return Err(Error::Unsupported(format!(
            "{rel} is {} MiB; code files over {} MiB are not sent to a language server",
            meta.len() / (1024 * 1024),
            MAX_CODE_FILE / (1024 * 1024)
        ))
        .into());
    }
    let bytes = std::fs::read(file).map_err(|err| Error::io(format!("cannot read {rel}"), err))?;
    String::from_utf8(bytes).map_err(|_| {
        Error::Unsupported(format!("{rel} is not UTF-8 text; language servers read text")).into()
    })
}

// The navigation tools for code files.

/// The texts of the files one answer's locations are in, each read once.
pub(super) struct Texts<'a> {
    service: &'a Service,
    roots: Roots,
    /// By URI: the path an answer shows, and the text positions in it count in.
    files: HashMap<String, (String, Option<Text>)>,
}

/// A file's text and its line index.
type Text = (Arc<str>, LineIndex);

/// A location of an answer, as MCP gives it: the store path (or an absolute path outside the
/// store: a library's source, a stub), the range in 1-based characters, the server.
impl<'a> Texts<'a> {
    pub(super) fn new(service: &'a Service) -> Texts<'a> {
        Texts { service, roots: service.roots(), files: HashMap::new() }
    }

    /// The path an answer shows for `uri`, and the text positions in it count in; each
    /// resolved and read once per answer.
    fn file(&mut self, uri: &str) -> (String, Option<&(Arc<str>, LineIndex)>) {
        let (service, roots) = (self.service, &self.roots);
        let (shown, text) = self.files.entry(uri.to_owned()).or_insert_with(|| {
            // Resolved once, for the path shown and the text read.
            let resolved = roots.uri_to_store_path(uri).ok();
            let text = service.code_file_text_of(uri, resolved.as_ref()).map(|t| {
                let index = LineIndex::new(&t);
                (t, index)
            });
            let shown = match resolved {
                Some(resolved) => resolved.path,
                None => crate::ide::uri_path(uri)
                    .map_or_else(|_| uri.to_owned(), |p| p.display().to_string()),
            };
            (shown, text)
        });
        (shown.clone(), text.as_ref())
    }

    /// An LSP range as `{line, column, endLine, endColumn}` (1-based characters).
    fn range(&mut self, uri: &str, range: &Value, encoding: Encoding) -> Value {
        let (_, text) = self.file(uri);
        let start = mcp_position(text, &range["start"], encoding);
        let end = mcp_position(text, &range["end"], encoding);
        json!({"line": start.0, "column": start.1, "endLine": end.0, "endColumn": end.1})
    }

    /// `{path, range, server}` for an LSP location (or location link: its target).
    pub(super) fn location(
        &mut self,
        location: &Value,
        server: &str,
        encoding: Encoding,
    ) -> Option<Value> {
        let (uri, range) = match location.get("targetUri") {
            Some(uri) => (
                uri.as_str()?,
                location.get("targetSelectionRange").or(location.get("targetRange"))?,
            ),
            None => (location.get("uri")?.as_str()?, location.get("range")?),
        };
        let range = self.range(uri, range, encoding);
        let (path, _) = self.file(uri);
        Some(json!({"path": path, "range": range, "server": server}))
    }
}

/// An LSP position (0-based, in the server's encoding) as 1-based line and character column.
/// Without the text (a file that cannot be read) the character count is taken as is.
pub(super) fn mcp_position(
    text: Option<&(Arc<str>, LineIndex)>,
    at: &Value,
    encoding: Encoding,
) -> (u64, u64) {
    let line = at["line"].as_u64().unwrap_or(0);
    let character = at["character"].as_u64().unwrap_or(0);
    let Some((text, index)) = text else { return (line + 1, character + 1) };
    let position = Position {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(character).unwrap_or(u32::MAX),
    };
    // A position past the end of its line (servers do send them) is clamped to the line's end.
    let offset = index.offset(text, position, encoding).unwrap_or_else(|| {
        index
            .line_span(text, position.line)
            .map_or(crate::text::to_u32(text.len()), |span| span.end)
    });
    let at = index.position(text, offset, Encoding::Utf32);
    (u64::from(at.line) + 1, u64::from(at.column) + 1)
}

/// The code file a tool's `path` names, when it names one (`None`: a document, or no path).
pub(super) fn target_of(call: &Call<'_>) -> Result<Option<CodeTarget>, CommandError> {
    let Some(path) = call.args.get("path").and_then(Value::as_str) else { return Ok(None) };
    if call.args.contains_key("entity") {
        return Ok(None);
    }
    let resolved = call.service.roots().to_store_path(path)?;
    if crate::scan::is_document_path(call.snapshot.analysis.config(), &resolved.path) {
        return Ok(None);
    }
    call.service.code_target_of(resolved).map(Some)
}

/// The request parameters for the tool's `position` in `target`, in its server's encoding,
/// and the file's text they were computed on (read into `texts`, once for the whole answer).
pub(super) fn text_position(
    service: &Service,
    target: &CodeTarget,
    args: &Map<String, Value>,
    texts: &mut Texts<'_>,
) -> Result<(Value, Arc<str>), CommandError> {
    let Some(position) = args.get("position") else {
        return Err(Error::InvalidArguments(
            "give `position {line, column}` (1-based) with a code file's `path`".into(),
        )
        .into());
    };
    let line = position["line"].as_u64().unwrap_or(0);
    let column = position["column"].as_u64().unwrap_or(0);
    let uri = uri_of(target);
    if texts.file(&uri).1.is_none() {
        // Why it cannot be read (missing, too large, not UTF-8), as an error.
        service.code_text(target)?;
    }
    let (_, Some((text, index))) = texts.file(&uri) else {
        return Err(Error::NotFound(format!("cannot read {}", target.path)).into());
    };
    let text = text.clone();
    let invalid = || {
        CommandError::from(Error::InvalidArguments(format!(
            "line {line} column {column} is not a position in {} ({} lines); lines and columns \
             are 1-based, columns counted in characters",
            target.path,
            index.line_count()
        )))
    };
    let at = Position {
        line: u32::try_from(line.checked_sub(1).ok_or_else(invalid)?).map_err(|_| invalid())?,
        column: u32::try_from(column.checked_sub(1).ok_or_else(invalid)?).map_err(|_| invalid())?,
    };
    let offset = index.offset(&text, at, Encoding::Utf32).ok_or_else(invalid)?;
    // The server's encoding is known once it runs; start it first so the column is right.
    if let Some(host) = &service.code.host {
        let _shared = service.not_speculating();
        host.sync(&target.spec, &target.file, &target.language_id, &text)?;
    }
    let encoding = service.code_encoding(target.server());
    let at = index.position(&text, offset, encoding);
    let params = json!({
        "textDocument": {"uri": uri},
        "position": {"line": at.line, "character": at.column},
    });
    Ok((params, text))
}

pub(super) fn uri_of(target: &CodeTarget) -> String {
    crate::ide::file_uri(&target.file)
}

/// The readiness word of an answer.
fn readiness(answer: &CodeAnswer) -> &'static str {
    if answer.indexing { "indexing" } else { "ready" }
}

/// `out` with the answer's `server` and `readiness`.
pub(super) fn tagged(mut out: Value, target: &CodeTarget, answer: &CodeAnswer) -> Value {
    out["server"] = json!(target.server());
    out["readiness"] = json!(readiness(answer));
    out
}

/// `out` with the answer's `server`, `readiness` and whether it is `complete` (SPEC §25): an
/// answer given while its server was not ready may miss what the server has not analysed.
fn tagged_complete(out: Value, target: &CodeTarget, answer: &CodeAnswer) -> Value {
    let mut out = tagged(out, target, answer);
    out["complete"] = json!(!answer.indexing);
    out
}

/// Locations in canonical order: the store's files before those outside it (shown with
/// absolute paths: a library's source, a system header), then path, line and column.
fn sort_locations(items: &mut [Value]) {
    items.sort_by_key(location_key);
}

fn location_key(v: &Value) -> (bool, String, Option<u64>, Option<u64>) {
    let path = v["path"].as_str().unwrap_or("");
    let r = &v["range"];
    (path.starts_with('/'), path.to_owned(), r["line"].as_u64(), r["column"].as_u64())
}

pub(super) fn as_list(result: &Value) -> Vec<Value> {
    match result {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    }
}

pub(super) fn hover(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let mut texts = Texts::new(call.service);
    let (params, text) = text_position(call.service, target, &call.args, &mut texts)?;
    let answer = call.service.code_request_with(target, &text, "textDocument/hover", params)?;
    let encoding = call.service.code_encoding(target.server());
    let hover = match &answer.result {
        Value::Null => Value::Null,
        result => {
            let mut out =
                json!({"path": target.path, "markdown": hover_markdown(&result["contents"])});
            if let Some(range) = result.get("range") {
                out["range"] = texts.range(&uri_of(target), range, encoding);
            }
            out["server"] = json!(target.server());
            out
        }
    };
    Ok(tagged(json!({"hover": hover}), target, &answer))
}

/// Hover contents (MarkupContent, MarkedString or a list of them) as markdown.
fn hover_markdown(contents: &Value) -> String {
    match contents {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(hover_markdown).collect::<Vec<_>>().join("\n\n"),
        Value::Object(map) => match (map.get("language"), map.get("value")) {
            (Some(lang), Some(Value::String(value))) => {
                format!("```{}\n{value}\n```", lang.as_str().unwrap_or(""))
            }
            (_, Some(Value::String(value))) => value.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// `definition`, `declaration`, `type_definition`, `implementation`: a paged list of
/// locations. `implementation` searches the workspace: it waits for the server to be ready
/// and says whether its answer is `complete` (SPEC §25).
pub(super) fn locations(call: &Call<'_>, target: &CodeTarget, method: &str) -> CommandResult {
    let mut texts = Texts::new(call.service);
    let (params, text) = text_position(call.service, target, &call.args, &mut texts)?;
    let searches = method == "textDocument/implementation";
    let answer = if searches {
        call.service.ask_when_ready(target, &text, method, &params)?
    } else {
        call.service.code_request_with(target, &text, method, params)?
    };
    let encoding = call.service.code_encoding(target.server());
    let mut items: Vec<Value> = as_list(&answer.result)
        .iter()
        .filter_map(|l| texts.location(l, target.server(), encoding))
        .collect();
    sort_locations(&mut items);
    let out = page::page("locations", items, &call.args)?;
    Ok(if searches { tagged_complete(out, target, &answer) } else { tagged(out, target, &answer) })
}

pub(super) fn references(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let mut texts = Texts::new(call.service);
    let (mut params, text) = text_position(call.service, target, &call.args, &mut texts)?;
    let declaration = call.args.get("includeDeclaration").and_then(Value::as_bool);
    params["context"] = json!({"includeDeclaration": declaration.unwrap_or(true)});
    let answer = call.service.ask_when_ready(target, &text, "textDocument/references", &params)?;
    let encoding = call.service.code_encoding(target.server());
    let mut items: Vec<Value> = as_list(&answer.result)
        .iter()
        .filter_map(|l| texts.location(l, target.server(), encoding))
        .collect();
    sort_locations(&mut items);
    items.dedup();
    Ok(tagged_complete(page::page("references", items, &call.args)?, target, &answer))
}

/// LSP `SymbolKind` numbers as words.
const SYMBOL_KINDS: [&str; 26] = [
    "file",
    "module",
    "namespace",
    "package",
    "class",
    "method",
    "property",
    "field",
    "constructor",
    "enum",
    "interface",
    "function",
    "variable",
    "constant",
    "string",
    "number",
    "boolean",
    "array",
    "object",
    "key",
    "null",
    "enumMember",
    "struct",
    "event",
    "operator",
    "typeParameter",
];

fn symbol_kind(kind: &Value) -> &'static str {
    kind.as_u64()
        .and_then(|k| usize::try_from(k).ok())
        .and_then(|k| SYMBOL_KINDS.get(k.wrapping_sub(1)))
        .copied()
        .unwrap_or("unknown")
}

pub(super) fn document_symbols(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let params = json!({"textDocument": {"uri": uri_of(target)}});
    let answer = call.service.code_request(target, "textDocument/documentSymbol", params)?;
    let encoding = call.service.code_encoding(target.server());
    let mut texts = Texts::new(call.service);
    let uri = uri_of(target);
    let items = as_list(&answer.result)
        .iter()
        .map(|s| code_symbol(&mut texts, &uri, s, target.server(), encoding))
        .collect();
    Ok(tagged(page::page("symbols", items, &call.args)?, target, &answer))
}

/// A `DocumentSymbol` (with children) or a flat `SymbolInformation`.
fn code_symbol(
    texts: &mut Texts<'_>,
    uri: &str,
    s: &Value,
    server: &str,
    encoding: Encoding,
) -> Value {
    let mut out = json!({
        "name": s["name"],
        "kind": symbol_kind(&s["kind"]),
        "server": server,
    });
    if let Some(detail) = s.get("detail").filter(|d| !d.is_null()) {
        out["detail"] = detail.clone();
    }
    if let Some(container) = s.get("containerName").filter(|d| !d.is_null()) {
        out["container"] = container.clone();
    }
    if let Some(location) = s.get("location") {
        let uri = location["uri"].as_str().unwrap_or(uri).to_owned();
        out["range"] = texts.range(&uri, &location["range"], encoding);
        out["path"] = json!(texts.file(&uri).0);
    } else {
        out["range"] = texts.range(uri, &s["range"], encoding);
        out["selectionRange"] = texts.range(uri, &s["selectionRange"], encoding);
        let children: Vec<Value> = s["children"]
            .as_array()
            .map(|c| c.iter().map(|c| code_symbol(texts, uri, c, server, encoding)).collect())
            .unwrap_or_default();
        out["children"] = json!(children);
    }
    out
}

/// Every server that may start, for `workspace_symbols` (the ones that may not are named in
/// the answer's `skipped`).
pub(super) fn workspace_symbols(call: &Call<'_>, entities: Vec<Value>) -> CommandResult {
    let query = call.args.get("query").and_then(Value::as_str).unwrap_or_default();
    let only = call.args.get("server").and_then(Value::as_str);
    let mut items = entities;
    let symbols = call.service.code_workspace_symbols(query, only)?;
    let mut texts = Texts::new(call.service);
    for (server, encoding, found) in &symbols.found {
        for s in found {
            let uri = s["location"]["uri"].as_str().unwrap_or_default().to_owned();
            let mut item = code_symbol(&mut texts, &uri, s, server, *encoding);
            if item.get("path").is_none() {
                item["path"] = json!(texts.file(&uri).0);
            }
            items.push(item);
        }
    }
    let skipped: Vec<Value> = symbols
        .skipped
        .iter()
        .map(|(server, err)| json!({"server": server, "error": err.to_json(&call.snapshot.analysis)}))
        .collect();
    let indexing = symbols.indexing;
    let mut out = page::page("symbols", items, &call.args)?;
    if !skipped.is_empty() {
        out["skipped"] = json!(skipped);
    }
    out["readiness"] = json!(if indexing { "indexing" } else { "ready" });
    out["complete"] = json!(!indexing && symbols.complete);
    Ok(out)
}

/// LSP diagnostic severities as words.
pub(super) fn severity(value: &Value) -> &'static str {
    match value.as_u64() {
        Some(1) | None => "error",
        Some(2) => "warning",
        Some(3) => "information",
        _ => "hint",
    }
}

pub(super) fn diagnostics(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let service = call.service;
    // Started and given the text first, so that its readiness is known.
    service.code_sync(target)?;
    service.await_ready(target.server(), target.spec.timeouts.request)?;
    let answer = service.code_diagnostics(target)?;
    let (found, indexing) = (as_list(&answer.result), answer.indexing);
    let encoding = service.code_encoding(target.server());
    let mut texts = Texts::new(service);
    let uri = uri_of(target);
    let wanted = call.args.get("severity").and_then(Value::as_str);
    let mut items: Vec<Value> = found
        .iter()
        .map(|d| code_diagnostic(&mut texts, &uri, &target.path, target.server(), d, encoding))
        .filter(|item| wanted.is_none_or(|w| item["severity"] == w))
        .collect();
    sort_locations(&mut items);
    let mut out = page::page("diagnostics", items, &call.args)?;
    out["server"] = json!(target.server());
    out["readiness"] = json!(if indexing { "indexing" } else { "ready" });
    out["complete"] = json!(!indexing);
    Ok(out)
}

pub(super) fn signature_help(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let mut texts = Texts::new(call.service);
    let (params, text) = text_position(call.service, target, &call.args, &mut texts)?;
    let answer =
        call.service.code_request_with(target, &text, "textDocument/signatureHelp", params)?;
    let help = match &answer.result {
        Value::Null => Value::Null,
        result => {
            let signatures: Vec<Value> = as_list(&result["signatures"])
                .iter()
                .map(|s| {
                    json!({
                        "label": s["label"],
                        "documentation": hover_markdown(&s["documentation"]),
                        "parameters": as_list(&s["parameters"]).iter().map(|p| json!({
                            "label": p["label"],
                            "documentation": hover_markdown(&p["documentation"]),
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "signatures": signatures,
                "activeSignature": result.get("activeSignature").cloned().unwrap_or(json!(0)),
                "activeParameter": result.get("activeParameter").cloned().unwrap_or(Value::Null),
                "server": target.server(),
            })
        }
    };
    Ok(tagged(json!({"signatureHelp": help}), target, &answer))
}

/// The diagnostics the running servers have published for the store's code files (SPEC
/// §25: `diagnostics {}` over the whole store), as the tool shows a code file's, each naming
/// its `server`; each running server is waited for within its request timeout, and whether
/// every one was ready is the answer's `complete`. A server that is not running has published
/// nothing and is not started for this.
pub(super) fn published_diagnostics(
    call: &Call<'_>,
    wanted: Option<&str>,
) -> Result<(Vec<Value>, bool), CommandError> {
    let service = call.service;
    let Some(host) = &service.code.host else { return Ok((Vec::new(), true)) };
    let servers = service.code_servers()?;
    let config = call.snapshot.analysis.config();
    let root = service.store.root();
    let mut items = Vec::new();
    let mut complete = true;
    for server in servers.iter() {
        let name = server.name();
        // A server that is not running has published nothing, and is not started for this.
        if host.readiness(name).is_some() {
            let timeout = service.launch(server).map_or(Duration::ZERO, |s| s.timeouts.request);
            if service.await_ready(name, timeout).is_err() {
                complete = false;
            }
        }
        let encoding = service.code_encoding(name);
        let mut texts = Texts::new(service);
        let publications = {
            let _shared = service.not_speculating();
            host.publications(name)
        };
        for (file, publication) in publications {
            let Some(rel) = crate::scan::relative(root, &file) else { continue };
            // Only the files this server covers now.
            match codefiles::route(config, &servers, &rel) {
                Ok(Owner::Server { server, .. }) if server == name => {}
                _ => continue,
            }
            let uri = crate::ide::file_uri(&file);
            for d in &publication.diagnostics {
                let item = code_diagnostic(&mut texts, &uri, &rel, name, d, encoding);
                if wanted.is_none_or(|w| item["severity"] == w) {
                    items.push(item);
                }
            }
        }
    }
    Ok((items, complete))
}

/// A server's diagnostic of the file at store path `path` (`uri`) as the `diagnostics` tool
/// shows it.
fn code_diagnostic(
    texts: &mut Texts<'_>,
    uri: &str,
    path: &str,
    server: &str,
    d: &Value,
    encoding: Encoding,
) -> Value {
    let mut item = json!({
        "path": path,
        "range": texts.range(uri, &d["range"], encoding),
        "severity": severity(&d["severity"]),
        "message": d["message"],
        "server": server,
    });
    if let Some(code) = d.get("code").filter(|c| !c.is_null()) {
        item["code"] = code.clone();
    }
    if let Some(source) = d.get("source").filter(|c| !c.is_null()) {
        item["source"] = source.clone();
    }
    item
}

/// `incoming_calls` / `outgoing_calls`: the call hierarchy item at the position, then its
/// callers or callees.
pub(super) fn calls(call: &Call<'_>, target: &CodeTarget, incoming: bool) -> CommandResult {
    let mut texts = Texts::new(call.service);
    let (params, text) = text_position(call.service, target, &call.args, &mut texts)?;
    let prepared =
        call.service.ask_when_ready(target, &text, "textDocument/prepareCallHierarchy", &params)?;
    let encoding = call.service.code_encoding(target.server());
    let mut items = Vec::new();
    let mut indexing = prepared.indexing;
    let (method, side) = if incoming {
        ("callHierarchy/incomingCalls", "from")
    } else {
        ("callHierarchy/outgoingCalls", "to")
    };
    for item in as_list(&prepared.result) {
        let host = call.service.host(target.server())?;
        let answer = host.request(&target.spec, method, json!({"item": item}))?;
        indexing |= answer.indexing;
        for c in as_list(&answer.result) {
            let other = &c[side];
            let uri = other["uri"].as_str().unwrap_or_default().to_owned();
            // `fromRanges` are in the caller's file for incoming calls, in this item's file
            // for outgoing ones.
            let ranges_uri =
                if incoming { uri.clone() } else { item["uri"].as_str().unwrap_or("").to_owned() };
            let ranges: Vec<Value> = as_list(&c["fromRanges"])
                .iter()
                .map(|r| texts.range(&ranges_uri, r, encoding))
                .collect();
            items.push(json!({
                side: {
                    "name": other["name"],
                    "kind": symbol_kind(&other["kind"]),
                    "detail": other.get("detail").cloned().unwrap_or(Value::Null),
                    "path": texts.file(&uri).0,
                    "range": texts.range(&uri, &other["selectionRange"], encoding),
                    "server": target.server(),
                },
                "ranges": ranges,
            }));
        }
    }
    items.sort_by_key(|v| location_key(&v[side]));
    let mut out = page::page("calls", items, &call.args)?;
    out["server"] = json!(target.server());
    out["readiness"] = json!(if indexing { "indexing" } else { "ready" });
    out["complete"] = json!(!indexing);
    Ok(out)
}

pub(super) fn prepare_rename(call: &Call<'_>, target: &CodeTarget) -> CommandResult {
    let mut texts = Texts::new(call.service);
    let (params, text) = text_position(call.service, target, &call.args, &mut texts)?;
    let answer =
        call.service.code_request_with(target, &text, "textDocument/prepareRename", params)?;
    let encoding = call.service.code_encoding(target.server());
    let uri = uri_of(target);
    let rename = match &answer.result {
        Value::Null => Value::Null,
        result => {
            let (range, placeholder) = match result.get("range") {
                Some(range) => (range.clone(), result.get("placeholder").cloned()),
                None if result.get("start").is_some() => (result.clone(), None),
                // `{defaultBehavior: true}`: the word at the position.
                None => (Value::Null, None),
            };
            let range =
                if range.is_null() { Value::Null } else { texts.range(&uri, &range, encoding) };
            json!({"path": target.path, "range": range, "placeholder": placeholder, "server": target.server()})
        }
    };
    Ok(tagged(json!({"rename": rename}), target, &answer))
}

/// `server_status {server?}`: every configured server (or the one named), whether it may
/// start, and what the host knows of it.
pub(super) fn server_status(call: &mut Call<'_>) -> CommandResult {
    let service = call.service;
    let only = call.args.get("server").and_then(Value::as_str);
    let servers = service.code_servers()?;
    if let Some(name) = only
        && servers.get(name).is_none()
    {
        return Err(unknown_server(name, &servers).into());
    }
    let running: Vec<Value> = service.code.host.as_ref().map(|h| h.status()).unwrap_or_default();
    let items: Vec<Value> = servers
        .iter()
        .filter(|s| only.is_none_or(|o| o == s.name()))
        .map(|s| {
            let mut out = running
                .iter()
                .find(|r| r["name"] == s.name())
                .cloned()
                .unwrap_or_else(|| json!({"name": s.name(), "state": "idle"}));
            out["origin"] = json!(match s.origin {
                codefiles::Origin::User => "user",
                codefiles::Origin::Store => "store",
            });
            out["command"] = json!(s.config.command);
            out["languages"] = json!(s.config.languages);
            match service.launch(s) {
                Ok(spec) => out["program"] = json!(spec.command),
                Err(err) => {
                    if out["state"] == "idle" {
                        out["state"] = json!(err.code().as_str());
                    }
                    out["error"] = err.to_json(&call.snapshot.analysis);
                }
            }
            out
        })
        .collect();
    let mut out = page::page("servers", items, &call.args)?;
    out["shadowed"] = json!(servers.shadowed());
    Ok(out)
}

pub(super) fn server_restart(call: &mut Call<'_>) -> CommandResult {
    let service = call.service;
    let name = call.text("server");
    let servers = service.code_servers()?;
    let server = servers.get(&name).ok_or_else(|| unknown_server(&name, &servers))?;
    let spec = service.launch(server)?;
    let host = service.host(&name)?;
    let status = host.restart(&spec)?;
    Ok(json!({"server": status}))
}

fn unknown_server(name: &str, servers: &Servers) -> Error {
    let names: Vec<&str> = servers.iter().map(|s| s.name()).collect();
    Error::NotFound(format!(
        "no language server is named '{name}'; the configured servers are: {}",
        if names.is_empty() { "none".to_owned() } else { names.join(", ") }
    ))
}

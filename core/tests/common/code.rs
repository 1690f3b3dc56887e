//! A `CodeHost` double for the core's code-file tests: canned LSP JSON by method, a record
//! of every request, and a store whose `.py` and `.txt` files the user's `[servers.canned]`
//! serves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use expect_test::Expect;
use serde_json::{Value, json};
use stardust_core::codefiles::{
    Activity, CodeAnswer, CodeError, CodeEvent, CodeHost, LaunchSpec, Publication, Readiness,
};
use stardust_core::service::{Front, Service, Session};
use stardust_core::text::Encoding;

use super::{open, write};

/// A language server's side of the interface, canned: answers by method (`hover` echoes the
/// position it was asked at and the text it holds, when no answer is canned), the diagnostics it
/// "published", and a record of every request.
#[derive(Default)]
pub struct Canned {
    pub encoding: Option<Encoding>,
    pub capabilities: Value,
    pub answers: BTreeMap<String, Value>,
    /// What was published for a file: for how many versions before the current one (0: for
    /// the text it was last given), and the diagnostics.
    pub published: Mutex<BTreeMap<PathBuf, (i64, Vec<Value>)>>,
    pub texts: Mutex<BTreeMap<PathBuf, (String, i64)>>,
    pub requests: Mutex<Vec<(String, Value)>>,
    /// Every text the host was given, in order.
    pub texts_given: Mutex<Vec<String>>,
    /// When set, `textDocument/diagnostic` answers what this finds in the file's text as
    /// the host holds it (a server that checks the text it was given).
    pub diagnose: Option<fn(&str) -> Vec<Value>>,
    /// A method the server fails (`server-unavailable`, as when it crashed mid-request).
    pub failing: Option<&'static str>,
    /// A method the server answers with an error response (`internal`), as tsserver answers
    /// `workspace/symbol` while no file of a project is open.
    pub refusing: Option<&'static str>,
    /// When set, the server publishes (push) what this finds in each text it is given, and
    /// says what it is doing ([`CodeHost::activity`]): a server like pyright.
    pub push: Option<fn(&str) -> Vec<Value>>,
    /// Which texts the pushing server checks in stages: given one, it first publishes the
    /// file's previous diagnostics under the new version and is at work, and publishes its
    /// findings (and reports its work done) only once asked for its activity
    /// [`STAGE_POLLS`] times. Other texts are checked at once.
    pub staged: Option<fn(&str) -> bool>,
    /// Given a text this finds, the pushing server's connection closes (it crashed).
    pub stops_on: Option<fn(&str) -> bool>,
    /// The pushing server never finishes a staged check (its work never ends).
    pub stalls: bool,
    pub work: Mutex<Work>,
    /// `publication <file name>` for each publication read, `sync <text>` for each text
    /// given, in order.
    pub log: Mutex<Vec<String>>,
    /// How many more looks at its readiness answer `indexing` (SPEC §25) before it is not
    /// said any more (0: never indexing; `u32::MAX`: indexing forever).
    pub indexing_polls: Mutex<u32>,
    /// The server's work ends just as it is looked at, every time: its readiness is
    /// `indexing` (within `READY_SETTLE` of the end), and an answer is given ready.
    pub work_just_ended: bool,
}

/// How many looks at its activity the pushing double takes to finish a staged check.
pub const STAGE_POLLS: u32 = 3;

/// The pushing double's clock and its work in progress.
#[derive(Default)]
pub struct Work {
    clock: u64,
    done_at: u64,
    /// Looks at its activity left before the staged check is done.
    pending: u32,
    /// The files of the staged check.
    dirty: Vec<PathBuf>,
    /// Where on the clock each file's publication arrived.
    at: BTreeMap<PathBuf, u64>,
    stopped: Option<String>,
}

impl Canned {
    pub fn with(mut self, method: &str, answer: Value) -> Canned {
        self.answers.insert(method.to_owned(), answer);
        self
    }
}

pub fn uri_path(uri: &str) -> PathBuf {
    PathBuf::from(uri.strip_prefix("file://").unwrap())
}

impl CodeHost for Canned {
    fn request(
        &self,
        _spec: &LaunchSpec,
        method: &str,
        params: Value,
    ) -> Result<CodeAnswer, CodeError> {
        self.requests.lock().unwrap().push((method.to_owned(), params.clone()));
        if self.failing == Some(method) {
            return Err(CodeError {
                code: stardust_core::Code::ServerUnavailable,
                message: "canned exited while answering".into(),
                server: "canned".into(),
            });
        }
        if self.refusing == Some(method) {
            return Err(CodeError {
                code: stardust_core::Code::Internal,
                message: format!("canned answered {method} with error 1: No Project."),
                server: "canned".into(),
            });
        }
        let result = match self.answers.get(method) {
            Some(answer) => answer.clone(),
            None if method == "textDocument/diagnostic" && self.diagnose.is_some() => {
                let file = uri_path(params["textDocument"]["uri"].as_str().unwrap());
                let text = self.texts.lock().unwrap().get(&file).map(|t| t.0.clone());
                json!({"kind": "full", "items": (self.diagnose.unwrap())(&text.unwrap_or_default())})
            }
            None if method == "textDocument/hover" => {
                let file = uri_path(params["textDocument"]["uri"].as_str().unwrap());
                let text = self.texts.lock().unwrap().get(&file).map(|t| t.0.clone());
                let at = &params["position"];
                let end =
                    json!({"line": at["line"], "character": at["character"].as_u64().unwrap() + 1});
                json!({"contents": {"kind": "plaintext", "value": text}, "range": {"start": at, "end": end}})
            }
            None => {
                return Err(CodeError {
                    code: stardust_core::Code::Unsupported,
                    message: format!("canned server has no {method}"),
                    server: "canned".into(),
                });
            }
        };
        Ok(CodeAnswer { result, indexing: false })
    }

    fn sync(&self, _: &LaunchSpec, path: &Path, _: &str, text: &str) -> Result<(), CodeError> {
        self.texts_given.lock().unwrap().push(text.to_owned());
        self.log.lock().unwrap().push(format!("sync {text}"));
        let mut texts = self.texts.lock().unwrap();
        let entry = texts.entry(path.to_owned()).or_insert_with(|| (String::new(), 0));
        if entry.0 != text || entry.1 == 0 {
            *entry = (text.to_owned(), entry.1 + 1);
            drop(texts);
            self.pushed(path, text);
        }
        Ok(())
    }

    fn close(&self, _: &str, path: &Path) {
        self.texts.lock().unwrap().remove(path);
    }

    fn encoding(&self, _: &str) -> Option<Encoding> {
        self.encoding
    }

    fn capabilities(&self, _: &str) -> Option<Value> {
        Some(self.capabilities.clone())
    }

    fn published(&self, _: &str, path: &Path) -> Option<(Option<i64>, Vec<Value>)> {
        let (behind, items) = self.published.lock().unwrap().get(path).cloned()?;
        Some((self.version("canned", path).map(|v| v - behind), items))
    }

    fn version(&self, _: &str, path: &Path) -> Option<i64> {
        self.texts.lock().unwrap().get(path).map(|t| t.1)
    }

    fn publication(&self, server: &str, path: &Path) -> Option<Publication> {
        let name = path.file_name().unwrap().to_string_lossy();
        self.log.lock().unwrap().push(format!("publication {name}"));
        let at = self.work.lock().unwrap().at.get(path).copied().unwrap_or(0);
        let (version, diagnostics) = self.published(server, path)?;
        Some(Publication { version, diagnostics, at })
    }

    fn activity(&self, _: &str) -> Option<Activity> {
        if self.work_just_ended {
            let now = std::time::Instant::now();
            let start = now - std::time::Duration::from_secs(1);
            return Some(Activity {
                reports: true,
                initialized: Some(start),
                first_published: Some(start),
                work_changed: Some(now),
                last_heard: Some(now),
                ..Activity::default()
            });
        }
        let push = self.push?;
        let mut work = self.work.lock().unwrap();
        if work.pending > 0 && !self.stalls {
            work.pending -= 1;
            if work.pending == 0 {
                for path in std::mem::take(&mut work.dirty) {
                    let text = self.texts.lock().unwrap()[&path].0.clone();
                    work.clock += 1;
                    let at = work.clock;
                    work.at.insert(path.clone(), at);
                    self.published.lock().unwrap().insert(path, (0, push(&text)));
                }
                work.clock += 1;
                work.done_at = work.clock;
            }
        }
        Some(Activity {
            busy: work.pending > 0,
            reports: true,
            done_at: work.done_at,
            last_heard: None,
            stopped: work.stopped.clone(),
            ..Activity::default()
        })
    }

    fn readiness(&self, server: &str) -> Option<(Readiness, std::time::Instant)> {
        if self.work_just_ended {
            let now = std::time::Instant::now();
            return Some(stardust_core::codefiles::readiness(&self.activity(server)?, now));
        }
        let mut left = self.indexing_polls.lock().unwrap();
        match *left {
            0 => None,
            u32::MAX => Some((Readiness::Indexing, std::time::Instant::now())),
            n => {
                *left = n - 1;
                Some((Readiness::Indexing, std::time::Instant::now()))
            }
        }
    }

    fn publications(&self, server: &str) -> Vec<(PathBuf, Publication)> {
        let paths: Vec<PathBuf> = self.published.lock().unwrap().keys().cloned().collect();
        paths
            .into_iter()
            .filter_map(|path| {
                let (version, diagnostics) = self.published(server, &path)?;
                Some((path, Publication { version, diagnostics, at: 0 }))
            })
            .collect()
    }

    fn status(&self) -> Vec<Value> {
        Vec::new()
    }

    fn restart(&self, _: &LaunchSpec) -> Result<Value, CodeError> {
        Ok(json!({}))
    }

    fn subscribe(&self) -> Receiver<CodeEvent> {
        std::sync::mpsc::channel().1
    }

    fn shutdown(&self) {}
}

impl Canned {
    /// The pushing server was given `text` for `path` (a new version): it publishes, at once
    /// or in stages.
    fn pushed(&self, path: &Path, text: &str) {
        let Some(push) = self.push else { return };
        let mut work = self.work.lock().unwrap();
        if self.stops_on.is_some_and(|stops| stops(text)) {
            work.stopped = Some("canned crashed".into());
        }
        work.clock += 1;
        let at = work.clock;
        work.at.insert(path.to_owned(), at);
        let mut published = self.published.lock().unwrap();
        if self.staged.is_some_and(|staged| staged(text)) {
            let before = published.get(path).map(|p| p.1.clone()).unwrap_or_default();
            published.insert(path.to_owned(), (0, before));
            work.pending = STAGE_POLLS;
            work.dirty.push(path.to_owned());
        } else {
            published.insert(path.to_owned(), (0, push(text)));
            work.clock += 1;
            work.done_at = work.clock;
        }
    }
}

/// A store (canonical path) whose `.py` and `.txt` files the user's `[servers.canned]` serves,
/// and a folder outside it.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub store: PathBuf,
    pub outside: PathBuf,
    pub config: PathBuf,
}

pub fn fixture(files: &[(&str, &str)]) -> Fixture {
    fixture_with(files, "")
}

/// [`fixture`] with `extra` keys in the `[servers.canned]` table (`timeouts = ...`).
pub fn fixture_with(files: &[(&str, &str)], extra: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let store = base.join("store");
    write(&store, "stardust.toml", "[store]\n");
    for (rel, text) in files {
        write(&store, rel, text);
    }
    let config = base.join("config");
    // The command is never run (the host is canned), but must be an executable file. Lazy:
    // what each test gives the server is its own (the warm-up has tests of its own).
    let command = std::env::current_exe().unwrap();
    write(
        &config,
        "servers.toml",
        &format!(
            "[servers.canned]\ncommand = {:?}\nlanguages = {{ py = \"python\", txt = \"plaintext\" }}\nstart = \"lazy\"\n{extra}",
            command.to_str().unwrap()
        ),
    );
    let outside = base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    Fixture { _dir: dir, store, outside, config }
}

impl Fixture {
    pub fn service(&self, host: Canned) -> (Service, Session, Arc<Canned>) {
        let host = Arc::new(host);
        let service = Service::new(open(&self.store))
            .with_code_config_dir(Some(self.config.clone()))
            .with_code_host(host.clone());
        let session = service.open_session(Front::Mcp, "test-agent");
        (service, session, host)
    }

    pub fn uri(&self, rel: &str) -> String {
        format!("file://{}", self.store.join(rel).display())
    }
}

pub fn run(service: &Service, session: &Session, tool: &str, args: Value) -> Value {
    service.execute(session, tool, args.clone()).unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

pub fn check(actual: &Value, expected: Expect) {
    expected.assert_eq(&serde_json::to_string_pretty(actual).unwrap());
}

pub fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
    json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}})
}

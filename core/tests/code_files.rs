//! Code files through the core without a transport (SPEC §17): the editor buffers of code
//! files (held, changed in order with the documents' rule, closed), the texts answers are
//! converted with, and the rules the LSP relay reaches through the core (diagnostics merged
//! from pull and push, workspace symbols per server), against a fake `CodeHost`.

mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use common::{open, write};
use serde_json::{Value, json};
use stardust_core::Code;
use stardust_core::codefiles::{CodeAnswer, CodeError, CodeEvent, CodeHost, LaunchSpec, Origin};
use stardust_core::service::code::{CodeTarget, Edit, Edited};
use stardust_core::service::{Front, Service, Session};
use stardust_core::text::{Encoding, LineIndex, Position};

/// A host that records what it is asked and answers what the test set.
#[derive(Default)]
struct FakeHost {
    calls: Mutex<Vec<String>>,
    capabilities: Mutex<Value>,
    pulled: Mutex<Vec<Value>>,
    published: Mutex<Vec<Value>>,
}

impl FakeHost {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

impl CodeHost for FakeHost {
    fn request(&self, spec: &LaunchSpec, method: &str, _: Value) -> Result<CodeAnswer, CodeError> {
        self.record(format!("request {} {method}", spec.name));
        match method {
            "textDocument/diagnostic" => Ok(CodeAnswer {
                result: json!({"kind": "full", "items": *self.pulled.lock().unwrap()}),
                indexing: false,
            }),
            _ => Err(CodeError {
                code: Code::Unsupported,
                message: format!("{method} is not faked"),
                server: spec.name.clone(),
            }),
        }
    }

    fn sync(&self, spec: &LaunchSpec, path: &Path, _: &str, text: &str) -> Result<(), CodeError> {
        self.record(format!("sync {} {} {text:?}", spec.name, path.file_name().unwrap().display()));
        Ok(())
    }

    fn close(&self, server: &str, path: &Path) {
        self.record(format!("close {server} {}", path.display()));
    }

    fn encoding(&self, _: &str) -> Option<Encoding> {
        Some(Encoding::Utf16)
    }

    fn capabilities(&self, _: &str) -> Option<Value> {
        Some(self.capabilities.lock().unwrap().clone())
    }

    fn published(&self, _: &str, _: &Path) -> Option<(Option<i64>, Vec<Value>)> {
        Some((Some(1), self.published.lock().unwrap().clone()))
    }

    fn version(&self, _: &str, _: &Path) -> Option<i64> {
        Some(1)
    }

    fn status(&self) -> Vec<Value> {
        Vec::new()
    }

    fn restart(&self, spec: &LaunchSpec) -> Result<Value, CodeError> {
        Ok(json!({"name": spec.name}))
    }

    fn subscribe(&self) -> Receiver<CodeEvent> {
        std::sync::mpsc::channel().1
    }

    fn shutdown(&self) {}
}

/// A store whose own (untrusted) table names a server for `.fk` files, with `app.fk` on disk.
fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "stardust.toml",
        "[servers.fake]\ncommand = \"/bin/sh\"\nlanguages = { fk = \"fake\" }\n",
    );
    write(dir.path(), "app.fk", "on disk\n");
    dir
}

fn service(root: &Path) -> (Service, Arc<FakeHost>) {
    let host = Arc::new(FakeHost::default());
    (Service::new(open(root)).with_code_host(host.clone()), host)
}

/// A target for `app.fk` as if its server could start (the tests' store table is untrusted).
fn target(service: &Service) -> CodeTarget {
    let root = service.store().root().to_owned();
    CodeTarget {
        path: "app.fk".into(),
        root: stardust_core::ide::Root::Store,
        file: root.join("app.fk"),
        language_id: "python".into(),
        spec: LaunchSpec {
            name: "fake".into(),
            origin: Origin::User,
            command: PathBuf::from("/bin/sh"),
            args: Vec::new(),
            root,
            languages: Default::default(),
            initialization_options: None,
            settings: Value::Null,
            root_markers: Vec::new(),
            timeouts: Default::default(),
            max_restarts: 3,
            start: Default::default(),
            idle_stop: std::time::Duration::from_secs(900),
        },
    }
}

type Range = ((u32, u32), (u32, u32));

/// Ranges as (line, column) pairs in UTF-16, resolved against the text at each edit.
fn resolve(index: &LineIndex, text: &str, range: &Range) -> Option<std::ops::Range<u32>> {
    let at = |(line, column)| index.offset(text, Position { line, column }, Encoding::Utf16);
    Some(at(range.0)?..at(range.1)?)
}

fn splice(range: Range, text: &str) -> Edit<Range> {
    Edit::Splice { range, text: text.to_owned() }
}

fn text_of(service: &Service, given: &str) -> String {
    service.code_file_text(given).map(|t| t.to_string()).unwrap_or_else(|| "<none>".into())
}

fn editor(service: &Service) -> Session {
    service.open_session(Front::Lsp, "editor")
}

#[test]
fn an_editor_buffer_is_what_every_session_reads_until_the_editor_closes_it() {
    let dir = store();
    let (service, host) = service(dir.path());
    let editor = editor(&service);
    let uri = stardust_core::ide::file_uri(&dir.path().canonicalize().unwrap().join("app.fk"));
    assert_eq!(text_of(&service, "app.fk"), "on disk\n");
    // Held although its server may not start: a server trusted later gets the editor's text.
    assert_eq!(service.code_target("app.fk").unwrap_err().code(), Code::Untrusted);
    service.code_open(&editor, "app.fk", "a😀b\nc\n");
    assert_eq!(text_of(&service, "app.fk"), "a😀b\nc\n");
    assert_eq!(text_of(&service, &uri), "a😀b\nc\n", "a URI names the same buffer");
    // In order, each against the text the previous one left: the emoji is two UTF-16 units.
    let edits = [
        splice(((0, 3), (0, 4)), "B"),
        splice(((1, 0), (1, 1)), "C!"),
        splice(((1, 2), (1, 2)), "?"),
    ];
    assert_eq!(service.code_change(&editor, "app.fk", edits, resolve), Edited::Applied);
    assert_eq!(text_of(&service, "app.fk"), "a😀B\nC!?\n");
    // A range outside the text is refused with what follows it; what came before stands.
    let edits = [
        Edit::Replace("x\ny\n".to_owned()),
        splice(((5, 0), (5, 1)), "never"),
        splice(((0, 0), (0, 0)), "after"),
    ];
    assert_eq!(service.code_change(&editor, "app.fk", edits, resolve), Edited::Refused(1));
    assert_eq!(text_of(&service, "app.fk"), "x\ny\n");
    // Inside a surrogate pair is not a position.
    service.code_open(&editor, "app.fk", "😀");
    let edits = [splice(((0, 1), (0, 1)), "x")];
    assert_eq!(service.code_change(&editor, "app.fk", edits, resolve), Edited::Refused(0));
    // Only a session that holds the file changes it.
    let agent = service.open_session(Front::Mcp, "agent");
    let edits = [Edit::<Range>::Replace("agent".into())];
    assert_eq!(service.code_change(&agent, "app.fk", edits, resolve), Edited::NotOpen);
    service.code_close(&agent, "app.fk");
    assert_eq!(
        text_of(&service, "app.fk"),
        "😀",
        "an agent's close does not end the editor's buffer"
    );
    service.code_close(&editor, "app.fk");
    assert_eq!(text_of(&service, "app.fk"), "on disk\n");
    // Nothing was sent to a server: it may not start, so it was never given the file.
    assert_eq!(host.calls(), Vec::<String>::new());
}

#[test]
fn a_buffer_two_editors_hold_lasts_until_both_close_it_or_their_sessions_end() {
    let dir = store();
    let (service, _) = service(dir.path());
    let (first, second) = (editor(&service), editor(&service));
    service.code_open(&first, "app.fk", "one");
    service.code_open(&second, "app.fk", "two");
    service.code_close(&first, "app.fk");
    assert_eq!(text_of(&service, "app.fk"), "two");
    service.close_session(&second);
    assert_eq!(text_of(&service, "app.fk"), "on disk\n");
}

#[test]
fn files_outside_the_store_are_read_from_disk_and_unreadable_ones_have_no_text() {
    let dir = store();
    let (service, _) = service(dir.path());
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "lib.fki", "def f() -> int: ...\n");
    let lib = outside.path().join("lib.fki");
    assert_eq!(text_of(&service, lib.to_str().unwrap()), "def f() -> int: ...\n");
    assert_eq!(text_of(&service, &stardust_core::ide::file_uri(&lib)), "def f() -> int: ...\n");
    write(dir.path(), "blob.fk", "");
    std::fs::write(dir.path().join("blob.fk"), [0xff, 0xfe]).unwrap();
    assert_eq!(text_of(&service, "blob.fk"), "<none>", "not UTF-8");
    assert_eq!(text_of(&service, "missing.fk"), "<none>");
}

#[test]
fn a_code_file_is_read_again_whenever_it_changed_and_kept_while_it_did_not() {
    let dir = store();
    let (service, _) = service(dir.path());
    // Rewritten at once with the same size: within one tick of the file times, so the stamp
    // alone could not tell; a file this fresh is always read again.
    assert_eq!(text_of(&service, "app.fk"), "on disk\n");
    std::fs::write(dir.path().join("app.fk"), "on DISK\n").unwrap();
    assert_eq!(text_of(&service, "app.fk"), "on DISK\n");
    // Once the file is older than the racy window, an unchanged file is read once...
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let first = service.code_file_text("app.fk").unwrap();
    let second = service.code_file_text("app.fk").unwrap();
    assert!(Arc::ptr_eq(&first, &second), "the second request read the file again");
    // ...and a rewrite of the same size is seen at once.
    std::fs::write(dir.path().join("app.fk"), "on disc\n").unwrap();
    assert_eq!(text_of(&service, "app.fk"), "on disc\n");
}

#[test]
fn syncing_gives_the_server_the_editor_text_else_the_disk() {
    let dir = store();
    let (service, host) = service(dir.path());
    let target = target(&service);
    service.code_sync(&target).unwrap();
    let editor = editor(&service);
    service.code_open(&editor, "app.fk", "edited");
    service.code_sync(&target).unwrap();
    assert_eq!(host.calls(), ["sync fake app.fk \"on disk\\n\"", "sync fake app.fk \"edited\""]);
}

#[test]
fn diagnostics_are_pulled_where_offered_and_merged_with_the_pushed_ones() {
    let dir = store();
    let (service, host) = service(dir.path());
    let target = target(&service);
    let d = |line: u32, message: &str| {
        json!({"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}},
               "severity": 1, "message": message})
    };
    *host.published.lock().unwrap() = vec![d(0, "pushed"), d(1, "both")];
    // A server that only pushes: what it published for the text it was given.
    let answer = service.code_diagnostics(&target).unwrap();
    assert_eq!(answer.result, json!([d(0, "pushed"), d(1, "both")]));
    assert!(!host.calls().iter().any(|c| c.contains("textDocument/diagnostic")));
    // One that offers pull too: pulled first, pushed ones added once.
    *host.capabilities.lock().unwrap() =
        json!({"diagnosticProvider": {"interFileDependencies": true}});
    *host.pulled.lock().unwrap() = vec![d(1, "both"), d(2, "pulled")];
    let answer = service.code_diagnostics(&target).unwrap();
    assert_eq!(answer.result, json!([d(1, "both"), d(2, "pulled"), d(0, "pushed")]));
    assert!(host.calls().contains(&"request fake textDocument/diagnostic".to_owned()));
}

#[test]
fn workspace_symbols_skip_a_server_that_may_not_start_and_say_why() {
    let dir = store();
    let (service, host) = service(dir.path());
    let symbols = service.code_workspace_symbols("Price", None).unwrap();
    assert!(symbols.found.is_empty());
    let skipped: Vec<(&str, Code)> =
        symbols.skipped.iter().map(|(s, e)| (s.as_str(), e.code())).collect();
    assert_eq!(skipped, [("fake", Code::Untrusted)]);
    assert!(host.calls().is_empty(), "nothing is asked of a server that may not start");
    let only = service.code_workspace_symbols("Price", Some("other")).unwrap();
    assert!(only.found.is_empty() && only.skipped.is_empty());
}

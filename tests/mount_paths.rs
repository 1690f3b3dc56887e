//! End-to-end tests of mount paths (SPEC §12, §13, §15): `stardust serve STORE --mount MNT`,
//! an editor started inside the mount and rooted there, and an agent, all real processes on
//! one core. The editor names documents by their mount paths and gets every answer in that
//! form; the agent addresses them by mount paths too.

mod util;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::Receiver;
use std::time::Instant;

use serde_json::{Value, json};
use util::TIMEOUT;
use util::lsp::Lsp;

/// An editor: `stardust lsp` started with no `--store` in `cwd`.
fn editor(cwd: &Path) -> Lsp {
    Lsp::start(cwd, cwd, None)
}

/// An agent over `stardust mcp --store STORE FLAGS`, newline-delimited JSON-RPC.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
}

impl Agent {
    fn open(store: &Path, flags: &[&str]) -> Agent {
        let mut child = util::front("mcp", store, flags);
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(serde_json::from_str::<Value>(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        let mut agent = Agent { child, stdin, incoming, next_id: 1 };
        agent.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "mount-agent", "version": "1.0"}}),
        );
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        writeln!(agent.stdin, "{initialized}").unwrap();
        agent
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.incoming.recv_timeout(left).expect("an answer before the timeout");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Call a tool: `(isError, structuredContent)`, or for an error `{"error": ...}` as the
    /// content carries it.
    fn call(&mut self, tool: &str, args: Value) -> (bool, Value) {
        let response = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &response["result"];
        assert!(result.is_object(), "{tool}: {response}");
        if result["isError"] == true {
            return (true, json!({"error": util::mcp::tool_error(result)}));
        }
        (false, result["structuredContent"].clone())
    }

    fn ok(&mut self, tool: &str, args: Value) -> Value {
        let (failed, content) = self.call(tool, args);
        assert!(!failed, "{tool}: {content}");
        content
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The first LSP position (0-based, UTF-16) of `needle` in `text`.
fn lsp_position(text: &str, needle: &str) -> Value {
    let at = text.find(needle).expect("the needle is in the text");
    let line = text[..at].matches('\n').count();
    let column = text[..at].rsplit('\n').next().unwrap().encode_utf16().count();
    json!({"line": line, "character": column})
}

const NEW_ONE: &str = "id      book/new-one\ntype    book\ntitle   'New One'\n\
                       author  @person/nobody-yet\nyear    2026\nstatus  draft\n";

#[test]
fn an_editor_and_an_agent_in_the_mount_are_answered_in_mount_paths() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mnt, serve) = util::mounted_library(dir.path());
    let mnt = mnt.canonicalize().unwrap();

    // The editor is started inside the mount, as an editor opening MNT would start it: it
    // finds the store through the mount's .stardust/store.json and attaches to the core.
    let mut editor = editor(&mnt.join("books"));
    let notifications = json!(["documentsChanged", "entitiesChanged"]);
    editor.request(
        "initialize",
        json!({
            "rootUri": uri(&mnt),
            "workspaceFolders": [{"uri": uri(&mnt), "name": "mnt"}],
            "capabilities": {"experimental": {"stardust": {"notifications": notifications}}},
            "clientInfo": {"name": "mount-editor"},
        }),
    );
    editor.notify("initialized", json!({}));

    // An existing document opened by its mount path is diagnosed, and its locations are in
    // the mount.
    let dune_uri = uri(&mnt.join("books/dune.dust"));
    let dune = std::fs::read_to_string(mnt.join("books/dune.dust")).unwrap();
    editor.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": dune_uri, "languageId": "dust", "version": 1, "text": dune}}),
    );
    assert_eq!(editor.published(&dune_uri, 1), Vec::<Value>::new(), "the library is clean");
    let definition = editor.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": dune_uri},
               "position": lsp_position(&dune, "person/frank-herbert")}),
    );
    let target = definition.as_array().map_or(&definition, |l| &l[0]);
    assert_eq!(target["uri"], uri(&mnt.join("people/frank-herbert.dust")), "{definition}");

    // Edits name the mount too: renaming the author edits every document naming it there.
    let edit = editor.request(
        "textDocument/rename",
        json!({"textDocument": {"uri": dune_uri},
               "position": lsp_position(&dune, "person/frank-herbert"),
               "newName": "person/f-herbert"}),
    );
    let changed: Vec<&String> = edit["changes"].as_object().unwrap().keys().collect();
    assert!(changed.contains(&&uri(&mnt.join("people/frank-herbert.dust"))), "{changed:?}");
    assert!(changed.contains(&&dune_uri), "{changed:?}");
    assert!(changed.iter().all(|u| u.starts_with(&uri(&mnt))), "{changed:?}");

    // A new document that exists only in the editor, with a reference to nobody yet.
    let new_uri = uri(&mnt.join("books/new-one.dust"));
    editor.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": new_uri, "languageId": "dust", "version": 1, "text": NEW_ONE}}),
    );
    let diagnostics = editor.published(&new_uri, 1);
    let codes: Vec<&str> = diagnostics.iter().filter_map(|d| d["code"].as_str()).collect();
    assert_eq!(codes, ["dangling-ref"], "{diagnostics:?}");
    assert!(!mnt.join("books/new-one.dust").exists(), "an open buffer is not saved");

    // The agent, on the same core, creates the missing person and confirms.
    let mut agent = Agent::open(&store, &["--allow-mutation"]);
    let preview = agent.ok(
        "entity_create",
        json!({"entities": ["id person/nobody-yet type person name 'Nobody Yet' roles [author]"]}),
    );
    assert_eq!(preview["committable"], true, "{preview}");
    let committed = agent.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    let seq = committed["seq"].clone();

    // The editor hears of it, in mount URIs, and its unsaved buffer is re-diagnosed clean.
    // (The core sends documentsChanged, then entitiesChanged, then the new diagnostics.)
    let heard = editor.wait(|m| m["method"] == "stardust/documentsChanged");
    let document = &heard["params"]["documents"][0];
    assert_eq!(document["path"], "people/nobody-yet.dust", "{heard}");
    assert_eq!(document["uri"], uri(&mnt.join("people/nobody-yet.dust")), "{heard}");
    let heard = editor.wait(|m| m["method"] == "stardust/entitiesChanged");
    let created = json!([{"id": "person/nobody-yet", "change": "created"}]);
    assert_eq!(heard["params"]["entities"], created);
    assert_eq!(heard["params"]["seq"], seq);
    editor.wait(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == new_uri
            && m["params"]["diagnostics"] == json!([])
    });
    assert!(mnt.join("people/nobody-yet.dust").is_file(), "the mount shows the commit");

    // The agent addresses documents by mount paths too, plain or as file URIs.
    let at = json!({"line": 6, "column": 14});
    for path in [mnt.join("books/dune.dust").display().to_string(), dune_uri.clone()] {
        let hover = agent.ok("hover", json!({"path": path, "position": at}));
        assert!(hover.to_string().contains("Frank Herbert"), "{path}: {hover}");
    }
    let (failed, error) = agent.call(
        "hover",
        json!({"path": format!("{}/books/du\u{0}ne.dust", mnt.display()), "position": at}),
    );
    assert!(failed, "{error}");
    assert_eq!(error["error"]["code"], "invalid-arguments", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("NUL byte"), "{message}");
    let (failed, error) = agent.call(
        "hover",
        json!({"path": format!("{}/books/../../x.dust", mnt.display()), "position": at}),
    );
    assert!(failed, "{error}");
    assert_eq!(error["error"]["code"], "outside-store", "{error}");
    // A mount path that names no document is answered with its store path.
    let missing = mnt.join("books/nothing.dust").display().to_string();
    let (failed, error) = agent.call("hover", json!({"path": missing, "position": at}));
    assert!(failed, "{error}");
    assert_eq!(error["error"]["code"], "not-found", "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap().starts_with("books/nothing.dust"),
        "{error}"
    );

    drop(agent);
    drop(editor);
    assert!(serve.stop().success());
    assert!(!mnt.join("books").exists(), "unmounted");
}

//! `stardust mcp` under the MCP hosts people use (SPEC §13): hosts built on the TypeScript
//! SDK's own client (the MCP Inspector, Claude Code, most editor agents), which checks every
//! answer of a tool against its `outputSchema`, even an error's structured content, and on the
//! Python SDK 1.x and 2.x (tests/util/hosts.rs). Every error code a tool can answer reaches
//! each of them intact (`isError`, the summary naming the code first, the error object as JSON
//! text, no structured content), and every tool's success answer passes the TypeScript SDK's
//! schema checks. (`unavailable`, a team store's database gone, is in tests/team.rs.)
//!
//! HOME and XDG_CONFIG_HOME point into each test's temporary folder, so the user's own
//! `servers.toml` and `trusted.toml` are never read or written.

mod util;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use util::hosts::{Host, Sdk};

/// A store copied from `examples/NAME` with its own configuration folder.
struct Store {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl Store {
    fn new(example: &str) -> Store {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        util::copy_store(&util::repo().join("examples").join(example), &root);
        let root = root.canonicalize().unwrap();
        std::fs::create_dir_all(dir.path().join("xdg/stardust")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Store { dir, root }
    }

    fn xdg(&self) -> PathBuf {
        self.dir.path().join("xdg")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The user's `servers.toml`, which runs without trust.
    fn user_servers(&self, text: &str) {
        std::fs::write(self.xdg().join("stardust/servers.toml"), text).unwrap();
    }

    fn trust(&self) {
        let out = Command::new(env!("CARGO_BIN_EXE_stardust"))
            .arg("trust")
            .arg(&self.root)
            .env("XDG_CONFIG_HOME", self.xdg())
            .env("HOME", self.home())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", util::text(&out.stderr));
    }

    fn host(&self, sdk: Sdk, client: &str, flags: &[&str], more: &[(&str, &OsStr)]) -> Host {
        let (xdg, home) = (self.xdg(), self.home());
        let mut env: Vec<(&str, &OsStr)> =
            vec![("XDG_CONFIG_HOME", xdg.as_os_str()), ("HOME", home.as_os_str())];
        env.extend_from_slice(more);
        Host::start(sdk, client, &self.root, flags, &env)
    }
}

fn at(path: &str, line: u32, column: u32) -> Value {
    json!({"path": path, "position": {"line": line, "column": column}})
}

/// The fake language server's table for files `*.fk` (a request times out after 1 s).
fn fake_server() -> String {
    format!(
        "[servers.fake]\ncommand = {:?}\nlanguages = {{ fk = \"fake\" }}\ntimeouts = {{ request = 1 }}\n",
        util::fake_lsp().to_str().unwrap()
    )
}

/// Every tool of the sample library answers, and the SDK accepts each answer (the TypeScript
/// SDK and the Python SDK 2.x check it against the tool's `outputSchema`; 1.x as well).
fn every_answer_of_the_library(host: &mut Host) {
    let names: Vec<&str> = host.tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"preview_confirm") && names.contains(&"preview_get"), "{names:?}");
    for tool in &host.tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
    }
    host.ok("commands_describe", json!({}));
    host.ok("status", json!({}));
    host.ok("expression_evaluate", json!({"expression": "@book/dune.year + 1"}));
    host.ok("query_execute", json!({"document": "find [?b] where [[?b type book]]", "limit": 3}));
    host.ok("entity_get", json!({"id": "book/dune"}));
    host.ok("entity_validate", json!({"entity": {"id": "book/x", "type": "book"}}));
    let created = host.ok(
        "entity_create",
        json!({"entities": [{"id": "?ann", "type": "person", "name": "Ann Leckie", "roles": ["author"]}]}),
    );
    assert_eq!((created["total"].clone(), created["nextOffset"].clone()), (json!(1), Value::Null));
    host.ok(
        "mutation_execute",
        json!({"document": "find [?b] where [[?b type book] [?b year 1965]]", "set": {"pages": 1}}),
    );
    host.ok("patch_apply", json!({"document": "ops [{set {id book/dune pages 413}}]"}));
    let renamed = host.ok("entity_rename", json!({"id": "book/dune", "newId": "book/dune-1965"}));
    let page = host.ok("preview_get", json!({"previewId": renamed["previewId"], "limit": 1}));
    assert_eq!(page["documents"].as_array().unwrap().len(), 1, "{page}");
    host.ok("preview_discard", json!({"previewId": renamed["previewId"]}));
    host.ok("backup_define", json!({"id": "backup/nightly", "target": "/tmp/nowhere"}));
    host.ok("previews_list", json!({}));
    let committed = host.ok("preview_confirm", json!({"previewId": created["previewId"]}));
    assert!(committed["seq"].as_u64().unwrap() > 0, "{committed}");
    host.ok("changes_since", json!({"seq": 0}));
    let seq = committed["seq"].clone();
    host.ok("history_list", json!({"entity": "book/dune", "limit": 5}));
    host.ok("document_at", json!({"path": "books/dune.dust", "seq": seq}));
    host.ok("entity_at", json!({"id": "book/dune", "seq": seq}));
    host.ok("transaction_diff", json!({"seq": seq}));
    let revert = host.ok("transaction_revert", json!({"seq": seq}));
    host.ok("preview_discard", json!({"previewId": revert["previewId"]}));
    host.ok("diagnostics", json!({"limit": 5}));
    let author = json!({"entity": "book/dune", "pointer": "/author"});
    host.ok("hover", author.clone());
    host.ok("definition", author.clone());
    host.ok("declaration", author.clone());
    host.ok("type_definition", author.clone());
    host.ok("references", json!({"entity": "person/frank-herbert"}));
    host.ok("document_symbols", json!({"path": "books/dune.dust"}));
    host.ok("workspace_symbols", json!({"query": "dune"}));
    host.ok("code_actions", at("books/dune.dust", 4, 12));
    host.ok("describe_type", json!({"type": "book"}));
    host.ok("prepare_rename", json!({"entity": "book/dune"}));
    host.ok("rename_preview", json!({"entity": "book/dune", "newName": "book/dune-novel"}));
    host.ok("server_status", json!({}));
}

/// Every error code a tool of a store without code servers of its own can answer, each
/// passed on intact by the host's SDK.
fn every_error_of_the_library(store: &Store, host: &mut Host) {
    let sdk = host.sdk;
    // invalid-arguments: the schema's check, naming the field.
    let bad = host.fail_with("invalid-arguments", "entity_get", json!({"id": 5}));
    assert!(bad["message"].as_str().unwrap().contains("id"), "{bad}");
    // not-found, saying what to do.
    let missing = host.fail_with("not-found", "entity_get", json!({"id": "book/nope"}));
    assert!(missing["message"].as_str().unwrap().contains("did you mean 'book/dune'"));
    host.fail_with("not-found", "server_restart", json!({"server": "nobody"}));
    host.fail_with("outside-store", "diagnostics", json!({"path": "/etc/passwd"}));
    host.fail_with("ambiguous-position", "hover", json!({"entity": "person/twin"}));
    host.fail_with("type-error", "expression_evaluate", json!({"expression": "1 + 'a'"}));
    // unsupported: one value over a 64 KiB page, and a code file no server takes.
    let huge = format!("'{}'", "x".repeat(70 * 1024));
    let large = host.fail_with("unsupported", "expression_evaluate", json!({"expression": huge}));
    assert!(large["bytes"].as_u64().unwrap() > 70 * 1024, "{large}");
    host.fail_with("unsupported", "hover", at("notes/a.ghost", 1, 1));
    // refused: a preview the save authority refuses, with the problems.
    let dangling = host
        .ok("patch_apply", json!({"document": "ops [{set {id book/dune author @person/nobody}}]"}));
    assert_eq!(dangling["committable"], false, "{dangling}");
    let refused =
        host.fail_with("refused", "preview_confirm", json!({"previewId": dangling["previewId"]}));
    assert!(refused["problems"].as_array().is_some_and(|p| !p.is_empty()), "{refused}");
    host.fail_with("preview-not-found", "preview_confirm", json!({"previewId": "nope"}));
    host.fail_with("preview-not-found", "preview_get", json!({"previewId": "nope"}));
    // preview-stale: two previews of one document; the second is stale once the first lands.
    let set = |pages: u32| json!({"document": format!("ops [{{set {{id book/the-dispossessed pages {pages}}}}}]")});
    let first = host.ok("patch_apply", set(1));
    let second = host.ok("patch_apply", set(2));
    host.ok("preview_confirm", json!({"previewId": first["previewId"]}));
    let stale = host.fail_with(
        "preview-stale",
        "preview_confirm",
        json!({"previewId": second["previewId"]}),
    );
    assert_eq!(stale["path"], "books/the-dispossessed.dust", "{stale}");
    // untrusted: the store's own server table, not trusted yet.
    host.fail_with("untrusted", "hover", at("notes/a.st", 1, 1));
    // The fake server's faults: busy (a hang past the request timeout), cancelled and
    // internal (its error answers), server-unavailable (a crash).
    host.fail_with("busy", "hover", at("fake/hang.fk", 1, 1));
    host.fail_with("cancelled", "hover", at("fake/cancel.fk", 1, 1));
    host.fail_with("internal", "hover", at("fake/fail.fk", 1, 1));
    host.fail_with("server-unavailable", "hover", at("fake/crash.fk", 1, 1));
    // config-invalid: the user's servers.toml broken while the core runs.
    store.user_servers("[servers.fake\n");
    host.fail_with("config-invalid", "server_status", json!({}));
    store.user_servers(&fake_server());

    // mutation-disabled: an agent the gate does not let confirm, which has no preview_confirm.
    let mut closed = store.host(sdk, "closed-agent", &[], &[]);
    let names: Vec<&str> = closed.tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"preview_confirm"), "{names:?}");
    let preview = closed.ok("patch_apply", set(3));
    let disabled = closed.fail_with(
        "mutation-disabled",
        "preview_confirm",
        json!({"previewId": preview["previewId"]}),
    );
    assert!(disabled["message"].as_str().unwrap().contains("--allow-mutation"), "{disabled}");
}

/// The library with what the errors need: an id two entities carry, the fake server's files
/// (the user's table), and a server table of the store's own, untrusted.
fn library_for_errors() -> Store {
    let store = Store::new("library");
    store.write("people/twin-a.dust", "id person/twin\ntype person\nname 'Twin A'\n");
    store.write("people/twin-b.dust", "id person/twin\ntype person\nname 'Twin B'\n");
    for (name, text) in [
        ("ok", "fine\n"),
        ("hang", "fake:hang-on-hover\n"),
        ("cancel", "fake:cancel-on-hover\n"),
        ("fail", "fake:fail-on-hover\n"),
        ("crash", "fake:crash-on-hover\n"),
    ] {
        store.write(&format!("fake/{name}.fk"), text);
    }
    store.write("notes/a.st", "store table\n");
    store.write("notes/a.ghost", "no server\n");
    let config = std::fs::read_to_string(store.root.join("stardust.toml")).unwrap();
    store.write(
        "stardust.toml",
        &format!("{config}\n[servers.own]\ncommand = \"true\"\nlanguages = {{ st = \"own\" }}\n"),
    );
    store.user_servers(&fake_server());
    store
}

/// A preview's expiry: the core's previews last one second here.
fn an_expired_preview(sdk: Sdk) {
    let store = Store::new("library");
    let mut host = store.host(
        sdk,
        "sdk-host",
        &["--allow-mutation"],
        &[("STARDUST_PREVIEW_LIFETIME", OsStr::new("1"))],
    );
    let preview = host.ok("entity_rename", json!({"id": "book/dune", "newId": "book/d"}));
    std::thread::sleep(Duration::from_millis(1500));
    let id = json!({"previewId": preview["previewId"]});
    host.fail_with("preview-expired", "preview_get", id.clone());
    host.fail_with("preview-expired", "preview_confirm", id);
}

fn every_answer_and_error(sdk: Sdk) {
    let store = library_for_errors();
    let mut host = store.host(sdk, "sdk-host", &["--allow-mutation"], &[]);
    every_answer_of_the_library(&mut host);
    every_error_of_the_library(&store, &mut host);
    an_expired_preview(sdk);
}

#[test]
fn the_typescript_sdk_reads_every_tool_error_and_accepts_every_answer() {
    every_answer_and_error(Sdk::TypeScript);
}

#[test]
fn the_python_sdk_1_reads_every_tool_error_and_accepts_every_answer() {
    every_answer_and_error(Sdk::Python1);
}

#[test]
fn the_python_sdk_2_reads_every_tool_error_and_accepts_every_answer() {
    every_answer_and_error(Sdk::Python2);
}

/// The tools whose success answers come from language servers, through the TypeScript SDK's
/// schema checks: the sample mixed store, trusted, with typescript-language-server and
/// pyright behind it. And `conflict`: a rename of a code file an editor holds with unsaved
/// changes.
#[test]
fn the_typescript_sdk_accepts_every_answer_of_the_code_tools() {
    let store = Store::new("mixed");
    store.write("web/src/typo.ts", "export const n: number = \"abc\".lenght;\n");
    store.trust();
    let mut host = store.host(Sdk::TypeScript, "sdk-host", &["--allow-mutation"], &[]);
    // typescript-language-server: the whole set of navigation answers.
    host.ok("hover", at("web/src/main.ts", 12, 42));
    host.ok("definition", at("web/src/main.ts", 12, 42));
    host.ok("type_definition", at("web/src/main.ts", 15, 8));
    host.ok("implementation", at("web/src/main.ts", 4, 18));
    host.ok("references", at("web/src/price.ts", 6, 17));
    host.ok("document_symbols", json!({"path": "web/src/price.ts"}));
    host.ok("workspace_symbols", json!({"query": "withTax", "server": "typescript"}));
    host.ok("signature_help", at("web/src/main.ts", 12, 50));
    host.ok("incoming_calls", at("web/src/price.ts", 6, 17));
    host.ok("outgoing_calls", at("web/src/main.ts", 11, 17));
    host.ok("prepare_rename", at("web/src/price.ts", 6, 17));
    host.ok("diagnostics", json!({"path": "web/src/typo.ts"}));
    let renamed = host.ok(
        "rename_preview",
        json!({"path": "web/src/price.ts", "position": {"line": 6, "column": 17}, "newName": "priceWithTax"}),
    );
    host.ok("preview_get", json!({"previewId": renamed["previewId"]}));
    host.ok("preview_discard", json!({"previewId": renamed["previewId"]}));
    let actions = host.ok("code_actions", at("web/src/typo.ts", 1, 32));
    let fix = actions["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Change spelling to 'length'")
        .unwrap_or_else(|| panic!("no spelling fix: {actions}"))
        .clone();
    let preview = host.ok("code_action_preview", json!({"handle": fix["handle"]}));
    host.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    // pyright: a declaration (typescript-language-server answers none).
    host.ok("declaration", at("py/shop/catalog.py", 18, 32));
    host.ok("server_status", json!({"server": "typescript"}));
    host.ok("server_restart", json!({"server": "typescript"}));

    // conflict: an editor on the same core holds price.ts with unsaved changes.
    let mut editor = util::lsp::Lsp::spawn(
        Command::new(env!("CARGO_BIN_EXE_stardust"))
            .args(["lsp", "--store"])
            .arg(&store.root)
            .env("XDG_CONFIG_HOME", store.xdg())
            .env("HOME", store.home())
            .env("STARDUST_IDLE_EXIT", "2")
            .env_remove("RUST_LOG"),
        &store.root,
    );
    editor.initialize(json!({"processId": null, "rootUri": null, "capabilities": {}}));
    let path = store.root.join("web/src/price.ts");
    let text = std::fs::read_to_string(&path).unwrap();
    editor.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": format!("file://{}", path.display()),
               "languageId": "typescript", "version": 1, "text": format!("{text}// unsaved\n")}}),
    );
    // The editor's open is a notification: wait until the core holds the buffer.
    let ask = json!({"path": "web/src/price.ts", "position": {"line": 6, "column": 17}, "newName": "priceWithTax"});
    let mut conflict = None;
    for _ in 0..100 {
        match host.call("rename_preview", ask.clone()) {
            Ok(result) if result["isError"] == true => {
                conflict = Some(util::mcp::tool_error(&result));
                break;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(100)),
            Err(thrown) => panic!("the SDK threw: {thrown}"),
        }
    }
    let conflict = conflict.expect("a rename of a file held with unsaved changes is refused");
    assert_eq!(conflict["code"], "conflict", "{conflict}");
    assert!(conflict["message"].as_str().unwrap().contains("unsaved changes"), "{conflict}");
    editor.shutdown();
}

/// A rename rewriting over 600 documents: the answer (one 64 KiB page, as every host receives
/// it) says how many documents there are and where the rest starts; `preview_get` reads
/// every one; confirming commits them all.
#[test]
fn a_rename_over_600_files_pages_its_preview_and_commits_every_file() {
    let store = Store::new("library");
    for i in 0..600 {
        store.write(
            &format!("books/sequels/s{i:03}.dust"),
            &format!(
                "id book/s{i:03}\ntype book\ntitle 'Sequel {i}'\nauthor @person/frank-herbert\nyear 1970\nstatus published\nsequel-of @book/dune\n"
            ),
        );
    }
    let mut host = store.host(Sdk::TypeScript, "sdk-host", &["--allow-mutation"], &[]);
    let result =
        host.call("entity_rename", json!({"id": "book/dune", "newId": "book/dune-1965"})).unwrap();
    let preview = &result["structuredContent"];
    assert!(serde_json::to_vec(preview).unwrap().len() <= 64 * 1024);
    let shown = preview["documents"].as_array().unwrap().len();
    // The 600 sequels, Dune's own document, and the library's documents that name it.
    let total = preview["total"].as_u64().unwrap() as usize;
    assert!(total > 601, "{total}");
    assert!(
        shown < total && preview["nextOffset"] == json!(shown) && preview["pageShrunk"] == true
    );
    let summary = result["content"][0]["text"].as_str().unwrap();
    assert!(
        summary.contains(&format!("changes {total} documents"))
            && summary.contains(&format!("shows documents 1 to {shown} of {total}"))
            && summary.contains(&format!("\"offset\": {shown}")),
        "{summary}"
    );
    let id = preview["previewId"].clone();
    let mut seen: Vec<String> = Vec::new();
    let mut next = json!(0);
    while let Some(offset) = next.as_u64() {
        let page = host.ok("preview_get", json!({"previewId": id, "offset": offset, "limit": 500}));
        seen.extend(page["documents"].as_array().unwrap().iter().map(|d| d["path"].to_string()));
        next = page["nextOffset"].clone();
    }
    assert_eq!(seen.len(), total);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), total, "each document exactly once");
    host.ok("preview_confirm", json!({"previewId": id}));
    for i in 0..600 {
        let text = std::fs::read_to_string(store.root.join(format!("books/sequels/s{i:03}.dust")));
        assert!(text.unwrap().contains("sequel-of @book/dune-1965"), "s{i:03}");
    }
}

/// The tools whose success answers the tests above put through the TypeScript SDK's checks:
/// the library's (`every_answer_of_the_library`) and the code tools'. A new tool must join
/// one of them.
#[test]
fn every_tool_has_its_success_answer_checked_above() {
    let checked = [
        "commands_describe",
        "status",
        "expression_evaluate",
        "query_execute",
        "entity_get",
        "entity_validate",
        "entity_create",
        "mutation_execute",
        "patch_apply",
        "entity_rename",
        "backup_define",
        "preview_confirm",
        "preview_discard",
        "previews_list",
        "changes_since",
        "history_list",
        "document_at",
        "entity_at",
        "transaction_diff",
        "transaction_revert",
        "diagnostics",
        "hover",
        "definition",
        "references",
        "document_symbols",
        "workspace_symbols",
        "code_actions",
        "describe_type",
        "declaration",
        "type_definition",
        "implementation",
        "signature_help",
        "incoming_calls",
        "outgoing_calls",
        "prepare_rename",
        "rename_preview",
        "code_action_preview",
        "server_status",
        "server_restart",
        "preview_get",
    ];
    let source = std::fs::read_to_string(util::repo().join("tests/mcp_hosts.rs")).unwrap();
    let source: String = source.split_whitespace().collect();
    for tool in checked {
        assert!(source.contains(&format!("host.ok(\"{tool}\"")), "{tool} is not called above");
    }
    let listed: Vec<String> = stardust_core::service::shown_in(stardust_core::service::Front::Mcp)
        .map(|c| stardust_mcp::tool_name(c.name))
        .collect();
    assert_eq!(listed, checked, "the tool list changed: check the new tool's answers above");
}

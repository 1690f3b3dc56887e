//! The MCP tools for code files (SPEC §13, §17) end to end: rmcp's client speaking to the real
//! `stardust mcp` on a copy of `examples/mixed`, with the real pyright, typescript-language-server
//! and clangd behind it; the errors of §16 as tool errors; and the faults of a server (a hang,
//! crashes, crashes past `max_restarts`) played by `stardust-fake-lsp`, while the core keeps
//! answering for the store's documents.
//!
//! HOME and XDG_CONFIG_HOME point into each test's temporary folder, so the user's own
//! `servers.toml` and `trusted.toml` are never read or written. Each real server starts once
//! per test: its checks are grouped.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

/// A copy of `examples/mixed` (canonical path) with its own configuration folder.
struct Mixed {
    dir: tempfile::TempDir,
    store: PathBuf,
}

impl Mixed {
    fn new() -> Mixed {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        util::copy_store(&util::repo().join("examples/mixed"), &store);
        let store = store.canonicalize().unwrap();
        std::fs::create_dir_all(dir.path().join("xdg/stardust")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Mixed { dir, store }
    }

    fn config_dir(&self) -> PathBuf {
        self.dir.path().join("xdg/stardust")
    }

    /// `stardust ARGS` with this test's configuration folder.
    fn stardust(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_stardust"))
            .args(args)
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .env("HOME", self.dir.path().join("home"))
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
    }

    fn trust(&self) {
        let out = self.stardust(&["trust", self.store.to_str().unwrap()]);
        assert!(out.status.success(), "{}", util::text(&out.stderr));
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.store.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn append(&self, rel: &str, text: &str) {
        let mut all = std::fs::read_to_string(self.store.join(rel)).unwrap();
        all.push_str(text);
        self.write(rel, &all);
    }

    /// `stardust mcp` on the store, through rmcp's client; the core it starts stops 2 s after
    /// its last client.
    async fn connect(&self) -> Client {
        self.connect_with(&[]).await
    }

    /// [`Mixed::connect`] with more arguments for `stardust mcp`.
    async fn connect_with(&self, args: &[&str]) -> Client {
        let command =
            tokio::process::Command::new(env!("CARGO_BIN_EXE_stardust")).configure(|cmd| {
                cmd.arg("mcp")
                    .args(args)
                    .arg("--store")
                    .arg(&self.store)
                    .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
                    .env("HOME", self.dir.path().join("home"))
                    .env("STARDUST_IDLE_EXIT", "2")
                    .env_remove("RUST_LOG");
            });
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mcp-code-test", "1.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_06_18)
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .expect("the handshake succeeds")
    }
}

/// A tool's answer: `Ok(structuredContent)`, or `Err(error object)` for a tool error (read
/// from its content, as SPEC §13 has every host read it).
async fn try_call(peer: &Peer<RoleClient>, tool: &str, args: Value) -> Result<Value, Value> {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap());
    let result = peer.call_tool(params).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
    if result.is_error == Some(true) {
        return Err(util::mcp::tool_error(&serde_json::to_value(&result).unwrap()));
    }
    Ok(result.structured_content.unwrap_or(Value::Null))
}

async fn call(peer: &Peer<RoleClient>, tool: &str, args: Value) -> Value {
    try_call(peer, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool} {args} failed: {e}"))
}

async fn fail(peer: &Peer<RoleClient>, tool: &str, args: Value) -> Value {
    match try_call(peer, tool, args.clone()).await {
        Ok(v) => panic!("{tool} {args} should fail, answered {v}"),
        Err(e) => e,
    }
}

fn at(path: &str, line: u32, column: u32) -> Value {
    json!({"path": path, "position": {"line": line, "column": column}})
}

/// A location as `path:line:column-endLine:endColumn@server`.
fn loc(v: &Value) -> String {
    let r = &v["range"];
    format!(
        "{}:{}:{}-{}:{}@{}",
        v["path"].as_str().unwrap(),
        r["line"],
        r["column"],
        r["endLine"],
        r["endColumn"],
        v["server"].as_str().unwrap()
    )
}

fn locs(answer: &Value, key: &str) -> Vec<String> {
    answer[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {answer}"))
        .iter()
        .map(loc)
        .collect()
}

fn names(answer: &Value, key: &str) -> Vec<String> {
    answer[key].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_owned()).collect()
}

/// Ask `hover` at `place` until the server answers it `ready` with markdown containing `want`
/// (a server may answer from a partial view while it loads its project).
async fn hover_when_ready(peer: &Peer<RoleClient>, place: Value, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let answer = call(peer, "hover", place.clone()).await;
        let markdown = answer["hover"]["markdown"].as_str().unwrap_or_default();
        if answer["readiness"] == "ready" && markdown.contains(want) {
            return answer;
        }
        assert!(Instant::now() < deadline, "hover never became ready: {answer}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `server_status` of one server.
async fn status(peer: &Peer<RoleClient>, server: &str) -> Value {
    let answer = call(peer, "server_status", json!({"server": server})).await;
    assert_eq!(answer["total"], 1, "{answer}");
    answer["servers"][0].clone()
}

fn alive(pid: &Value) -> bool {
    util::alive(pid.as_i64().expect("a pid"))
}

/// `server_status` shows the running server with its pids; `server_restart` starts another
/// process, and the next hover at `place` is answered by it.
async fn restart_answers_again(peer: &Peer<RoleClient>, server: &str, place: Value) {
    let before = status(peer, server).await;
    assert_eq!(before["state"], "ready", "{before}");
    assert_eq!(before["origin"], "store");
    assert!(alive(&before["pid"]) && alive(&before["supervisorPid"]), "{before}");
    let restarted = call(peer, "server_restart", json!({"server": server})).await;
    let after = &restarted["server"];
    assert_ne!(after["pid"], before["pid"], "{after}");
    assert!(alive(&after["pid"]), "{after}");
    assert_eq!(after["recentCrashes"], 0);
    let hover = call(peer, "hover", place).await;
    assert_eq!(hover["hover"]["server"], server, "{hover}");
    assert_eq!(status(peer, server).await["pid"], after["pid"]);
}

/// The diagnostics of `path`, as `line:column severity message@server`, once the server has
/// reported on the file's current text (`readiness` is `indexing` until it has) and `settled`
/// holds: a server may publish in stages for one text (pyright and tsserver first publish
/// what they have, then what their checker found), so a test waits for what it expects.
async fn diagnostics(
    peer: &Peer<RoleClient>,
    path: &str,
    settled: impl Fn(&[String]) -> bool,
) -> (Value, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = call(peer, "diagnostics", json!({"path": path})).await;
        let items = diagnostic_lines(&answer);
        if answer["readiness"] == "ready" && settled(&items) || Instant::now() > deadline {
            return (answer, items);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn diagnostic_lines(answer: &Value) -> Vec<String> {
    answer["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{} {} {}@{}",
                d["range"]["line"],
                d["range"]["column"],
                d["severity"].as_str().unwrap(),
                d["message"].as_str().unwrap(),
                d["server"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_answers_the_code_tools() {
    let mixed = Mixed::new();
    mixed.trust();
    let client = mixed.connect().await;
    let peer = client.peer();

    // `with_tax` where `label` calls it, in catalog.py.
    let hover = hover_when_ready(peer, at("py/shop/catalog.py", 18, 45), "def with_tax").await;
    assert_eq!(loc(&hover["hover"]), "py/shop/catalog.py:18:45-18:53@pyright");
    assert!(hover["hover"]["markdown"].as_str().unwrap().contains("rounded to the nearest cent"));
    assert_eq!(hover["server"], "pyright");

    // Across files: `format_price` is defined in pricing.py.
    let definition = call(peer, "definition", at("py/shop/catalog.py", 18, 32)).await;
    assert_eq!(locs(&definition, "locations"), ["py/shop/pricing.py:11:5-11:17@pyright"]);
    let declaration = call(peer, "declaration", at("py/shop/catalog.py", 18, 32)).await;
    assert_eq!(locs(&declaration, "locations"), ["py/shop/pricing.py:11:5-11:17@pyright"]);
    // The type of `Product` where line 26 builds one: the class.
    let type_definition = call(peer, "type_definition", at("py/shop/catalog.py", 26, 30)).await;
    assert_eq!(locs(&type_definition, "locations"), ["py/shop/catalog.py:11:7-11:14@pyright"]);

    let references = call(peer, "references", at("py/shop/pricing.py", 6, 6)).await;
    assert_eq!(
        locs(&references, "references"),
        [
            "py/shop/__init__.py:4:26-4:34@pyright",
            "py/shop/__init__.py:6:41-6:49@pyright",
            "py/shop/catalog.py:7:40-7:48@pyright",
            "py/shop/catalog.py:18:45-18:53@pyright",
            "py/shop/pricing.py:6:5-6:13@pyright",
        ]
    );
    assert_eq!(references["total"], 5);
    // Pages of the same canonical list.
    let mut second = at("py/shop/pricing.py", 6, 6);
    second["limit"] = json!(2);
    second["offset"] = json!(2);
    let page = call(peer, "references", second).await;
    assert_eq!(locs(&page, "references"), locs(&references, "references")[2..4]);
    assert_eq!((&page["total"], &page["nextOffset"]), (&json!(5), &json!(4)));

    let symbols = call(peer, "document_symbols", json!({"path": "py/shop/pricing.py"})).await;
    assert_eq!(names(&symbols, "symbols"), ["VAT_PERCENT", "with_tax", "format_price"]);
    assert_eq!(symbols["symbols"][1]["kind"], "function");
    assert_eq!(
        loc(&json!({
            "path": "py/shop/pricing.py",
            "range": symbols["symbols"][1]["selectionRange"],
            "server": symbols["symbols"][1]["server"],
        })),
        "py/shop/pricing.py:6:5-6:13@pyright"
    );

    let workspace =
        call(peer, "workspace_symbols", json!({"query": "with_tax", "server": "pyright"})).await;
    assert_eq!(locs(&workspace, "symbols"), ["py/shop/pricing.py:6:5-6:13@pyright"]);

    // pyright has no `implementation`: the server's refusal, as `unsupported`.
    let implementation = fail(peer, "implementation", at("py/shop/catalog.py", 18, 32)).await;
    assert_eq!(implementation["code"], "unsupported", "{implementation}");
    assert_eq!(implementation["server"], "pyright");

    // Inside the call `format_price(with_tax(...))`, at its argument.
    let help = call(peer, "signature_help", at("py/shop/catalog.py", 18, 50)).await;
    assert_eq!(help["signatureHelp"]["signatures"][0]["label"], "(price_cents: int) -> str");
    assert_eq!(help["signatureHelp"]["activeParameter"], 0);

    let incoming = call(peer, "incoming_calls", at("py/shop/pricing.py", 6, 6)).await;
    let from: Vec<String> =
        incoming["calls"].as_array().unwrap().iter().map(|c| loc(&c["from"])).collect();
    assert_eq!(from, ["py/shop/catalog.py:16:9-16:14@pyright"], "{incoming}");
    assert_eq!(incoming["calls"][0]["from"]["name"], "label");
    assert_eq!(
        incoming["calls"][0]["ranges"][0],
        json!({"line": 18, "column": 45, "endLine": 18, "endColumn": 53})
    );
    let outgoing = call(peer, "outgoing_calls", at("py/shop/catalog.py", 16, 9)).await;
    let to: Vec<String> =
        outgoing["calls"].as_array().unwrap().iter().map(|c| loc(&c["to"])).collect();
    assert_eq!(
        to,
        ["py/shop/pricing.py:6:5-6:13@pyright", "py/shop/pricing.py:11:5-11:17@pyright"]
    );

    let rename = call(peer, "prepare_rename", at("py/shop/pricing.py", 6, 6)).await;
    assert_eq!(loc(&rename["rename"]), "py/shop/pricing.py:6:5-6:13@pyright");

    // An error introduced on disk is what the server reports next.
    let (clean, items) = diagnostics(peer, "py/shop/pricing.py", |_| true).await;
    assert_eq!(items, Vec::<String>::new(), "{clean}");
    mixed.append("py/shop/pricing.py", "\n\nBROKEN: int = \"not a number\"\n");
    let (answer, items) = diagnostics(peer, "py/shop/pricing.py", |i| !i.is_empty()).await;
    assert_eq!(answer["server"], "pyright");
    assert_eq!(items.len(), 1, "{answer}");
    assert!(items[0].starts_with("16:15 error ") && items[0].ends_with("@pyright"), "{items:?}");
    let only_warnings =
        call(peer, "diagnostics", json!({"path": "py/shop/pricing.py", "severity": "warning"}))
            .await;
    assert_eq!(only_warnings["total"], 0, "{only_warnings}");

    restart_answers_again(peer, "pyright", at("py/shop/catalog.py", 18, 45)).await;
    client.cancel().await.unwrap();
}

/// The diffs of a preview by path, and its new diagnostics as `path:line severity`.
fn preview_files(preview: &Value) -> (Vec<String>, Vec<String>) {
    let docs = preview["documents"].as_array().unwrap_or_else(|| panic!("{preview}"));
    let new = preview["diagnostics"]["new"].as_array().unwrap();
    (
        docs.iter().map(|d| d["path"].as_str().unwrap().to_owned()).collect(),
        new.iter()
            .map(|d| {
                format!(
                    "{}:{} {}",
                    d["path"].as_str().unwrap(),
                    d["range"]["line"],
                    d["severity"].as_str().unwrap()
                )
            })
            .collect(),
    )
}

/// A copy of `examples/mixed` whose `[save] refuse` also lists `code-error`, trusted, with
/// `extra` files written first, and an MCP client that may confirm: SPEC §18's end-to-end
/// setting for either server.
async fn refusing_code_errors(extra: &[(&str, &str)]) -> (Mixed, Client) {
    let mixed = Mixed::new();
    for (rel, text) in extra {
        mixed.write(rel, text);
    }
    mixed.append(
        "stardust.toml",
        "\n[save]\nrefuse = [\"syntax\", \"schema\", \"duplicate-id\", \"invalid-id\", \"code-error\"]\n",
    );
    mixed.trust();
    let client = mixed.connect_with(&["--allow-mutation"]).await;
    (mixed, client)
}

/// The store's head seq, as `stardust log --format json` shows it (0 for no transaction).
fn head_seq(store: &Path) -> u64 {
    let out = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(["log", store.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    util::text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|t| t["seq"].as_u64())
        .max()
        .unwrap_or(0)
}

/// `rename_preview` of what is at `path:line:column` to `new_name`.
async fn rename_preview(
    peer: &Peer<RoleClient>,
    (path, line, column): (&str, u32, u32),
    new_name: &str,
) -> Value {
    let mut args = at(path, line, column);
    args["newName"] = json!(new_name);
    call(peer, "rename_preview", args).await
}

/// A preview whose delta has new errors is not committable, and with `code-error` refused its
/// confirm is `refused`: none of the files it touches changes.
async fn confirm_is_refused(mixed: &Mixed, peer: &Peer<RoleClient>, preview: &Value) {
    assert_eq!(preview["committable"], false, "{preview}");
    let (files, _) = preview_files(preview);
    let read = || -> Vec<String> {
        files.iter().map(|f| std::fs::read_to_string(mixed.store.join(f)).unwrap()).collect()
    };
    let before = read();
    let head = head_seq(&mixed.store);
    let refused = fail(peer, "preview_confirm", json!({"previewId": preview["previewId"]})).await;
    assert_eq!(refused["code"], "refused", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("code-error"), "{refused}");
    assert_eq!(read(), before, "a refused confirm writes nothing");
    assert_eq!(head_seq(&mixed.store), head, "a refused confirm is no transaction");
}

/// A preview with an empty delta is committable, and its confirm is the store's next
/// transaction.
async fn confirm_commits(mixed: &Mixed, peer: &Peer<RoleClient>, preview: &Value) {
    assert_eq!(preview["committable"], true, "{preview}");
    let head = head_seq(&mixed.store);
    let committed = call(peer, "preview_confirm", json!({"previewId": preview["previewId"]})).await;
    assert_eq!(committed["seq"].as_u64(), Some(head + 1), "{committed}");
}

/// Once the client is gone, `stardust log` shows its transaction on `path`, by its origin.
async fn logged(mixed: &Mixed, client: Client, path: &str) {
    client.cancel().await.unwrap();
    let log = mixed.stardust(&["log", mixed.store.to_str().unwrap()]);
    let text = util::text(&log.stdout);
    assert!(text.contains(path) && text.contains("mcp:mcp-code-test"), "{text}");
}

/// SPEC §18 with pyright: a rename across three files previews three diffs and an empty
/// delta; a rename that breaks the module shows the new error, which `code-error` refuses at
/// confirm; the clean one commits as one transaction that `stardust log` shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_renames_preview_with_their_diagnostics_and_commit() {
    let (mixed, client) = refusing_code_errors(&[]).await;
    let peer = client.peer();
    hover_when_ready(peer, at("py/shop/catalog.py", 18, 45), "def with_tax").await;

    // `format_price` renamed to `with_tax`: pricing.py declares `with_tax` twice, and
    // catalog.py's `format_price(with_tax(..))` becomes `with_tax(with_tax(..))`, which passes
    // a str where an int is wanted.
    let breaking = rename_preview(peer, ("py/shop/pricing.py", 11, 6), "with_tax").await;
    let (files, new) = preview_files(&breaking);
    assert_eq!(files, ["py/shop/catalog.py", "py/shop/pricing.py"], "{breaking}");
    assert_eq!(new, ["py/shop/catalog.py:18 error", "py/shop/pricing.py:6 error"], "{breaking}");
    let codes: Vec<&Value> =
        breaking["diagnostics"]["new"].as_array().unwrap().iter().map(|d| &d["code"]).collect();
    assert_eq!(codes, ["reportArgumentType", "reportRedeclaration"], "{breaking}");
    confirm_is_refused(&mixed, peer, &breaking).await;

    // `with_tax` renamed to `add_tax`: its definition, catalog.py's import and call, and
    // __init__.py's import and `__all__`; nothing new.
    let clean = rename_preview(peer, ("py/shop/pricing.py", 6, 6), "add_tax").await;
    let (files, new) = preview_files(&clean);
    assert_eq!(
        files,
        ["py/shop/__init__.py", "py/shop/catalog.py", "py/shop/pricing.py"],
        "{clean}"
    );
    assert_eq!(new, Vec::<String>::new(), "{clean}");
    assert!(
        clean["documents"][1]["diff"]
            .as_str()
            .unwrap()
            .contains("+from shop.pricing import format_price, add_tax"),
        "{clean}"
    );
    confirm_commits(&mixed, peer, &clean).await;
    let pricing = std::fs::read_to_string(mixed.store.join("py/shop/pricing.py")).unwrap();
    assert!(pricing.contains("def add_tax("), "{pricing}");
    assert!(
        std::fs::read_to_string(mixed.store.join("py/shop/__init__.py"))
            .unwrap()
            .contains("\"add_tax\"]")
    );
    // The server agrees: hover at the call in catalog.py names the new function.
    hover_when_ready(peer, at("py/shop/catalog.py", 18, 45), "def add_tax").await;
    logged(&mixed, client, "py/shop/catalog.py").await;
}

/// A third user of `withTax` beside main.ts, whose own `total` an import of that name would
/// collide with.
const CART_TS: &str = r#"import { withTax } from "./price";

/** The cart's total, tax included. */
export function total(pricesCents: number[]): number {
  return pricesCents.reduce((sum, cents) => sum + withTax(cents), 0);
}
"#;

/// SPEC §18 with typescript-language-server: `withTax`, declared in price.ts and imported by
/// main.ts and cart.ts, renamed to `total` breaks cart.ts's import (it collides with cart.ts's
/// own `total`, whose call of it now calls itself), which the delta shows and `code-error`
/// refuses at confirm; renamed to
/// `addTax` it previews three diffs and an empty delta, and commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_renames_preview_with_their_diagnostics_and_commit() {
    let (mixed, client) = refusing_code_errors(&[("web/src/cart.ts", CART_TS)]).await;
    let peer = client.peer();
    hover_when_ready(peer, at("web/src/main.ts", 12, 42), "withTax(priceCents").await;
    let files = ["web/src/cart.ts", "web/src/main.ts", "web/src/price.ts"];

    let breaking = rename_preview(peer, ("web/src/price.ts", 6, 17), "total").await;
    let (touched, new) = preview_files(&breaking);
    assert_eq!(touched, files, "{breaking}");
    assert_eq!(new, ["web/src/cart.ts:1 error", "web/src/cart.ts:5 error"], "{breaking}");
    // The import collides, and the call in `total` now is a call of cart.ts's own `total`.
    let found: Vec<(&Value, &Value)> = breaking["diagnostics"]["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (&d["code"], &d["server"]))
        .collect();
    let typescript = json!("typescript");
    assert_eq!(found, [(&json!(2440), &typescript), (&json!(2345), &typescript)], "{breaking}");
    assert_eq!(
        breaking["diagnostics"]["new"][0]["message"],
        "Import declaration conflicts with local declaration of 'total'."
    );
    confirm_is_refused(&mixed, peer, &breaking).await;

    let clean = rename_preview(peer, ("web/src/price.ts", 6, 17), "addTax").await;
    let (touched, new) = preview_files(&clean);
    assert_eq!((touched, new), (files.map(String::from).to_vec(), vec![]), "{clean}");
    assert!(
        clean["documents"][1]["diff"]
            .as_str()
            .unwrap()
            .contains("+import { formatPrice, addTax } from \"./price\";"),
        "{clean}"
    );
    confirm_commits(&mixed, peer, &clean).await;
    let cart = std::fs::read_to_string(mixed.store.join("web/src/cart.ts")).unwrap();
    assert!(cart.contains("import { addTax }") && cart.contains("+ addTax(cents)"), "{cart}");
    // The server agrees: hover at the call in main.ts names the new function.
    hover_when_ready(peer, at("web/src/main.ts", 12, 42), "addTax(priceCents").await;
    logged(&mixed, client, "web/src/cart.ts").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_workspace_symbols_come_before_any_file_is_asked_about() {
    // tsserver answers workspace/symbol with "No Project" until a file of a project is open:
    // the core opens the store's first TypeScript file first (its folder's tsconfig.json).
    let mixed = Mixed::new();
    mixed.trust();
    let client = mixed.connect().await;
    let peer = client.peer();
    let ask = json!({"query": "withTax", "server": "typescript"});
    let first = call(peer, "workspace_symbols", ask.clone()).await;
    // Answered at once from the file it opened (while the project still loads: `indexing`).
    assert!(first.get("skipped").is_none(), "{first}");
    assert!(!locs(&first, "symbols").is_empty(), "{first}");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let workspace = call(peer, "workspace_symbols", ask.clone()).await;
        if workspace["readiness"] == "ready" {
            assert_eq!(locs(&workspace, "symbols"), ["web/src/price.ts:6:1-8:2@typescript"]);
            break;
        }
        assert!(Instant::now() < deadline, "the project never loaded: {workspace}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_language_server_answers_the_code_tools() {
    let mixed = Mixed::new();
    mixed.trust();
    let client = mixed.connect().await;
    let peer = client.peer();

    // `withTax` where `label` calls it: once the project is loaded, the imported function.
    let hover = hover_when_ready(peer, at("web/src/main.ts", 12, 42), "withTax(priceCents").await;
    assert_eq!(loc(&hover["hover"]), "web/src/main.ts:12:42-12:49@typescript");

    let definition = call(peer, "definition", at("web/src/main.ts", 12, 42)).await;
    assert_eq!(locs(&definition, "locations"), ["web/src/price.ts:6:17-6:24@typescript"]);
    let type_definition = call(peer, "type_definition", at("web/src/main.ts", 15, 8)).await;
    assert_eq!(locs(&type_definition, "locations"), ["web/src/main.ts:4:18-4:25@typescript"]);
    // The object literal typed as `Product` is the interface's one implementation.
    let implementation = call(peer, "implementation", at("web/src/main.ts", 4, 18)).await;
    assert_eq!(locs(&implementation, "locations"), ["web/src/main.ts:15:23-15:87@typescript"]);
    // typescript-language-server offers no `declaration`.
    let declaration = fail(peer, "declaration", at("web/src/main.ts", 12, 42)).await;
    assert_eq!(
        (&declaration["code"], &declaration["server"]),
        (&json!("unsupported"), &json!("typescript"))
    );

    let references = call(peer, "references", at("web/src/price.ts", 6, 17)).await;
    assert_eq!(
        locs(&references, "references"),
        [
            "web/src/main.ts:1:23-1:30@typescript",
            "web/src/main.ts:12:42-12:49@typescript",
            "web/src/price.ts:6:17-6:24@typescript",
        ]
    );

    let symbols = call(peer, "document_symbols", json!({"path": "web/src/price.ts"})).await;
    let mut found = names(&symbols, "symbols");
    found.sort();
    assert_eq!(found, ["VAT_PERCENT", "formatPrice", "withTax"]);
    let workspace =
        call(peer, "workspace_symbols", json!({"query": "withTax", "server": "typescript"})).await;
    assert_eq!(locs(&workspace, "symbols"), ["web/src/price.ts:6:1-8:2@typescript"]);

    let help = call(peer, "signature_help", at("web/src/main.ts", 12, 50)).await;
    assert_eq!(
        help["signatureHelp"]["signatures"][0]["label"],
        "withTax(priceCents: number, percent?: number): number"
    );
    let incoming = call(peer, "incoming_calls", at("web/src/price.ts", 6, 17)).await;
    let from: Vec<String> =
        incoming["calls"].as_array().unwrap().iter().map(|c| loc(&c["from"])).collect();
    assert_eq!(from, ["web/src/main.ts:11:17-11:22@typescript"]);
    let outgoing = call(peer, "outgoing_calls", at("web/src/main.ts", 11, 17)).await;
    let to: Vec<String> =
        outgoing["calls"].as_array().unwrap().iter().map(|c| loc(&c["to"])).collect();
    assert_eq!(
        to,
        ["web/src/price.ts:6:17-6:24@typescript", "web/src/price.ts:11:17-11:28@typescript"]
    );
    let rename = call(peer, "prepare_rename", at("web/src/price.ts", 6, 17)).await;
    assert_eq!(loc(&rename["rename"]), "web/src/price.ts:6:17-6:24@typescript");

    mixed.append("web/src/price.ts", "\nexport const broken: number = \"not a number\";\n");
    let (_, items) = diagnostics(peer, "web/src/price.ts", |i| !i.is_empty()).await;
    assert_eq!(items, ["16:14 error Type 'string' is not assignable to type 'number'.@typescript"]);

    restart_answers_again(peer, "typescript", at("web/src/main.ts", 12, 42)).await;
    client.cancel().await.unwrap();
}

/// `code_action_preview` with typescript-language-server: its quick fix for a misspelt
/// property carries its edit, which previews with the error it resolves and commits; its
/// "Move to a new file" only runs a server command, which is not previewed. (pyright 1.1
/// answers `codeAction` with an empty list for its quick fixes and organize-imports kinds
/// alike, so it has no action to preview.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_quick_fix_previews_through_its_handle_and_commits() {
    let mixed = Mixed::new();
    mixed.write("web/src/typo.ts", "export const n: number = \"abc\".lenght;\n");
    mixed.trust();
    let client = mixed.connect_with(&["--allow-mutation"]).await;
    let peer = client.peer();
    let (_, items) = diagnostics(peer, "web/src/typo.ts", |i| !i.is_empty()).await;
    assert_eq!(
        items,
        [
            "1:32 error Property 'lenght' does not exist on type '\"abc\"'. Did you mean 'length'?@typescript"
        ]
    );
    let listed = call(peer, "code_actions", at("web/src/typo.ts", 1, 32)).await;
    let actions = listed["actions"].as_array().unwrap();
    let find = |title: &str| {
        actions
            .iter()
            .find(|a| a["title"] == title)
            .unwrap_or_else(|| panic!("no action {title}: {listed}"))
            .clone()
    };
    let fix = find("Change spelling to 'length'");
    assert_eq!((&fix["kind"], &fix["edit"]), (&json!("quickfix"), &json!(true)), "{fix}");
    let moved = find("Move to a new file");
    let refused = fail(peer, "code_action_preview", json!({"handle": moved["handle"]})).await;
    assert_eq!(refused["code"], "unsupported", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("_typescript.applyRefactoring"));

    let preview = call(peer, "code_action_preview", json!({"handle": fix["handle"]})).await;
    let (files, new) = preview_files(&preview);
    assert_eq!(
        (files, new),
        (vec!["web/src/typo.ts".to_owned()], Vec::<String>::new()),
        "{preview}"
    );
    let resolved: Vec<&Value> =
        preview["diagnostics"]["resolved"].as_array().unwrap().iter().map(|d| &d["code"]).collect();
    assert_eq!(resolved, [&json!(2551)], "{preview}");
    assert!(
        preview["documents"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+export const n: number = \"abc\".length;")
    );
    assert_eq!(
        std::fs::read_to_string(mixed.store.join("web/src/typo.ts")).unwrap(),
        "export const n: number = \"abc\".lenght;\n",
        "a preview writes nothing"
    );
    // The handle is spent.
    let spent = fail(peer, "code_action_preview", json!({"handle": fix["handle"]})).await;
    assert_eq!(spent["code"], "preview-not-found", "{spent}");
    call(peer, "preview_confirm", json!({"previewId": preview["previewId"]})).await;
    assert_eq!(
        std::fs::read_to_string(mixed.store.join("web/src/typo.ts")).unwrap(),
        "export const n: number = \"abc\".length;\n"
    );
    let (_, items) = diagnostics(peer, "web/src/typo.ts", |i| i.is_empty()).await;
    assert_eq!(items, Vec::<String>::new());
    logged(&mixed, client, "web/src/typo.ts").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clangd_answers_the_code_tools() {
    let mixed = Mixed::new();
    // A caller of `checksum`, for the call hierarchy and signature help.
    mixed.append(
        "native/checksum.c",
        "\nuint32_t twice(const char *text) {\n    return checksum(text) ^ checksum(text);\n}\n",
    );
    mixed.trust();
    let client = mixed.connect().await;
    let peer = client.peer();

    let hover = hover_when_ready(peer, at("native/checksum.c", 3, 12), "function `checksum`").await;
    assert_eq!(loc(&hover["hover"]), "native/checksum.c:3:10-3:18@clangd");
    assert!(hover["hover"]["markdown"].as_str().unwrap().contains("The FNV-1a hash"));

    // Across files: from the header's declaration to the definition, and back.
    let definition = call(peer, "definition", at("native/checksum.h", 8, 12)).await;
    assert_eq!(locs(&definition, "locations"), ["native/checksum.c:3:10-3:18@clangd"]);
    let from_call = call(peer, "definition", at("native/checksum.c", 13, 14)).await;
    assert_eq!(locs(&from_call, "locations"), ["native/checksum.c:3:10-3:18@clangd"]);
    let declaration = call(peer, "declaration", at("native/checksum.c", 3, 12)).await;
    assert_eq!(locs(&declaration, "locations"), ["native/checksum.h:8:10-8:18@clangd"]);
    // `uint32_t` is defined by the system's headers: shown with its absolute path.
    let type_definition = call(peer, "type_definition", at("native/checksum.c", 4, 15)).await;
    let shown = locs(&type_definition, "locations");
    assert_eq!(shown.len(), 1, "{type_definition}");
    assert!(shown[0].starts_with("/usr/") && shown[0].ends_with("@clangd"), "{shown:?}");
    // C has no implementations: an empty list, not an error.
    let implementation = call(peer, "implementation", at("native/checksum.c", 3, 12)).await;
    assert_eq!(implementation["total"], 0);

    let references = call(peer, "references", at("native/checksum.h", 8, 12)).await;
    assert_eq!(
        locs(&references, "references"),
        [
            "native/checksum.c:3:10-3:18@clangd",
            "native/checksum.c:13:12-13:20@clangd",
            "native/checksum.c:13:29-13:37@clangd",
            "native/checksum.h:8:10-8:18@clangd",
        ]
    );
    let symbols = call(peer, "document_symbols", json!({"path": "native/checksum.c"})).await;
    assert_eq!(names(&symbols, "symbols"), ["checksum", "twice"]);
    assert_eq!(symbols["symbols"][0]["detail"], "uint32_t (const char *)");
    let workspace =
        call(peer, "workspace_symbols", json!({"query": "checksum", "server": "clangd"})).await;
    assert!(
        locs(&workspace, "symbols").contains(&"native/checksum.c:3:10-3:18@clangd".to_owned()),
        "{workspace}"
    );

    let help = call(peer, "signature_help", at("native/checksum.c", 13, 21)).await;
    assert_eq!(
        help["signatureHelp"]["signatures"][0]["label"], "checksum(const char *text) -> uint32_t",
        "{help}"
    );
    let incoming = call(peer, "incoming_calls", at("native/checksum.c", 3, 12)).await;
    let from: Vec<String> =
        incoming["calls"].as_array().unwrap().iter().map(|c| loc(&c["from"])).collect();
    assert_eq!(from, ["native/checksum.c:12:10-12:15@clangd"], "{incoming}");
    assert_eq!(incoming["calls"][0]["ranges"].as_array().unwrap().len(), 2);
    // clangd 14 has no outgoing calls.
    let outgoing = try_call(peer, "outgoing_calls", at("native/checksum.c", 12, 12)).await;
    match outgoing {
        Err(e) => assert_eq!(e["code"], "unsupported", "{e}"),
        Ok(answer) => assert!(answer["total"].as_u64().unwrap() >= 1, "{answer}"),
    }
    let rename = call(peer, "prepare_rename", at("native/checksum.c", 4, 15)).await;
    assert_eq!(loc(&rename["rename"]), "native/checksum.c:4:14-4:18@clangd");

    mixed.append("native/checksum.c", "\nint broken(void) { return missing_value; }\n");
    let (answer, items) = diagnostics(peer, "native/checksum.c", |i| !i.is_empty()).await;
    assert_eq!(
        items,
        ["16:27 error Use of undeclared identifier 'missing_value'@clangd"],
        "{answer}"
    );

    restart_answers_again(peer, "clangd", at("native/checksum.c", 3, 12)).await;
    client.cancel().await.unwrap();
}

/// The hover of a data document of the mixed store: the core's own answer.
async fn document_hover_answers(peer: &Peer<RoleClient>) {
    let hover = call(peer, "hover", at("products/desk-lamp.dust", 5, 16)).await;
    assert_eq!(hover["hover"]["entity"], "product/desk-lamp", "{hover}");
    assert!(hover["hover"]["markdown"].as_str().unwrap().contains("Lumen Works"));
    let diagnostics = call(peer, "diagnostics", json!({"path": "products/desk-lamp.dust"})).await;
    assert_eq!(diagnostics["total"], 0, "{diagnostics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_of_code_files_name_their_code() {
    let mixed = Mixed::new();
    let outside = mixed.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("elsewhere.c"), "int x;\n").unwrap();
    std::os::unix::fs::symlink(outside.join("elsewhere.c"), mixed.store.join("native/link.c"))
        .unwrap();
    mixed.write("tools/main.rs", "fn main() {}\n");
    mixed.write("notes/a.ghost", "boo\n");
    std::fs::write(
        mixed.config_dir().join("servers.toml"),
        "[servers.ghost]\ncommand = \"stardust-no-such-language-server\"\nlanguages = { ghost = \"ghost\" }\n",
    )
    .unwrap();
    let client = mixed.connect().await;
    let peer = client.peer();
    let store = mixed.store.to_str().unwrap();

    // Not trusted yet: nothing starts, and the answer says what to run.
    let untrusted = fail(peer, "hover", at("native/checksum.c", 3, 12)).await;
    assert_eq!(untrusted["code"], "untrusted", "{untrusted}");
    assert_eq!(untrusted["server"], "clangd");
    assert_eq!(untrusted["changed"], false);
    assert_eq!(untrusted["run"], format!("stardust trust {store}"));
    assert!(
        untrusted["message"].as_str().unwrap().contains(&format!("run `stardust trust {store}`"))
    );
    let listed = status(peer, "clangd").await;
    assert_eq!(
        (&listed["state"], &listed["error"]["code"]),
        (&json!("untrusted"), &json!("untrusted"))
    );
    // workspace_symbols names the servers it could not ask.
    let symbols = call(peer, "workspace_symbols", json!({"query": "desk"})).await;
    let skipped: Vec<&str> = symbols["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["server"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["ghost", "clangd", "pyright", "typescript"], "{symbols}");
    assert!(symbols["symbols"].as_array().unwrap().iter().any(|s| s["id"] == "product/desk-lamp"));

    mixed.trust();
    let hover = call(peer, "hover", at("native/checksum.c", 3, 12)).await;
    assert_eq!(hover["hover"]["server"], "clangd");

    // A changed table needs trusting again.
    let config = std::fs::read_to_string(mixed.store.join("stardust.toml")).unwrap();
    mixed.write(
        "stardust.toml",
        &config.replace("args = [\"--log=error\"]", "args = [\"--log=error\", \"-j=1\"]"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let changed = loop {
        match try_call(peer, "hover", at("native/checksum.c", 3, 12)).await {
            Err(e) => break e,
            Ok(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Ok(answer) => panic!("the changed table still runs: {answer}"),
        }
    };
    assert_eq!(
        (&changed["code"], &changed["changed"]),
        (&json!("untrusted"), &json!(true)),
        "{changed}"
    );
    assert!(
        changed["message"].as_str().unwrap().contains("its table changed since it was trusted")
    );
    mixed.trust();
    call(peer, "hover", at("native/checksum.c", 3, 12)).await;

    let rust = fail(peer, "hover", at("tools/main.rs", 1, 4)).await;
    assert_eq!(rust["code"], "unsupported", "{rust}");
    assert!(rust["message"].as_str().unwrap().contains("no language server covers tools/main.rs"));
    let outside_path = outside.join("elsewhere.c");
    for path in [outside_path.to_str().unwrap(), "../outside/elsewhere.c", "native/link.c"] {
        let err = fail(peer, "definition", at(path, 1, 5)).await;
        assert_eq!(err["code"], "outside-store", "{path}: {err}");
    }
    let ghost = fail(peer, "hover", at("notes/a.ghost", 1, 1)).await;
    assert_eq!(ghost["code"], "server-unavailable", "{ghost}");
    assert_eq!(ghost["server"], "ghost");
    assert!(
        ghost["message"]
            .as_str()
            .unwrap()
            .contains("'stardust-no-such-language-server' is not found on PATH")
    );
    let unknown = fail(peer, "server_restart", json!({"server": "nobody"})).await;
    assert_eq!(unknown["code"], "not-found", "{unknown}");

    document_hover_answers(peer).await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_faulty_server_answers_busy_and_unavailable_while_documents_still_answer() {
    let mixed = Mixed::new();
    // The user's table: it runs without trust.
    std::fs::write(
        mixed.config_dir().join("servers.toml"),
        format!(
            "[servers.fake]\ncommand = {:?}\nlanguages = {{ fk = \"fake\" }}\ntimeouts = {{ request = 2 }}\nmax_restarts = 1\n",
            util::fake_lsp().to_str().unwrap()
        ),
    )
    .unwrap();
    mixed.write("fake/ok.fk", "fine\n");
    mixed.write("fake/hang.fk", "fake:hang-on-hover\n");
    mixed.write("fake/crash.fk", "fake:crash-on-hover\n");
    let client = mixed.connect().await;
    let peer = client.peer();

    let ok = call(peer, "hover", at("fake/ok.fk", 1, 1)).await;
    assert_eq!(ok["hover"]["markdown"], "v1 5 bytes", "{ok}");
    let first = status(peer, "fake").await;
    // The fake reports nothing: indexing until its quiet period has passed (SPEC §25).
    assert!(matches!(first["state"].as_str(), Some("indexing" | "ready")), "{first}");
    assert_eq!(first["origin"], "user");

    // A hang: `busy` after timeouts.request, and meanwhile the documents answer.
    let hanging = {
        let peer = peer.clone();
        tokio::spawn(async move { try_call(&peer, "hover", at("fake/hang.fk", 1, 1)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    document_hover_answers(peer).await;
    assert!(!hanging.is_finished(), "the hover of the hanging server answered early");
    let busy = hanging.await.unwrap().unwrap_err();
    assert_eq!((&busy["code"], &busy["server"]), (&json!("busy"), &json!("fake")), "{busy}");
    assert!(busy["message"].as_str().unwrap().contains("within 2s"), "{busy}");
    assert_eq!(status(peer, "fake").await["pid"], first["pid"], "a busy server is not restarted");

    // Several hangs at once: one call runs on its worker in place, the others hand their
    // worker over first, so the session keeps a worker and the documents still answer.
    let hangs: Vec<_> = (0..3)
        .map(|_| {
            let peer = peer.clone();
            tokio::spawn(async move { try_call(&peer, "hover", at("fake/hang.fk", 1, 1)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    document_hover_answers(peer).await;
    assert!(hangs.iter().all(|h| !h.is_finished()), "a hang answered before the documents");
    for hang in hangs {
        assert_eq!(hang.await.unwrap().unwrap_err()["code"], "busy");
    }

    // A crash mid-request: `server-unavailable`; the next request starts it again.
    let crashed = fail(peer, "hover", at("fake/crash.fk", 1, 1)).await;
    assert_eq!(crashed["code"], "server-unavailable", "{crashed}");
    assert!(
        crashed["message"].as_str().unwrap().contains("stopped while answering textDocument/hover")
    );
    document_hover_answers(peer).await;
    let again = call(peer, "hover", at("fake/ok.fk", 1, 1)).await;
    assert_eq!(again["hover"]["server"], "fake");
    let second = status(peer, "fake").await;
    assert_ne!(second["pid"], first["pid"]);
    assert_eq!((&second["restarts"], &second["recentCrashes"]), (&json!(1), &json!(1)));

    // Past max_restarts (1 a minute): unavailable, even for a file it could answer.
    let crashed = fail(peer, "hover", at("fake/crash.fk", 1, 1)).await;
    assert_eq!(crashed["code"], "server-unavailable");
    let gave_up = fail(peer, "hover", at("fake/ok.fk", 1, 1)).await;
    assert_eq!(gave_up["code"], "server-unavailable", "{gave_up}");
    assert!(gave_up["message"].as_str().unwrap().contains("run server_restart"), "{gave_up}");
    let down = status(peer, "fake").await;
    assert_eq!((&down["state"], &down["gaveUp"]), (&json!("crashed"), &json!(true)), "{down}");
    assert!(down["lastError"].as_str().unwrap().contains("crashing on hover"), "{down}");
    document_hover_answers(peer).await;

    // server_restart clears the crashes.
    let restarted = call(peer, "server_restart", json!({"server": "fake"})).await;
    let state = restarted["server"]["state"].as_str();
    assert!(matches!(state, Some("indexing" | "ready")), "{restarted}");
    assert_eq!(restarted["server"]["recentCrashes"], 0);
    let back = call(peer, "hover", at("fake/ok.fk", 1, 1)).await;
    assert_eq!(back["hover"]["server"], "fake", "{back}");
    document_hover_answers(peer).await;
    client.cancel().await.unwrap();
}

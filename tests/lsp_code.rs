//! Code files through `stardust lsp` (SPEC §17 "LSP"): the real binary relaying an editor's
//! requests and text to the real pyright (`pyright-langserver` on PATH), on a copy of
//! `examples/mixed` trusted in a temporary XDG_CONFIG_HOME; an untrusted store said so once
//! while its documents are served; and one pyright shared by an editor and an agent
//! (`stardust mcp`) attached to one core, the agent seeing the editor's unsaved text.

mod util;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use util::TIMEOUT;
use util::lsp::Lsp;
use util::mcp::Mcp;

/// pyright's first start (node loading, the first analysis) takes seconds: the waits here
/// are generous.
const PYRIGHT_WAIT: Duration = Duration::from_secs(90);

const PRICING: &str = "py/shop/pricing.py";
const CATALOG: &str = "py/shop/catalog.py";

/// A copy of `examples/mixed` with its own XDG_CONFIG_HOME (so the user's real trust and
/// servers are never read or written); the core the tests start is stopped when dropped.
struct Mixed {
    _dir: tempfile::TempDir,
    store: PathBuf,
    xdg: PathBuf,
}

impl Mixed {
    fn new(trusted: bool) -> Mixed {
        // scripts/test installs it when it is missing.
        assert!(
            on_path("pyright-langserver"),
            "pyright-langserver is not on PATH: npm install --global pyright"
        );
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        util::copy_store(&util::repo().join("examples/mixed"), &store);
        let store = store.canonicalize().unwrap();
        let xdg = dir.path().join("xdg");
        std::fs::create_dir_all(&xdg).unwrap();
        let mixed = Mixed { _dir: dir, store, xdg };
        if trusted {
            let out = mixed.command().arg("trust").arg(&mixed.store).output().unwrap();
            assert!(out.status.success(), "trust: {}", util::text(&out.stderr));
        }
        mixed
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stardust"));
        command
            .current_dir(&self.store)
            .env("XDG_CONFIG_HOME", &self.xdg)
            .env("STARDUST_IDLE_EXIT", "2")
            .env_remove("RUST_LOG");
        command
    }

    /// `stardust lsp` in the store, initialized as a client with `capabilities` (push
    /// diagnostics, UTF-16 unless they say otherwise).
    fn editor(&self, capabilities: Value) -> (Lsp, Value) {
        let mut command = self.command();
        command.arg("lsp").arg("--store").arg(&self.store);
        let mut lsp = Lsp::spawn(&mut command, &self.store);
        let result = lsp.initialize(json!({
            "processId": null, "rootUri": null, "capabilities": capabilities,
            "clientInfo": {"name": "test-editor"},
        }));
        (lsp, result)
    }

    /// The text of a file of the copy, as on disk.
    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.store.join(rel)).unwrap()
    }

    /// The pid of the core serving the store.
    fn core(&self) -> u32 {
        let record = util::record(&self.store).expect("a core serves the store");
        u32::try_from(record["pid"].as_u64().unwrap()).unwrap()
    }
}

impl Drop for Mixed {
    /// Stop the core (and with it its servers) rather than leave it to its idle exit.
    fn drop(&mut self) {
        let Some(pid) = util::record(&self.store).and_then(|r| r["pid"].as_u64()) else { return };
        let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
        let deadline = Instant::now() + TIMEOUT;
        while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(name).is_file()))
}

/// Open `rel` as Python with its text on disk; its URI and text.
fn open_python(lsp: &mut Lsp, mixed: &Mixed, rel: &str) -> (String, String) {
    let uri = lsp.uri(rel);
    let text = mixed.read(rel);
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    (uri, text)
}

/// The 0-based position (UTF-16) of the first `needle` on the first line holding `line_has`.
fn at(text: &str, line_has: &str, needle: &str) -> Value {
    let (line, content) =
        text.lines().enumerate().find(|(_, l)| l.contains(line_has)).expect("the line is there");
    let byte = content.find(needle).expect("the needle is on the line");
    json!({"line": line, "character": content[..byte].encode_utf16().count()})
}

/// A request that may have to wait for pyright's start: retried while it answers nothing
/// yet, until `ready` accepts the result.
fn until(lsp: &mut Lsp, method: &str, params: Value, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + PYRIGHT_WAIT;
    loop {
        let result = lsp.request(method, params.clone());
        if ready(&result) {
            return result;
        }
        assert!(Instant::now() < deadline, "{method} never answered as expected: {result}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The next push diagnostics for `uri` that `pred` accepts (pyright publishes after each
/// analysis).
fn diagnostics_for(lsp: &mut Lsp, uri: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + PYRIGHT_WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let found = lsp.pending.iter().position(|m| publishes(m, uri, &pred));
        if let Some(i) = found {
            return lsp.pending.remove(i)["params"]["diagnostics"].as_array().unwrap().clone();
        }
        match lsp.incoming.recv_timeout(left) {
            Ok(m) if publishes(&m, uri, &pred) => {
                return m["params"]["diagnostics"].as_array().unwrap().clone();
            }
            Ok(m) => lsp.pending.push(m),
            Err(_) => panic!("no diagnostics as expected for {uri}; received: {:?}", lsp.pending),
        }
    }
}

fn publishes(m: &Value, uri: &str, pred: &impl Fn(&[Value]) -> bool) -> bool {
    m["method"] == "textDocument/publishDiagnostics"
        && m["params"]["uri"] == uri
        && pred(m["params"]["diagnostics"].as_array().unwrap())
}

fn errors(diagnostics: &[Value]) -> Vec<&Value> {
    diagnostics.iter().filter(|d| d["severity"] == 1).collect()
}

#[test]
fn an_editor_navigates_and_is_diagnosed_by_pyright_through_the_core() {
    let mixed = Mixed::new(true);
    let (mut lsp, init) = mixed.editor(json!({}));
    let caps = &init["capabilities"];
    for provider in [
        "declarationProvider",
        "typeDefinitionProvider",
        "implementationProvider",
        "callHierarchyProvider",
        "signatureHelpProvider",
    ] {
        assert!(!caps[provider].is_null(), "{provider} is advertised: {caps}");
    }
    let triggers = caps["completionProvider"]["triggerCharacters"].as_array().unwrap();
    assert!(triggers.contains(&json!(".")) && triggers.contains(&json!("@")), "{triggers:?}");
    let (pricing, pricing_text) = open_python(&mut lsp, &mixed, PRICING);
    let (catalog, catalog_text) = open_python(&mut lsp, &mixed, CATALOG);

    // Hover and definition across files, from the use in `label`.
    let use_site = at(&catalog_text, "return f\"{self.name}", "with_tax");
    let position = json!({"textDocument": {"uri": catalog}, "position": use_site});
    let hover = until(&mut lsp, "textDocument/hover", position.clone(), |r| !r.is_null());
    let shown = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(shown.contains("with_tax") && shown.contains("price_cents: int"), "{hover}");
    let definition = lsp.request("textDocument/definition", position);
    // The client takes no links: a Location under the client's root, in the defining file.
    let target = &definition.as_array().expect("locations")[0];
    assert_eq!(target["uri"], pricing, "{definition}");
    assert_eq!(target["range"]["start"], at(&pricing_text, "def with_tax", "with_tax"));

    // References from the definition reach the other file.
    let declared = at(&pricing_text, "def with_tax", "with_tax");
    let references = lsp.request(
        "textDocument/references",
        json!({"textDocument": {"uri": pricing}, "position": declared,
               "context": {"includeDeclaration": true}}),
    );
    let in_files: Vec<&str> =
        references.as_array().unwrap().iter().map(|l| l["uri"].as_str().unwrap()).collect();
    assert!(
        in_files.contains(&pricing.as_str()) && in_files.contains(&catalog.as_str()),
        "{references}"
    );

    // Document symbols of the module.
    let symbols =
        lsp.request("textDocument/documentSymbol", json!({"textDocument": {"uri": pricing}}));
    let names: Vec<&str> =
        symbols.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    for name in ["VAT_PERCENT", "with_tax", "format_price"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }

    // A type error typed into the buffer (not saved) is pushed, then gone once fixed.
    let end = pricing_text.lines().count();
    let insert = |text: &str| {
        json!([{"range": {"start": {"line": end, "character": 0},
                                               "end": {"line": end, "character": 0}}, "text": text}])
    };
    lsp.change(&pricing, 2, insert("broken: int = \"text\"\n"));
    let found = diagnostics_for(&mut lsp, &pricing, |d| !errors(d).is_empty());
    let error = errors(&found)[0];
    assert_eq!(error["range"]["start"]["line"], end, "{found:?}");
    assert_eq!(mixed.read(PRICING), pricing_text, "the editor's text is not written");
    lsp.pending.retain(|m| m["method"] != "textDocument/publishDiagnostics");
    let fix = json!([{"range": {"start": {"line": end, "character": 14},
                                "end": {"line": end, "character": 20}}, "text": "1"}]);
    lsp.change(&pricing, 3, fix);
    diagnostics_for(&mut lsp, &pricing, |d| errors(d).is_empty());

    // The store's documents are still the core's own.
    let product = lsp.uri("products/desk-lamp.dust");
    let text = mixed.read("products/desk-lamp.dust");
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": product,
        "languageId": "dust", "version": 1, "text": text}}),
    );
    let symbols =
        lsp.request("textDocument/documentSymbol", json!({"textDocument": {"uri": product}}));
    assert!(symbols.to_string().contains("desk-lamp"), "{symbols}");
    lsp.shutdown();
}

#[test]
fn an_untrusted_store_says_so_once_and_its_documents_are_still_served() {
    let mixed = Mixed::new(false);
    let (mut lsp, _) = mixed.editor(json!({}));
    let (pricing, _) = open_python(&mut lsp, &mixed, PRICING);
    let shown = lsp.notification("window/showMessage");
    let message = shown["message"].as_str().unwrap();
    assert!(message.contains("stardust trust") && message.contains("pyright"), "{message}");
    // A request for the file answers the core's error object.
    let answer = lsp.call(
        "textDocument/hover",
        json!({"textDocument": {"uri": pricing}, "position": {"line": 0, "character": 0}}),
    );
    assert_eq!(answer["error"]["data"]["code"], "untrusted", "{answer}");
    // The second file of the same server is not said again.
    open_python(&mut lsp, &mixed, CATALOG);
    let product = lsp.uri("products/desk-lamp.dust");
    let text = mixed.read("products/desk-lamp.dust");
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": product,
        "languageId": "dust", "version": 1, "text": text}}),
    );
    let symbols =
        lsp.request("textDocument/documentSymbol", json!({"textDocument": {"uri": product}}));
    assert!(symbols.to_string().contains("desk-lamp"), "{symbols}");
    std::thread::sleep(Duration::from_millis(500));
    while let Ok(m) = lsp.incoming.try_recv() {
        lsp.pending.push(m);
    }
    let again = lsp.pending.iter().filter(|m| m["method"] == "window/showMessage").count();
    assert_eq!(again, 0, "said once: {:?}", lsp.pending);
    lsp.shutdown();
}

/// pyright's pid as the agent's `server_status` reports it.
fn pyright_pid(agent: &mut Mcp) -> u64 {
    let status = agent.ok("server_status", json!({"server": "pyright"}));
    status["servers"][0]["pid"].as_u64().unwrap_or_else(|| panic!("a pid: {status}"))
}

/// Every process under `root` whose command line names `program`, not counting one whose
/// parent does too (a server's own worker processes).
fn servers_under(root: u32, program: &str) -> Vec<u32> {
    let mut parent = HashMap::new();
    let mut cmdline = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(after) = stat.rfind(')') else { continue };
        let ppid = stat[after + 2..].split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
        parent.insert(pid, ppid.unwrap_or(0));
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline.insert(pid, String::from_utf8_lossy(&line).contains(program));
    }
    let under = |mut pid: u32| {
        while let Some(&p) = parent.get(&pid) {
            if p == root {
                return true;
            }
            pid = p;
        }
        false
    };
    let mut found: Vec<u32> = parent
        .keys()
        .copied()
        .filter(|&pid| cmdline[&pid] && under(pid))
        .filter(|pid| parent.get(pid).is_none_or(|p| cmdline.get(p) != Some(&true)))
        .collect();
    found.sort_unstable();
    found
}

#[test]
fn an_editor_and_an_agent_share_one_pyright_and_the_agent_sees_unsaved_text() {
    let mixed = Mixed::new(true);
    let (mut lsp, _) = mixed.editor(json!({}));
    let (catalog, catalog_text) = open_python(&mut lsp, &mixed, CATALOG);
    let (pricing, pricing_text) = open_python(&mut lsp, &mixed, PRICING);
    let use_site = at(&catalog_text, "return f\"{self.name}", "format_price");
    let position = json!({"textDocument": {"uri": catalog}, "position": use_site});
    until(&mut lsp, "textDocument/hover", position.clone(), |r| !r.is_null());

    // The agent attaches to the same core (whose environment decides trust) and finds
    // pyright running.
    let mut agent = Mcp::open(&mixed.store, &[], "test-agent");
    let before = pyright_pid(&mut agent);
    lsp.request("textDocument/definition", position.clone());
    lsp.request(
        "textDocument/references",
        json!({"textDocument": {"uri": catalog}, "position": use_site,
               "context": {"includeDeclaration": true}}),
    );
    let hover = agent.ok(
        "hover",
        json!({"path": CATALOG,
        "position": {"line": use_site["line"].as_u64().unwrap() + 1,
                     "column": use_site["character"].as_u64().unwrap() + 1}}),
    );
    assert_eq!(hover["server"], "pyright", "{hover}");
    assert_eq!(pyright_pid(&mut agent), before, "the editor's requests used the same process");
    let core = mixed.core();
    let running = servers_under(core, "pyright-langserver");
    assert_eq!(running.len(), 1, "one pyright under the core {core}: {running:?}");

    // The editor adds a function and does not save: the agent's symbols list it.
    let end = pricing_text.lines().count();
    let added = "\n\ndef discount(price_cents: int) -> int:\n    return price_cents // 2\n";
    lsp.change(
        &pricing,
        2,
        json!([{"range": {"start": {"line": end, "character": 0},
        "end": {"line": end, "character": 0}}, "text": added}]),
    );
    // A request of the editor after its change: the change has reached the core by then.
    lsp.request("textDocument/documentSymbol", json!({"textDocument": {"uri": pricing}}));
    let symbols = agent.ok("document_symbols", json!({"path": PRICING}));
    let names: Vec<&str> = symbols["symbols"]
        .as_array()
        .unwrap_or_else(|| panic!("symbols: {symbols}"))
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"discount"), "the unsaved function: {names:?}");
    assert!(!mixed.read(PRICING).contains("discount"), "nothing was written");
    // A type error the editor types (unsaved) is in the agent's diagnostics.
    let end = end + added.lines().count();
    lsp.change(
        &pricing,
        3,
        json!([{"range": {"start": {"line": end, "character": 0},
        "end": {"line": end, "character": 0}}, "text": "broken: int = \"text\"\n"}]),
    );
    lsp.request("textDocument/documentSymbol", json!({"textDocument": {"uri": pricing}}));
    // pyright first publishes for a new version what it has before checking (nothing here),
    // so an answer right after the change may not have the error yet: asked again until it
    // does (docs/DECISIONS.md, "LSP relay for code files").
    let deadline = Instant::now() + PYRIGHT_WAIT;
    let (found, lines) = loop {
        let found = agent.ok("diagnostics", json!({"path": PRICING}));
        let lines: Vec<u64> = found["diagnostics"]
            .as_array()
            .unwrap_or_else(|| panic!("diagnostics: {found}"))
            .iter()
            .filter(|d| d["severity"] == "error")
            .map(|d| d["range"]["line"].as_u64().unwrap())
            .collect();
        if !lines.is_empty() || Instant::now() > deadline {
            break (found, lines);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(lines, [end as u64 + 1], "1-based, in the editor's text: {found}");
    assert_eq!(pyright_pid(&mut agent), before);
    drop(agent);
    lsp.shutdown();
}

/// A module with characters that count differently in UTF-8 and UTF-16 before each name.
const MENU: &str = "from shop.pricing import with_tax\n\nlabel = \"café ☕\"; total = with_tax(100)\ntotal2 = with_t\n";

/// The 0-based position in UTF-8 bytes of the first `needle` on the first line holding
/// `line_has`.
fn at_utf8(text: &str, line_has: &str, needle: &str) -> Value {
    let (line, content) =
        text.lines().enumerate().find(|(_, l)| l.contains(line_has)).expect("the line is there");
    json!({"line": line, "character": content.find(needle).expect("the needle is on the line")})
}

/// The result's `[i]["uri"]` values.
fn uris(result: &Value, key: &str) -> Vec<String> {
    let items = result.as_array().unwrap_or_else(|| panic!("a list: {result}"));
    items.iter().map(|l| l[key]["uri"].as_str().or(l["uri"].as_str()).unwrap().to_owned()).collect()
}

#[test]
fn every_relayed_request_answers_in_the_clients_encoding_and_uris() {
    let mixed = Mixed::new(true);
    std::fs::write(mixed.store.join("py/shop/menu.py"), MENU).unwrap();
    // UTF-8 columns: pyright counts UTF-16, so every position is converted both ways.
    let (mut lsp, init) = mixed.editor(json!({"general": {"positionEncodings": ["utf-8"]}}));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    let (menu, _) = open_python(&mut lsp, &mixed, "py/shop/menu.py");
    let (pricing, pricing_text) = open_python(&mut lsp, &mixed, PRICING);
    let (catalog, _) = open_python(&mut lsp, &mixed, CATALOG);
    let use_site = at_utf8(MENU, "label", "with_tax");
    let name_range = {
        let end = use_site["character"].as_u64().unwrap() + 8;
        json!({"start": use_site, "end": {"line": use_site["line"], "character": end}})
    };
    let position = json!({"textDocument": {"uri": menu}, "position": use_site});
    let hover = until(&mut lsp, "textDocument/hover", position.clone(), |r| !r.is_null());
    assert_eq!(hover["range"], name_range, "the hover's range in UTF-8: {hover}");

    let declared = at(&pricing_text, "def with_tax", "with_tax");
    for method in ["textDocument/declaration", "textDocument/typeDefinition"] {
        let found = lsp.request(method, position.clone());
        assert_eq!(uris(&found, "target"), std::slice::from_ref(&pricing), "{method}: {found}");
        assert_eq!(found[0]["range"]["start"], declared, "{method}: {found}");
    }
    let highlights = lsp.request("textDocument/documentHighlight", position.clone());
    let ranges: Vec<&Value> = highlights.as_array().unwrap().iter().map(|h| &h["range"]).collect();
    assert!(ranges.contains(&&name_range), "{highlights}");

    // Completion, and its resolve routed back to pyright by the item's tag.
    let typed = at_utf8(MENU, "total2", "with_t");
    let typed =
        json!({"line": typed["line"], "character": typed["character"].as_u64().unwrap() + 6});
    let completion = lsp.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": menu}, "position": typed}),
    );
    let items = completion["items"].as_array().or(completion.as_array()).unwrap();
    let item =
        items.iter().find(|i| i["label"] == "with_tax").expect("with_tax is offered").clone();
    let resolved = lsp.request("completionItem/resolve", item);
    assert_eq!(resolved["label"], "with_tax", "{resolved}");
    assert!(resolved.to_string().contains("nearest cent"), "pyright's documentation: {resolved}");
    // A trigger character pyright does not list is not asked of it.
    let at_sign = lsp.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": menu},
        "position": typed, "context": {"triggerKind": 2, "triggerCharacter": "@"}}),
    );
    assert!(at_sign.is_null(), "{at_sign}");

    let paren = at_utf8(MENU, "label", "100");
    let help = lsp.request(
        "textDocument/signatureHelp",
        json!({"textDocument": {"uri": menu}, "position": paren}),
    );
    assert!(help["signatures"][0]["label"].as_str().unwrap().contains("price_cents"), "{help}");

    // Rename answers the edit for the editor to apply: every file, under the client's root,
    // without the server's versions; nothing is written.
    let prepared = lsp.request("textDocument/prepareRename", position.clone());
    assert_eq!(prepared, name_range, "{prepared}");
    let edit = lsp.request(
        "textDocument/rename",
        json!({"textDocument": {"uri": menu}, "position": use_site, "newName": "add_tax"}),
    );
    let changes = edit["documentChanges"].as_array().unwrap_or_else(|| panic!("{edit}"));
    let files: Vec<&str> =
        changes.iter().map(|c| c["textDocument"]["uri"].as_str().unwrap()).collect();
    for file in [&catalog, &menu, &pricing] {
        assert!(files.contains(&file.as_str()), "{file} in {edit}");
    }
    assert!(changes.iter().all(|c| c["textDocument"]["version"].is_null()), "{edit}");
    let in_menu = changes.iter().find(|c| c["textDocument"]["uri"] == menu).unwrap();
    assert!(in_menu["edits"].as_array().unwrap().iter().any(|e| e["range"] == name_range));
    assert!(mixed.read(PRICING).contains("def with_tax"), "nothing was written");

    // The call hierarchy: its items go back to pyright by their tag.
    let items = lsp.request(
        "textDocument/prepareCallHierarchy",
        json!({"textDocument": {"uri": pricing}, "position": declared}),
    );
    let incoming = lsp.request("callHierarchy/incomingCalls", json!({"item": items[0]}));
    let callers = uris(&incoming, "from");
    assert!(callers.contains(&menu) && callers.contains(&catalog), "{incoming}");
    let from_menu = incoming.as_array().unwrap().iter().find(|c| c["from"]["uri"] == menu).unwrap();
    assert_eq!(from_menu["fromRanges"][0], name_range, "in the caller's file, UTF-8");

    // What pyright does not serve is empty, not an error; semantic tokens are not relayed.
    for (method, params) in [
        ("textDocument/implementation", position.clone()),
        (
            "textDocument/formatting",
            json!({"textDocument": {"uri": menu},
            "options": {"tabSize": 4, "insertSpaces": true}}),
        ),
        ("textDocument/semanticTokens/full", json!({"textDocument": {"uri": menu}})),
    ] {
        assert_eq!(lsp.request(method, params), Value::Null, "{method}");
    }
    // Entities and pyright's symbols together.
    let symbols = lsp.request("workspace/symbol", json!({"query": "with_tax"}));
    assert!(uris(&symbols, "location").contains(&pricing), "{symbols}");
    let symbols = lsp.request("workspace/symbol", json!({"query": "desk-lamp"}));
    assert!(symbols.to_string().contains("product/desk-lamp"), "{symbols}");
    lsp.shutdown();
}

#[test]
fn a_client_that_pulls_diagnostics_pulls_those_of_code_files_too() {
    let mixed = Mixed::new(true);
    let capabilities = json!({"textDocument": {"diagnostic": {"dynamicRegistration": false}}});
    let (mut lsp, _) = mixed.editor(capabilities);
    let (pricing, text) = open_python(&mut lsp, &mixed, PRICING);
    let end = text.lines().count();
    lsp.change(
        &pricing,
        2,
        json!([{"range": {"start": {"line": end, "character": 0},
        "end": {"line": end, "character": 0}}, "text": "broken: int = \"text\"\n"}]),
    );
    let report = until(
        &mut lsp,
        "textDocument/diagnostic",
        json!({"textDocument": {"uri": pricing}}),
        |r| r["items"].as_array().is_some_and(|items| !errors(items).is_empty()),
    );
    assert_eq!(report["kind"], "full");
    assert_eq!(errors(report["items"].as_array().unwrap())[0]["range"]["start"]["line"], end);
    // Pulled, not pushed as well.
    let pushed = lsp
        .pending
        .iter()
        .any(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == pricing);
    assert!(!pushed, "{:?}", lsp.pending);
    lsp.shutdown();
}

#[test]
fn an_editor_rooted_in_a_mount_is_answered_in_mount_paths() {
    let mixed = Mixed::new(true);
    let mnt = mixed._dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mut serve = mixed
        .command()
        .arg("serve")
        .arg(&mixed.store)
        .arg("--mount")
        .arg(&mnt)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    util::wait_until("the store is mounted", || mnt.join(".stardust/store.json").is_file());
    let mnt = mnt.canonicalize().unwrap();
    // Started inside the mount, as an editor opening it would: it finds the store through the
    // mount and attaches to the core serving it.
    let mut command = mixed.command();
    command.arg("lsp").current_dir(mnt.join("py"));
    let mut lsp = Lsp::spawn(&mut command, &mnt);
    let root = format!("file://{}", mnt.display());
    lsp.initialize(json!({"processId": null, "rootUri": root, "capabilities": {},
        "workspaceFolders": [{"uri": root, "name": "mnt"}]}));
    let (catalog, catalog_text) = open_python(&mut lsp, &mixed, CATALOG);
    let (pricing, pricing_text) = open_python(&mut lsp, &mixed, PRICING);
    assert!(catalog.starts_with(&root) && pricing.starts_with(&root));
    let use_site = at(&catalog_text, "return f\"{self.name}", "with_tax");
    let position = json!({"textDocument": {"uri": catalog}, "position": use_site});
    until(&mut lsp, "textDocument/hover", position.clone(), |r| !r.is_null());
    let definition = lsp.request("textDocument/definition", position);
    assert_eq!(uris(&definition, "target"), std::slice::from_ref(&pricing), "{definition}");
    // Pushed diagnostics name the file by its mount path too.
    let end = pricing_text.lines().count();
    lsp.change(
        &pricing,
        2,
        json!([{"range": {"start": {"line": end, "character": 0},
        "end": {"line": end, "character": 0}}, "text": "broken: int = \"text\"\n"}]),
    );
    let found = diagnostics_for(&mut lsp, &pricing, |d| !errors(d).is_empty());
    assert_eq!(errors(&found)[0]["range"]["start"]["line"], end);
    lsp.shutdown();
    let _ = Command::new("kill").args(["-TERM", &serve.id().to_string()]).status();
    let _ = serve.wait();
}

#[test]
fn a_servers_progress_reaches_a_client_under_a_token_the_client_created() {
    let mixed = Mixed::new(false);
    // The user's own table always runs: the fake reports work for a while after it starts.
    std::fs::create_dir_all(mixed.xdg.join("stardust")).unwrap();
    let table = format!(
        "[servers.fake]\ncommand = {:?}\nargs = [\"--progress-at-start\", \"300\"]\n\
         languages = {{ fk = \"fake\" }}\n",
        util::fake_lsp().display().to_string()
    );
    std::fs::write(mixed.xdg.join("stardust/servers.toml"), table).unwrap();
    std::fs::write(mixed.store.join("notes.fk"), "fake\n").unwrap();
    let (mut lsp, _) = mixed.editor(json!({"window": {"workDoneProgress": true}}));
    let uri = lsp.uri("notes.fk");
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri,
        "languageId": "fake", "version": 1, "text": "fake\n"}}),
    );
    // The relay first creates a token of its own on the client, then reports under it.
    let create = lsp.wait(|m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    assert_eq!(token, "stardust/fake/start", "{create}");
    lsp.send(json!({"jsonrpc": "2.0", "id": create["id"], "result": null}));
    let begin = lsp.wait(|m| m["method"] == "$/progress");
    assert_eq!(begin["params"]["token"], token, "{begin}");
    assert_eq!(begin["params"]["value"]["kind"], "begin", "{begin}");
    assert_eq!(begin["params"]["value"]["title"], "fake: indexing the fake");
    let end = lsp.wait(|m| m["method"] == "$/progress");
    assert_eq!(end["params"], json!({"token": token, "value": {"kind": "end"}}));
    lsp.shutdown();
}

#[test]
fn a_client_without_work_done_progress_gets_none() {
    let mixed = Mixed::new(false);
    std::fs::create_dir_all(mixed.xdg.join("stardust")).unwrap();
    let table = format!(
        "[servers.fake]\ncommand = {:?}\nargs = [\"--progress-at-start\", \"100\"]\n\
         languages = {{ fk = \"fake\" }}\n",
        util::fake_lsp().display().to_string()
    );
    std::fs::write(mixed.xdg.join("stardust/servers.toml"), table).unwrap();
    std::fs::write(mixed.store.join("notes.fk"), "fake\n").unwrap();
    let (mut lsp, _) = mixed.editor(json!({}));
    let uri = lsp.uri("notes.fk");
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri,
        "languageId": "fake", "version": 1, "text": "fake\n"}}),
    );
    // The fake answers hover with what it was given: the server runs and has the text.
    let hover = lsp.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
    );
    assert!(!hover.is_null(), "{hover}");
    std::thread::sleep(Duration::from_millis(500));
    while let Ok(m) = lsp.incoming.try_recv() {
        lsp.pending.push(m);
    }
    let progress = lsp
        .pending
        .iter()
        .filter(|m| m["method"] == "$/progress" || m["method"] == "window/workDoneProgress/create");
    assert_eq!(progress.count(), 0, "{:?}", lsp.pending);
    lsp.shutdown();
}

/// SPEC §18: an agent's rename of a Python function (pyright, through the same core) shows as
/// code lenses on each code file it touches in an editor when the store shares previews; the
/// lens's command confirms it, and the files hold the renamed function.
#[test]
fn an_agents_code_rename_shows_as_lenses_on_the_code_files_it_touches() {
    let mixed = Mixed::new(true);
    let config = mixed.store.join("stardust.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str("\n[previews]\nshare = true\n");
    std::fs::write(&config, toml).unwrap();
    let (mut lsp, _) = mixed.editor(json!({}));
    let (catalog, catalog_text) = open_python(&mut lsp, &mixed, CATALOG);
    let use_site = at(&catalog_text, "return f\"{self.name}", "format_price");
    let position = json!({"textDocument": {"uri": catalog}, "position": use_site});
    until(&mut lsp, "textDocument/hover", position, |r| !r.is_null());

    let mut agent = Mcp::open(&mixed.store, &[], "test-agent");
    let rename =
        json!({"path": PRICING, "position": {"line": 6, "column": 6}, "newName": "add_tax"});
    let preview = agent.ok("rename_preview", rename);
    let id = preview["previewId"].clone();
    let lenses = lsp.request("textDocument/codeLens", json!({"textDocument": {"uri": catalog}}));
    let titles: Vec<&Value> =
        lenses.as_array().unwrap().iter().map(|l| &l["command"]["title"]).collect();
    assert_eq!(titles, ["preview by test-agent (rename_preview): confirm", "discard"], "{lenses}");
    let confirm = &lenses[0]["command"];
    assert_eq!(confirm["arguments"], json!([{"previewId": id}]));
    let pricing = lsp.uri(PRICING);
    let on_pricing =
        lsp.request("textDocument/codeLens", json!({"textDocument": {"uri": pricing}}));
    assert_eq!(on_pricing.as_array().unwrap().len(), 2, "{on_pricing}");

    let committed = lsp.run(confirm["command"].as_str().unwrap(), confirm["arguments"][0].clone());
    assert!(committed["seq"].is_u64(), "{committed}");
    assert!(mixed.read(PRICING).contains("def add_tax("));
    let after = lsp.request("textDocument/codeLens", json!({"textDocument": {"uri": catalog}}));
    assert_eq!(after, json!([]));
    drop(agent);
    lsp.shutdown();
}

/// Each token of a relative `data` answer as `line:column text=type`, `column` in bytes (the
/// client spoke UTF-8), the type named by `legend`.
fn tokens_shown(text: &str, data: &[Value], legend: &[Value]) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut line, mut start) = (0usize, 0usize);
    data.chunks_exact(5)
        .map(|t| {
            let n = |i: usize| t[i].as_u64().unwrap() as usize;
            line += n(0);
            start = if n(0) == 0 { start + n(1) } else { n(1) };
            let word = lines[line].get(start..start + n(2)).unwrap_or("<not a char boundary>");
            format!("{line}:{start} {word}={}", legend[n(3)].as_str().unwrap())
        })
        .collect()
}

#[test]
fn a_code_files_semantic_tokens_are_its_servers_in_the_editors_legend_and_encoding() {
    let mixed = Mixed::new(true);
    let caps = json!({"general": {"positionEncodings": ["utf-8"]},
        "textDocument": {"semanticTokens": {"requests": {"full": {"delta": true}, "range": true},
            "tokenTypes": [], "tokenModifiers": [], "formats": ["relative"]}}});
    let (mut lsp, init) = mixed.editor(caps);
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    let legend = init["capabilities"]["semanticTokensProvider"]["legend"]["tokenTypes"]
        .as_array()
        .unwrap()
        .clone();
    // The core's own kinds keep their places; the names servers use follow.
    assert_eq!(legend[0], "property");
    assert!(legend.contains(&json!("function")) && legend.contains(&json!("interface")));
    // An unsaved line with a character TypeScript counts as two UTF-16 units, and four bytes.
    let rel = "web/src/main.ts";
    let text = format!("{}const wide = \"😀\"; const after = wide;\n", mixed.read(rel));
    let uri = lsp.uri(rel);
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "typescript", "version": 1, "text": text}}),
    );
    let full = until(
        &mut lsp,
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
        |r| r["data"].as_array().is_some_and(|d| !d.is_empty()),
    );
    let shown = tokens_shown(&text, full["data"].as_array().unwrap(), &legend);
    let last = text.lines().count() - 1;
    for expected in [
        "3:17 Product=interface".to_owned(),
        "10:16 label=function".to_owned(),
        // typescript-language-server's `member`, under the standard name.
        "15:8 log=method".to_owned(),
        format!("{last}:6 wide=variable"),
        // Past the emoji: its UTF-16 column converted to bytes.
        format!("{last}:27 after=variable"),
        format!("{last}:35 wide=variable"),
    ] {
        assert!(shown.contains(&expected), "{expected} not in {shown:?}");
    }
    // A range asks for the lines it covers only; a delta is answered in full.
    let range = json!({"start": {"line": 10, "character": 0}, "end": {"line": 12, "character": 0}});
    let ranged = lsp.request(
        "textDocument/semanticTokens/range",
        json!({"textDocument": {"uri": uri}, "range": range}),
    );
    let ranged = tokens_shown(&text, ranged["data"].as_array().unwrap(), &legend);
    assert!(ranged.iter().all(|t| t.starts_with("10:") || t.starts_with("11:")), "{ranged:?}");
    assert!(ranged.contains(&"10:16 label=function".to_owned()), "{ranged:?}");
    let delta = lsp.request(
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": {"uri": uri}, "previousResultId": "1"}),
    );
    assert_eq!(delta["data"], full["data"]);
    // pyright offers no semantic tokens: nothing, and no error.
    let (py, _) = open_python(&mut lsp, &mixed, PRICING);
    let none =
        lsp.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": py}}));
    assert_eq!(none, Value::Null);
}

#[test]
fn clangds_document_links_and_on_type_formatting_reach_the_editor() {
    assert!(on_path("clangd"), "clangd is not on PATH: apt install clangd");
    let mixed = Mixed::new(true);
    let (mut lsp, _) = mixed.editor(json!({}));
    let rel = "native/checksum.c";
    let uri = lsp.uri(rel);
    let text = mixed.read(rel);
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": text}}),
    );
    // `#include "checksum.h"` leads to the header, under the editor's root.
    let links =
        until(&mut lsp, "textDocument/documentLink", json!({"textDocument": {"uri": uri}}), |r| {
            r.as_array().is_some_and(|l| !l.is_empty())
        });
    assert_eq!(links[0]["target"], lsp.uri("native/checksum.h"), "{links}");
    assert_eq!(links[0]["range"]["start"]["line"], 0, "{links}");
    // A new line typed after `{`: clangd's edits indent it (its own style: two spaces). A character clangd does not
    // trigger on (`]`, which documents do) is not asked of it.
    let typed = text.replacen("text) {\n", "text) {\n\n", 1);
    lsp.change(&uri, 2, json!([{"text": typed}]));
    let format = |ch: &str| {
        json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 0}, "ch": ch,
               "options": {"tabSize": 4, "insertSpaces": true}})
    };
    let edits = lsp.request("textDocument/onTypeFormatting", format("\n"));
    let edits = edits.as_array().unwrap_or_else(|| panic!("edits: {edits}"));
    let indents = |e: &Value| e["newText"].as_str().is_some_and(|t| t.ends_with("\n  "));
    assert!(edits.iter().any(indents), "{edits:?}");
    assert_eq!(lsp.request("textDocument/onTypeFormatting", format("]")), Value::Null);
}

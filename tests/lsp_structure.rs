//! End-to-end tests of the structure features of `stardust lsp` (SPEC §20): folding ranges,
//! selection ranges, document links, highlights, inlay hints and code lenses, spoken to the
//! real binary over stdio on a copy of the sample library; and Neovim's headless self-test of
//! examples/editors/neovim when `nvim` is installed.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

mod util;

use util::lsp::Lsp as Client;

/// Start on `store` and initialize with `capabilities`.
fn start(store: &Path, capabilities: Value) -> Client {
    let init = json!({"processId": null, "rootUri": null, "capabilities": capabilities});
    start_in(store, Some(store), init)
}

/// Start in folder `cwd` (with `--store` when `flag` is given) and initialize with `init`;
/// `cwd` is also where the test's URIs point.
fn start_in(cwd: &Path, flag: Option<&Path>, init: Value) -> Client {
    let mut client = Client::start(cwd, cwd, flag);
    let result = client.initialize(init);
    for provider in [
        "foldingRangeProvider",
        "selectionRangeProvider",
        "documentLinkProvider",
        "documentHighlightProvider",
        "inlayHintProvider",
        "codeLensProvider",
    ] {
        assert!(!result["capabilities"][provider].is_null(), "{provider} in {result}");
    }
    client
}

/// A client that offers `encoding` and folds as `line_folding_only` says.
fn with(store: &Path, encoding: &str, line_folding_only: bool) -> Client {
    start(
        store,
        json!({
            "general": {"positionEncodings": [encoding]},
            "textDocument": {"foldingRange": {"lineFoldingOnly": line_folding_only}}
        }),
    )
}

/// The 0-based line of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> u64 {
    text.lines().position(|l| l.starts_with(prefix)).expect("the line exists") as u64
}

fn read(store: &Path, rel: &str) -> String {
    std::fs::read_to_string(store.join(rel)).unwrap()
}

#[test]
fn folding_follows_the_clients_line_folding_only() {
    let tmp = util::library();
    let dune = read(tmp.path(), "books/dune.dust");
    let editions = line_of(&dune, "editions");
    let close = line_of(&dune, "]");
    for line_only in [true, false] {
        let mut client = with(tmp.path(), "utf-16", line_only);
        let folds = client.request(
            "textDocument/foldingRange",
            json!({"textDocument": client.doc("books/dune.dust")}),
        );
        let folds = folds.as_array().unwrap();
        // The two opening comment lines fold as a comment.
        assert_eq!(folds[0]["kind"], "comment", "{folds:?}");
        assert_eq!(
            (folds[0]["startLine"].as_u64(), folds[0]["endLine"].as_u64()),
            (Some(0), Some(1))
        );
        let array = folds
            .iter()
            .find(|f| f["startLine"] == json!(editions))
            .unwrap_or_else(|| panic!("the editions array folds: {folds:?}"));
        assert_eq!(array["kind"], "region");
        if line_only {
            // The closing bracket's line stays visible; no characters are sent.
            assert_eq!(array["endLine"], json!(close - 1));
            assert!(array.get("startCharacter").is_none(), "{array}");
        } else {
            assert_eq!(array["endLine"], json!(close));
            assert_eq!(array["startCharacter"], json!("editions   [".len()));
            assert_eq!(array["endCharacter"], json!(0));
        }
        // The inline arrays and object (genres, tags, rights) do not fold.
        assert!(folds.iter().all(|f| f["startLine"] != json!(line_of(&dune, "rights"))));
        client.shutdown();
    }
}

#[test]
fn a_selection_grows_from_a_reference_to_the_document() {
    let tmp = util::library();
    let dune = read(tmp.path(), "books/dune.dust");
    let line = line_of(&dune, "author");
    let mut client = with(tmp.path(), "utf-16", false);
    let ranges = client.request(
        "textDocument/selectionRange",
        json!({"textDocument": client.doc("books/dune.dust"), "positions": [{"line": line, "character": 14}]}),
    );
    let mut chain = Vec::new();
    let mut at = &ranges[0];
    while !at.is_null() {
        chain.push(at["range"].clone());
        at = &at["parent"];
    }
    let start = "author     ".len();
    let end = start + "@person/frank-herbert".len();
    assert_eq!(
        chain[0],
        json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": end}})
    );
    assert_eq!(
        chain[1],
        json!({"start": {"line": line, "character": 0}, "end": {"line": line, "character": end}})
    );
    // Then the entity (the implicit top-level object, from `id`) and the whole document.
    assert_eq!(chain[2]["start"], json!({"line": line_of(&dune, "id"), "character": 0}));
    assert_eq!(chain.last().unwrap()["start"], json!({"line": 0, "character": 0}));
    assert_eq!(chain.len(), 4, "{chain:?}");
    client.shutdown();
}

#[test]
fn references_and_schemas_link_to_their_targets_and_dangling_ones_do_not() {
    let tmp = util::library();
    let dune = read(tmp.path(), "books/dune.dust");
    let herbert = read(tmp.path(), "people/frank-herbert.dust");
    let mut client = with(tmp.path(), "utf-16", false);
    let text = dune.replace("@series/dune-chronicles", "@series/nowhere");
    client.open("books/dune.dust", &text);
    let links = client.request(
        "textDocument/documentLink",
        json!({"textDocument": client.doc("books/dune.dust")}),
    );
    let links = links.as_array().unwrap();
    let author = line_of(&dune, "author");
    let to_herbert = links
        .iter()
        .find(|l| l["range"]["start"]["line"] == json!(author))
        .unwrap_or_else(|| panic!("the author links: {links:?}"));
    let id_line = line_of(&herbert, "id") + 1;
    let id_column = "id           ".len() + 1;
    assert_eq!(
        to_herbert["target"],
        format!("{}#L{id_line},{id_column}", client.uri("people/frank-herbert.dust"))
    );
    let series = line_of(&dune, "series");
    assert!(
        links.iter().all(|l| l["range"]["start"]["line"] != json!(series)),
        "a dangling reference has no link: {links:?}"
    );

    // `$schema` leads to the schema document, and a schema's `$ref` to the place it names.
    let note = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {"title": {"$ref": "book.schema.json#/properties/title"}}
}
"#;
    client.open("schemas/note.schema.json", note);
    let data = "{\"$schema\": \"../schemas/note.schema.json\", \"title\": \"x\"}\n";
    client.open("notes/one.json", data);
    let links = client.request(
        "textDocument/documentLink",
        json!({"textDocument": client.doc("notes/one.json")}),
    );
    assert_eq!(links[0]["target"], format!("{}#L1,1", client.uri("schemas/note.schema.json")));
    let links = client.request(
        "textDocument/documentLink",
        json!({"textDocument": client.doc("schemas/note.schema.json")}),
    );
    let targets: Vec<&str> =
        links.as_array().unwrap().iter().map(|l| l["target"].as_str().unwrap()).collect();
    assert_eq!(targets[0], "https://json-schema.org/draft/2020-12/schema");
    let book = read(tmp.path(), "schemas/book.schema.json");
    let title_line =
        book.lines().position(|l| l.trim_start().starts_with("\"title\": {")).unwrap() + 1;
    assert!(
        targets[1]
            .starts_with(&format!("{}#L{title_line},", client.uri("schemas/book.schema.json"))),
        "{targets:?}"
    );
    client.shutdown();
}

/// A `$schema` URL and a `$ref` URL open the store's copy of the schema they name by its `$id`
/// (SPEC §23), at the subschema a fragment names.
#[test]
fn schema_urls_link_to_the_stores_copy() {
    let tmp = tempfile::tempdir().unwrap();
    util::copy_store(&util::repo().join("examples/schema-uris"), tmp.path());
    let mut client = with(tmp.path(), "utf-16", false);
    let team = read(tmp.path(), "data/team.json");
    client.open("data/team.json", &team);
    let links = client.request(
        "textDocument/documentLink",
        json!({"textDocument": client.doc("data/team.json")}),
    );
    assert_eq!(
        links[0]["target"],
        format!("{}#L1,1", client.uri("vendor/d7/team.json")),
        "{links}"
    );
    let person = read(tmp.path(), "vendor/d6/person.json");
    client.open("vendor/d6/person.json", &person);
    let links = client.request(
        "textDocument/documentLink",
        json!({"textDocument": client.doc("vendor/d6/person.json")}),
    );
    let targets: Vec<&str> =
        links.as_array().unwrap().iter().map(|l| l["target"].as_str().unwrap()).collect();
    let defs = read(tmp.path(), "shared/defs.json");
    let tags = defs.lines().position(|l| l.trim_start().starts_with("\"tags\"")).unwrap() + 1;
    assert!(
        targets.contains(&format!("{}#L1,1", client.uri("vendor/d4/address.json")).as_str()),
        "{targets:?}"
    );
    assert!(
        targets
            .iter()
            .any(|t| t.starts_with(&format!("{}#L{tags},", client.uri("shared/defs.json")))),
        "{targets:?}"
    );
    client.shutdown();
}

#[test]
fn every_occurrence_of_an_id_is_highlighted() {
    let tmp = util::library();
    let mut client = with(tmp.path(), "utf-16", false);
    let text = r#"[
  {"id": "person/a", "type": "person", "name": "A", "friend": "@person/b"},
  {"id": "person/b", "type": "person", "name": "B", "friend": "@person/a", "rival": "@person/a"}
]
"#;
    client.open("people/pair.json", text);
    let found = client.request(
        "textDocument/documentHighlight",
        json!({"textDocument": client.doc("people/pair.json"), "position": {"line": 1, "character": 12}}),
    );
    let found: Vec<(u64, u64, u64)> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["range"]["start"]["line"].as_u64().unwrap(),
                h["range"]["start"]["character"].as_u64().unwrap(),
                h["kind"].as_u64().unwrap(),
            )
        })
        .collect();
    let line2 = text.lines().nth(2).unwrap();
    let first = line2.find("\"@person/a\"").unwrap() as u64;
    let second = line2.rfind("\"@person/a\"").unwrap() as u64;
    // 3 is Write (the id value), 2 is Read (a reference).
    assert_eq!(found, [(1, 9, 3), (2, first, 2), (2, second, 2)]);
    client.shutdown();
}

#[test]
fn a_reference_is_followed_by_its_targets_title_in_the_clients_encoding() {
    let tmp = util::library();
    // A non-ASCII name before the reference: the hint's column differs by encoding.
    let text = "id      review/x\ntype    review\nnotes   ['Üé😀' \"@person/frank-herbert\"]\n";
    for (encoding, column) in [("utf-8", 43), ("utf-16", 39), ("utf-32", 38)] {
        let mut client = with(tmp.path(), encoding, false);
        let uri = client.open("reviews/x.dust", text);
        let hints = client.request(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}}),
        );
        let hints = hints.as_array().unwrap();
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert_eq!(hints[0]["position"], json!({"line": 2, "character": column}), "{encoding}");
        assert_eq!(hints[0]["label"][0]["value"], "Frank Herbert");
        assert!(hints[0].get("tooltip").is_none(), "the tooltip comes on resolve");
        let resolved = client.request("inlayHint/resolve", hints[0].clone());
        let tooltip = resolved["tooltip"]["value"].as_str().unwrap();
        assert!(tooltip.contains("**person/frank-herbert** (person)"), "{tooltip}");
        assert_eq!(
            resolved["label"][0]["location"]["uri"],
            client.uri("people/frank-herbert.dust")
        );
        client.shutdown();
    }
}

#[test]
fn lenses_count_referrers_and_run_a_query_document() {
    let tmp = util::library();
    let mut client = with(tmp.path(), "utf-16", false);
    let herbert = client.doc("people/frank-herbert.dust");
    let lenses = client.request("textDocument/codeLens", json!({"textDocument": herbert}));
    let lenses = lenses.as_array().unwrap();
    assert_eq!(lenses.len(), 1, "{lenses:?}");
    assert!(lenses[0].get("command").is_none(), "counted on resolve");
    let resolved = client.request("codeLens/resolve", lenses[0].clone());
    let position = resolved["range"]["start"].clone();
    let references = client.request(
        "textDocument/references",
        json!({"textDocument": herbert, "position": position, "context": {"includeDeclaration": false}}),
    );
    let count = references.as_array().unwrap().len();
    assert!(count > 3, "the library refers to Frank Herbert often");
    let command = &resolved["command"];
    assert_eq!(command["title"], format!("{count} references"));
    assert_eq!(command["command"], "editor.action.showReferences");
    assert_eq!(command["arguments"][0], herbert["uri"]);
    assert_eq!(command["arguments"][1], position);
    assert_eq!(command["arguments"][2].as_array().unwrap().len(), count);

    let query = "; Frank Herbert's books\nfind   [?b]\nwhere  [[?b type book] [?b author ?a] [?a name 'Frank Herbert']]\n";
    let uri = client.open("queries/herbert.dust", query);
    let lenses = client.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}}));
    let run = &lenses[0]["command"];
    assert_eq!(run["command"], "stardust.query.execute", "{lenses}");
    let rows = client.request(
        "workspace/executeCommand",
        json!({"command": run["command"], "arguments": run["arguments"]}),
    );
    assert!(rows["rows"].as_array().unwrap().iter().any(|r| r[0] == "book/dune"), "{rows}");
    client.shutdown();
}

/// A client rooted in a mount of the store (`stardust serve --mount`) is answered in mount
/// URIs: links, the hint's location and the lens's references.
#[test]
fn a_client_in_a_mount_is_linked_to_mount_paths() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, mnt, serve) = util::mounted_library(dir.path());
    let mnt = mnt.canonicalize().unwrap();
    let root = format!("file://{}", mnt.display());
    let init = json!({"processId": null, "rootUri": root, "capabilities": {}});
    let mut client = start_in(&mnt, None, init);
    let dune = client.doc("books/dune.dust");
    let links = client.request("textDocument/documentLink", json!({"textDocument": dune}));
    let links = links.as_array().unwrap();
    assert!(!links.is_empty());
    for link in links {
        assert!(link["target"].as_str().unwrap().starts_with(&root), "{link}");
    }
    let herbert = client.doc("people/frank-herbert.dust");
    let lenses = client.request("textDocument/codeLens", json!({"textDocument": herbert}));
    let resolved = client.request("codeLens/resolve", lenses[0].clone());
    let locations = resolved["command"]["arguments"][2].as_array().unwrap();
    assert!(!locations.is_empty());
    for location in locations {
        assert!(location["uri"].as_str().unwrap().starts_with(&root), "{location}");
    }
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 30, "character": 0}});
    let hints =
        client.request("textDocument/inlayHint", json!({"textDocument": dune, "range": range}));
    let resolved = client.request("inlayHint/resolve", hints[0].clone());
    assert!(
        resolved["label"][0]["location"]["uri"].as_str().unwrap().starts_with(&root),
        "{resolved}"
    );
    client.shutdown();
    // SIGTERM lets the core unmount; a killed one would leave the mount behind.
    assert!(serve.stop().success());
}

/// examples/editors/neovim/check.lua against the real server, when Neovim is installed
/// (scripts/test installs it): it checks attaching, diagnostics, commands, folding, links and
/// a JSONC buffer.
#[test]
fn neovims_headless_self_test_passes() {
    let Ok(found) = Command::new("nvim").arg("--version").output() else {
        eprintln!("nvim is not on PATH: scripts/test installs it; the self-test did not run");
        return;
    };
    assert!(found.status.success());
    let tmp = util::library();
    let check = util::repo().join("examples/editors/neovim/check.lua");
    let out = Command::new("nvim")
        .args(["--headless", "-u", "NONE", "-c"])
        .arg(format!("luafile {}", check.display()))
        .env("STARDUST", env!("CARGO_BIN_EXE_stardust"))
        .env("STORE", tmp.path())
        .env("STARDUST_IDLE_EXIT", "2")
        .env("XDG_STATE_HOME", tmp.path().join(".nvim-state"))
        .env("XDG_DATA_HOME", tmp.path().join(".nvim-data"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let printed = format!("{}{}", util::text(&out.stdout), util::text(&out.stderr));
    assert!(out.status.success(), "the Neovim self-test failed:\n{printed}");
    for step in ["ok   folding ranges", "ok   document links", "ok   a .jsonc file is served"] {
        assert!(printed.contains(step), "{step:?} missing from:\n{printed}");
    }
}

//! End-to-end tests of `stardust lsp`: the real binary over stdio, spoken to with
//! Content-Length framed JSON-RPC, on a copy of the sample library.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod util;

use util::TIMEOUT;
use util::lsp::Lsp as Client;

fn start(store: &Path) -> Client {
    Client::start(store, store, Some(store))
}

/// Start in `cwd`, with `--store` when `flag` is given; `store` is where URIs point.
fn start_in(store: &Path, flag: Option<&Path>, cwd: &Path) -> Client {
    Client::start(store, cwd, flag)
}

/// Start and initialize with the given position encodings offered.
fn initialized(store: &Path, encodings: &[&str]) -> (Client, Value) {
    initialized_with(
        store,
        json!({"processId": null, "rootUri": null, "capabilities": {"general": {"positionEncodings": encodings}}}),
    )
}

/// Start and initialize with the given `initialize` parameters.
fn initialized_with(store: &Path, params: Value) -> (Client, Value) {
    let mut client = start(store);
    let result = client.initialize(params);
    (client, result)
}

/// Start as the editor `name` that asks for every change notification.
fn subscribed(store: &Path, name: &str) -> (Client, Value) {
    initialized_with(
        store,
        json!({
            "processId": null,
            "rootUri": null,
            "clientInfo": {"name": name},
            "capabilities": {
                "experimental": {"stardust": {"notifications": ["documentsChanged", "entitiesChanged"]}},
                "workspace": {"workspaceEdit": {"documentChanges": true, "resourceOperations": ["create", "rename", "delete"]}}
            }
        }),
    )
}

fn dune(tmp: &Path) -> String {
    std::fs::read_to_string(tmp.join("books/dune.dust")).unwrap()
}

fn codes(diagnostics: &[Value]) -> Vec<String> {
    diagnostics.iter().map(|d| d["code"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn every_position_encoding_is_negotiated() {
    let tmp = util::library();
    for (offered, chosen) in [
        (vec!["utf-8"], "utf-8"),
        (vec!["utf-32", "utf-16"], "utf-32"),
        (vec![], "utf-16"),
        (vec!["utf-7", "utf-16"], "utf-16"),
    ] {
        let (client, result) = initialized(tmp.path(), &offered);
        assert_eq!(result["capabilities"]["positionEncoding"], chosen, "offered {offered:?}");
        assert_eq!(result["capabilities"]["textDocumentSync"]["change"], 2);
        client.shutdown();
    }
}

#[test]
fn a_dangling_reference_is_pushed_then_cleared_and_pulled() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &["utf-16"]);
    let text = dune(tmp.path()).replace("@person/frank-herbert", "@person/frank-herbrt");
    let uri = client.open("books/dune.dust", &text);
    let diagnostics = client.published(&uri, 1);
    assert_eq!(codes(&diagnostics), ["dangling-ref"]);
    let d = &diagnostics[0];
    let line = text.lines().position(|l| l.starts_with("author")).unwrap();
    let column = text.lines().nth(line).unwrap().find('@').unwrap();
    assert_eq!(
        d["range"],
        json!({"start": {"line": line, "character": column}, "end": {"line": line, "character": column + "@person/frank-herbrt".len()}})
    );
    assert_eq!(d["severity"], 1);
    assert_eq!(d["source"], "stardust");
    assert_eq!(d["relatedInformation"], json!([]));
    assert_eq!(d["data"]["candidates"][0], "person/frank-herbert");
    assert!(d["message"].as_str().unwrap().contains("did you mean '@person/frank-herbert', "));

    // Insert the missing 'e' back.
    let at = json!({"line": line, "character": column + "@person/frank-herb".len()});
    client.change(&uri, 2, json!([{"range": {"start": at, "end": at}, "text": "e"}]));
    assert_eq!(client.published(&uri, 2), Vec::<Value>::new());

    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(pulled["kind"], "full");
    assert_eq!(pulled["items"], json!([]));
    let workspace = client.request("workspace/diagnostic", json!({"previousResultIds": []}));
    assert_eq!(workspace["items"], json!([]), "the library is clean");
    client.change(&uri, 3, json!([{"text": "id book/dune\ntype book\ntitle Dune\n"}]));
    client.published(&uri, 3);
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    let items = pulled["items"].as_array().unwrap();
    assert!(codes(items).iter().all(|c| c == "schema"), "{items:?}");
    assert!(!items.is_empty());
    let workspace = client.request("workspace/diagnostic", json!({"previousResultIds": []}));
    assert_eq!(workspace["items"].as_array().unwrap().len(), 1, "{workspace}");
    assert_eq!(workspace["items"][0]["uri"], uri);
    assert_eq!(workspace["items"][0]["version"], 3);
    assert_eq!(&workspace["items"][0]["items"], &pulled["items"]);
    client.shutdown();
}

#[test]
fn unsaved_buffers_are_diagnosed_across_documents() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    // A new, unsaved entity that duplicates an id: both documents get the diagnostic.
    let dup = client.open("books/copy.dust", "id book/dune\ntype book\n");
    let diagnostics = client.published(&dup, 1);
    let dup_diag = diagnostics.iter().find(|d| d["code"] == "duplicate-id").expect("duplicate-id");
    let related = dup_diag["relatedInformation"].as_array().unwrap();
    assert_eq!(related.len(), 1);
    assert_eq!(related[0]["location"]["uri"], client.uri("books/dune.dust"));
    client.shutdown();
}

#[test]
fn multi_byte_characters_count_in_the_negotiated_encoding() {
    let tmp = util::library();
    // '😀' is 2 UTF-16 units and 1 UTF-32 unit; the dangling reference follows it.
    let text = "id book/x\ntype book\ntitle '😀' author @person/nobody\n";
    let byte_col = text.lines().nth(2).unwrap().find('@').unwrap();
    for (encoding, column) in
        [("utf-16", byte_col - 2), ("utf-32", byte_col - 3), ("utf-8", byte_col)]
    {
        let (mut client, _) = initialized(tmp.path(), &[encoding]);
        let uri = client.open("books/x.dust", text);
        let diagnostics = client.published(&uri, 1);
        let d = diagnostics.iter().find(|d| d["code"] == "dangling-ref").expect("dangling-ref");
        assert_eq!(d["range"]["start"], json!({"line": 2, "character": column}), "{encoding}");
        // An edit addressed in the same encoding lands right after the emoji.
        let at = json!({"line": 2, "character": column - 9});
        client.change(&uri, 2, json!([{"range": {"start": at, "end": at}, "text": "!"}]));
        client.published(&uri, 2);
        let pulled =
            client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
        let d = pulled["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == "dangling-ref")
            .unwrap()
            .clone();
        assert_eq!(d["range"]["start"]["character"], json!(column + 1), "{encoding}");
        client.shutdown();
    }
}

/// The zero-based line and UTF-16 column of the end of `text`.
fn end_of(text: &str) -> Value {
    let line = text.matches('\n').count();
    let column = text.rsplit('\n').next().unwrap().encode_utf16().count();
    json!({"line": line, "character": column})
}

#[test]
fn a_burst_of_edits_ends_like_a_fresh_open() {
    let tmp = util::library();
    let original = dune(tmp.path());
    // Type a broken document one character at a time, each an incremental edit at the end;
    // every tenth character also types a stray 'x' and deletes it again.
    let target = original
        .replace("@person/frank-herbert", "@person/frank-h")
        .replace("1965\n", "1965\nyear 1966\n")
        .replace("title      Dune", "title      'Dûne 😀'");
    let (mut client, _) = initialized(tmp.path(), &[]);
    let uri = client.open("books/dune.dust", "");
    let mut typed = String::new();
    let mut version = 1;
    for (i, c) in target.chars().enumerate() {
        let at = end_of(&typed);
        version += 1;
        client.change(
            &uri,
            version,
            json!([{"range": {"start": at, "end": at}, "text": c.to_string()}]),
        );
        typed.push(c);
        if i % 10 == 0 {
            let at = end_of(&typed);
            version += 1;
            client.change(&uri, version, json!([{"range": {"start": at, "end": at}, "text": "x"}]));
            let after =
                json!({"line": at["line"], "character": at["character"].as_u64().unwrap() + 1});
            version += 1;
            client.change(
                &uri,
                version,
                json!([{"range": {"start": at, "end": after}, "text": ""}]),
            );
        }
    }
    assert_eq!(typed, target);
    assert!(version >= 500, "{version} edits");
    let after_burst = client.published(&uri, version);
    let burst_symbols =
        client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    client.shutdown();

    let (mut fresh, _) = initialized(tmp.path(), &[]);
    let uri = fresh.open("books/dune.dust", &target);
    let direct = fresh.published(&uri, 1);
    assert_eq!(after_burst, direct);
    assert!(codes(&direct).contains(&"dangling-ref".to_owned()), "{direct:?}");
    assert!(codes(&direct).contains(&"duplicate-key".to_owned()), "{direct:?}");
    // The final buffer is the target text: its symbols (names and ranges) agree too.
    let fresh_symbols =
        fresh.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    assert_eq!(burst_symbols, fresh_symbols);
    fresh.shutdown();
}

/// The zero-based line and column of byte `at` of an ASCII `text`.
fn position_of(text: &str, at: usize) -> Value {
    let line = text[..at].matches('\n').count();
    let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1);
    json!({"line": line, "character": column})
}

/// Edits inside the items of a large entity array re-parse only the item edited (the core's
/// splice); every pull along the way must show exactly what a fresh parse shows.
#[test]
fn edits_inside_an_entity_array_pull_like_a_fresh_open() {
    let tmp = util::library();
    let item = |i: usize| {
        format!(
            "  {{\n    \"id\": \"book/list-{i}\",\n    \"type\": \"book\",\n    \"title\": \"T{i}\",\n    \"author\": \"@person/frank-herbert\",\n    \"year\": 1965,\n    \"status\": \"draft\"\n  }}"
        )
    };
    let mut text = format!("[\n{}\n]\n", (0..6).map(item).collect::<Vec<_>>().join(",\n"));
    let (mut client, _) = initialized(tmp.path(), &[]);
    let uri = client.open("books/list.json", &text);
    assert_eq!(client.published(&uri, 1), Vec::<Value>::new());
    let mut version = 1;
    // Replace the `nth` occurrence of `old` by `new` and pull: the diagnostics as (code, start).
    let mut edit = |client: &mut Client, text: &mut String, old: &str, nth: usize, new: &str| {
        let at = text.match_indices(old).nth(nth).unwrap().0;
        let range =
            json!({"start": position_of(text, at), "end": position_of(text, at + old.len())});
        version += 1;
        client.change(&uri, version, json!([{"range": range, "text": new}]));
        text.replace_range(at..at + old.len(), new);
        let pulled =
            client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
        let mut found: Vec<(String, Value)> = pulled["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["code"].as_str().unwrap().to_owned(), d["range"]["start"].clone()))
            .collect();
        found.sort_by_key(|(code, start)| (start.to_string(), code.clone()));
        found
    };
    let at = |text: &str, needle: &str, nth: usize| {
        position_of(text, text.match_indices(needle).nth(nth).unwrap().0)
    };

    // A syntax error and its repair: both parsed whole.
    let found = edit(&mut client, &mut text, "\"draft\"", 5, "\"draft");
    assert!(found.iter().any(|(code, _)| code == "syntax"), "{found:?}");
    let found = edit(&mut client, &mut text, "\"draft", 5, "\"draft\"");
    assert_eq!(found, []);
    let found = edit(&mut client, &mut text, "1965", 2, "\"x\"");
    assert_eq!(found, [("schema".to_owned(), at(&text, "\"x\"", 0))]);
    let found = edit(&mut client, &mut text, "@person/frank-herbert", 4, "@person/nobody");
    assert_eq!(
        found,
        [
            ("schema".to_owned(), at(&text, "\"x\"", 0)),
            ("dangling-ref".to_owned(), at(&text, "\"@person/nobody\"", 0)),
        ]
    );
    // New lines inside an earlier item move every later diagnostic down.
    let found = edit(&mut client, &mut text, "\"T1\"", 0, "\n      \"a longer title\"\n");
    assert_eq!(
        found,
        [
            ("schema".to_owned(), at(&text, "\"x\"", 0)),
            ("dangling-ref".to_owned(), at(&text, "\"@person/nobody\"", 0)),
        ]
    );
    let found = edit(&mut client, &mut text, "@person/nobody", 0, "@person/frank-herbert");
    assert_eq!(found, [("schema".to_owned(), at(&text, "\"x\"", 0))]);
    // An id made a duplicate of another item's.
    let found = edit(&mut client, &mut text, "book/list-3", 0, "book/list-0");
    assert_eq!(
        found,
        [
            ("duplicate-id".to_owned(), at(&text, "\"book/list-0\"", 0)),
            ("schema".to_owned(), at(&text, "\"x\"", 0)),
            ("duplicate-id".to_owned(), at(&text, "\"book/list-0\"", 1)),
        ]
    );
    // Diagnostics, symbols (the node tree's ranges) and a hover on the last item agree too.
    let answers = |client: &mut Client, uri: &str, text: &str| {
        let doc = json!({"textDocument": {"uri": uri}});
        let hover = json!({"textDocument": {"uri": uri}, "position": at(text, "\"year\"", 5)});
        [
            client.request("textDocument/diagnostic", doc.clone()),
            client.request("textDocument/documentSymbol", doc),
            client.request("textDocument/hover", hover),
        ]
    };
    let last = answers(&mut client, &uri, &text);
    client.shutdown();

    let (mut fresh, _) = initialized(tmp.path(), &[]);
    let uri = fresh.open("books/list.json", &text);
    let direct = answers(&mut fresh, &uri, &text);
    assert_eq!(last, direct);
    assert!(last[2]["contents"].to_string().contains("ear"), "{}", last[2]);
    fresh.shutdown();
}

#[test]
fn an_out_of_range_edit_is_refused_and_the_buffer_kept() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    let uri = client.open("books/x.dust", "id book/x\ntype book\n");
    let before = client.published(&uri, 1);
    let far = json!({"line": 40, "character": 0});
    client.change(&uri, 2, json!([{"range": {"start": far, "end": far}, "text": "{{{"}]));
    assert_eq!(client.published(&uri, 2), before);
    let end = json!({"line": 2, "character": 0});
    client.change(&uri, 3, json!([{"range": {"start": end, "end": end}, "text": "title {\n"}]));
    assert!(codes(&client.published(&uri, 3)).contains(&"syntax".to_owned()));
    client.shutdown();
}

#[test]
fn malformed_frames_and_unknown_methods_do_not_stop_the_server() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    client.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": ");
    client.send_raw(b"[1, 2, 3]");
    client.stdin.write_all(b"Content-Length: nine\r\n\r\n").unwrap();
    client.notify("textDocument/didOpen", json!({"textDocument": 42}));
    client.notify("stardust/unknownNotification", json!({}));
    let response = client.call("stardust/noSuchMethod", json!({}));
    assert_eq!(response["error"]["code"], -32601, "{response}");
    let pulled = client.call(
        "textDocument/diagnostic",
        json!({"textDocument": {"uri": "file:///elsewhere/x.dust"}}),
    );
    assert_eq!(pulled["error"]["data"]["code"], "outside-store", "{pulled}");
    client.shutdown();
}

/// The zero-based line and UTF-16 column of the first `needle` in `text`, plus `delta` columns.
fn find(text: &str, needle: &str, delta: usize) -> Value {
    let at = text.find(needle).expect("the needle is in the text");
    let line = text[..at].matches('\n').count();
    let column = text[..at].rsplit('\n').next().unwrap().encode_utf16().count();
    json!({"line": line, "character": column + delta})
}

#[test]
fn hover_definition_and_references_follow_ids() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    let text = dune(tmp.path());
    let uri = client.open("books/dune.dust", &text);
    client.published(&uri, 1);
    let on_ref = find(&text, "@person/frank-herbert", 3);
    let at = json!({"textDocument": {"uri": uri}, "position": on_ref});

    let hover = client.request("textDocument/hover", at.clone());
    assert_eq!(hover["contents"]["kind"], "markdown");
    let markdown = hover["contents"]["value"].as_str().unwrap();
    assert!(
        markdown.starts_with("**person/frank-herbert** (person)\n\nFrank Herbert"),
        "{markdown}"
    );
    assert_eq!(hover["range"]["start"], find(&text, "@person/frank-herbert", 0));

    let definition = client.request("textDocument/definition", at.clone());
    let person = std::fs::read_to_string(tmp.path().join("people/frank-herbert.dust")).unwrap();
    let start = find(&person, "person/frank-herbert", 0);
    assert_eq!(
        definition,
        json!([{"uri": client.uri("people/frank-herbert.dust"), "range": {"start": start, "end": {"line": start["line"], "character": start["character"].as_u64().unwrap() + 20}}}])
    );

    let mut params = at.clone();
    params["context"] = json!({"includeDeclaration": false});
    let references = client.request("textDocument/references", params);
    let references = references.as_array().unwrap();
    let expected = walk(tmp.path())
        .iter()
        .map(|p| {
            std::fs::read_to_string(p).unwrap().matches("\"@person/frank-herbert\"").count()
                + std::fs::read_to_string(p).unwrap().matches(" @person/frank-herbert").count()
        })
        .sum::<usize>();
    assert!(expected >= 2);
    assert_eq!(references.len(), expected, "{references:?}");
    assert!(references.iter().any(|r| r["uri"] == uri));

    // The `type` value leads to the schema.
    let on_type = json!({"textDocument": {"uri": uri}, "position": find(&text, "book\n", 1)});
    let definition = client.request("textDocument/definition", on_type.clone());
    assert_eq!(definition[0]["uri"], client.uri("schemas/book.schema.json"));
    let hover = client.request("textDocument/hover", on_type);
    assert!(hover["contents"]["value"].as_str().unwrap().starts_with("**Book**"), "{hover}");

    // Nothing under the cursor (a comment) is an empty answer, not an error.
    let on_comment = json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 3}});
    assert_eq!(client.request("textDocument/hover", on_comment.clone()), Value::Null);
    assert_eq!(client.request("textDocument/definition", on_comment), Value::Null);

    // A position past the end of a line is an error with a code.
    let bad = json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 999}});
    let response = client.call("textDocument/hover", bad);
    assert_eq!(response["error"]["data"]["code"], "invalid-arguments", "{response}");
    client.shutdown();
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "dust" || e == "json") {
            out.push(path);
        }
    }
    out
}

#[test]
fn symbols_of_a_document_and_of_the_workspace() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    let uri = client.uri("books/dune.dust");
    let symbols =
        client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    assert_eq!(symbols[0]["name"], "book/dune");
    assert_eq!(symbols[0]["detail"], "book");
    let children: Vec<&str> = symbols[0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(&children[..4], ["id", "type", "title", "author"]);

    let found = client.request("workspace/symbol", json!({"query": "dune mess"}));
    assert_eq!(found[0]["name"], "book/dune-messiah", "{found}");
    assert_eq!(found[0]["location"]["uri"], client.uri("books/dune-messiah.dust"));
    let by_title = client.request("workspace/symbol", json!({"query": "Frank Herbert"}));
    assert!(
        by_title.as_array().unwrap().iter().any(|s| s["name"] == "person/frank-herbert"),
        "{by_title}"
    );
    client.shutdown();
}

#[test]
fn formatting_is_one_whole_document_edit_and_refuses_syntax_errors() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &["utf-32"]);
    let uri = client.open("books/x.dust", "id   book/x\ntype 'book'\ntitle  'Ü'\n");
    client.published(&uri, 1);
    let params =
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}});
    let edits = client.request("textDocument/formatting", params.clone());
    assert_eq!(
        edits,
        json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}, "newText": "id     book/x\ntype   book\ntitle  Ü\n"}])
    );
    client.change(&uri, 2, json!([{"text": "id     book/x\ntype   book\ntitle  Ü\n"}]));
    client.published(&uri, 2);
    assert_eq!(client.request("textDocument/formatting", params.clone()), json!([]));
    client.change(&uri, 3, json!([{"text": "id book/x\ntitle {\n"}]));
    client.published(&uri, 3);
    let response = client.call("textDocument/formatting", params);
    assert_eq!(response["error"]["data"]["code"], "invalid-arguments", "{response}");
    assert!(response["error"]["message"].as_str().unwrap().contains("syntax error"), "{response}");
    client.shutdown();
}

#[test]
fn completion_offers_properties_values_and_references() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    let text = "id book/x\ntype book\nauthor @person/fr\nstatus \n";
    let uri = client.open("books/x.dust", text);
    client.published(&uri, 1);

    let on_ref = json!({"textDocument": {"uri": uri}, "position": find(text, "@person/fr", 10)});
    let items = client.request("textDocument/completion", on_ref);
    let labels: Vec<&str> =
        items.as_array().unwrap().iter().map(|i| i["label"].as_str().unwrap()).collect();
    assert!(labels.contains(&"@person/frank-herbert"), "{labels:?}");
    assert!(labels.iter().all(|l| l.starts_with("@person/")), "only persons: {labels:?}");
    let frank =
        items.as_array().unwrap().iter().find(|i| i["label"] == "@person/frank-herbert").unwrap();
    assert_eq!(frank["textEdit"]["range"]["start"], find(text, "@person/fr", 0));
    assert_eq!(frank["textEdit"]["newText"], "@person/frank-herbert");

    let on_status = json!({"textDocument": {"uri": uri}, "position": find(text, "status \n", 7)});
    let items = client.request("textDocument/completion", on_status);
    let labels: Vec<&str> =
        items.as_array().unwrap().iter().map(|i| i["label"].as_str().unwrap()).collect();
    assert!(labels.contains(&"published"), "{labels:?}");

    let new_line = json!({"textDocument": {"uri": uri}, "position": {"line": 4, "character": 0}});
    let items = client.request("textDocument/completion", new_line);
    let title =
        items.as_array().unwrap().iter().find(|i| i["label"] == "title").expect("title is offered");
    assert_eq!(title["insertTextFormat"], 2);
    assert!(title["textEdit"]["newText"].as_str().unwrap().starts_with("title "), "{title}");
    assert!(
        items.as_array().unwrap().iter().all(|i| i["label"] != "author"),
        "author is already there"
    );
    client.shutdown();
}

#[test]
fn documents_changed_on_disk_are_read_again() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    let uri = client.open(
        "books/x.dust",
        "id book/x\ntype book\ntitle X\nyear 2000\nstatus draft\nauthor @person/new-one\n",
    );
    assert_eq!(codes(&client.published(&uri, 1)), ["dangling-ref"]);
    std::fs::write(
        tmp.path().join("people/new-one.dust"),
        "id person/new-one\ntype person\nname 'New One'\n",
    )
    .unwrap();
    let created = client.uri("people/new-one.dust");
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": created, "type": 1}]}),
    );
    assert_eq!(client.published(&uri, 1), Vec::<Value>::new());
    // Closing a buffer that was never saved drops it: what references it dangles again.
    let other = client.open("books/y.dust", "id book/y\ntype book\ntitle Y\nyear 2000\nstatus draft\nauthor @person/new-one\nseries @book/x\n");
    let before = client.published(&other, 1);
    assert!(!codes(&before).contains(&"dangling-ref".to_owned()), "{before:?}");
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
    let after = client.published(&other, 1);
    assert!(codes(&after).contains(&"dangling-ref".to_owned()), "{after:?}");
    client.shutdown();
}

#[test]
fn the_store_is_found_from_the_working_directory_or_the_client_root() {
    let tmp = util::library();
    let elsewhere = tempfile::tempdir().unwrap();
    let root_uri = format!("file://{}", tmp.path().display());
    for (cwd, root) in
        [(tmp.path().join("books"), Value::Null), (elsewhere.path().to_owned(), json!(root_uri))]
    {
        let mut client = start_in(tmp.path(), None, &cwd);
        let init = json!({"processId": null, "rootUri": root, "capabilities": {}});
        client.request("initialize", init);
        client.notify("initialized", json!({}));
        let uri = client.uri("books/dune.dust");
        let pulled =
            client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
        assert_eq!(pulled["items"], json!([]), "from {}", cwd.display());
        client.shutdown();
    }
    let mut lost = start_in(tmp.path(), None, elsewhere.path());
    let response =
        lost.call("initialize", json!({"processId": null, "rootUri": null, "capabilities": {}}));
    assert_eq!(response["error"]["data"]["code"], "not-found", "{response}");
}

#[test]
fn commands_are_advertised_with_their_contracts() {
    let tmp = util::library();
    let (client, result) = subscribed(tmp.path(), "e2e-editor");
    let caps = &result["capabilities"];
    let commands: Vec<&str> = caps["executeCommandProvider"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(commands.len(), 20, "{commands:?}");
    assert!(commands.contains(&"stardust.preview.confirm"));
    let stardust = &caps["experimental"]["stardust"];
    assert_eq!(stardust["protocolVersion"], 1);
    assert_eq!(stardust["readOnly"], false);
    assert_eq!(stardust["notifications"], json!(["documentsChanged", "entitiesChanged"]));
    let contracts = stardust["commands"].as_array().unwrap();
    assert_eq!(contracts.len(), 20);
    let names: Vec<&str> = contracts.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, commands);
    assert!(contracts.iter().all(|c| c["arguments"]["type"] == "object"), "{contracts:?}");
    client.shutdown();
}

#[test]
fn a_view_whose_result_changes_is_a_derived_document_change() {
    let tmp = util::library();
    std::fs::write(
        tmp.path().join("views.dust"),
        "id view/dune-pages\ntype view\nformat csv\npath views/dune.csv\nquery {find [?p] where [[?b type book] [?b id book/dune] [?b pages ?p]]}\n",
    )
    .unwrap();
    let (mut client, _) = subscribed(tmp.path(), "e2e-editor");
    let preview = client.run(
        "stardust.mutation.execute",
        json!({"document": "find [?b] where [[?b id book/dune]]", "set": {"pages": 413}}),
    );
    let confirmed =
        client.run("stardust.preview.confirm", json!({"previewId": preview["previewId"]}));
    let seq = confirmed["seq"].as_u64().expect("a seq");
    let derived = client.wait(|m| {
        m["method"] == "stardust/documentsChanged" && m["params"]["documents"][0]["derived"] == true
    });
    let expected = util::stardust(&["view", tmp.path().to_str().unwrap(), "view/dune-pages"]);
    assert_eq!(util::text(&expected.stdout), "p\r\n413\r\n");
    assert_eq!(
        derived["params"],
        json!({"seq": seq, "documents": [{
            "uri": client.uri("views/dune.csv"),
            "path": "views/dune.csv",
            "change": "changed",
            "version": stardust_core::analysis::version_of(&expected.stdout),
            "derived": true,
        }]})
    );
    client.shutdown();
}

#[test]
fn a_confirmed_preview_notifies_and_re_diagnoses_open_buffers() {
    let tmp = util::library();
    let (mut client, _) = subscribed(tmp.path(), "e2e-editor");
    let uri = client.open(
        "books/x.dust",
        "id book/x\ntype book\ntitle X\nyear 2000\nstatus draft\nauthor @person/new-one\n",
    );
    assert_eq!(codes(&client.published(&uri, 1)), ["dangling-ref"]);

    let found = client.run(
        "stardust.query.execute",
        json!({"document": "find [?p] where [[?p type person] [?p name 'Frank Herbert']]"}),
    );
    assert_eq!(found["rows"], json!([["person/frank-herbert"]]), "{found}");

    let preview = client.run(
        "stardust.entity.create",
        json!({"entities": ["id person/new-one type person name 'New One' roles [author]"]}),
    );
    let id = preview["previewId"].as_str().expect("a preview id").to_owned();
    assert_eq!(preview["committable"], true, "{preview}");
    assert!(!tmp.path().join("people/new-one.dust").exists(), "a preview writes nothing");

    let confirmed = client.run("stardust.preview.confirm", json!({"previewId": id}));
    let seq = confirmed["seq"].as_u64().expect("a seq");
    let documents = client.notification("stardust/documentsChanged");
    assert_eq!(documents["seq"], seq);
    // The new document, then the files derived from it (SPEC §19): its JSON projection and
    // its entity's file, each with the version of the document they derive from.
    let version = &documents["documents"][0]["version"];
    assert_eq!(
        documents["documents"],
        json!([
            {"uri": client.uri("people/new-one.dust"), "path": "people/new-one.dust", "change": "created", "version": version},
            {"uri": client.uri(".stardust/entities/person/new-one.json"), "path": ".stardust/entities/person/new-one.json", "change": "created", "version": version, "derived": true},
            {"uri": client.uri(".stardust/json/people/new-one.dust.json"), "path": ".stardust/json/people/new-one.dust.json", "change": "created", "version": version, "derived": true},
        ])
    );
    assert_eq!(version.as_str().unwrap().len(), 64);
    let entities = client.notification("stardust/entitiesChanged");
    assert_eq!(
        entities,
        json!({"seq": seq, "entities": [{"id": "person/new-one", "change": "created"}]})
    );
    // The open buffer's reference now resolves.
    assert_eq!(client.published(&uri, 1), Vec::<Value>::new());

    // The preview is single-use.
    let again = client.command("stardust.preview.confirm", json!({"previewId": id}));
    assert_eq!(again["error"]["data"]["code"], "preview-not-found", "{again}");
    client.shutdown();

    // The commit was made by this editor's session.
    let log = util::stardust(&["log", tmp.path().to_str().unwrap(), "--format", "json"]);
    let last = util::text(&log.stdout).lines().last().unwrap().to_owned();
    let last: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["origin"], "lsp:e2e-editor", "{last}");
}

/// A client that pulls is not also sent the diagnostics of every edit; after a commit it is
/// asked to pull again.
#[test]
fn a_pulling_client_is_asked_to_refresh_instead_of_being_pushed() {
    let tmp = util::library();
    let capabilities = json!({
        "textDocument": {"diagnostic": {"dynamicRegistration": false}},
        "workspace": {"diagnostics": {"refreshSupport": true}},
    });
    let (mut client, _) = initialized_with(
        tmp.path(),
        json!({"processId": null, "rootUri": null, "capabilities": capabilities}),
    );
    let uri =
        client.open("books/x.dust", "id book/x\ntype book\ntitle X\nyear 2000\nstatus draft\n");
    let end = json!({"line": 5, "character": 0});
    client.change(
        &uri,
        2,
        json!([{"range": {"start": end, "end": end}, "text": "author @person/new-one\n"}]),
    );
    let pull = |client: &mut Client| {
        let pulled =
            client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
        codes(pulled["items"].as_array().unwrap())
    };
    assert_eq!(pull(&mut client), ["dangling-ref"]);
    // Anything published would have come by now, computed beside the pull.
    std::thread::sleep(Duration::from_millis(300));
    while let Ok(message) = client.incoming.try_recv() {
        client.pending.push(message);
    }
    assert!(
        client.pending.iter().all(|m| m["method"] != "textDocument/publishDiagnostics"),
        "{:?}",
        client.pending
    );

    let commit = |client: &mut Client, name: &str, args: Value| {
        let preview = client.run(name, args);
        let id = preview["previewId"].as_str().unwrap().to_owned();
        client.run("stardust.preview.confirm", json!({"previewId": id}));
        client.wait(|m| m["method"] == "workspace/diagnostic/refresh")
    };
    let create =
        json!({"entities": ["id person/new-one type person name 'New One' roles [author]"]});
    let refresh = commit(&mut client, "stardust.entity.create", create);
    client.send(json!({"jsonrpc": "2.0", "id": refresh["id"], "result": null}));
    assert_eq!(pull(&mut client), Vec::<String>::new());
    // A client that refuses the refresh is sent the diagnostics instead.
    let rename = json!({"id": "person/new-one", "newId": "person/renamed"});
    let refresh = commit(&mut client, "stardust.entity.rename", rename);
    let refused = json!({"code": -32601, "message": "unsupported"});
    client.send(json!({"jsonrpc": "2.0", "id": refresh["id"], "error": refused}));
    assert_eq!(codes(&client.published(&uri, 2)), ["dangling-ref"]);
    client.shutdown();
}

#[test]
fn a_refused_confirm_answers_with_the_problems() {
    let tmp = util::library();
    let (mut client, _) = subscribed(tmp.path(), "e2e-editor");
    let preview = client.run(
        "stardust.entity.create",
        json!({"entities": [{"id": "book/orphan", "type": "book", "title": "Orphan", "year": 2001, "status": "draft", "author": "@person/nobody"}]}),
    );
    assert_eq!(preview["committable"], false, "{preview}");
    let response =
        client.command("stardust.preview.confirm", json!({"previewId": preview["previewId"]}));
    let error = &response["error"];
    assert_eq!(error["code"], -32803, "{response}");
    assert_eq!(error["data"]["code"], "refused", "{response}");
    let problems = error["data"]["problems"].as_array().expect("the refused problems");
    assert!(problems.iter().any(|p| p["code"] == "dangling-ref"), "{problems:?}");
    assert!(
        problems.iter().all(|p| p["path"].as_str().unwrap().starts_with("books/")),
        "{problems:?}"
    );

    // Bad arguments are named, unknown commands refused, both with codes.
    let bad = client.command("stardust.entity.get", json!({"id": 42}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(bad["error"]["data"]["code"], "invalid-arguments", "{bad}");
    let unknown = client.command("stardust.no.such", json!({}));
    assert_eq!(unknown["error"]["data"]["code"], "invalid-arguments", "{unknown}");
    let missing = client.command("stardust.entity.get", json!({"id": "book/nope"}));
    assert_eq!(missing["error"]["data"]["code"], "not-found", "{missing}");
    client.shutdown();
}

#[test]
fn notifications_are_sent_only_when_asked_for() {
    let tmp = util::library();
    let (mut quiet, _) = initialized(tmp.path(), &[]);
    let preview = quiet.run(
        "stardust.entity.create",
        json!({"entities": [{"id": "person/quiet-one", "type": "person", "name": "Quiet One", "roles": ["author"]}]}),
    );
    quiet.run("stardust.preview.confirm", json!({"previewId": preview["previewId"]}));
    // A request answered after the commit: any notification would have come before it.
    quiet.run("stardust.status", json!({}));
    assert!(
        quiet.pending.iter().all(|m| !m["method"].as_str().unwrap_or("").starts_with("stardust/")),
        "{:?}",
        quiet.pending
    );
    quiet.shutdown();
}

#[test]
fn two_editors_share_one_core_and_hear_each_other() {
    let tmp = util::library();
    let (mut owner, _) = subscribed(tmp.path(), "owner");
    let (mut second, result) = subscribed(tmp.path(), "second");
    // Both attached to the store's one core (started by the first): both may run commands.
    assert_eq!(result["capabilities"]["experimental"]["stardust"]["readOnly"], false);
    let status = second.run("stardust.status", json!({}));
    let clients: Vec<&str> = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["client"].as_str())
        .collect();
    assert_eq!(clients, ["owner", "second"], "{status}");
    let preview = second.run(
        "stardust.entity.create",
        json!({"entities": [{"id": "person/shared", "type": "person", "name": "Shared", "roles": ["author"]}]}),
    );
    second.run("stardust.preview.confirm", json!({"previewId": preview["previewId"]}));
    let heard = owner.wait(|m| m["method"] == "stardust/entitiesChanged");
    assert_eq!(heard["params"]["entities"], json!([{"id": "person/shared", "change": "created"}]));
    // A preview belongs to the session that made it, even on a shared core.
    let theirs =
        second.run("stardust.entity.rename", json!({"id": "person/shared", "newId": "person/s"}));
    let refused =
        owner.command("stardust.preview.confirm", json!({"previewId": theirs["previewId"]}));
    assert_eq!(refused["error"]["data"]["code"], "preview-not-found", "{refused}");
    second.shutdown();
    owner.shutdown();
}

#[test]
fn a_store_owned_by_another_process_is_served_read_only() {
    let tmp = util::library();
    // Not a core: a process holding the store itself, so no core can start for it.
    let store = stardust_core::store::Store::open(
        tmp.path(),
        stardust_core::store::OpenOptions { watch: false, ..Default::default() },
    )
    .unwrap();
    let (mut second, result) = subscribed(tmp.path(), "second");
    assert_eq!(result["capabilities"]["experimental"]["stardust"]["readOnly"], true);
    assert_eq!(result["capabilities"]["experimental"]["stardust"]["notifications"], json!([]));
    let busy = second.command("stardust.status", json!({}));
    assert_eq!(busy["error"]["data"]["code"], "busy", "{busy}");
    assert!(busy["error"]["message"].as_str().unwrap().contains("in use"), "{busy}");
    let described = second.run("stardust.commands.describe", json!([]));
    assert_eq!(described["commands"].as_array().unwrap().len(), 20);
    // Editor features still work on the documents as they are on disk.
    let uri = second.open("books/x.dust", "id book/x\ntype book\nauthor @person/nobody\n");
    assert!(codes(&second.published(&uri, 1)).contains(&"dangling-ref".to_owned()));
    // Read-only, it re-reads the files the client reports as changed.
    std::fs::write(
        tmp.path().join("people/nobody.dust"),
        "id person/nobody\ntype person\nname Nobody\nroles [author]\n",
    )
    .unwrap();
    let created = second.uri("people/nobody.dust");
    second.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": created, "type": 1}]}),
    );
    assert!(!codes(&second.published(&uri, 1)).contains(&"dangling-ref".to_owned()));
    second.shutdown();
    drop(store);
}

#[test]
fn an_empty_argument_array_means_no_arguments() {
    let tmp = util::library();
    let (mut owner, _) = subscribed(tmp.path(), "owner");
    // An empty array (an empty Lua table) means no arguments, as does no argument at all.
    let status = owner.run("stardust.status", json!([]));
    let bare = owner.request("workspace/executeCommand", json!({"command": "stardust.status"}));
    assert_eq!(bare["sessions"], status["sessions"]);
    assert_eq!(status["sessions"][0]["client"], "owner", "{status}");
    owner.shutdown();
}

#[test]
fn code_actions_repair_diagnostics_and_convert_on_resolve() {
    let tmp = util::library();
    let (mut client, _) = subscribed(tmp.path(), "e2e-editor");
    let text =
        "id book/x\ntype book\ntitle X\nyear 2000\nstatus publised\nauthor @person/frank-herbrt\n";
    let uri = client.open("books/x.dust", text);
    client.published(&uri, 1);
    let at = |needle: &str| {
        let start = find(text, needle, 0);
        json!({"start": start, "end": start})
    };
    let ask = |range: Value, only: Value| json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": [], "only": only}});
    let actions = client.request("textDocument/codeAction", ask(at("@person"), Value::Null));
    let actions = actions.as_array().unwrap();
    let fix = &actions[0];
    assert_eq!(fix["title"], "Change to @person/frank-herbert", "{actions:?}");
    assert_eq!(fix["kind"], "quickfix");
    assert_eq!(fix["isPreferred"], true);
    assert_eq!(fix["diagnostics"][0]["code"], "dangling-ref");
    let range =
        json!({"start": find(text, "@person", 0), "end": find(text, "@person/frank-herbrt", 20)});
    assert_eq!(
        fix["edit"]["changes"][&uri],
        json!([{"range": range, "newText": "@person/frank-herbert"}])
    );
    let convert = actions.iter().find(|a| a["kind"] == "source.convert.stardust").expect("convert");
    assert!(convert.get("edit").is_none(), "computed on resolve: {convert}");

    let enum_fixes =
        client.request("textDocument/codeAction", ask(at("publised"), json!(["quickfix"])));
    let titles: Vec<&str> =
        enum_fixes.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert!(titles.contains(&"Change to published"), "{titles:?}");
    assert!(enum_fixes.as_array().unwrap().iter().all(|a| a["kind"] == "quickfix"));
    // The closest value is the one an editor applies by default; only it is preferred.
    let preferred: Vec<&str> = enum_fixes
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["isPreferred"] == true)
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(preferred, ["Change to published"], "{enum_fixes}");

    let resolved = client.request("codeAction/resolve", convert.clone());
    let changes = resolved["edit"]["documentChanges"].as_array().expect("document changes");
    assert_eq!(
        changes[0],
        json!({"kind": "rename", "oldUri": uri, "newUri": client.uri("books/x.json")})
    );
    let new_text = changes[1]["edits"][0]["newText"].as_str().unwrap();
    assert!(new_text.starts_with("{\n  \"id\": \"book/x\",\n"), "{new_text}");
    assert_eq!(changes[1]["textDocument"]["uri"], client.uri("books/x.json"));

    // After an edit the old conversion is refused, not applied to a different text.
    client.change(&uri, 2, json!([{"range": at("title"), "text": ";\n"}]));
    client.published(&uri, 2);
    let stale = client.call("codeAction/resolve", convert.clone());
    assert_eq!(stale["error"]["data"]["code"], "conflict", "{stale}");
    client.shutdown();
}

#[test]
fn renaming_an_entity_edits_every_reference_and_commits_nothing() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    let text = dune(tmp.path());
    let uri = client.open("books/dune.dust", &text);
    client.published(&uri, 1);
    let on_ref =
        json!({"textDocument": {"uri": uri}, "position": find(&text, "@person/frank-herbert", 4)});
    let prepared = client.request("textDocument/prepareRename", on_ref.clone());
    assert_eq!(prepared["placeholder"], "person/frank-herbert");
    assert_eq!(prepared["range"]["start"], find(&text, "@person/frank-herbert", 0));

    let mut params = on_ref.clone();
    params["newName"] = json!("person/f-herbert");
    let edit = client.request("textDocument/rename", params);
    let changes = edit["changes"].as_object().unwrap();
    // Every document naming the id (as its id or in a reference), and no other.
    let names_it = |t: &str| {
        t.match_indices("person/frank-herbert").any(|(i, m)| {
            !t[i + m.len()..].starts_with(|c: char| c.is_alphanumeric() || "-/_.~:".contains(c))
        })
    };
    let referring: Vec<PathBuf> = walk(tmp.path())
        .into_iter()
        .filter(|p| names_it(&std::fs::read_to_string(p).unwrap()))
        .collect();
    assert!(referring.len() >= 3, "{referring:?}");
    assert_eq!(changes.len(), referring.len(), "{:?}", changes.keys());
    assert!(changes.contains_key(&client.uri("people/frank-herbert.dust")));
    let mine = changes[&uri].as_array().unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["newText"], "@person/f-herbert");
    assert_eq!(std::fs::read_to_string(tmp.path().join("books/dune.dust")).unwrap(), text);

    let mut bad = on_ref.clone();
    bad["newName"] = json!("not an id");
    let response = client.call("textDocument/rename", bad);
    assert_eq!(response["error"]["data"]["code"], "invalid-arguments", "{response}");
    let on_title = json!({"textDocument": {"uri": uri}, "position": find(&text, "Dune\n", 1)});
    assert_eq!(client.request("textDocument/prepareRename", on_title), Value::Null);
    client.shutdown();
}

#[test]
fn long_work_reports_progress_and_can_be_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("stardust.toml"), "").unwrap();
    let numbers: Vec<Value> =
        (0..1500).map(|i| json!({"id": format!("n/{i}"), "type": "n", "v": i})).collect();
    std::fs::write(tmp.path().join("numbers.json"), Value::Array(numbers).to_string()).unwrap();
    let (mut client, _) = initialized(tmp.path(), &[]);

    // Progress: begin before the answer, then end.
    let response = client.call(
        "workspace/executeCommand",
        json!({"command": "stardust.status", "arguments": [{}], "workDoneToken": "status-1"}),
    );
    assert_eq!(response["result"]["documents"], 1, "{response}");
    let begin = client.wait(|m| m["method"] == "$/progress" && m["params"]["token"] == "status-1");
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    assert_eq!(begin["params"]["value"]["title"], "stardust.status");
    let end = client.wait(|m| m["method"] == "$/progress" && m["params"]["token"] == "status-1");
    assert_eq!(end["params"]["value"]["kind"], "end");
    let response =
        client.call("workspace/diagnostic", json!({"previousResultIds": [], "workDoneToken": 7}));
    assert!(response["result"]["items"].is_array(), "{response}");
    let begin = client.wait(|m| m["params"]["token"] == 7);
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    let end = client.wait(|m| m["params"]["token"] == 7);
    assert_eq!(end["params"]["value"]["kind"], "end");

    // A query that runs long (a cross product up to the bindings limit), cancelled at once.
    let id = client.next_id;
    client.next_id += 1;
    let slow = "find [?a ?b] where [[?a v ?x] [?b v ?y]] filter ['?x + ?y = -1']";
    client.send(json!({"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
        "params": {"command": "stardust.query.execute", "arguments": [{"document": slow}]}}));
    client.notify("$/cancelRequest", json!({"id": id}));
    let answer = client.wait(|m| m["id"] == json!(id));
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    assert_eq!(answer["error"]["data"]["code"], "cancelled", "{answer}");
    // Cancelling an answered or unknown request is harmless; the server goes on.
    client.notify("$/cancelRequest", json!({"id": 9999}));
    assert_eq!(client.run("stardust.status", json!({}))["documents"], 1);
    client.shutdown();
}

#[test]
fn a_store_that_cannot_be_opened_for_writing_is_served_read_only_with_its_error() {
    let tmp = util::library();
    // `.stardust` is a file: the store cannot keep its log, but its documents can be read.
    std::fs::write(tmp.path().join(".stardust"), "not a folder").unwrap();
    let (mut client, result) = subscribed(tmp.path(), "e2e-editor");
    assert_eq!(result["capabilities"]["experimental"]["stardust"]["readOnly"], true);
    let refused = client.command("stardust.status", json!({}));
    assert_eq!(refused["error"]["data"]["code"], "internal", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains(".stardust"), "{refused}");
    let uri = client.uri("books/dune.dust");
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(pulled["items"], json!([]));
    client.shutdown();
}

#[test]
fn a_client_that_never_reads_costs_bounded_memory() {
    let tmp = util::library();
    // Every answer is about 50 KB: 20,000 of them would be 1 GB if the server kept them all.
    let messages = util::lsp_symbol_requests();
    let (mut child, last) = util::flood("lsp", tmp.path(), util::lsp_frame, messages);
    assert!(last < 20_002, "the server kept reading requests while its answers went unread");
    // Both the attacher and the core it relays to stay bounded.
    let peak = util::peak_rss_mb(child.id().into());
    assert!(peak < 300, "peak memory {peak} MB after {last} unread answers");
    let record: Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join(".stardust/run/daemon.json")).unwrap(),
    )
    .unwrap();
    let core = util::peak_rss_mb(record["pid"].as_u64().unwrap());
    assert!(core < 300, "the core's peak memory {core} MB after {last} unread answers");
    // It is still alive, waiting for the client to read.
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

/// async-lsp's main loop used to wedge for good with 1,024 requests in flight; the front now
/// stops reading past a smaller bound, so a burst of any size is answered in full.
#[test]
fn a_burst_of_more_requests_than_the_concurrency_limit_is_answered_in_full() {
    const N: i64 = 1500;
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &[]);
    let mut burst = Vec::new();
    for id in 0..N {
        let body = json!({"jsonrpc": "2.0", "id": 10_000 + id, "method": "workspace/diagnostic", "params": {"previousResultIds": []}}).to_string();
        burst.extend_from_slice(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }
    let Client { stdin, incoming, child, .. } = &mut client;
    let answered = std::thread::scope(|scope| {
        // The writes block while the server holds back; the answers are read meanwhile.
        scope.spawn(move || {
            let _ = stdin.write_all(&burst);
            let _ = stdin.flush();
        });
        let deadline = Instant::now() + TIMEOUT;
        let mut answered = 0;
        while answered < N {
            match incoming.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(m) if m.get("method").is_none() && m["id"].as_i64() >= Some(10_000) => {
                    assert!(m.get("error").is_none(), "{m}");
                    answered += 1;
                }
                Ok(_) => {}
                // Wedged: end the server so that the writing thread ends too.
                Err(_) => {
                    let _ = child.kill();
                    break;
                }
            }
        }
        answered
    });
    assert_eq!(answered, N, "every request is answered");
    client.shutdown();
}

#[test]
fn requests_before_initialize_and_edits_of_unopened_documents_are_refused_harmlessly() {
    let tmp = util::library();
    let mut client = start(tmp.path());
    let early = client.call("textDocument/hover", json!({"textDocument": {"uri": client.uri("books/dune.dust")}, "position": {"line": 0, "character": 0}}));
    assert_eq!(early["error"]["code"], -32002, "{early}");
    client.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {}}));
    client.notify("initialized", json!({}));
    let never_opened = client.uri("books/dune.dust");
    let at = json!({"line": 0, "character": 0});
    client.change(&never_opened, 2, json!([{"range": {"start": at, "end": at}, "text": "{{{"}]));
    // Nothing was applied: the document is still the clean one on disk.
    let pulled =
        client.request("textDocument/diagnostic", json!({"textDocument": {"uri": never_opened}}));
    assert_eq!(pulled["items"], json!([]));
    client.shutdown();
}

#[test]
fn past_max_pending_the_client_hears_overflow() {
    let tmp = util::library();
    let config = tmp.path().join("stardust.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str("\n[notifications]\nmax_pending = 1\n");
    std::fs::write(&config, toml).unwrap();
    let (mut client, _) = subscribed(tmp.path(), "e2e-editor");
    // One document and one entity: two entries, one more than the subscriber may hold.
    let preview = client.run(
        "stardust.entity.create",
        json!({"entities": [{"id": "person/many", "type": "person", "name": "Many", "roles": ["author"]}]}),
    );
    let seq =
        client.run("stardust.preview.confirm", json!({"previewId": preview["previewId"]}))["seq"]
            .clone();
    assert_eq!(
        client.notification("stardust/documentsChanged"),
        json!({"seq": seq, "overflow": true})
    );
    assert_eq!(
        client.notification("stardust/entitiesChanged"),
        json!({"seq": seq, "overflow": true})
    );
    // The client re-reads what changed.
    let since = client.run("stardust.changes.since", json!({"seq": seq.as_u64().unwrap() - 1}));
    assert_eq!(since["entities"], json!([{"id": "person/many", "change": "created"}]), "{since}");
    client.shutdown();
}

/// SPEC §18: an agent's preview, made through `stardust mcp` on the same core, is listed to an
/// editor, which confirms it when the store shares previews; the agent's session sees the
/// commit, and `stardust log` names the editor as its origin.
#[test]
fn an_editor_confirms_an_agents_preview_when_previews_are_shared() {
    let tmp = util::library();
    let config = tmp.path().join("stardust.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[previews]\nshare = true\n");
    std::fs::write(&config, text).unwrap();
    let (mut editor, _) = subscribed(tmp.path(), "e2e-editor");
    let mut agent = util::mcp::Mcp::open(tmp.path(), &[], "e2e-agent");
    let at = json!({"path": "people/arthur-c-clarke.dust", "position": {"line": 1, "column": 14},
                    "newName": "person/arthur-clarke"});
    let preview = agent.ok("rename_preview", at);
    let id = preview["previewId"].clone();
    assert_eq!(preview["entities"]["created"], json!(["person/arthur-clarke"]), "{preview}");

    let listed = editor.run("stardust.previews.list", json!({}));
    assert_eq!(listed["shared"], true, "{listed}");
    let item = listed["previews"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["previewId"] == id)
        .unwrap_or_else(|| panic!("the agent's preview is listed: {listed}"));
    assert_eq!(
        (&item["client"], &item["front"], &item["mine"]),
        (&json!("e2e-agent"), &json!("mcp"), &json!(false))
    );
    assert!(
        item["files"].as_array().unwrap().contains(&json!("people/arthur-c-clarke.dust")),
        "{item}"
    );

    let confirmed = editor.run("stardust.preview.confirm", json!({"previewId": id}));
    let seq = confirmed["seq"].as_u64().expect("a seq");
    let since = agent.ok("changes_since", json!({"seq": seq - 1}));
    assert_eq!(since["seq"], seq, "{since}");
    let paths: Vec<&str> = since["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"people/arthur-c-clarke.dust"), "{since}");
    // The agent may not confirm (its gate is closed), and the preview is spent anyway.
    assert_eq!(
        agent.fail("preview_confirm", json!({"previewId": id}))["code"],
        "mutation-disabled"
    );
    editor.shutdown();
    drop(agent);
    let log = util::stardust(&["log", tmp.path().to_str().unwrap()]);
    assert!(util::text(&log.stdout).contains("lsp:e2e-editor"), "{}", util::text(&log.stdout));
}

/// SPEC §18: an agent's open preview shows as code lenses on each file it touches, in an
/// editor of the same core when the store shares previews ("preview by <client>: confirm" /
/// "discard", at the line where its change starts); running the lens's command confirms it.
/// Without sharing, the editor sees lenses of its own previews only.
#[test]
fn an_agents_preview_shows_as_code_lenses_that_confirm_it_when_shared() {
    let tmp = util::library();
    let config = tmp.path().join("stardust.toml");
    let unshared = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{unshared}\n[previews]\nshare = true\n")).unwrap();
    let (mut editor, _) = subscribed(tmp.path(), "e2e-editor");
    let mut agent = util::mcp::Mcp::open(tmp.path(), &[], "e2e-agent");
    let at = json!({"path": "people/arthur-c-clarke.dust", "position": {"line": 1, "column": 14},
                    "newName": "person/arthur-clarke"});
    let preview = agent.ok("rename_preview", at);
    let id = preview["previewId"].clone();
    let files: Vec<String> = preview["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_owned())
        .collect();
    assert!(files.len() > 1, "{preview}");

    let lenses_of = |editor: &mut Client, rel: &str| -> Vec<Value> {
        let doc = json!({"textDocument": {"uri": editor.uri(rel)}});
        let lenses = editor.request("textDocument/codeLens", doc);
        lenses
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| {
                l["command"]["command"].as_str().is_some_and(|c| c.starts_with("stardust.preview."))
            })
            .cloned()
            .collect()
    };
    for rel in &files {
        let lenses = lenses_of(&mut editor, rel);
        let shown: Vec<(&Value, &Value, &Value)> = lenses
            .iter()
            .map(|l| (&l["command"]["title"], &l["command"]["command"], &l["command"]["arguments"]))
            .collect();
        let args = json!([{"previewId": id}]);
        assert_eq!(
            shown,
            [
                (
                    &json!("preview by e2e-agent (rename_preview): confirm"),
                    &json!("stardust.preview.confirm"),
                    &args
                ),
                (&json!("discard"), &json!("stardust.preview.discard"), &args),
            ],
            "{rel}"
        );
    }
    // The lens sits at the line the change starts: the id on arthur-c-clarke.dust's first line.
    let lenses = lenses_of(&mut editor, "people/arthur-c-clarke.dust");
    assert_eq!(lenses[0]["range"]["start"], json!({"line": 0, "character": 0}));

    let command = &lenses[0]["command"];
    let confirmed =
        editor.run(command["command"].as_str().unwrap(), command["arguments"][0].clone());
    let seq = confirmed["seq"].as_u64().expect("a seq");
    let since = agent.ok("changes_since", json!({"seq": seq - 1}));
    assert_eq!(since["seq"], seq, "{since}");
    assert_eq!(lenses_of(&mut editor, "people/arthur-c-clarke.dust"), Vec::<Value>::new());
    editor.shutdown();
    drop(agent);

    // Not shared (a store of its own: the core above keeps the configuration it read): another
    // session's preview has no lens, the editor's own has one.
    let tmp = util::library();
    let (mut editor, _) = subscribed(tmp.path(), "e2e-editor");
    let mut agent = util::mcp::Mcp::open(tmp.path(), &[], "e2e-agent");
    let at = json!({"path": "people/arthur-c-clarke.dust", "position": {"line": 1, "column": 14},
                    "newName": "person/clarke"});
    let theirs = agent.ok("rename_preview", at);
    assert!(theirs["previewId"].is_string(), "{theirs}");
    assert_eq!(lenses_of(&mut editor, "people/arthur-c-clarke.dust"), Vec::<Value>::new());
    let mine = editor.run(
        "stardust.entity.rename",
        json!({"id": "person/arthur-c-clarke", "newId": "person/sir-arthur"}),
    );
    let lenses = lenses_of(&mut editor, "people/arthur-c-clarke.dust");
    assert_eq!(lenses.len(), 2, "{lenses:?}");
    assert_eq!(lenses[0]["command"]["title"], "preview by you (stardust.entity.rename): confirm");
    assert_eq!(lenses[1]["command"]["arguments"], json!([{"previewId": mine["previewId"]}]));
    editor.shutdown();
}

/// JSON with comments (SPEC §23): an editor opening `tsconfig.json` as `jsonc` sees no syntax
/// error and formats it keeping its comments; a comment in a plain `.json` is a `syntax`
/// error saying where comments are allowed.
#[test]
fn an_editor_opening_tsconfig_sees_no_syntax_error() {
    let tmp = util::library();
    let (mut client, _) = initialized(tmp.path(), &["utf-16"]);
    let text = "// options\n{\"compilerOptions\": {\"strict\": true, /* why */},}\n";
    let tsconfig = client.open_as("tsconfig.json", "jsonc", text);
    assert_eq!(client.published(&tsconfig, 1), Vec::<Value>::new());
    let settings = client.open_as(".vscode/settings.json", "jsonc", "{\"a\": 1, // one\n}\n");
    assert_eq!(client.published(&settings, 1), Vec::<Value>::new());
    let notes = client.open("notes.jsonc", "[\"http://x // not a comment\",]");
    assert_eq!(client.published(&notes, 1), Vec::<Value>::new());
    let plain = client.open("plain.json", text);
    let diagnostics = client.published(&plain, 1);
    assert_eq!(codes(&diagnostics), ["syntax", "syntax", "syntax", "syntax"]);
    assert_eq!(
        diagnostics[0]["message"],
        "comments are not allowed in JSON; remove it (comments are allowed in .jsonc files and \
         in .json files matched by [store] jsonc)"
    );

    let params =
        json!({"textDocument": {"uri": tsconfig}, "options": {"tabSize": 2, "insertSpaces": true}});
    let edits = client.request("textDocument/formatting", params);
    assert_eq!(
        edits[0]["newText"],
        "// options\n{\n  \"compilerOptions\": {\n    \"strict\": true /* why */\n  }\n}\n"
    );
    client.shutdown();
}

//! End-to-end: a client that sends every change as the whole text (SPEC §20). A burst of
//! whole-text `didChange`s is answered as its last one, pulled or pushed, by the real
//! `stardust lsp` over stdio on a copy of the sample library.

use std::path::Path;

use serde_json::{Value, json};

mod util;

use util::lsp::Lsp as Client;

fn initialized(store: &Path, capabilities: Value) -> Client {
    Client::initialized(store, capabilities).0
}

/// An entity array of `n` books, book `bad` (if any) with a year that is not an integer.
fn books(n: usize, bad: Option<usize>) -> String {
    let item = |i: usize| {
        let year = if Some(i) == bad { "\"x\"".to_owned() } else { "1965".to_owned() };
        format!(
            "  {{\n    \"id\": \"book/list-{i}\",\n    \"type\": \"book\",\n    \"title\": \"T{i}\",\n    \"author\": \"@person/frank-herbert\",\n    \"year\": {year},\n    \"status\": \"draft\"\n  }}"
        )
    };
    format!("[\n{}\n]\n", (0..n).map(item).collect::<Vec<_>>().join(",\r\n"))
}

/// The line of the `"x"` year in `text`, as the diagnostics name it.
fn bad_line(text: &str) -> usize {
    text[..text.find("\"x\"").unwrap()].matches('\n').count()
}

/// The (code, start line) of each diagnostic.
fn found(diagnostics: &Value) -> Vec<(String, u64)> {
    let list = diagnostics.as_array().unwrap().iter();
    list.map(|d| {
        (d["code"].as_str().unwrap().to_owned(), d["range"]["start"]["line"].as_u64().unwrap())
    })
    .collect()
}

/// 100 whole texts, each with another book's year wrong (and every other one with none),
/// sent without waiting; then the version after them.
fn burst(client: &mut Client, uri: &str) -> String {
    for version in 2..=101 {
        let bad = (version % 2 == 0).then_some(version as usize % 40);
        let text = books(40, bad);
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }
    books(40, Some(7))
}

#[test]
fn a_burst_of_whole_texts_is_pulled_as_its_last() {
    let tmp = util::library();
    let mut client = initialized(tmp.path(), json!({"textDocument": {"diagnostic": {}}}));
    let uri = format!("file://{}", tmp.path().join("books/list.json").display());
    let text = books(40, None);
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), []);

    let last = burst(&mut client, &uri);
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 102}, "contentChanges": [{"text": last}]}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), [("schema".to_owned(), bad_line(&last) as u64)]);

    // And a range edit after the burst applies to its last text: repair the year.
    let line = bad_line(&last);
    let column = last.lines().nth(line).unwrap().find("\"x\"").unwrap();
    let range = json!({"start": {"line": line, "character": column}, "end": {"line": line, "character": column + 3}});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 103}, "contentChanges": [{"range": range, "text": "1966"}]}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), []);
}

#[test]
fn a_burst_of_whole_texts_is_published_as_its_last() {
    let tmp = util::library();
    let mut client = initialized(tmp.path(), json!({}));
    let uri = format!("file://{}", tmp.path().join("books/list.json").display());
    let text = books(40, None);
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}}),
    );
    let last = burst(&mut client, &uri);
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 102}, "contentChanges": [{"text": last}]}),
    );
    // Publications come in version order, and the last names the last text.
    let mut seen = 0;
    let published = client.wait(|m| {
        if m["method"] != "textDocument/publishDiagnostics" || m["params"]["uri"] != uri {
            return false;
        }
        let version = m["params"]["version"].as_i64().unwrap();
        assert!(version > seen, "version {version} published after {seen}");
        seen = version;
        version == 102
    });
    assert_eq!(
        found(&published["params"]["diagnostics"]),
        [("schema".to_owned(), bad_line(&last) as u64)]
    );
}

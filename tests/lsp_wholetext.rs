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

/// A one-item entity array whose line 3 holds a title with escapes and a character outside
/// the BMP before a year that is not an integer; CRLF line ends.
fn escaped(year: &str) -> String {
    format!(
        "[\r\n  {{\"id\": \"book/list-0\", \"type\": \"book\", \"author\": \"@person/frank-herbert\",\r\n   \"status\": \"draft\",\r\n   \"title\": \"\\\"D\\u00fcne\\\" \\\\ 😀\", \"year\": {year}}}\r\n]\r\n"
    )
}

/// Every message is decoded once, before the main loop (lsp-front/src/frames.rs): a whole text
/// with escaped quotes and backslashes, a `\u` escape, a surrogate pair and CRLF is taken as
/// the client meant it, and positions after the pair are counted in UTF-16 code units.
#[test]
fn a_whole_text_with_escapes_and_a_surrogate_pair_is_taken_as_sent() {
    let tmp = util::library();
    let mut client = initialized(tmp.path(), json!({"textDocument": {"diagnostic": {}}}));
    let uri = format!("file://{}", tmp.path().join("books/list.json").display());
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": escaped("1965")}}),
    );
    // Sent with `params` before `method` and every non-ASCII character escaped, surrogate
    // pairs included: what the reader decodes is the JSON, not the bytes' look.
    let text = escaped("\"x\"");
    let body = format!(
        r#"{{"params":{{"textDocument":{{"uri":"{uri}","version":2}},"contentChanges":[{{"text":{}}}]}},"jsonrpc":"2.0","method":"textDocument/didChange"}}"#,
        ascii_json(&text)
    );
    assert!(body.contains(r"\ud83d\ude00"), "the pair is sent escaped");
    client.send_raw(body.as_bytes());
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    let line = &text.split("\r\n").nth(3).unwrap();
    let column = line[..line.find("\"x\"").unwrap()].encode_utf16().count();
    assert_eq!(found(&pulled["items"]), [("schema".to_owned(), 3)]);
    assert_eq!(pulled["items"][0]["range"]["start"]["character"], column as u64);

    // A range edit in UTF-16 columns after the pair lands on the year: the text is exact.
    let range = json!({"start": {"line": 3, "character": column}, "end": {"line": 3, "character": column + 3}});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"range": range, "text": "1966"}]}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), []);
    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": column + 1}}),
    );
    assert!(hover.to_string().contains("year"), "the hover is on the year: {hover}");
}

/// `text` as a JSON string with every character outside ASCII escaped (as `\uXXXX`, a pair
/// for those outside the BMP), which is what many clients send.
fn ascii_json(text: &str) -> String {
    let mut out = String::new();
    for c in serde_json::to_string(text).unwrap().chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Malformed frames between whole-text changes are dropped with a warning and the session goes
/// on: a truncated body, parameters of the wrong shape, and the server's own stand-in method,
/// which no client may send (it would take another message's parameters).
#[test]
fn malformed_frames_among_whole_texts_are_dropped() {
    let tmp = util::library();
    let mut client = initialized(tmp.path(), json!({"textDocument": {"diagnostic": {}}}));
    let uri = format!("file://{}", tmp.path().join("books/list.json").display());
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": books(40, None)}}),
    );
    let bad = books(40, Some(3));
    let change = json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
        "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": bad}]}})
    .to_string();
    client.send_raw(&change.as_bytes()[..change.len() / 2]);
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": "three"}, "contentChanges": [{"text": bad}]}),
    );
    client.notify("$/stardust/decoded", json!(0));
    client.send_raw(br#"{"jsonrpc":"2.0","id":3000000000,"method":"shutdown"}"#);
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), [], "no malformed change was applied");

    let last = books(40, Some(5));
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": last}]}),
    );
    let pulled = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}));
    assert_eq!(found(&pulled["items"]), [("schema".to_owned(), bad_line(&last) as u64)]);
}

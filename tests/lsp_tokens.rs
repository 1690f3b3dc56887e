//! End-to-end tests of semantic tokens (full, delta, range) and range / on-type formatting
//! through the real `stardust lsp`, on a copy of the sample library. Token positions are
//! decoded here with a naive column count of their own, so the server's encoding is checked
//! against an independent reading of the text.

use std::path::Path;

use serde_json::{Value, json};

mod util;

use util::lsp::Lsp as Client;

/// `stardust lsp` on `store`, initialized with `capabilities`.
fn start(store: &Path, capabilities: Value) -> (Client, Value) {
    Client::initialized(store, capabilities)
}

fn encodings(offered: &str) -> Value {
    json!({"general": {"positionEncodings": [offered]}})
}

/// How many units of `encoding` a character counts.
fn units(ch: char, encoding: &str) -> usize {
    match encoding {
        "utf-8" => ch.len_utf8(),
        "utf-16" => ch.len_utf16(),
        _ => 1,
    }
}

/// The text at `column` (in `encoding`) of `line`, `length` units long.
fn slice(line: &str, column: usize, length: usize, encoding: &str) -> String {
    let mut at = 0;
    let mut out = String::new();
    for ch in line.chars() {
        if at >= column && at < column + length {
            out.push(ch);
        }
        at += units(ch, encoding);
    }
    out
}

/// The decoded tokens: (text, type name, modifier names).
fn decode(
    text: &str,
    data: &[Value],
    legend: &Value,
    encoding: &str,
) -> Vec<(String, String, Vec<String>)> {
    let lines: Vec<&str> = text.split('\n').collect();
    let types = legend["tokenTypes"].as_array().unwrap();
    let modifiers = legend["tokenModifiers"].as_array().unwrap();
    let n: Vec<usize> = data.iter().map(|v| v.as_u64().unwrap() as usize).collect();
    assert_eq!(n.len() % 5, 0);
    let (mut line, mut start) = (0, 0);
    let mut out = Vec::new();
    for t in n.chunks(5) {
        if t[0] > 0 {
            line += t[0];
            start = t[1];
        } else {
            start += t[1];
        }
        let mods = (0..modifiers.len())
            .filter(|i| t[4] & (1 << i) != 0)
            .map(|i| modifiers[i].as_str().unwrap().to_owned())
            .collect();
        out.push((
            slice(lines[line], start, t[2], encoding),
            types[t[3]].as_str().unwrap().to_owned(),
            mods,
        ));
    }
    out
}

const BOOK: &str = "; Dune, with a few characters outside ASCII\nid      book/dune\ntype    book\ntitle   'Dune 𝄞 é'\nyear    1965\nauthor  @person/frank-herbert\neditor  @person/nobody\ntags    [classic sci-fi]\nprint   {hard true soft null}\n";

fn find<'a>(
    tokens: &'a [(String, String, Vec<String>)],
    text: &str,
) -> &'a (String, String, Vec<String>) {
    tokens.iter().find(|t| t.0 == text).unwrap_or_else(|| panic!("no token {text:?} in {tokens:?}"))
}

#[test]
fn full_tokens_are_right_in_every_position_encoding() {
    let tmp = util::library();
    for encoding in ["utf-16", "utf-8", "utf-32"] {
        let (mut client, init) = start(tmp.path(), encodings(encoding));
        assert_eq!(init["capabilities"]["positionEncoding"], encoding);
        let provider = &init["capabilities"]["semanticTokensProvider"];
        assert_eq!(provider["full"]["delta"], true);
        assert_eq!(provider["range"], true);
        let legend = provider["legend"].clone();
        let uri = client.open("books/dune.dust", BOOK);
        let result = client
            .request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": uri}}));
        assert!(result["resultId"].is_string());
        let tokens = decode(BOOK, result["data"].as_array().unwrap(), &legend, encoding);
        let shown = |text: &str| {
            let (_, ty, mods) = find(&tokens, text);
            format!("{ty} {}", mods.join(" "))
        };
        assert_eq!(shown("; Dune, with a few characters outside ASCII"), "comment ");
        assert_eq!(shown("id"), "property ");
        assert_eq!(shown("book/dune"), "variable declaration");
        assert_eq!(shown("book"), "enumMember ");
        assert_eq!(shown("'Dune 𝄞 é'"), "string ");
        assert_eq!(shown("1965"), "number ");
        assert_eq!(shown("@person/frank-herbert"), "variable ");
        assert_eq!(shown("@person/nobody"), "variable dangling");
        assert_eq!(shown("true"), "keyword ");
        assert_eq!(shown("null"), "keyword ");
        assert_eq!(tokens.len(), 21, "{tokens:?}");
        client.shutdown();
    }
}

/// `data` with the protocol's edits applied.
fn apply(data: &[Value], edits: &[Value]) -> Vec<Value> {
    let mut out = data.to_vec();
    for e in edits.iter().rev() {
        let start = e["start"].as_u64().unwrap() as usize;
        let delete = e["deleteCount"].as_u64().unwrap() as usize;
        let new = e["data"].as_array().cloned().unwrap_or_default();
        out.splice(start..start + delete, new);
    }
    out
}

#[test]
fn a_delta_from_the_previous_result_rebuilds_the_new_tokens() {
    let tmp = util::library();
    let (mut client, _) = start(tmp.path(), encodings("utf-16"));
    let uri = client.open("books/dune.dust", BOOK);
    let doc = json!({"uri": uri});
    let first = client.request("textDocument/semanticTokens/full", json!({"textDocument": doc}));
    // A range edit: the year becomes a dangling reference.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 4, "character": 8}, "end": {"line": 4, "character": 12}}, "text": "@x/y"}
        ]}),
    );
    let delta = client.request(
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": doc, "previousResultId": first["resultId"]}),
    );
    let edits = delta["edits"].as_array().expect("a delta, not full tokens");
    assert_eq!(edits.len(), 1);
    assert_ne!(delta["resultId"], first["resultId"]);
    let rebuilt = apply(first["data"].as_array().unwrap(), edits);
    let fresh = client.request("textDocument/semanticTokens/full", json!({"textDocument": doc}));
    assert_eq!(rebuilt, *fresh["data"].as_array().unwrap());
    assert!(edits[0]["data"].as_array().unwrap().len() <= 10, "{edits:?}");
    // A result the server no longer holds is answered with full tokens.
    let unknown = client.request(
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": doc, "previousResultId": "no-such-result"}),
    );
    assert_eq!(unknown["data"], fresh["data"]);
    // A closed document's results are forgotten: reopened, a delta against them is full.
    client.notify("textDocument/didClose", json!({"textDocument": doc}));
    let reopened = client.open("books/dune.dust", BOOK);
    assert_eq!(reopened, uri);
    let after_close = client.request(
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": doc, "previousResultId": unknown["resultId"]}),
    );
    assert!(after_close.get("edits").is_none(), "full tokens, not a delta: {after_close}");
    assert!(after_close["data"].is_array(), "{after_close}");
    client.shutdown();
}

#[test]
fn range_tokens_cover_the_range_and_multi_line_tokens_follow_the_client() {
    let tmp = util::library();
    let (mut client, init) = start(tmp.path(), encodings("utf-16"));
    let legend = init["capabilities"]["semanticTokensProvider"]["legend"].clone();
    let uri = client.open("books/dune.dust", BOOK);
    let range = client.request(
        "textDocument/semanticTokens/range",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 5, "character": 0}, "end": {"line": 6, "character": 0}}}),
    );
    // The data is relative to the document's start, as the protocol says.
    let data = range["data"].as_array().unwrap();
    assert_eq!(data[0], 5, "the first token is on line 5: {data:?}");
    let tokens = decode(BOOK, data, &legend, "utf-16");
    let texts: Vec<&str> = tokens.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(texts, ["author", "@person/frank-herbert"]);
    // A block comment in JSON spans lines: cut per line for this client.
    let json_text = "{\"a\": /* one\ntwo */ 1}\n";
    let json_uri = client.open("notes.json", json_text);
    let cut = client
        .request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": json_uri}}));
    let comments: Vec<String> =
        decode(json_text, cut["data"].as_array().unwrap(), &legend, "utf-16")
            .into_iter()
            .filter(|t| t.1 == "comment")
            .map(|t| t.0)
            .collect();
    assert_eq!(comments, ["/* one", "two */"]);
    client.shutdown();
    let capabilities = json!({"textDocument": {"semanticTokens": {
        "requests": {"full": {"delta": true}, "range": true},
        "tokenTypes": [], "tokenModifiers": [], "formats": ["relative"],
        "multilineTokenSupport": true
    }}});
    let (mut client, _) = start(tmp.path(), capabilities);
    let json_uri = client.open("notes.json", json_text);
    let whole = client
        .request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": json_uri}}));
    let data = whole["data"].as_array().unwrap();
    // `{"a"` then the comment: one token of 13 units ("/* one\ntwo */").
    assert_eq!(data.len(), 15, "{data:?}");
    assert_eq!(data[7], 13);
    client.shutdown();
}

/// `text` with LSP text edits (UTF-16 columns) applied.
fn apply_text(text: &str, edits: &[Value]) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let offset = |p: &Value| {
        let line = p["line"].as_u64().unwrap() as usize;
        let mut at: usize = lines[..line].iter().map(|l| l.len()).sum();
        let mut units_left = p["character"].as_u64().unwrap() as usize;
        for ch in lines.get(line).copied().unwrap_or("").chars() {
            if units_left == 0 {
                break;
            }
            units_left -= ch.len_utf16();
            at += ch.len_utf8();
        }
        at
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    spans.sort();
    let mut out = text.to_owned();
    for (start, end, new) in spans.into_iter().rev() {
        out.replace_range(start..end, &new);
    }
    out
}

#[test]
fn range_formatting_edits_only_inside_the_range_and_on_type_aligns() {
    let tmp = util::library();
    let (mut client, init) = start(tmp.path(), encodings("utf-16"));
    assert_eq!(init["capabilities"]["documentRangeFormattingProvider"], true);
    assert_eq!(
        init["capabilities"]["documentOnTypeFormattingProvider"]["firstTriggerCharacter"],
        "\n"
    );
    let text = "id book/dune\ntype    book\ntitle 'Dune 𝄞'\nyear      1965\nauthor @person/frank-herbert\n";
    let uri = client.open("books/dune.dust", text);
    let options = json!({"tabSize": 2, "insertSpaces": true});
    let edits = client.request(
        "textDocument/rangeFormatting",
        json!({"textDocument": {"uri": uri}, "options": options,
               "range": {"start": {"line": 2, "character": 0}, "end": {"line": 4, "character": 0}}}),
    );
    let edits = edits.as_array().unwrap();
    for e in edits {
        let (a, b) = (&e["range"]["start"], &e["range"]["end"]);
        assert!(a["line"].as_u64().unwrap() >= 2 && b["line"].as_u64().unwrap() <= 4, "{e}");
    }
    let formatted = apply_text(text, edits);
    assert_eq!(
        formatted,
        "id book/dune\ntype    book\ntitle   'Dune 𝄞'\nyear    1965\nauthor @person/frank-herbert\n"
    );
    // Typing a newline aligns every top-level value in the formatter's column.
    let on_type = client.request(
        "textDocument/onTypeFormatting",
        json!({"textDocument": {"uri": uri}, "position": {"line": 5, "character": 0}, "ch": "\n", "options": options}),
    );
    assert_eq!(
        apply_text(text, on_type.as_array().unwrap()),
        "id      book/dune\ntype    book\ntitle   'Dune 𝄞'\nyear    1965\nauthor  @person/frank-herbert\n"
    );
    // JSON is normalised inside the range too.
    let json_text = "{\n  \"a\":1,\n  \"b\":   2\n}\n";
    let json_uri = client.open("notes.json", json_text);
    let edits = client.request(
        "textDocument/rangeFormatting",
        json!({"textDocument": {"uri": json_uri}, "options": options,
               "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}}),
    );
    assert_eq!(
        apply_text(json_text, edits.as_array().unwrap()),
        "{\n  \"a\": 1,\n  \"b\":   2\n}\n"
    );
    // A document with a syntax error is refused, as whole-document formatting refuses it.
    let broken = client.open("broken.dust", "id x/1\ntitle 'open\n");
    let refused = client.call(
        "textDocument/rangeFormatting",
        json!({"textDocument": {"uri": broken}, "options": options,
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}}),
    );
    assert_eq!(refused["error"]["data"]["code"], "invalid-arguments", "{refused}");
    client.shutdown();
}

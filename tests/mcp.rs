//! End-to-end tests of `stardust mcp`: the real binary over stdio, spoken to with
//! newline-delimited JSON-RPC, on copies of the sample library. Every line the server writes
//! to stdout must be a JSON-RPC message.

mod util;

use util::mcp::Mcp;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

fn gated(store: &Path, allowlist: &[&str]) {
    let config = std::fs::read_to_string(store.join("stardust.toml")).unwrap();
    let list: Vec<String> = allowlist.iter().map(|n| format!("{n:?}")).collect();
    let config = format!(
        "{config}\n[mcp]\nmutation = \"gated\"\nmutation_allowlist = [{}]\n",
        list.join(", ")
    );
    std::fs::write(store.join("stardust.toml"), config).unwrap();
}

#[test]
fn the_tool_list_is_the_registry_and_hides_confirm_by_default() {
    let tmp = util::library();
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    let listed = mcp.request("tools/list", json!({}));
    assert_eq!(listed["result"]["cacheScope"], "private", "per-client lists are not public");
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    let described = mcp.ok("commands_describe", json!({}));
    let commands = described["commands"].as_array().unwrap();
    // Every command but preview_confirm, with the contract's schemas, then the navigation tools
    // of SPEC §13, those §17 adds for code files, §18's rename_preview and code_action_preview,
    // and preview_get (the pages of a preview too large for one answer).
    let mut expected: Vec<String> = commands
        .iter()
        .map(|c| c["name"].as_str().unwrap().trim_start_matches("stardust.").replace('.', "_"))
        .filter(|n| n != "preview_confirm")
        .collect();
    expected.extend(
        ["diagnostics", "hover", "definition", "references", "document_symbols"]
            .iter()
            .chain(&["workspace_symbols", "code_actions", "describe_type"])
            .chain(&["declaration", "type_definition", "implementation", "signature_help"])
            .chain(&["incoming_calls", "outgoing_calls", "prepare_rename", "rename_preview"])
            .chain(&["code_action_preview"])
            .chain(&["server_status", "server_restart", "preview_get"])
            .map(|s| s.to_string()),
    );
    let names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, expected);
    let create = tools.iter().find(|t| t["name"] == "entity_create").unwrap();
    let contract = commands.iter().find(|c| c["name"] == "stardust.entity.create").unwrap();
    assert_eq!(create["inputSchema"], contract["arguments"]);
    assert_eq!(create["outputSchema"], contract["result"]);
    let query = tools.iter().find(|t| t["name"] == "query_execute").unwrap();
    assert_eq!(query["inputSchema"]["properties"]["limit"]["maximum"], 500);
    assert_eq!(query["annotations"]["readOnlyHint"], true);
    // The refusal is a tool error, and it is recorded with the session's decision.
    let error = mcp.fail("preview_confirm", json!({"previewId": "anything"}));
    assert_eq!(error["code"], "mutation-disabled");
    assert!(error["message"].as_str().unwrap().contains("--allow-mutation"), "{error}");
    let status = mcp.ok("status", json!({}));
    let decisions = status["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 2, "{status}");
    assert!(decisions.iter().all(|d| d["kind"] == "gate" && d["allowed"] == false));
    assert!(decisions[1]["subject"].as_str().unwrap().contains("'test-agent'"), "{status}");
    assert_eq!(status["sessions"], json!([{"id": 1, "front": "mcp", "client": "test-agent"}]));
    assert!(mcp.close(), "the server exits cleanly when the client closes stdin");
}

#[test]
fn a_preview_is_confirmed_once_and_subscribers_are_notified() {
    let tmp = util::library();
    let before = std::fs::read_to_string(tmp.path().join("books/dune.dust")).unwrap();
    let mut mcp = Mcp::open(tmp.path(), &["--allow-mutation"], "test-agent");
    assert!(mcp.tool_names().contains(&"preview_confirm".to_owned()));
    for uri in ["stardust://entities/book/dune", "stardust://documents/books/dune.dust"] {
        let subscribed = mcp.request("resources/subscribe", json!({"uri": uri}));
        assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    }
    let preview = mcp.ok(
        "mutation_execute",
        json!({"document": "find [?b] where [[?b id book/dune]]", "set": {"pages": 413}}),
    );
    assert_eq!(preview["committable"], true, "{preview}");
    assert_eq!(preview["documents"][0]["path"], "books/dune.dust");
    assert!(preview["documents"][0]["diff"].as_str().unwrap().contains("+pages      413"));
    let unchanged = std::fs::read_to_string(tmp.path().join("books/dune.dust")).unwrap();
    assert_eq!(unchanged, before, "a mutation tool only previews");
    let id = preview["previewId"].clone();
    let committed = mcp.call("preview_confirm", json!({"previewId": id}));
    assert_eq!(committed["isError"], false, "{committed}");
    assert!(committed["structuredContent"]["seq"].as_u64().unwrap() >= 2);
    assert!(
        committed["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("preview_confirm: committed as seq")
    );
    let after = std::fs::read_to_string(tmp.path().join("books/dune.dust")).unwrap();
    assert!(after.contains("pages      413"), "{after}");
    let updated = mcp.notification("notifications/resources/updated", Duration::from_secs(2));
    let mut uris: Vec<&str> =
        updated.iter().map(|n| n["params"]["uri"].as_str().unwrap()).collect();
    uris.sort();
    assert_eq!(uris, ["stardust://documents/books/dune.dust", "stardust://entities/book/dune"]);
    // Single use: the second attempt finds no preview.
    let again = mcp.fail("preview_confirm", json!({"previewId": id}));
    assert_eq!(again["code"], "preview-not-found");
    // A refused commit names the problems.
    let bad = mcp.ok("entity_create", json!({"entities": ["id ?x type book title X"]}));
    assert_eq!(bad["committable"], false, "{bad}");
    let refused = mcp.fail("preview_confirm", json!({"previewId": bad["previewId"]}));
    assert_eq!(refused["code"], "refused", "{refused}");
    assert!(!refused["problems"].as_array().unwrap().is_empty(), "{refused}");
    let status = mcp.ok("status", json!({}));
    let kinds: Vec<(&str, bool)> = status["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["kind"].as_str().unwrap(), d["allowed"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("gate", true),
            ("gate", true),
            ("save", true),
            ("gate", true),
            ("gate", true),
            ("save", false)
        ]
    );
}

#[test]
fn the_gated_posture_follows_the_client_name_and_fails_closed() {
    let tmp = util::library();
    gated(tmp.path(), &["claude-code"]);
    let cases = [("claude-code", true), ("codex", false), ("", false)];
    for (name, allowed) in cases {
        let mut mcp = Mcp::open(tmp.path(), &[], name);
        assert_eq!(mcp.tool_names().contains(&"preview_confirm".to_owned()), allowed, "{name:?}");
        // One core serves the store to the three clients in turn: this session's decision
        // is the latest.
        let status = mcp.ok("status", json!({}));
        let decision = status["decisions"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(decision["allowed"], allowed, "{name:?}: {decision}");
        if name.is_empty() {
            assert!(
                decision["reason"].as_str().unwrap().contains("no clientInfo.name"),
                "{decision}"
            );
        }
        if !allowed {
            let error = mcp.fail("preview_confirm", json!({"previewId": "p"}));
            assert_eq!(error["code"], "mutation-disabled");
        }
        assert!(mcp.close());
    }
    // A gated posture without an allowlist refuses to start.
    let broken = util::library();
    let config = std::fs::read_to_string(broken.path().join("stardust.toml")).unwrap();
    std::fs::write(
        broken.path().join("stardust.toml"),
        format!("{config}\n[mcp]\nmutation = \"gated\"\n"),
    )
    .unwrap();
    let out = util::stardust(&["mcp", "--store", broken.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        util::text(&out.stderr).contains("error[config-invalid]"),
        "{}",
        util::text(&out.stderr)
    );
}

#[test]
fn pages_are_bounded_and_never_silently_cut() {
    let tmp = util::library();
    // 300 people with long names: a full page of them is far over 64 KiB.
    let long = "n".repeat(900);
    let mut people = String::from("[");
    for i in 0..300 {
        if i > 0 {
            people.push(',');
        }
        people.push_str(&format!(
            r#"{{"id": "person/p{i:03}", "type": "person", "name": "{long}"}}"#
        ));
    }
    people.push(']');
    std::fs::write(tmp.path().join("people/many.json"), people).unwrap();
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    let query = "find [?p ?n] where [[?p type person] [?p name ?n]]";
    let too_many = mcp.fail("query_execute", json!({"document": query, "limit": 501}));
    assert_eq!(too_many["code"], "invalid-arguments");
    assert!(too_many["message"].as_str().unwrap().contains("at most 500"), "{too_many}");
    let mut seen = Vec::new();
    let mut offset = 0;
    let mut shrunk = false;
    let total = loop {
        let result =
            mcp.call("query_execute", json!({"document": query, "limit": 500, "offset": offset}));
        let bytes = serde_json::to_vec(&result["structuredContent"]).unwrap().len();
        assert!(bytes <= 64 * 1024, "a page of {bytes} bytes");
        let page = &result["structuredContent"];
        shrunk |= page["pageShrunk"] == true;
        seen.extend(page["rows"].as_array().unwrap().iter().map(|r| r[0].clone()));
        match page["nextOffset"].as_u64() {
            Some(next) => offset = next,
            None => break page["total"].as_u64().unwrap(),
        }
    };
    assert!(shrunk);
    assert_eq!(seen.len() as u64, total);
    assert!(total > 300);
    let mut unique = seen.clone();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "no row twice");
    // The default page is 100 items; navigation lists page the same way.
    let ids = mcp.ok("query_execute", json!({"document": "find [?p] where [[?p type person]]"}));
    assert_eq!(ids["rows"].as_array().unwrap().len(), 100);
    assert_eq!(ids["nextOffset"], 100);
    assert_eq!(ids.get("pageShrunk"), None);
    let symbols = mcp.ok("workspace_symbols", json!({"query": "person/p"}));
    let kept = symbols["symbols"].as_array().unwrap().len();
    assert!(kept < 100 && symbols["pageShrunk"] == true, "{kept}");
    assert_eq!(symbols["nextOffset"], kept);
    assert!(symbols["total"].as_u64().unwrap() >= 300);
    let last =
        mcp.ok("workspace_symbols", json!({"query": "person/p", "offset": 300, "limit": 500}));
    assert_eq!(last["nextOffset"], Value::Null);
    let symbols = mcp.ok("document_symbols", json!({"path": "people/many.json", "limit": 500}));
    let kept = symbols["symbols"].as_array().unwrap().len();
    assert!(kept < 300 && symbols["pageShrunk"] == true, "{kept}");
    assert_eq!(symbols["nextOffset"], kept);
}

#[test]
fn navigation_by_position_and_by_entity() {
    let tmp = util::library();
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    // Line 6 of books/dune.dust is `author     @person/frank-herbert`.
    let hover =
        mcp.ok("hover", json!({"path": "books/dune.dust", "position": {"line": 6, "column": 14}}));
    assert!(hover["hover"]["markdown"].as_str().unwrap().contains("Frank Herbert"), "{hover}");
    assert_eq!(hover["hover"]["entity"], "book/dune");
    let absolute = tmp.path().canonicalize().unwrap().join("books/dune.dust");
    let same = mcp.ok(
        "hover",
        json!({"path": absolute.to_str().unwrap(), "position": {"line": 6, "column": 14}}),
    );
    assert_eq!(same, hover);
    let definition = mcp.ok("definition", json!({"entity": "book/dune", "pointer": "/author"}));
    let target = &definition["locations"][0];
    assert_eq!(target["path"], "people/frank-herbert.dust");
    assert_eq!(target["entity"], "person/frank-herbert");
    assert_eq!(
        target["range"]["line"].as_u64().unwrap(),
        1 + std::fs::read_to_string(tmp.path().join("people/frank-herbert.dust"))
            .unwrap()
            .lines()
            .position(|l| l.starts_with("id "))
            .unwrap() as u64
    );
    let references = mcp
        .ok("references", json!({"entity": "person/frank-herbert", "includeDeclaration": false}));
    let referrers: Vec<&str> = references["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["entity"].as_str().unwrap())
        .collect();
    assert!(referrers.contains(&"book/dune"), "{references}");
    assert_eq!(references["total"].as_u64().unwrap() as usize, referrers.len());
    let outline = mcp.ok("document_symbols", json!({"path": "books/dune.dust"}));
    assert_eq!(outline["symbols"][0]["name"], "book/dune");
    assert_eq!(outline["symbols"][0]["kind"], "entity");
    let described = mcp.ok("describe_type", json!({"type": "book"}));
    assert!(described["required"].as_array().unwrap().contains(&json!("author")));
    let author =
        described["fields"].as_array().unwrap().iter().find(|f| f["name"] == "author").unwrap();
    assert_eq!(author["reference"], "person");
    let clean = mcp.ok("diagnostics", json!({}));
    assert_eq!(clean["total"], 0, "{clean}");
    // Resources: documents and entities, listed and read.
    let listed = mcp.request("resources/list", json!({}));
    let resources = listed["result"]["resources"].as_array().unwrap();
    assert!(resources.iter().any(|r| r["uri"] == "stardust://documents/books/dune.dust"));
    assert!(resources.iter().any(|r| r["uri"] == "stardust://entities/book/dune"));
    let templates = mcp.request("resources/templates/list", json!({}));
    let templates: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        templates,
        ["stardust://documents/{+path}", "stardust://entities/{+id}", "stardust://views/{+id}"]
    );
    let read = mcp.request("resources/read", json!({"uri": "stardust://entities/book/dune"}));
    let entity: Value =
        serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(entity["value"]["title"], "Dune");
    let read =
        mcp.request("resources/read", json!({"uri": "stardust://documents/books/dune.dust"}));
    assert!(
        read["result"]["contents"][0]["text"].as_str().unwrap().contains("id         book/dune")
    );
    let missing =
        mcp.request("resources/read", json!({"uri": "stardust://documents/../etc/passwd"}));
    assert_eq!(missing["error"]["data"]["code"], "not-found", "{missing}");
}

#[test]
fn bad_input_gets_typed_errors_and_never_stops_the_server() {
    let tmp = util::library();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.json"), "{}").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.json"),
        tmp.path().join("books/link.json"),
    )
    .unwrap();
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    let position = json!({"line": 1, "column": 1});
    for path in ["../x.json", "/etc/passwd", "books/../../x.json", "books/link.json"] {
        let error = mcp.fail("hover", json!({"path": path, "position": position}));
        assert_eq!(error["code"], "outside-store", "{path}: {error}");
    }
    let cases = [
        (
            "query_execute",
            json!({"document": "find [?b]", "limit": "ten"}),
            "invalid-arguments",
            "`limit`",
        ),
        ("entity_get", json!({"id": "book/dun"}), "not-found", "did you mean 'book/dune'"),
        (
            "hover",
            json!({"path": "books/dune.dust", "position": {"line": 0, "column": 1}}),
            "invalid-arguments",
            "1-based",
        ),
        ("hover", json!({"path": "books/dune.dust"}), "invalid-arguments", "position"),
        (
            "hover",
            json!({"entity": "book/dune", "pointer": "/nope"}),
            "not-found",
            "no value at /nope",
        ),
        (
            "references",
            json!({"entity": "book/dune", "includeDeclaration": "yes"}),
            "invalid-arguments",
            "`includeDeclaration` must be a boolean",
        ),
        (
            "document_symbols",
            json!({"path": "books/dune.dust", "extra": 1}),
            "invalid-arguments",
            "`extra` is not an argument",
        ),
        ("describe_type", json!({"type": "movie"}), "not-found", "known types: award, book"),
        ("preview_discard", json!({}), "invalid-arguments", "previewId"),
    ];
    for (tool, args, code, why) in cases {
        let error = mcp.fail(tool, args);
        assert_eq!(error["code"], code, "{tool}: {error}");
        assert!(error["message"].as_str().unwrap().contains(why), "{tool}: {error}");
    }
    // Protocol problems are protocol errors; the server keeps serving after each.
    let unknown = mcp.request("tools/call", json!({"name": "shell", "arguments": {}}));
    assert_eq!(unknown["error"]["data"]["code"], "invalid-arguments", "{unknown}");
    let method = mcp.request("no/such/method", json!({}));
    assert!(method["error"].is_object(), "{method}");
    mcp.send_raw("{this is not json");
    mcp.send_raw("");
    let huge = "x".repeat(4 * 1024 * 1024);
    // A 4 MB argument is read; its 4 MB answer is refused, not cut, and says how to ask less.
    let big = mcp.fail("expression_evaluate", json!({"expression": format!("'{huge}'")}));
    assert_eq!(big["code"], "unsupported", "{big}");
    assert!(big["bytes"].as_u64().unwrap() > 4 * 1024 * 1024);
    assert!(big["message"].as_str().unwrap().contains("64 KiB"), "{big}");
    let alive = mcp.ok("entity_get", json!({"id": "book/dune"}));
    assert_eq!(alive["path"], "books/dune.dust");
    // A client that leaves in the middle of a call: the server finishes and exits cleanly.
    mcp.send(json!({"jsonrpc": "2.0", "id": 999, "method": "tools/call",
                    "params": {"name": "query_execute", "arguments": {"document": "find [?a ?b] where [[?a type ?t] [?b type ?t]]"}}}));
    assert!(mcp.close());
}

#[test]
fn an_answer_too_large_for_a_page_says_what_it_left_out() {
    let tmp = util::library();
    let people: Vec<String> = (0..3000)
        .map(|i| format!(r#"{{"id": "person/p{i:04}", "type": "person", "name": "P{i}"}}"#))
        .collect();
    std::fs::write(tmp.path().join("people/many.json"), format!("[{}]", people.join(",\n")))
        .unwrap();
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    let result = mcp.call("changes_since", json!({"seq": 0}));
    assert_eq!(result["isError"], false, "{result}");
    let changes = &result["structuredContent"];
    assert!(serde_json::to_vec(changes).unwrap().len() <= 64 * 1024);
    let kept = changes["entities"].as_array().unwrap().len();
    let left_out = changes["omitted"]["entities"].as_u64().unwrap() as usize;
    assert!(kept > 0 && left_out > 0);
    assert!(kept + left_out > 3000, "{kept} + {left_out}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(&format!("left out: {left_out} entities")), "{text}");
}

/// One HTTP/1.1 exchange of a JSON-RPC message (`util::http_post`).
fn http(port: u16, headers: &[(&str, &str)], body: &Value) -> (u16, Vec<(String, String)>, String) {
    util::http_post(port, headers, &body.to_string())
}

/// The JSON-RPC messages of a response body, plain JSON or server-sent events.
fn messages(body: &str) -> Vec<Value> {
    if body.trim_start().starts_with('{') {
        return vec![serde_json::from_str(body).unwrap()];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| d.starts_with('{'))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn streamable_http_on_loopback_checks_host_and_origin() {
    let tmp = util::library();
    let mut child = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(["mcp", "--allow-mutation", "--mcp-http", "127.0.0.1:0", "--store"])
        .arg(tmp.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let port: u16 = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server stopped before listening");
        if let Some(at) = line.find("http://127.0.0.1:") {
            let rest = &line[at + "http://127.0.0.1:".len()..];
            break rest[..rest.find('/').unwrap()].parse().unwrap();
        }
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "http-agent", "version": "1"}}});
    let (status, headers, body) = http(port, &[], &init);
    assert_eq!(status, 200, "{body}");
    assert_eq!(messages(&body)[0]["result"]["serverInfo"]["name"], "stardust");
    let session = headers.iter().find(|(k, _)| k == "mcp-session-id").unwrap().1.clone();
    let with_session = [("Mcp-Session-Id", session.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(http(port, &with_session, &initialized).0, 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "entity_get", "arguments": {"id": "book/dune"}}});
    let (status, _, body) = http(port, &with_session, &call);
    assert_eq!(status, 200, "{body}");
    let answer = messages(&body).into_iter().find(|m| m["id"] == 2).unwrap();
    assert_eq!(answer["result"]["structuredContent"]["path"], "books/dune.dust");
    // Two HTTP clients are two sessions: a preview belongs to the one that made it.
    let (_, headers, _) = http(port, &[], &init);
    let other = headers.iter().find(|(k, _)| k == "mcp-session-id").unwrap().1.clone();
    assert_ne!(other, session);
    assert_eq!(http(port, &[("Mcp-Session-Id", &other)], &initialized).0, 202);
    let tool = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let result = |session: &str, request: &Value| {
        let (_, _, body) = http(port, &[("Mcp-Session-Id", session)], request);
        let id = request["id"].clone();
        messages(&body).into_iter().find(|m| m["id"] == id).unwrap()["result"].clone()
    };
    let preview = result(
        &session,
        &tool(4, "entity_rename", json!({"id": "book/dune", "newId": "book/dune-1965"})),
    );
    let confirm =
        tool(5, "preview_confirm", json!({"previewId": preview["structuredContent"]["previewId"]}));
    let elsewhere = result(&other, &confirm);
    assert_eq!(util::mcp::tool_error(&elsewhere)["code"], "preview-not-found", "{elsewhere}");
    let own = result(&session, &confirm);
    assert_eq!(own["isError"], false, "{own}");
    assert!(tmp.path().join("books/dune.dust").exists());
    let renamed = result(&other, &tool(6, "entity_get", json!({"id": "book/dune-1965"})));
    assert_eq!(renamed["structuredContent"]["path"], "books/dune.dust");
    // This server's own origin passes; DNS rebinding (another Host) and other origins do not.
    let own = format!("http://127.0.0.1:{port}");
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let (status, _, _) = http(port, &[("Mcp-Session-Id", &session), ("Origin", &own)], &list);
    assert_eq!(status, 200);
    let refused = [
        vec![("Host", "evil.example.com")],
        vec![("Host", "evil.example.com:80")],
        vec![("Origin", "http://evil.example.com")],
        vec![("Origin", "http://127.0.0.1:1")],
    ];
    for headers in refused {
        let mut all = headers.clone();
        all.push(("Mcp-Session-Id", &session));
        assert_eq!(http(port, &all, &list).0, 403, "{headers:?}");
    }
    // A client ends its session with DELETE: 204 (the Python SDK takes rmcp's 202 for a
    // failure), and the session is gone.
    let version = ("MCP-Protocol-Version", "2025-06-18");
    let (status, _, body) =
        util::http_request(port, "DELETE", &[("Mcp-Session-Id", &session), version], "");
    assert_eq!(status, 204, "{body}");
    assert_eq!(http(port, &with_session, &list).0, 404);
    let _ = child.kill();
    let _ = child.wait();
    // Only loopback addresses are served.
    let out = util::stardust(&[
        "mcp",
        "--mcp-http",
        "0.0.0.0:0",
        "--store",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(util::text(&out.stderr).contains("loopback only"), "{}", util::text(&out.stderr));
}

#[test]
fn diagnostics_name_their_entity_and_page_like_every_list() {
    let tmp = tempfile::tempdir().unwrap();
    util::copy_store(&util::repo().join("examples/broken"), tmp.path());
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    let all = mcp.ok("diagnostics", json!({"limit": 500}));
    assert_eq!(all["total"], 22, "{all}");
    let errors = mcp.ok("diagnostics", json!({"severity": "error", "limit": 5}));
    assert_eq!((errors["total"].clone(), errors["nextOffset"].clone()), (json!(19), json!(5)));
    let one = mcp.ok("diagnostics", json!({"path": "dangling-ref.dust"}));
    let d = &one["diagnostics"][0];
    assert_eq!(d["code"], "dangling-ref");
    assert_eq!(d["entity"], "book/dangling-ref");
    assert_eq!(d["range"], json!({"line": 5, "column": 9, "endLine": 5, "endColumn": 29}));
    assert_eq!(d["data"]["candidates"][0], "person/frank-herbert", "{d}");
    let text = mcp.call("diagnostics", json!({"path": "dangling-ref.dust"}))["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.starts_with("diagnostics: 1 of 1\n{"), "{text}");
    // The repairs at that place, with their exact edits (the closest id first).
    let at = json!({"path": "dangling-ref.dust", "position": {"line": 5, "column": 12}});
    let actions = mcp.ok("code_actions", at);
    let fix = &actions["actions"][0];
    assert_eq!(fix["kind"], "quickfix", "{actions}");
    assert_eq!(fix["diagnostic"]["code"], "dangling-ref");
    assert_eq!(fix["preferred"], true);
    assert_eq!(fix["edits"][0]["newText"], "@person/frank-herbert", "{fix}");
    assert_eq!(fix["edits"][0]["range"], d["range"]);
    let last = actions["actions"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["kind"].clone(), last["to"].clone()), (json!("convert"), json!("json")));
}

/// Schemas known by URL (SPEC §23) through MCP: a document validated against the schema its
/// `$schema` URL names, and one whose schema the store does not hold gets `schema-unavailable`.
#[test]
fn diagnostics_of_schemas_known_by_url() {
    let tmp = tempfile::tempdir().unwrap();
    util::copy_store(&util::repo().join("examples/schema-uris-broken"), tmp.path());
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    let team = mcp.ok("diagnostics", json!({"path": "data/team.json"}));
    let d = &team["diagnostics"][0];
    assert_eq!((d["code"].clone(), d["severity"].clone()), (json!("schema"), json!("error")));
    assert_eq!(d["data"]["property"], "home", "a keyword beside $ref in draft 7 applies: {d}");
    let remote = mcp.ok("diagnostics", json!({"path": "data/remote.json"}));
    let d = &remote["diagnostics"][0];
    assert_eq!(d["code"], "schema-unavailable", "{remote}");
    assert_eq!(d["severity"], "warning");
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("[[schema]] url = \"https://example.org/not-vendored.schema.json\""),
        "{message}"
    );
    let app = mcp.ok("diagnostics", json!({"path": "config/app.json"}));
    assert_eq!(app["total"], 1, "$schema and a glob naming one schema report once: {app}");
}

#[test]
fn edits_made_behind_the_servers_back_notify_subscribers_too() {
    let tmp = util::library();
    let mut mcp = Mcp::open(tmp.path(), &[], "test-agent");
    let uri = "stardust://documents/books/dune.dust";
    assert_eq!(mcp.request("resources/subscribe", json!({"uri": uri}))["result"], json!({}));
    let other = "stardust://documents/books/emma.dust";
    assert_eq!(mcp.request("resources/subscribe", json!({"uri": other}))["result"], json!({}));
    assert_eq!(mcp.request("resources/unsubscribe", json!({"uri": other}))["result"], json!({}));
    let path = tmp.path().join("books/dune.dust");
    let text = std::fs::read_to_string(&path).unwrap().replace("pages      412", "pages      414");
    std::fs::write(&path, text).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while mcp.notification("notifications/resources/updated", Duration::from_millis(200)).is_empty()
    {
        assert!(Instant::now() < deadline, "no notification after an external edit");
    }
    let updated = mcp.notification("notifications/resources/updated", Duration::ZERO);
    assert!(updated.iter().all(|n| n["params"]["uri"] == uri), "{updated:?}");
    let read = mcp.request("resources/read", json!({"uri": uri}));
    assert!(read["result"]["contents"][0]["text"].as_str().unwrap().contains("pages      414"));
    let bad = mcp.request("resources/subscribe", json!({"uri": "file:///etc/passwd"}));
    assert_eq!(bad["error"]["data"]["code"], "invalid-arguments", "{bad}");
}

#[test]
fn views_are_resources_that_update_when_a_commit_changes_their_result() {
    let tmp = util::library();
    std::fs::write(
        tmp.path().join("views.dust"),
        "id view/dune-pages\ntype view\nformat jsonl\npath views/dune.jsonl\nquery {find [?p] where [[?b type book] [?b id book/dune] [?b pages ?p]]}\n",
    )
    .unwrap();
    let mut mcp = Mcp::open(tmp.path(), &["--allow-mutation"], "test-agent");
    let uri = "stardust://views/view/dune-pages";
    let listed = mcp.request("resources/list", json!({}));
    let resources = listed["result"]["resources"].as_array().unwrap();
    let view = resources.iter().find(|r| r["uri"] == uri).expect("the view is listed");
    assert_eq!(view["mimeType"], "application/jsonl");
    let read = mcp.request("resources/read", json!({"uri": uri}));
    assert_eq!(read["result"]["contents"][0]["text"], "{\"p\":412}\n", "{read}");
    let first_seq = read["result"]["contents"][0]["_meta"]["seq"].as_u64().unwrap();
    assert_eq!(mcp.request("resources/subscribe", json!({"uri": uri}))["result"], json!({}));
    let preview = mcp.ok(
        "mutation_execute",
        json!({"document": "find [?b] where [[?b id book/dune]]", "set": {"pages": 413}}),
    );
    let committed = mcp.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    let seq = committed["seq"].as_u64().unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while !mcp
        .notification("notifications/resources/updated", Duration::from_millis(200))
        .iter()
        .any(|n| n["params"]["uri"] == uri)
    {
        assert!(Instant::now() < deadline, "no update for the view");
    }
    let read = mcp.request("resources/read", json!({"uri": uri}));
    assert_eq!(read["result"]["contents"][0]["text"], "{\"p\":413}\n", "{read}");
    let new_seq = read["result"]["contents"][0]["_meta"]["seq"].as_u64().unwrap();
    assert!(new_seq == seq && new_seq > first_seq, "{read}");
    let missing = mcp.request("resources/read", json!({"uri": "stardust://views/view/none"}));
    assert_eq!(missing["error"]["data"]["code"], "not-found", "{missing}");
}

#[test]
fn projections_and_entity_files_are_resources_by_their_mount_paths() {
    let tmp = util::library();
    let mut mcp = Mcp::open(tmp.path(), &["--allow-mutation"], "test-agent");
    let projection = "stardust://documents/.stardust/json/books/dune.dust.json";
    let file = "stardust://documents/.stardust/entities/book/dune.json";
    let mut uris = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        let listed = mcp.request("resources/list", params);
        for r in listed["result"]["resources"].as_array().unwrap() {
            uris.push(r["uri"].as_str().unwrap().to_owned());
            if r["uri"] == file || r["uri"] == projection {
                assert_eq!(r["mimeType"], "application/json", "{r}");
            }
        }
        match listed["result"]["nextCursor"].clone() {
            Value::Null => break,
            next => cursor = Some(next),
        }
    }
    assert!(uris.iter().any(|u| u == projection), "{uris:?}");
    assert!(uris.iter().any(|u| u == file), "{uris:?}");
    // A JSON document has no projection; the entity file of an entity in it exists.
    let json_docs: Vec<&String> = uris
        .iter()
        .filter(|u| {
            u.starts_with("stardust://documents/")
                && u.ends_with(".json")
                && !u.contains("/.stardust/")
        })
        .collect();
    for doc in json_docs {
        let path = doc.trim_start_matches("stardust://documents/");
        let projected = format!("stardust://documents/.stardust/json/{path}.json");
        assert!(!uris.contains(&projected), "{projected} is listed");
    }

    // Reading gives the entity's value as JSON, with the document it derives from.
    let read_file = |mcp: &mut Mcp| {
        let read = mcp.request("resources/read", json!({"uri": file}));
        let contents = read["result"]["contents"][0].clone();
        let value: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
        (value, contents["_meta"].clone())
    };
    let (value, meta) = read_file(&mut mcp);
    let dune = mcp.ok("entity_get", json!({"id": "book/dune"}));
    assert_eq!(value, dune["value"]);
    assert_eq!(meta["source"], "books/dune.dust");
    let read = mcp.request("resources/read", json!({"uri": projection}));
    let projected: Value =
        serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(projected, dune["value"], "a document of one entity projects to that entity");

    // A commit that changes the entity updates both subscribed files.
    for uri in [file, projection] {
        assert_eq!(mcp.request("resources/subscribe", json!({"uri": uri}))["result"], json!({}));
    }
    let preview = mcp.ok(
        "mutation_execute",
        json!({"document": "find [?b] where [[?b id book/dune]]", "set": {"pages": 413}}),
    );
    mcp.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let updated =
            mcp.notification("notifications/resources/updated", Duration::from_millis(200));
        let heard = |uri: &str| updated.iter().any(|n| n["params"]["uri"] == uri);
        if heard(file) && heard(projection) {
            break;
        }
        assert!(Instant::now() < deadline, "no update for the derived files: {updated:?}");
    }
    let (value, meta) = read_file(&mut mcp);
    assert_eq!(value["pages"], 413);
    let dune = mcp.ok("entity_get", json!({"id": "book/dune"}));
    assert_eq!(meta["version"], dune["version"], "{dune}");

    let missing = mcp.request(
        "resources/read",
        json!({"uri": "stardust://documents/.stardust/entities/book/none.json"}),
    );
    assert_eq!(missing["error"]["data"]["code"], "not-found", "{missing}");
}

#[test]
fn without_a_store_the_server_says_how_to_name_one() {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .arg("mcp")
        .current_dir(elsewhere.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "stdout carries only protocol");
    let stderr = util::text(&out.stderr);
    assert!(stderr.contains("error[not-found]") && stderr.contains("--store"), "{stderr}");
}

#[test]
fn agents_share_the_stores_core_with_each_other_and_the_command_line() {
    let tmp = util::library();
    let mut writer = Mcp::open(tmp.path(), &["--allow-mutation"], "agent-a");
    assert!(tmp.path().join(".stardust/run/daemon.json").exists(), "a core serves the store");
    // A second agent on the same store: the same core, its own session and gate.
    let mut reader = Mcp::open(tmp.path(), &[], "agent-b");
    assert!(writer.tool_names().contains(&"preview_confirm".to_owned()));
    assert!(!reader.tool_names().contains(&"preview_confirm".to_owned()));
    let status = reader.ok("status", json!({}));
    let clients: Vec<&str> = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients, ["agent-a", "agent-b"]);
    // A commit through the command line reaches the subscribed agent.
    let uri = "stardust://entities/book/dune";
    assert_eq!(reader.request("resources/subscribe", json!({"uri": uri}))["result"], json!({}));
    let patch = tmp.path().join("pages.patch.dust");
    std::fs::write(&patch, "ops [{set {id book/dune pages 415}}]\n").unwrap();
    let applied =
        util::stardust(&["apply", tmp.path().to_str().unwrap(), patch.to_str().unwrap(), "--yes"]);
    assert!(applied.status.success(), "{}", util::text(&applied.stderr));
    let updated = reader.notification("notifications/resources/updated", Duration::from_secs(2));
    assert_eq!(updated.len(), 1, "{updated:?}");
    assert_eq!(updated[0]["params"]["uri"], uri);
    let dune = reader.ok("entity_get", json!({"id": "book/dune"}));
    assert_eq!(dune["value"]["pages"], 415);
    // A commit by one agent is what the other reads next.
    let preview = writer.ok(
        "mutation_execute",
        json!({"document": "find [?b] where [[?b id book/dune]]", "set": {"pages": 416}}),
    );
    let committed = writer.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    assert!(committed["seq"].as_u64().is_some());
    let dune = reader.ok("entity_get", json!({"id": "book/dune"}));
    assert_eq!(dune["value"]["pages"], 416);
    assert!(writer.close() && reader.close());
}

#[test]
fn the_core_serves_mcp_over_http_beside_stdio_agents() {
    let tmp = util::library();
    let mut core = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .arg("serve")
        .arg(tmp.path())
        .args(["--mcp-http", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(core.stderr.take().unwrap());
    let port: u16 = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the core stopped before listening");
        if let Some(at) = line.find("http://127.0.0.1:") {
            let rest = &line[at + "http://127.0.0.1:".len()..];
            break rest[..rest.find('/').unwrap()].parse().unwrap();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    // A stdio agent attaches to the same core and commits.
    let mut agent = Mcp::open(tmp.path(), &["--allow-mutation"], "stdio-agent");
    let preview = agent.ok(
        "mutation_execute",
        json!({"document": "find [?b] where [[?b id book/dune]]", "set": {"pages": 417}}),
    );
    agent.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    // The HTTP agent reads that commit, and has no preview_confirm (the store's posture is off).
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "http-agent", "version": "1"}}});
    let (_, headers, _) = http(port, &[], &init);
    let session = headers.iter().find(|(k, _)| k == "mcp-session-id").unwrap().1.clone();
    let with_session = [("Mcp-Session-Id", session.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(http(port, &with_session, &initialized).0, 202);
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "entity_get", "arguments": {"id": "book/dune"}}});
    let (_, _, body) = http(port, &with_session, &get);
    let answer = messages(&body).into_iter().find(|m| m["id"] == 2).unwrap();
    assert_eq!(answer["result"]["structuredContent"]["value"]["pages"], 417);
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let (_, _, body) = http(port, &with_session, &list);
    let tools = messages(&body).into_iter().find(|m| m["id"] == 3).unwrap();
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"query_execute") && !names.contains(&"preview_confirm"));
    let status = agent.ok("status", json!({}));
    let clients: Vec<&str> = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients, ["stdio-agent", "http-agent"]);
    assert!(agent.close());
    let pid = core.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = core.wait().unwrap();
    assert!(status.success(), "the core stops cleanly on SIGTERM: {status}");
    // Only loopback addresses are served.
    let out =
        util::stardust(&["serve", tmp.path().to_str().unwrap(), "--mcp-http", "0.0.0.0:8765"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(util::text(&out.stderr).contains("loopback only"), "{}", util::text(&out.stderr));
}

/// Every `type` keyword in `schema` whose value is an array (places as JSON Pointers).
fn array_types(schema: &Value, at: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "type" && value.is_array() && !at.ends_with("/properties") {
                    found.push(format!("{at}/type"));
                }
                array_types(value, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                array_types(item, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn tool_schemas_are_portable_and_nested_arguments_are_checked() {
    let tmp = util::library();
    let mut mcp = Mcp::open(tmp.path(), &["--allow-mutation"], "test-agent");
    let listed = mcp.request("tools/list", json!({}));
    let mut found = Vec::new();
    for tool in listed["result"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        array_types(&tool["inputSchema"], &format!("{name} inputSchema"), &mut found);
        array_types(&tool["outputSchema"], &format!("{name} outputSchema"), &mut found);
    }
    assert!(found.is_empty(), "array-valued `type` (use anyOf): {found:?}");
    // A navigation tool's nested fields and minimums are validated like every command's.
    let at = |position: Value| json!({"path": "books/dune.dust", "position": position});
    let error = mcp.fail("hover", at(json!({"line": 1})));
    assert_eq!(error["code"], "invalid-arguments", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("`position.column` is required"),
        "{error}"
    );
    let error = mcp.fail("definition", at(json!({"line": 1, "column": 0})));
    assert_eq!(error["code"], "invalid-arguments", "{error}");
    assert!(error["message"].as_str().unwrap().contains("`position.column` must be at least 1"));
    let error = mcp.fail("entity_create", json!({"entities": [7]}));
    assert!(
        error["message"].as_str().unwrap().contains("must be an object or a string"),
        "{error}"
    );
}

/// JSON with comments (SPEC §23): `tsconfig.json` and `.vscode/settings.json` with comments
/// and trailing commas have no diagnostic through MCP either; a comment in plain JSON is a
/// `syntax` error saying where comments are allowed. Their text is not offered as JSON.
#[test]
fn json_with_comments_has_no_diagnostics() {
    let tmp = util::library();
    let root = tmp.path();
    let tsconfig = "// options\n{\"compilerOptions\": {\"strict\": true, /* why */},}\n";
    std::fs::write(root.join("tsconfig.json"), tsconfig).unwrap();
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    std::fs::write(root.join(".vscode/settings.json"), "{\"a\": 1, // one\n}\n").unwrap();
    std::fs::write(root.join("plain.json"), "{\"a\": 1 // one\n}\n").unwrap();
    let mut mcp = Mcp::open(root, &[], "test-agent");
    for path in ["tsconfig.json", ".vscode/settings.json"] {
        let clean = mcp.ok("diagnostics", json!({"path": path}));
        assert_eq!(clean["total"], 0, "{path}: {clean}");
    }
    let plain = mcp.ok("diagnostics", json!({"path": "plain.json"}));
    assert_eq!(plain["total"], 1, "{plain}");
    assert_eq!(plain["diagnostics"][0]["code"], "syntax");
    assert_eq!(
        plain["diagnostics"][0]["message"],
        "comments are not allowed in JSON; remove it (comments are allowed in .jsonc files and \
         in .json files matched by [store] jsonc)"
    );
    let all = mcp.ok("diagnostics", json!({}));
    assert_eq!(all["total"], 1, "only plain.json: {all}");
    let read = mcp.request("resources/read", json!({"uri": "stardust://documents/tsconfig.json"}));
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["text"], tsconfig);
    assert_eq!(contents["mimeType"], "text/plain");
}

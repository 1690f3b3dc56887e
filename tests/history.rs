//! History you can use (SPEC §26) end to end, through the real binary: `stardust show`,
//! `diff` and `revert` on the command line, the history tools over MCP, and the commands over
//! LSP `workspace/executeCommand` (with an editor's unsaved text refusing a revert).

mod util;

use std::path::Path;

use expect_test::expect;
use serde_json::{Value, json};
use util::lsp::Lsp;
use util::mcp::Mcp;
use util::{stardust, text};

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("schemas")).unwrap();
    std::fs::create_dir_all(root.join("books")).unwrap();
    std::fs::write(root.join("schemas/book.schema.json"), r#"{"type": "object"}"#).unwrap();
    std::fs::write(
        root.join("books/dune.dust"),
        "id     book/dune\ntype   book\ntitle  Dune\nyear   1965\npages  412\n",
    )
    .unwrap();
    std::fs::write(root.join("agent.patch.dust"), "ops [{set {id book/dune title 'Dune!'}}]\n")
        .unwrap();
    std::fs::write(root.join("person.patch.dust"), "ops [{set {id book/dune pages 413}}]\n")
        .unwrap();
    dir
}

fn cli(root: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let store = root.to_str().unwrap();
    let mut all = vec![args[0], store];
    all.extend_from_slice(&args[1..]);
    let out = stardust(&all);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

#[test]
fn the_command_line_shows_diffs_and_reverts_merging_around_later_changes() {
    let dir = store();
    let root = dir.path();
    let original = read(root, "books/dune.dust");
    let patch = |name: &str| root.join(name).to_str().unwrap().to_owned();
    assert_eq!(cli(root, &["apply", &patch("agent.patch.dust"), "--yes"]).0, Some(0));
    assert_eq!(cli(root, &["apply", &patch("person.patch.dust"), "--yes"]).0, Some(0));

    let (code, shown, _) = cli(root, &["show", "books/dune.dust", "--at", "1"]);
    assert_eq!((code, shown), (Some(0), original.clone()));
    let (_, latest, _) = cli(root, &["show", "books/dune.dust"]);
    assert_eq!(latest, read(root, "books/dune.dust"));
    let (code, diff, _) = cli(root, &["diff", "2"]);
    assert_eq!(code, Some(0));
    expect![[r#"
        --- a/books/dune.dust
        +++ b/books/dune.dust
        @@ -1,5 +1,5 @@
         id     book/dune
         type   book
        -title  Dune
        +title  Dune!
         year   1965
         pages  412
    "#]]
    .assert_eq(&diff);
    let (_, both, _) = cli(root, &["diff", "2..3", "books/dune.dust"]);
    assert!(both.contains("+title  Dune!") && both.contains("+pages  413"), "{both}");

    // The preview of undoing seq 2 keeps seq 3's change, and writes nothing.
    let before = read(root, "books/dune.dust");
    let (code, preview, err) = cli(root, &["revert", "2"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(preview.contains("-title  Dune!\n+title  Dune\n"), "{preview}");
    assert!(preview.contains("nothing written; run again with --yes to commit"), "{preview}");
    assert_eq!(read(root, "books/dune.dust"), before);
    let (code, done, _) = cli(root, &["revert", "2", "--yes"]);
    assert_eq!((code, done.as_str()), (Some(0), "reverted seq 2: committed as seq 4\n"));
    assert_eq!(read(root, "books/dune.dust"), original.replace("412", "413"));

    // Bad input answers the SPEC's codes.
    let (code, _, err) = cli(root, &["show", "books/dune.dust", "--at", "99"]);
    assert_eq!(code, Some(1));
    assert!(err.starts_with("error[not-found]: there is no seq 99"), "{err}");
    let (code, _, err) = cli(root, &["show", "books/never.dust", "--at", "1"]);
    assert!(code == Some(1) && err.starts_with("error[not-found]"), "{err}");
    let (code, _, err) = cli(root, &["diff", "two"]);
    assert!(code == Some(2) && err.starts_with("error[invalid-arguments]"), "{err}");
    // A later change of the line seq 3 changed (seq 5 records the new patch file): undoing
    // seq 3 now conflicts, naming that later seq.
    std::fs::write(root.join("p.patch.dust"), "ops [{set {id book/dune pages 500}}]\n").unwrap();
    assert_eq!(cli(root, &["apply", &patch("p.patch.dust"), "--yes"]).0, Some(0));
    let (code, _, err) = cli(root, &["revert", "3"]);
    assert_eq!(code, Some(1));
    assert!(err.starts_with("error[conflict]: cannot revert seq 3: seq 6 changed"), "{err}");
    let (code, _, err) = cli(root, &["revert", "1"]);
    assert!(code == Some(1) && err.starts_with("error[unsupported]"), "{err}");
}

#[test]
fn an_agent_reads_history_and_reverts_over_mcp() {
    let dir = store();
    let root = dir.path();
    let mut mcp = Mcp::open(root, &["--allow-mutation"], "agent");
    let names = mcp.tool_names();
    for tool in
        ["history_list", "document_at", "entity_at", "transaction_diff", "transaction_revert"]
    {
        assert!(names.contains(&tool.to_owned()), "{tool} in {names:?}");
    }
    let preview =
        mcp.ok("patch_apply", json!({"document": "ops [{set {id book/dune year 1966}}]"}));
    let done = mcp.ok("preview_confirm", json!({"previewId": preview["previewId"]}));
    assert_eq!(done["seq"], 2);

    let listed = mcp.call("history_list", json!({"entity": "book/dune"}));
    let summary = listed["content"][0]["text"].as_str().unwrap();
    assert!(summary.starts_with("history_list: 2 of 2"), "{summary}");
    let listed = &listed["structuredContent"];
    assert_eq!(listed["transactions"][0]["origin"], "mcp:agent");
    let at = mcp.ok("document_at", json!({"path": "books/dune.dust", "seq": 1}));
    assert!(at["text"].as_str().unwrap().contains("year   1965"), "{at}");
    let entity = mcp.ok("entity_at", json!({"id": "book/dune", "seq": 2}));
    assert_eq!(entity["value"]["year"], 1966);
    let diff = mcp.ok("transaction_diff", json!({"seq": 2, "paths": ["books/dune.dust"]}));
    assert!(diff["documents"][0]["diff"].as_str().unwrap().contains("+year   1966"), "{diff}");

    let revert = mcp.ok("transaction_revert", json!({"seq": 2}));
    assert_eq!(revert["committable"], true, "{revert}");
    assert_eq!(revert["entities"]["changed"], json!(["book/dune"]));
    mcp.ok("preview_confirm", json!({"previewId": revert["previewId"]}));
    assert!(read(root, "books/dune.dust").contains("year   1965"));

    let missing = mcp.fail("document_at", json!({"path": "books/dune.dust", "seq": 99}));
    assert_eq!(missing["code"], "not-found", "{missing}");
    let unknown = mcp.fail("entity_at", json!({"id": "book/never", "seq": 1}));
    assert_eq!(unknown["code"], "not-found", "{unknown}");
    assert!(mcp.close());
}

#[test]
fn an_editor_runs_the_history_commands_and_its_unsaved_text_refuses_a_revert() {
    let dir = store();
    let root = dir.path();
    let patch = root.join("agent.patch.dust");
    assert_eq!(cli(root, &["apply", patch.to_str().unwrap(), "--yes"]).0, Some(0));
    let (mut lsp, _) = Lsp::initialized(root, json!({}));
    let listed = lsp.run("stardust.history.list", json!({"path": "books/dune.dust"}));
    assert_eq!(listed["total"], 2);
    let diff = lsp.run("stardust.transaction.diff", json!({"seq": 1, "toSeq": 2}));
    let paths: Vec<&str> =
        diff["documents"].as_array().unwrap().iter().map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        ["agent.patch.dust", "books/dune.dust", "person.patch.dust", "schemas/book.schema.json"]
    );

    // An editor holding the document with unsaved text: the revert would lose it.
    let text = read(root, "books/dune.dust");
    let uri = lsp.open("books/dune.dust", &format!("{text}; typing\n"));
    let refused = lsp.command("stardust.transaction.revert", json!({"seq": 2}));
    assert_eq!(refused["error"]["data"]["code"], "conflict", "{refused}");
    lsp.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));

    let revert = lsp.run("stardust.transaction.revert", json!({"seq": 2}));
    let done = lsp.run("stardust.preview.confirm", json!({"previewId": revert["previewId"]}));
    assert_eq!(done["seq"], 3);
    assert!(read(root, "books/dune.dust").contains("title  Dune\n"));
    let bad = lsp.command("stardust.document.at", json!({"path": "books/dune.dust", "seq": 7}));
    assert_eq!(bad["error"]["data"]["code"], Value::from("not-found"), "{bad}");
    lsp.shutdown();
}

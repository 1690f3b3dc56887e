//! End-to-end tests of `stardust apply`, driving the real binary: preview by default, commit
//! with `--yes`, refusal and bad patches.

mod util;

use std::path::Path;
use std::process::Output;

use expect_test::expect;
use serde_json::Value;
use util::{stardust, text};

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("schemas")).unwrap();
    std::fs::create_dir_all(root.join("books")).unwrap();
    std::fs::write(
        root.join("schemas/book.schema.json"),
        r#"{"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}"#,
    )
    .unwrap();
    std::fs::write(
        root.join("books/dune.dust"),
        "id     book/dune   ; the first\ntype   book\ntitle  Dune\n",
    )
    .unwrap();
    std::fs::write(root.join("ops.patch.dust"), "ops [{create {id ?m type book title 'Dune Messiah'}}\n     {set {id book/dune sequel @?m}}]\n").unwrap();
    std::fs::write(root.join("bad.patch.dust"), "ops [{set {id book/dune title 3}}]\n").unwrap();
    dir
}

fn apply(store: &Path, patch: &str, extra: &[&str]) -> Output {
    let mut args = vec!["apply", store.to_str().unwrap(), patch];
    args.extend_from_slice(extra);
    stardust(&args)
}

#[test]
fn without_yes_it_prints_the_preview_and_writes_nothing() {
    let dir = store();
    let root = dir.path();
    let patch = root.join("ops.patch.dust");
    let out = apply(root, patch.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    expect![[r#"
        --- /dev/null
        +++ b/book/dune-messiah.dust
        @@ -0,0 +1,3 @@
        +id     book/dune-messiah
        +type   book
        +title  'Dune Messiah'
        --- a/books/dune.dust
        +++ b/books/dune.dust
        @@ -1,3 +1,4 @@
         id     book/dune   ; the first
         type   book
         title  Dune
        +sequel @book/dune-messiah
        resolved ?m -> book/dune-messiah
        nothing written; run again with --yes to commit
    "#]]
    .assert_eq(&text(&out.stdout));
    assert!(!root.join("book").exists());
    assert_eq!(std::fs::read_to_string(root.join("books/dune.dust")).unwrap().lines().count(), 3);
}

#[test]
fn with_yes_it_commits_and_prints_the_seq_and_resolved_ids() {
    let dir = store();
    let root = dir.path();
    let patch = root.join("ops.patch.dust");
    let out = apply(root, patch.to_str().unwrap(), &["--yes", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["resolved"]["?m"], "book/dune-messiah");
    let seq = answer["seq"].as_u64().unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("books/dune.dust")).unwrap(),
        "id     book/dune   ; the first\ntype   book\ntitle  Dune\nsequel @book/dune-messiah\n"
    );
    let log = stardust(&["log", root.to_str().unwrap(), "--format", "json"]);
    let last: Value = serde_json::from_str(text(&log.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(last["seq"], seq);
    assert_eq!(last["origin"], "sdk:cli");
}

#[test]
fn a_refused_patch_exits_1_and_writes_nothing() {
    let dir = store();
    let root = dir.path();
    let before = std::fs::read_to_string(root.join("books/dune.dust")).unwrap();
    let patch = root.join("bad.patch.dust");
    let preview = apply(root, patch.to_str().unwrap(), &[]);
    assert_eq!(preview.status.code(), Some(1));
    let shown = text(&preview.stdout);
    assert!(shown.contains("new: books/dune.dust:3:8: error[schema]"), "{shown}");
    assert!(shown.contains("the save authority would refuse this patch"), "{shown}");
    let out = apply(root, patch.to_str().unwrap(), &["--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error[refused]: the change was refused"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(root.join("books/dune.dust")).unwrap(), before);
}

#[test]
fn bad_patches_are_invalid_arguments() {
    let dir = store();
    let root = dir.path();
    std::fs::write(root.join("typo.patch.dust"), "ops [{delete book/dun}]\n").unwrap();
    for (patch, why) in [
        (
            root.join("typo.patch.dust"),
            "error[invalid-arguments]: ops[0] (delete): no entity book/dun; did you mean book/dune?",
        ),
        (root.join("missing.patch.dust"), "error[invalid-arguments]: cannot read the patch"),
    ] {
        let out = apply(root, patch.to_str().unwrap(), &["--yes"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));
    }
}

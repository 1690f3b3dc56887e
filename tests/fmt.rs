//! End-to-end tests of `stardust fmt` and `stardust convert`, driving the real binary.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn stardust(args: &[&str], dir: &Path, stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // The command may exit without reading (a usage error), closing the pipe early.
    let _ = pipe.write_all(stdin.unwrap_or_default().as_bytes());
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn read(dir: &Path, path: &str) -> String {
    fs::read_to_string(dir.join(path)).unwrap()
}

const MESSY_DUST: &str = "id book/dune\ntype   book ; kind\ntags [classic, sci-fi]\n";
const CANONICAL_DUST: &str = "id    book/dune\ntype  book ; kind\ntags  [classic sci-fi]\n";
const MESSY_JSON: &str = "{\"id\":\"person/x\",\"n\":[1,2]}";
const CANONICAL_JSON: &str = "{\n  \"id\": \"person/x\",\n  \"n\": [\n    1,\n    2\n  ]\n}\n";

/// A store-like tree: documents to change, one already canonical, and files fmt must not touch.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "books/dune.dust", MESSY_DUST);
    write(root, "people/x.json", MESSY_JSON);
    write(root, "done.dust", CANONICAL_DUST);
    write(root, "README.md", "not a document {\n");
    write(root, ".stardust/log/0.json", MESSY_JSON);
    write(root, ".git/config.json", MESSY_JSON);
    dir
}

#[test]
fn fmt_rewrites_documents_in_place_and_lists_them() {
    let dir = tree();
    let root = dir.path();
    let output = stardust(&["fmt", "."], root, None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "./books/dune.dust\n./people/x.json\n");
    assert_eq!(read(root, "books/dune.dust"), CANONICAL_DUST);
    assert_eq!(read(root, "people/x.json"), CANONICAL_JSON);
    assert_eq!(read(root, "done.dust"), CANONICAL_DUST);
    assert_eq!(read(root, "README.md"), "not a document {\n");
    assert_eq!(read(root, ".stardust/log/0.json"), MESSY_JSON);
    assert_eq!(read(root, ".git/config.json"), MESSY_JSON);
    // No temporary file is left behind.
    let names: Vec<_> =
        fs::read_dir(root.join("books")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["dune.dust"]);

    // A second run finds nothing to do.
    let again = stardust(&["fmt", "books/dune.dust", "people"], root, None);
    assert!(again.status.success());
    assert_eq!(stdout(&again), "");
}

#[test]
fn check_lists_what_would_change_and_writes_nothing() {
    let dir = tree();
    let root = dir.path();
    let output = stardust(&["fmt", "--check", "."], root, None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "./books/dune.dust\n./people/x.json\n");
    assert_eq!(read(root, "books/dune.dust"), MESSY_DUST);
    assert_eq!(read(root, "people/x.json"), MESSY_JSON);

    let clean = stardust(&["fmt", "--check", "done.dust"], root, None);
    assert_eq!(clean.status.code(), Some(0));
    assert_eq!(stdout(&clean), "");
}

#[test]
fn documents_with_syntax_errors_are_left_untouched() {
    let dir = tree();
    let root = dir.path();
    // The error is after a non-ASCII character: the column counts characters, not bytes.
    let broken = "title 'é' tags [a b\n";
    write(root, "broken.dust", broken);
    write(root, "dup.json", "{\"a\": 1,\n \"a\": 2}");
    let output = stardust(&["fmt", "."], root, None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(read(root, "broken.dust"), broken);
    assert_eq!(read(root, "dup.json"), "{\"a\": 1,\n \"a\": 2}");
    let errors = stderr(&output);
    assert!(errors.contains("./broken.dust:1:16: error[syntax] "), "{errors}");
    assert!(errors.contains("./dup.json:2:2: error[duplicate-key] "), "{errors}");
    // The other documents are still formatted.
    assert_eq!(read(root, "books/dune.dust"), CANONICAL_DUST);
    assert!(stdout(&output).contains("./books/dune.dust\n"));
}

#[test]
fn permissions_are_kept() {
    let dir = tree();
    let root = dir.path();
    let path = root.join("books/dune.dust");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o754)).unwrap();
    let output = stardust(&["fmt", "books/dune.dust"], root, None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(read(root, "books/dune.dust"), CANONICAL_DUST);
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o754);
}

#[test]
fn read_only_documents_are_refused() {
    let dir = tree();
    let root = dir.path();
    let path = root.join("books/dune.dust");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let output = stardust(&["fmt", "books/dune.dust"], root, None);
    assert_eq!(output.status.code(), Some(1));
    let errors = stderr(&output);
    assert!(errors.starts_with("error[invalid-arguments]: "), "{errors}");
    assert!(errors.contains("books/dune.dust is read-only; make it writable"), "{errors}");
    assert_eq!(read(root, "books/dune.dust"), MESSY_DUST);
}

#[test]
fn non_utf8_documents_are_reported_where_the_bad_byte_is() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(
        root.join("latin1.dust"),
        b"a 1
name caf\xe9\n",
    )
    .unwrap();
    let output = stardust(&["fmt", "latin1.dust"], root, None);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).starts_with("latin1.dust:2:9: error[syntax] invalid UTF-8"));
    assert_eq!(fs::read(root.join("latin1.dust")).unwrap(), b"a 1\nname caf\xe9\n");
}

#[test]
fn a_symbolic_link_is_written_through() {
    let dir = tree();
    let root = dir.path();
    std::os::unix::fs::symlink("books/dune.dust", root.join("link.dust")).unwrap();
    let output = stardust(&["fmt", "link.dust"], root, None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(fs::symlink_metadata(root.join("link.dust")).unwrap().file_type().is_symlink());
    assert_eq!(read(root, "books/dune.dust"), CANONICAL_DUST);
}

#[test]
fn explicit_paths_must_be_documents() {
    let dir = tree();
    let root = dir.path();
    let output = stardust(&["fmt", "README.md"], root, None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).starts_with("error[invalid-arguments]: "), "{}", stderr(&output));
    assert!(stderr(&output).contains("README.md is not a document"));

    let missing = stardust(&["fmt", "nope.dust"], root, None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).starts_with("error[not-found]: "), "{}", stderr(&missing));
}

#[test]
fn standard_input_is_formatted_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let output = stardust(&["fmt", "-", "--lang", "dust"], root, Some(MESSY_DUST));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), CANONICAL_DUST);

    let json = stardust(&["fmt", "-", "--lang", "json"], root, Some(MESSY_JSON));
    assert_eq!(stdout(&json), CANONICAL_JSON);

    let check = stardust(&["fmt", "--check", "-", "--lang", "dust"], root, Some(MESSY_DUST));
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(stdout(&check), "");

    let broken = stardust(&["fmt", "-", "--lang", "dust"], root, Some("a [1\n"));
    assert_eq!(broken.status.code(), Some(1));
    assert_eq!(stdout(&broken), "");
    assert!(stderr(&broken).starts_with("<stdin>:1:3: error[syntax] "), "{}", stderr(&broken));
}

#[test]
fn standard_input_needs_a_notation() {
    let dir = tempfile::tempdir().unwrap();
    let output = stardust(&["fmt", "-"], dir.path(), Some(MESSY_DUST));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).starts_with("error[invalid-arguments]: "), "{}", stderr(&output));
    assert!(stderr(&output).contains("--lang"));

    let mixed = stardust(&["fmt", "-", "x.dust", "--lang", "dust"], dir.path(), None);
    assert_eq!(mixed.status.code(), Some(2));
    let lang_on_files = stardust(&["fmt", "x.dust", "--lang", "dust"], dir.path(), None);
    assert_eq!(lang_on_files.status.code(), Some(2));
}

#[test]
fn convert_writes_the_other_notation_and_warns_about_comments() {
    let dir = tree();
    let root = dir.path();
    let to_json = stardust(&["convert", "books/dune.dust", "--to", "json"], root, None);
    assert!(to_json.status.success(), "{}", stderr(&to_json));
    let value: serde_json::Value = serde_json::from_str(&stdout(&to_json)).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"id": "book/dune", "type": "book", "tags": ["classic", "sci-fi"]})
    );
    assert!(
        stderr(&to_json).contains("warning: books/dune.dust: 1 comment dropped"),
        "{}",
        stderr(&to_json)
    );

    let to_dust = stardust(&["convert", "people/x.json", "--to", "dust"], root, None);
    assert!(to_dust.status.success(), "{}", stderr(&to_dust));
    assert_eq!(stdout(&to_dust), "id  person/x\nn   [1 2]\n");
    assert_eq!(stderr(&to_dust), "");
    // The file itself is not changed.
    assert_eq!(read(root, "people/x.json"), MESSY_JSON);
}

#[test]
fn convert_refuses_what_dust_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "n.json", "42\n");
    let output = stardust(&["convert", "n.json", "--to", "dust"], root, None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert!(stderr(&output).starts_with("error[unsupported]: "), "{}", stderr(&output));
    assert!(stderr(&output).contains("top level is an object or an array"));

    write(root, "bad.json", "{\"a\": }");
    let bad = stardust(&["convert", "bad.json", "--to", "dust"], root, None);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).starts_with("bad.json:1:7: error[syntax] "), "{}", stderr(&bad));

    let not_document = stardust(&["convert", "notes.txt", "--to", "json"], root, None);
    assert_eq!(not_document.status.code(), Some(2));
}

const TSCONFIG: &str = "// options\n{\"compilerOptions\": {\"strict\": true, /* why */},}\n";
const TSCONFIG_FORMATTED: &str =
    "// options\n{\n  \"compilerOptions\": {\n    \"strict\": true /* why */\n  }\n}\n";

/// JSON with comments (SPEC §23): `.jsonc` files and `.json` files matched by the store's
/// `[store] jsonc` (the default list outside a store) are formatted keeping their comments;
/// a plain `.json` file with comments is a syntax error saying where comments are allowed.
#[test]
fn fmt_keeps_the_comments_of_jsonc_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "tsconfig.json", TSCONFIG);
    write(root, ".vscode/settings.json", "{\"a\": 1, // one\n}");
    write(root, "notes.jsonc", "[1, /* two */ 2,]");
    write(root, "plain.json", TSCONFIG);
    let output = stardust(&["fmt", "."], root, None);
    assert_eq!(output.status.code(), Some(1), "plain.json cannot be formatted");
    assert_eq!(stdout(&output), "./.vscode/settings.json\n./notes.jsonc\n./tsconfig.json\n");
    assert_eq!(read(root, "tsconfig.json"), TSCONFIG_FORMATTED);
    assert_eq!(read(root, ".vscode/settings.json"), "{\n  \"a\": 1 // one\n}\n");
    assert_eq!(read(root, "notes.jsonc"), "[\n  1, /* two */\n  2\n]\n");
    assert_eq!(read(root, "plain.json"), TSCONFIG);
    let errors = stderr(&output);
    assert!(
        errors.contains(
            "./plain.json:1:1: error[syntax] comments are not allowed in JSON; remove it \
             (comments are allowed in .jsonc files and in .json files matched by [store] jsonc)"
        ),
        "{errors}"
    );
    assert!(!errors.contains("DUST"), "{errors}");

    // Inside a store, its [store] jsonc decides: here tsconfig.json is plain JSON.
    write(root, "stardust.toml", "[store]\njsonc = [\"plain.json\"]\n");
    write(root, "tsconfig.json", TSCONFIG);
    let output = stardust(&["fmt", "--check", "tsconfig.json", "plain.json"], root, None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "plain.json\n");
    assert!(stderr(&output).starts_with("tsconfig.json:1:1: error[syntax] comments are not"));

    // Standard input in JSONC.
    let stdin = stardust(&["fmt", "-", "--lang", "jsonc"], root, Some(TSCONFIG));
    assert!(stdin.status.success(), "{}", stderr(&stdin));
    assert_eq!(stdout(&stdin), TSCONFIG_FORMATTED);
}

/// Converting JSONC to DUST keeps its comments; to JSON drops them with a warning.
#[test]
fn convert_keeps_jsonc_comments_in_dust() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "tsconfig.json", TSCONFIG);
    let to_dust = stardust(&["convert", "tsconfig.json", "--to", "dust"], root, None);
    assert!(to_dust.status.success(), "{}", stderr(&to_dust));
    assert_eq!(stdout(&to_dust), "; options\ncompilerOptions  {\n  strict  true ; why\n}\n");
    assert_eq!(stderr(&to_dust), "");
    let to_json = stardust(&["convert", "tsconfig.json", "--to", "json"], root, None);
    assert!(to_json.status.success());
    assert_eq!(stdout(&to_json), "{\n  \"compilerOptions\": {\n    \"strict\": true\n  }\n}\n");
    assert!(stderr(&to_json).contains("2 comments dropped"), "{}", stderr(&to_json));
    write(root, "a.dust", "; one\nx 1 ; two\n");
    let to_jsonc = stardust(&["convert", "a.dust", "--to", "jsonc"], root, None);
    assert!(to_jsonc.status.success());
    assert_eq!(stdout(&to_jsonc), "{\n  // one\n  \"x\": 1 // two\n}\n");
}

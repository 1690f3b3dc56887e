//! `stardust sdk generate` end to end: files written, the same bytes again, `--check` exit
//! codes (1 and nothing written when out of date), the committed examples kept current, and
//! the languages it does not make.

mod util;

use util::{library, stardust, text};

#[test]
fn generate_writes_then_check_passes_until_a_schema_changes() {
    let store = library();
    let out = tempfile::tempdir().unwrap();
    let (s, o) = (store.path().to_str().unwrap(), out.path().to_str().unwrap());
    let made = stardust(&["sdk", "generate", s, "--lang", "typescript", "--out", o]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    let first = std::fs::read(out.path().join("index.ts")).unwrap();
    assert!(text(&first).contains("export interface Book {"));

    let check = stardust(&["sdk", "generate", s, "--lang", "typescript", "--out", o, "--check"]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));

    // A schema gains a field: --check fails naming the file, and writes nothing.
    let schema = store.path().join("schemas/person.schema.json");
    let changed = std::fs::read_to_string(&schema)
        .unwrap()
        .replace("\"bio\": {", "\"pseudonym\": {\"type\": \"string\"},\n    \"bio\": {");
    std::fs::write(&schema, changed).unwrap();
    let check = stardust(&["sdk", "generate", s, "--lang", "typescript", "--out", o, "--check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(text(&check.stderr).contains("out of date"), "{}", text(&check.stderr));
    assert_eq!(std::fs::read(out.path().join("index.ts")).unwrap(), first);

    let made = stardust(&["sdk", "generate", s, "--lang", "typescript", "--out", o]);
    assert_eq!(made.status.code(), Some(0));
    assert!(
        text(&std::fs::read(out.path().join("index.ts")).unwrap()).contains("pseudonym?: string;")
    );
}

#[test]
fn python_is_a_typed_package() {
    let store = library();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("library_types");
    let (s, o) = (store.path().to_str().unwrap(), dir.to_str().unwrap());
    let made = stardust(&["sdk", "generate", s, "--lang", "python", "--out", o]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    assert!(dir.join("py.typed").is_file());
    let init = text(&std::fs::read(dir.join("__init__.py")).unwrap());
    assert!(init.contains("Book = TypedDict(\"Book\", {"), "{init}");
    // Same schemas, same bytes.
    let again = stardust(&["sdk", "generate", s, "--lang", "python", "--out", o, "--check"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
}

/// The generated code in examples/ is what the library's schemas make today.
#[test]
fn the_examples_are_current() {
    for (lang, dir) in
        [("typescript", "examples/sdk-ts/library"), ("python", "examples/sdk-py/library_types")]
    {
        let out = stardust(&[
            "sdk",
            "generate",
            "examples/library",
            "--lang",
            lang,
            "--out",
            dir,
            "--check",
        ]);
        assert_eq!(out.status.code(), Some(0), "{lang}: {}", text(&out.stderr));
    }
}

#[test]
fn rust_and_missing_stores_are_errors_with_codes() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let rust = stardust(&["sdk", "generate", "examples/library", "--lang", "rust", "--out", o]);
    assert_eq!(rust.status.code(), Some(1));
    assert!(text(&rust.stderr).starts_with("error[unsupported]: "), "{}", text(&rust.stderr));
    let missing =
        stardust(&["sdk", "generate", "/nonexistent/store", "--lang", "python", "--out", o]);
    assert_ne!(missing.status.code(), Some(0));
    assert!(text(&missing.stderr).starts_with("error["), "{}", text(&missing.stderr));
}

//! `stardust sdk generate` end to end: files written, the same bytes again, `--check` exit
//! codes (1 and nothing written when out of date), the committed examples kept current, and
//! the Rust rendering compiled and reading the library.

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
fn missing_stores_are_errors_with_codes() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let missing =
        stardust(&["sdk", "generate", "/nonexistent/store", "--lang", "python", "--out", o]);
    assert_ne!(missing.status.code(), Some(0));
    assert!(text(&missing.stderr).starts_with("error["), "{}", text(&missing.stderr));
}

#[path = "../core/test-data/sdkgen/hostile.rs.expect"]
mod hostile;
/// The Rust rendering compiles (these modules are the core's snapshots, `//- mod.rs` being a
/// comment) and reads every entity of the library.
#[path = "../core/test-data/sdkgen/library.rs.expect"]
mod library;

#[test]
fn the_rust_types_read_every_entity_of_the_library() {
    fn read<T: serde::de::DeserializeOwned>(ty: &str) -> Vec<T> {
        let query = format!("find [?e] where [[?e type {ty}]] pull true limit 1000");
        let out = stardust(&["query", "examples/library", &query, "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let page: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = page["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "no {ty} in the library");
        rows.iter()
            .map(|row| {
                serde_json::from_value(row[0].clone())
                    .unwrap_or_else(|err| panic!("{ty} {}: {err}", row[0]["id"]))
            })
            .collect()
    }
    let books: Vec<library::Book> = read("book");
    let dune = books.iter().find(|b| b.id.0 == "book/dune").unwrap();
    assert_eq!((dune.year, dune.author.0.as_str()), (1965, "@person/frank-herbert"));
    assert_eq!(dune.status, library::BookStatus::Published);
    read::<library::Person>("person");
    read::<library::Publisher>("publisher");
    read::<library::Series>("series");
    read::<library::Award>("award");
    read::<library::Review>("review");
    assert_eq!(library::TYPES.len(), 6);

    // A closed object refuses a field its schema does not have; a wrong reference type does
    // not read as the field's type.
    let mut value = serde_json::to_value(dune).unwrap();
    value["colour"] = serde_json::json!("red");
    assert!(serde_json::from_value::<library::Book>(value).is_err());
    let _: Option<hostile::Class> = None;
}

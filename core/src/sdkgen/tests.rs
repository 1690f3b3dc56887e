//! Snapshot tests of the generator: the sample library's schemas, and hostile schemas (one
//! fixture: `test-data/sdkgen/*.json`, an object of type name -> schema) in every language
//! (`UPDATE_EXPECT=1` rewrites the snapshots).

use std::path::{Path, PathBuf};

use expect_test::expect_file;
use serde_json::Value;

use super::*;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/sdkgen")
}

fn snapshot(files: &[File]) -> String {
    let mut out = String::new();
    for file in files {
        out.push_str(&format!("//- {}\n", file.path));
        out.push_str(&String::from_utf8_lossy(&file.bytes));
    }
    out
}

fn fixture_types(path: &Path) -> Vec<TypeSchema> {
    let value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let Value::Object(map) = value else { panic!("a fixture is an object of schemas") };
    map.into_iter().map(|(name, schema)| TypeSchema { name, schema }).collect()
}

fn library() -> Vec<TypeSchema> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/library");
    let analysis = Analysis::load(&root).unwrap();
    types_of(&analysis)
}

#[test]
fn the_library_in_typescript() {
    let types = library();
    let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["award", "book", "person", "publisher", "review", "series"]);
    let files = generate(&types, Lang::TypeScript);
    expect_file![data_dir().join("library.ts.expect")].assert_eq(&snapshot(&files));
}

#[test]
fn the_library_in_rust() {
    let files = generate(&library(), Lang::Rust);
    expect_file![data_dir().join("library.rs.expect")].assert_eq(&snapshot(&files));
}

#[test]
fn the_library_in_python() {
    let files = generate(&library(), Lang::Python);
    expect_file![data_dir().join("library.py.expect")].assert_eq(&snapshot(&files));
}

/// Schemas the generator cannot express exactly become the closest sound type with a note;
/// names that are keywords or collide are escaped.
#[test]
fn hostile_schemas() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "the fixtures are in {}", data_dir().display());
    for path in paths {
        let types = fixture_types(&path);
        for (lang, ext) in [
            (Lang::TypeScript, "ts.expect"),
            (Lang::Python, "py.expect"),
            (Lang::Rust, "rs.expect"),
        ] {
            let files = generate(&types, lang);
            expect_file![path.with_extension(ext)].assert_eq(&snapshot(&files));
        }
    }
}

/// The same schemas in any order, or twice, give the same bytes.
#[test]
fn generation_is_deterministic() {
    let mut types = fixture_types(&data_dir().join("hostile.json"));
    types.extend(library());
    for lang in [Lang::TypeScript, Lang::Python, Lang::Rust] {
        let first = generate(&types, lang);
        let mut reversed = types.clone();
        reversed.reverse();
        reversed.extend(types.iter().take(2).cloned());
        assert_eq!(first, generate(&reversed, lang));
    }
}

/// A schema that refers to itself endlessly, and one nested as deep as the parser allows,
/// still generate (bounded work, a note at the cut).
#[test]
fn unbounded_schemas_are_cut() {
    let mut deep = serde_json::json!({"type": "string"});
    for _ in 0..200 {
        deep = serde_json::json!({"type": "array", "items": deep});
    }
    let chain = serde_json::json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/a"}},
        "$defs": {
            "a": {"anyOf": [{"$ref": "#/$defs/b"}, {"$ref": "#/$defs/b"}, {"type": "null"}]},
            "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/c"}]},
            "c": {"type": "array", "items": {"$ref": "#/$defs/b"}},
        },
    });
    let types = vec![
        TypeSchema { name: "deep".into(), schema: serde_json::json!({"properties": {"x": deep}}) },
        TypeSchema { name: "chain".into(), schema: chain },
    ];
    for lang in [Lang::TypeScript, Lang::Python] {
        let files = generate(&types, lang);
        let text = String::from_utf8_lossy(&files[0].bytes).into_owned();
        assert!(text.contains("nests too deep"), "{text}");
        assert!(text.contains("recursive `$ref` #/$defs/a"), "{text}");
    }
}

#[test]
fn stale_files_are_the_missing_and_the_different() {
    let files = vec![
        File { path: "a".into(), bytes: b"1".to_vec() },
        File { path: "b".into(), bytes: b"2".to_vec() },
        File { path: "c".into(), bytes: b"3".to_vec() },
    ];
    let stale = stale(&files, |p| match p {
        "a" => Some(b"1".to_vec()),
        "b" => Some(b"x".to_vec()),
        _ => None,
    });
    assert_eq!(stale, ["b", "c"]);
}

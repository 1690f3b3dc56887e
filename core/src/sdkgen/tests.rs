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

/// The whole output folder of TypeScript and Python: manifest, README and runtime around the
/// definitions (shown in full but for the definitions and the runtime, listed by path).
#[test]
fn packages_carry_their_manifest_and_runtime() {
    let types = library();
    for (lang, name, ext) in
        [(Lang::TypeScript, "library", "ts"), (Lang::Python, "library_types", "py")]
    {
        let files = package(&types, lang, name);
        let definitions = generate(&types, lang);
        let mut out = String::new();
        for file in &files {
            let definition = definitions.iter().any(|d| file.path.ends_with(&d.path));
            if file.path.contains("runtime/") || definition || file.path == "stardust_build.py" {
                out.push_str(&format!("//- {} (not shown)\n", file.path));
            } else {
                out.push_str(&format!(
                    "//- {}\n{}",
                    file.path,
                    String::from_utf8_lossy(&file.bytes)
                ));
            }
        }
        expect_file![data_dir().join(format!("package.{ext}.expect"))].assert_eq(&out);
    }
    // The Rust rendering is a module, not a package.
    assert_eq!(package(&types, Lang::Rust, "x"), generate(&types, Lang::Rust));
}

/// Every file of each runtime is in its packages, byte for byte: a file added to sdk-ts/src
/// (compiled into sdk-ts/dist/src) or to sdk-py/stardust_sdk and not to `runtime.rs` fails.
#[test]
fn packages_carry_every_file_of_the_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (lang, dir, prefix, ext) in [
        (Lang::TypeScript, "sdk-ts/dist/src", "runtime/", ["js", "ts"]),
        (Lang::Python, "sdk-py/stardust_sdk", "p/_runtime/", ["py", "py"]),
    ] {
        let files = package(&library(), lang, "p");
        let mut on_disk: Vec<String> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| ext.iter().any(|e| n.ends_with(&format!(".{e}"))))
            .collect();
        on_disk.sort();
        let carried: Vec<String> =
            files.iter().filter_map(|f| f.path.strip_prefix(prefix).map(str::to_owned)).collect();
        assert_eq!(carried, on_disk, "the runtime files of {dir} (add them to sdkgen/runtime.rs)");
        for name in &carried {
            let file = files.iter().find(|f| f.path == format!("{prefix}{name}")).unwrap();
            assert_eq!(file.bytes, std::fs::read(root.join(dir).join(name)).unwrap(), "{name}");
        }
    }
    assert!(runtime::python_exports().contains(&"StardustError"));
}

#[test]
fn package_names_follow_each_ecosystem() {
    let ts = |f| package_name(f, Lang::TypeScript);
    let py = |f| package_name(f, Lang::Python);
    assert_eq!(ts("library"), "library");
    assert_eq!(ts("My Types"), "my-types");
    assert_eq!(ts(".hidden"), "hidden");
    assert_eq!(ts("__"), "stardust-types");
    assert_eq!(py("library_types"), "library_types");
    assert_eq!(py("my-types"), "my_types");
    assert_eq!(py("2024"), "_2024");
    assert_eq!(py("class"), "class_");
}

/// A file an earlier generator wrote that would now mislead is found only when it is still
/// the generator's (its header), never a file of the user's.
#[test]
fn obsolete_files_are_the_generators_own() {
    let ours = generate(&library(), Lang::TypeScript)[0].bytes.clone();
    assert_eq!(
        obsolete(Lang::TypeScript, |p| (p == "index.ts").then(|| ours.clone())),
        ["index.ts"]
    );
    let theirs = b"export const x = 1;\n".to_vec();
    assert!(obsolete(Lang::TypeScript, |_| Some(theirs.clone())).is_empty());
    assert!(obsolete(Lang::Python, |_| Some(ours.clone())).is_empty());
}

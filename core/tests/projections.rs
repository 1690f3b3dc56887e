//! Derived files (SPEC §19): data-driven tests of the rules in `store::projections`, and the
//! store committing changes of derived paths through its save authority.
//!
//! Each fixture in `test-data/projections/` is a small store (`//- path` sections), then
//! `//- OPS`, then one `//- <op> <path>` section per operation, each run on the store as the
//! fixture gives it: `kind`, `list`, `files` (every derived file of the area), `read`, `write` (the section's text is what is written),
//! `write-stale` (the same, by a writer who read an older version of the document) and
//! `delete`. The snapshot shows each answer: the kind, the entries, the bytes, or the new text
//! of every document a write or delete changes and the store's diagnostics after it.

mod common;

use std::fmt::Write;
use std::fs;

use common::fixture::{analyse, check_fixtures, files, render};
use stardust_core::store::projections::{self, Target};
use stardust_core::store::{Change, Op, Origin, Store, Version};

fn run(fixture: &str) -> String {
    let (store, ops) = fixture.split_once("//- OPS\n").expect("a //- OPS section");
    let analysis = analyse(store);
    let mut out = String::new();
    for (header, content) in files(ops) {
        let (op, path) = header.split_once(' ').expect("//- <op> <path>");
        writeln!(out, ">>> {op} {path}").unwrap();
        match op {
            "kind" => {
                let kind = projections::kind(&analysis, path);
                writeln!(out, "{kind:?}").unwrap();
            }
            "files" => {
                let area = projections::area(path).expect("an area's folder").0;
                for file in projections::files(&analysis, area) {
                    writeln!(out, "{file}").unwrap();
                }
            }
            "list" => match projections::list(&analysis, path) {
                Some(entries) => {
                    for (name, dir) in entries {
                        writeln!(out, "{name}{}", if dir { "/" } else { "" }).unwrap();
                    }
                }
                None => writeln!(out, "no folder").unwrap(),
            },
            "read" => {
                let read = projections::target(path).and_then(|t| projections::read(&analysis, &t));
                match read {
                    Some(read) => {
                        writeln!(out, "from {}", read.source).unwrap();
                        out.push_str(std::str::from_utf8(&read.bytes).unwrap());
                    }
                    None => writeln!(out, "nothing").unwrap(),
                }
            }
            "write" | "write-stale" | "delete" => {
                let change = match op {
                    "delete" => Change::delete(path),
                    _ => Change::put(path, content.clone()),
                };
                let change = if op == "write-stale" {
                    change.expecting(Version::of(b"what the writer read"))
                } else {
                    change
                };
                match projections::translate(&analysis, vec![change]) {
                    Ok(changes) => {
                        let mut applied = Vec::new();
                        for change in changes {
                            match change.op {
                                Op::Put(bytes) | Op::Create(bytes) => {
                                    let text = String::from_utf8(bytes.clone()).unwrap();
                                    let how = if analysis.document(&change.path).is_some() {
                                        "changed"
                                    } else {
                                        "created"
                                    };
                                    write!(out, "=== {} ({how})\n{text}", change.path).unwrap();
                                    applied.push((change.path, Some(bytes)));
                                }
                                Op::Delete => {
                                    writeln!(out, "=== {} (deleted)", change.path).unwrap();
                                    applied.push((change.path, None));
                                }
                            }
                        }
                        let after = analysis.with_changes(applied);
                        write!(out, "=== diagnostics after\n{}", render(&after)).unwrap();
                    }
                    Err(err) => writeln!(out, "error[{}]: {err}", err.code()).unwrap(),
                }
            }
            other => panic!("unknown op {other}"),
        }
    }
    out
}

#[test]
fn projection_fixtures() {
    check_fixtures("projections", run);
}

fn store(files: &[(&str, &str)]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    let store = common::open(dir.path());
    (dir, store)
}

const BOOKS: &str = "\
; every book
[
  {id book/dune  type book  title Dune  author @person/frank}   ; the first
  {id book/messiah  type book  title 'Dune Messiah'}
]
";
const FRANK: &str = "id person/frank\ntype person\nname 'Frank Herbert'\n";

#[test]
fn a_write_of_an_entity_file_commits_only_that_item_as_its_document() {
    let (dir, store) = store(&[("books/all.dust", BOOKS), ("people/frank.dust", FRANK)]);
    let path = ".stardust/entities/book/messiah.json";
    let read =
        projections::read(&store.snapshot().analysis, &projections::target(path).unwrap()).unwrap();
    let text = String::from_utf8(read.bytes).unwrap().replace("Dune Messiah", "Messiah");
    let change = Change::put(path, text.clone()).expecting(read.version);
    let committed = store.commit(Origin::Mount, vec![change]).unwrap();
    let txn = committed.transaction.unwrap();
    assert_eq!(txn.origin, Origin::Mount);
    assert_eq!(txn.documents.len(), 1);
    assert_eq!(txn.documents[0].path, "books/all.dust");
    assert_eq!(txn.documents[0].changed, ["book/messiah"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("books/all.dust")).unwrap(),
        BOOKS.replace("'Dune Messiah'", "Messiah")
    );

    // The same write again, by a writer who read the document before that commit: conflict.
    let stale = Change::put(path, text.replace("Messiah", "Again")).expecting(read.version);
    let err = store.commit(Origin::Mount, vec![stale]).unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert!(err.to_string().starts_with("books/all.dust changed since version "), "{err}");
}

#[test]
fn deleting_a_referenced_entity_through_its_file_is_refused_by_the_save_authority() {
    let config = "[save]\nrefuse = [\"syntax\", \"schema\", \"duplicate-id\", \"invalid-id\", \"dangling-ref\"]\n";
    let (dir, store) = store(&[
        ("stardust.toml", config),
        ("books/all.dust", BOOKS),
        ("people/frank.dust", FRANK),
    ]);
    let seq = store.snapshot().seq;
    let err = store
        .commit(Origin::Mount, vec![Change::delete(".stardust/entities/person/frank.json")])
        .unwrap_err();
    assert_eq!(err.code(), "refused", "{err}");
    assert!(err.to_string().contains("dangling-ref"), "{err}");
    assert_eq!(store.snapshot().seq, seq, "nothing was committed");
    assert!(dir.path().join("people/frank.dust").exists());

    // An entity nobody references goes: only its item is cut from the array.
    let committed = store
        .commit(Origin::Mount, vec![Change::delete(".stardust/entities/book/messiah.json")])
        .unwrap();
    assert_eq!(committed.transaction.unwrap().documents[0].deleted, ["book/messiah"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("books/all.dust")).unwrap(),
        "; every book\n[\n  {id book/dune  type book  title Dune  author @person/frank}   ; the first\n]\n"
    );
}

#[test]
fn invalid_json_is_refused_with_its_position_in_the_written_bytes() {
    let (_dir, store) = store(&[("people/frank.dust", FRANK)]);
    let path = ".stardust/json/people/frank.dust.json";
    let bad = b"{\"id\": \"person/frank\",\n  \"name\": }\n".to_vec();
    let err = store.commit(Origin::Mount, vec![Change::put(path, bad.clone())]).unwrap_err();
    assert_eq!(err.code(), "refused");
    let kept = store.keep_rejected(path, &bad, &err).unwrap();
    let why = fs::read_to_string(store.rejected_dir().join(format!("{kept}.why"))).unwrap();
    assert!(why.contains(&format!("{path}:2:11: error[syntax] ")), "{why}");
    assert_eq!(fs::read(store.rejected_dir().join(kept)).unwrap(), bad);
}

#[test]
fn a_refusal_in_the_rewritten_document_is_placed_in_its_new_text() {
    let schema = r#"{"type": "object", "properties": {"year": {"type": "integer"}}}"#;
    let (_dir, store) = store(&[
        ("schemas/book.schema.json", schema),
        ("books/x.dust", "id     book/x\ntype   book\ntitle  X\n"),
    ]);
    let path = ".stardust/entities/book/x.json";
    let bytes = br#"{"id": "book/x", "type": "book", "title": "X", "year": "late"}"#.to_vec();
    let err = store.commit(Origin::Mount, vec![Change::put(path, bytes.clone())]).unwrap_err();
    assert_eq!(err.code(), "refused", "{err}");
    let kept = store.keep_rejected(path, &bytes, &err).unwrap();
    let why = fs::read_to_string(store.rejected_dir().join(format!("{kept}.why"))).unwrap();
    // `year   late` is the fourth line of the rewritten document, its value at column 8.
    assert!(why.contains("books/x.dust:4:8: error[schema] "), "{why}");
}

#[test]
fn kinds_of_derived_paths_in_a_store() {
    let (_dir, store) = store(&[("books/all.dust", BOOKS)]);
    use stardust_core::store::PathKind::*;
    for (path, kind) in [
        (".stardust/entities", Private),
        (".stardust/entities/book", Private),
        (".stardust/entities/book/dune.json", Derived),
        (".stardust/entities/book/new.json", Derived),
        (".stardust/entities/book/sedAbC123", Scratch),
        (".stardust/entities/book/dune.json.tmp", Scratch),
        (".stardust/json/books/all.dust.json", Derived),
        (".stardust/json/books", Private),
        (".stardust/transactions", Private),
    ] {
        assert_eq!(store.path_kind(path), kind, "{path}");
    }
    let target = projections::target(".stardust/entities/book/dune.json").unwrap();
    assert_eq!(target, Target::Entity("book/dune".into()));
}

#[test]
fn a_commit_names_the_projections_and_entity_files_it_changed() {
    let json = "{\"id\": \"person/ann\", \"type\": \"person\", \"name\": \"Ann\"}\n";
    let (_dir, store) = store(&[
        ("books/all.dust", BOOKS),
        ("people/frank.dust", FRANK),
        ("people/ann.json", json),
    ]);
    let feed = store.subscribe();
    // One item of an array changes, a JSON document changes (it has no projection), a DUST
    // document goes with its entity.
    let changes = vec![
        Change::put("books/all.dust", BOOKS.replace("'Dune Messiah'", "Messiah")),
        Change::put("people/ann.json", json.replace("Ann", "Anne")),
        Change::put("people/frank.dust", FRANK.replace("person/frank", "person/f")),
    ];
    store.commit(Origin::Mount, changes).unwrap();
    let Some(stardust_core::store::Notice::Changes { documents, entities, .. }) =
        feed.next_timeout(std::time::Duration::from_secs(10))
    else {
        panic!("no notice for the commit");
    };
    let snapshot = store.snapshot();
    let version = |path: &str| snapshot.version(path);
    let changed: Vec<(String, &str, Option<Version>)> =
        projections::changed(&snapshot.analysis, &documents, &entities)
            .into_iter()
            .map(|c| (c.path, c.change.as_str(), c.version))
            .collect();
    let expected = [
        (".stardust/entities/book/messiah.json", "changed", version("books/all.dust")),
        (".stardust/entities/person/ann.json", "changed", version("people/ann.json")),
        (".stardust/entities/person/f.json", "created", version("people/frank.dust")),
        (".stardust/entities/person/frank.json", "deleted", None),
        (".stardust/json/books/all.dust.json", "changed", version("books/all.dust")),
        (".stardust/json/people/frank.dust.json", "changed", version("people/frank.dust")),
    ];
    let expected: Vec<(String, &str, Option<Version>)> =
        expected.into_iter().map(|(p, c, v)| (p.to_owned(), c, v)).collect();
    assert_eq!(changed, expected);
}

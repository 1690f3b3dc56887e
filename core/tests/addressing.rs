//! What agents address and read: store paths from what a client gives, under the store or a
//! mount of it, and back in the client's form (and refusals of paths outside the store),
//! 1-based character positions, entity ids with JSON Pointers, locations
//! naming their entity, and a type's description from its schema.

mod common;

use common::write;
use expect_test::expect;
use serde_json::json;
use stardust_core::analysis::Analysis;
use stardust_core::answers::location_json;
use stardust_core::ide::{
    Resolved, Root, Roots, describe_type, entity_place, file_uri, position_offset, store_path,
};
use std::path::{Path, PathBuf};

const BOOK_SCHEMA: &str = r##"{
  "title": "Book", "description": "A published book.",
  "type": "object", "required": ["id", "type", "title"], "additionalProperties": false,
  "properties": {
    "id": {"type": "string"},
    "type": {"const": "book"},
    "title": {"type": "string", "description": "As printed on the cover."},
    "status": {"enum": ["draft", "published"], "default": "draft"},
    "author": {"type": "string", "x-stardust-ref": "person"},
    "editors": {"type": "array", "items": {"$ref": "#/$defs/person"}},
    "series": {"type": "object", "required": ["name"],
               "properties": {"name": {"type": "string"}, "number": {"type": "integer", "minimum": 1}}}
  },
  "$defs": {"person": {"type": "string", "x-stardust-ref": ["person", "org"]}}
}"##;

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "schemas/book.schema.json", BOOK_SCHEMA);
    write(root, "schemas/person.schema.json", r#"{"type": "object"}"#);
    write(
        root,
        "books/dune.dust",
        "id     book/dune\ntype   book\ntitle  \"Düne\"\nauthor @person/frank\nseries {name Dune number 1}\n",
    );
    write(
        root,
        "people/frank.json",
        r#"[{"id": "person/frank", "type": "person", "name": "Frank"}]"#,
    );
    dir
}

#[test]
fn paths_inside_the_store_are_made_relative_and_others_refused() {
    let dir = store();
    let root = dir.path().canonicalize().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.json", "{}");
    std::os::unix::fs::symlink(outside.path().join("secret.json"), root.join("books/link.json"))
        .unwrap();
    let abs = root.join("books/dune.dust").display().to_string();
    let ok = [
        ("books/dune.dust", "books/dune.dust"),
        ("./books/../books/dune.dust", "books/dune.dust"),
        (abs.as_str(), "books/dune.dust"),
        ("books/new.dust", "books/new.dust"),
    ];
    for (given, want) in ok {
        assert_eq!(store_path(&root, given).unwrap(), want, "{given}");
    }
    let secret = outside.path().join("secret.json").display().to_string();
    for given in ["../x.json", "books/../../x.json", "/etc/passwd", &secret, "books/link.json", "."]
    {
        let err = store_path(&root, given).unwrap_err();
        assert_eq!(err.code(), "outside-store", "{given}: {err}");
    }
    assert_eq!(store_path(&root, "").unwrap_err().code(), "invalid-arguments");
}

/// A folder that shows the store at `root` the way a mount does: the same relative paths and a
/// `.stardust/store.json` naming the store.
fn fake_mount(root: &Path, store: &Path) -> PathBuf {
    std::fs::create_dir_all(root.join("books")).unwrap();
    std::fs::create_dir_all(root.join("people")).unwrap();
    std::fs::write(root.join("books/dune.dust"), "id book/dune\n").unwrap();
    let record = json!({"store": store.display().to_string(), "mount": root.display().to_string()});
    write(root, ".stardust/store.json", &record.to_string());
    root.canonicalize().unwrap()
}

/// Every form a client may give (relative, absolute, `file:` URI; under the store, a mount
/// found through its `store.json`, a mount the core recorded) resolves to one store path and
/// the root it was given under; paths that leave every root, or hold a NUL byte, are refused
/// with the code and message a client acts on.
#[test]
fn store_and_mount_paths_and_file_uris_map_to_store_paths() {
    let dir = store();
    let root = dir.path().canonicalize().unwrap();
    let place = tempfile::tempdir().unwrap();
    let place = place.path().canonicalize().unwrap();
    let mnt = fake_mount(&place.join("mnt"), &root);
    // A mount the core knows of (`serve --mount`) needs no store.json.
    let recorded = place.join("recorded");
    std::fs::create_dir_all(recorded.join("books")).unwrap();
    // A mount of another store.
    let elsewhere = tempfile::tempdir().unwrap();
    let other = fake_mount(&place.join("other"), elsewhere.path());
    std::os::unix::fs::symlink("/etc", mnt.join("books/out")).unwrap();
    std::os::unix::fs::symlink(place.join("nowhere"), root.join("books/dangling.dust")).unwrap();
    write(&root, "books/a b#ü.dust", "id book/ab\n");

    let roots = Roots::new(&root).with_mount(&recorded);
    let s = |p: &str| {
        p.replace("$STORE", root.to_str().unwrap())
            .replace("$MNT", mnt.to_str().unwrap())
            .replace("$REC", recorded.to_str().unwrap())
            .replace("$OTHER", other.to_str().unwrap())
    };
    let given = [
        "books/dune.dust",
        "$STORE/books/dune.dust",
        "file://$STORE/books/dune.dust",
        "file://localhost$STORE/books/dune.dust",
        "file://$STORE/books/a%20b%23%C3%BC.dust",
        "$MNT/books/dune.dust",
        "$MNT/books/new-one.dust",
        "file://$MNT/people/../books/dune.dust",
        "file://$MNT/books/dune.dust?query#fragment",
        "$REC/books/new-one.dust",
        "$MNT/../x.dust",
        "$MNT/books/out/passwd",
        "$OTHER/books/dune.dust",
        "books/dangling.dust",
        "/etc/passwd",
        "books/a\0.dust",
        "file://$MNT/books/a%00.dust",
        "file://host/books/dune.dust",
        "file://$MNT/books/a%2.dust",
        "",
    ];
    let mut out = String::new();
    for g in given {
        let answer = match roots.to_store_path(&s(g)) {
            Ok(Resolved { path, root: Root::Store }) => format!("store {path}"),
            Ok(Resolved { path, root: Root::Mount(m) }) => format!("mount {} {path}", m.display()),
            Err(err) => format!("error[{}] {err}", err.code()),
        };
        let answer = answer
            .replace(mnt.to_str().unwrap(), "$MNT")
            .replace(recorded.to_str().unwrap(), "$REC")
            .replace(other.to_str().unwrap(), "$OTHER")
            .replace(root.to_str().unwrap(), "$STORE")
            .replace(place.to_str().unwrap(), "$PLACE");
        out.push_str(&format!("{g:?}\n  -> {answer}\n"));
    }
    expect![[r#"
        "books/dune.dust"
          -> store books/dune.dust
        "$STORE/books/dune.dust"
          -> store books/dune.dust
        "file://$STORE/books/dune.dust"
          -> store books/dune.dust
        "file://localhost$STORE/books/dune.dust"
          -> store books/dune.dust
        "file://$STORE/books/a%20b%23%C3%BC.dust"
          -> store books/a b#ü.dust
        "$MNT/books/dune.dust"
          -> mount $MNT books/dune.dust
        "$MNT/books/new-one.dust"
          -> mount $MNT books/new-one.dust
        "file://$MNT/people/../books/dune.dust"
          -> mount $MNT books/dune.dust
        "file://$MNT/books/dune.dust?query#fragment"
          -> mount $MNT books/dune.dust
        "$REC/books/new-one.dust"
          -> mount $REC books/new-one.dust
        "$MNT/../x.dust"
          -> error[outside-store] $MNT/../x.dust is outside the store; give a path inside $STORE
        "$MNT/books/out/passwd"
          -> error[outside-store] $MNT/books/out/passwd is outside the store; give a path inside $STORE
        "$OTHER/books/dune.dust"
          -> error[outside-store] $OTHER/books/dune.dust is outside the store; give a path inside $STORE
        "books/dangling.dust"
          -> error[outside-store] books/dangling.dust is outside the store; give a path inside $STORE
        "/etc/passwd"
          -> error[outside-store] /etc/passwd is outside the store; give a path inside $STORE
        "books/a\0.dust"
          -> error[invalid-arguments] `path` holds a NUL byte, which no file path can; give the document's path without it
        "file://$MNT/books/a%00.dust"
          -> error[invalid-arguments] `path` holds a NUL byte, which no file path can; give the document's path without it
        "file://host/books/dune.dust"
          -> error[invalid-arguments] `file://host/books/dune.dust` is not a file URI of this machine (it names another host); give file:///absolute/path or a path
        "file://$MNT/books/a%2.dust"
          -> error[invalid-arguments] `file://$MNT/books/a%2.dust` is not a file URI of this machine (a `%` is not followed by two hex digits); give file:///absolute/path or a path
        ""
          -> error[invalid-arguments] `path` is empty; give a document path relative to the store root
    "#]].assert_eq(&out);

    // The mount found through its store.json and a recorded one are both roots of a client.
    assert_eq!(roots.root_of(&mnt.join("books")), Some(Root::Mount(mnt.clone())));
    assert_eq!(roots.root_of(&recorded), Some(Root::Mount(recorded.clone())));
    assert_eq!(roots.root_of(&root), Some(Root::Store));
    assert_eq!(roots.root_of(&other), None);
    assert_eq!(roots.root_of(&place), None);
    // Answers name the document under the client's root, percent-encoded as a URI.
    let mount = Root::Mount(mnt.clone());
    assert_eq!(roots.from_store_path(&mount, "books/dune.dust"), mnt.join("books/dune.dust"));
    assert_eq!(
        roots.from_store_path(&Root::Store, "books/dune.dust"),
        root.join("books/dune.dust")
    );
    let uri = roots.uri(&mount, "books/a b#ü.dust");
    assert_eq!(uri, format!("file://{}/books/a%20b%23%C3%BC.dust", mnt.display()));
    assert_eq!(
        roots.uri_to_store_path(&uri).unwrap(),
        Resolved { path: "books/a b#ü.dust".to_owned(), root: mount }
    );
    assert_eq!(file_uri(Path::new("/a/{x}%?`\"<>")), "file:///a/%7Bx%7D%25%3F%60%22%3C%3E");
    let err = roots.uri_to_store_path("books/dune.dust").unwrap_err();
    assert_eq!(err.code(), "invalid-arguments", "{err}");
    // The one-root form agents use finds mounts through their store.json too.
    assert_eq!(store_path(&root, &s("$MNT/books/dune.dust")).unwrap(), "books/dune.dust");
    // A command started inside a mount works on the store it shows.
    let found = stardust_core::scan::find_store(None, &mnt.join("books")).unwrap();
    assert_eq!(found, root);
    let found = stardust_core::scan::find_store(Some(&mnt), &place).unwrap();
    assert_eq!(found, root);
}

#[test]
fn positions_are_one_based_in_characters() {
    let dir = store();
    let analysis = Analysis::load(dir.path()).unwrap();
    let doc = analysis.document("books/dune.dust").unwrap();
    // Line 3 is `title  "Düne"`: column 11 is the `n` after the two-byte `ü`.
    let offset = position_offset(doc, 3, 11).unwrap();
    assert_eq!(&doc.text[offset as usize..offset as usize + 1], "n");
    for (line, column) in [(0, 1), (1, 0), (3, 40), (99, 1)] {
        let err = position_offset(doc, line, column).unwrap_err();
        assert_eq!(err.code(), "invalid-arguments");
        assert!(err.to_string().contains("1-based"), "{err}");
    }
}

#[test]
fn entities_and_pointers_name_places_and_locations_name_entities() {
    let dir = store();
    let analysis = Analysis::load(dir.path()).unwrap();
    let (path, span) = entity_place(&analysis, "book/dune", "/series/number").unwrap();
    assert_eq!(
        location_json(&analysis, &path, span),
        json!({"path": "books/dune.dust", "entity": "book/dune",
               "range": {"line": 5, "column": 26, "endLine": 5, "endColumn": 27}})
    );
    let (path, span) = entity_place(&analysis, "person/frank", "").unwrap();
    assert_eq!(location_json(&analysis, &path, span)["entity"], "person/frank");
    let cases = [
        ("book/dun", "", "not-found", "did you mean 'book/dune'"),
        ("book/dune", "/isbn", "not-found", "its fields are id, type, title, author, series"),
        ("book/dune", "title", "invalid-arguments", "not a JSON Pointer"),
    ];
    for (id, pointer, code, why) in cases {
        let err = entity_place(&analysis, id, pointer).unwrap_err();
        assert_eq!(err.code(), code, "{id} {pointer}");
        assert!(err.to_string().contains(why), "{err}");
    }
}

#[test]
fn a_type_is_described_from_its_schema() {
    let dir = store();
    let analysis = Analysis::load(dir.path()).unwrap();
    let described = describe_type(&analysis, "book").unwrap();
    expect![[r#"
        {
          "type": "book",
          "schema": "schemas/book.schema.json",
          "title": "Book",
          "description": "A published book.",
          "required": [
            "id",
            "type",
            "title"
          ],
          "additionalProperties": false,
          "fields": [
            {
              "name": "id",
              "required": true,
              "types": [
                "string"
              ]
            },
            {
              "name": "type",
              "required": true,
              "types": [
                "string"
              ],
              "const": "book"
            },
            {
              "name": "title",
              "required": true,
              "types": [
                "string"
              ],
              "description": "As printed on the cover."
            },
            {
              "name": "status",
              "required": false,
              "types": [
                "string"
              ],
              "enum": [
                "draft",
                "published"
              ],
              "default": "draft"
            },
            {
              "name": "author",
              "required": false,
              "types": [
                "string"
              ],
              "reference": "person"
            },
            {
              "name": "editors",
              "required": false,
              "types": [
                "array"
              ],
              "items": {
                "types": [
                  "string"
                ],
                "reference": [
                  "person",
                  "org"
                ]
              }
            },
            {
              "name": "series",
              "required": false,
              "types": [
                "object"
              ],
              "fields": [
                {
                  "name": "name",
                  "required": true,
                  "types": [
                    "string"
                  ]
                },
                {
                  "name": "number",
                  "required": false,
                  "types": [
                    "integer"
                  ],
                  "minimum": 1
                }
              ]
            }
          ]
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&described).unwrap());
    let err = describe_type(&analysis, "movie").unwrap_err();
    assert_eq!(err.code(), "not-found");
    assert!(err.to_string().contains("known types: book, person"), "{err}");
}

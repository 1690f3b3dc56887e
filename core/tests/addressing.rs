//! What agents address and read: store paths from what a client gives (and refusals of paths
//! outside the store), 1-based character positions, entity ids with JSON Pointers, locations
//! naming their entity, and a type's description from its schema.

mod common;

use common::write;
use expect_test::expect;
use serde_json::json;
use stardust_core::analysis::Analysis;
use stardust_core::answers::location_json;
use stardust_core::ide::{describe_type, entity_place, position_offset, store_path};

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

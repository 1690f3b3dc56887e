use expect_test::{Expect, expect};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::rewrite;
use crate::syntax::{Lang, parse};

/// Rewrite `text` so that `change` applied to its value holds, check the invariant, and compare.
fn check(lang: Lang, text: &str, change: impl FnOnce(&mut Value), expected: Expect) {
    let parsed = parse(text, lang);
    assert!(parsed.is_clean(), "fixture must parse cleanly: {:?}", parsed.errors);
    let mut new = parsed.value.clone();
    change(&mut new);
    let out = rewrite(text, &parsed, lang, &new);
    assert_eq!(parse(&out, lang).value, new, "rewritten text:\n{out}");
    expected.assert_eq(&out);
}

const DUST: &str = "\
; Dune, the first novel
id      book/dune
type    book
title   'Dune'   ; the title as printed
year    1965
tags    [classic sci-fi]
rights  {holder 'Herbert Properties LLC' since 1965}
";

#[test]
fn dust_set_keeps_comments_and_alignment() {
    check(
        Lang::Dust,
        DUST,
        |v| {
            v["title"] = json!("Dune (1965)");
            v["year"] = json!(1966);
        },
        expect![[r#"
            ; Dune, the first novel
            id      book/dune
            type    book
            title   'Dune (1965)'   ; the title as printed
            year    1966
            tags    [classic sci-fi]
            rights  {holder 'Herbert Properties LLC' since 1965}
        "#]],
    );
}

#[test]
fn dust_insert_aligns_after_trailing_comment() {
    check(
        Lang::Dust,
        "id      book/dune\ntitle   Dune   ; printed\n",
        |v| v["author"] = json!("@person/frank-herbert"),
        expect![[r#"
            id      book/dune
            title   Dune   ; printed
            author  @person/frank-herbert
        "#]],
    );
}

#[test]
fn dust_unset_removes_whole_lines_and_nested_members() {
    check(
        Lang::Dust,
        DUST,
        |v| {
            v.as_object_mut().unwrap().remove("year");
            v["rights"].as_object_mut().unwrap().remove("since");
            v["tags"].as_array_mut().unwrap().remove(0);
        },
        expect![[r#"
            ; Dune, the first novel
            id      book/dune
            type    book
            title   'Dune'   ; the title as printed
            tags    [sci-fi]
            rights  {holder 'Herbert Properties LLC'}
        "#]],
    );
}

#[test]
fn dust_nested_insert_and_append() {
    check(
        Lang::Dust,
        DUST,
        |v| {
            v["rights"]["region"] = json!("world");
            v["tags"].as_array_mut().unwrap().push(json!("desert planet"));
        },
        expect![[r#"
            ; Dune, the first novel
            id      book/dune
            type    book
            title   'Dune'   ; the title as printed
            year    1965
            tags    [classic sci-fi 'desert planet']
            rights  {holder 'Herbert Properties LLC' since 1965 region world}
        "#]],
    );
}

const DUST_ARRAY: &str = "\
; people
[
  {id a/1 type a tags [x y]}   ; one
  {
    id    a/2
    type  a
    notes {
      long 'a long enough value that keeps this object on several lines of its own'
    }
  }
]
";

const JSON_ARRAY: &str = r#"[
  {
    "id": "person/a",
    "type": "person",
    "name": "A"
  },
  {
    "id": "person/b",
    "type": "person",
    "name": "B",
    "tags": ["x", "y"]
  }
]
"#;

#[test]
fn json_delete_entity_and_set_field() {
    check(
        Lang::Json,
        JSON_ARRAY,
        |v| {
            v.as_array_mut().unwrap().remove(0);
            v[0]["name"] = json!("Bee");
        },
        expect![[r#"
            [
              {
                "id": "person/b",
                "type": "person",
                "name": "Bee",
                "tags": ["x", "y"]
              }
            ]
        "#]],
    );
}

#[test]
fn json_insert_follows_indent_and_commas() {
    check(
        Lang::Json,
        JSON_ARRAY,
        |v| {
            v[0]["born"] = json!({"year": 1920, "place": "Tacoma"});
            v[1].as_object_mut().unwrap().remove("tags");
            v.as_array_mut().unwrap().push(json!({"id": "person/c", "type": "person"}));
        },
        expect![[r#"
            [
              {
                "id": "person/a",
                "type": "person",
                "name": "A",
                "born": {
                  "year": 1920,
                  "place": "Tacoma"
                }
              },
              {
                "id": "person/b",
                "type": "person",
                "name": "B"
              },
              {
                "id": "person/c",
                "type": "person"
              }
            ]
        "#]],
    );
}

#[test]
fn json_remove_first_and_all_members() {
    check(
        Lang::Json,
        r#"{"a": 1, "b": 2, "c": {"d": 3}}"#,
        |v| {
            v.as_object_mut().unwrap().remove("a");
            v["c"].as_object_mut().unwrap().remove("d");
        },
        expect![[r#"{"b": 2, "c": {}}"#]],
    );
}

#[test]
fn kind_change_rewrites_the_value_in_place() {
    check(
        Lang::Dust,
        "id x/y\nlist [1 2 3]\n",
        |v| v["list"] = json!({"n": 3}),
        expect![[r#"
            id x/y
            list {n 3}
        "#]],
    );
}

const JSONC: &str = r#"// TypeScript's configuration.
{
  "compilerOptions": {
    /* Language and Environment */
    "target": "es2022", // the emitted JavaScript
    "lib": ["dom", "es2022",],
    // Modules
    "module": "nodenext", // how imports resolve
    "strict": true
  },
  "include": ["src/**/*.ts"], // sources
}
"#;

#[test]
fn jsonc_set_and_insert_keep_comments_and_commas() {
    check(
        Lang::Jsonc,
        JSONC,
        |v| {
            v["compilerOptions"]["target"] = json!("es2023");
            v["compilerOptions"]["outDir"] = json!("dist");
            v["compilerOptions"]["lib"].as_array_mut().unwrap().push(json!("dom.iterable"));
            v["exclude"] = json!(["node_modules"]);
        },
        expect![[r#"
            // TypeScript's configuration.
            {
              "compilerOptions": {
                /* Language and Environment */
                "target": "es2023", // the emitted JavaScript
                "lib": ["dom", "es2022", "dom.iterable",],
                // Modules
                "module": "nodenext", // how imports resolve
                "strict": true,
                "outDir": "dist"
              },
              "include": ["src/**/*.ts"], // sources
              "exclude": [
                "node_modules"
              ],
            }
        "#]],
    );
}

#[test]
fn jsonc_remove_takes_the_comment_on_its_line_and_keeps_the_others() {
    check(
        Lang::Jsonc,
        JSONC,
        |v| {
            let options = v["compilerOptions"].as_object_mut().unwrap();
            options.shift_remove("module");
            options.shift_remove("strict");
            v["compilerOptions"]["lib"].as_array_mut().unwrap().remove(1);
        },
        expect![[r#"
            // TypeScript's configuration.
            {
              "compilerOptions": {
                /* Language and Environment */
                "target": "es2022", // the emitted JavaScript
                "lib": ["dom",]
                // Modules
              },
              "include": ["src/**/*.ts"], // sources
            }
        "#]],
    );
    check(
        Lang::Jsonc,
        JSONC,
        |v| {
            v.as_object_mut().unwrap().shift_remove("include");
            v["compilerOptions"].as_object_mut().unwrap().shift_remove("target");
        },
        expect![[r#"
            // TypeScript's configuration.
            {
              "compilerOptions": {
                /* Language and Environment */
                "lib": ["dom", "es2022",],
                // Modules
                "module": "nodenext", // how imports resolve
                "strict": true
              },
            }
        "#]],
    );
}

#[test]
fn jsonc_inline_edits() {
    check(
        Lang::Jsonc,
        "[1, /* two */ 2, 3 /* three */]",
        |v| {
            v.as_array_mut().unwrap().remove(2);
        },
        expect!["[1, /* two */ 2]"],
    );
    check(
        Lang::Jsonc,
        "[1, 2 /* two */]",
        |v| v.as_array_mut().unwrap().push(json!(3)),
        expect!["[1, 2, /* two */ 3]"],
    );
    check(
        Lang::Jsonc,
        "{\"a\": 1, \"b\": 2,} // end",
        |v| {
            v.as_object_mut().unwrap().shift_remove("a");
            v.as_object_mut().unwrap().shift_remove("b");
        },
        expect!["{} // end"],
    );
    check(
        Lang::Jsonc,
        "[\n  1, // one\n  2 // two\n]",
        |v| {
            v.as_array_mut().unwrap().remove(1);
            v.as_array_mut().unwrap().push(json!({"x": [true]}));
            v.as_array_mut().unwrap().push(json!(3));
        },
        expect![[r#"
            [
              1, // one
              {
                "x": [
                  true
                ]
              },
              3
            ]"#]],
    );
}

/// A random change of a value: set, remove or append at random places, driven by `choices`.
fn mutate(value: &mut Value, choices: &[u8]) {
    let Some((&c, rest)) = choices.split_first() else { return };
    let last = rest.is_empty();
    match value {
        Value::Object(map) if !map.is_empty() => {
            let key = map.keys().nth(c as usize % map.len()).unwrap().clone();
            match (last, c % 4) {
                (true, 0) => {
                    map.shift_remove(&key);
                }
                (true, 1) => {
                    map.insert(format!("new{c}"), json!({"k": [c, "s t"]}));
                }
                (true, _) => {
                    map.insert(key, json!(format!("v{c}")));
                }
                _ => mutate(map.get_mut(&key).unwrap(), rest),
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let n = items.len();
            match (last, c % 3) {
                (true, 0) => {
                    items.remove(c as usize % n);
                }
                (true, 1) => items.push(json!(c)),
                _ => mutate(&mut items[c as usize % n], rest),
            }
        }
        other => *other = json!([c]),
    }
}

proptest! {
    #[test]
    fn rewrite_holds_the_new_value(choices in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..5), 1..6)) {
        for (lang, text) in [(Lang::Dust, DUST), (Lang::Json, JSON_ARRAY), (Lang::Json, "{\"a\": [1, {\"b\": 2}], \"c\": \"d\"}"), (Lang::Dust, DUST_ARRAY), (Lang::Jsonc, JSONC), (Lang::Jsonc, JSON_ARRAY), (Lang::Jsonc, "[1, /* a */ {\"b\": 2 /* b */,}, // c\n [3,], /* d */] // e")] {
            let parsed = parse(text, lang);
            let mut new = parsed.value.clone();
            for c in &choices {
                mutate(&mut new, c);
            }
            let out = rewrite(text, &parsed, lang, &new);
            let again = parse(&out, lang);
            prop_assert!(again.is_clean(), "{:?} in\n{}", again.errors, out);
            prop_assert_eq!(again.value, new, "rewritten:\n{}", out);
        }
    }
}

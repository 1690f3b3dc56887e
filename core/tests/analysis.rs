//! Data-driven tests of the store analysis: each fixture in `test-data/analysis/` is a small
//! store written as `//- path` sections; its snapshot lists every diagnostic with the text its
//! range covers, so a reviewer can check ranges at a glance.

use std::path::PathBuf;
use std::sync::Arc;

mod common;

use common::fixture::{analyse, check_fixtures, render};
use stardust_core::analysis::{Analysis, StoreContext};
use stardust_core::config::Config;

#[test]
fn analysis_fixtures() {
    check_fixtures("analysis", |fixture| render(&analyse(fixture)));
}

#[test]
fn not_utf8_is_a_syntax_diagnostic_with_the_offset() {
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/fixture"), config: Config::default() });
    let mut bytes = b"id book/a\ntitle '".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(b"'\n");
    let analysis = Analysis::new(ctx, vec![("a.dust".to_owned(), bytes)]);
    expect_test::expect![[r#"
        a.dust:2:8-2:8 error[syntax] the document is not valid UTF-8 (invalid byte at offset 17); save it as UTF-8
            at: ""
    "#]]
    .assert_eq(&render(&analysis));
}

#[test]
fn changes_make_a_new_snapshot_and_leave_the_old_one_alone() {
    let before = analyse(
        "//- a.dust\nid a/one\ntype a\nfriend @a/two\n//- schemas/a.schema.json\n{\"type\": \"object\"}\n",
    );
    assert_eq!(before.diagnostics_of("a.dust").len(), 1, "the reference dangles");
    let after =
        before.with_changes(vec![("b.dust".to_owned(), Some(b"id a/two\ntype a\n".to_vec()))]);
    assert!(after.diagnostics_of("a.dust").is_empty(), "{:?}", after.diagnostics_of("a.dust"));
    assert_eq!(before.diagnostics_of("a.dust").len(), 1, "snapshots are immutable");
    let deleted = after.with_changes(vec![("b.dust".to_owned(), None)]);
    assert_eq!(deleted.diagnostics_of("a.dust").len(), 1);
    assert!(deleted.document("b.dust").is_none());
}

/// Another document sees an entity only through its type, so a change revalidates the documents
/// referring to an id when that id's type changes, and only then.
#[test]
fn referrers_are_revalidated_when_the_type_of_their_target_changes() {
    let schemas = "//- schemas/a.schema.json\n{\"type\": \"object\", \"properties\": {\"r\": {\"x-stardust-ref\": \"b\"}}}\n//- schemas/b.schema.json\n{\"type\": \"object\"}\n//- schemas/c.schema.json\n{\"type\": \"object\"}\n";
    let store = |target: &str| {
        format!("{schemas}//- d0.dust\nid x/0\ntype a\nr @x/1\n//- d1.dust\n{target}")
    };
    let before = analyse(&store("id x/1\ntype b\n"));
    assert!(before.diagnostics_of("d0.dust").is_empty(), "{:?}", before.diagnostics_of("d0.dust"));

    let retyped_text = "id x/1\ntype c\n";
    let retyped = before.with_changes(vec![("d1.dust".to_owned(), Some(retyped_text.into()))]);
    let codes: Vec<String> =
        retyped.diagnostics_of("d0.dust").iter().map(|d| d.code.to_string()).collect();
    assert_eq!(codes, ["ref-type"]);
    assert_eq!(render(&retyped), render(&analyse(&store(retyped_text))));

    let same_type_text = "id x/1\ntype b\nnote 'edited'\n";
    let same_type = before.with_changes(vec![("d1.dust".to_owned(), Some(same_type_text.into()))]);
    assert!(same_type.diagnostics_of("d0.dust").is_empty());
    assert_eq!(render(&same_type), render(&analyse(&store(same_type_text))));

    let back =
        retyped.with_changes(vec![("d1.dust".to_owned(), Some(b"id x/1\ntype b\n".to_vec()))]);
    assert!(back.diagnostics_of("d0.dust").is_empty(), "{:?}", back.diagnostics_of("d0.dust"));
}

/// A document becomes a schema when another one's `$schema` names it, and holds its entities
/// again when none does; a schema created where a `$ref` points is compiled (SPEC §23).
#[test]
fn documents_become_schemas_and_back() {
    let before = analyse(
        "//- schemas/a.schema.json\n{\"type\": \"object\", \"properties\": {\"x\": {\"$ref\": \"../vendor/x.json\"}}}\n//- vendor/legacy.json\n{\"id\": \"https://example.com/l.json#\", \"type\": \"object\", \"description\": \"@deprecated use y\"}\n//- data/d.json\n{\"id\": \"a/1\", \"type\": \"a\", \"x\": 1}\n//- data/c.json\n{\"n\": 1}\n",
    );
    assert!(!before.is_schema("vendor/legacy.json"));
    assert_eq!(before.entity_count(), 2, "the legacy schema is taken for an entity while unused");
    assert!(!before.diagnostics_of("vendor/legacy.json").is_empty());

    let named = before.with_changes(vec![(
        "data/c.json".to_owned(),
        Some(b"{\"$schema\": \"../vendor/legacy.json\", \"n\": 1}".to_vec()),
    )]);
    assert!(named.is_schema("vendor/legacy.json"));
    assert_eq!(named.entity_count(), 1, "a schema holds no entities");
    assert!(named.entity("https://example.com/l.json#").is_empty());
    assert_eq!(render(&named), render(&analyse_like(&named)), "incremental equals fresh");
    let legacy: Vec<_> = named.diagnostics_of("vendor/legacy.json");
    assert!(legacy.is_empty(), "{legacy:?}");

    let unnamed =
        named.with_changes(vec![("data/c.json".to_owned(), Some(b"{\"n\": 1}".to_vec()))]);
    assert!(!unnamed.is_schema("vendor/legacy.json"));
    assert_eq!(unnamed.entity_count(), 2);
    assert_eq!(render(&unnamed), render(&before));

    // The `$ref` target is missing, then created: the schema compiles and validates `x`.
    assert!(render(&before).contains("vendor/x.json' is not a document of the store"));
    let created = before
        .with_changes(vec![("vendor/x.json".to_owned(), Some(b"{\"type\": \"string\"}".to_vec()))]);
    assert!(created.is_schema("vendor/x.json"));
    let d = created.diagnostics_of("data/d.json");
    assert!(d.iter().any(|d| d.message.contains("expected a string")), "{d:?}");
}

/// A fresh analysis of the same documents and configuration as `analysis`.
fn analyse_like(analysis: &Analysis) -> Analysis {
    let docs = analysis.documents().map(|d| (d.path.clone(), d.text.as_bytes().to_vec())).collect();
    Analysis::new(analysis.context().clone(), docs)
}

mod incremental {
    //! `with_changes` must agree with analysing the final documents from scratch.

    use proptest::prelude::*;

    use super::*;

    const SCHEMAS: &str = "//- schemas/a.schema.json\n{\"type\": \"object\", \"properties\": {\"r\": {\"x-stardust-ref\": \"b\"}, \"n\": {\"type\": \"integer\"}}}\n//- schemas/b.schema.json\n{\"type\": \"object\"}\n";

    fn doc() -> impl Strategy<Value = Option<String>> {
        let id = prop_oneof![Just("x/1"), Just("x/2"), Just("x/3"), Just("bad id")];
        let ty = prop_oneof![Just("a"), Just("b"), Just("c")];
        let target =
            prop_oneof![Just("@x/1"), Just("@x/2"), Just("@x/3"), Just("@x/9"), Just("plain")];
        let n = prop_oneof![Just("1"), Just("'one'")];
        // A document may name another as its schema (which then holds no entities), by path
        // or by the URI another one claims with `$id` (SPEC §23).
        let named = prop_oneof![
            4 => Just(""),
            1 => Just("$schema d0.dust\n"),
            1 => Just("$schema d1.dust\n"),
            1 => Just("$schema 'https://e.com/s'\n"),
            1 => Just("$id 'https://e.com/s'\n"),
        ];
        prop::option::weighted(
            0.8,
            (id, ty, target, n, named).prop_map(|(id, ty, target, n, named)| {
                format!("id '{id}'\ntype {ty}\nr {target}\nn {n}\n{named}")
            }),
        )
    }

    fn store(docs: &[Option<String>]) -> String {
        let mut fixture = SCHEMAS.to_owned();
        for (i, doc) in docs.iter().enumerate() {
            if let Some(text) = doc {
                fixture.push_str(&format!("//- d{i}.dust\n{text}"));
            }
        }
        fixture
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn incremental_equals_fresh(
            start in prop::collection::vec(doc(), 4),
            changes in prop::collection::vec((0usize..4, doc()), 1..4),
        ) {
            let mut current = start.clone();
            let mut analysis = analyse(&store(&start));
            for (i, text) in changes {
                current[i] = text.clone();
                analysis = analysis.with_changes(vec![(format!("d{i}.dust"), text.map(String::into_bytes))]);
                let fresh = analyse(&store(&current));
                prop_assert_eq!(render(&analysis), render(&fresh));
                prop_assert_eq!(analysis.entity_count(), fresh.entity_count());
                for j in 0..4 {
                    let path = format!("d{j}.dust");
                    prop_assert_eq!(analysis.is_schema(&path), fresh.is_schema(&path));
                }
            }
        }
    }
}

mod splice {
    //! Editing one item of an entity array re-parses only that item (`into_with_changes` on a
    //! snapshot that owns the document); the result must equal analysing the new text afresh.

    use proptest::prelude::*;
    use stardust_core::syntax::{Node, NodeKind};

    use super::*;

    const SCHEMAS: &str = "//- schemas/a.schema.json\n{\"type\": \"object\", \"properties\": {\"r\": {\"x-stardust-ref\": \"b\"}, \"n\": {\"type\": \"integer\"}}}\n//- schemas/b.schema.json\n{\"type\": \"object\"}\n";
    const OTHER: &str = "//- other.dust\nid x/8\ntype a\nr @x/2\n";

    /// Values an edit may put in place of a scalar, and fragments it may insert anywhere.
    const VALUES: &[&str] = &[
        "1",
        "\"x\"",
        "\"@x/1\"",
        "\"@x/9\"",
        "\"x/2\"",
        "\"b\"",
        "\"c\"",
        "true",
        "null",
        "{}",
        "[1, \"@x/3\"]",
        "\"é𝄞\"",
        "{\"id\": \"x/5\", \"type\": \"a\"}",
    ];
    const FRAGMENTS: &[&str] = &[
        "",
        " ",
        ",",
        "}",
        "{",
        "\"",
        "1",
        "\"id\": \"x/1\", ",
        "]",
        "\n",
        "\r",
        "\r\n",
        "\u{feff}",
    ];

    fn entity() -> impl Strategy<Value = String> {
        let id = prop_oneof![Just("x/1"), Just("x/2"), Just("x/3"), Just("bad id")];
        let ty = prop_oneof![Just("a"), Just("b"), Just("c")];
        let target = prop_oneof![Just("@x/1"), Just("@x/2"), Just("@x/9"), Just("plain")];
        let n = prop_oneof![Just("1"), Just("\"one\"")];
        (id, ty, target, n).prop_map(|(id, ty, target, n)| {
            format!(
                "{{\"id\": \"{id}\", \"type\": \"{ty}\", \"r\": \"{target}\", \"n\": {n}, \"more\": [\"{target}\", {{\"k\": {n}}}]}}"
            )
        })
    }

    fn scalars(node: &Node, out: &mut Vec<(usize, usize)>) {
        match &node.kind {
            NodeKind::Array(items) => items.iter().for_each(|n| scalars(n, out)),
            NodeKind::Object(members) => members.iter().for_each(|m| scalars(&m.value, out)),
            _ => out.push((node.span.start as usize, node.span.end as usize)),
        }
    }

    /// Apply edit `(kind, at, what, cut)` to `text`: replace a scalar value, or insert a
    /// fragment at a character boundary after cutting up to `cut` characters.
    fn edit(
        analysis: &Analysis,
        text: &str,
        (kind, at, what, cut): (bool, usize, usize, usize),
    ) -> String {
        let doc = analysis.document("list.json").unwrap();
        let mut spans = Vec::new();
        if let Some(root) = &doc.parse.root {
            scalars(root, &mut spans);
        }
        if kind && !spans.is_empty() {
            let (start, end) = spans[at % spans.len()];
            return format!("{}{}{}", &text[..start], VALUES[what % VALUES.len()], &text[end..]);
        }
        let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
        let from = at % bounds.len();
        let to = (from + cut).min(bounds.len() - 1);
        format!(
            "{}{}{}",
            &text[..bounds[from]],
            FRAGMENTS[what % FRAGMENTS.len()],
            &text[bounds[to]..]
        )
    }

    fn assert_same(analysis: &Analysis, fresh: &Analysis) {
        let (a, b) =
            (analysis.document("list.json").unwrap(), fresh.document("list.json").unwrap());
        assert_eq!(a.text, b.text);
        assert_eq!(a.version, b.version);
        assert_eq!(a.line_index, b.line_index);
        assert_eq!(a.parse, b.parse);
        assert_eq!(a.entities, b.entities);
        assert_eq!(a.references, b.references);
        assert_eq!(a.local, b.local);
        assert_eq!(render(analysis), render(fresh));
        for id in ["x/1", "x/2", "x/3", "x/5", "x/8", "x/9", "bad id"] {
            assert_eq!(analysis.entity(id), fresh.entity(id), "locations of {id}");
            assert_eq!(analysis.referrers(id), fresh.referrers(id), "referrers of {id}");
            assert_eq!(analysis.type_of(id), fresh.type_of(id), "type of {id}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn an_edited_item_equals_a_fresh_parse(
            items in prop::collection::vec(entity(), 1..6),
            edits in prop::collection::vec((any::<bool>(), any::<usize>(), any::<usize>(), 0usize..3), 1..8),
        ) {
            let mut text = format!("[\n  {}\n]\n", items.join(",\n  "));
            let store = |text: &str| format!("{SCHEMAS}{OTHER}//- list.json\n{text}");
            let mut analysis = analyse(&store(&text));
            for e in edits {
                text = edit(&analysis, &text, e);
                analysis = analysis.into_with_changes(vec![("list.json".to_owned(), Some(text.clone().into_bytes()))]);
                assert_same(&analysis, &analyse(&store(&text)));
            }
        }
    }
}

/// One fixture per JSON Schema keyword (`test-data/schema/`), and per way a reference or a
/// meta-schema cannot be used: every failure reads in Stardust's words, at its value.
#[test]
fn schema_keyword_fixtures() {
    check_fixtures("schema", |fixture| render(&analyse(fixture)));
}

/// The keyword fixtures cover every keyword jsonschema reports (the `rule` of a `schema`
/// diagnostic), and no message shows the validator's own wording.
#[test]
fn schema_fixtures_cover_every_keyword_in_our_words() {
    const KEYWORDS: &[&str] = &[
        "$ref",
        "additionalItems",
        "additionalProperties",
        "anyOf",
        "const",
        "contains",
        "contentEncoding",
        "contentMediaType",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "falseSchema",
        "format",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "not",
        "oneOf",
        "pattern",
        "propertyNames",
        "required",
        "type",
        "unevaluatedItems",
        "unevaluatedProperties",
        "uniqueItems",
    ];
    const RAW: &[&str] = &[
        "False schema",
        "None of",
        "is not allowed for",
        "is not a multiple of",
        "has more than",
        "has less than",
        "are not allowed",
        "not valid under any of the schemas",
        "valid under more than one",
        "1 items",
        "1 characters",
        "is not a \"",
        "Resource '",
        "Unknown meta-schema",
        "does not match \"",
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/schema");
    let mut rules = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let analysis = analyse(&std::fs::read_to_string(&path).unwrap());
        for (doc, diags) in analysis.all_diagnostics() {
            for d in diags {
                if let Some(rule) = d.data.get("rule").and_then(|r| r.as_str()) {
                    rules.insert(rule.to_owned());
                }
                for raw in RAW {
                    assert!(
                        !d.message.contains(raw),
                        "{doc}: raw wording {raw:?} in {}",
                        d.message
                    );
                }
            }
        }
    }
    let missing: Vec<&&str> = KEYWORDS.iter().filter(|k| !rules.contains(**k)).collect();
    assert!(missing.is_empty(), "no fixture reports {missing:?}");
}

/// A 50 MB JSONC document (SPEC §23's bad input) is read whole, with every comment and
/// trailing comma, and is clean; its parse time is measured by `benches/parse.rs`.
#[test]
fn a_50_mb_jsonc_document_parses_clean() {
    let text = big_jsonc(50 << 20);
    let items = text.matches("\"n\"").count();
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/fixture"), config: Config::default() });
    let analysis = Analysis::new(ctx, vec![("data/big.jsonc".to_owned(), text.into_bytes())]);
    let doc = analysis.document("data/big.jsonc").unwrap();
    assert!(doc.byte_len >= 50 << 20);
    assert_eq!(doc.lang, stardust_core::syntax::Lang::Jsonc);
    let diagnostics = analysis.diagnostics_of("data/big.jsonc");
    assert!(diagnostics.is_empty(), "{:?}", diagnostics.first());
    assert_eq!(doc.parse.value.as_array().map(Vec::len), Some(items));
    assert_eq!(doc.parse.comments.len(), 2 * items + 1);
}

/// A JSONC array of at least `size` bytes: records of text with a comment line before each, a
/// block comment inside each and trailing commas.
fn big_jsonc(size: usize) -> String {
    let mut text = String::from("// a large commented data file\n[\n");
    let mut i = 0;
    while text.len() < size {
        text.push_str(&format!(
            "  // record {i}: http://example.com/{i} /* not a block */\n  {{\"n\": {i}, \"name\": \"record {i} // not a comment\", /* block {i} */ \"body\": \"{}\", \"tags\": [\"a\", \"b\",],}},\n",
            "lorem ipsum dolor sit amet ".repeat(4)
        ));
        i += 1;
    }
    text.push_str("]\n");
    text
}

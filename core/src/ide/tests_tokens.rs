//! Data-driven tests of semantic tokens and range/on-type formatting.
//!
//! `test-data/tokens/*.txt`: a store (`//- path` files); the first file's tokens are shown one
//! a line (position in UTF-16, kind, modifiers, text) in the `.expect` snapshot. Preamble
//! directives: `//# range L:C-L:C` (zero-based, UTF-16) also shows the range request's
//! tokens; `//# multiline` places tokens for a client that draws multi-line tokens.
//!
//! `test-data/format_range/*.txt`: one document whose range is marked `<|` ... `|>`; the
//! snapshot shows the edits, the text after them, and the on-type alignment of that text.
//!
//! Oracles beside the snapshots: every token's text, read back through each encoding's
//! columns, is the span's text; tokens are in order and never overlap; a delta applied to
//! the old encoding is the new one; range edits lie inside the range and keep the value.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use expect_test::expect_file;
use proptest::prelude::*;

use super::*;
use crate::analysis::StoreContext;
use crate::config::Config;
use crate::edit::apply;
use crate::syntax::{self, Lang};
use crate::text::{Encoding, Position};

fn data(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data").join(dir)
}

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    paths
}

fn store(files: Vec<(String, String)>) -> Analysis {
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/store"), config: Config::default() });
    Analysis::new(ctx, files.into_iter().map(|(p, b)| (p, b.into_bytes())).collect())
}

/// `L:C-L:C` (zero-based, UTF-16) as a byte span of the document.
fn parse_range(doc: &crate::analysis::Document, s: &str) -> Span {
    let point = |p: &str| {
        let (l, c) = p.split_once(':').expect("L:C");
        let position = Position { line: l.parse().unwrap(), column: c.parse().unwrap() };
        doc.line_index.offset(&doc.text, position, Encoding::Utf16).expect("a position")
    };
    let (a, b) = s.trim().split_once('-').expect("L:C-L:C");
    Span::new(point(a), point(b))
}

fn show_tokens(doc: &crate::analysis::Document, tokens: &[SemanticToken], out: &mut String) {
    for t in tokens {
        let mods: Vec<&str> = (0..MODIFIERS.len())
            .filter(|i| t.modifiers & (1 << i) != 0)
            .map(|i| MODIFIERS[i])
            .collect();
        let text = piece_text(doc, t, Encoding::Utf16);
        out.push_str(&format!(
            "{}:{}+{} {}{} {text:?}\n",
            t.line,
            t.start,
            t.length,
            t.kind.name(),
            if mods.is_empty() { String::new() } else { format!(" [{}]", mods.join(" ")) },
        ));
    }
}

/// The text a token covers, read through its columns in `encoding`.
fn piece_text<'a>(
    doc: &'a crate::analysis::Document,
    t: &SemanticToken,
    encoding: Encoding,
) -> &'a str {
    let start = doc
        .line_index
        .offset(&doc.text, Position { line: t.line, column: t.start }, encoding)
        .expect("a token starts at a position of its line");
    let line_end = doc.line_index.line_span(&doc.text, t.line).unwrap().end;
    let mut end = start;
    let mut units = 0;
    for ch in doc.text[start as usize..].chars() {
        if units >= t.length {
            break;
        }
        units += match encoding {
            Encoding::Utf8 => ch.len_utf8() as u32,
            Encoding::Utf16 => ch.len_utf16() as u32,
            Encoding::Utf32 => 1,
        };
        end += ch.len_utf8() as u32;
    }
    assert_eq!(units, t.length, "a token ends on a character boundary");
    let _ = line_end;
    &doc.text[start as usize..end as usize]
}

/// Tokens in order, not overlapping, each inside one line, and the same pieces of text in
/// every encoding.
fn check_tokens(analysis: &Analysis, path: &str) {
    let doc = analysis.document(path).unwrap();
    let spans = token_spans(analysis, path, None);
    for pair in spans.windows(2) {
        assert!(pair[0].span.end <= pair[1].span.start, "{pair:?} overlap or are out of order");
    }
    let utf16 = semantic_tokens(analysis, path, None, Encoding::Utf16, false);
    for encoding in [Encoding::Utf8, Encoding::Utf32] {
        let other = semantic_tokens(analysis, path, None, encoding, false);
        assert_eq!(other.len(), utf16.len());
        for (a, b) in utf16.iter().zip(&other) {
            assert_eq!(piece_text(doc, a, Encoding::Utf16), piece_text(doc, b, encoding));
        }
    }
    for t in &utf16 {
        let line = doc.line_index.line_span(&doc.text, t.line).unwrap();
        let text = piece_text(doc, t, Encoding::Utf16);
        assert!(!text.contains(['\n', '\r']), "{t:?} crosses a line");
        assert!(text.len() as u32 <= line.len());
    }
}

#[test]
fn token_fixtures() {
    let paths = fixtures("tokens");
    assert!(paths.len() >= 4, "the fixtures are in {}", data("tokens").display());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed = crate::fixture::parse(&text);
        let first = parsed.files[0].0.clone();
        let analysis = store(parsed.files.clone());
        let doc = analysis.document(&first).unwrap();
        let multiline = parsed.preamble.lines().any(|l| l.trim() == "//# multiline");
        let mut out = format!("tokens of {first}:\n");
        let tokens = semantic_tokens(&analysis, &first, None, Encoding::Utf16, multiline);
        show_tokens(doc, &tokens, &mut out);
        for range in parsed.preamble.lines().filter_map(|l| l.strip_prefix("//# range ")) {
            let span = parse_range(doc, range);
            out.push_str(&format!("range {}:\n", range.trim()));
            let tokens = semantic_tokens(&analysis, &first, Some(span), Encoding::Utf16, false);
            show_tokens(doc, &tokens, &mut out);
        }
        check_tokens(&analysis, &first);
        expect_file![path.with_extension("expect")].assert_eq(&out);
    }
}

#[test]
fn a_multi_line_token_is_cut_per_line_unless_the_client_draws_it() {
    let analysis = store(vec![("a.json".into(), "{\"a\": /* one\ntwo é */ 1}".into())]);
    let cut = semantic_tokens(&analysis, "a.json", None, Encoding::Utf16, false);
    let whole = semantic_tokens(&analysis, "a.json", None, Encoding::Utf16, true);
    let comments = |ts: &[SemanticToken]| {
        ts.iter()
            .filter(|t| t.kind == TokenKind::Comment)
            .map(|t| (t.line, t.start, t.length))
            .collect::<Vec<_>>()
    };
    assert_eq!(comments(&cut), [(0, 6, 6), (1, 0, 8)]);
    // One token from `/*` to `*/`: its length counts the line break as one unit.
    assert_eq!(comments(&whole), [(0, 6, 15)]);
}

#[test]
fn encoding_is_relative_and_a_delta_rebuilds_the_new_result() {
    let old_text = "id    book/dune\ntype  book\nyear  1965\nauthor @person/x\n";
    let new_text = "id    book/dune\ntype  book\nyear  1966 ; edited\nauthor @person/x\n";
    let old = store(vec![("b.dust".into(), old_text.into())]);
    let new = store(vec![("b.dust".into(), new_text.into())]);
    let a = encode(&semantic_tokens(&old, "b.dust", None, Encoding::Utf16, false));
    let b = encode(&semantic_tokens(&new, "b.dust", None, Encoding::Utf16, false));
    // `id` at 0:0, then `book/dune` (a declaration) 6 columns on.
    assert_eq!(&a[..10], &[0, 0, 2, 0, 0, 0, 6, 9, TokenKind::Reference.index(), DECLARATION]);
    let edits = delta(&a, &b);
    assert_eq!(edits.len(), 1);
    assert!(edits[0].data.len() <= 15, "only the changed tokens are sent: {edits:?}");
    assert_eq!(apply_delta(&a, &edits), b);
    assert!(delta(&b, &b).is_empty());
}

/// A DUST document of entities built from generated pieces, possibly with unicode.
fn dust_doc() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        "[a-z]{1,6}",
        Just("é".to_owned()),
        Just("𝄞x".to_owned()),
        Just("'q ü'".to_owned()),
        Just("@a/1".to_owned()),
        Just("@nope/2".to_owned()),
        Just("12".to_owned()),
        Just("true".to_owned()),
        Just("[x 1 {k v}]".to_owned()),
        Just("; c é".to_owned()),
    ];
    proptest::collection::vec((("[a-z]{1,4}"), word), 0..8).prop_map(|members| {
        let mut out = "id a/1\ntype t\n".to_owned();
        for (k, v) in members {
            out.push_str(&format!("{k} {v}\n"));
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn tokens_hold_their_invariants(text in dust_doc(), edit in any::<prop::sample::Index>()) {
        let analysis = store(vec![("a.dust".into(), text.clone()), ("j.json".into(), "{}".into())]);
        check_tokens(&analysis, "a.dust");
        // A delta from this document to an edited one rebuilds the edited one.
        let mut edited = text.clone();
        let at = edited.floor_char_boundary(edit.index(edited.len() + 1));
        edited.insert_str(at, "x 1\n");
        let after = store(vec![("a.dust".into(), edited)]);
        let a = encode(&semantic_tokens(&analysis, "a.dust", None, Encoding::Utf16, false));
        let b = encode(&semantic_tokens(&after, "a.dust", None, Encoding::Utf16, false));
        prop_assert_eq!(apply_delta(&a, &delta(&a, &b)), b);
    }

    #[test]
    fn range_edits_stay_inside_and_keep_the_value(
        text in dust_doc(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
    ) {
        let text = text.replace(";", "k ;");
        let (mut x, mut y) = (a.index(text.len() + 1), b.index(text.len() + 1));
        if x > y { std::mem::swap(&mut x, &mut y); }
        let range = Span::new(text.floor_char_boundary(x) as u32, text.floor_char_boundary(y) as u32);
        let Ok(edits) = format_range(&text, Lang::Dust, range) else { return Ok(()) };
        for e in &edits {
            prop_assert!(range.start <= e.span.start && e.span.end <= range.end, "{e:?} outside {range:?}");
        }
        let after = syntax::parse(&apply(&text, &edits), Lang::Dust);
        prop_assert!(after.is_clean());
        prop_assert_eq!(after.value, syntax::parse(&text, Lang::Dust).value);
        // The whole document as the range is the whole-document formatter.
        let whole = Span::new(0, text.len() as u32);
        let all = format_range(&text, Lang::Dust, whole).unwrap();
        prop_assert_eq!(apply(&text, &all), crate::format::format(&text, Lang::Dust).unwrap());
    }
}

#[test]
fn format_range_fixtures() {
    let paths = fixtures("format_range");
    assert!(paths.len() >= 4, "the fixtures are in {}", data("format_range").display());
    for path in paths {
        let raw = std::fs::read_to_string(&path).unwrap();
        let (file, content) = crate::fixture::files(&raw).remove(0);
        let lang = Lang::from_path(&file).unwrap();
        let start = content.find("<|").expect("a range starting with <|");
        let content = content.replacen("<|", "", 1);
        let end = content.find("|>").expect("a range ending with |>");
        let text = content.replacen("|>", "", 1);
        let range = Span::new(start as u32, end as u32);
        let mut out = String::new();
        match format_range(&text, lang, range) {
            Err(err) => out.push_str(&format!("refused: {err}\n")),
            Ok(edits) => {
                out.push_str(&format!("{} edits:\n", edits.len()));
                for e in &edits {
                    assert!(range.start <= e.span.start && e.span.end <= range.end);
                    out.push_str(&format!(
                        "  {:?} {:?} -> {:?}\n",
                        e.span,
                        &text[e.span.range()],
                        e.text
                    ));
                }
                let after = apply(&text, &edits);
                out.push_str(&format!("after:\n{after}"));
                let aligned = align_values(&after, lang, &syntax::parse(&after, lang));
                out.push_str(&format!(
                    "on type, {} edits:\n{}",
                    aligned.len(),
                    apply(&after, &aligned)
                ));
            }
        }
        expect_file![path.with_extension("expect")].assert_eq(&out);
    }
}

#[test]
fn on_type_aligns_a_half_typed_document_without_touching_the_rest() {
    let text = "id  a/1\ntype t\nlongkey 'x'\nbroken [1 2\n";
    let parse = syntax::parse(text, Lang::Dust);
    assert!(!parse.is_clean());
    let after = apply(text, &align_values(text, Lang::Dust, &parse));
    assert_eq!(after, "id       a/1\ntype     t\nlongkey  'x'\nbroken   [1 2\n");
    // JSON and explicit top-level containers have no value column to align.
    assert!(
        align_values("{\"a\":  1}", Lang::Json, &syntax::parse("{\"a\":  1}", Lang::Json))
            .is_empty()
    );
    assert!(align_values("[1  2]", Lang::Dust, &syntax::parse("[1  2]", Lang::Dust)).is_empty());
}

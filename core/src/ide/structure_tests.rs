//! Data-driven tests of the structure features: each `test-data/structure/*.txt` fixture holds
//! several documents (`//- path` headers) and one `$0` cursor; its `.expect` snapshot shows the
//! cursor document's folding ranges (both modes), the selection chain and the highlights at the
//! cursor, its links, inlay hints and code lenses (resolved).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use expect_test::expect_file;

use super::*;
use crate::analysis::StoreContext;
use crate::config::Config;
use crate::text::{Encoding, LineIndex};

const CURSOR: &str = "$0";

struct Fixture {
    analysis: Analysis,
    path: String,
    offset: u32,
}

fn fixture(text: &str) -> Fixture {
    let mut cursor = None;
    let mut docs = Vec::new();
    for (path, content) in crate::fixture::files(text) {
        if let Some(at) = content.find(CURSOR) {
            assert!(cursor.is_none(), "one cursor per fixture");
            cursor = Some((path.clone(), at));
        }
        docs.push((path, content.replacen(CURSOR, "", 1).into_bytes()));
    }
    let (path, offset) = cursor.expect("a $0 cursor");
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/store"), config: Config::default() });
    Fixture { analysis: Analysis::new(ctx, docs), path, offset: offset as u32 }
}

/// `path line:col-line:col "text"`, 1-based, columns in characters.
fn show(analysis: &Analysis, path: &str, span: Span) -> String {
    let doc = analysis.document(path).expect("the document exists");
    let index = LineIndex::new(&doc.text);
    let a = index.position(&doc.text, span.start, Encoding::Utf32);
    let b = index.position(&doc.text, span.end, Encoding::Utf32);
    let text = &doc.text[span.range()];
    let text = match text.char_indices().nth(30) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    };
    format!("{path} {}:{}-{}:{} {text:?}", a.line + 1, a.column + 1, b.line + 1, b.column + 1)
}

fn run(fx: &Fixture) -> String {
    let a = &fx.analysis;
    let path = &fx.path;
    let doc = a.document(path).unwrap();
    let mut out = String::new();
    for line_only in [false, true] {
        out.push_str(&format!("folding ranges (line only: {line_only}):\n"));
        for f in folding_ranges(doc, line_only) {
            out.push_str(&format!(
                "  {:?} lines {}-{} hiding {}\n",
                f.kind,
                f.start_line + 1,
                f.end_line + 1,
                show(a, path, Span::new(f.start, f.end))
            ));
        }
    }
    out.push_str("selection at the cursor:\n");
    for span in &selection_ranges(doc, &[fx.offset])[0] {
        out.push_str(&format!("  {}\n", show(a, path, *span)));
    }
    out.push_str("highlights at the cursor:\n");
    for (span, kind) in highlights(doc, fx.offset) {
        out.push_str(&format!("  {kind:?} {}\n", show(a, path, span)));
    }
    out.push_str("links:\n");
    for link in document_links(a, path) {
        let to = match &link.target {
            LinkTarget::Store(f) => show(a, &f.path, f.span),
            LinkTarget::Url(url) => url.clone(),
        };
        out.push_str(&format!("  {} -> {to} ({})\n", show(a, path, link.span), link.tooltip));
    }
    out.push_str("inlay hints:\n");
    let whole = Span::new(0, doc.text.len() as u32);
    for hint in inlay_hints(a, path, whole) {
        out.push_str(&format!(
            "  after {} {:?} (@{})\n",
            show(a, path, Span::empty(hint.offset)),
            hint.label,
            hint.id
        ));
        if let Some((tooltip, at)) = inlay_hint_details(a, &hint.id) {
            out.push_str(&format!("    at {}\n", show(a, &at.path, at.span)));
            for line in tooltip.lines() {
                out.push_str(&format!("    | {line}\n"));
            }
        }
    }
    out.push_str("code lenses:\n");
    for lens in code_lenses(a, path) {
        match &lens.kind {
            LensKind::References { id } => {
                let resolved = references_lens(a, id);
                out.push_str(&format!("  on {}: {:?}\n", show(a, path, lens.span), resolved.title));
                for r in resolved.references {
                    out.push_str(&format!("    {}\n", show(a, &r.path, r.span)));
                }
            }
            LensKind::RunQuery => {
                let (title, command, arguments) = run_query_command(doc);
                let shown = arguments.to_string();
                out.push_str(&format!(
                    "  on {}: {title:?} {command} {}\n",
                    show(a, path, lens.span),
                    shown.chars().take(60).collect::<String>()
                ));
            }
        }
    }
    out
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/structure")
}

fn fixture_paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    paths
}

/// Every fixture's answers match its snapshot (`UPDATE_EXPECT=1` rewrites them).
#[test]
fn structure_fixtures() {
    let paths = fixture_paths();
    assert!(paths.len() >= 4, "the fixtures are in {}", data_dir().display());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let actual = run(&fixture(&text));
        expect_file![path.with_extension("expect")].assert_eq(&actual);
    }
}

/// At every offset of every fixture: the selection chain grows strictly outward and ends at
/// the whole document, highlights and folds stay inside the text, and nothing panics.
#[test]
fn structure_at_every_offset_is_sound() {
    for path in fixture_paths() {
        let fx = fixture(&std::fs::read_to_string(&path).unwrap());
        let doc = fx.analysis.document(&fx.path).unwrap();
        let len = doc.text.len() as u32;
        for line_only in [false, true] {
            for f in folding_ranges(doc, line_only) {
                assert!(f.start_line < f.end_line && f.start <= f.end && f.end <= len, "{f:?}");
            }
        }
        let offsets: Vec<u32> = (0..=len + 1).collect();
        for (offset, chain) in offsets.iter().zip(selection_ranges(doc, &offsets)) {
            assert_eq!(chain.last(), Some(&Span::new(0, len)), "at {offset} in {path:?}");
            for pair in chain.windows(2) {
                let (inner, outer) = (pair[0], pair[1]);
                assert!(inner != outer && outer.start <= inner.start && inner.end <= outer.end);
            }
            assert!(highlights(doc, *offset).iter().all(|(s, _)| s.end <= len));
        }
    }
}

/// A document that is not a query, or is one with a mistake, gets no run lens.
#[test]
fn only_a_query_that_reads_is_a_query_document() {
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/store"), config: Config::default() });
    let docs = [
        ("q.dust", "find [?b]\nwhere [[?b type book]]\n", true),
        ("q.json", r#"{"find": ["?b"], "where": [["?b", "type", "book"]]}"#, true),
        ("bad.dust", "find [?b]\nwhere [[?b type]]\n", false),
        ("no-find.dust", "where [[?b type book]]\n", false),
        ("entity.dust", "id book/x\ntype book\nfind [?b]\nwhere [[?b type book]]\n", false),
    ];
    let analysis = Analysis::new(
        ctx,
        docs.iter().map(|(p, t, _)| (p.to_string(), t.as_bytes().to_vec())).collect(),
    );
    for (path, _, expected) in docs {
        let doc = analysis.document(path).unwrap();
        assert_eq!(is_query_document(doc), expected, "{path}");
        let runs = code_lenses(&analysis, path).iter().any(|l| l.kind == LensKind::RunQuery);
        assert_eq!(runs, expected, "{path}");
    }
}

//! Small stores written as one text: `//- path` sections, and a renderer of every diagnostic.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use stardust_core::analysis::{Analysis, StoreContext};
use stardust_core::config::Config;
use stardust_core::text::Encoding;

/// Split a fixture into (path, content) files.
pub use stardust_core::fixture::files;

pub fn analyse(fixture: &str) -> Analysis {
    let files = files(fixture);
    let config = files
        .iter()
        .find(|(p, _)| p == "stardust.toml")
        .map(|(_, t)| {
            Config::parse(t, Path::new("stardust.toml")).expect("fixture config is valid")
        })
        .unwrap_or_default();
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/fixture"), config });
    // As the scan does: ignored files are not documents.
    let docs = files
        .into_iter()
        .filter(|(p, _)| p != "stardust.toml" && !ctx.config.is_ignored(p, false))
        .map(|(p, t)| (p, t.into_bytes()))
        .collect();
    Analysis::new(ctx, docs)
}

/// Every diagnostic of the store, one block each.
pub fn render(analysis: &Analysis) -> String {
    let mut out = String::new();
    for (path, diags) in analysis.all_diagnostics() {
        let doc = analysis.document(&path).unwrap();
        for d in diags {
            let start = doc.line_index.position(&doc.text, d.span.start, Encoding::Utf32);
            let end = doc.line_index.position(&doc.text, d.span.end, Encoding::Utf32);
            writeln!(
                out,
                "{path}:{}:{}-{}:{} {}[{}] {}",
                start.line + 1,
                start.column + 1,
                end.line + 1,
                end.column + 1,
                d.severity.as_str(),
                d.code,
                d.message
            )
            .unwrap();
            writeln!(out, "    at: {:?}", &doc.text[d.span.range()]).unwrap();
            for r in &d.related {
                let other = analysis.document(&r.path).unwrap();
                writeln!(
                    out,
                    "    related: {} {:?} {}",
                    r.path,
                    &other.text[r.span.range()],
                    r.message
                )
                .unwrap();
            }
            if !d.data.is_null() {
                writeln!(out, "    data: {}", d.data).unwrap();
            }
        }
    }
    if out.is_empty() {
        out.push_str("no diagnostics\n");
    }
    out
}

/// Check every `*.txt` fixture of `test-data/<dir>` against its `.snap` snapshot, rendering
/// each with `render` (`UPDATE_EXPECT=1` rewrites the snapshots).
pub fn check_fixtures(dir: &str, render: impl Fn(&str) -> String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data").join(dir);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "no fixtures in {}", dir.display());
    for path in entries {
        let fixture = std::fs::read_to_string(&path).unwrap();
        expect_test::expect_file![path.with_extension("snap")].assert_eq(&render(&fixture));
    }
}

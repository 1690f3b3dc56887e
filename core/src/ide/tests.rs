//! Data-driven tests of the editor features: each `test-data/ide/*.txt` fixture holds several
//! documents (`//- path` headers), one `$0` cursor, and optional `//# symbols QUERY` lines; its
//! `.expect` snapshot shows every feature's answer at the cursor.

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
    /// The document holding the cursor, and the cursor's offset.
    path: String,
    offset: u32,
    queries: Vec<String>,
    /// Whether the snapshot shows completion (`//# complete`).
    complete: bool,
}

fn fixture(text: &str) -> Fixture {
    let parsed = crate::fixture::parse(text);
    let mut queries = Vec::new();
    let mut complete = false;
    let mut cursor = None;
    let mut docs = Vec::new();
    // Directives may stand in the preamble or among a file's lines; neither is content.
    let mut directive = |line: &str| {
        if let Some(query) = line.strip_prefix("//# symbols") {
            queries.push(query.trim().to_owned());
        } else if line.trim_end() == "//# complete" {
            complete = true;
        } else {
            return false;
        }
        true
    };
    parsed.preamble.split_inclusive('\n').for_each(|line| {
        directive(line);
    });
    for (path, content) in parsed.files {
        let mut body = String::new();
        for line in content.split_inclusive('\n') {
            if directive(line) {
                continue;
            }
            if let Some(at) = line.find(CURSOR) {
                assert!(cursor.is_none(), "one cursor per fixture");
                cursor = Some((path.clone(), body.len() + at));
                body.push_str(&line.replacen(CURSOR, "", 1));
            } else {
                body.push_str(line);
            }
        }
        docs.push((path, body));
    }
    let (path, offset) = cursor.expect("a $0 cursor");
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/store"), config: Config::default() });
    let analysis = Analysis::new(ctx, docs.into_iter().map(|(p, b)| (p, b.into_bytes())).collect());
    Fixture { analysis, path, offset: offset as u32, queries, complete }
}

fn show(analysis: &Analysis, file: &FileSpan) -> String {
    let doc = analysis.document(&file.path).expect("the document exists");
    let index = LineIndex::new(&doc.text);
    let a = index.position(&doc.text, file.span.start, Encoding::Utf32);
    let b = index.position(&doc.text, file.span.end, Encoding::Utf32);
    let text = &doc.text[file.span.range()];
    let text = if text.len() > 30 {
        format!("{}…", &text[..text.floor_char_boundary(30)])
    } else {
        text.to_owned()
    };
    format!(
        "{} {}:{}-{}:{} {text:?}",
        file.path,
        a.line + 1,
        a.column + 1,
        b.line + 1,
        b.column + 1
    )
}

fn show_symbols(
    analysis: &Analysis,
    path: &str,
    symbols: &[Symbol],
    depth: usize,
    out: &mut String,
) {
    for s in symbols {
        let at = show(analysis, &FileSpan { path: path.to_owned(), span: s.selection });
        let at = at.split_once(' ').map_or("", |(_, rest)| rest).to_owned();
        out.push_str(&format!(
            "{}{:?} {} [{}] at {at}\n",
            "  ".repeat(depth),
            s.kind,
            s.name,
            s.detail.as_deref().unwrap_or("")
        ));
        show_symbols(analysis, path, &s.children, depth + 1, out);
    }
}

fn run(fx: &Fixture) -> String {
    let a = &fx.analysis;
    let mut out = String::new();
    if fx.complete {
        out.push_str("completion:\n");
        for c in completion(a, &fx.path, fx.offset) {
            let replace = show(a, &FileSpan { path: fx.path.clone(), span: c.replace });
            let replace = replace.split_once(' ').map_or("", |(_, rest)| rest).to_owned();
            out.push_str(&format!(
                "  {:?} {} [{}] insert {:?}{} replacing {replace}\n",
                c.kind,
                c.label,
                c.detail.as_deref().unwrap_or(""),
                c.insert,
                if c.snippet { " (snippet)" } else { "" },
            ));
            if let Some(doc) = &c.documentation {
                out.push_str(&format!("    | {doc}\n"));
            }
        }
        return out;
    }
    out.push_str("hover:\n");
    match hover(a, &fx.path, fx.offset) {
        Some(h) => {
            out.push_str(&format!(
                "  on {}\n",
                show(a, &FileSpan { path: fx.path.clone(), span: h.span })
            ));
            for line in h.markdown.lines() {
                out.push_str(&format!("  | {line}\n"));
            }
        }
        None => out.push_str("  (none)\n"),
    }
    out.push_str("definition:\n");
    for d in definition(a, &fx.path, fx.offset) {
        out.push_str(&format!("  {}\n", show(a, &d)));
    }
    out.push_str("references (with the declaration):\n");
    for r in references(a, &fx.path, fx.offset, true) {
        out.push_str(&format!("  {}\n", show(a, &r)));
    }
    out.push_str(&format!("symbols of {}:\n", fx.path));
    let doc = a.document(&fx.path).unwrap();
    show_symbols(a, &fx.path, &document_symbols(doc), 1, &mut out);
    for query in &fx.queries {
        out.push_str(&format!("workspace symbols {query:?}:\n"));
        for s in workspace_symbols(a, query, 10) {
            out.push_str(&format!(
                "  {} [{}] {:?} at {}\n",
                s.id,
                s.ty,
                s.title.as_deref().unwrap_or(""),
                show(a, &s.location)
            ));
        }
    }
    out
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/ide")
}

/// Every fixture's answers match its snapshot (`UPDATE_EXPECT=1` rewrites them).
#[test]
fn fixtures() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 5, "the fixtures are in {}", data_dir().display());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let actual = run(&fixture(&text));
        expect_file![path.with_extension("expect")].assert_eq(&actual);
    }
}

/// No offset of any fixture makes a feature panic, and every span returned is inside its document.
#[test]
fn every_offset_is_safe() {
    for entry in std::fs::read_dir(data_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let fx = fixture(&std::fs::read_to_string(&path).unwrap());
        let len = fx.analysis.document(&fx.path).unwrap().text.len() as u32;
        for offset in 0..=len + 1 {
            let inside = |f: &FileSpan| {
                let doc = fx.analysis.document(&f.path).unwrap();
                f.span.start <= f.span.end && f.span.end as usize <= doc.text.len()
            };
            if let Some(h) = hover(&fx.analysis, &fx.path, offset) {
                assert!(h.span.end <= len);
            }
            assert!(definition(&fx.analysis, &fx.path, offset).iter().all(inside));
            assert!(references(&fx.analysis, &fx.path, offset, true).iter().all(inside));
            assert!(
                completion(&fx.analysis, &fx.path, offset).iter().all(|c| c.replace.end <= len)
            );
        }
    }
}

#[test]
fn fuzzy_scores_prefer_contiguous_matches() {
    let q: Vec<char> = "dm".chars().collect();
    assert_eq!(fuzzy_score_of(&q, "dune-messiah"), Some(4));
    assert_eq!(fuzzy_score_of(&q, "dawn-of-man"), Some(7));
    assert_eq!(fuzzy_score_of(&q, "messiah"), None);
    assert_eq!(fuzzy_score_of(&['D'.to_ascii_lowercase()], "Dune"), Some(0));
}

fn fuzzy_score_of(q: &[char], text: &str) -> Option<u32> {
    symbols::fuzzy_score(q, text)
}

fn actions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/actions")
}

/// The code actions at the cursor, each with the document it leaves and that document's
/// remaining diagnostics; with `//# rename NEW`, the rename of the id at the cursor.
fn run_actions(fx: &Fixture, rename_to: Option<&str>) -> String {
    let a = &fx.analysis;
    let mut out = String::new();
    // `replaces` is the document the text takes the place of (a conversion's old path).
    let show_result = |out: &mut String, path: &str, text: &str, replaces: Option<&str>| {
        for line in text.lines() {
            out.push_str(&format!("  | {line}\n"));
        }
        let mut changes = vec![(path.to_owned(), Some(text.as_bytes().to_vec()))];
        changes.extend(replaces.map(|old| (old.to_owned(), None)));
        let after = a.with_changes(changes);
        for d in after.diagnostics_of(path) {
            out.push_str(&format!("  ! {} {}\n", d.code.as_str(), d.message));
        }
    };
    if let Some(to) = rename_to {
        let (id, span) = rename_target(a, &fx.path, fx.offset).expect("an id at the cursor");
        out.push_str(&format!(
            "rename {id} (at {}) to {to}:\n",
            show(a, &FileSpan { path: fx.path.clone(), span })
        ));
        let planned = rename(a, &id, to).expect("the rename plans");
        let texts: Vec<(String, String)> = planned
            .iter()
            .map(|(path, edits)| {
                (path.clone(), crate::edit::apply(&a.document(path).unwrap().text, edits))
            })
            .collect();
        let after = a.with_changes(
            texts.iter().map(|(p, t)| (p.clone(), Some(t.as_bytes().to_vec()))).collect(),
        );
        for ((path, edits), (_, text)) in planned.iter().zip(&texts) {
            out.push_str(&format!("{path}: {} edits\n", edits.len()));
            for line in text.lines() {
                out.push_str(&format!("  | {line}\n"));
            }
            for d in after.diagnostics_of(path) {
                out.push_str(&format!("  ! {} {}\n", d.code.as_str(), d.message));
            }
        }
        return out;
    }
    let doc = a.document(&fx.path).unwrap();
    out.push_str(&format!("diagnostics of {}:\n", fx.path));
    for d in a.diagnostics_of(&fx.path) {
        out.push_str(&format!(
            "  {} {} {}\n",
            d.code.as_str(),
            show(a, &FileSpan { path: fx.path.clone(), span: d.span }),
            d.data
        ));
    }
    for action in code_actions(a, &fx.path, Span::empty(fx.offset)) {
        out.push_str(&format!(
            "{:?} {:?}{}\n",
            action.kind,
            action.title,
            if action.preferred { " (preferred)" } else { "" }
        ));
        match action.kind {
            ActionKind::QuickFix => {
                let text = crate::edit::apply(&doc.text, &action.edits);
                show_result(&mut out, &fx.path, &text, None)
            }
            ActionKind::Convert => {
                let (new_path, conversion) = convert(a, &fx.path).expect("the document converts");
                out.push_str(&format!(
                    "  -> {new_path} ({} comments dropped)\n",
                    conversion.lost_comments
                ));
                show_result(&mut out, &new_path, &conversion.text, Some(&fx.path));
            }
        }
    }
    out
}

/// Every code action and rename fixture matches its snapshot (`UPDATE_EXPECT=1` rewrites them).
#[test]
fn action_fixtures() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(actions_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 8, "the fixtures are in {}", actions_dir().display());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let rename_to = text.lines().find_map(|l| l.strip_prefix("//# rename ")).map(str::trim);
        let actual = run_actions(&fixture(&text), rename_to);
        expect_file![path.with_extension("expect")].assert_eq(&actual);
    }
}

/// No offset of any fixture makes the actions panic, and every edit is inside its document.
#[test]
fn actions_at_every_offset_are_safe() {
    for entry in std::fs::read_dir(actions_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let fx = fixture(&std::fs::read_to_string(&path).unwrap());
        let len = fx.analysis.document(&fx.path).unwrap().text.len() as u32;
        for offset in 0..=len + 1 {
            for action in code_actions(&fx.analysis, &fx.path, Span::empty(offset)) {
                assert!(
                    action.edits.iter().all(|e| e.span.start <= e.span.end && e.span.end <= len)
                );
            }
            let _ = rename_target(&fx.analysis, &fx.path, offset);
        }
    }
}

#[test]
fn a_rename_to_a_bad_or_taken_id_is_refused() {
    let fx =
        fixture(&std::fs::read_to_string(actions_dir().join("rename_from_reference.txt")).unwrap());
    let err = rename(&fx.analysis, "person/frank-herbert", "not an id").unwrap_err();
    assert_eq!(err.code(), "invalid-arguments");
    assert!(err.to_string().contains("'not an id' is not a valid id"), "{err}");
    let err = rename(&fx.analysis, "person/frank-herbert", "person/frank-herbert-jr").unwrap_err();
    assert_eq!(err.code(), "invalid-arguments", "{err}");
    // A leading '@' (typed over a reference) is not part of the id.
    let planned = rename(&fx.analysis, "person/frank-herbert", "@person/fh").unwrap();
    assert_eq!(planned.len(), 3, "{planned:?}");
}

//! The core's layers (docs/ARCHITECTURE.md, "Layers") hold: no module of `core/src` names a
//! module of a higher layer, and the modules of one layer do not name each other in a circle.
//!
//! The layers are read from ARCHITECTURE.md itself, so the page and the code cannot drift
//! apart: a module missing from the page, or a page that lists a module twice, fails too. The
//! scan reads every `crate::` path of every file outside comments (`use` lines, `{}` groups
//! and paths written inline), which is what the compiler resolves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Items of the crate root that are not modules, with the module they come from.
const ROOT_ITEMS: [(&str, &str); 3] = [("Code", "error"), ("Error", "error"), ("Result", "error")];

/// The layer of each module, numbered from 1 at the bottom, from the "Layers" section: lines
/// `N. `module`, `module`: what they hold`.
fn layers(architecture: &str) -> BTreeMap<String, u32> {
    let start =
        architecture.find("\n## Layers\n").expect("ARCHITECTURE.md has a ## Layers section");
    let section = &architecture[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
    let mut out = BTreeMap::new();
    for line in section.lines() {
        let Some((number, rest)) = line.split_once(". ") else { continue };
        let Ok(layer) = number.trim().parse::<u32>() else { continue };
        let names = rest.split_once(':').map_or(rest, |(names, _)| names);
        for name in names.split('`').skip(1).step_by(2) {
            let previous = out.insert(name.to_owned(), layer);
            assert!(previous.is_none(), "ARCHITECTURE.md lists `{name}` in two layers");
        }
    }
    assert!(!out.is_empty(), "the Layers section of ARCHITECTURE.md lists no `N. module` line");
    out
}

/// The top-level module a file of `core/src` belongs to (`None` for lib.rs).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(name) => Some(name.to_owned()),
        None => Some(first.to_owned()),
    }
}

/// One `crate::` path: the line it is on, the text written, and the top-level name it starts
/// with.
struct Import {
    line: usize,
    written: String,
    name: String,
}

/// The text with comments and the contents of string literals blanked out (line numbers
/// kept), so that only code is scanned.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        let rest = &text[i..];
        let blank =
            |s: &str| s.chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect::<String>();
        let skip = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if let Some(len) = raw_string_len(text, i) {
            len
        } else if c == '"' && !(text[..i].ends_with('\'') && rest[1..].starts_with('\'')) {
            let mut escaped = false;
            let close = rest[1..].char_indices().find(|&(_, c)| {
                let end = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                end
            });
            close.map_or(rest.len(), |(at, _)| at + 2)
        } else {
            out.push(c);
            i += c.len_utf8();
            continue;
        };
        out.push_str(&blank(&rest[..skip]));
        i += skip;
    }
    out
}

/// The length of the raw string literal (`r"..."`, `r#"..."#`) starting at `at`, if one does.
fn raw_string_len(text: &str, at: usize) -> Option<usize> {
    let rest = &text[at..];
    let after_r = rest.strip_prefix('r')?;
    if text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_') {
        return None; // `r` ends an identifier, e.g. `for"`.
    }
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close).map_or(body.len(), |e| e + close.len());
    Some(1 + hashes + 1 + end)
}

fn ident_at(text: &str) -> &str {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    &text[..end]
}

/// Every `crate::` path in `text`; a group `crate::{a, b::c}` counts once per member.
fn imports(text: &str) -> Vec<Import> {
    let code = code_only(text);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let at = from + at;
        from = at + "crate::".len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue; // `stardust_core::...` or `$crate::`, not this crate's root.
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // The top-level members of the group: names after `{` or a `,` at depth 0.
            let mut depth = 0;
            let mut expect_name = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => expect_name = true,
                    c if expect_name && (c.is_alphanumeric() || c == '_') => {
                        expect_name = false;
                        let name = ident_at(&group[i..]);
                        let line = line + group[..i].matches('\n').count();
                        out.push(Import {
                            line,
                            written: format!("crate::{{{name}..}}"),
                            name: name.to_owned(),
                        });
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(rest);
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(Import {
                line,
                written: format!("crate::{}", &rest[..end]),
                name: name.to_owned(),
            });
        }
    }
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// What is wrong with the layering of the sources under `src` against `layers`: one line per
/// offending import, and one per circle inside a layer.
fn violations(src: &Path, layers: &BTreeMap<String, u32>) -> Vec<String> {
    let root: BTreeMap<&str, &str> = ROOT_ITEMS.into_iter().collect();
    let mut problems = Vec::new();
    // Edges between different modules of one layer, for the circle check.
    let mut same_layer: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let Some(module) = module_of(src, &file) else { continue };
        let shown = format!("core/src/{}", file.strip_prefix(src).unwrap().display());
        let Some(&layer) = layers.get(&module) else {
            problems.push(format!(
                "{shown}: the module `{module}` has no layer; add it to the Layers section of \
                 docs/ARCHITECTURE.md"
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for import in imports(&text) {
            let target = root.get(import.name.as_str()).copied().unwrap_or(&import.name);
            let Some(&target_layer) = layers.get(target) else {
                problems.push(format!(
                    "{shown}:{}: `{}` names `{target}`, which is neither a module in the Layers \
                     section of docs/ARCHITECTURE.md nor a known item of the crate root",
                    import.line, import.written
                ));
                continue;
            };
            if target_layer > layer {
                problems.push(format!(
                    "{shown}:{}: `{}`: `{module}` (layer {layer}) imports `{target}` (layer \
                     {target_layer}), a higher layer",
                    import.line, import.written
                ));
            } else if target_layer == layer && target != module {
                same_layer.entry(module.clone()).or_default().insert(target.to_owned());
            }
        }
    }
    problems.extend(circles(&same_layer));
    problems
}

/// Each circle among `edges`, as `a -> b -> a`.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit<'a>(
        node: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        out: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node);
            out.push(format!("modules of one layer import each other: {}", circle.join(" -> ")));
            return;
        }
        if !done.insert(node) {
            return;
        }
        path.push(node);
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, path, done, out);
        }
        path.pop();
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

fn architecture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ARCHITECTURE.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn no_core_module_imports_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = violations(&src, &layers(&architecture()));
    assert!(problems.is_empty(), "the core's layers are broken:\n{}", problems.join("\n"));
}

#[test]
fn every_listed_module_exists() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let present: BTreeSet<String> =
        rust_files(&src).iter().filter_map(|f| module_of(&src, f)).collect();
    let missing: Vec<String> =
        layers(&architecture()).into_keys().filter(|m| !present.contains(m)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's Layers list modules that do not exist: {missing:?}"
    );
}

/// The scan itself: a higher import is named with its file and line, groups and inline paths
/// count, comments and other crates' paths do not, and a circle inside a layer is found.
#[test]
fn the_scan_names_file_line_and_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod low;\npub mod high;\n");
    write(
        "low.rs",
        "//! Low.\n// crate::high in a comment\nuse stardust_core::high;\nuse crate::{\n    Error,\n    high::Thing,\n};\nfn f() { crate::peer::g(); let s = \"// crate::high\"; }\n",
    );
    write("high/mod.rs", "use crate::low;\n");
    write("peer.rs", "use crate::low::x;\n");
    write("other.rs", "use crate::nowhere;\n");
    let layers = layers(
        "# A\n\n## Layers\n\n1. `low`, `peer`, `error`: the bottom\n2. `high`: above\n\n## Next\n3. `other`: not in the section\n",
    );
    assert_eq!(layers.len(), 4, "{layers:?}");
    let problems = violations(src, &layers);
    let expected = [
        "core/src/low.rs:6: `crate::{high..}`: `low` (layer 1) imports `high` (layer 2), a higher layer",
        "core/src/other.rs: the module `other` has no layer; add it to the Layers section of docs/ARCHITECTURE.md",
        "modules of one layer import each other: low -> peer -> low",
    ];
    assert_eq!(problems, expected);
}

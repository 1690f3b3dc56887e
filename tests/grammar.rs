//! The DUST TextMate grammar (examples/editors/vscode/syntaxes/dust.tmLanguage.json), run
//! through VS Code's own engine: vscode-textmate on vscode-oniguruma, from npm, pinned in
//! examples/editors/vscode/test/package-lock.json. The fixtures' scopes match their snapshots
//! (`UPDATE=1` rewrites them), the tokens of every DUST file of the repository and of generated
//! texts that parse cleanly agree with the core's parser byte for byte (keys, strings, numbers,
//! literals, references, variables, comments, brackets), and the extension's manifest and
//! activation are valid. Needs `node` and `npm` (scripts/test installs them); runs `npm ci`
//! when the installed packages are missing or older than the lock file.

mod util;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;
use stardust_core::syntax::{Node, NodeKind, SyntaxErrorKind, parse_dust};

/// The folder of the grammar's test scripts.
fn test_dir() -> PathBuf {
    util::repo().join("examples/editors/vscode/test")
}

/// Installs the pinned packages once per run, when they are missing or older than the lock.
fn npm_ci() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = test_dir();
        let modified = |path: &Path| fs::metadata(path).and_then(|m| m.modified()).ok();
        let lock = modified(&dir.join("package-lock.json"));
        let installed = modified(&dir.join("node_modules/.package-lock.json"));
        if installed.is_some() && installed >= lock {
            return;
        }
        let output = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("npm runs: install Node.js and npm (scripts/test does), then run again");
        assert!(output.status.success(), "npm ci failed in {}:\n{}", dir.display(), both(&output));
    });
}

fn both(output: &Output) -> String {
    format!("{}{}", util::text(&output.stdout), util::text(&output.stderr))
}

/// Runs `node SCRIPT ARGS` in the test folder, after installing its packages.
fn node(script: &str, args: &[&Path]) -> Output {
    npm_ci();
    Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(test_dir())
        .output()
        .expect("node runs: install Node.js (scripts/test does), then run again")
}

#[test]
fn fixture_scopes_match_their_snapshots() {
    let output = node("scopes.mjs", &[]);
    let report = both(&output);
    assert!(output.status.success(), "the grammar's scopes differ from the snapshots:\n{report}");
    assert!(report.contains("ok   spec-example.dust"), "the fixtures ran:\n{report}");
}

#[test]
fn extension_manifest_and_activation_are_valid() {
    let output = node("extension.mjs", &[]);
    assert!(output.status.success(), "the extension's check failed:\n{}", both(&output));
}

/// What a byte of a DUST text is, as the parser reads it and as the grammar's scopes say.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Key,
    Quoted,
    Bareword,
    Reference,
    Variable,
    /// `count(?b)`, `min(?y)`, `max(?y)`, `sum(?y)`: an aggregate of a query's `find`.
    Aggregate,
    Number,
    Bool,
    Null,
    Comment,
    Bracket,
    /// An `invalid.illegal` scope: never right in a text that parses cleanly.
    Invalid,
}

/// The class the grammar gives a token, by its scopes (outermost first, root left out).
fn grammar_class(scopes: &[&str]) -> Option<Class> {
    const BY_PREFIX: &[(&str, Class)] = &[
        ("invalid.illegal", Class::Invalid),
        ("comment.line", Class::Comment),
        ("support.type.property-name", Class::Key),
        ("string.quoted", Class::Quoted),
        ("entity.name.type.reference", Class::Reference),
        ("meta.function-call.aggregate", Class::Aggregate),
        ("variable.other", Class::Variable),
        ("string.unquoted", Class::Bareword),
        ("constant.numeric", Class::Number),
        ("constant.language.boolean", Class::Bool),
        ("constant.language.null", Class::Null),
        ("punctuation.definition.dictionary", Class::Bracket),
        ("punctuation.definition.array", Class::Bracket),
    ];
    BY_PREFIX
        .iter()
        .find(|(prefix, _)| scopes.iter().any(|s| s.starts_with(prefix)))
        .map(|&(_, class)| class)
}

/// Paints the classes of `node` and everything in it into `classes`. `braces` tells whether
/// an object has them (the implicit top-level object has none).
fn paint(text: &str, node: &Node, braces: bool, classes: &mut [Option<Class>]) {
    let (start, end) = (node.span.start as usize, node.span.end as usize);
    let fill = |classes: &mut [Option<Class>], from: usize, to: usize, class| {
        classes[from..to].fill(Some(class));
    };
    match &node.kind {
        NodeKind::Null => fill(classes, start, end, Class::Null),
        NodeKind::Bool => fill(classes, start, end, Class::Bool),
        NodeKind::Number => fill(classes, start, end, Class::Number),
        NodeKind::String { quoted: true } => fill(classes, start, end, Class::Quoted),
        NodeKind::String { quoted: false } => {
            let word = &text[start..end];
            let class = if stardust_core::model::reference_target(word).is_some() {
                Class::Reference
            } else if word.len() > 1 && word.starts_with('?') {
                Class::Variable
            } else if is_aggregate(word) {
                Class::Aggregate
            } else {
                Class::Bareword
            };
            fill(classes, start, end, class);
        }
        NodeKind::Array(items) => {
            fill(classes, start, start + 1, Class::Bracket);
            fill(classes, end - 1, end, Class::Bracket);
            for item in items {
                paint(text, item, true, classes);
            }
        }
        NodeKind::Object(members) => {
            if braces {
                fill(classes, start, start + 1, Class::Bracket);
                fill(classes, end - 1, end, Class::Bracket);
            }
            for member in members {
                fill(classes, member.key.start as usize, member.key.end as usize, Class::Key);
                paint(text, &member.value, true, classes);
            }
        }
        NodeKind::Error => {}
    }
}

/// Whether a bareword is an aggregate of a variable, as a query's `find` reads it (SPEC §8).
fn is_aggregate(word: &str) -> bool {
    let Some((function, rest)) = word.split_once('(') else { return false };
    let variable = rest.strip_suffix(')').and_then(|v| v.strip_prefix('?'));
    ["count", "min", "max", "sum"].contains(&function)
        && variable.is_some_and(|v| !v.is_empty() && !v.contains(['(', ')']))
}

/// The classes of every byte of `text` by the parser, or `None` when it has syntax errors
/// (where the grammar can only approximate the parser's recovery).
fn parser_classes(text: &str) -> Option<Vec<Option<Class>>> {
    let parse = parse_dust(text);
    if parse.errors.iter().any(|e| e.kind == SyntaxErrorKind::Syntax) {
        return None;
    }
    let mut classes = vec![None; text.len()];
    paint(text, parse.root.as_ref()?, !parse.implicit_object, &mut classes);
    for comment in &parse.comments {
        classes[comment.start as usize..comment.end as usize].fill(Some(Class::Comment));
    }
    Some(classes)
}

/// Every `.dust` file under `dir`, recursively, skipping installed packages.
fn dust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "node_modules" && n != ".stardust") {
                dust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "dust") {
            out.push(path);
        }
    }
}

/// `text` around byte `at`, on one line, for a message.
fn context(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n);
    let line = text[..at].matches('\n').count() + 1;
    let column = text[line_start..at].chars().count() + 1;
    format!("{line}:{column} in {:?}", &text[line_start..line_end])
}

/// A small deterministic generator of DUST texts that mix every construct the grammar tells
/// apart, with the separators (none, spaces, commas, newlines, comments) between them that
/// the parser allows.
struct Texts(u64);

impl Texts {
    fn below(&mut self, n: usize) -> usize {
        // xorshift64*: enough to vary the texts; fixed seed, so a failure repeats.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// A separator before `next`, after `out`; none only where a quote or bracket parts them.
    fn separate(&mut self, out: &mut String, next: &str) {
        let glued = out.ends_with(['\'', '"', ']', '}', '[', '{'])
            || next.starts_with(['\'', '"', '[', '{']);
        let separators = [
            " ",
            "  ",
            ",",
            ", ",
            "\n",
            " ; a comment with 'quotes', [ { and words\n",
            "\n  ",
            "\t",
        ];
        if !(glued && self.below(3) == 0) {
            out.push_str(self.pick(&separators));
        }
    }

    fn scalar(&mut self) -> &'static str {
        const BAREWORDS: &[&str] = &[
            "0",
            "-0",
            "1965",
            "-2.5e3",
            "1e5",
            "0.5",
            "2E+10",
            "0123",
            "1.",
            "+1",
            ".5",
            "-",
            "1e",
            "1965a",
            "true",
            "false",
            "null",
            "True",
            "nulls",
            "@person/x",
            "@@lit",
            "@",
            "?v",
            "?",
            "a?b",
            "count(?b)",
            "sum(?y)",
            "count(?b",
            "book/dune",
            "a:b",
            "café",
            "x@y",
            "-x",
        ];
        const QUOTED: &[&str] = &[
            "'Dune'",
            "\"x\"",
            "''",
            "'it\\'s'",
            "'a\\nb'",
            "'a b ; c'",
            "\"say 'hi'\"",
            "'\\u00e9'",
            "'[{'",
            "'1965'",
        ];
        if self.below(3) == 0 { self.pick(QUOTED) } else { self.pick(BAREWORDS) }
    }

    fn value(&mut self, out: &mut String, depth: usize) {
        match if depth > 2 { 0 } else { self.below(5) } {
            0..=2 => {
                let scalar = self.scalar();
                self.separate(out, scalar);
                out.push_str(scalar);
            }
            3 => {
                self.separate(out, "[");
                out.push('[');
                for _ in 0..self.below(4) {
                    self.value(out, depth + 1);
                }
                self.separate(out, "]");
                out.push(']');
            }
            _ => {
                self.separate(out, "{");
                out.push('{');
                self.members(out, depth + 1);
                self.separate(out, "}");
                out.push('}');
            }
        }
    }

    fn members(&mut self, out: &mut String, depth: usize) {
        for _ in 0..self.below(5) {
            let key = self.scalar();
            self.separate(out, key);
            out.push_str(key);
            self.value(out, depth);
        }
    }

    fn text(&mut self) -> String {
        let mut out = String::new();
        if self.below(4) == 0 {
            // An explicit root: one array or object (a lone scalar would be a key).
            let (open, close) = if self.below(2) == 0 { ('[', ']') } else { ('{', '}') };
            self.separate(&mut out, "[");
            out.push(open);
            if open == '[' {
                for _ in 0..self.below(4) {
                    self.value(&mut out, 1);
                }
            } else {
                self.members(&mut out, 1);
            }
            self.separate(&mut out, "]");
            out.push(close);
        } else {
            self.members(&mut out, 0);
        }
        out.push('\n');
        out
    }
}

#[test]
fn tokens_agree_with_the_parser_on_every_clean_dust_file() {
    let repo = util::repo();
    let mut files = Vec::new();
    for dir in ["examples", "core/test-data"] {
        dust_files(&repo.join(dir), &mut files);
    }
    files.sort();
    // And generated texts, for the combinations no file has.
    let generated = tempfile::tempdir().unwrap();
    let mut texts = Texts(0x5eed_d057);
    for n in 0..300 {
        let path = generated.path().join(format!("generated-{n}.dust"));
        fs::write(&path, texts.text()).unwrap();
        files.push(path);
    }
    let args: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let output = node("scopes.mjs", &[&[Path::new("--json")], args.as_slice()].concat());
    assert!(output.status.success(), "tokenizing failed:\n{}", both(&output));
    let tokens: Value = serde_json::from_slice(&output.stdout).expect("the tokens are JSON");

    let mut compared = 0;
    let mut problems = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let Some(expected) = parser_classes(&text) else { continue };
        compared += 1;
        let mut actual = vec![None; text.len()];
        for token in tokens[file.to_str().unwrap()].as_array().expect("tokens for every file") {
            let (start, end) = (token[0].as_u64().unwrap(), token[1].as_u64().unwrap());
            let scopes: Vec<&str> =
                token[2].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
            actual[start as usize..end as usize].fill(grammar_class(&scopes));
        }
        // The first disagreement of each file is enough to find the rule at fault.
        if let Some(at) = (0..text.len()).find(|&i| expected[i] != actual[i]) {
            problems.push(format!(
                "{}:{}: the parser reads {:?}, the grammar scopes {:?}",
                file.strip_prefix(&repo).unwrap_or(file).display(),
                context(&text, at),
                expected[at],
                actual[at]
            ));
        }
    }
    // Every generated text is clean; the files of the repository add some 90.
    assert!(compared >= 380, "only {compared} clean DUST texts were compared");
    assert!(problems.is_empty(), "the grammar disagrees with the parser:\n{}", problems.join("\n"));
}

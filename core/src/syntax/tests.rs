//! Parser tests: fixture files with snapshots of their parse, invariant checks on arbitrary
//! inputs, agreement with `serde_json` on valid JSON, and inputs nested beyond any stack.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use expect_test::expect_file;
use proptest::prelude::*;
use serde_json::{Number, Value};

use super::*;
use crate::text::Span;

// ---------------------------------------------------------------------------------------------
// A readable dump of a parse, for the snapshots.

/// The parse as text: the tree (kinds, spans and the text each span covers), the value as
/// compact JSON, then comments and errors.
fn dump(text: &str, parse: &Parse) -> String {
    let mut out = String::new();
    match &parse.root {
        None => out.push_str("root: none\n"),
        Some(root) => {
            out.push_str(if parse.implicit_object {
                "root (implicit object):\n"
            } else {
                "root:\n"
            });
            dump_node(text, root, 1, "", &mut out);
        }
    }
    let value = serde_json::to_string(&parse.value).unwrap();
    writeln!(out, "value: {value}").unwrap();
    for comment in &parse.comments {
        writeln!(out, "comment {comment:?} {}", show(text, *comment)).unwrap();
    }
    for error in &parse.errors {
        let kind = error.kind.code();
        writeln!(out, "{kind} {:?} {}: {}", error.span, show(text, error.span), error.message)
            .unwrap();
    }
    out
}

fn dump_node(text: &str, node: &Node, depth: usize, prefix: &str, out: &mut String) {
    // Deep trees keep a bounded indentation and say their depth instead.
    const MAX_INDENT: usize = 16;
    out.push_str(&"  ".repeat(depth.min(MAX_INDENT)));
    if depth > MAX_INDENT {
        write!(out, "(depth {depth}) ").unwrap();
    }
    let kind = match &node.kind {
        NodeKind::Null => "Null",
        NodeKind::Bool => "Bool",
        NodeKind::Number => "Number",
        NodeKind::String { quoted: true } => "String",
        NodeKind::String { quoted: false } => "Bareword",
        NodeKind::Array(_) => "Array",
        NodeKind::Object(_) => "Object",
        NodeKind::Error => "Error",
    };
    writeln!(out, "{prefix}{kind} {:?} {}", node.span, show(text, node.span)).unwrap();
    match &node.kind {
        NodeKind::Array(items) => {
            for item in items {
                dump_node(text, item, depth + 1, "", out);
            }
        }
        NodeKind::Object(members) => {
            for member in members {
                let duplicate = if member.duplicate { " (duplicate)" } else { "" };
                let prefix = format!("{} {:?}{duplicate} => ", show(text, member.key), member.key);
                dump_node(text, &member.value, depth + 1, &prefix, out);
            }
        }
        _ => {}
    }
}

/// The text a span covers, between backticks, with line breaks, tabs and other invisible
/// characters escaped; long slices are cut in the middle.
fn show(text: &str, span: Span) -> String {
    let slice = text.get(span.range()).unwrap_or("<not a char range>");
    let chars: Vec<char> = slice.chars().collect();
    let visible = |chars: &[char]| {
        let mut s = String::new();
        for &ch in chars {
            match ch {
                '\n' => s.push_str("\\n"),
                '\r' => s.push_str("\\r"),
                '\t' => s.push_str("\\t"),
                c if c.is_control() || c == '\u{feff}' => {
                    write!(s, "\\u{{{:x}}}", c as u32).unwrap()
                }
                c => s.push(c),
            }
        }
        s
    };
    const MAX: usize = 60;
    if chars.len() > MAX {
        format!("`{} … {}`", visible(&chars[..30]), visible(&chars[chars.len() - 20..]))
    } else {
        format!("`{}`", visible(&chars))
    }
}

// ---------------------------------------------------------------------------------------------
// The invariants every parse must satisfy, whatever the input.

/// Panics unless `parse` satisfies the contract of `syntax/mod.rs` for `text`.
fn check_invariants(text: &str, parse: &Parse) {
    let check_span = |span: Span, what: &str| {
        assert!(
            span.start <= span.end
                && text.is_char_boundary(span.start as usize)
                && text.is_char_boundary(span.end as usize),
            "{what} span {span:?} is not a char range of a text of {} bytes",
            text.len()
        );
    };
    for error in &parse.errors {
        check_span(error.span, "error");
        assert!(!error.message.is_empty());
    }
    assert!(
        parse.errors.windows(2).all(|w| w[0].span.start <= w[1].span.start),
        "errors are not in source order: {:?}",
        parse.errors
    );
    for comment in &parse.comments {
        check_span(*comment, "comment");
        let slice = &text[comment.range()];
        let line = slice.starts_with([';']) || slice.starts_with("//");
        assert!(
            (line && !slice.contains(['\n', '\r']))
                || (slice.starts_with("/*") && slice.ends_with("*/") && slice.len() >= 4),
            "comment {slice:?}"
        );
    }
    assert!(parse.comments.windows(2).all(|w| w[0].end <= w[1].start));
    match &parse.root {
        None => assert_eq!(parse.value, Value::Null, "no root but a value"),
        Some(root) => {
            check_span(root.span, "root");
            let mut duplicates = 0;
            check_node(text, root, &parse.value, 1, parse, &mut duplicates, &check_span);
            // Every duplicate member is reported (checked in `check_node`). Reports may also
            // come from a keyless object that was read past and so is not in the tree.
            let reported =
                parse.errors.iter().filter(|e| e.kind == SyntaxErrorKind::DuplicateKey).count();
            assert!(duplicates <= reported, "{duplicates} duplicate members, {reported} reported");
        }
    }
}

fn check_node(
    text: &str,
    node: &Node,
    value: &Value,
    depth: usize,
    parse: &Parse,
    duplicates: &mut usize,
    check_span: &dyn Fn(Span, &str),
) {
    // Containers nest at most MAX_DEPTH levels; a scalar or skipped value may sit inside.
    let container = matches!(node.kind, NodeKind::Array(_) | NodeKind::Object(_));
    assert!(depth <= MAX_DEPTH || (depth == MAX_DEPTH + 1 && !container), "depth {depth}");
    let inside = |child: Span, what: &str| {
        check_span(child, what);
        assert!(
            node.span.start <= child.start && child.end <= node.span.end,
            "{what} {child:?} lies outside its container {:?}",
            node.span
        );
    };
    let slice = &text[node.span.range()];
    match (&node.kind, value) {
        (NodeKind::Null | NodeKind::Error, Value::Null)
        | (NodeKind::Bool, Value::Bool(_))
        | (NodeKind::Number, Value::Number(_)) => {}
        (NodeKind::String { quoted }, Value::String(s)) => {
            // Where the text is a plain JSON string or a bareword, the value is what it spells.
            if !quoted {
                assert_eq!(slice, s);
            } else if let Ok(decoded) = serde_json::from_str::<String>(slice) {
                assert_eq!(&decoded, s);
            }
        }
        (NodeKind::Array(items), Value::Array(values)) => {
            assert_eq!(items.len(), values.len(), "array items vs values at {:?}", node.span);
            for (item, value) in items.iter().zip(values) {
                inside(item.span, "item");
                check_node(text, item, value, depth + 1, parse, duplicates, check_span);
            }
        }
        (NodeKind::Object(members), Value::Object(map)) => {
            let kept: Vec<&Member> = members.iter().filter(|m| !m.duplicate).collect();
            assert_eq!(kept.len(), map.len(), "object members vs entries at {:?}", node.span);
            for member in members {
                inside(member.key, "key");
                inside(member.value.span, "member value");
                assert!(!member.key.is_empty(), "empty key span");
                assert!(member.key.end <= member.value.span.start, "key after its value");
                if member.duplicate {
                    *duplicates += 1;
                    assert!(
                        parse.errors.iter().any(
                            |e| e.kind == SyntaxErrorKind::DuplicateKey && e.span == member.key
                        ),
                        "duplicate member {:?} without its error",
                        member.key
                    );
                }
            }
            for (member, (key, value)) in kept.into_iter().zip(map) {
                let key_text = &text[member.key.range()];
                if !key_text.starts_with(['"', '\'']) {
                    assert_eq!(key_text, key);
                } else if let Ok(decoded) = serde_json::from_str::<String>(key_text) {
                    assert_eq!(&decoded, key);
                }
                check_node(text, &member.value, value, depth + 1, parse, duplicates, check_span);
            }
        }
        (kind, value) => panic!("node {kind:?} at {:?} holds {value}", node.span),
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures.

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/parse")
}

/// Every `*.json` and `*.dust` file in `test-data/parse` parses to its snapshot
/// `<name>.<ext>.snap` (run with `UPDATE_EXPECT=1` to rewrite them).
#[test]
fn fixtures() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| Lang::from_path(&path.to_string_lossy()).is_some())
        .collect();
    paths.sort();
    assert!(paths.len() > 30, "fixtures are missing: {paths:?}");
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let lang = Lang::from_path(&path.to_string_lossy()).unwrap();
        let parse = parse(&text, lang);
        check_invariants(&text, &parse);
        let mut snapshot = path.clone().into_os_string();
        snapshot.push(".snap");
        expect_file![PathBuf::from(snapshot)].assert_eq(&dump(&text, &parse));
    }
}

// ---------------------------------------------------------------------------------------------
// Unit tests.

#[test]
fn empty_texts() {
    let json = parse_json("");
    assert_eq!((json.root, json.value), (None, Value::Null));
    assert_eq!(json.errors[0].message, "expected a JSON value, found the end of the text");
    let dust = parse_dust("");
    assert_eq!(dust.root, Some(Node { span: Span::new(0, 0), kind: NodeKind::Object(vec![]) }));
    assert_eq!(dust.value, serde_json::json!({}));
    assert!(dust.implicit_object && dust.is_clean());
}

/// JSONC may hold no value (SPEC §23): a `tsconfig.json` holding only a comment is read by
/// TypeScript as `{}` and shows no problem in VS Code, so it parses cleanly with no tree; the
/// same text as plain JSON still lacks its value.
#[test]
fn jsonc_without_a_value_is_clean() {
    for text in ["", "  \n", "// only a comment\n", "/* a */ // b\n"] {
        let parse = parse_jsonc(text);
        assert!(parse.is_clean(), "{text:?}: {:?}", parse.errors);
        assert_eq!((parse.root, parse.value), (None, Value::Null), "{text:?}");
        assert!(!parse_json(text).is_clean(), "{text:?} is no JSON");
    }
    assert_eq!(parse_jsonc("/* a */ // b\n").comments.len(), 2);
    // A value that is started and not finished is still an error.
    assert!(!parse_jsonc("// c\n{").is_clean());
}

/// Runs `f` on a thread with a 2 MiB stack, the default for spawned threads, to show that
/// parsing does not need more.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).unwrap().join().unwrap()
}

/// The depth of the deepest node.
fn tree_depth(node: &Node) -> usize {
    1 + match &node.kind {
        NodeKind::Array(items) => items.iter().map(tree_depth).max().unwrap_or(0),
        NodeKind::Object(members) => {
            members.iter().map(|m| tree_depth(&m.value)).max().unwrap_or(0)
        }
        _ => 0,
    }
}

#[test]
fn nesting_beyond_any_stack_is_reported_and_skipped() {
    const N: usize = 100_000;
    let cases = [
        (Lang::Json, "[".repeat(N), MAX_DEPTH),
        (Lang::Json, "[".repeat(N) + &"]".repeat(N), MAX_DEPTH),
        (Lang::Json, "{\"a\":".repeat(N) + "1" + &"}".repeat(N), 5 * MAX_DEPTH),
        (Lang::Dust, "[".repeat(N), MAX_DEPTH),
        (Lang::Dust, "{a ".repeat(N) + &"}".repeat(N), 3 * MAX_DEPTH),
        // The implicit top-level object is the first level.
        (Lang::Dust, "a [".repeat(N), 2 + 3 * (MAX_DEPTH - 1)),
    ];
    for (lang, text, deep_at) in cases {
        let (depth, errors, deep_error) = on_small_stack(move || {
            let parse = parse(&text, lang);
            check_invariants(&text, &parse);
            let deep_error = parse
                .errors
                .iter()
                .find(|e| e.message.starts_with("too deeply nested"))
                .map(|e| e.span);
            (tree_depth(parse.root.as_ref().unwrap()), parse.errors.len(), deep_error)
        });
        assert_eq!(depth, MAX_DEPTH + 1, "{lang:?}: the skipped value is one Error node");
        assert_eq!(deep_error, Some(Span::new(deep_at as u32, deep_at as u32 + 1)), "{lang:?}");
        assert!(errors >= 1, "{lang:?}");
    }
}

#[test]
fn nesting_up_to_the_limit_is_read() {
    let text = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    let parse = on_small_stack(move || parse_json(&text));
    assert!(parse.is_clean(), "{:?}", parse.errors);
    assert_eq!(tree_depth(parse.root.as_ref().unwrap()), MAX_DEPTH);
}

// ---------------------------------------------------------------------------------------------
// Property tests.

/// Strings rich in what JSON must escape or encode: quotes, backslashes, control characters,
/// non-ASCII and astral characters.
fn arb_string() -> impl Strategy<Value = String> {
    let tricky = prop::sample::select(vec![
        '"', '\'', '\\', '/', '\u{0}', '\u{8}', '\u{1f}', '\u{7f}', '\n', '\r', '\t', ' ', 'a',
        'é', '€', '𝄞', '😀', '\u{feff}', '\u{2028}', ';', '{', ']',
    ]);
    prop_oneof![
        any::<String>(),
        prop::collection::vec(tricky, 0..12).prop_map(|chars| chars.into_iter().collect()),
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite floats", |f| Number::from_f64(f).map(Value::Number)),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((arb_string(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Texts built from the characters that matter to either grammar.
fn grammar_soup() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "{", "}", "[", "]", "'", "\"", ";", ",", ":", "=", "@", "\\", " ", "\n", "\r\n", "\r",
        "\t", "a", "key", "1", "-", "0", "1.5e3", "e", ".", "+", "tru", "true", "null", "NaN", "é",
        "𝄞", "\u{1}", "\u{7f}", "/", "//", "/*", "*/", "\\u", "\\uD800", "\\uDC00", "00a0",
        "\u{feff}", "1e400",
    ]);
    prop::collection::vec(pieces, 0..48).prop_map(|pieces| pieces.concat())
}

/// Valid JSON with one character deleted or one piece inserted: near-misses.
fn near_json() -> impl Strategy<Value = String> {
    (arb_value(), any::<prop::sample::Index>(), any::<bool>(), grammar_soup()).prop_map(
        |(value, at, delete, piece)| {
            let mut text = serde_json::to_string_pretty(&value).unwrap();
            let boundaries: Vec<usize> =
                text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
            let at = boundaries[at.index(boundaries.len())];
            if delete {
                if let Some(ch) = text[at..].chars().next() {
                    text.replace_range(at..at + ch.len_utf8(), "");
                }
            } else {
                text.insert_str(at, &piece);
            }
            text
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn json_agrees_with_serde_json_on_valid_json(value in arb_value()) {
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let parse = parse_json(&text);
            check_invariants(&text, &parse);
            prop_assert!(parse.is_clean(), "{text}: {:?}", parse.errors);
            prop_assert_eq!(&parse.value, &value);
            prop_assert_eq!(&parse.value, &serde_json::from_str::<Value>(&text).unwrap());
        }
    }

    #[test]
    fn arbitrary_text_parses_without_panicking(text in any::<String>()) {
        check_invariants(&text, &parse_json(&text));
        check_invariants(&text, &parse_jsonc(&text));
        check_invariants(&text, &parse_dust(&text));
    }

    #[test]
    fn grammar_soup_parses_without_panicking(text in grammar_soup()) {
        check_invariants(&text, &parse_json(&text));
        check_invariants(&text, &parse_jsonc(&text));
        let dust = parse_dust(&text);
        check_invariants(&text, &dust);
        prop_assert!(dust.root.is_some());
    }

    #[test]
    fn near_json_parses_without_panicking(text in near_json()) {
        check_invariants(&text, &parse_json(&text));
        check_invariants(&text, &parse_jsonc(&text));
        check_invariants(&text, &parse_dust(&text));
    }

    /// The oracle for JSONC: the same data written with comments and trailing commas (JSONC)
    /// and without them (JSON) reads as one value, the value `serde_json` reads from the JSON;
    /// every comment is recorded and nothing else is; plain JSON refuses the JSONC text.
    #[test]
    fn jsonc_reads_as_json_without_its_comments(
        value in arb_value(),
        trivia in prop::collection::vec(0..TRIVIA.len(), 1..64),
    ) {
        let mut writer = JsoncWriter::new(trivia.into_iter().cycle());
        writer.value(&value);
        writer.gap();
        let (jsonc, json) = (writer.jsonc, writer.json);
        let parse = parse_jsonc(&jsonc);
        check_invariants(&jsonc, &parse);
        prop_assert!(parse.is_clean(), "{jsonc}: {:?}", parse.errors);
        prop_assert_eq!(&parse.value, &serde_json::from_str::<Value>(&json).unwrap());
        prop_assert_eq!(&parse.value, &parse_json(&json).value);
        let comments: Vec<&str> = parse.comments.iter().map(|c| &jsonc[c.range()]).collect();
        prop_assert_eq!(comments, writer.comments);
        prop_assert_eq!(
            parse_json(&jsonc).is_clean(),
            writer.trailing_commas == 0 && parse.comments.is_empty()
        );
    }
}

/// What the JSONC oracle writes between tokens; the comment markers inside the strings of
/// the data must not count.
const TRIVIA: [&str; 8] =
    ["", " ", "\n  ", "// line\n", "/* block */", "/* two\n lines */ ", "/**/", "//\n"];

/// The JSONC text of a value with comments between its tokens and trailing commas, beside
/// its plain JSON text.
struct JsoncWriter<I> {
    trivia: I,
    jsonc: String,
    json: String,
    comments: Vec<&'static str>,
    trailing_commas: usize,
}

impl<I: Iterator<Item = usize>> JsoncWriter<I> {
    fn new(trivia: I) -> Self {
        let (jsonc, json, comments) = (String::new(), String::new(), Vec::new());
        JsoncWriter { trivia, jsonc, json, comments, trailing_commas: 0 }
    }

    fn gap(&mut self) {
        let piece = TRIVIA[self.trivia.next().unwrap_or(0)];
        self.jsonc.push_str(piece);
        self.json.push(' ');
        // The comments of a piece, without the line break that ends a line comment.
        let mut rest = piece;
        while let Some(at) = rest.find('/') {
            rest = &rest[at..];
            let end = if rest.starts_with("//") {
                rest.find('\n').unwrap_or(rest.len())
            } else {
                rest.find("*/").unwrap() + 2
            };
            self.comments.push(&rest[..end]);
            rest = &rest[end..];
        }
    }

    fn token(&mut self, text: &str) {
        self.jsonc.push_str(text);
        self.json.push_str(text);
    }

    fn value(&mut self, value: &Value) {
        self.gap();
        match value {
            Value::Array(items) => {
                self.token("[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.token(",");
                    }
                    self.value(item);
                }
                self.close("]", !items.is_empty());
            }
            Value::Object(map) => {
                self.token("{");
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        self.token(",");
                    }
                    self.gap();
                    self.token(&Value::String(key.clone()).to_string());
                    self.gap();
                    self.token(":");
                    self.value(item);
                }
                self.close("}", !map.is_empty());
            }
            scalar => self.token(&scalar.to_string()),
        }
        self.gap();
    }

    /// The closer, after a trailing comma when the container holds something and the trivia
    /// says so.
    fn close(&mut self, closer: &str, any: bool) {
        self.gap();
        if any && self.trivia.next().unwrap_or(0).is_multiple_of(2) {
            self.jsonc.push(',');
            self.trailing_commas += 1;
            self.gap();
        }
        self.token(closer);
    }
}

//! Formatter tests: fixture snapshots, the 80-column edge, errors, and property tests.

use std::path::{Path, PathBuf};

use expect_test::{expect, expect_file};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::syntax::{SyntaxErrorKind, parse_dust, parse_json, parse_jsonc};

fn data_dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-data/format").join(sub)
}

/// The inputs of a fixture directory (files ending in `.<ext>`), sorted.
fn inputs(sub: &str, ext: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data_dir(sub))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no .{ext} fixtures in {sub}");
    paths
}

/// Compare `actual` with the snapshot `<input>.<suffix>` (UPDATE_EXPECT=1 rewrites it).
fn snapshot(input: &Path, suffix: &str, actual: &str) {
    let mut name = input.as_os_str().to_owned();
    name.push(format!(".{suffix}"));
    expect_file![PathBuf::from(name)].assert_eq(actual);
}

/// The comment texts of a DUST text, trimmed, sorted.
fn comment_texts(text: &str) -> Vec<String> {
    let mut texts: Vec<String> = parse_dust(text)
        .comments
        .iter()
        .map(|span| text[span.range()].trim_end().to_owned())
        .collect();
    texts.sort();
    texts
}

/// Format DUST and assert the formatter's promises: the output parses cleanly to the same
/// value, keeps every comment exactly once, and formats to itself.
fn format_dust_checked(input: &str) -> String {
    let output = format(input, Lang::Dust).unwrap_or_else(|e| panic!("{e}\n{input}"));
    let context = format!("input:\n{input}\n---\noutput:\n{output}\n---");
    let reparsed = parse_dust(&output);
    assert!(reparsed.is_clean(), "{:?}\n{context}", reparsed.errors);
    assert_eq!(reparsed.value, parse_dust(input).value, "value changed\n{context}");
    assert_eq!(comment_texts(&output), comment_texts(input), "comments changed\n{context}");
    assert_eq!(format(&output, Lang::Dust).unwrap(), output, "not idempotent\n{context}");
    assert!(output.is_empty() || (output.ends_with('\n') && !output.ends_with("\n\n")));
    assert!(output.lines().all(|line| line.trim_end() == line), "trailing space\n{context}");
    output
}

/// The comment texts of a JSONC text, trimmed, sorted.
fn jsonc_comment_texts(text: &str) -> Vec<String> {
    let mut texts: Vec<String> = parse_jsonc(text)
        .comments
        .iter()
        .map(|span| text[span.range()].trim_end().to_owned())
        .collect();
    texts.sort();
    texts
}

/// Format JSONC and assert the formatter's promises: the output parses cleanly to the same
/// value, keeps every comment exactly once, has no trailing comma, and formats to itself.
fn format_jsonc_checked(input: &str) -> String {
    let output = format(input, Lang::Jsonc).unwrap_or_else(|e| panic!("{e}\n{input}"));
    let context = format!("input:\n{input}\n---\noutput:\n{output}\n---");
    let reparsed = parse_jsonc(&output);
    assert!(reparsed.is_clean(), "{:?}\n{context}", reparsed.errors);
    assert_eq!(reparsed.value, parse_jsonc(input).value, "value changed\n{context}");
    let texts = jsonc_comment_texts(&output);
    assert_eq!(texts, jsonc_comment_texts(input), "comments changed\n{context}");
    let trailing =
        parse_json(&output).errors.into_iter().filter(|e| e.message.contains("trailing"));
    assert_eq!(trailing.count(), 0, "a trailing comma\n{context}");
    assert_eq!(format(&output, Lang::Jsonc).unwrap(), output, "not idempotent\n{context}");
    let empty = output.is_empty() && reparsed.root.is_none() && reparsed.comments.is_empty();
    assert!(empty || (output.ends_with('\n') && !output.ends_with("\n\n")), "{context}");
    assert!(output.lines().all(|line| line.trim_end() == line), "trailing space\n{context}");
    if reparsed.comments.is_empty() && !input.contains("\n\n") && !empty {
        assert_eq!(output, value_to_json(&reparsed.value), "JSONC without comments is JSON's");
    }
    output
}

fn format_json_checked(input: &str) -> String {
    let output = format(input, Lang::Json).unwrap_or_else(|e| panic!("{e}\n{input}"));
    let reparsed = parse_json(&output);
    assert!(reparsed.is_clean(), "{:?}\n{output}", reparsed.errors);
    assert_eq!(reparsed.value, parse_json(input).value);
    assert_eq!(format(&output, Lang::Json).unwrap(), output);
    output
}

// ---- The value half: needs no parser. ----

#[test]
fn value_fixtures() {
    // Read with serde_json, not our parser, so this half stands on its own.
    for input in inputs("values", "json") {
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        snapshot(&input, "dust.snap", &value_to_dust(&value).unwrap());
    }
}

#[test]
fn spec_example_is_canonical() {
    let value = json!({
        "id": "book/dune",
        "type": "book",
        "title": "Dune",
        "year": 1965,
        "author": "@person/frank-herbert",
        "tags": ["classic", "sci-fi"],
        "rights": {"holder": "Herbert Properties LLC", "since": 1965}
    });
    expect![[r#"
        id      book/dune
        type    book
        title   Dune
        year    1965
        author  @person/frank-herbert
        tags    [classic sci-fi]
        rights  {holder 'Herbert Properties LLC' since 1965}
    "#]]
    .assert_eq(&value_to_dust(&value).unwrap());
}

#[test]
fn empty_documents() {
    assert_eq!(value_to_dust(&json!({})).unwrap(), "");
    assert_eq!(value_to_dust(&json!([])).unwrap(), "[]\n");
    assert_eq!(value_to_dust(&json!([[], {}])).unwrap(), "[\n  []\n  {}\n]\n");
    assert_eq!(value_to_json(&json!({})), "{}\n");
    assert_eq!(value_to_json(&json!([])), "[]\n");
}

/// An array of `n` one-character items, inline `n * 2 + 1` wide.
fn items(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!(format!("{}", (b'a' + (i % 26) as u8) as char))).collect())
}

#[test]
fn inline_up_to_column_80_exactly() {
    // Key `k` and padding put the value at column 3; 38 items are 77 wide: ends at column 80.
    let fits = value_to_dust(&json!({ "k": items(38) })).unwrap();
    assert_eq!(fits.lines().count(), 1);
    assert_eq!(fits.trim_end().chars().count(), 80);
    let spills = value_to_dust(&json!({ "k": items(39) })).unwrap();
    assert_eq!(spills.lines().count(), 41);
    assert!(spills.starts_with("k  [\n  a\n  b\n") && spills.ends_with("\n]\n"), "{spills}");

    // Nested: inside a multi-line object at indent 2, values start at column 2 + 8 + 2 = 12,
    // so 33 items (67 wide) end at column 79 and 34 items (69 wide) would end at 81.
    let nested = value_to_dust(&json!({ "k": { "x": items(34), "long-key": items(33) } })).unwrap();
    let lines: Vec<&str> = nested.lines().collect();
    assert_eq!(lines[..3], ["k  {", "  x         [", "    a"], "{nested}");
    assert_eq!(lines[36], "  ]", "{nested}");
    assert!(lines[37].starts_with("  long-key  [a b") && lines[37].chars().count() == 79);
    assert_eq!(lines[38], "}");
    // The width counts characters, not bytes.
    let wide = Value::Array((0..38).map(|_| json!("é")).collect());
    assert_eq!(value_to_dust(&json!({ "k": wide })).unwrap().lines().count(), 1);
}

#[test]
fn keys_and_strings_quote_only_when_needed() {
    let value = json!({
        "1965": "1965",
        "true": "true",
        "": "",
        "a b": "a b",
        "x": "it's \"q\";\n\tdone\u{1}",
        "é": "日本",
    });
    expect![[r#"
        1965   '1965'
        true   'true'
        ''     ''
        'a b'  'a b'
        x      'it\'s "q";\n\tdone\u0001'
        é      日本
    "#]]
    .assert_eq(&value_to_dust(&value).unwrap());
}

#[test]
fn top_level_scalars_are_refused_for_dust_only() {
    for value in [json!(null), json!(true), json!(3), json!("x")] {
        let err = value_to_dust(&value).unwrap_err();
        assert_eq!(err.code(), "unsupported");
        assert!(err.to_string().contains("top level is an object or an array"), "{err}");
        let core: crate::Error = err.into();
        assert_eq!(core.code(), "unsupported");
        assert_eq!(value_to_json(&value), format!("{value}\n"));
    }
}

#[test]
fn json_is_serde_pretty_with_a_newline() {
    let value = json!({"b": [1, 2.5, "é\u{1}"], "a": {}, "c": [], "d": {"e": null}});
    expect![[r#"
        {
          "b": [
            1,
            2.5,
            "é\u0001"
          ],
          "a": {},
          "c": [],
          "d": {
            "e": null
          }
        }
    "#]]
    .assert_eq(&value_to_json(&value));
}

// ---- The text half: needs the parsers. ----

#[test]
fn dust_fixtures() {
    for input in inputs("dust", "dust") {
        let text = std::fs::read_to_string(&input).unwrap();
        snapshot(&input, "snap", &format_dust_checked(&text));
    }
}

#[test]
fn json_fixtures() {
    for input in inputs("json", "json") {
        let text = std::fs::read_to_string(&input).unwrap();
        snapshot(&input, "snap", &format_json_checked(&text));
    }
}

#[test]
fn jsonc_fixtures() {
    for input in inputs("jsonc", "jsonc") {
        let text = std::fs::read_to_string(&input).unwrap();
        snapshot(&input, "snap", &format_jsonc_checked(&text));
    }
}

/// JSONC to DUST keeps every comment (a block comment as `;` lines), and DUST to JSONC too
/// (`;` as `//`); plain JSON drops them and counts them.
#[test]
fn jsonc_convert_fixtures() {
    for input in inputs("convert", "jsonc") {
        let text = std::fs::read_to_string(&input).unwrap();
        let converted = convert(&text, Lang::Jsonc, Lang::Dust).unwrap();
        assert_eq!(converted.lost_comments, 0);
        assert_eq!(parse_dust(&converted.text).value, parse_jsonc(&text).value);
        assert_eq!(format(&converted.text, Lang::Dust).unwrap(), converted.text);
        let dust_comments = parse_dust(&converted.text).comments.len();
        assert!(dust_comments >= parse_jsonc(&text).comments.len(), "{}", converted.text);
        snapshot(&input, "dust.snap", &converted.text);
        let json = convert(&text, Lang::Jsonc, Lang::Json).unwrap();
        assert_eq!(json.lost_comments, parse_jsonc(&text).comments.len());
        assert_eq!(json.text, value_to_json(&parse_jsonc(&text).value));
    }
    for input in inputs("convert", "dust") {
        let text = std::fs::read_to_string(&input).unwrap();
        let converted = convert(&text, Lang::Dust, Lang::Jsonc).unwrap();
        assert_eq!(converted.lost_comments, 0);
        assert_eq!(parse_jsonc(&converted.text).value, parse_dust(&text).value);
        assert_eq!(comment_texts(&text).len(), jsonc_comment_texts(&converted.text).len());
        assert_eq!(format(&converted.text, Lang::Jsonc).unwrap(), converted.text);
        let back = convert(&converted.text, Lang::Jsonc, Lang::Dust).unwrap();
        assert_eq!(back.text, format(&text, Lang::Dust).unwrap(), "DUST -> JSONC -> DUST");
        snapshot(&input, "jsonc.snap", &converted.text);
    }
}

/// A JSONC text holding only comments formats to its comments, one after another, and an
/// empty one to nothing; it has no value to convert to DUST or JSON (SPEC §23).
#[test]
fn jsonc_without_a_value_keeps_its_comments() {
    let text = "\n// The repository's root config.\n\n/* for VS Code */   \n";
    let formatted = format(text, Lang::Jsonc).unwrap();
    assert_eq!(formatted, "// The repository's root config.\n/* for VS Code */\n");
    assert_eq!(format(&formatted, Lang::Jsonc).unwrap(), formatted);
    assert_eq!(format("", Lang::Jsonc).unwrap(), "");
    for to in [Lang::Dust, Lang::Json] {
        let err = convert(text, Lang::Jsonc, to).unwrap_err();
        assert!(matches!(err, FormatError::NoValue), "{err}");
        assert_eq!(err.code(), crate::Code::Unsupported);
    }
    assert!(matches!(format("", Lang::Json), Err(FormatError::Syntax(_))));
}

#[test]
fn block_comments_become_dust_lines() {
    let converted = convert(
        "[1, /* one */ 2 /* two\n * lines */, /** doc */ 3 /* *bold* */]",
        Lang::Jsonc,
        Lang::Dust,
    )
    .unwrap();
    expect![[r#"
        [
          1 ; one
          2
          ; two
          ; lines
          ; doc
          3 ; *bold*
        ]
    "#]]
    .assert_eq(&converted.text);
}

#[test]
fn convert_fixtures() {
    for input in inputs("convert", "dust") {
        let text = std::fs::read_to_string(&input).unwrap();
        let converted = convert(&text, Lang::Dust, Lang::Json).unwrap();
        assert_eq!(converted.lost_comments, parse_dust(&text).comments.len());
        assert_eq!(parse_json(&converted.text).value, parse_dust(&text).value);
        snapshot(&input, "json.snap", &converted.text);
    }
    for input in inputs("convert", "json") {
        let text = std::fs::read_to_string(&input).unwrap();
        let converted = convert(&text, Lang::Json, Lang::Dust).unwrap();
        assert_eq!(converted.lost_comments, 0);
        assert_eq!(parse_dust(&converted.text).value, parse_json(&text).value);
        assert_eq!(format(&converted.text, Lang::Dust).unwrap(), converted.text);
        snapshot(&input, "dust.snap", &converted.text);
    }
}

#[test]
fn conversion_counts_lost_comments() {
    let converted = convert("; a\nx 1 ; b\n", Lang::Dust, Lang::Json).unwrap();
    assert_eq!(converted, Conversion { text: "{\n  \"x\": 1\n}\n".into(), lost_comments: 2 });
    let same = convert("; a\nx   1\n", Lang::Dust, Lang::Dust).unwrap();
    assert_eq!(same, Conversion { text: "; a\nx  1\n".into(), lost_comments: 0 });
}

#[test]
fn broken_texts_are_refused_with_the_parser_errors() {
    for (text, lang) in [("a 1 a 2", Lang::Dust), ("a [1", Lang::Dust), ("{\"a\": }", Lang::Json)] {
        let err = format(text, lang).unwrap_err();
        assert_eq!(err.code(), "invalid-arguments");
        let FormatError::Syntax(errors) = &err else { panic!("{err:?}") };
        assert_eq!(errors, &syntax::parse(text, lang).errors);
        assert!(err.to_string().contains("fix"), "{err}");
        assert!(convert(text, lang, Lang::Json).is_err());
    }
    let duplicate = format("a 1\na 2\n", Lang::Dust).unwrap_err();
    assert!(
        matches!(&duplicate, FormatError::Syntax(e) if e[0].kind == SyntaxErrorKind::DuplicateKey)
    );
    let scalar = convert("42", Lang::Json, Lang::Dust).unwrap_err();
    assert_eq!(scalar.code(), "unsupported");
    assert_eq!(format("42", Lang::Json).unwrap(), "42\n");
}

// ---- Property tests. ----

/// Characters that stress quoting, escaping and number recognition. No `|`: the comment
/// property test uses it to mark comments uniquely.
const ALPHABET: &[char] = &[
    'a', 'Z', 'e', 'E', '0', '1', '9', '-', '+', '.', '/', '@', ':', '=', '#', ' ', '\'', '"',
    '\\', ';', ',', '{', '}', '[', ']', '\n', '\r', '\t', '\u{0}', '\u{8}', '\u{1f}', '\u{7f}',
    '\u{85}', '\u{a0}', '\u{2028}', '\u{feff}', 'é', '日', '😀',
];

const TRICKY: &[&str] = &[
    "",
    "0",
    "-0",
    "1965",
    "-2.5e3",
    "1e400",
    "1E+2",
    "01",
    "1.",
    ".5",
    "+1",
    "-",
    "true",
    "false",
    "null",
    "True",
    "NaN",
    "@person/x",
    "@@x",
    "a b",
    "it's",
    "\"",
    ";",
    ";;",
    "\\",
    "é",
    "😀",
    "\u{feff}",
    "\u{a0}",
    "\r\n",
];

fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(TRICKY).prop_map(String::from),
        prop::collection::vec(prop::sample::select(ALPHABET), 0..8)
            .prop_map(|chars| chars.into_iter().collect()),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        tricky_string().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((tricky_string(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// A document's top level: an object or an array.
fn document() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::collection::vec((tricky_string(), value()), 0..8)
            .prop_map(|members| Value::Object(members.into_iter().collect())),
        prop::collection::vec(value(), 0..6).prop_map(Value::Array),
    ]
}

/// Writes a value as valid but messy DUST: random separators, blank lines, quoting choices
/// and uniquely marked comments wherever whitespace may go.
struct Messy<'a> {
    choices: &'a [u8],
    comment_texts: &'a [String],
    next: usize,
    comments: Vec<String>,
    out: String,
}

impl<'a> Messy<'a> {
    fn new(choices: &'a [u8], comment_texts: &'a [String]) -> Messy<'a> {
        Messy { choices, comment_texts, next: 0, comments: Vec::new(), out: String::new() }
    }

    fn choice(&mut self) -> u8 {
        let choice = self.choices[self.next % self.choices.len()];
        self.next += 1;
        choice
    }

    fn comment(&mut self) -> String {
        let n = self.comments.len();
        let text = self.comment_texts[n % self.comment_texts.len()].trim_end();
        let comment = format!("; c{n}|{text}");
        self.comments.push(comment.clone());
        comment
    }

    fn gap(&mut self) {
        match self.choice() % 9 {
            0 | 1 => self.out.push(' '),
            2 => self.out.push('\n'),
            3 => self.out.push_str("\n\n\n"),
            4 => self.out.push_str(", "),
            5 => {
                let comment = self.comment();
                self.out.push_str(&format!(" {comment}\n"));
            }
            6 => {
                let comment = self.comment();
                self.out.push_str(&format!("\n\n  {comment}\n"));
            }
            7 => self.out.push_str("\t\r\n"),
            _ => self.out.push_str(" \n "),
        }
    }

    fn string(&mut self, s: &str, key: bool) {
        let bare = if key { scalar::key_is_bare(s) } else { scalar::string_is_bare(s) };
        if bare && !self.choice().is_multiple_of(3) {
            self.out.push_str(s);
        } else {
            scalar::write_quoted(s, &mut self.out);
        }
    }

    fn value(&mut self, value: &Value) {
        match value {
            Value::String(s) => self.string(s, false),
            Value::Array(items) => {
                self.out.push('[');
                for item in items {
                    self.gap();
                    self.value(item);
                }
                self.gap();
                self.out.push(']');
            }
            Value::Object(map) => {
                self.out.push('{');
                self.members(map);
                self.gap();
                self.out.push('}');
            }
            scalar => self.out.push_str(&scalar.to_string()),
        }
    }

    fn members(&mut self, map: &serde_json::Map<String, Value>) {
        for (key, value) in map {
            self.gap();
            self.string(key, true);
            self.gap();
            self.value(value);
        }
    }

    fn document(&mut self, value: &Value) {
        self.gap();
        match value {
            Value::Object(map) if !self.choice().is_multiple_of(4) => self.members(map),
            value => self.value(value),
        }
        self.gap();
    }
}

fn comment_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(ALPHABET).prop_filter("no line end", |c| !matches!(c, '\n' | '\r')),
        0..12,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// Random texts from DUST's and JSON's token characters: most are broken, some are not.
fn token_soup() -> impl Strategy<Value = String> {
    const PIECES: &[&str] = &[
        "a", "b", "1", "-2.5", "true", "null", " ", "  ", "\n", "\n\n", "\r\n", "\r", "\t", ";",
        "; c", "{", "}", "[", "]", "'", "\"", ",", ":", "=", "\\", "é", "'x y'", "\"k\"", "//",
        "// c", "/*", "*/", "/* b */",
    ];
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn any_text_is_formatted_faithfully_or_refused(text in token_soup()) {
        match format(&text, Lang::Dust) {
            Ok(_) => { format_dust_checked(&text); }
            Err(err) => prop_assert!(!parse_dust(&text).is_clean() || err.code() == "unsupported"),
        }
        match format(&text, Lang::Json) {
            Ok(_) => { format_json_checked(&text); }
            Err(_) => prop_assert!(!parse_json(&text).is_clean()),
        }
        match format(&text, Lang::Jsonc) {
            Ok(_) => { format_jsonc_checked(&text); }
            Err(_) => prop_assert!(!parse_jsonc(&text).is_clean()),
        }
    }

    /// DUST's comments and blank lines survive a round trip through JSONC: canonical DUST ->
    /// JSONC -> DUST is the same text.
    #[test]
    fn dust_comments_round_trip_through_jsonc(
        value in document(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
        comment_texts in prop::collection::vec(comment_text(), 1..8),
    ) {
        let mut messy = Messy::new(&choices, &comment_texts);
        messy.document(&value);
        let canonical = format(&messy.out, Lang::Dust).unwrap();
        let jsonc = convert(&canonical, Lang::Dust, Lang::Jsonc).unwrap();
        format_jsonc_checked(&jsonc.text);
        let back = convert(&jsonc.text, Lang::Jsonc, Lang::Dust).unwrap();
        prop_assert_eq!(back.text, canonical, "via\n{}", jsonc.text);
    }

    #[test]
    fn value_to_dust_reads_back_and_is_canonical(value in document()) {
        let dust = value_to_dust(&value).unwrap();
        let parse = parse_dust(&dust);
        prop_assert!(parse.is_clean(), "{:?}\n{}", parse.errors, dust);
        prop_assert_eq!(&parse.value, &value);
        prop_assert_eq!(format(&dust, Lang::Dust).unwrap(), dust);
    }

    #[test]
    fn value_to_json_reads_back_and_is_canonical(value in prop_oneof![document(), leaf()]) {
        let text = value_to_json(&value);
        let parse = parse_json(&text);
        prop_assert!(parse.is_clean(), "{:?}\n{}", parse.errors, text);
        prop_assert_eq!(&parse.value, &value);
        prop_assert_eq!(format(&text, Lang::Json).unwrap(), text);
    }

    #[test]
    fn messy_dust_with_comments_formats_faithfully(
        value in document(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
        comment_texts in prop::collection::vec(comment_text(), 1..8),
    ) {
        let mut messy = Messy::new(&choices, &comment_texts);
        messy.document(&value);
        let input = messy.out;
        let parse = parse_dust(&input);
        prop_assert!(parse.is_clean(), "{:?}\n{}", parse.errors, input);
        prop_assert_eq!(&parse.value, &value);
        let output = format_dust_checked(&input);
        for comment in &messy.comments {
            let count = output.matches(comment.as_str()).count();
            prop_assert_eq!(count, 1, "{}\n---\n{}", comment, output);
        }
    }
}

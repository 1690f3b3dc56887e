//! How DUST spells scalars and keys: a bareword when it reads back unchanged, else quoted.

use serde_json::Value;

/// Whether `s` matches the JSON number grammar (RFC 8259 §6), which is exactly when a DUST
/// bareword reads as a number rather than a string.
pub(crate) fn is_json_number(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if bytes.first() == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == bytes.len()
}

/// Whether `c` may appear in a bareword. Stricter than the grammar on purpose: any Unicode
/// whitespace and the byte-order mark are quoted too, since quoting is always safe and a
/// reader might skip them.
fn is_bare_char(c: char) -> bool {
    !(c.is_whitespace()
        || c.is_control()
        || matches!(c, '{' | '}' | '[' | ']' | '\'' | '"' | ';' | ',' | '\u{feff}'))
}

fn is_bareword(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_bare_char)
}

/// Whether a key can be written as a bareword. Keys are always strings, so `1965` and `true`
/// stay bare.
pub(crate) fn key_is_bare(key: &str) -> bool {
    is_bareword(key)
}

/// Whether a string value can be written as a bareword that reads back as the same string.
pub(crate) fn string_is_bare(s: &str) -> bool {
    is_bareword(s) && !is_json_number(s) && !matches!(s, "true" | "false" | "null")
}

/// Append `s` single-quoted with DUST escapes; `"` and non-ASCII stay raw.
pub(crate) fn write_quoted(s: &str, out: &mut String) {
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // Every control character is at most U+009F, so four hex digits always suffice.
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('\'');
}

/// The DUST text of a key.
pub(crate) fn key(key: &str) -> String {
    if key_is_bare(key) {
        key.to_owned()
    } else {
        let mut out = String::with_capacity(key.len() + 2);
        write_quoted(key, &mut out);
        out
    }
}

/// The DUST text of a scalar value; `None` for arrays and objects.
pub(crate) fn scalar(value: &Value) -> Option<String> {
    Some(match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if string_is_bare(s) => s.clone(),
        Value::String(s) => {
            let mut out = String::with_capacity(s.len() + 2);
            write_quoted(s, &mut out);
            out
        }
        Value::Array(_) | Value::Object(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_number_grammar() {
        for yes in ["0", "-0", "1965", "-2.5e3", "1E+10", "0.5", "1e400", "-0.0e-0"] {
            assert!(is_json_number(yes), "{yes}");
        }
        for no in ["", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "NaN", "Infinity", "1_0"] {
            assert!(!is_json_number(no), "{no}");
        }
    }

    #[test]
    fn quoting_decisions() {
        let bare = ["book/dune", "@person/x", "?entity", "Dune", "é", "a:b", "-", "-x", "01"];
        for s in bare {
            assert!(string_is_bare(s), "{s}");
        }
        let quoted = ["", "1965", "-2.5", "true", "false", "null", "a b", "a;b", "a,b", "it's"];
        for s in quoted {
            assert!(!string_is_bare(s), "{s}");
        }
        for s in ["{", "}", "[", "]", "\"", "tab\there", "nbsp\u{a0}", "bom\u{feff}", "del\u{7f}"] {
            assert!(!string_is_bare(s), "{s:?}");
        }
        assert!(key_is_bare("1965") && key_is_bare("true") && !key_is_bare(""));
        // Read as `key: value` mistakes by the parser.
        // SPEC §4: `:` and `=` are bareword characters like any other.
        assert!(key_is_bare("title:") && key_is_bare("a=") && key_is_bare(":"));
        assert!(key_is_bare("a:b") && string_is_bare("title:") && string_is_bare(":"));
    }

    #[test]
    fn escapes() {
        let mut out = String::new();
        write_quoted("a\\b'c\"d\n\r\t\u{8}\u{c}\u{1}\u{7f}\u{85}é😀", &mut out);
        assert_eq!(out, r#"'a\\b\'c"d\n\r\t\b\f\u0001\u007f\u0085é😀'"#);
    }
}

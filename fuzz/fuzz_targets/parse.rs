//! Fuzz target: the JSON, JSONC and DUST parsers never panic, and every span they report lies
//! inside the text on character boundaries; JSONC's comments do not overlap.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stardust_core::syntax::{Node, NodeKind, Parse, parse_dust, parse_json, parse_jsonc};
use stardust_core::text::Span;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        check(text);
    }
    // Invalid UTF-8 never reaches the parsers as such; its lossy reading does.
    let lossy = String::from_utf8_lossy(data);
    check(&lossy);
});

fn check(text: &str) {
    for parse in [parse_json(text), parse_jsonc(text), parse_dust(text)] {
        check_parse(text, &parse);
    }
}

fn check_parse(text: &str, parse: &Parse) {
    if let Some(root) = &parse.root {
        check_node(text, root);
    }
    for span in &parse.comments {
        check_span(text, *span, "comment");
    }
    assert!(parse.comments.windows(2).all(|w| w[0].end <= w[1].start), "comments overlap");
    for error in &parse.errors {
        check_span(text, error.span, "error");
        assert!(!error.message.is_empty(), "an error without a message at {:?}", error.span);
    }
}

fn check_node(text: &str, node: &Node) {
    check_span(text, node.span, "node");
    match &node.kind {
        NodeKind::Array(items) => {
            for item in items {
                check_node(text, item);
            }
        }
        NodeKind::Object(members) => {
            for member in members {
                check_span(text, member.key, "key");
                check_node(text, &member.value);
            }
        }
        _ => {}
    }
}

fn check_span(text: &str, span: Span, what: &str) {
    assert!(
        span.start <= span.end && span.end as usize <= text.len(),
        "{what} span {span:?} outside a text of {} bytes",
        text.len()
    );
    assert!(
        text.is_char_boundary(span.start as usize) && text.is_char_boundary(span.end as usize),
        "{what} span {span:?} splits a character"
    );
}

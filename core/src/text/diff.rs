//! The one range edit that turns a text into another: their common prefix and suffix, found
//! once, a block at a time (texts are megabytes long and an edit usually a few bytes).
//!
//! A client that sends a whole text where a range edit would do (many simple clients and agent
//! libraries) costs what the range edit costs once its text is reduced to this edit.
//!
//! Invariants of [`minimal_edit`]`(old, new)`:
//! - `old[..start] + new[start..new_end] + old[old_end..] == new`;
//! - every cut (`start`, `old_end`, `new_end`) is a char boundary and never falls between the
//!   `\r` and the `\n` of a line end, so it is a position an LSP client can name in either text;
//! - the prefix and the suffix are the longest with those properties, the suffix taken after
//!   the prefix (they never overlap in either text).

/// The bytes `start..old_end` of the old text replaced by the bytes `start..new_end` of the
/// new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub start: usize,
    pub old_end: usize,
    pub new_end: usize,
}

impl TextEdit {
    /// The new length minus the old.
    pub fn delta(&self) -> i64 {
        self.new_end as i64 - self.old_end as i64
    }

    /// Whether the texts are equal.
    pub fn is_empty(&self) -> bool {
        self.start == self.old_end && self.start == self.new_end
    }
}

/// The minimal range edit from `old` to `new` (see the module's invariants).
pub fn minimal_edit(old: &str, new: &str) -> TextEdit {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut start = common_prefix(a, b);
    while !(cut_ok(old, start) && cut_ok(new, start)) {
        start -= 1;
    }
    let mut suffix = common_suffix(a, b).min(a.len().min(b.len()) - start);
    while !(cut_ok(old, a.len() - suffix) && cut_ok(new, b.len() - suffix)) {
        suffix -= 1;
    }
    TextEdit { start, old_end: a.len() - suffix, new_end: b.len() - suffix }
}

/// Whether `at` is a char boundary of `text` outside a `\r\n` pair. Offsets 0 and the end
/// always are, so the loops above stop.
fn cut_ok(text: &str, at: usize) -> bool {
    let bytes = text.as_bytes();
    text.is_char_boundary(at)
        && !(at > 0 && bytes[at - 1] == b'\r' && bytes.get(at) == Some(&b'\n'))
}

/// The length of the common prefix of `a` and `b`, in bytes.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let blocks =
        a.chunks_exact(BLOCK).zip(b.chunks_exact(BLOCK)).take_while(|(x, y)| x == y).count();
    let at = blocks * BLOCK;
    at + a[at..].iter().zip(&b[at..]).take_while(|(x, y)| x == y).count()
}

/// The length of the common suffix of `a` and `b`, in bytes.
pub fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let blocks =
        a.rchunks_exact(BLOCK).zip(b.rchunks_exact(BLOCK)).take_while(|(x, y)| x == y).count();
    let at = blocks * BLOCK;
    let (a, b) = (&a[..a.len() - at], &b[..b.len() - at]);
    at + a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    /// The edit as `old[start..old_end] -> new[start..new_end] @ start`.
    fn show(old: &str, new: &str) -> String {
        let e = minimal_edit(old, new);
        format!("{:?} -> {:?} @ {}", &old[e.start..e.old_end], &new[e.start..e.new_end], e.start)
    }

    fn check(cases: &[(&str, &str)], expected: Expect) {
        let out: Vec<String> = cases
            .iter()
            .map(|(old, new)| format!("{old:?} => {new:?}: {}", show(old, new)))
            .collect();
        expected.assert_eq(&out.join("\n"));
    }

    #[test]
    fn edits_of_small_texts() {
        check(
            &[
                ("", ""),
                ("abc", "abc"),
                ("", "abc"),
                ("abc", ""),
                ("abc", "aXc"),
                ("abc", "abXc"),
                ("aaaa", "aaa"),
                ("abab", "ab"),
                // UTF-8: é (C3 A9) and è (C3 A8) share their first byte; the cut is before it.
                ("café", "cafè"),
                ("é!", "è!"),
                ("a😀b", "a😁b"),
                // A line end's `\r\n` is never split, in either text.
                ("a\r\nb", "a\rb"),
                ("a\rb", "a\r\nb"),
                ("a\r\nb", "ax\nb"),
                ("a\nb", "a\r\nb"),
                ("x\r\n\r\ny", "x\r\ny"),
            ],
            expect![[r#"
                "" => "": "" -> "" @ 0
                "abc" => "abc": "" -> "" @ 3
                "" => "abc": "" -> "abc" @ 0
                "abc" => "": "abc" -> "" @ 0
                "abc" => "aXc": "b" -> "X" @ 1
                "abc" => "abXc": "" -> "X" @ 2
                "aaaa" => "aaa": "a" -> "" @ 3
                "abab" => "ab": "ab" -> "" @ 2
                "café" => "cafè": "é" -> "è" @ 3
                "é!" => "è!": "é" -> "è" @ 0
                "a😀b" => "a😁b": "😀" -> "😁" @ 1
                "a\r\nb" => "a\rb": "\r\n" -> "\r" @ 1
                "a\rb" => "a\r\nb": "\r" -> "\r\n" @ 1
                "a\r\nb" => "ax\nb": "\r\n" -> "x\n" @ 1
                "a\nb" => "a\r\nb": "\n" -> "\r\n" @ 1
                "x\r\n\r\ny" => "x\r\ny": "\r\n" -> "" @ 3"#]],
        );
    }

    #[test]
    fn block_compares_agree_with_byte_compares() {
        let old = "x".repeat(200) + "A" + &"y".repeat(130);
        let new = "x".repeat(200) + "BB" + &"y".repeat(130);
        assert_eq!(common_prefix(old.as_bytes(), new.as_bytes()), 200);
        assert_eq!(common_suffix(old.as_bytes(), new.as_bytes()), 130);
        assert_eq!(minimal_edit(&old, &new), TextEdit { start: 200, old_end: 201, new_end: 202 });
    }

    /// Whether `at` is a cut the invariants allow in `text`.
    fn allowed(text: &str, at: usize) -> bool {
        text.is_char_boundary(at) && !(text[..at].ends_with('\r') && text[at..].starts_with('\n'))
    }

    proptest::proptest! {
        /// The edit rebuilds the new text, cuts only where allowed, and neither its prefix nor
        /// its suffix can be made longer by one allowed cut.
        #[test]
        fn the_edit_is_exact_and_minimal(
            old in "[ab\r\né😀]{0,24}",
            new in "[ab\r\né😀]{0,24}",
            shared in "[ab\r\né😀]{0,8}",
        ) {
            // Often a long common prefix and suffix, as in an editor.
            for (old, new) in [(old.clone(), new.clone()), (format!("{shared}{old}{shared}"), format!("{shared}{new}{shared}"))] {
                let e = minimal_edit(&old, &new);
                let rebuilt = format!("{}{}{}", &old[..e.start], &new[e.start..e.new_end], &old[e.old_end..]);
                proptest::prop_assert_eq!(&rebuilt, &new);
                for (text, at) in [(&old, e.start), (&new, e.start), (&old, e.old_end), (&new, e.new_end)] {
                    proptest::prop_assert!(allowed(text, at), "{at} is not an allowed cut of {text:?}");
                }
                proptest::prop_assert!(e.start <= e.old_end && e.start <= e.new_end);
                // A longer prefix: the next allowed cut after `start` in both texts.
                let longer_prefix = (e.start + 1..=old.len().min(new.len()))
                    .find(|&p| allowed(&old, p) && allowed(&new, p));
                if let Some(p) = longer_prefix {
                    proptest::prop_assert_ne!(&old[..p], &new[..p]);
                }
                // A longer suffix, still after the prefix.
                let suffix = old.len() - e.old_end;
                let longer_suffix = (suffix + 1..=old.len().min(new.len()) - e.start)
                    .find(|&s| allowed(&old, old.len() - s) && allowed(&new, new.len() - s));
                if let Some(s) = longer_suffix {
                    proptest::prop_assert_ne!(&old[old.len() - s..], &new[new.len() - s..]);
                }
            }
        }
    }
}

//! Three-way line merge: two texts that each changed a common base, combined where their
//! changes do not overlap (what `git revert` and `git merge` do, without conflict markers).
//!
//! A change is a run of base lines replaced by other lines (an insertion replaces none). Two
//! changes overlap when their base ranges share a line, or when both insert at the same place
//! (their order would be a guess), or when one inserts strictly inside the lines the other
//! replaces. The same change made on both sides is taken once. Lines keep their line ends, so
//! the merge is byte-exact where nothing was changed.

use similar::{DiffOp, TextDiff};

/// One side's change: base lines `start..end` replaced by `lines`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Hunk<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

/// The changes that take `base` (split in lines) to `other`, in order, adjacent runs joined.
fn hunks<'a>(base: &'a str, other: &'a str) -> Vec<Hunk<'a>> {
    let diff = TextDiff::from_lines(base, other);
    let new_lines: Vec<&str> = other.split_inclusive('\n').collect();
    let mut out: Vec<Hunk<'a>> = Vec::new();
    for op in diff.ops() {
        let (start, end, new) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { old_index, old_len, new_index } => {
                (old_index, old_index + old_len, new_index..new_index)
            }
            DiffOp::Insert { old_index, new_index, new_len } => {
                (old_index, old_index, new_index..new_index + new_len)
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                (old_index, old_index + old_len, new_index..new_index + new_len)
            }
        };
        let lines = new_lines[new].to_vec();
        match out.last_mut() {
            Some(last) if last.end == start => {
                last.end = end;
                last.lines.extend(lines);
            }
            _ => out.push(Hunk { start, end, lines }),
        }
    }
    out
}

fn overlap(a: &Hunk<'_>, b: &Hunk<'_>) -> bool {
    if a.start == a.end || b.start == b.end {
        // An insertion conflicts with an insertion at the same place, or with a replacement
        // of lines around it.
        let (ins, other) = if a.start == a.end { (a, b) } else { (b, a) };
        if other.start == other.end {
            return ins.start == other.start;
        }
        return other.start < ins.start && ins.start < other.end;
    }
    a.start < b.end && b.start < a.end
}

/// `base` changed as `ours` changed it and as `theirs` changed it; `None` when the two
/// changes overlap.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> Option<String> {
    let mut a = hunks(base, ours);
    let mut b = hunks(base, theirs);
    // The same change on both sides counts once.
    b.retain(|h| !a.contains(h));
    for x in &a {
        if b.iter().any(|y| overlap(x, y)) {
            return None;
        }
    }
    a.extend(b);
    a.sort_by_key(|h| (h.start, h.end));
    let base_lines: Vec<&str> = base.split_inclusive('\n').collect();
    let mut out = String::with_capacity(base.len().max(ours.len()).max(theirs.len()));
    let mut at = 0;
    for h in &a {
        for line in &base_lines[at..h.start] {
            out.push_str(line);
        }
        for line in &h.lines {
            out.push_str(line);
        }
        at = h.end;
    }
    for line in &base_lines[at..] {
        out.push_str(line);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::merge3;

    const BASE: &str = "a\nb\nc\nd\ne\n";

    #[test]
    fn changes_apart_both_apply() {
        assert_eq!(
            merge3(BASE, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n").as_deref(),
            Some("A\nb\nc\nd\nE\n")
        );
        // Neighbouring lines do not overlap.
        assert_eq!(
            merge3(BASE, "A\nb\nc\nd\ne\n", "a\nB\nc\nd\ne\n").as_deref(),
            Some("A\nB\nc\nd\ne\n")
        );
        // An insertion after a changed line.
        assert_eq!(
            merge3(BASE, "a\nB\nc\nd\ne\n", "a\nb\nx\nc\nd\ne\n").as_deref(),
            Some("a\nB\nx\nc\nd\ne\n")
        );
    }

    #[test]
    fn the_same_line_changed_twice_is_a_conflict() {
        assert_eq!(merge3(BASE, "a\nX\nc\nd\ne\n", "a\nY\nc\nd\ne\n"), None);
        assert_eq!(merge3(BASE, "a\nb\nx\nc\nd\ne\n", "a\nb\ny\nc\nd\ne\n"), None);
        assert_eq!(merge3(BASE, "a\nd\ne\n", "a\nb\nx\nc\nd\ne\n"), None);
    }

    #[test]
    fn one_side_unchanged_or_both_the_same() {
        let ours = "a\nb\nC\nd\ne\n";
        assert_eq!(merge3(BASE, ours, BASE).as_deref(), Some(ours));
        assert_eq!(merge3(BASE, BASE, ours).as_deref(), Some(ours));
        assert_eq!(merge3(BASE, ours, ours).as_deref(), Some(ours));
        // No final line end is kept as it is.
        assert_eq!(merge3("a\nb", "A\nb", "a\nB").as_deref(), Some("A\nB"));
    }
}

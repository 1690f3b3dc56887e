//! The `//- path` fixture format of the data-driven tests: a small store written as one text.
//!
//! A line `//- books/dune.dust` starts the file at that store-relative path; the lines up to
//! the next such header are its content, byte for byte. Lines before the first header are the
//! preamble, where a test keeps its own directives. Test support only: hidden from the docs,
//! and no rule of the product depends on it.

/// A fixture split into its preamble and its files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fixture {
    /// The lines before the first `//- ` header, line ends kept.
    pub preamble: String,
    /// (store-relative path, content), in the order of the fixture.
    pub files: Vec<(String, String)>,
}

/// Split `text` into its preamble and files.
pub fn parse(text: &str) -> Fixture {
    let mut out = Fixture::default();
    for line in text.split_inclusive('\n') {
        if let Some(path) = line.strip_prefix("//- ") {
            out.files.push((path.trim().to_owned(), String::new()));
        } else if let Some((_, content)) = out.files.last_mut() {
            content.push_str(line);
        } else {
            out.preamble.push_str(line);
        }
    }
    out
}

/// The files of `text`, as (store-relative path, content).
pub fn files(text: &str) -> Vec<(String, String)> {
    parse(text).files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_start_files_and_what_precedes_them_is_the_preamble() {
        let fixture = parse("//# complete\n//- a.dust\nid a/1\n\n//- b/c.json\n{}");
        assert_eq!(fixture.preamble, "//# complete\n");
        assert_eq!(
            fixture.files,
            [
                ("a.dust".to_owned(), "id a/1\n\n".to_owned()),
                ("b/c.json".to_owned(), "{}".to_owned())
            ]
        );
        assert_eq!(files("no header\n"), []);
    }
}

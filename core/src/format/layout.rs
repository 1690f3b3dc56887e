//! The layout tree the DUST and JSONC writers render, and the rendering rules (DUST's
//! alignment and inline width; JSON's one element a line).
//!
//! Both the value-based writer and the comment-preserving formatter build this tree, so the
//! canonical layout is decided in one place. Scalars and keys arrive already spelled.

/// Inline containers must end at or before this column.
pub(crate) const MAX_WIDTH: usize = 80;

/// A spelled piece of text and its width in characters.
#[derive(Debug, Clone)]
pub(crate) struct Text {
    pub text: String,
    pub width: usize,
}

impl Text {
    pub fn new(text: String) -> Text {
        let width = text.chars().count();
        Text { text, width }
    }
}

#[derive(Debug)]
pub(crate) enum Tree {
    Scalar(Text),
    Container(Container),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Object,
    Array,
}

#[derive(Debug)]
pub(crate) struct Container {
    kind: Kind,
    /// A comment on the line of the opening bracket, before any entry.
    open_comment: Option<String>,
    /// Entries, comments on their own lines and blank lines, in order. Normalised: no blank
    /// first or last and never two in a row.
    elements: Vec<Element>,
    /// Whether any comment lies inside, at any depth; such a container is never inline.
    has_comment: bool,
}

#[derive(Debug)]
pub(crate) enum Element {
    Blank,
    Comment(String),
    Entry(Entry),
}

#[derive(Debug)]
pub(crate) struct Entry {
    /// The spelled key of an object member; `None` for an array item.
    pub key: Option<Text>,
    pub value: Tree,
    /// A comment after the value on the same line.
    pub trailing: Option<String>,
}

impl Container {
    pub fn new(kind: Kind, open_comment: Option<String>, elements: Vec<Element>) -> Container {
        let elements = normalise_blanks(elements);
        let has_comment = open_comment.is_some()
            || elements.iter().any(|element| match element {
                Element::Blank => false,
                Element::Comment(_) => true,
                Element::Entry(entry) => {
                    entry.trailing.is_some()
                        || matches!(&entry.value, Tree::Container(c) if c.has_comment)
                }
            });
        Container { kind, open_comment, elements, has_comment }
    }

    /// The same container with `extra` elements appended.
    pub fn with_extra(self, extra: impl IntoIterator<Item = Element>) -> Container {
        let mut elements = self.elements;
        elements.extend(extra);
        Container::new(self.kind, self.open_comment, elements)
    }

    fn is_empty(&self) -> bool {
        self.elements.is_empty() && self.open_comment.is_none()
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.elements.iter().filter_map(|element| match element {
            Element::Entry(entry) => Some(entry),
            _ => None,
        })
    }

    fn brackets(&self) -> (char, char) {
        match self.kind {
            Kind::Object => ('{', '}'),
            Kind::Array => ('[', ']'),
        }
    }
}

/// Collapse runs of blank lines into one and drop them at the start and end.
pub(crate) fn normalise_blanks(elements: Vec<Element>) -> Vec<Element> {
    normalise(elements, |e| matches!(e, Element::Blank))
}

fn normalise<T>(items: impl IntoIterator<Item = T>, is_blank: impl Fn(&T) -> bool) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if is_blank(&item) && out.last().is_none_or(&is_blank) {
            continue;
        }
        out.push(item);
    }
    if out.last().is_some_and(&is_blank) {
        out.pop();
    }
    out
}

/// A whole document.
#[derive(Debug)]
pub(crate) enum Document {
    /// DUST's implicit top-level object: members one a line, no braces.
    Object(Container),
    /// A top-level value written with its brackets (a DUST array, or any JSONC value), with
    /// the comments and blank lines before and after it.
    Bracketed {
        /// Comments and blank lines before the value.
        header: Vec<Element>,
        root: Tree,
        /// A comment after the value on its last line.
        trailing: Option<String>,
        /// Comments and blank lines after the value.
        footer: Vec<Element>,
    },
}

impl Document {
    /// The document as canonical DUST.
    pub fn render(&self) -> String {
        self.render_with(|root, out| match root {
            Tree::Container(container) if !container.is_empty() => write_block(container, 0, out),
            _ => write_inline(root, out),
        })
    }

    /// The document as canonical JSONC: `serde_json`'s pretty printing (two spaces, every
    /// non-empty container one element a line) with the comments and blank lines, and no
    /// trailing comma.
    pub fn render_json(&self) -> String {
        match self {
            // The implicit object is DUST's; a JSON layout is always bracketed.
            Document::Object(object) => {
                let mut out = String::new();
                write_json(object, 0, &mut out);
                out.push('\n');
                out
            }
            Document::Bracketed { .. } => self.render_with(|root, out| match root {
                Tree::Container(container) => write_json(container, 0, out),
                Tree::Scalar(text) => out.push_str(&text.text),
            }),
        }
    }

    fn render_with(&self, write_root: impl Fn(&Tree, &mut String)) -> String {
        let mut out = String::new();
        match self {
            Document::Object(object) => write_elements(object, 0, &mut out),
            Document::Bracketed { header, root, trailing, footer } => {
                // One sequence of lines, so that blank lines are normalised across the value.
                let lines = header.iter().map(Some).chain([None]).chain(footer.iter().map(Some));
                for line in normalise(lines, |l| matches!(l, Some(Element::Blank))) {
                    match line {
                        Some(Element::Comment(comment)) => out.push_str(comment),
                        Some(_) => {}
                        None => {
                            write_root(root, &mut out);
                            if let Some(comment) = trailing {
                                out.push(' ');
                                out.push_str(comment);
                            }
                        }
                    }
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// Write a container as pretty JSON from its opening bracket (already at the right place) to
/// its closing bracket at `indent`: empty as `[]` or `{}`, else one element a line, each
/// entry followed by a comma unless it is the last, then by its trailing comment.
fn write_json(container: &Container, indent: usize, out: &mut String) {
    let (open, close) = container.brackets();
    out.push(open);
    if container.is_empty() {
        out.push(close);
        return;
    }
    if let Some(comment) = &container.open_comment {
        out.push(' ');
        out.push_str(comment);
    }
    out.push('\n');
    let last_entry =
        container.elements.iter().rposition(|element| matches!(element, Element::Entry(_)));
    for (i, element) in container.elements.iter().enumerate() {
        match element {
            Element::Blank => {}
            Element::Comment(comment) => {
                push_indent(indent + 2, out);
                out.push_str(comment);
            }
            Element::Entry(entry) => {
                push_indent(indent + 2, out);
                if let Some(key) = &entry.key {
                    out.push_str(&key.text);
                    out.push_str(": ");
                }
                match &entry.value {
                    Tree::Scalar(text) => out.push_str(&text.text),
                    Tree::Container(inner) => write_json(inner, indent + 2, out),
                }
                if Some(i) != last_entry {
                    out.push(',');
                }
                if let Some(comment) = &entry.trailing {
                    out.push(' ');
                    out.push_str(comment);
                }
            }
        }
        out.push('\n');
    }
    push_indent(indent, out);
    out.push(close);
}

/// The width of `tree` written inline, if it holds no comment and is at most `limit` wide.
/// Stops counting once past the limit, so deciding a layout costs O(limit) per container.
fn inline_width(tree: &Tree, limit: usize) -> Option<usize> {
    let container = match tree {
        Tree::Scalar(text) => return (text.width <= limit).then_some(text.width),
        Tree::Container(container) => container,
    };
    if container.has_comment {
        return None;
    }
    // The brackets, plus one space between each pair of parts.
    let mut width = 2usize;
    let mut first = true;
    for entry in container.entries() {
        let separator = usize::from(!first);
        first = false;
        if let Some(key) = &entry.key {
            width += separator + key.width + 1;
        } else {
            width += separator;
        }
        let rest = limit.checked_sub(width)?;
        width += inline_width(&entry.value, rest)?;
    }
    (width <= limit).then_some(width)
}

fn write_inline(tree: &Tree, out: &mut String) {
    let container = match tree {
        Tree::Scalar(text) => return out.push_str(&text.text),
        Tree::Container(container) => container,
    };
    let (open, close) = container.brackets();
    out.push(open);
    for (i, entry) in container.entries().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if let Some(key) = &entry.key {
            out.push_str(&key.text);
            out.push(' ');
        }
        write_inline(&entry.value, out);
    }
    out.push(close);
}

/// Write a value that starts at `column` on a line indented by `indent`: inline when it fits
/// and holds no comment, else as a block whose closing bracket is at `indent`.
pub(crate) fn write_value(tree: &Tree, indent: usize, column: usize, out: &mut String) {
    match tree {
        Tree::Container(container)
            if inline_width(tree, MAX_WIDTH.saturating_sub(column)).is_none() =>
        {
            write_block(container, indent, out);
        }
        _ => write_inline(tree, out),
    }
}

/// Write a container one element a line, from its opening bracket (already at the right
/// place) to its closing bracket at `indent`.
fn write_block(container: &Container, indent: usize, out: &mut String) {
    let (open, close) = container.brackets();
    out.push(open);
    if let Some(comment) = &container.open_comment {
        out.push(' ');
        out.push_str(comment);
    }
    out.push('\n');
    write_elements(container, indent + 2, out);
    push_indent(indent, out);
    out.push(close);
}

/// Write the elements of a container, one a line at `indent`, values of members aligned.
fn write_elements(container: &Container, indent: usize, out: &mut String) {
    let key_width = container.entries().filter_map(|e| e.key.as_ref()).map(|k| k.width).max();
    for element in &container.elements {
        match element {
            Element::Blank => {}
            Element::Comment(comment) => {
                push_indent(indent, out);
                out.push_str(comment);
            }
            Element::Entry(entry) => {
                push_indent(indent, out);
                let mut column = indent;
                if let (Some(key), Some(key_width)) = (&entry.key, key_width) {
                    out.push_str(&key.text);
                    push_indent(value_column(key_width) - key.width, out);
                    column += value_column(key_width);
                }
                write_value(&entry.value, indent, column, out);
                if let Some(comment) = &entry.trailing {
                    out.push(' ');
                    out.push_str(comment);
                }
            }
        }
        out.push('\n');
    }
}

/// The column (from the members' indent) where the values of an object's members start: two
/// past its widest key.
pub fn value_column(widest_key: usize) -> usize {
    widest_key + 2
}

fn push_indent(n: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', n));
}

//! What a store-relative path names for a front that shows the store as files (the mount):
//! the kinds of path, and the names editors and tools give their temporary files. The rules of
//! saves (`saves`) and of derived files (`projections`) both build on this vocabulary, so
//! neither imports the other for it.

/// What a store-relative path names, for a front that shows the store as files.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PathKind {
    /// A document, or a code file (a file a language server covers, see `saves::CodeSaves`): every
    /// save goes through the save authority as one transaction. A code file's bytes are
    /// committed as they are, never analysed by the store.
    Document,
    /// An editor's or a tool's temporary file: held outside the store until it is renamed onto
    /// a document path, and never written into the store.
    Scratch,
    /// Stardust's private folder or something in it (read-only).
    Private,
    /// A derived file (SPEC §19: `.stardust/json/<path>.json`, `.stardust/entities/<id>.json`,
    /// see `projections`): read as generated JSON; a save, a create or a delete of it is a
    /// change of the document it derives from, through the save authority.
    Derived,
    /// Any other file: passed through as an ordinary file, never validated.
    Plain,
}

/// Whether a file name (one path component) is a temporary file of a common editor or tool:
/// Vim's swap files (`.x.swp`) and write probe (`4913`, a name of digits), backups (`x~`),
/// `sed -i` (`sedAbC123`), Python's `mkstemp` (`tmpk3j_x9a1`, with any suffix), `.tmp`
/// prefixes and suffixes, GIO's `.goutputstream-XXXXXX`, and Emacs' `.#x` and `#x#`.
pub fn is_scratch_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let digits = !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit);
    let vim_swap = name.starts_with('.')
        && name.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && ext.len() == 3
                && ext.starts_with("sw")
                && ext.as_bytes()[2].is_ascii_lowercase()
        });
    let sed = bytes.len() == 9
        && name.starts_with("sed")
        && bytes[3..].iter().all(u8::is_ascii_alphanumeric);
    let mkstemp = bytes.len() >= 11
        && name.starts_with("tmp")
        && bytes[3..11].iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
        && (bytes.len() == 11 || bytes[11] == b'.');
    let emacs =
        name.starts_with(".#") || (bytes.len() > 2 && name.starts_with('#') && name.ends_with('#'));
    digits
        || vim_swap
        || sed
        || mkstemp
        || emacs
        || name.ends_with('~')
        || name.starts_with(".tmp")
        || name.ends_with(".tmp")
        || name.starts_with(".goutputstream-")
}

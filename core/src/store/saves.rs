//! Rules for saves that arrive as file operations (the FUSE mount): what kind of file a path
//! names, which names are editors' scratch files, and how the bytes of a refused save are kept
//! with their diagnostics under `.stardust/rejected/`.

use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::scan;
use crate::text::{Encoding, LineIndex};

use super::error::{StoreError, StoreResult};
use super::{PRIVATE_DIR, Store, rfc3339};

/// Where refused saves are kept, inside [`PRIVATE_DIR`].
pub const REJECTED_DIR: &str = "rejected";

/// What a store-relative path names, for a front that shows the store as files.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PathKind {
    /// A document: every save goes through the save authority.
    Document,
    /// An editor's or a tool's temporary file: held outside the store until it is renamed onto
    /// a document path, and never written into the store.
    Scratch,
    /// Stardust's private folder or something in it.
    Private,
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

/// Distinguishes rejected files written in the same millisecond.
static REJECTED_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Store {
    /// What the store-relative path `rel` names. Files under `.git/` and the `ignore` globs
    /// are plain whatever their names, so tools that own those folders see ordinary files.
    pub fn path_kind(&self, rel: &str) -> PathKind {
        let first = rel.split('/').next().unwrap_or("");
        if first == PRIVATE_DIR {
            return PathKind::Private;
        }
        let config = &self.inner.ctx.config;
        if scan::PRIVATE_DIRS.contains(&first) || config.ignore_set.is_match(rel) {
            return PathKind::Plain;
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if is_scratch_name(name) {
            PathKind::Scratch
        } else if scan::is_document_path(config, rel) {
            PathKind::Document
        } else {
            PathKind::Plain
        }
    }

    /// The folder holding refused saves (it may not exist yet).
    pub fn rejected_dir(&self) -> PathBuf {
        self.inner.root.join(PRIVATE_DIR).join(REJECTED_DIR)
    }

    /// Keep the bytes of a refused save of the document `path`, and beside them a `.why` file
    /// listing why (`path:line:col: severity[code] message` per problem, or the error's
    /// message). Both are synced before this returns. Returns the kept file's name inside
    /// [`Store::rejected_dir`].
    pub fn keep_rejected(&self, path: &str, bytes: &[u8], why: &StoreError) -> StoreResult<String> {
        let dir = self.rejected_dir();
        fs::create_dir_all(&dir)
            .map_err(|e| StoreError::io(format!("cannot create {}", dir.display()), e))?;
        let time = rfc3339(SystemTime::now());
        let stamp: String = time.chars().filter(|c| !matches!(c, '-' | ':')).collect();
        let flat = path.replace('%', "%25").replace('/', "%2F");
        loop {
            let n = REJECTED_COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!("{stamp}-{n}-{flat}");
            // The `.why` goes first, so whoever sees the kept bytes finds the reason beside them.
            let text = self.why_text(path, bytes, why, &time);
            match write_new(&dir.join(format!("{name}.why")), text.as_bytes()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(StoreError::io(
                        format!("cannot write why the save of {path} was refused"),
                        e,
                    ));
                }
            }
            write_new(&dir.join(&name), bytes).map_err(|e| {
                StoreError::io(format!("cannot keep the refused save of {path}"), e)
            })?;
            if let Ok(folder) = fs::File::open(&dir) {
                // Best effort: the files themselves are synced.
                let _ = folder.sync_all();
            }
            return Ok(name);
        }
    }

    fn why_text(&self, path: &str, bytes: &[u8], why: &StoreError, time: &str) -> String {
        let mut out = format!("the save of {path} at {time} was refused [{}]\n", why.code());
        let StoreError::Refused { problems } = why else {
            out.push_str(&why.to_string());
            out.push('\n');
            return out;
        };
        let snapshot = self.snapshot();
        let saved = String::from_utf8_lossy(bytes);
        for (doc_path, d) in problems {
            let (text, index) = if doc_path == path {
                (saved.to_string(), LineIndex::new(&saved))
            } else {
                match snapshot.analysis.document(doc_path) {
                    Some(doc) => (doc.text.to_string(), doc.line_index.clone()),
                    None => (String::new(), LineIndex::new("")),
                }
            };
            let pos = index.position(&text, d.span.start, Encoding::Utf32);
            out.push_str(&format!(
                "{doc_path}:{}:{}: {}[{}] {}\n",
                pos.line + 1,
                pos.column + 1,
                d.severity.as_str(),
                d.code,
                d.message
            ));
        }
        out
    }
}

fn write_new(path: &std::path::Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Change, OpenOptions, Origin};

    #[test]
    fn scratch_names() {
        let scratch = [
            ".dune.dust.swp",
            ".dune.dust.swo",
            "4913",
            "5036",
            "dune.dust~",
            "sedAbC123",
            "tmpk3j_x9a1",
            "tmpk3j_x9a1.json",
            ".tmp-dune.dust",
            "dune.json.tmp",
            ".goutputstream-ABC123",
            ".#dune.dust",
            "#dune.dust#",
        ];
        for name in scratch {
            assert!(is_scratch_name(name), "{name} should be scratch");
        }
        let not =
            ["dune.dust", "README.md", "sed.json", "tmp.json", "swp", ".swp", "a.sw", "#", "notes"];
        for name in not {
            assert!(!is_scratch_name(name), "{name} should not be scratch");
        }
    }

    fn store(files: &[(&str, &str)]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        let store = Store::open(dir.path(), OpenOptions { watch: false, ..OpenOptions::default() })
            .unwrap();
        (dir, store)
    }

    #[test]
    fn path_kinds() {
        let (_dir, store) = store(&[("stardust.toml", "[store]\nignore = [\"vendor/**\"]\n")]);
        let cases = [
            ("books/dune.dust", PathKind::Document),
            ("people/frank.json", PathKind::Document),
            ("books/.dune.dust.swp", PathKind::Scratch),
            ("books/4913", PathKind::Scratch),
            ("books/dune.dust~", PathKind::Scratch),
            ("README.md", PathKind::Plain),
            ("vendor/x.json", PathKind::Plain),
            ("vendor/4913", PathKind::Plain),
            (".git/x.json", PathKind::Plain),
            (".stardust/log/x", PathKind::Private),
            (".stardust", PathKind::Private),
        ];
        for (path, kind) in cases {
            assert_eq!(store.path_kind(path), kind, "{path}");
        }
    }

    #[test]
    fn keeps_refused_bytes_with_why() {
        let (_dir, store) = store(&[("a.json", "{\"id\": \"a\"}\n")]);
        let bad = b"{\"id\": \"a\",\n  oops}\n".to_vec();
        let err = store.commit(Origin::Mount, vec![Change::put("books/a.json", bad.clone())]);
        let err = err.unwrap_err();
        assert_eq!(err.code(), "refused");
        let name = store.keep_rejected("books/a.json", &bad, &err).unwrap();
        assert!(name.ends_with("-books%2Fa.json"), "{name}");
        let kept = fs::read(store.rejected_dir().join(&name)).unwrap();
        assert_eq!(kept, bad);
        let why = fs::read_to_string(store.rejected_dir().join(format!("{name}.why"))).unwrap();
        let lines: Vec<&str> = why.lines().collect();
        assert!(lines[0].starts_with("the save of books/a.json at "), "{why}");
        assert!(lines[0].ends_with(" was refused [refused]"), "{why}");
        // Positions in the refused bytes, and in the other documents the save would break.
        assert!(lines.iter().any(|l| l.starts_with("books/a.json:2:3: error[syntax] ")), "{why}");
        assert!(lines.iter().any(|l| l.starts_with("a.json:1:8: error[duplicate-id] ")), "{why}");

        // A second refusal of the same path in the same millisecond gets its own file.
        let other = store.keep_rejected("books/a.json", b"x", &err).unwrap();
        assert_ne!(other, name);
    }
}

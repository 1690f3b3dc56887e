//! How clients that count in lines and characters, or name data by entity id, address a
//! place in the store: store paths from what a client gives (relative, absolute or `file:`
//! URIs, under the store or a mount of it) and back in the client's form, 1-based positions,
//! entity ids with JSON Pointers, and the entity a location is in (`crate::answers` writes
//! locations).

use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use crate::analysis::{Analysis, Document};
use crate::error::Error;
use crate::text::{Encoding, Position, Span};

/// Where a client's paths start: the store's own folder, or a mount of the store (SPEC §12,
/// §13). A mount shows the store's documents at the same relative paths, so one store path has
/// one place under each root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    Store,
    /// The mount's folder, canonical.
    Mount(PathBuf),
}

/// A path a client gave, resolved: the store path it names and the root it was given under
/// (a relative path is under the store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub path: String,
    pub root: Root,
}

/// The roots a store's documents can be addressed under: the store's folder and its mounts.
/// Mounts are those recorded (the core's own, `stardust serve --mount`) and any other folder
/// whose `.stardust/store.json` names this store, found when a path under it is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    store: PathBuf,
    mounts: Vec<PathBuf>,
}

impl Roots {
    /// The roots of the store at `store`, which must be canonical.
    pub fn new(store: impl Into<PathBuf>) -> Roots {
        Roots { store: store.into(), mounts: Vec::new() }
    }

    /// These roots and the mount at `dir` (made canonical; a folder that cannot be is
    /// skipped, as nothing can be addressed under it).
    pub fn with_mount(mut self, dir: &Path) -> Roots {
        if let Ok(dir) = dir.canonicalize()
            && !self.mounts.contains(&dir)
        {
            self.mounts.push(dir);
        }
        self
    }

    pub fn store(&self) -> &Path {
        &self.store
    }

    /// The store path `given` names: a path relative to the store root, an absolute path or a
    /// `file:` URI under the store or a mount of it. `..` is applied first, then symbolic
    /// links (for the part of the path that exists), so neither can lead out: a path that
    /// ends outside every root is `outside-store`.
    pub fn to_store_path(&self, given: &str) -> Result<Resolved, Error> {
        if given.is_empty() {
            return Err(Error::InvalidArguments(
                "`path` is empty; give a document path relative to the store root".to_owned(),
            ));
        }
        if given.starts_with("file:") {
            return self.uri_to_store_path(given);
        }
        self.resolve(PathBuf::from(given))
    }

    /// The store path a `file:` URI names (see [`Roots::to_store_path`]); any other URI is
    /// `invalid-arguments`.
    pub fn uri_to_store_path(&self, uri: &str) -> Result<Resolved, Error> {
        self.resolve(uri_path(uri)?)
    }

    fn resolve(&self, path: PathBuf) -> Result<Resolved, Error> {
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::InvalidArguments(
                "`path` holds a NUL byte, which no file path can; give the document's path \
                 without it"
                    .to_owned(),
            ));
        }
        let outside = || Error::OutsideStore { path: path.clone(), store: self.store.clone() };
        let normal = normalise(&self.store.join(&path)).ok_or_else(outside)?;
        let real = real_path(&normal).ok_or_else(outside)?;
        let (root, dir) = self.root_holding(&real).ok_or_else(outside)?;
        let rel = real.strip_prefix(&dir).map_err(|_| outside())?;
        let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
        if parts.is_empty() || parts.len() != rel.iter().count() {
            return Err(outside());
        }
        Ok(Resolved { path: parts.join("/"), root })
    }

    /// The root that holds the folder `dir` (a client's root folder), if any.
    pub fn root_of(&self, dir: &Path) -> Option<Root> {
        let real = real_path(&normalise(dir)?)?;
        self.root_holding(&real).map(|(root, _)| root)
    }

    /// The absolute path of store path `path` under `root`.
    pub fn from_store_path(&self, root: &Root, path: &str) -> PathBuf {
        let dir = match root {
            Root::Store => &self.store,
            Root::Mount(dir) => dir,
        };
        dir.join(path)
    }

    /// The `file:` URI of store path `path` under `root`.
    pub fn uri(&self, root: &Root, path: &str) -> String {
        file_uri(&self.from_store_path(root, path))
    }

    /// The innermost root holding the canonical path `real`, and its folder.
    fn root_holding(&self, real: &Path) -> Option<(Root, PathBuf)> {
        let known = std::iter::once((Root::Store, &self.store))
            .chain(self.mounts.iter().map(|m| (Root::Mount(m.clone()), m)))
            .filter(|(_, dir)| real.starts_with(dir))
            .max_by_key(|(_, dir)| dir.as_os_str().len());
        if let Some((root, dir)) = known {
            return Some((root, dir.clone()));
        }
        real.ancestors()
            .find(|dir| mount_store(dir).is_some_and(|store| store == self.store))
            .map(|dir| (Root::Mount(dir.to_owned()), dir.to_owned()))
    }
}

/// The store-relative, `/`-separated path of `given`: relative to the store root, absolute or
/// a `file:` URI inside it or inside a mount of it (see [`Roots::to_store_path`]). `root` must
/// be canonical.
pub fn store_path(root: &Path, given: &str) -> Result<String, Error> {
    Roots::new(root).to_store_path(given).map(|r| r.path)
}

/// The store a mount shows lives with the rest of store discovery (`scan`, a lower layer).
pub use crate::scan::mount_store;

/// `path` with `.` and `..` applied, without reading the file system; `None` when `..` climbs
/// above `/`.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !normal.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    Some(normal)
}

/// Where `normal` really is: its longest existing ancestor with symbolic links resolved, then
/// the rest of its names. `None` when a name that exists cannot be resolved (a dangling link:
/// a document created there would land wherever it points).
fn real_path(normal: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut at = normal;
    loop {
        match std::fs::canonicalize(at) {
            Ok(real) => {
                return Some(rest.iter().rev().fold(real, |path, name| path.join(name)));
            }
            Err(_) if std::fs::symlink_metadata(at).is_ok() => return None,
            Err(_) => {
                rest.push(at.file_name()?.to_owned());
                at = at.parent()?;
            }
        }
    }
}

/// The local path of a `file:` URI (`file:///abs/path` or `file://localhost/abs/path`),
/// percent-decoded; its query and fragment, if any, are not part of the path.
pub fn uri_path(uri: &str) -> Result<PathBuf, Error> {
    let invalid = |why: &str| {
        Error::InvalidArguments(format!(
            "`{uri}` is not a file URI of this machine ({why}); give file:///absolute/path or a \
             path"
        ))
    };
    let rest =
        uri.strip_prefix("file://").ok_or_else(|| invalid("it does not start with file://"))?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return Err(invalid("it names another host"));
    }
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let bytes = rest.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                i += 3;
            }
            (b'%', _, _) => return Err(invalid("a `%` is not followed by two hex digits")),
            (b, _, _) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    Ok(PathBuf::from(std::ffi::OsString::from_vec(decoded)))
}

/// The `file:` URI of the absolute path `path`, percent-encoding what a URI path cannot hold
/// (the same bytes as the `url` crate's `Url::from_file_path`, so URIs compare equal).
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_encoded_bytes() {
        if !(0x20..0x7f).contains(&b) || b" \"#<>?`{}%".contains(&b) {
            uri.push_str(&format!("%{b:02X}"));
        } else {
            uri.push(b as char);
        }
    }
    uri
}

/// The byte offset of a 1-based `line` and `column` (counted in characters) in `doc`.
pub fn position_offset(doc: &Document, line: u64, column: u64) -> Result<u32, Error> {
    let invalid = || {
        let lines = doc.line_index.line_count();
        Error::InvalidArguments(format!(
            "line {line} column {column} is not a position in {} ({lines} lines); lines and \
             columns are 1-based, columns counted in characters",
            doc.path
        ))
    };
    let line = u32::try_from(line.checked_sub(1).ok_or_else(invalid)?).map_err(|_| invalid())?;
    let column =
        u32::try_from(column.checked_sub(1).ok_or_else(invalid)?).map_err(|_| invalid())?;
    doc.line_index.offset(&doc.text, Position { line, column }, Encoding::Utf32).ok_or_else(invalid)
}

/// The document and span of the value at JSON Pointer `pointer` inside entity `id`; the empty
/// pointer designates the entity's `id` value.
pub fn entity_place(analysis: &Analysis, id: &str, pointer: &str) -> Result<(String, Span), Error> {
    let loc = analysis.entity(id).first().ok_or_else(|| {
        Error::NotFound(match analysis.closest_ids(id, 1).first() {
            Some(near) => format!("no entity has the id '{id}'; did you mean '{near}'?"),
            None => format!("no entity has the id '{id}'; check the id"),
        })
    })?;
    if let [_, _, ..] = analysis.entity(id) {
        let paths: Vec<&str> = analysis.entity(id).iter().map(|l| &*l.path).collect();
        return Err(Error::AmbiguousPosition(format!(
            "{} entities have the id '{id}' (in {}); give `path` and `position` instead, or \
             fix the duplicate id",
            paths.len(),
            paths.join(", ")
        )));
    }
    let missing = || Error::NotFound(format!("no entity has the id '{id}'; check the id"));
    let doc = analysis.document(&loc.path).ok_or_else(missing)?;
    let entity = doc.entities.get(loc.index).ok_or_else(missing)?;
    if pointer.is_empty() {
        return Ok((doc.path.clone(), entity.id_span));
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(Error::InvalidArguments(format!(
            "`pointer` '{pointer}' is not a JSON Pointer; write it like /author or /tags/0"
        )));
    };
    let tokens: Vec<String> =
        rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
    let (node, value) = doc.entity_node(loc.index).ok_or_else(missing)?;
    let (found, _, _) = node.at_pointer(value, &tokens).ok_or_else(|| {
        let fields: Vec<&str> =
            value.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
        Error::NotFound(format!(
            "entity '{id}' has no value at {pointer}; its fields are {}",
            fields.join(", ")
        ))
    })?;
    Ok((doc.path.clone(), found.span))
}

/// The id of the entity whose object covers `offset`.
pub fn entity_at(doc: &Document, offset: u32) -> Option<&str> {
    doc.entities
        .iter()
        .filter(|e| e.span.contains_inclusive(offset))
        .min_by_key(|e| e.span.len())
        .and_then(|e| e.id.as_deref())
}

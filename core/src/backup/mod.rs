//! Backups (SPEC §10): definitions of the built-in `backup` entity type (its schema is in
//! `crate::builtin`), and archives of a store as of one seq that can be verified and restored
//! byte for byte.
//!
//! A backup definition is an entity `{id backup/nightly type backup include ['**'] target
//! '/var/backups/library' keep 7}`. [`run`] writes a tar archive of the files `include`
//! matches (never `.stardust/`) to `target`, named `<id>.<seq>.<time>.tar` with `/` in the id
//! written `+`, then deletes all but the newest `keep` archives of that definition there.
//! Documents are taken from one store snapshot, so they are exactly as of the archive's seq;
//! other files are read from disk as the run finds them.
//!
//! The archive format and its checks are in [`archive`]; [`verify`] detects any damage and
//! [`restore`] writes the files back, checking each one as it goes.

mod archive;
mod restore;

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use crate::store::{Snapshot, Store, StoreError, rfc3339};

pub use archive::{
    EntryKind, MANIFEST_PATH, MANIFEST_SUM_PATH, Manifest, ManifestEntry, Verified, verify,
};
pub use restore::{Restored, restore};

/// The built-in entity type of backup definitions.
pub use crate::builtin::BACKUP as TYPE;
/// How many archives a definition keeps when it does not say.
pub use crate::builtin::DEFAULT_BACKUP_KEEP as DEFAULT_KEEP;
/// The JSON Schema of backup definitions, used when a store has no `backup` schema of its own.
pub use crate::builtin::backup_schema as definition_schema;

/// Why a backup operation failed. `code()` is the stable wire name (SPEC §16).
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0}")]
    NotFound(String),

    #[error("{0}")]
    InvalidArguments(String),

    #[error("the backup definition '{id}' is invalid: {message}")]
    InvalidDefinition { id: String, message: String },

    #[error(
        "the backup target {target} is inside the store {store}; choose a folder outside the \
         store (an archive inside it would be archived again by the next run)"
    )]
    TargetInsideStore { target: PathBuf, store: PathBuf },

    #[error(
        "cannot write to the backup target {target}: {source}; create the folder and make it \
         writable, or change the definition's target"
    )]
    TargetUnwritable {
        target: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{archive} is not a sound backup: {reason}")]
    Corrupt { archive: PathBuf, reason: String },

    #[error(
        "{dir} is not empty; restore into an empty or new folder, or force the restore to write \
         over what is there (`--force`)"
    )]
    NotEmpty { dir: PathBuf },

    #[error("{path} changed while it was being archived; run the backup again")]
    Changed { path: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error(transparent)]
    Store(#[from] StoreError),
}

impl BackupError {
    /// The stable kebab-case code shared by every front (SPEC §16).
    pub fn code(&self) -> crate::Code {
        match self {
            BackupError::NotFound(_) => crate::Code::NotFound,
            BackupError::InvalidArguments(_)
            | BackupError::InvalidDefinition { .. }
            | BackupError::TargetUnwritable { .. }
            | BackupError::Corrupt { .. } => crate::Code::InvalidArguments,
            BackupError::TargetInsideStore { .. } | BackupError::NotEmpty { .. } => {
                crate::Code::Refused
            }
            BackupError::Changed { .. } => crate::Code::Conflict,
            BackupError::Io { .. } => crate::Code::Internal,
            BackupError::Store(err) => err.code(),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> BackupError {
        BackupError::Io { context: context.into(), source }
    }
}

pub type BackupResult<T> = Result<T, BackupError>;

/// Which step a [`Progress`] report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Archiving,
    Verifying,
    Restoring,
}

/// How far an operation is: `done` of `total` bytes (file contents while archiving, archive
/// bytes while verifying and restoring), and the path being worked on.
#[derive(Debug)]
pub struct Progress<'a> {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
    pub path: &'a str,
}

/// A backup definition, read from its entity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    pub id: String,
    pub include: Vec<String>,
    pub target: String,
    pub keep: u64,
}

impl Definition {
    /// Read the definition from an entity value, saying exactly what is wrong with it.
    pub fn from_value(id: &str, value: &Value) -> BackupResult<Definition> {
        let invalid =
            |message: String| BackupError::InvalidDefinition { id: id.to_owned(), message };
        let ty = value.get("type").and_then(Value::as_str).unwrap_or_default();
        if ty != TYPE {
            return Err(invalid(format!(
                "it is an entity of type '{ty}', not '{TYPE}'; give the id of a backup definition"
            )));
        }
        let target = match value.get("target") {
            Some(Value::String(t)) if !t.is_empty() => t.clone(),
            Some(other) if !other.is_null() => {
                return Err(invalid(format!(
                    "'target' must be a folder path (a non-empty string), found {other}"
                )));
            }
            _ => {
                return Err(invalid(
                    "it has no 'target'; add the folder to write archives to".to_owned(),
                ));
            }
        };
        let include = match value.get("include") {
            None | Some(Value::Null) => vec!["**".to_owned()],
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|item| match item {
                    Value::String(s) if !s.is_empty() => Ok(s.clone()),
                    other => Err(invalid(format!(
                        "'include' must list globs (non-empty strings), found {other}"
                    ))),
                })
                .collect::<BackupResult<Vec<String>>>()?,
            Some(other) => {
                return Err(invalid(format!(
                    "'include' must be a non-empty list of globs such as ['**'], found {other}"
                )));
            }
        };
        let keep = match value.get("keep") {
            None | Some(Value::Null) => DEFAULT_KEEP,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => n,
                _ => {
                    return Err(invalid(format!(
                        "'keep' must be a whole number of archives, at least 1, found {v}"
                    )));
                }
            },
        };
        Ok(Definition { id: id.to_owned(), include, target, keep })
    }

    fn globs(&self) -> BackupResult<GlobSet> {
        let mut set = GlobSetBuilder::new();
        for pattern in &self.include {
            let glob = Glob::new(pattern).map_err(|err| BackupError::InvalidDefinition {
                id: self.id.clone(),
                message: format!("'include' has an invalid glob '{pattern}': {}", err.kind()),
            })?;
            set.add(glob);
        }
        set.build().map_err(|err| BackupError::InvalidDefinition {
            id: self.id.clone(),
            message: format!("'include' cannot be used: {err}"),
        })
    }
}

/// What a run wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The new archive.
    pub archive: PathBuf,
    /// The seq the archived documents are as of.
    pub seq: u64,
    /// Files, folders and links archived.
    pub entries: usize,
    /// The archive's size in bytes.
    pub bytes: u64,
    /// Older archives of the definition deleted to keep only the newest `keep`.
    pub removed: Vec<PathBuf>,
}

/// Find the backup definition `id` in `snapshot`.
pub fn definition(snapshot: &Snapshot, id: &str) -> BackupResult<Definition> {
    let analysis = &snapshot.analysis;
    let locs = analysis.entity(id);
    let loc = match locs {
        [] => {
            let hint = match analysis.closest_ids(id, 1).first() {
                Some(close) => format!("; did you mean '{close}'?"),
                None => "; define it as an entity of type 'backup'".to_owned(),
            };
            return Err(BackupError::NotFound(format!("no entity has the id '{id}'{hint}")));
        }
        [one] => one,
        many => {
            let paths: Vec<&str> = many.iter().map(|l| &*l.path).collect();
            return Err(BackupError::InvalidDefinition {
                id: id.to_owned(),
                message: format!(
                    "the id is used by {} entities (in {}); make it unique",
                    many.len(),
                    paths.join(", ")
                ),
            });
        }
    };
    let value = analysis
        .document(&loc.path)
        .and_then(|doc| doc.entity_node(loc.index))
        .map(|(_, value)| value)
        .ok_or_else(|| BackupError::NotFound(format!("the entity '{id}' could not be read")))?;
    Definition::from_value(id, value)
}

/// Archive the store as of its current snapshot according to the backup definition `id`, and
/// keep only the definition's newest `keep` archives in its target.
pub fn run(
    store: &Store,
    id: &str,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> BackupResult<Written> {
    let snapshot = store.snapshot();
    let definition = definition(&snapshot, id)?;
    let globs = definition.globs()?;
    let root = store.root();
    let target = resolve_target(root, &definition.target);
    if inside(root, &target) {
        return Err(BackupError::TargetInsideStore { target, store: root.to_owned() });
    }
    let unwritable =
        |source: std::io::Error| BackupError::TargetUnwritable { target: target.clone(), source };
    std::fs::create_dir_all(&target).map_err(unwritable)?;

    let entries = archive::collect(root, &snapshot, &globs)?;
    let mut now = SystemTime::now();
    let (name, created) = loop {
        let created = rfc3339(now);
        let name = archive_name(id, snapshot.seq, &created);
        if !target.join(&name).exists() {
            break (name, created);
        }
        // Two runs in one millisecond: the later one is named a millisecond later.
        now += Duration::from_millis(1);
    };
    let partial = target.join(format!(".{name}.partial"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&partial)
        .map_err(unwritable)?;
    let header = archive::Header {
        definition: id.to_owned(),
        store: root.display().to_string(),
        seq: snapshot.seq,
        created,
        include: definition.include.clone(),
    };
    let written = archive::write(file, &entries, header, progress).and_then(|bytes| {
        let path = target.join(&name);
        std::fs::rename(&partial, &path).map_err(|e| {
            BackupError::io(format!("cannot name the archive {}", path.display()), e)
        })?;
        sync_dir(&target)
            .map_err(|e| BackupError::io(format!("cannot sync {}", target.display()), e))?;
        Ok((path, bytes))
    });
    let (archive, bytes) = match written {
        Ok(done) => done,
        Err(err) => {
            let _ = std::fs::remove_file(&partial);
            return Err(err);
        }
    };
    let removed = rotate(&target, id, definition.keep, &archive)?;
    Ok(Written { archive, seq: snapshot.seq, entries: entries.len(), bytes, removed })
}

/// The file name of an archive of definition `id` as of `seq`, made at `created` (RFC 3339):
/// `backup+nightly.00000000000000000042.20261130T090432.123Z.tar`.
pub fn archive_name(id: &str, seq: u64, created: &str) -> String {
    let time: String = created.chars().filter(|c| *c != '-' && *c != ':').collect();
    format!("{}.{seq:020}.{time}.tar", id.replace('/', "+"))
}

/// The (time, seq) of an archive of definition `id` named `name`, if it is one. `+` is not an
/// id character, so the name says unambiguously which definition made it.
fn parse_archive_name<'a>(id: &str, name: &'a str) -> Option<(&'a str, u64)> {
    let rest = name.strip_suffix(".tar")?;
    let prefix = format!("{}.", id.replace('/', "+"));
    let rest = rest.strip_prefix(&prefix)?;
    let (seq, time) = rest.split_once('.')?;
    let valid_time = time.len() == 20
        && time.ends_with('Z')
        && time.as_bytes()[8] == b'T'
        && time.as_bytes()[15] == b'.';
    if seq.len() != 20 || !seq.bytes().all(|b| b.is_ascii_digit()) || !valid_time {
        return None;
    }
    Some((time, seq.parse().ok()?))
}

/// Delete all but the newest `keep` archives of definition `id` in `target`; `fresh`, just
/// written, is always kept. Newest means latest made: a restored store starts its seqs again.
fn rotate(target: &Path, id: &str, keep: u64, fresh: &Path) -> BackupResult<Vec<PathBuf>> {
    let read = std::fs::read_dir(target)
        .map_err(|e| BackupError::io(format!("cannot list {}", target.display()), e))?;
    let mut archives: Vec<(String, u64, PathBuf)> = Vec::new();
    for entry in read {
        let entry =
            entry.map_err(|e| BackupError::io(format!("cannot list {}", target.display()), e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((time, seq)) = parse_archive_name(id, name) {
            archives.push((time.to_owned(), seq, entry.path()));
        }
    }
    archives.sort_by(|a, b| (&b.0, b.1).cmp(&(&a.0, a.1)));
    let keep = usize::try_from(keep).unwrap_or(usize::MAX).saturating_sub(1);
    let mut removed = Vec::new();
    for (_, _, path) in archives.into_iter().filter(|(_, _, p)| p != fresh).skip(keep) {
        std::fs::remove_file(&path).map_err(|e| {
            BackupError::io(format!("cannot delete the old archive {}", path.display()), e)
        })?;
        removed.push(path);
    }
    removed.sort();
    Ok(removed)
}

/// The target folder, absolute: a relative target is relative to the store root.
fn resolve_target(root: &Path, target: &str) -> PathBuf {
    let path = Path::new(target);
    let joined = if path.is_absolute() { path.to_owned() } else { root.join(path) };
    normalize(&joined)
}

/// `path` without `.` and `..` components, resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether `path` is `root` or below it, following the symbolic links of the part of `path`
/// that exists (`root` is canonical).
fn inside(root: &Path, path: &Path) -> bool {
    let mut existing = path.to_owned();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let canonical = loop {
        match std::fs::canonicalize(&existing) {
            Ok(canonical) => break canonical,
            Err(_) => match (existing.file_name().map(ToOwned::to_owned), existing.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent.to_owned();
                }
                _ => break existing,
            },
        }
    };
    let mut full = canonical;
    full.extend(rest.iter().rev());
    full.starts_with(root)
}

pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn archive_names_round_trip_and_belong_to_one_definition() {
        let name = archive_name("backup/nightly", 42, "2026-11-30T09:04:32.123Z");
        assert_eq!(name, "backup+nightly.00000000000000000042.20261130T090432.123Z.tar");
        assert_eq!(parse_archive_name("backup/nightly", &name), Some(("20261130T090432.123Z", 42)));
        assert_eq!(parse_archive_name("backup", &name), None);
        assert_eq!(parse_archive_name("backup/nightly.x", &name), None);
        assert_eq!(parse_archive_name("backup/nightly", "backup+nightly.42.x.tar"), None);
        let dotted = archive_name("b.00000000000000000001", 7, "2026-11-30T09:04:32.123Z");
        assert_eq!(parse_archive_name("b", &dotted), None);
        assert!(parse_archive_name("b.00000000000000000001", &dotted).is_some());
    }

    #[test]
    fn definitions_say_what_is_wrong() {
        let ok = Definition::from_value("backup/n", &json!({"type": "backup", "target": "/t"}));
        assert_eq!(
            ok.unwrap(),
            Definition {
                id: "backup/n".into(),
                include: vec!["**".into()],
                target: "/t".into(),
                keep: DEFAULT_KEEP
            }
        );
        let err = |v: Value| Definition::from_value("backup/n", &v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"type": "book", "target": "/t"})),
            "the backup definition 'backup/n' is invalid: it is an entity of type 'book', not 'backup'; give the id of a backup definition"
        );
        assert!(err(json!({"type": "backup"})).contains("it has no 'target'"));
        assert!(
            err(json!({"type": "backup", "target": "/t", "keep": 0}))
                .contains("at least 1, found 0")
        );
        assert!(
            err(json!({"type": "backup", "target": "/t", "include": []}))
                .contains("non-empty list")
        );
        assert!(err(json!({"type": "backup", "target": "/t", "include": [3]})).contains("found 3"));
    }

    #[test]
    fn targets_resolve_against_the_store_and_symlinks_count() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("store");
        std::fs::create_dir(&root).unwrap();
        assert!(inside(&root, &resolve_target(&root, "backups")));
        assert!(inside(&root, &resolve_target(&root, ".")));
        assert!(inside(&root, &resolve_target(&root, "a/../../store/x")));
        assert!(!inside(&root, &resolve_target(&root, "../backups")));
        assert!(!inside(&root, &resolve_target(&root, "/elsewhere/store")));
        #[cfg(unix)]
        {
            let link = root.parent().unwrap().join("link");
            std::os::unix::fs::symlink(&root, &link).unwrap();
            assert!(inside(&root, &link.join("new/folder")));
        }
    }
}

//! The archive format: a plain tar of the store's files followed by a manifest, and the
//! checks that find any damage to it.
//!
//! Layout: the members (folders, files, symbolic links; sorted by path, a folder before what
//! it holds), then `.stardust/backup/manifest.json` and `.stardust/backup/manifest.json.sha256`
//! (in `sha256sum` format), then the end-of-archive blocks. `.stardust/` is never archived
//! from a store, so these names cannot collide with a store's files.
//!
//! Every byte is covered by a check: the manifest records each member's kind, mode, time,
//! size and SHA-256, plus the SHA-256 of every archive byte before the manifest (headers and
//! padding included); the `.sha256` member covers the manifest; and the bytes after the
//! manifest's header must be exactly what the writer produces for that manifest.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use globset::GlobSet;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{BackupError, BackupResult, Phase, Progress};
use crate::scan;
use crate::store::{PRIVATE_DIR, Snapshot};

/// The manifest member's path inside an archive.
pub const MANIFEST_PATH: &str = ".stardust/backup/manifest.json";
/// The member holding the manifest's SHA-256.
pub const MANIFEST_SUM_PATH: &str = ".stardust/backup/manifest.json.sha256";
const FORMAT: &str = "stardust-backup/1";
const IO_BUFFER: usize = 1 << 20;

/// What an archive holds and how to check it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// `stardust-backup/1`.
    pub format: String,
    /// The id of the backup definition that made the archive.
    pub definition: String,
    /// The store's root folder when the archive was made.
    pub store: String,
    /// The seq the archived documents are as of.
    pub seq: u64,
    /// When the archive was made (RFC 3339, UTC).
    pub created: String,
    /// The definition's include globs.
    pub include: Vec<String>,
    /// How many archive bytes precede the manifest, and their SHA-256.
    pub archive_bytes: u64,
    pub archive_sha256: String,
    /// The members, in archive order.
    pub entries: Vec<ManifestEntry>,
}

/// One member of an archive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// Store-relative, `/`-separated.
    pub path: String,
    pub kind: EntryKind,
    /// Permission bits (e.g. 420 for 0644).
    pub mode: u32,
    /// Modification time, seconds since the epoch.
    pub mtime: u64,
    /// Files: size and SHA-256 of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Symbolic links: what the link points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

impl EntryKind {
    fn tar_type(self) -> tar::EntryType {
        match self {
            EntryKind::File => tar::EntryType::Regular,
            EntryKind::Dir => tar::EntryType::Directory,
            EntryKind::Symlink => tar::EntryType::Symlink,
        }
    }
}

/// Where a member's content comes from.
#[derive(Debug)]
pub(super) enum Source {
    /// A document as of the snapshot, with its version (the SHA-256 of the content).
    Document { content: std::sync::Arc<String>, version: String },
    /// A file read from disk while archiving.
    Disk,
    /// A folder or a symbolic link (its target in the entry).
    None,
}

/// A member to archive.
#[derive(Debug)]
pub(super) struct Entry {
    pub path: String,
    pub kind: EntryKind,
    pub mode: u32,
    pub mtime: u64,
    pub size: u64,
    pub target: Option<String>,
    pub source: Source,
    pub abs: std::path::PathBuf,
}

/// The fields of a manifest that do not depend on the members.
pub(super) struct Header {
    pub definition: String,
    pub store: String,
    pub seq: u64,
    pub created: String,
    pub include: Vec<String>,
}

/// Every member `globs` selects: the snapshot's documents (and never a document that is not
/// in it), the other files, folders and symbolic links on disk, and the folders holding them.
pub(super) fn collect(
    root: &Path,
    snapshot: &Snapshot,
    globs: &GlobSet,
) -> BackupResult<Vec<Entry>> {
    let analysis = &snapshot.analysis;
    let config = analysis.config();
    let mut out: BTreeMap<String, Entry> = BTreeMap::new();
    let mut dirs: BTreeMap<String, Entry> = BTreeMap::new();
    let walker = walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name();
    let mut it = walker.into_iter();
    while let Some(item) = it.next() {
        let item = item.map_err(|e| {
            let path = e.path().map(|p| p.display().to_string()).unwrap_or_default();
            BackupError::io(format!("cannot read {path}"), e.into())
        })?;
        if item.depth() == 0 {
            continue;
        }
        let Some(rel) = scan::relative(root, item.path()) else {
            tracing::warn!("not archived: {} has a name that is not UTF-8", item.path().display());
            continue;
        };
        let file_type = item.file_type();
        if file_type.is_dir() && item.depth() == 1 && rel == PRIVATE_DIR {
            it.skip_current_dir();
            continue;
        }
        let meta =
            item.metadata().map_err(|e| BackupError::io(format!("cannot read {rel}"), e.into()))?;
        let (mode, mtime) = (mode_of(&meta), mtime_of(&meta));
        let entry = |kind, size, target, source| Entry {
            path: rel.clone(),
            kind,
            mode,
            mtime,
            size,
            target,
            source,
            abs: item.path().to_owned(),
        };
        if file_type.is_dir() {
            dirs.insert(rel.clone(), entry(EntryKind::Dir, 0, None, Source::None));
            continue;
        }
        if !globs.is_match(&rel) {
            continue;
        }
        if file_type.is_symlink() {
            let target = std::fs::read_link(item.path())
                .map_err(|e| BackupError::io(format!("cannot read the link {rel}"), e))?;
            let Some(target) = target.to_str() else {
                tracing::warn!("not archived: the link {rel} points at a name that is not UTF-8");
                continue;
            };
            out.insert(
                rel.clone(),
                entry(EntryKind::Symlink, 0, Some(target.to_owned()), Source::None),
            );
        } else if file_type.is_file() {
            if scan::is_document_path(config, &rel) {
                // A document is archived as of the snapshot; one created since is not in it.
                if let Some(doc) = analysis.document(&rel) {
                    out.insert(
                        rel.clone(),
                        document_entry(doc, entry(EntryKind::File, 0, None, Source::Disk)),
                    );
                }
            } else {
                out.insert(rel.clone(), entry(EntryKind::File, meta.len(), None, Source::Disk));
            }
        } else {
            tracing::warn!("not archived: {rel} is not a file, folder or symbolic link");
        }
    }
    // Documents of the snapshot deleted from disk since are archived too.
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    for doc in analysis.documents() {
        if out.contains_key(&doc.path) || !globs.is_match(&doc.path) {
            continue;
        }
        let placeholder = Entry {
            path: doc.path.clone(),
            kind: EntryKind::File,
            mode: 0o644,
            mtime: now,
            size: 0,
            target: None,
            source: Source::Disk,
            abs: root.join(&doc.path),
        };
        out.insert(doc.path.clone(), document_entry(doc, placeholder));
    }
    // Folders: the ones the globs select (so '**' keeps empty folders) and every folder
    // holding a member.
    let mut wanted: HashSet<String> =
        dirs.keys().filter(|d| globs.is_match(d.as_str())).cloned().collect();
    for path in out.keys() {
        let mut parts: Vec<&str> = path.split('/').collect();
        parts.pop();
        while !parts.is_empty() {
            wanted.insert(parts.join("/"));
            parts.pop();
        }
    }
    for dir in wanted {
        let entry = dirs.remove(&dir).unwrap_or_else(|| Entry {
            path: dir.clone(),
            kind: EntryKind::Dir,
            mode: 0o755,
            mtime: now,
            size: 0,
            target: None,
            source: Source::None,
            abs: root.join(&dir),
        });
        out.insert(dir, entry);
    }
    // Path order puts every folder before what it holds ("a" < "a-b" < "a/b").
    Ok(out.into_values().collect())
}

fn document_entry(doc: &crate::analysis::Document, disk: Entry) -> Entry {
    Entry {
        size: doc.byte_len,
        source: Source::Document { content: doc.text.clone(), version: doc.version.clone() },
        ..disk
    }
}

/// Write the archive of `entries` to `file`, synced; returns its size.
pub(super) fn write(
    file: File,
    entries: &[Entry],
    header: Header,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> BackupResult<u64> {
    let total: u64 = entries.iter().map(|e| e.size).sum();
    let io = |what: &str, e| BackupError::io(format!("cannot write the archive ({what})"), e);
    let sink = Hashing::new(BufWriter::with_capacity(IO_BUFFER, file));
    let mut builder = tar::Builder::new(sink);
    let mut manifest_entries = Vec::with_capacity(entries.len());
    let mut done = 0;
    for entry in entries {
        progress(&Progress { phase: Phase::Archiving, done, total, path: &entry.path });
        let mut head = tar_header(entry.kind, entry.size, entry.mode, entry.mtime);
        let mut sha256 = None;
        match (&entry.source, entry.kind) {
            (Source::Document { content, version }, _) => {
                let bytes = document_bytes(entry, content, version)?;
                builder
                    .append_data(&mut head, &entry.path, &*bytes)
                    .map_err(|e| io(&entry.path, e))?;
                sha256 = Some(version.clone());
            }
            (Source::Disk, _) => {
                let report =
                    Reporting { progress: &mut *progress, done, total, read: 0, path: &entry.path };
                sha256 = Some(append_disk_file(&mut builder, &mut head, entry, report)?);
            }
            (Source::None, EntryKind::Symlink) => {
                let target = entry.target.as_deref().unwrap_or_default();
                builder
                    .append_link(&mut head, &entry.path, target)
                    .map_err(|e| io(&entry.path, e))?;
            }
            (Source::None, _) => {
                builder
                    .append_data(&mut head, &entry.path, std::io::empty())
                    .map_err(|e| io(&entry.path, e))?;
            }
        }
        done += entry.size;
        manifest_entries.push(ManifestEntry {
            path: entry.path.clone(),
            kind: entry.kind,
            mode: entry.mode,
            mtime: entry.mtime,
            size: (entry.kind == EntryKind::File).then_some(entry.size),
            sha256,
            target: entry.target.clone(),
        });
    }
    progress(&Progress { phase: Phase::Archiving, done, total, path: "" });
    let (archive_bytes, archive_sha256) = builder.get_ref().position();
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        definition: header.definition,
        store: header.store,
        seq: header.seq,
        created: header.created,
        include: header.include,
        archive_bytes,
        archive_sha256,
        entries: manifest_entries,
    };
    let mut manifest_bytes = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| io("manifest", std::io::Error::other(e)))?;
    manifest_bytes.push(b'\n');
    append_tail(&mut builder, &manifest_bytes).map_err(|e| io("manifest", e))?;
    let sink = builder.into_inner().map_err(|e| io("end", e))?;
    let size = sink.count;
    let file = sink.inner.into_inner().map_err(|e| io("flush", e.into_error()))?;
    file.sync_all().map_err(|e| io("sync", e))?;
    Ok(size)
}

/// A document's content: its text, or for a document that is not UTF-8, the file on disk
/// when it still has the snapshot's version.
fn document_bytes<'a>(
    entry: &Entry,
    text: &'a std::sync::Arc<String>,
    version: &str,
) -> BackupResult<std::borrow::Cow<'a, [u8]>> {
    if text.len() as u64 == entry.size {
        return Ok(std::borrow::Cow::Borrowed(text.as_bytes()));
    }
    let bytes =
        std::fs::read(&entry.abs).map_err(|_| BackupError::Changed { path: entry.path.clone() })?;
    if hex(&Sha256::digest(&bytes)) != version {
        return Err(BackupError::Changed { path: entry.path.clone() });
    }
    Ok(std::borrow::Cow::Owned(bytes))
}

/// Append a file from disk, hashing it as it is copied; a file whose size changed while it
/// was read is refused (the archive would not hold what its header says).
fn append_disk_file<W: Write>(
    builder: &mut tar::Builder<W>,
    head: &mut tar::Header,
    entry: &Entry,
    report: Reporting<'_>,
) -> BackupResult<String> {
    let changed = || BackupError::Changed { path: entry.path.clone() };
    let mut file = File::open(&entry.abs)
        .map_err(|e| BackupError::io(format!("cannot read {}", entry.path), e))?;
    let mut reader = Hashing::new(Reported { inner: (&mut file).take(entry.size), report });
    builder
        .append_data(head, &entry.path, &mut reader)
        .map_err(|e| BackupError::io(format!("cannot archive {}", entry.path), e))?;
    let (count, sha256) = reader.position();
    if count != entry.size {
        return Err(changed());
    }
    let mut extra = [0u8; 1];
    if file
        .read(&mut extra)
        .map_err(|e| BackupError::io(format!("cannot read {}", entry.path), e))?
        != 0
    {
        return Err(changed());
    }
    Ok(sha256)
}

fn tar_header(kind: EntryKind, size: u64, mode: u32, mtime: u64) -> tar::Header {
    let mut head = tar::Header::new_gnu();
    head.set_entry_type(kind.tar_type());
    head.set_size(if kind == EntryKind::File { size } else { 0 });
    head.set_mode(mode);
    head.set_mtime(mtime);
    head.set_uid(0);
    head.set_gid(0);
    head
}

/// The manifest and its checksum members, then the end of the archive. Verification
/// rebuilds these bytes from the manifest it read, so they must depend on nothing else.
fn append_tail<W: Write>(builder: &mut tar::Builder<W>, manifest: &[u8]) -> std::io::Result<()> {
    let sum = format!("{}  manifest.json\n", hex(&Sha256::digest(manifest)));
    for (path, data) in [(MANIFEST_PATH, manifest), (MANIFEST_SUM_PATH, sum.as_bytes())] {
        let mut head = tar_header(EntryKind::File, data.len() as u64, 0o644, 0);
        builder.append_data(&mut head, path, data)?;
    }
    builder.finish()
}

fn tail_bytes(manifest: &[u8]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    // Writing to memory cannot fail.
    let _ = append_tail(&mut builder, manifest);
    builder.into_inner().unwrap_or_default()
}

/// What an archive holds, once every check passed.
#[derive(Debug)]
pub struct Verified {
    pub manifest: Manifest,
    /// The archive's size in bytes.
    pub bytes: u64,
}

/// A member as found in the archive.
struct Found {
    path: String,
    kind: EntryKind,
    mode: u32,
    mtime: u64,
    size: u64,
    sha256: Option<String>,
    target: Option<String>,
}

/// Check every byte of the archive at `path` against its manifest; the error names the first
/// damage found.
pub fn verify(path: &Path, progress: &mut dyn FnMut(&Progress<'_>)) -> BackupResult<Verified> {
    let file = open_archive(path)?;
    let total = file
        .metadata()
        .map_err(|e| BackupError::io(format!("cannot read {}", path.display()), e))?
        .len();
    let members = read_members(path, file, total, progress)?;
    let manifest = read_manifest(&members).map_err(corrupt_in(path))?;
    check_members(&members.found, &manifest).map_err(corrupt_in(path))?;
    check_framing(path, &members, &manifest, total)?;
    progress(&Progress { phase: Phase::Verifying, done: total, total, path: "" });
    Ok(Verified { manifest, bytes: total })
}

/// How a reason becomes the `Corrupt` error of the archive at `path`.
fn corrupt_in(path: &Path) -> impl Fn(String) -> BackupError + '_ {
    move |reason| BackupError::Corrupt { archive: path.to_owned(), reason }
}

/// An archive's members as read: every member but the manifest's two, and those two.
struct Members {
    found: Vec<Found>,
    manifest: Vec<u8>,
    /// Where the manifest's tar header starts.
    manifest_at: u64,
    sum: Vec<u8>,
}

/// The tar structure, each member's content hashed, the manifest and its checksum last.
fn read_members(
    path: &Path,
    file: File,
    total: u64,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> BackupResult<Members> {
    let corrupt = corrupt_in(path);
    let mut found: Vec<Found> = Vec::new();
    let mut manifest: Option<(Vec<u8>, u64)> = None;
    let mut sum: Option<Vec<u8>> = None;
    let mut tar = tar::Archive::new(BufReader::with_capacity(IO_BUFFER, file));
    let entries = tar.entries().map_err(|e| corrupt(format!("it cannot be read as tar: {e}")))?;
    for item in entries {
        let mut entry = item.map_err(|e| corrupt(tar_damage(&e, total)))?;
        let header_at = entry.raw_header_position();
        let name = String::from_utf8(entry.path_bytes().into_owned()).map_err(|_| {
            corrupt(format!("the member at byte {header_at} has a name that is not UTF-8"))
        })?;
        if sum.is_some() {
            return Err(corrupt(format!(
                "the member '{name}' follows the manifest; the archive has an extra member"
            )));
        }
        let kind = match entry.header().entry_type() {
            tar::EntryType::Regular => EntryKind::File,
            tar::EntryType::Directory => EntryKind::Dir,
            tar::EntryType::Symlink => EntryKind::Symlink,
            other => {
                return Err(corrupt(format!(
                    "the member '{name}' has the unexpected tar type {:?}",
                    other.as_byte() as char
                )));
            }
        };
        if name == MANIFEST_PATH || name == MANIFEST_SUM_PATH {
            let mut data = Vec::new();
            entry.read_to_end(&mut data).map_err(|e| corrupt(unreadable_member(&name, &e)))?;
            if data.len() as u64 != entry.size() {
                let eof = std::io::ErrorKind::UnexpectedEof.into();
                return Err(corrupt(unreadable_member(&name, &eof)));
            }
            if name == MANIFEST_PATH {
                manifest = Some((data, header_at));
            } else if manifest.is_some() {
                sum = Some(data);
            } else {
                return Err(corrupt(format!("{MANIFEST_SUM_PATH} comes before the manifest")));
            }
            continue;
        }
        if manifest.is_some() {
            return Err(corrupt(format!(
                "the member '{name}' is between the manifest and its checksum; the archive has an extra member"
            )));
        }
        let done = entry.raw_file_position().saturating_add(entry.size());
        found.push(read_member(&mut entry, name, kind).map_err(&corrupt)?);
        drop(entry);
        progress(&Progress {
            phase: Phase::Verifying,
            done,
            total,
            path: &found[found.len() - 1].path,
        });
    }
    let Some((manifest, manifest_at)) = manifest else {
        return Err(corrupt(format!(
            "it has no manifest ({MANIFEST_PATH}); it is truncated, or not a Stardust backup"
        )));
    };
    let Some(sum) = sum else {
        return Err(corrupt(format!("it has no {MANIFEST_SUM_PATH}; it is truncated")));
    };
    Ok(Members { found, manifest, manifest_at, sum })
}

fn unreadable_member(name: &str, e: &std::io::Error) -> String {
    format!("the member '{name}' cannot be read ({e}); the archive is truncated or damaged")
}

/// One member other than the manifest's: its metadata, and a file's content hashed.
fn read_member<R: Read>(
    entry: &mut tar::Entry<'_, R>,
    name: String,
    kind: EntryKind,
) -> Result<Found, String> {
    let head = entry.header();
    let mode = head.mode().map_err(|e| format!("the member '{name}' has a damaged mode: {e}"))?;
    let mtime = head.mtime().map_err(|e| format!("the member '{name}' has a damaged time: {e}"))?;
    let target = match entry.link_name_bytes() {
        Some(bytes) if kind == EntryKind::Symlink => Some(
            String::from_utf8(bytes.into_owned())
                .map_err(|_| format!("the link '{name}' points at a name that is not UTF-8"))?,
        ),
        _ => None,
    };
    let size = entry.size();
    let sha256 = if kind == EntryKind::File {
        let mut hashing = Hashing::new(&mut *entry);
        std::io::copy(&mut hashing, &mut std::io::sink())
            .map_err(|e| unreadable_member(&name, &e))?;
        let (count, sha) = hashing.position();
        if count != size {
            return Err(unreadable_member(&name, &std::io::ErrorKind::UnexpectedEof.into()));
        }
        Some(sha)
    } else {
        None
    };
    Ok(Found { path: name, kind, mode, mtime, size, sha256, target })
}

/// The manifest, checked by its checksum member, in a format this Stardust reads and with
/// sound paths.
fn read_manifest(members: &Members) -> Result<Manifest, String> {
    let expected_sum = format!("{}  manifest.json\n", hex(&Sha256::digest(&members.manifest)));
    if members.sum != expected_sum.as_bytes() {
        return Err(format!(
            "the manifest does not match its SHA-256 in {MANIFEST_SUM_PATH}; one of them is damaged"
        ));
    }
    let manifest: Manifest = serde_json::from_slice(&members.manifest)
        .map_err(|e| format!("the manifest cannot be read: {e}"))?;
    if manifest.format != FORMAT {
        return Err(format!(
            "the manifest's format is '{}'; this Stardust reads '{FORMAT}'",
            manifest.format
        ));
    }
    check_paths(&manifest)?;
    Ok(manifest)
}

/// Each member against the manifest, in order: the same members, kinds, sizes, contents,
/// modes, times and link targets.
fn check_members(found: &[Found], manifest: &Manifest) -> Result<(), String> {
    let listed: HashSet<&str> = manifest.entries.iter().map(|e| e.path.as_str()).collect();
    let present: HashSet<&str> = found.iter().map(|f| f.path.as_str()).collect();
    if let Some(missing) = manifest.entries.iter().find(|e| !present.contains(e.path.as_str())) {
        return Err(format!("the member '{}' that the manifest lists is missing", missing.path));
    }
    if let Some(extra) = found.iter().find(|f| !listed.contains(f.path.as_str())) {
        return Err(format!(
            "the member '{}' is not in the manifest; the archive has an extra member",
            extra.path
        ));
    }
    if found.len() != manifest.entries.len() {
        return Err("a member appears more than once".to_owned());
    }
    for (f, e) in found.iter().zip(&manifest.entries) {
        if f.path != e.path {
            return Err(format!(
                "the member '{}' is out of the manifest's order (expected '{}')",
                f.path, e.path
            ));
        }
        let differs = |what: &str, archive: String, listed: String| {
            format!(
                "the member '{}' has {what} {archive} in the archive but {listed} in the manifest",
                f.path
            )
        };
        if f.kind != e.kind {
            return Err(differs("the kind", format!("{:?}", f.kind), format!("{:?}", e.kind)));
        }
        if f.kind == EntryKind::File && Some(f.size) != e.size {
            return Err(differs("the size", f.size.to_string(), format!("{:?}", e.size)));
        }
        if f.sha256 != e.sha256 {
            return Err(format!(
                "the content of '{}' does not match its SHA-256 in the manifest; the member is damaged",
                f.path
            ));
        }
        if f.mode != e.mode {
            return Err(differs("the mode", format!("{:o}", f.mode), format!("{:o}", e.mode)));
        }
        if f.mtime != e.mtime {
            return Err(differs("the time", f.mtime.to_string(), e.mtime.to_string()));
        }
        if f.target != e.target {
            return Err(differs(
                "the link target",
                format!("{:?}", f.target),
                format!("{:?}", e.target),
            ));
        }
    }
    Ok(())
}

/// Every byte before the manifest (headers and padding too) against the manifest's SHA-256
/// of them, then everything after it against what the manifest's own members must be.
fn check_framing(
    path: &Path,
    members: &Members,
    manifest: &Manifest,
    total: u64,
) -> BackupResult<()> {
    let corrupt = corrupt_in(path);
    let read_error = |e| BackupError::io(format!("cannot read {}", path.display()), e);
    let manifest_at = members.manifest_at;
    if manifest_at != manifest.archive_bytes {
        return Err(corrupt(format!(
            "the manifest starts at byte {manifest_at} but records {} bytes before it",
            manifest.archive_bytes
        )));
    }
    let mut file = open_archive(path)?;
    let mut prefix =
        Hashing::new(BufReader::with_capacity(IO_BUFFER, (&mut file).take(manifest_at)));
    std::io::copy(&mut prefix, &mut std::io::sink()).map_err(read_error)?;
    if prefix.position().1 != manifest.archive_sha256 {
        return Err(corrupt(
            "its bytes before the manifest do not match the manifest's SHA-256 of them; a tar header or padding is damaged".to_owned(),
        ));
    }
    let expected_tail = tail_bytes(&members.manifest);
    file.seek(SeekFrom::Start(manifest_at)).map_err(read_error)?;
    let mut tail = Vec::new();
    (&mut file).take(expected_tail.len() as u64 + 1).read_to_end(&mut tail).map_err(read_error)?;
    match tail.len().cmp(&expected_tail.len()) {
        std::cmp::Ordering::Less => {
            Err(corrupt("its end-of-archive blocks are missing; it is truncated".to_owned()))
        }
        std::cmp::Ordering::Greater => {
            let extra = total - manifest_at - expected_tail.len() as u64;
            Err(corrupt(format!("it has {extra} extra bytes after the end of the archive")))
        }
        std::cmp::Ordering::Equal if tail != expected_tail => Err(corrupt(
            "the manifest's tar header, its padding or the end-of-archive blocks are damaged"
                .to_owned(),
        )),
        std::cmp::Ordering::Equal => Ok(()),
    }
}

/// The paths a restore may write: relative, normal, unique, outside `.stardust/`, never
/// below a symbolic link, and each folder listed before what it holds.
fn check_paths(manifest: &Manifest) -> Result<(), String> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut links: Vec<&str> = Vec::new();
    for entry in &manifest.entries {
        let path = entry.path.as_str();
        let unsafe_path = path.is_empty()
            || path.split('/').any(|part| matches!(part, "" | "." | ".."))
            || path.contains('\0')
            || path.split('/').next() == Some(PRIVATE_DIR);
        if unsafe_path {
            return Err(format!("the manifest lists the unsafe path '{path}'"));
        }
        if !seen.insert(path) {
            return Err(format!("the manifest lists '{path}' twice"));
        }
        if let Some((parent, _)) = path.rsplit_once('/') {
            if links.iter().any(|l| parent == *l || parent.starts_with(&format!("{l}/"))) {
                return Err(format!("the manifest lists '{path}' below a symbolic link"));
            }
            if !seen.contains(parent) {
                return Err(format!("the manifest lists '{path}' before its folder '{parent}'"));
            }
        }
        if entry.kind == EntryKind::Symlink {
            links.push(path);
        }
        if (entry.kind == EntryKind::File) != (entry.size.is_some() && entry.sha256.is_some())
            || (entry.kind == EntryKind::Symlink) != entry.target.is_some()
        {
            return Err(format!("the manifest's entry for '{path}' is incomplete"));
        }
    }
    Ok(())
}

/// A tar archive is whole 512-byte blocks, so a tar error in an archive of another length is
/// a cut (an archive with bytes added still reads to its end).
fn tar_damage(err: &std::io::Error, total: u64) -> String {
    if !total.is_multiple_of(512) {
        format!("it is truncated: it ends in the middle of a 512-byte tar block ({err})")
    } else {
        format!("its tar structure is damaged ({err})")
    }
}

pub(super) fn open_archive(path: &Path) -> BackupResult<File> {
    File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            BackupError::NotFound(format!("there is no archive {}; check the path", path.display()))
        }
        _ => BackupError::io(format!("cannot read {}", path.display()), e),
    })
}

/// Lowercase hex of a digest.
pub(super) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    out
}

/// Progress inside one large file, reported every `REPORT_EVERY` bytes read.
struct Reporting<'a> {
    progress: &'a mut dyn FnMut(&Progress<'_>),
    /// Bytes done before this file, and in all.
    done: u64,
    total: u64,
    read: u64,
    path: &'a str,
}

const REPORT_EVERY: u64 = 4 << 20;

struct Reported<'a, R> {
    inner: R,
    report: Reporting<'a>,
}

impl<R: Read> Read for Reported<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let r = &mut self.report;
        if (r.read + n as u64) / REPORT_EVERY != r.read / REPORT_EVERY {
            let done = r.done + r.read + n as u64;
            (r.progress)(&Progress { phase: Phase::Archiving, done, total: r.total, path: r.path });
        }
        r.read += n as u64;
        Ok(n)
    }
}

/// A reader or writer that counts and hashes the bytes passing through it.
pub(super) struct Hashing<T> {
    pub inner: T,
    hasher: Sha256,
    pub count: u64,
}

impl<T> Hashing<T> {
    pub fn new(inner: T) -> Hashing<T> {
        Hashing { inner, hasher: Sha256::new(), count: 0 }
    }

    /// The bytes so far: how many, and their SHA-256.
    pub fn position(&self) -> (u64, String) {
        (self.count, hex(&self.hasher.clone().finalize()))
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(unix)]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    if meta.is_dir() {
        0o755
    } else if meta.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

fn mtime_of(meta: &std::fs::Metadata) -> u64 {
    meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs())
}

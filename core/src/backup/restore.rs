//! Restoring an archive into a folder, byte for byte, checking each file as it is written.
//!
//! The whole archive is verified first, so a damaged archive writes nothing. Each file is
//! then written to a temporary name beside its place, checked against the manifest, given
//! its mode and time, and renamed into place; links come after every file, and folders get
//! their modes and times last (writing into a folder changes its time, and a read-only
//! folder could not be written into).

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use super::archive::{
    Hashing, MANIFEST_PATH, MANIFEST_SUM_PATH, Manifest, ManifestEntry, open_archive, verify,
};
use super::{BackupError, BackupResult, EntryKind, Phase, Progress};

/// What a restore wrote.
#[derive(Debug)]
pub struct Restored {
    pub manifest: Manifest,
    /// Files, folders and links written.
    pub entries: usize,
    /// The folder restored into.
    pub dir: PathBuf,
}

/// Restore the archive at `archive` into `dir`. `dir` must be empty or missing unless
/// `force`, which writes over the files of the archive and leaves other files alone.
pub fn restore(
    archive: &Path,
    dir: &Path,
    force: bool,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> BackupResult<Restored> {
    let verified = verify(archive, progress)?;
    let manifest = verified.manifest;
    prepare_dir(dir, force)?;
    let corrupt = |reason: String| BackupError::Corrupt { archive: archive.to_owned(), reason };
    let changed = |path: &str| {
        corrupt(format!(
            "'{path}' changed since the archive was verified; is something writing to it?"
        ))
    };

    let listed: HashMap<&str, &ManifestEntry> =
        manifest.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    let file = open_archive(archive)?;
    let mut tar = tar::Archive::new(BufReader::with_capacity(1 << 20, file));
    let entries = tar.entries().map_err(|e| corrupt(format!("it cannot be read as tar: {e}")))?;
    let mut dirs: Vec<&ManifestEntry> = Vec::new();
    let mut links: Vec<&ManifestEntry> = Vec::new();
    let mut restored = 0;
    for item in entries {
        let mut entry = item.map_err(|e| corrupt(format!("it cannot be read as tar: {e}")))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if name == MANIFEST_PATH || name == MANIFEST_SUM_PATH {
            continue;
        }
        let Some(expected) = listed.get(name.as_str()).copied() else { return Err(changed(&name)) };
        let done = entry.raw_file_position().saturating_add(entry.size());
        progress(&Progress { phase: Phase::Restoring, done, total: verified.bytes, path: &name });
        ensure_parents(dir, &name)?;
        let dest = dir.join(&name);
        match expected.kind {
            EntryKind::Dir => {
                make_dir(&dest, &name, force)?;
                dirs.push(expected);
            }
            EntryKind::Symlink => links.push(expected),
            EntryKind::File => {
                write_file(&mut entry, &dest, expected).map_err(|e| match e {
                    WriteError::Mismatch => changed(&name),
                    WriteError::Io(e) => {
                        BackupError::io(format!("cannot restore {}", dest.display()), e)
                    }
                })?;
            }
        }
        restored += 1;
    }
    if restored != manifest.entries.len() {
        return Err(changed("the member list"));
    }
    for link in &links {
        make_link(dir, link, force)?;
    }
    for folder in dirs.iter().rev() {
        let path = dir.join(&folder.path);
        set_mode(&path, folder.mode)
            .and_then(|()| File::open(&path)?.set_modified(time(folder.mtime)))
            .map_err(|e| {
                BackupError::io(format!("cannot set the mode and time of {}", path.display()), e)
            })?;
    }
    Ok(Restored { manifest, entries: restored, dir: dir.to_owned() })
}

/// Make sure `dir` is a folder to restore into: created when missing, empty unless `force`.
fn prepare_dir(dir: &Path, force: bool) -> BackupResult<()> {
    let io = |e| BackupError::io(format!("cannot restore into {}", dir.display()), e);
    // The folder named may be a link to a folder; links below it are never followed.
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            if !force && fs::read_dir(dir).map_err(io)?.next().is_some() {
                return Err(BackupError::NotEmpty { dir: dir.to_owned() });
            }
            Ok(())
        }
        Ok(_) => Err(BackupError::InvalidArguments(format!(
            "{} exists and is not a folder; give a folder to restore into",
            dir.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir_all(dir).map_err(io),
        Err(e) => Err(io(e)),
    }
}

/// Every folder above `rel` must be a real folder: a symbolic link already in `dir` could
/// otherwise send a write outside it.
fn ensure_parents(dir: &Path, rel: &str) -> BackupResult<()> {
    let mut path = dir.to_owned();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        path.push(part);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(BackupError::InvalidArguments(format!(
                    "cannot restore {rel}: {} is in the way and is not a folder; move it aside",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir(&path)
                .map_err(|e| BackupError::io(format!("cannot create {}", path.display()), e))?,
            Err(e) => return Err(BackupError::io(format!("cannot read {}", path.display()), e)),
        }
    }
    Ok(())
}

fn make_dir(path: &Path, rel: &str, force: bool) -> BackupResult<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) if force => fs::remove_file(path).and_then(|()| fs::create_dir(path)).map_err(|e| {
            BackupError::io(format!("cannot replace {} with a folder", path.display()), e)
        }),
        Ok(_) => Err(BackupError::InvalidArguments(format!(
            "cannot restore the folder {rel}: {} is in the way; move it aside",
            path.display()
        ))),
        Err(_) => fs::create_dir(path)
            .map_err(|e| BackupError::io(format!("cannot create {}", path.display()), e)),
    }
}

enum WriteError {
    /// The content read does not match the manifest.
    Mismatch,
    Io(std::io::Error),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> WriteError {
        WriteError::Io(e)
    }
}

/// Write one file beside its place, check it, and rename it into place.
fn write_file(
    data: &mut impl Read,
    dest: &Path,
    expected: &ManifestEntry,
) -> Result<(), WriteError> {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dest.with_file_name(format!(".{name}.stardust-restore"));
    let _ = fs::remove_file(&temp);
    let result = (|| {
        let file = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut reader = Hashing::new(data);
        std::io::copy(&mut reader, &mut out)?;
        let (count, sha256) = reader.position();
        if Some(count) != expected.size || Some(&sha256) != expected.sha256.as_ref() {
            return Err(WriteError::Mismatch);
        }
        out.flush()?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.set_modified(time(expected.mtime))?;
        drop(file);
        set_mode(&temp, expected.mode)?;
        fs::rename(&temp, dest)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

fn make_link(dir: &Path, link: &ManifestEntry, force: bool) -> BackupResult<()> {
    let path = dir.join(&link.path);
    let io = |e| BackupError::io(format!("cannot restore the link {}", path.display()), e);
    if let Ok(meta) = fs::symlink_metadata(&path) {
        if !force || meta.is_dir() {
            return Err(BackupError::InvalidArguments(format!(
                "cannot restore the link {}: {} is in the way; move it aside",
                link.path,
                path.display()
            )));
        }
        fs::remove_file(&path).map_err(io)?;
    }
    let target = link.target.as_deref().unwrap_or_default();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, &path).map_err(io)
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        Err(BackupError::InvalidArguments(format!(
            "cannot restore the link {}: symbolic links are restored on Unix only",
            link.path
        )))
    }
}

fn time(mtime: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(mtime)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    let mut permissions = fs::metadata(path)?.permissions();
    permissions.set_readonly(mode & 0o200 == 0);
    fs::set_permissions(path, permissions)
}

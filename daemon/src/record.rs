//! Where a store's running core can be found: `STORE/.stardust/run/daemon.json` and the socket.
//!
//! The record is written by the core once its socket listens and removed when it stops. A
//! record whose process is gone, or whose socket does not answer, is stale: attachers ignore
//! it and the next core replaces it.

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What `daemon.json` holds (SPEC §15).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub pid: u32,
    pub socket: PathBuf,
}

/// `STORE/.stardust/run/`, where the record and the background core's log live.
pub fn run_dir(store: &Path) -> PathBuf {
    store.join(".stardust").join("run")
}

pub fn record_path(store: &Path) -> PathBuf {
    run_dir(store).join("daemon.json")
}

/// The record of `store`, if there is a readable one.
pub fn read(store: &Path) -> Option<Record> {
    let text = std::fs::read(record_path(store)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The record of a core that is running now for this store: its socket is this store's (a
/// record copied or moved along with a store names another store's core), its process
/// exists and its socket answers. Without a record (a tool deleted `.stardust/` while the core
/// ran, SPEC §24), the socket named after the store's path is asked: a core listening there is
/// the store's, and the socket's peer credentials name its pid.
pub fn live(store: &Path) -> Option<Record> {
    let canonical = store.canonicalize().unwrap_or_else(|_| store.to_owned());
    if let Some(record) = read(store) {
        let ours = record.socket.file_name() == Some(socket_name(&canonical).as_ref());
        if ours && alive(record.pid) && UnixStream::connect(&record.socket).is_ok() {
            return Some(record);
        }
    }
    let socket = socket_dir().ok()?.join(socket_name(&canonical));
    let stream = UnixStream::connect(&socket).ok()?;
    let peer =
        nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials).ok()?;
    let pid = u32::try_from(peer.pid()).ok()?;
    Some(Record { pid, socket })
}

/// Write the record atomically (temporary file, rename), readable by the owner only.
pub fn write(store: &Path, record: &Record) -> io::Result<()> {
    let dir = run_dir(store);
    std::fs::create_dir_all(&dir)?;
    let temp = dir.join(format!(".daemon.json.{}", std::process::id()));
    std::fs::write(&temp, serde_json::to_vec(record)?)?;
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&temp, record_path(store))
}

/// Remove the record if it still names process `pid` (a newer core may have replaced it).
pub fn remove_if(store: &Path, pid: u32) {
    if read(store).is_some_and(|r| r.pid == pid) {
        let _ = std::fs::remove_file(record_path(store));
    }
}

/// Whether process `pid` exists.
pub fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// This process's user id.
pub fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// The socket of the core of `store` (its canonical path): a short name in a private folder,
/// because socket paths are limited to 108 bytes.
pub fn socket_path(store: &Path) -> io::Result<PathBuf> {
    Ok(socket_dir()?.join(socket_name(store)))
}

/// The socket's file name: a digest of the store's path, so it is the same whichever folder
/// (`XDG_RUNTIME_DIR` or not) the core put it in.
fn socket_name(store: &Path) -> String {
    let digest = Sha256::digest(store.as_os_str().as_encoded_bytes());
    let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{name}.sock")
}

/// `$XDG_RUNTIME_DIR/stardust`, else `/tmp/stardust-<uid>`: created mode 0700, and refused
/// if it exists but belongs to someone else or others can enter it.
fn socket_dir() -> io::Result<PathBuf> {
    let uid = uid();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(runtime) if runtime.is_absolute() && runtime.is_dir() => runtime.join("stardust"),
        _ => PathBuf::from(format!("/tmp/stardust-{uid}")),
    };
    match std::fs::create_dir(&dir) {
        Ok(()) => std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private folder of this user; remove it or set XDG_RUNTIME_DIR",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_go_stale() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(read(tmp.path()), None);
        let record = Record { pid: std::process::id(), socket: tmp.path().join("no.sock") };
        write(tmp.path(), &record).unwrap();
        assert_eq!(read(tmp.path()), Some(record.clone()));
        // Our process exists but nothing listens on the socket: not live.
        assert_eq!(live(tmp.path()), None);
        remove_if(tmp.path(), record.pid + 1);
        assert!(record_path(tmp.path()).exists(), "another pid's record stays");
        remove_if(tmp.path(), record.pid);
        assert_eq!(read(tmp.path()), None);
    }

    #[test]
    fn a_record_naming_another_stores_socket_is_not_live() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, other) = (tmp.path().join("store"), tmp.path().join("other"));
        std::fs::create_dir_all(&store).unwrap();
        // A core of another store, really listening: the record was copied from there.
        let socket = tmp.path().join(socket_name(&other));
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        write(&store, &Record { pid: std::process::id(), socket }).unwrap();
        assert_eq!(live(&store), None);
        // The same core under this store's name would be live.
        let canonical = store.canonicalize().unwrap();
        let socket = tmp.path().join(socket_name(&canonical));
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let record = Record { pid: std::process::id(), socket };
        write(&store, &record).unwrap();
        assert_eq!(live(&store), Some(record));
    }

    #[test]
    fn socket_paths_are_short_private_and_per_store() {
        let a =
            socket_path(Path::new("/a/very/long/store/path/that/goes/on/and/on/for/ever")).unwrap();
        let b = socket_path(Path::new("/another/store")).unwrap();
        assert_ne!(a, b);
        assert!(a.as_os_str().len() < 108, "{}", a.display());
        let dir = std::fs::metadata(a.parent().unwrap()).unwrap();
        assert_eq!(dir.mode() & 0o777, 0o700);
    }
}

//! `trusted.toml`: per user and outside every store, the SHA-256 of each store table the user
//! allowed to run (`stardust trust STORE`), keyed by the store's canonical path.
//!
//! The file is the user's own: written atomically with mode 0600 in a folder made 0700, and
//! refused when other users may write it (they could trust commands on the user's behalf).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::ServerConfig;
use crate::error::{Error, Result};

/// The file name under the user's configuration folder.
pub const TRUSTED_FILE: &str = "trusted.toml";

const HEADER: &str = "\
# Written by `stardust trust STORE`: for each store (by its canonical path), the SHA-256 of
# each [servers.<name>] table of its stardust.toml that you allowed to run. A table that
# changed needs `stardust trust STORE` again; `stardust trust --revoke STORE` forgets a store.
";

/// Stardust's folder in the user's configuration: `$XDG_CONFIG_HOME/stardust`, or
/// `$HOME/.config/stardust` when XDG_CONFIG_HOME is unset, empty or relative (the XDG rule).
/// `var` reads an environment variable. `None` when neither gives an absolute folder.
pub fn user_config_dir(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let absolute = |v: OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = var("XDG_CONFIG_HOME")
        .and_then(absolute)
        .or_else(|| var("HOME").and_then(absolute).map(|home| home.join(".config")))?;
    Some(base.join("stardust"))
}

/// The recorded trust: store path -> server name -> table hash.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trusted {
    #[serde(default)]
    stores: BTreeMap<String, BTreeMap<String, String>>,
}

impl Trusted {
    /// Parse `trusted.toml` text; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Trusted> {
        let invalid = |message: String| Error::ConfigInvalid { path: path.to_owned(), message };
        let trusted: Trusted =
            toml::from_str(text).map_err(|err| invalid(err.to_string().trim_end().to_owned()))?;
        for (store, servers) in &trusted.stores {
            for (server, hash) in servers {
                let hex = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
                if !hex {
                    return Err(invalid(format!(
                        "stores.\"{store}\".{server}: '{hash}' is not a SHA-256 in hex; run \
                         `stardust trust {store}` again"
                    )));
                }
            }
        }
        Ok(trusted)
    }

    /// Read `trusted.toml`; a missing file trusts nothing. A file other users may write is
    /// refused, since it decides which commands run.
    pub fn load(path: &Path) -> Result<Trusted> {
        let invalid = |message: String| Error::ConfigInvalid { path: path.to_owned(), message };
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Trusted::default()),
            Err(err) => return Err(invalid(format!("cannot read it: {err}"))),
        };
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(invalid(format!(
                "other users may write it, so it cannot decide what runs; run `chmod 600 {}`",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|err| invalid(format!("cannot read it: {err}")))?;
        Trusted::parse(&text, path)
    }

    /// The file's text: a comment, then one table per store.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("maps of strings serialise");
        format!("{HEADER}\n{body}")
    }

    /// Write the file atomically (a temporary sibling, synced, renamed over it, the folder
    /// synced), mode 0600, making its folder (0700) when missing.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |what: &str, err| Error::io(format!("cannot {what} {}", path.display()), err);
        let dir = make_folder(path)?;
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temp)?;
            // `mode` applies only to a new file; a stale temporary one keeps its own.
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            file.write_all(self.to_toml().as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, path)?;
            std::fs::File::open(dir)?.sync_all()
        };
        write().map_err(|err| {
            let _ = std::fs::remove_file(&temp);
            io("write", err)
        })
    }

    /// The hash recorded for `server` of the store at `store` (canonical).
    pub fn hash(&self, store: &Path, server: &str) -> Option<&str> {
        let store = store.to_str()?;
        self.stores.get(store)?.get(server).map(String::as_str)
    }

    /// Record the tables of the store at `store` (canonical) as they are now, replacing what
    /// was recorded for it: a table removed from the store is forgotten with it. A store with
    /// no tables is forgotten. The path must be UTF-8, to be a key of the file.
    pub fn trust(&mut self, store: &Path, servers: &BTreeMap<String, ServerConfig>) -> Result<()> {
        let key = store_key(store)?;
        if servers.is_empty() {
            self.stores.remove(&key);
        } else {
            let hashes = servers.iter().map(|(name, c)| (name.clone(), c.hash.clone())).collect();
            self.stores.insert(key, hashes);
        }
        Ok(())
    }

    /// Forget the store at `store`; the names of the servers that were trusted.
    pub fn revoke(&mut self, store: &Path) -> Vec<String> {
        let Some(key) = store.to_str() else { return Vec::new() };
        self.stores.remove(key).map(|servers| servers.into_keys().collect()).unwrap_or_default()
    }
}

/// Run `update` (a read, a change, a save of the file at `path`) holding the exclusive lock
/// of that file, so that two `stardust trust` at once both land: the second reads what the
/// first wrote. The lock is an advisory lock on a sibling `.<name>.lock` (0600), released when
/// `update` returns.
pub fn locked<R>(path: &Path, update: impl FnOnce() -> Result<R>) -> Result<R> {
    let dir = make_folder(path)?;
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let lock_path = dir.join(format!(".{name}.lock"));
    let io = |what: &str, err| Error::io(format!("cannot {what} {}", lock_path.display()), err);
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|err| io("open the lock file", err))?;
    lock.lock().map_err(|err| io("lock", err))?;
    update()
}

/// The folder of `path`, made (0700) when missing.
fn make_folder(path: &Path) -> Result<&Path> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| Error::io(format!("cannot make the folder of {}", path.display()), err))?;
    Ok(dir)
}

fn store_key(store: &Path) -> Result<String> {
    store.to_str().map(str::to_owned).ok_or_else(|| {
        Error::InvalidArguments(format!(
            "the store's path {} is not UTF-8, so it cannot be recorded in {TRUSTED_FILE}",
            store.display()
        ))
    })
}

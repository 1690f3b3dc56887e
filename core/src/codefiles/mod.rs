//! Code files (SPEC §17): which configured language server covers a file, whether that server
//! may start (trust) and with what launch spec. Rules over the configuration (the store's
//! files are walked by `scan`); starting and supervising processes is the `stardust-servers`
//! crate's.
//!
//! The servers of a store are the user's (`$XDG_CONFIG_HOME/stardust/servers.toml`, always
//! allowed) and the store's own (`[servers.*]` of `stardust.toml`, allowed once trusted). When
//! both define a name, the user's table is the one used and the store's is set aside: a
//! cloned repository cannot replace a command the user chose (docs/DECISIONS.md).

mod host;
mod launch;
mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use host::{
    Activity, CodeAnswer, CodeError, CodeEvent, CodeHost, PROBE_PROMPT, Publication, READY_BOUND,
    READY_QUIET, READY_SETTLE, Readiness, answer_readiness, readiness, wants_probe,
};
pub use launch::{
    LaunchError, LaunchSpec, Probe, find_program, may_start, probe, root_for, shell_word,
    trust_command,
};
pub use trust::{TRUSTED_FILE, Trusted, user_config_dir};

use crate::config::servers::USER_SERVERS_FILE;
use crate::config::{Config, ServerConfig};
use crate::error::{Error, Result};
use crate::scan;

/// Where a server's table comes from, which decides whether it needs trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// The user's `servers.toml`: always allowed to start.
    User,
    /// The store's `stardust.toml`: allowed once `stardust trust` recorded its table's hash.
    Store,
}

/// One server of a store, with where its table comes from.
#[derive(Clone, Debug)]
pub struct Server {
    pub config: ServerConfig,
    pub origin: Origin,
}

impl Server {
    pub fn name(&self) -> &str {
        &self.config.name
    }
}

/// The servers of one store: the user's, then the store's not named by the user, each in name
/// order. That order is the order of precedence when two claim one file.
#[derive(Clone, Debug, Default)]
pub struct Servers {
    servers: Vec<Server>,
    /// Names of store tables set aside because the user's `servers.toml` defines the name.
    shadowed: Vec<String>,
}

impl Servers {
    /// Merge the user's tables and the store's: on a name both define, the user's wins.
    pub fn new(
        user: BTreeMap<String, ServerConfig>,
        store: BTreeMap<String, ServerConfig>,
    ) -> Servers {
        let mut shadowed = Vec::new();
        let mut servers: Vec<Server> =
            user.values().map(|c| Server { config: c.clone(), origin: Origin::User }).collect();
        for (name, config) in store {
            if user.contains_key(&name) {
                shadowed.push(name);
            } else {
                servers.push(Server { config, origin: Origin::Store });
            }
        }
        Servers { servers, shadowed }
    }

    /// The store's servers as its configuration and the user's file in `config_dir` (see
    /// [`user_config_dir`]; `None`: no user configuration) define them.
    pub fn load(config: &Config, config_dir: Option<&Path>) -> Result<Servers> {
        let user = match config_dir {
            Some(dir) => crate::config::servers::load_user_servers(&dir.join(USER_SERVERS_FILE))?,
            None => BTreeMap::new(),
        };
        Ok(Servers::new(user, config.servers.clone()))
    }

    pub fn get(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// Every server in order of precedence.
    pub fn iter(&self) -> impl Iterator<Item = &Server> {
        self.servers.iter()
    }

    /// Store tables not used because the user's `servers.toml` defines the same name.
    pub fn shadowed(&self) -> &[String] {
        &self.shadowed
    }
}

/// Who answers for a file of the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner<'a> {
    /// A document (SPEC §2): the core itself, never a language server.
    Document,
    /// A code file, served by this server, opened with this LSP `languageId`.
    Server { server: &'a str, language_id: String },
}

/// Who covers the store-relative path `rel` (`/`-separated). Documents are the core's. Then,
/// the user's servers before the store's: within each, a server whose `globs` match (the
/// exceptions), then the one whose `languages` name the file's extension. `unsupported` when
/// none does, and for files in the store's private folders.
pub fn route<'a>(config: &Config, servers: &'a Servers, rel: &str) -> Result<Owner<'a>> {
    if scan::is_document_path(config, rel) {
        return Ok(Owner::Document);
    }
    if rel.split('/').next().is_some_and(|first| scan::PRIVATE_DIRS.contains(&first)) {
        return Err(Error::Unsupported(format!(
            "{rel} is in the store's private folder; no language server serves it"
        )));
    }
    let ext = Path::new(rel).extension().and_then(|e| e.to_str());
    for origin in [Origin::User, Origin::Store] {
        let of_origin = || servers.iter().filter(move |s| s.origin == origin);
        if let Some(server) = of_origin().find(|s| s.config.glob_set.is_match(rel)) {
            let language_id = ext
                .map(|ext| server.config.languages.get(ext).cloned().unwrap_or(ext.to_owned()))
                .unwrap_or_else(|| "plaintext".to_owned());
            return Ok(Owner::Server { server: server.name(), language_id });
        }
        if let Some(ext) = ext
            && let Some((server, id)) =
                of_origin().find_map(|s| s.config.languages.get(ext).map(|id| (s, id)))
        {
            return Ok(Owner::Server { server: server.name(), language_id: id.clone() });
        }
    }
    let hint = match ext {
        Some(ext) => format!("languages include \"{ext}\" or whose globs match it"),
        None => "globs match it".to_owned(),
    };
    Err(Error::Unsupported(format!(
        "no language server covers {rel}; add a [servers.<name>] table (stardust.toml or your \
         servers.toml) whose {hint}"
    )))
}

/// How many entries of the store `workspace_symbols` looks at for a server's first file
/// ([`first_file`]) before it gives up: a bound on the cost of one call on a huge store whose
/// server covers no early file.
pub const FIRST_FILE_BUDGET: usize = 20_000;

/// What `usable` makes of the first file of the store at `root` (in path order:
/// [`scan::find_file`]) that [`route`] gives to the server `name` (a file the server can be
/// given, say). `workspace_symbols` opens it on a server that has no file of its own yet
/// (docs/DECISIONS.md).
pub fn first_file<T>(
    root: &Path,
    config: &Config,
    servers: &Servers,
    name: &str,
    mut usable: impl FnMut(&str) -> Option<T>,
) -> Option<T> {
    scan::find_file(root, config, FIRST_FILE_BUDGET, |rel| match route(config, servers, rel) {
        Ok(Owner::Server { server, .. }) if server == name => usable(rel),
        _ => None,
    })
}

/// The user's `servers.toml` in the configuration folder `dir`.
pub fn user_servers_path(dir: &Path) -> PathBuf {
    dir.join(USER_SERVERS_FILE)
}

/// What `stardust trust STORE` recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustReport {
    /// The store's canonical path: the key in `trusted.toml`.
    pub store: PathBuf,
    /// The `trusted.toml` written.
    pub file: PathBuf,
    /// The store's tables, in name order, as the user should review them.
    pub servers: Vec<TrustedServer>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedServer {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// The user's `servers.toml` defines the name, so this table is not used (still recorded).
    pub shadowed: bool,
}

/// `stardust trust STORE`: record the hash of every `[servers.*]` table of the store's
/// `stardust.toml` as it is now in `config_dir`'s `trusted.toml`, replacing what was recorded
/// for the store. An invalid configuration (the store's or the user's) is refused: nothing is
/// trusted that the core would not run as written.
pub fn trust_store(store: &Path, config_dir: &Path) -> Result<TrustReport> {
    let store = canonical_store(store)?;
    let config = Config::load(&store)?;
    let servers = Servers::load(&config, Some(config_dir))?;
    let file = config_dir.join(TRUSTED_FILE);
    trust::locked(&file, || {
        let before = Trusted::load(&file)?;
        let mut trusted = before.clone();
        trusted.trust(&store, &config.servers)?;
        // Unchanged (the same tables again, or none and none recorded): no file is written.
        if trusted != before {
            trusted.save(&file)?;
        }
        Ok(())
    })?;
    let servers = config
        .servers
        .values()
        .map(|c| TrustedServer {
            name: c.name.clone(),
            command: c.command.clone(),
            args: c.args.clone(),
            shadowed: servers.shadowed().contains(&c.name),
        })
        .collect();
    Ok(TrustReport { store, file, servers })
}

/// `stardust trust --revoke STORE`: forget the store in `config_dir`'s `trusted.toml`. The
/// store's path and the names that were trusted (none: it was not trusted, and the file is
/// left as it was). A store that no longer exists is forgotten by its absolute path, so trust
/// in a deleted clone can still be revoked.
pub fn revoke_store(store: &Path, config_dir: &Path) -> Result<(PathBuf, Vec<String>)> {
    let store = match std::fs::canonicalize(store) {
        Ok(canonical) => scan::mount_store(&canonical).unwrap_or(canonical),
        Err(_) => std::path::absolute(store).map_err(|err| {
            Error::InvalidArguments(format!("cannot resolve the path {}: {err}", store.display()))
        })?,
    };
    let file = config_dir.join(TRUSTED_FILE);
    let revoked = trust::locked(&file, || {
        let mut trusted = Trusted::load(&file)?;
        let revoked = trusted.revoke(&store);
        if !revoked.is_empty() {
            trusted.save(&file)?;
        }
        Ok(revoked)
    })?;
    Ok((store, revoked))
}

/// A store's folder, canonical: trust is keyed by it, so a link or `..` cannot name a store
/// twice. A mount of a store (its `.stardust/store.json`) stands for the store it shows, as it
/// does for every command.
fn canonical_store(store: &Path) -> Result<PathBuf> {
    let canonical = std::fs::canonicalize(store).map_err(|err| {
        Error::NotFound(format!("cannot find the store {}: {err}", store.display()))
    })?;
    let canonical = scan::mount_store(&canonical).unwrap_or(canonical);
    if !canonical.is_dir() {
        return Err(Error::InvalidArguments(format!(
            "{} is not a folder; give the store's folder",
            store.display()
        )));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests;

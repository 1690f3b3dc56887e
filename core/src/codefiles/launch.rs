//! May this server start? The rule, as a pure function of the server's table, the recorded
//! trust and what the file system says about candidate programs ([`Probe`]): the resolved
//! [`LaunchSpec`], or `untrusted` / `server-unavailable`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{Origin, Server, Trusted};
use crate::config::{Start, Timeouts};
use crate::error::Code;

/// Everything the supervisor needs to start one server: nothing left to look up. Field for
/// field what the `stardust-servers` crate's `ServerSpec` takes (`origin` and `root_markers`
/// beside), so converting is a move.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchSpec {
    /// The table's name.
    pub name: String,
    pub origin: Origin,
    /// The program, absolute (PATH already searched).
    pub command: PathBuf,
    pub args: Vec<String>,
    /// The store's root (canonical): the default workspace root.
    pub root: PathBuf,
    pub languages: BTreeMap<String, String>,
    pub initialization_options: Option<Value>,
    pub settings: Value,
    pub root_markers: Vec<String>,
    pub timeouts: Timeouts,
    pub max_restarts: u32,
    /// Eager servers are warmed up when the core starts or a session attaches (SPEC §25).
    pub start: Start,
    /// A running server no session has used for this long is stopped.
    pub idle_stop: Duration,
}

/// Why a server may not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// A store table with no trust recorded, or changed since it was trusted.
    #[error(
        "the language server '{server}' is configured in {store}/stardust.toml and {}; nothing \
         was started. Review its [servers.{server}] table, then run `{}`",
        if *.changed { "its table changed since it was trusted" } else { "is not trusted" },
        trust_command(store),
        store = store.display()
    )]
    Untrusted { server: String, store: PathBuf, changed: bool },
    /// The command is not on PATH, not a file, or not executable.
    #[error(
        "the language server '{server}' cannot start: {why}; install it, or set \
         servers.{server}.command to its absolute path"
    )]
    Unavailable { server: String, command: String, why: String },
}

impl LaunchError {
    pub fn code(&self) -> Code {
        match self {
            LaunchError::Untrusted { .. } => Code::Untrusted,
            LaunchError::Unavailable { .. } => Code::ServerUnavailable,
        }
    }

    /// The details of the error object (`error::error_object`): the server, and for
    /// `untrusted` the exact command that trusts it.
    pub fn details(&self) -> Value {
        match self {
            LaunchError::Untrusted { server, store, changed } => serde_json::json!({
                "server": server,
                "store": store,
                "changed": changed,
                "run": trust_command(store),
            }),
            LaunchError::Unavailable { server, command, .. } => {
                serde_json::json!({ "server": server, "command": command })
            }
        }
    }
}

/// The command that trusts the store at `store`, ready to paste.
pub fn trust_command(store: &Path) -> String {
    format!("stardust trust {}", shell_word(&store.to_string_lossy()))
}

/// What the file system says about a candidate program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    Missing,
    /// There, but a folder or a file without an execute bit.
    NotExecutable,
    Executable,
}

/// The real probe: a regular file (links followed) with an execute bit.
pub fn probe(path: &Path) -> Probe {
    match std::fs::metadata(path) {
        Err(_) => Probe::Missing,
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => Probe::Executable,
        Ok(_) => Probe::NotExecutable,
    }
}

/// The program `command` names: itself when absolute, else the first executable `command` in
/// the absolute folders of `path_var` (PATH). Relative and empty PATH entries are skipped: they
/// would resolve against whatever folder the core runs in, often the store, whose files no one
/// trusted. `Err`: why not, for the message.
pub fn find_program(
    command: &str,
    path_var: Option<&OsStr>,
    probe: &dyn Fn(&Path) -> Probe,
) -> Result<PathBuf, String> {
    let command_path = Path::new(command);
    if command_path.is_absolute() {
        return match probe(command_path) {
            Probe::Executable => Ok(command_path.to_owned()),
            Probe::NotExecutable => Err(format!("{command} is not an executable file")),
            Probe::Missing => Err(format!("{command} does not exist")),
        };
    }
    let mut not_executable = None;
    for dir in path_var.map(std::env::split_paths).into_iter().flatten() {
        if !dir.is_absolute() {
            continue;
        }
        let candidate = dir.join(command);
        match probe(&candidate) {
            Probe::Executable => return Ok(candidate),
            Probe::NotExecutable => {
                not_executable.get_or_insert(candidate);
            }
            Probe::Missing => {}
        }
    }
    Err(match not_executable {
        Some(found) => format!("'{command}' is on PATH as {}, but not executable", found.display()),
        None => format!("'{command}' is not found on PATH"),
    })
}

/// May `server` of the store at `store` (canonical) start? A store table must be trusted with
/// the hash it has now (checked before anything is looked up, so an untrusted table costs no
/// probe of the file system); then its command must name an executable program.
pub fn may_start(
    server: &Server,
    store: &Path,
    trusted: &Trusted,
    path_var: Option<&OsStr>,
    probe: &dyn Fn(&Path) -> Probe,
) -> Result<LaunchSpec, LaunchError> {
    let config = &server.config;
    if server.origin == Origin::Store {
        match trusted.hash(store, &config.name) {
            Some(hash) if hash == config.hash => {}
            recorded => {
                return Err(LaunchError::Untrusted {
                    server: config.name.clone(),
                    store: store.to_owned(),
                    changed: recorded.is_some(),
                });
            }
        }
    }
    let program =
        find_program(&config.command, path_var, probe).map_err(|why| LaunchError::Unavailable {
            server: config.name.clone(),
            command: config.command.clone(),
            why,
        })?;
    Ok(LaunchSpec {
        name: config.name.clone(),
        origin: server.origin,
        command: program,
        args: config.args.clone(),
        root: store.to_owned(),
        languages: config.languages.clone(),
        initialization_options: config.initialization_options.clone(),
        settings: config.settings.clone(),
        root_markers: config.root_markers.clone(),
        timeouts: config.timeouts,
        max_restarts: config.max_restarts,
        start: config.start,
        idle_stop: config.idle_stop,
    })
}

/// The workspace root for a server's file at the store-relative path `rel`: the nearest
/// folder at or above the file's, inside the store, that holds one of `markers` (`exists`
/// says whether a store-relative path exists); the store root (`""`) when none does or there
/// are no markers. Never above the store: a marker outside it would root the server in
/// files nobody chose to serve.
pub fn root_for(rel: &str, markers: &[String], exists: &dyn Fn(&str) -> bool) -> String {
    let mut dir = rel.rsplit_once('/').map_or("", |(dir, _)| dir);
    loop {
        let found = markers.iter().any(|marker| {
            exists(&if dir.is_empty() { marker.clone() } else { format!("{dir}/{marker}") })
        });
        if found || dir.is_empty() {
            return if found { dir.to_owned() } else { String::new() };
        }
        dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
}

/// `word` as one shell word: as is when it holds only safe characters, else single-quoted, so
/// the command in a message can be pasted.
pub fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if safe { word.to_owned() } else { format!("'{}'", word.replace('\'', "'\\''")) }
}

//! The plain launch spec of one language server (what the core's `[servers.<name>]` table is
//! converted into), the environment a server starts with, and where the supervisor program is.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use stardust_core::codefiles::LaunchSpec;

/// How to launch and drive one language server. Every field is already checked and resolved:
/// `command` is absolute (looking a name up on PATH and trusting the table are the core's
/// business, before this spec is made).
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// The table's name (`pyright`): in logs, errors and status.
    pub name: String,
    /// The server's executable, an absolute path.
    pub command: PathBuf,
    pub args: Vec<String>,
    /// The folder the server works in (its `rootUri` and only workspace folder, and its working
    /// directory). Absolute.
    pub root: PathBuf,
    /// File extension (without the dot) -> LSP `languageId`.
    pub languages: BTreeMap<String, String>,
    /// Sent as `initializationOptions` (`null` sends none).
    pub initialization_options: Value,
    /// What `workspace/configuration` answers from: a section `a.b` is `settings["a"]["b"]`.
    pub settings: Value,
    pub timeouts: Timeouts,
    /// Crashes restarted within any one minute; past that the server is `server-unavailable`
    /// until an explicit restart.
    pub max_restarts: u32,
    /// A running server no session has used for this long is stopped (SPEC §25).
    pub idle_stop: Duration,
}

/// The three timeouts of SPEC §17 (`timeouts = { startup, request, shutdown }`): the core's
/// own type, so a `[servers.<name>]` table converts without a copy of its fields.
pub use stardust_core::config::Timeouts;

impl From<&LaunchSpec> for ServerSpec {
    /// The core's launch spec (already trusted, its command found on PATH) as this crate
    /// drives it.
    fn from(launch: &LaunchSpec) -> ServerSpec {
        ServerSpec {
            name: launch.name.clone(),
            command: launch.command.clone(),
            args: launch.args.clone(),
            root: launch.root.clone(),
            languages: launch.languages.clone(),
            initialization_options: launch.initialization_options.clone().unwrap_or(Value::Null),
            settings: launch.settings.clone(),
            timeouts: launch.timeouts,
            max_restarts: launch.max_restarts,
            idle_stop: launch.idle_stop,
        }
    }
}

impl ServerSpec {
    /// A spec with SPEC §17's defaults: no arguments, no languages, no options or settings,
    /// the default timeouts, 3 restarts a minute, stopped after 15 minutes unused.
    pub fn new(
        name: impl Into<String>,
        command: impl Into<PathBuf>,
        root: impl Into<PathBuf>,
    ) -> Self {
        ServerSpec {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            root: root.into(),
            languages: BTreeMap::new(),
            initialization_options: Value::Null,
            settings: Value::Object(Default::default()),
            timeouts: Timeouts::default(),
            max_restarts: 3,
            idle_stop: stardust_core::config::servers::DEFAULT_IDLE_STOP,
        }
    }

    /// The `languageId` of `path` by its extension, if this server covers it.
    pub fn language_of(&self, path: &Path) -> Option<&str> {
        let ext = path.extension()?.to_str()?;
        self.languages.get(ext).map(String::as_str)
    }
}

/// The variables a server inherits from the core; every other variable is dropped, so tokens
/// and credentials in the core's environment (`GITHUB_TOKEN`, `AWS_*`, ...) never reach a
/// program named by a store's configuration. Locale, home, temporary and cache folders are
/// kept because servers need them to run at all; `RUSTUP_HOME` and `CARGO_HOME` because
/// rust-analyzer cannot find a toolchain without them when they are not the defaults.
pub const KEPT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "RUSTUP_HOME",
    "CARGO_HOME",
];

/// The environment a server starts with: the variables of `KEPT_ENV` and every `LC_*` locale
/// variable, taken from `from` (the core's own environment in production).
pub fn scrubbed_env(
    from: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut kept: Vec<(OsString, OsString)> = from
        .into_iter()
        .filter(|(key, _)| {
            let key = key.to_string_lossy();
            KEPT_ENV.contains(&key.as_ref()) || key.starts_with("LC_")
        })
        .collect();
    kept.sort();
    kept
}

/// The program that supervises one server (SPEC §17): an executable (an absolute path: it is
/// started in the server's root) and the arguments that
/// put it in supervisor mode before the supervisor's own (`stardust __supervise`, or the
/// crate's stand-alone `stardust-supervisor`, which needs none).
#[derive(Clone, Debug)]
pub struct SupervisorProgram {
    pub exe: PathBuf,
    pub prefix: Vec<OsString>,
}

impl SupervisorProgram {
    /// The stand-alone `stardust-supervisor` executable at `exe`.
    pub fn standalone(exe: impl Into<PathBuf>) -> SupervisorProgram {
        SupervisorProgram { exe: exe.into(), prefix: Vec::new() }
    }

    /// The running `stardust` executable as its own supervisor (`stardust __supervise ...`).
    pub fn stardust() -> std::io::Result<SupervisorProgram> {
        SupervisorProgram::current_exe(crate::supervisor::HIDDEN)
    }

    /// The running executable re-executed with the hidden argument `hidden` first (the
    /// `stardust` binary calls `supervisor::main` when it sees that argument).
    pub fn current_exe(hidden: &str) -> std::io::Result<SupervisorProgram> {
        Ok(SupervisorProgram { exe: std::env::current_exe()?, prefix: vec![hidden.into()] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_keeps_only_what_servers_need() {
        let env = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("GITHUB_TOKEN", "secret"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("LC_ALL", "C.UTF-8"),
            ("LD_PRELOAD", "/tmp/x.so"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<String> =
            scrubbed_env(env).into_iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        assert_eq!(kept, ["HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn languages_by_extension() {
        let mut spec = ServerSpec::new("py", "/bin/true", "/tmp");
        spec.languages.insert("py".into(), "python".into());
        assert_eq!(spec.language_of(Path::new("src/a.py")), Some("python"));
        assert_eq!(spec.language_of(Path::new("src/a.ts")), None);
        assert_eq!(spec.language_of(Path::new("Makefile")), None);
    }
}

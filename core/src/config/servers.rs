//! `[servers.<name>]` tables (SPEC §17): the language servers that serve a store's code files,
//! from the store's `stardust.toml` or the user's `servers.toml`, parsed as strictly as the
//! rest of the configuration.
//!
//! Each table keeps the SHA-256 of its canonical serialisation ([`table_hash`]), which is what
//! `stardust trust` records: a table changed in any way that matters (not comments, layout or
//! key order) must be trusted again.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The file name of the user's server tables, under `$XDG_CONFIG_HOME/stardust/`.
pub const USER_SERVERS_FILE: &str = "servers.toml";

/// Extensions the core serves itself: no server may claim them (SPEC §2 documents).
const DOCUMENT_EXTENSIONS: [&str; 2] = ["json", "dust"];

/// One validated `[servers.<name>]` table.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The table's key: `[servers.<name>]`.
    pub name: String,
    /// As written: an absolute path, or a bare name looked up on PATH when the server starts.
    pub command: String,
    pub args: Vec<String>,
    /// File extension (without the dot) -> LSP `languageId`.
    pub languages: BTreeMap<String, String>,
    /// Extra store-relative globs this server covers, as written.
    pub globs: Vec<String>,
    pub glob_set: GlobSet,
    /// Sent as `initializationOptions`; `None` when the table has none.
    pub initialization_options: Option<Value>,
    /// Answers `workspace/configuration` (an object; empty when the table has none).
    pub settings: Value,
    pub root_markers: Vec<String>,
    pub timeouts: Timeouts,
    /// Restarts allowed per minute after a crash, then `server-unavailable`.
    pub max_restarts: u32,
    /// When the server starts (SPEC §25): in the background as soon as the core starts or a
    /// session attaches, or at the first request that needs it.
    pub start: Start,
    /// How long a running server no session has used is kept before it is stopped.
    pub idle_stop: Duration,
    /// SHA-256 (lowercase hex) of the table's canonical serialisation ([`table_hash`]).
    pub hash: String,
}

/// `timeouts = { startup, request, shutdown }`, in seconds in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub startup: Duration,
    pub request: Duration,
    pub shutdown: Duration,
}

impl Default for Timeouts {
    /// SPEC §17: 30 s to start, 30 s per request, 5 s to shut down.
    fn default() -> Timeouts {
        Timeouts {
            startup: Duration::from_secs(30),
            request: Duration::from_secs(30),
            shutdown: Duration::from_secs(5),
        }
    }
}

/// SPEC §17's default for `max_restarts`.
pub const DEFAULT_MAX_RESTARTS: u32 = 3;

/// SPEC §25's default for `idle_stop`: 15 minutes.
pub const DEFAULT_IDLE_STOP: Duration = Duration::from_secs(900);

/// `start = "eager" | "lazy"` (SPEC §25).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// Started in the background when the core starts or a session attaches (the default).
    #[default]
    Eager,
    /// Started by the first request that needs it.
    Lazy,
}

impl Start {
    pub fn as_str(self) -> &'static str {
        match self {
            Start::Eager => "eager",
            Start::Lazy => "lazy",
        }
    }
}

/// The raw table, deserialised with the file so that a wrong key or type is reported with its
/// line and column by the TOML parser.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServerTable {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    languages: BTreeMap<String, String>,
    #[serde(default)]
    globs: Vec<String>,
    initialization_options: Option<toml::Value>,
    settings: Option<toml::Table>,
    #[serde(default)]
    root_markers: Vec<String>,
    #[serde(default)]
    timeouts: RawTimeouts,
    max_restarts: Option<u32>,
    start: Option<Start>,
    idle_stop: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTimeouts {
    startup: Option<u64>,
    request: Option<u64>,
    shutdown: Option<u64>,
}

/// The user's `servers.toml`: only `[servers.<name>]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServersFile {
    #[serde(default)]
    servers: BTreeMap<String, ServerTable>,
}

/// Parse the user's `servers.toml` text; `path` only names the file in errors.
pub fn parse_user_servers(text: &str, path: &Path) -> Result<BTreeMap<String, ServerConfig>> {
    let raw: RawServersFile = toml::from_str(text).map_err(|err| Error::ConfigInvalid {
        path: path.to_owned(),
        message: err.to_string().trim_end().to_owned(),
    })?;
    validate(raw.servers, text, path)
}

/// Read the user's `servers.toml` at `path`; a missing file holds no servers. Its commands
/// run without trust, so a file that group or others may write is refused.
pub fn load_user_servers(path: &Path) -> Result<BTreeMap<String, ServerConfig>> {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o022 != 0
    {
        return Err(Error::ConfigInvalid {
            path: path.to_owned(),
            message: format!(
                "other users may write it, and its commands run without trust; run `chmod 600 \
                 {}`",
                path.display()
            ),
        });
    }
    match std::fs::read_to_string(path) {
        Ok(text) => parse_user_servers(&text, path),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(err) => Err(Error::ConfigInvalid {
            path: path.to_owned(),
            message: format!("cannot read it: {err}"),
        }),
    }
}

/// Validate every table of one file. `text` is the file again, read as plain TOML to hash each
/// table as written; it parsed once already, so it parses again.
pub(super) fn validate(
    raw: BTreeMap<String, ServerTable>,
    text: &str,
    path: &Path,
) -> Result<BTreeMap<String, ServerConfig>> {
    let invalid = |message: String| Error::ConfigInvalid { path: path.to_owned(), message };
    let tables: toml::Table = toml::from_str(text).map_err(|err| invalid(err.to_string()))?;
    let tables = match tables.get("servers") {
        Some(toml::Value::Table(tables)) => tables.clone(),
        _ => toml::Table::new(),
    };

    let mut out = BTreeMap::new();
    // extension -> the server that claimed it first (names in order).
    let mut claimed: BTreeMap<String, String> = BTreeMap::new();
    for (name, entry) in raw {
        let key = format!("servers.{name}");
        check_name(&name).map_err(|why| invalid(format!("{key}: {why}")))?;
        let command = entry.command.ok_or_else(|| {
            invalid(format!(
                "{key}.command is missing: give the server's executable (an absolute path or a \
                 name on PATH)"
            ))
        })?;
        check_command(&command).map_err(|why| invalid(format!("{key}.command: {why}")))?;

        if entry.languages.is_empty() && entry.globs.is_empty() {
            return Err(invalid(format!(
                "{key} covers no file: give languages (extension -> languageId) or globs"
            )));
        }
        for (ext, id) in &entry.languages {
            check_extension(ext).map_err(|why| invalid(format!("{key}.languages: {why}")))?;
            if id.trim().is_empty() {
                return Err(invalid(format!(
                    "{key}.languages.{ext}: the languageId is empty; give the LSP languageId, \
                     e.g. \"python\""
                )));
            }
            if let Some(first) = claimed.get(ext) {
                return Err(invalid(format!(
                    "{key}.languages.{ext}: the extension \"{ext}\" is already served by \
                     servers.{first}; one extension has one server (use globs for exceptions)"
                )));
            }
            claimed.insert(ext.clone(), name.clone());
        }

        let mut glob_set = GlobSetBuilder::new();
        for pattern in &entry.globs {
            check_glob_path(pattern)
                .map_err(|why| invalid(format!("{key}.globs: '{pattern}' {why}")))?;
            let glob = Glob::new(pattern).map_err(|err| {
                invalid(format!("{key}.globs: '{pattern}' is not a valid glob: {err}"))
            })?;
            glob_set.add(glob);
        }
        let glob_set = glob_set
            .build()
            .map_err(|err| invalid(format!("{key}.globs: the globs cannot be combined: {err}")))?;

        for marker in &entry.root_markers {
            check_marker(marker)
                .map_err(|why| invalid(format!("{key}.root_markers: '{marker}' {why}")))?;
        }

        let defaults = Timeouts::default();
        let seconds = |value: Option<u64>, field: &str, default: Duration| match value {
            None => Ok(default),
            Some(0) => Err(invalid(format!(
                "{key}.timeouts.{field} is 0; give at least 1 second (the default is {})",
                default.as_secs()
            ))),
            Some(s) => Ok(Duration::from_secs(s)),
        };
        let timeouts = Timeouts {
            startup: seconds(entry.timeouts.startup, "startup", defaults.startup)?,
            request: seconds(entry.timeouts.request, "request", defaults.request)?,
            shutdown: seconds(entry.timeouts.shutdown, "shutdown", defaults.shutdown)?,
        };

        let idle_stop = match entry.idle_stop {
            None => DEFAULT_IDLE_STOP,
            Some(0) => {
                return Err(invalid(format!(
                    "{key}.idle_stop is 0; give at least 1 second (the default is {})",
                    DEFAULT_IDLE_STOP.as_secs()
                )));
            }
            Some(s) => Duration::from_secs(s),
        };

        let table = tables.get(&name).cloned().unwrap_or(toml::Value::Table(toml::Table::new()));
        out.insert(
            name.clone(),
            ServerConfig {
                name: name.clone(),
                command,
                args: entry.args,
                languages: entry.languages,
                globs: entry.globs,
                glob_set,
                initialization_options: entry.initialization_options.as_ref().map(to_json),
                settings: to_json(&toml::Value::Table(entry.settings.unwrap_or_default())),
                root_markers: entry.root_markers,
                timeouts,
                max_restarts: entry.max_restarts.unwrap_or(DEFAULT_MAX_RESTARTS),
                start: entry.start.unwrap_or_default(),
                idle_stop,
                hash: table_hash(&table),
            },
        );
    }
    Ok(out)
}

/// A server's name shows in messages, in `server_restart {server}` and in `trusted.toml`:
/// ASCII letters, digits, `-` and `_`, starting with a letter or digit.
fn check_name(name: &str) -> std::result::Result<(), String> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{name}' is not a valid server name; use ASCII letters, digits, '-' and '_', \
             starting with a letter or digit"
        ))
    }
}

/// SPEC §17: an absolute path, or a name looked up on PATH. A relative path with a `/` would
/// depend on the working directory of whichever process starts the server.
fn check_command(command: &str) -> std::result::Result<(), String> {
    if command.trim().is_empty() {
        return Err("is empty; give an absolute path or a name on PATH".to_owned());
    }
    if command.contains('\0') {
        return Err("contains a NUL byte".to_owned());
    }
    if Path::new(command).is_absolute() {
        return Ok(());
    }
    if command.contains('/') {
        return Err(format!(
            "'{command}' is a relative path; give an absolute path or a bare name looked up \
             on PATH"
        ));
    }
    if command.chars().any(char::is_whitespace) {
        return Err(format!(
            "'{command}' holds a space; put the arguments in args, e.g. command = \"{}\", args \
             = [...]",
            command.split_whitespace().next().unwrap_or_default()
        ));
    }
    Ok(())
}

/// An extension as `Path::extension` gives it: no dot, no `/`, not a document's.
fn check_extension(ext: &str) -> std::result::Result<(), String> {
    if let Some(bare) = ext.strip_prefix('.') {
        return Err(format!("'{ext}': write the extension without the dot, as \"{bare}\""));
    }
    if ext.is_empty() || ext.contains(['.', '/', '\\']) || ext.chars().any(char::is_whitespace) {
        return Err(format!(
            "'{ext}' is not a file extension; give what follows the last dot, e.g. \"py\""
        ));
    }
    if DOCUMENT_EXTENSIONS.contains(&ext) {
        return Err(format!(
            "'{ext}': .{ext} files are the store's documents, served by Stardust itself"
        ));
    }
    Ok(())
}

/// Globs are store-relative, like `store.ignore`.
fn check_glob_path(pattern: &str) -> std::result::Result<(), String> {
    if pattern.is_empty() {
        return Err("is empty".to_owned());
    }
    if pattern.starts_with('/') {
        return Err("must be relative to the store root".to_owned());
    }
    if pattern.split('/').any(|part| part == "..") {
        return Err("must not leave the store ('..' is not allowed)".to_owned());
    }
    Ok(())
}

/// A root marker names a file or folder looked for in a folder (`pyproject.toml`, `.git`).
fn check_marker(marker: &str) -> std::result::Result<(), String> {
    if marker.is_empty() || marker == "." || marker == ".." {
        return Err("is not a file name".to_owned());
    }
    if marker.starts_with('/') {
        return Err("must be a name relative to a folder, not an absolute path".to_owned());
    }
    if marker.split('/').any(|part| part == "..") {
        return Err("must not leave the folder ('..' is not allowed)".to_owned());
    }
    Ok(())
}

/// SHA-256, lowercase hex, of the table's canonical serialisation: the table as compact JSON
/// ([`canonical_json`]). Comments, layout, key order and inline-versus-standard tables do not
/// change it; every value does.
pub fn table_hash(table: &toml::Value) -> String {
    let digest = Sha256::digest(canonical_json(table).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The canonical serialisation: JSON with no whitespace, object keys sorted by their UTF-8
/// bytes, strings escaped as serde_json escapes them, integers in decimal, finite floats as
/// serde_json writes them (shortest round-trip), non-finite floats and datetimes as strings of
/// their TOML text.
pub fn canonical_json(value: &toml::Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &toml::Value, out: &mut String) {
    match value {
        toml::Value::Table(table) => {
            let mut keys: Vec<&String> = table.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&table[key], out);
            }
            out.push('}');
        }
        toml::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&to_json(other).to_string()),
    }
}

/// A TOML value as JSON (which LSP speaks). Tables become objects in their key order.
fn to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map_or_else(|| Value::String(f.to_string()), Value::Number),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        toml::Value::Table(table) => {
            Value::Object(table.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;

    use expect_test::{Expect, expect};

    use super::*;
    use crate::config::Config;

    /// Each case is a stardust.toml; the report shows the servers it yields or its error.
    fn check(cases: &[&str], expect: Expect) {
        let mut report = String::new();
        for text in cases {
            writeln!(report, "## {}", text.trim().replace('\n', "\n## ")).unwrap();
            match Config::parse(text, Path::new("stardust.toml")) {
                Ok(config) => {
                    for s in config.servers.values() {
                        writeln!(
                            report,
                            "{}: {} {:?} languages={:?} globs={:?} init={} settings={} \
                             markers={:?} timeouts={}/{}/{} max_restarts={} start={} \
                             idle_stop={}",
                            s.name,
                            s.command,
                            s.args,
                            s.languages,
                            s.globs,
                            s.initialization_options
                                .as_ref()
                                .map_or("-".to_owned(), Value::to_string),
                            s.settings,
                            s.root_markers,
                            s.timeouts.startup.as_secs(),
                            s.timeouts.request.as_secs(),
                            s.timeouts.shutdown.as_secs(),
                            s.max_restarts,
                            s.start.as_str(),
                            s.idle_stop.as_secs(),
                        )
                        .unwrap();
                    }
                }
                Err(err) => {
                    assert_eq!(err.code(), "config-invalid");
                    writeln!(report, "{err}").unwrap();
                }
            }
            report.push('\n');
        }
        expect.assert_eq(&report);
    }

    #[test]
    fn valid_tables_and_their_defaults() {
        check(
            &[
                "[servers.pyright]\ncommand = \"pyright-langserver\"\nargs = [\"--stdio\"]\n\
                 languages = { py = \"python\", pyi = \"python\" }\n",
                r#"
[servers.clangd]
command = "/usr/bin/clangd"
languages = { c = "c", h = "c", cpp = "cpp" }
globs = ["include/**/*.inc"]
initialization_options = { fallbackFlags = ["-std=c11"] }
settings = { clangd = { arguments = ["--background-index"] } }
root_markers = ["compile_commands.json", ".git"]
timeouts = { startup = 60, request = 10, shutdown = 2 }
max_restarts = 0
"#,
                "[servers.docs]\ncommand = \"marksman\"\nglobs = [\"docs/**\"]\n\
                 timeouts = { request = 5 }\n",
                "[servers.big]\ncommand = \"x\"\nlanguages = { py = \"python\" }\n\
                 start = \"lazy\"\nidle_stop = 60\n",
                "[servers.big]\ncommand = \"x\"\nlanguages = { py = \"python\" }\n\
                 start = \"eager\"\n",
            ],
            expect![[r###"
                ## [servers.pyright]
                ## command = "pyright-langserver"
                ## args = ["--stdio"]
                ## languages = { py = "python", pyi = "python" }
                pyright: pyright-langserver ["--stdio"] languages={"py": "python", "pyi": "python"} globs=[] init=- settings={} markers=[] timeouts=30/30/5 max_restarts=3 start=eager idle_stop=900

                ## [servers.clangd]
                ## command = "/usr/bin/clangd"
                ## languages = { c = "c", h = "c", cpp = "cpp" }
                ## globs = ["include/**/*.inc"]
                ## initialization_options = { fallbackFlags = ["-std=c11"] }
                ## settings = { clangd = { arguments = ["--background-index"] } }
                ## root_markers = ["compile_commands.json", ".git"]
                ## timeouts = { startup = 60, request = 10, shutdown = 2 }
                ## max_restarts = 0
                clangd: /usr/bin/clangd [] languages={"c": "c", "cpp": "cpp", "h": "c"} globs=["include/**/*.inc"] init={"fallbackFlags":["-std=c11"]} settings={"clangd":{"arguments":["--background-index"]}} markers=["compile_commands.json", ".git"] timeouts=60/10/2 max_restarts=0 start=eager idle_stop=900

                ## [servers.docs]
                ## command = "marksman"
                ## globs = ["docs/**"]
                ## timeouts = { request = 5 }
                docs: marksman [] languages={} globs=["docs/**"] init=- settings={} markers=[] timeouts=30/5/5 max_restarts=3 start=eager idle_stop=900

                ## [servers.big]
                ## command = "x"
                ## languages = { py = "python" }
                ## start = "lazy"
                ## idle_stop = 60
                big: x [] languages={"py": "python"} globs=[] init=- settings={} markers=[] timeouts=30/30/5 max_restarts=3 start=lazy idle_stop=60

                ## [servers.big]
                ## command = "x"
                ## languages = { py = "python" }
                ## start = "eager"
                big: x [] languages={"py": "python"} globs=[] init=- settings={} markers=[] timeouts=30/30/5 max_restarts=3 start=eager idle_stop=900

            "###]],
        );
    }

    #[test]
    fn invalid_tables_name_the_key() {
        check(
            &[
                "[servers.a]\ncomand = \"x\"\nlanguages = { py = \"python\" }\n",
                "[servers.a]\nlanguages = { py = \"python\" }\n",
                "[servers.a]\ncommand = \"\"\nlanguages = { py = \"python\" }\n",
                "[servers.a]\ncommand = \"bin/pyright\"\nlanguages = { py = \"python\" }\n",
                "[servers.a]\ncommand = \"pyright-langserver --stdio\"\nlanguages = { py = \"python\" }\n",
                "[servers.a]\ncommand = \"x\"\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { \".py\" = \"python\" }\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { json = \"json\" }\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"\" }\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\n\
                 [servers.b]\ncommand = \"y\"\nlanguages = { py = \"python\" }\n",
                "[servers.a]\ncommand = \"x\"\nglobs = [\"src/[\"]\n",
                "[servers.a]\ncommand = \"x\"\nglobs = [\"../other/**\"]\n",
                "[servers.a]\ncommand = \"x\"\nglobs = [\"/etc/**\"]\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\ntimeouts = { startup = 0 }\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\ntimeouts = { start = 3 }\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\ntimeouts = { request = -1 }\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nmax_restarts = \"3\"\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nargs = \"--stdio\"\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nsettings = 3\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nroot_markers = [\"../up\"]\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nstart = \"soon\"\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nstart = true\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nidle_stop = 0\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nidle_stop = -5\n",
                "[servers.a]\ncommand = \"x\"\nlanguages = { py = \"python\" }\nidle_stop = \"15m\"\n",
                "[servers.\"my server\"]\ncommand = \"x\"\nlanguages = { py = \"python\" }\n",
                "[servers]\ncommand = \"x\"\n",
            ],
            expect![[r###"
                ## [servers.a]
                ## comand = "x"
                ## languages = { py = "python" }
                invalid configuration in stardust.toml: TOML parse error at line 2, column 1
                  |
                2 | comand = "x"
                  | ^^^^^^
                unknown field `comand`, expected one of `command`, `args`, `languages`, `globs`, `initialization_options`, `settings`, `root_markers`, `timeouts`, `max_restarts`, `start`, `idle_stop`

                ## [servers.a]
                ## languages = { py = "python" }
                invalid configuration in stardust.toml: servers.a.command is missing: give the server's executable (an absolute path or a name on PATH)

                ## [servers.a]
                ## command = ""
                ## languages = { py = "python" }
                invalid configuration in stardust.toml: servers.a.command: is empty; give an absolute path or a name on PATH

                ## [servers.a]
                ## command = "bin/pyright"
                ## languages = { py = "python" }
                invalid configuration in stardust.toml: servers.a.command: 'bin/pyright' is a relative path; give an absolute path or a bare name looked up on PATH

                ## [servers.a]
                ## command = "pyright-langserver --stdio"
                ## languages = { py = "python" }
                invalid configuration in stardust.toml: servers.a.command: 'pyright-langserver --stdio' holds a space; put the arguments in args, e.g. command = "pyright-langserver", args = [...]

                ## [servers.a]
                ## command = "x"
                invalid configuration in stardust.toml: servers.a covers no file: give languages (extension -> languageId) or globs

                ## [servers.a]
                ## command = "x"
                ## languages = { ".py" = "python" }
                invalid configuration in stardust.toml: servers.a.languages: '.py': write the extension without the dot, as "py"

                ## [servers.a]
                ## command = "x"
                ## languages = { json = "json" }
                invalid configuration in stardust.toml: servers.a.languages: 'json': .json files are the store's documents, served by Stardust itself

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "" }
                invalid configuration in stardust.toml: servers.a.languages.py: the languageId is empty; give the LSP languageId, e.g. "python"

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## [servers.b]
                ## command = "y"
                ## languages = { py = "python" }
                invalid configuration in stardust.toml: servers.b.languages.py: the extension "py" is already served by servers.a; one extension has one server (use globs for exceptions)

                ## [servers.a]
                ## command = "x"
                ## globs = ["src/["]
                invalid configuration in stardust.toml: servers.a.globs: 'src/[' is not a valid glob: error parsing glob 'src/[': unclosed character class; missing ']'

                ## [servers.a]
                ## command = "x"
                ## globs = ["../other/**"]
                invalid configuration in stardust.toml: servers.a.globs: '../other/**' must not leave the store ('..' is not allowed)

                ## [servers.a]
                ## command = "x"
                ## globs = ["/etc/**"]
                invalid configuration in stardust.toml: servers.a.globs: '/etc/**' must be relative to the store root

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## timeouts = { startup = 0 }
                invalid configuration in stardust.toml: servers.a.timeouts.startup is 0; give at least 1 second (the default is 30)

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## timeouts = { start = 3 }
                invalid configuration in stardust.toml: TOML parse error at line 4, column 14
                  |
                4 | timeouts = { start = 3 }
                  |              ^^^^^
                unknown field `start`, expected one of `startup`, `request`, `shutdown`

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## timeouts = { request = -1 }
                invalid configuration in stardust.toml: TOML parse error at line 4, column 24
                  |
                4 | timeouts = { request = -1 }
                  |                        ^^
                invalid value: integer `-1`, expected u64

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## max_restarts = "3"
                invalid configuration in stardust.toml: TOML parse error at line 4, column 16
                  |
                4 | max_restarts = "3"
                  |                ^^^
                invalid type: string "3", expected u32

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## args = "--stdio"
                invalid configuration in stardust.toml: TOML parse error at line 4, column 8
                  |
                4 | args = "--stdio"
                  |        ^^^^^^^^^
                invalid type: string "--stdio", expected a sequence

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## settings = 3
                invalid configuration in stardust.toml: TOML parse error at line 4, column 12
                  |
                4 | settings = 3
                  |            ^
                invalid type: integer `3`, expected a map

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## root_markers = ["../up"]
                invalid configuration in stardust.toml: servers.a.root_markers: '../up' must not leave the folder ('..' is not allowed)

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## start = "soon"
                invalid configuration in stardust.toml: TOML parse error at line 4, column 9
                  |
                4 | start = "soon"
                  |         ^^^^^^
                unknown variant `soon`, expected `eager` or `lazy`

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## start = true
                invalid configuration in stardust.toml: TOML parse error at line 4, column 9
                  |
                4 | start = true
                  |         ^^^^
                wanted string or table

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## idle_stop = 0
                invalid configuration in stardust.toml: servers.a.idle_stop is 0; give at least 1 second (the default is 900)

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## idle_stop = -5
                invalid configuration in stardust.toml: TOML parse error at line 4, column 13
                  |
                4 | idle_stop = -5
                  |             ^^
                invalid value: integer `-5`, expected u64

                ## [servers.a]
                ## command = "x"
                ## languages = { py = "python" }
                ## idle_stop = "15m"
                invalid configuration in stardust.toml: TOML parse error at line 4, column 13
                  |
                4 | idle_stop = "15m"
                  |             ^^^^^
                invalid type: string "15m", expected u64

                ## [servers."my server"]
                ## command = "x"
                ## languages = { py = "python" }
                invalid configuration in stardust.toml: servers.my server: 'my server' is not a valid server name; use ASCII letters, digits, '-' and '_', starting with a letter or digit

                ## [servers]
                ## command = "x"
                invalid configuration in stardust.toml: TOML parse error at line 2, column 11
                  |
                2 | command = "x"
                  |           ^^^
                invalid type: string "x", expected struct ServerTable

            "###]],
        );
    }

    #[test]
    fn the_hash_ignores_layout_and_sees_every_value() {
        let hash = |text: &str| {
            Config::parse(text, Path::new("stardust.toml")).unwrap().servers["a"].hash.clone()
        };
        let base = hash(
            "[servers.a]\ncommand = \"x\"\nargs = [\"--stdio\"]\nlanguages = { py = \"python\" }\n",
        );
        // Comments, key order, layout and inline-versus-standard tables: the same table.
        assert_eq!(
            base,
            hash(
                "# a comment\n[servers.a]\nlanguages.py = \"python\" # here too\n\
                 args = [ \"--stdio\" ]\ncommand = 'x'\n"
            )
        );
        assert_eq!(
            base,
            hash(
                "[servers.a]\ncommand = \"x\"\nargs = [\"--stdio\"]\n\n\
                 [servers.a.languages]\npy = \"python\"\n"
            )
        );
        // Another table beside it does not change it.
        assert_eq!(
            base,
            hash(
                "[servers.a]\ncommand = \"x\"\nargs = [\"--stdio\"]\nlanguages = { py = \"python\" }\n\
                 [servers.b]\ncommand = \"y\"\nlanguages = { c = \"c\" }\n"
            )
        );
        // Any value does, a default written out included (the table as written is trusted).
        for changed in [
            "[servers.a]\ncommand = \"y\"\nargs = [\"--stdio\"]\nlanguages = { py = \"python\" }\n",
            "[servers.a]\ncommand = \"x\"\nargs = [\"--stdio\", \"-v\"]\nlanguages = { py = \"python\" }\n",
            "[servers.a]\ncommand = \"x\"\nargs = [\"--stdio\"]\nlanguages = { py = \"python3\" }\n",
            "[servers.a]\ncommand = \"x\"\nargs = [\"--stdio\"]\nlanguages = { py = \"python\" }\nmax_restarts = 3\n",
        ] {
            assert_ne!(base, hash(changed), "{changed}");
        }
        let table: toml::Value =
            toml::from_str("b = 1\na = { y = [1.5, true, 1979-05-27], x = \"\\\"q\" }").unwrap();
        expect![[r#"{"a":{"x":"\"q","y":[1.5,true,"1979-05-27"]},"b":1}"#]]
            .assert_eq(&canonical_json(&table));
    }

    #[test]
    fn the_users_file_holds_only_server_tables() {
        let path = Path::new("/home/u/.config/stardust/servers.toml");
        let servers = parse_user_servers(
            "[servers.clangd]\ncommand = \"clangd\"\nlanguages = { c = \"c\" }\n",
            path,
        )
        .unwrap();
        assert_eq!(servers["clangd"].command, "clangd");
        let err = parse_user_servers("[store]\nignore = []\n", path).unwrap_err();
        assert_eq!(err.code(), "config-invalid");
        expect![[r#"
            invalid configuration in /home/u/.config/stardust/servers.toml: TOML parse error at line 1, column 2
              |
            1 | [store]
              |  ^^^^^
            unknown field `store`, expected `servers`"#]].assert_eq(&err.to_string());
        let missing = load_user_servers(Path::new("/nonexistent/servers.toml")).unwrap();
        assert!(missing.is_empty());

        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join(USER_SERVERS_FILE);
        std::fs::write(&file, "[servers.c]\ncommand = \"clangd\"\nlanguages = { c = \"c\" }\n")
            .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(load_user_servers(&file).unwrap().len(), 1);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
        let err = load_user_servers(&file).unwrap_err();
        assert_eq!(err.code(), "config-invalid");
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }
}

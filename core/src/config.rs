//! `stardust.toml`: the strict store configuration (SPEC §2).
//!
//! Every key is optional, and every unknown key, wrong type or inconsistent combination is a
//! `config-invalid` error naming the key, so a typo never silently changes behaviour.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::diagnostics::DiagnosticCode;
use crate::error::{Error, Result};
use crate::ignores::ProjectIgnores;
use crate::schema::{Dialect, Formats};
use crate::syntax::Lang;

mod keys;
pub mod servers;

pub use servers::{ServerConfig, Start, Timeouts};

pub const CONFIG_FILE: &str = "stardust.toml";

/// The `.json` documents written as JSON with comments when `[store] jsonc` is not set
/// (SPEC §23): the configuration files of TypeScript, JavaScript, VS Code and dev containers.
pub const DEFAULT_JSONC: [&str; 6] = [
    "**/tsconfig.json",
    "**/tsconfig.*.json",
    "**/jsconfig.json",
    "**/.vscode/*.json",
    "**/.devcontainer/devcontainer.json",
    "**/.devcontainer.json",
];

/// The `[save] refuse` entry that refuses code edits adding errors from a language server.
pub const CODE_ERROR: &str = "code-error";

/// The validated configuration of one store.
#[derive(Clone, Debug)]
pub struct Config {
    /// Glob patterns (store-relative) of files that are not documents (`[store] ignore`).
    pub ignore: Vec<String>,
    pub ignore_set: GlobSet,
    /// `[store] gitignore` (default true): the project's `.gitignore`, `.ignore` and
    /// `.git/info/exclude` say which files are not documents too (SPEC §23).
    pub gitignore: bool,
    /// The project's ignore rules as [`Config::load`] read them (none when `gitignore` is
    /// false, or for a configuration parsed from text alone).
    pub project_ignores: Arc<ProjectIgnores>,
    /// What the user should know about this configuration that does not stop the store
    /// (an ignore rule file that could not be read, the schemas folder ignored by git).
    pub warnings: Vec<String>,
    /// `[store] jsonc` (SPEC §23): globs of the `.json` documents written as JSON with
    /// comments; [`DEFAULT_JSONC`] when the key is absent (a given list replaces it).
    pub jsonc: Vec<String>,
    pub jsonc_set: GlobSet,
    /// Store-relative folder of `<type>.schema.json` files.
    pub schemas_dir: String,
    /// Extra schema associations for documents, in file order.
    pub schema_globs: Vec<SchemaGlob>,
    /// `[[schema]] url = ... path = ...`: URIs the store holds a copy of (SPEC §23).
    pub schema_urls: Vec<SchemaUrl>,
    /// Where new entities of a type are created.
    pub types: BTreeMap<String, TypeConfig>,
    /// Diagnostic codes that refuse a commit (the save authority).
    pub refuse: Vec<DiagnosticCode>,
    /// `code-error` in `[save] refuse` (SPEC §18): a code edit that adds error diagnostics
    /// from its file's language server is refused. Off by default, so a work-in-progress save
    /// of code is never blocked unless asked.
    pub refuse_code_errors: bool,
    /// `[previews] share` (SPEC §18): an editor's session may confirm or discard the previews
    /// of every session of the core, as `stardust.previews.list` shows them.
    pub share_previews: bool,
    pub mcp_mutation: MutationPosture,
    pub mcp_mutation_allowlist: Vec<String>,
    pub max_pending: usize,
    /// Whether `format` keywords are checked (`[validation] formats`).
    pub formats: Formats,
    /// How schemas of older drafts are read (`[validation] dialect`, SPEC §23).
    pub dialect: Dialect,
    /// `[servers.<name>]`: language servers for code files (SPEC §17), by name.
    pub servers: BTreeMap<String, ServerConfig>,
    /// `[store] backend`: where the store's history and documents are durable (SPEC §22).
    pub backend: Backend,
}

/// Where a store is durable (SPEC §22).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Backend {
    /// The store's folder: its log and documents (the default).
    #[default]
    Folder,
    /// A PostgreSQL database shared by several cores; the folder is this machine's copy.
    Postgres {
        /// `[store] url`, else `STARDUST_DATABASE_URL` when the store is opened; never holds a
        /// password (refused in the file).
        url: Option<String>,
    },
}

/// The environment variable that names a team store's database (SPEC §22).
pub const DATABASE_URL_ENV: &str = "STARDUST_DATABASE_URL";

impl Backend {
    /// The database URL of a PostgreSQL store: `STARDUST_DATABASE_URL` first (a member's own
    /// setting, which may hold a password), else `[store] url`.
    pub fn database_url(&self) -> Option<String> {
        match self {
            Backend::Folder => None,
            Backend::Postgres { url } => std::env::var(DATABASE_URL_ENV)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .or_else(|| url.clone()),
        }
    }

    /// The database URL of a team store, or why there is none (a folder store, or no URL
    /// set): what opening or migrating one needs.
    pub fn required_url(&self) -> Result<String> {
        match self {
            Backend::Folder => Err(Error::InvalidArguments(
                "this is a folder store; set [store] backend = \"postgres\" and url in its \
                 stardust.toml first"
                    .to_owned(),
            )),
            Backend::Postgres { .. } => self.database_url().ok_or_else(|| Error::ConfigInvalid {
                path: CONFIG_FILE.into(),
                message: format!(
                    "store.backend is \"postgres\" but no database is named; set [store] url \
                     or {DATABASE_URL_ENV}"
                ),
            }),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SchemaGlob {
    pub glob: String,
    pub matcher: globset::GlobMatcher,
    /// Store-relative path of the schema.
    pub path: String,
}

/// A URI whose schema is a file of the store (`[[schema]] url`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaUrl {
    /// The URI as written, without a trailing empty fragment.
    pub url: String,
    /// Store-relative path of the schema.
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeConfig {
    pub dir: String,
    pub format: Lang,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MutationPosture {
    #[default]
    Off,
    Gated,
}

impl Default for Config {
    fn default() -> Config {
        Config::from_raw(RawConfig::default(), Path::new(CONFIG_FILE))
            .expect("the default configuration is valid")
    }
}

/// Every key `stardust.toml` accepts, as a dotted path (`store.ignore`, `schema.glob`,
/// `types.<name>.dir`, `servers.<name>.timeouts.startup`), sorted; tables' own names too
/// (`store`, `servers`). Read from the parser's types, so it is always complete.
pub fn keys() -> Vec<String> {
    keys::keys_of::<RawConfig>()
}

/// What stands for a key the user chooses in [`keys`]: `types.<name>.dir`.
pub const KEY_NAME: &str = keys::NAME;

impl Config {
    /// Read `stardust.toml` from a store root (a missing file is the default configuration),
    /// and, unless `[store] gitignore = false`, the project's ignore rules.
    pub fn load(root: &Path) -> Result<Config> {
        let path = root.join(CONFIG_FILE);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text, &path)?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(err) => {
                return Err(Error::ConfigInvalid {
                    path,
                    message: format!("cannot read it: {err}"),
                });
            }
        };
        if config.gitignore {
            let rules = ProjectIgnores::load(root, &config.ignore_set);
            config.warnings.extend(rules.warnings.iter().cloned());
            let schemas = config.schemas_dir.trim_end_matches('/');
            if !schemas.is_empty() && schemas != "." && rules.is_ignored(schemas, true) {
                config.warnings.push(format!(
                    "the schemas folder '{schemas}' is ignored by the project's ignore rules; \
                     Stardust still reads its schemas (to silence this, re-include it with \
                     '!{schemas}/' in .gitignore, or set [store] schemas)"
                ));
            }
            config.project_ignores = Arc::new(rules);
        }
        Ok(config)
    }

    /// Whether the store-relative path `rel` (a folder when `dir`) is ignored: by `[store]
    /// ignore` or by the project's ignore rules. `stardust.toml` never is, and the schemas
    /// folder is never ignored by the project's rules (only by `[store] ignore`).
    pub fn is_ignored(&self, rel: &str, dir: bool) -> bool {
        if self.ignore_set.is_match(rel) {
            return true;
        }
        if rel == CONFIG_FILE || self.in_schemas_dir(rel) {
            return false;
        }
        self.project_ignores.is_ignored(rel, dir)
    }

    /// Whether the store-relative path `rel` is a file whose change changes what is in force:
    /// `stardust.toml`, `.git/info/exclude`, or a `.gitignore` or `.ignore` in a folder that
    /// is not ignored.
    pub fn is_rule_file(&self, rel: &str) -> bool {
        if rel == CONFIG_FILE || rel == ".git/info/exclude" {
            return true;
        }
        let (folder, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        crate::ignores::RULE_FILES.contains(&name)
            && !folder.split('/').next().is_some_and(|f| crate::ignores::PRIVATE_DIRS.contains(&f))
            && (folder.is_empty() || !self.is_ignored(folder, true))
    }

    /// Whether `rel` is the schemas folder or inside it.
    fn in_schemas_dir(&self, rel: &str) -> bool {
        let dir = self.schemas_dir.trim_end_matches('/');
        !dir.is_empty()
            && dir != "."
            && rel.strip_prefix(dir).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }

    /// Parse configuration text; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let mut raw: RawConfig = toml::from_str(text).map_err(|err| Error::ConfigInvalid {
            path: path.to_owned(),
            message: err.to_string().trim_end().to_owned(),
        })?;
        let raw_servers = std::mem::take(&mut raw.servers);
        let mut config = Config::from_raw(raw, path)?;
        config.servers = servers::validate(raw_servers, text, path)?;
        Ok(config)
    }

    fn from_raw(raw: RawConfig, path: &Path) -> Result<Config> {
        let invalid = |message: String| Error::ConfigInvalid { path: path.to_owned(), message };

        let mut ignore_set = GlobSetBuilder::new();
        for pattern in &raw.store.ignore {
            let glob = Glob::new(pattern).map_err(|err| {
                invalid(format!("store.ignore: '{pattern}' is not a valid glob: {err}"))
            })?;
            ignore_set.add(glob);
        }
        let ignore_set = ignore_set
            .build()
            .map_err(|err| invalid(format!("store.ignore: the globs cannot be combined: {err}")))?;

        let jsonc = raw
            .store
            .jsonc
            .unwrap_or_else(|| DEFAULT_JSONC.iter().map(|glob| (*glob).to_owned()).collect());
        let mut jsonc_set = GlobSetBuilder::new();
        for pattern in &jsonc {
            let glob = Glob::new(pattern).map_err(|err| {
                invalid(format!("store.jsonc: '{pattern}' is not a valid glob: {err}"))
            })?;
            jsonc_set.add(glob);
        }
        let jsonc_set = jsonc_set
            .build()
            .map_err(|err| invalid(format!("store.jsonc: the globs cannot be combined: {err}")))?;

        let backend = match raw.store.backend.as_deref() {
            None | Some("folder") => {
                if raw.store.url.is_some() {
                    return Err(invalid(
                        "store.url is only for backend = \"postgres\"; add that or remove the url"
                            .to_owned(),
                    ));
                }
                Backend::Folder
            }
            Some("postgres") => {
                if let Some(url) = &raw.store.url {
                    check_database_url(url).map_err(|why| invalid(format!("store.url: {why}")))?;
                }
                Backend::Postgres { url: raw.store.url.clone() }
            }
            Some(other) => {
                return Err(invalid(format!(
                    "store.backend: expected \"folder\" or \"postgres\", found \"{other}\""
                )));
            }
        };

        let schemas_dir = raw.store.schemas.unwrap_or_else(|| "schemas".to_owned());
        check_relative(&schemas_dir).map_err(|why| invalid(format!("store.schemas: {why}")))?;

        let mut schema_globs = Vec::new();
        let mut schema_urls: Vec<SchemaUrl> = Vec::new();
        for (i, entry) in raw.schema.into_iter().enumerate() {
            check_relative(&entry.path)
                .map_err(|why| invalid(format!("schema[{i}].path: {why}")))?;
            match (entry.glob, entry.url) {
                (Some(glob), None) => {
                    let matcher = Glob::new(&glob)
                        .map_err(|err| {
                            invalid(format!(
                                "schema[{i}].glob: '{glob}' is not a valid glob: {err}"
                            ))
                        })?
                        .compile_matcher();
                    schema_globs.push(SchemaGlob { glob, matcher, path: entry.path });
                }
                (None, Some(url)) => {
                    let written = url.trim_end_matches('#');
                    let resolved = crate::schema::resolve("", written)
                        .filter(|_| crate::schema::dialect::is_absolute(written))
                        .filter(|u| !u.contains('#'));
                    let Some(url) = resolved else {
                        return Err(invalid(format!(
                            "schema[{i}].url: '{url}' is not an absolute URI without a fragment; \
                             write the schema's URI as documents and schemas name it, such as \
                             \"https://example.com/app.schema.json\""
                        )));
                    };
                    if let Some(other) = schema_urls.iter().find(|u| u.url == url) {
                        return Err(invalid(format!(
                            "schema[{i}].url: '{url}' is already mapped to '{}'; keep one entry \
                             per URI",
                            other.path
                        )));
                    }
                    schema_urls.push(SchemaUrl { url, path: entry.path });
                }
                (Some(_), Some(_)) => {
                    return Err(invalid(format!(
                        "schema[{i}] has both glob and url; an entry either associates documents \
                         (glob) or maps a URI to a file (url): split it in two"
                    )));
                }
                (None, None) => {
                    return Err(invalid(format!(
                        "schema[{i}] needs glob (the documents the schema checks) or url (the \
                         URI the schema at path is known by)"
                    )));
                }
            }
        }

        let mut types = BTreeMap::new();
        for (name, entry) in raw.types {
            let dir = entry.dir.unwrap_or_else(|| name.clone());
            check_relative(&dir).map_err(|why| invalid(format!("types.{name}.dir: {why}")))?;
            let format = match entry.format.as_deref() {
                None | Some("dust") => Lang::Dust,
                Some("json") => Lang::Json,
                Some(other) => {
                    return Err(invalid(format!(
                        "types.{name}.format: expected \"json\" or \"dust\", found \"{other}\""
                    )));
                }
            };
            types.insert(name, TypeConfig { dir, format });
        }

        let refuse_code_errors =
            raw.save.refuse.as_ref().is_some_and(|codes| codes.iter().any(|c| c == CODE_ERROR));
        let refuse = match raw.save.refuse {
            None => vec![
                DiagnosticCode::Syntax,
                DiagnosticCode::Schema,
                DiagnosticCode::DuplicateId,
                DiagnosticCode::InvalidId,
                DiagnosticCode::ViewPath,
                DiagnosticCode::DuplicateViewPath,
            ],
            Some(codes) => codes
                .iter()
                .filter(|code| *code != CODE_ERROR)
                .map(|code| {
                    DiagnosticCode::parse(code).ok_or_else(|| {
                        let known: Vec<_> = DiagnosticCode::ALL
                            .iter()
                            .map(|c| c.as_str())
                            .chain([CODE_ERROR])
                            .map(|c| format!("\"{c}\""))
                            .collect();
                        invalid(format!(
                            "save.refuse: unknown diagnostic code \"{code}\"; known codes are {}",
                            known.join(", ")
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        };

        let mcp_mutation = match raw.mcp.mutation.as_deref() {
            None | Some("off") => MutationPosture::Off,
            Some("gated") => MutationPosture::Gated,
            Some(other) => {
                return Err(invalid(format!(
                    "mcp.mutation: expected \"off\" or \"gated\", found \"{other}\""
                )));
            }
        };
        let allowlist = raw.mcp.mutation_allowlist;
        match (mcp_mutation, &allowlist) {
            (MutationPosture::Gated, None) => {
                return Err(invalid(
                    "mcp.mutation_allowlist is required when mcp.mutation = \"gated\"; list the \
                     MCP client names allowed to confirm"
                        .to_owned(),
                ));
            }
            (MutationPosture::Gated, Some(list)) if list.is_empty() => {
                return Err(invalid(
                    "mcp.mutation_allowlist is empty, so mcp.mutation = \"gated\" would allow no \
                     one; list client names or set mcp.mutation = \"off\""
                        .to_owned(),
                ));
            }
            (MutationPosture::Off, Some(list)) if !list.is_empty() => {
                return Err(invalid(
                    "mcp.mutation_allowlist is set but mcp.mutation is \"off\"; set mcp.mutation = \
                     \"gated\" or remove the allowlist"
                        .to_owned(),
                ));
            }
            _ => {}
        }

        let max_pending = raw.notifications.max_pending.unwrap_or(10_000);
        if max_pending == 0 {
            return Err(invalid("notifications.max_pending must be at least 1".to_owned()));
        }

        let formats = match raw.validation.formats.as_deref() {
            None => Formats::ByDraft,
            Some("annotate") => Formats::Annotate,
            Some("assert") => Formats::Assert,
            Some(other) => {
                return Err(invalid(format!(
                    "validation.formats: expected \"annotate\" or \"assert\", found \"{other}\""
                )));
            }
        };

        let dialect = match raw.validation.dialect.as_deref() {
            None | Some("compatible") => Dialect::Compatible,
            Some("strict") => Dialect::Strict,
            Some(other) => {
                return Err(invalid(format!(
                    "validation.dialect: expected \"compatible\" or \"strict\", found \"{other}\""
                )));
            }
        };

        Ok(Config {
            ignore: raw.store.ignore,
            ignore_set,
            gitignore: raw.store.gitignore.unwrap_or(true),
            project_ignores: Arc::default(),
            warnings: Vec::new(),
            jsonc,
            jsonc_set,
            schemas_dir,
            schema_globs,
            schema_urls,
            types,
            refuse,
            refuse_code_errors,
            share_previews: raw.previews.share.unwrap_or(false),
            mcp_mutation,
            mcp_mutation_allowlist: allowlist.unwrap_or_default(),
            max_pending,
            formats,
            dialect,
            servers: BTreeMap::new(),
            backend,
        })
    }

    /// Where new entities of `ty` go: `[types.<ty>]`, else a folder named after the type, in DUST.
    pub fn type_config(&self, ty: &str) -> TypeConfig {
        self.types
            .get(ty)
            .cloned()
            .unwrap_or_else(|| TypeConfig { dir: ty.to_owned(), format: Lang::Dust })
    }

    /// The store-relative path of the schema of entity type `ty`.
    pub fn type_schema_path(&self, ty: &str) -> String {
        if self.schemas_dir.is_empty() || self.schemas_dir == "." {
            format!("{ty}.schema.json")
        } else {
            format!("{}/{ty}.schema.json", self.schemas_dir.trim_end_matches('/'))
        }
    }
}

/// A configured path must stay inside the store.
fn check_relative(path: &str) -> std::result::Result<(), String> {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        return Err(format!("'{path}' must be relative to the store root"));
    }
    if p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("'{path}' must not leave the store ('..' is not allowed)"));
    }
    Ok(())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    store: RawStore,
    #[serde(default)]
    schema: Vec<RawSchema>,
    #[serde(default)]
    types: BTreeMap<String, RawType>,
    #[serde(default)]
    save: RawSave,
    #[serde(default)]
    mcp: RawMcp,
    #[serde(default)]
    notifications: RawNotifications,
    #[serde(default)]
    validation: RawValidation,
    #[serde(default)]
    previews: RawPreviews,
    #[serde(default)]
    servers: BTreeMap<String, servers::ServerTable>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawStore {
    #[serde(default)]
    ignore: Vec<String>,
    gitignore: Option<bool>,
    schemas: Option<String>,
    backend: Option<String>,
    url: Option<String>,
    jsonc: Option<Vec<String>>,
}

/// `stardust.toml` text made a folder store's: the `[store]` table's `backend` and `url`
/// lines dropped, everything else (comments too) kept as written.
pub fn without_backend(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_store = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            in_store = trimmed.trim_end().trim_end_matches(|c: char| c != ']') == "[store]";
        } else if in_store {
            let key = trimmed.split('=').next().unwrap_or("").trim();
            if key == "backend" || key == "url" {
                continue;
            }
        }
        out.push_str(line);
    }
    out
}

/// A database URL in `stardust.toml` may name the server, database and user, never a
/// password: the file is shared with the team (and often committed), so a password goes in
/// `STARDUST_DATABASE_URL` or `PGPASSWORD`.
fn check_database_url(url: &str) -> std::result::Result<(), String> {
    let Some(rest) = url.strip_prefix("postgresql://").or_else(|| url.strip_prefix("postgres://"))
    else {
        return Err(format!(
            "'{url}' is not a PostgreSQL URL; write postgresql://[user@]host/database or \
             postgresql:///database?host=/run/postgresql"
        ));
    };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let userinfo = authority.rsplit_once('@').map(|(user, _)| user);
    let query_password = rest
        .split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|kv| kv.split('=').next() == Some("password")));
    if userinfo.is_some_and(|u| u.contains(':')) || query_password {
        return Err("holds a password, which must never be in stardust.toml; remove it and set \
                    PGPASSWORD or STARDUST_DATABASE_URL instead"
            .to_owned());
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchema {
    glob: Option<String>,
    url: Option<String>,
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawType {
    dir: Option<String>,
    format: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSave {
    refuse: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    mutation: Option<String>,
    mutation_allowlist: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawNotifications {
    max_pending: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPreviews {
    share: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawValidation {
    formats: Option<String>,
    dialect: Option<String>,
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check_err(text: &str, expect: Expect) {
        let err = Config::parse(text, Path::new("stardust.toml")).unwrap_err();
        assert_eq!(err.code(), "config-invalid");
        expect.assert_eq(&err.to_string());
    }

    /// The key list comes from the parser's types: every table, every field, nested ones.
    #[test]
    fn every_key_is_listed() {
        let keys = keys();
        for key in [
            "store",
            "store.ignore",
            "schema.glob",
            "types.<name>.format",
            "servers.<name>.command",
            "servers.<name>.timeouts.startup",
            "servers.<name>.settings",
            "validation.formats",
            "previews.share",
        ] {
            assert!(keys.iter().any(|k| k == key), "{key} missing from {keys:?}");
        }
        assert!(!keys.iter().any(|k| k.starts_with("servers.<name>.settings.")), "{keys:?}");
        // Every key listed is one the parser takes: an unknown one would be refused.
        for key in keys.iter().filter(|k| k.matches('.').count() == 1 && !k.starts_with("schema."))
        {
            let (table, field) = key.split_once('.').unwrap();
            let text = format!("[{table}]\n{field} = 0\n");
            let err = Config::parse(&text, Path::new("stardust.toml")).err();
            assert!(!err.is_some_and(|e| e.to_string().contains("unknown field")), "{key}");
        }
    }

    #[test]
    fn full_configuration() {
        let config = Config::parse(
            r#"
[store]
ignore = ["node_modules/**", "target/**"]
schemas = "schemas"

[[schema]]
glob = "config/*.json"
path = "schemas/app-config.schema.json"

[types.person]
dir = "people"
format = "json"

[save]
refuse = ["syntax", "schema", "duplicate-id", "invalid-id", "dangling-ref"]

[mcp]
mutation = "gated"
mutation_allowlist = ["claude-code"]

[notifications]
max_pending = 50

[validation]
formats = "assert"
"#,
            Path::new("stardust.toml"),
        )
        .unwrap();
        assert!(config.ignore_set.is_match("node_modules/a/b.json"));
        assert!(config.schema_globs[0].matcher.is_match("config/app.json"));
        assert_eq!(
            config.type_config("person"),
            TypeConfig { dir: "people".into(), format: Lang::Json }
        );
        assert_eq!(
            config.type_config("book"),
            TypeConfig { dir: "book".into(), format: Lang::Dust }
        );
        assert_eq!(config.refuse.len(), 5);
        assert_eq!(config.mcp_mutation, MutationPosture::Gated);
        assert_eq!(config.max_pending, 50);
        assert_eq!(config.formats, Formats::Assert);
        assert_eq!(config.type_schema_path("book"), "schemas/book.schema.json");
    }

    /// `[store] jsonc` (SPEC §23): absent, the default list; given, it replaces the default.
    #[test]
    fn jsonc_globs() {
        let parse = |text: &str| Config::parse(text, Path::new("stardust.toml")).unwrap();
        let default = parse("");
        assert_eq!(default.jsonc, DEFAULT_JSONC);
        for path in [
            "tsconfig.json",
            "web/tsconfig.build.json",
            "jsconfig.json",
            ".vscode/settings.json",
            "app/.vscode/launch.json",
            ".devcontainer/devcontainer.json",
            ".devcontainer.json",
        ] {
            assert!(default.jsonc_set.is_match(path), "{path}");
        }
        for path in ["package.json", "tsconfig.jsonc", "vscode/settings.json", "my-tsconfig.json"] {
            assert!(!default.jsonc_set.is_match(path), "{path}");
        }
        let given = parse("[store]\njsonc = [\"conf/*.json\"]\n");
        assert_eq!(given.jsonc, ["conf/*.json"]);
        assert!(given.jsonc_set.is_match("conf/app.json"));
        assert!(!given.jsonc_set.is_match("tsconfig.json"), "a given list replaces the default");
        assert!(parse("[store]\njsonc = []\n").jsonc_set.is_empty());
        check_err(
            "[store]\njsonc = [\"a[\"]\n",
            expect![[
                r#"invalid configuration in stardust.toml: store.jsonc: 'a[' is not a valid glob: error parsing glob 'a[': unclosed character class; missing ']'"#
            ]],
        );
        check_err(
            "[store]\njsonc = \"tsconfig.json\"\n",
            expect![[r#"
                invalid configuration in stardust.toml: TOML parse error at line 2, column 9
                  |
                2 | jsonc = "tsconfig.json"
                  |         ^^^^^^^^^^^^^^^
                invalid type: string "tsconfig.json", expected a sequence"#]],
        );
    }

    #[test]
    fn schema_urls_and_dialect() {
        let config = Config::parse(
            "[[schema]]\nurl = \"https://example.com/x.json#\"\npath = \"vendor/x.json\"\n\n\
             [[schema]]\nglob = \"config/*.json\"\npath = \"vendor/x.json\"\n\n\
             [validation]\ndialect = \"strict\"\n",
            Path::new("stardust.toml"),
        )
        .unwrap();
        assert_eq!(
            config.schema_urls,
            vec![SchemaUrl {
                url: "https://example.com/x.json".into(),
                path: "vendor/x.json".into()
            }]
        );
        assert_eq!(config.schema_globs.len(), 1);
        assert_eq!(config.dialect, Dialect::Strict);
        check_err(
            "[[schema]]\nglob = \"a/*.json\"\nurl = \"https://e.com/a\"\npath = \"a.json\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: schema[0] has both glob and url; an entry either associates documents (glob) or maps a URI to a file (url): split it in two"#
            ]],
        );
        check_err(
            "[[schema]]\npath = \"a.json\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: schema[0] needs glob (the documents the schema checks) or url (the URI the schema at path is known by)"#
            ]],
        );
        check_err(
            "[[schema]]\nurl = \"vendor/a.json\"\npath = \"a.json\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: schema[0].url: 'vendor/a.json' is not an absolute URI without a fragment; write the schema's URI as documents and schemas name it, such as "https://example.com/app.schema.json""#
            ]],
        );
        check_err(
            "[[schema]]\nurl = \"https://e.com/a#/definitions/x\"\npath = \"a.json\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: schema[0].url: 'https://e.com/a#/definitions/x' is not an absolute URI without a fragment; write the schema's URI as documents and schemas name it, such as "https://example.com/app.schema.json""#
            ]],
        );
        check_err(
            "[[schema]]\nurl = \"https://e.com/a\"\npath = \"a.json\"\n[[schema]]\nurl = \"https://e.com/a\"\npath = \"b.json\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: schema[1].url: 'https://e.com/a' is already mapped to 'a.json'; keep one entry per URI"#
            ]],
        );
        check_err(
            "[[schema]]\nurl = \"https://e.com/a\"\npath = \"../a.json\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: schema[0].path: '../a.json' must not leave the store ('..' is not allowed)"#
            ]],
        );
        check_err(
            "[validation]\ndialect = \"loose\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: validation.dialect: expected "compatible" or "strict", found "loose""#
            ]],
        );
    }

    #[test]
    fn team_store_backends() {
        let parse = |text: &str| Config::parse(text, Path::new("stardust.toml"));
        assert_eq!(parse("").unwrap().backend, Backend::Folder);
        let url = "postgresql:///stardust?host=/run/postgresql";
        let config = parse(&format!("[store]\nbackend = \"postgres\"\nurl = \"{url}\"\n")).unwrap();
        assert_eq!(config.backend, Backend::Postgres { url: Some(url.to_owned()) });
        check_err(
            "[store]\nbackend = \"postgres\"\nurl = \"postgresql://ann:hunter2@db/team\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: store.url: holds a password, which must never be in stardust.toml; remove it and set PGPASSWORD or STARDUST_DATABASE_URL instead"#
            ]],
        );
        check_err(
            "[store]\nbackend = \"postgres\"\nurl = \"postgresql://db/team?password=x\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: store.url: holds a password, which must never be in stardust.toml; remove it and set PGPASSWORD or STARDUST_DATABASE_URL instead"#
            ]],
        );
        check_err(
            "[store]\nbackend = \"sqlite\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: store.backend: expected "folder" or "postgres", found "sqlite""#
            ]],
        );
        check_err(
            "[store]\nurl = \"postgresql://db/team\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: store.url is only for backend = "postgres"; add that or remove the url"#
            ]],
        );
    }

    #[test]
    fn a_team_stores_config_made_a_folder_stores() {
        let text = "# team\n[store]\nbackend = \"postgres\"\nurl = \"postgresql:///t\"\nignore = [\"tmp/**\"]\n\n[save]\nrefuse = [\"syntax\"]\n";
        expect![[r#"
            # team
            [store]
            ignore = ["tmp/**"]

            [save]
            refuse = ["syntax"]
        "#]]
        .assert_eq(&without_backend(text));
        let config = Config::parse(&without_backend(text), Path::new("stardust.toml")).unwrap();
        assert_eq!(config.backend, Backend::Folder);
    }

    #[test]
    fn defaults() {
        let config = Config::parse("", Path::new("stardust.toml")).unwrap();
        assert_eq!(config.schemas_dir, "schemas");
        assert_eq!(config.max_pending, 10_000);
        assert_eq!(config.mcp_mutation, MutationPosture::Off);
        assert_eq!(
            config.formats,
            Formats::ByDraft,
            "formats annotate, as in 2020-12, unless a schema of draft 4 to 7 is read compatibly"
        );
        assert_eq!(config.dialect, Dialect::Compatible);
        assert!(config.schema_urls.is_empty());
        assert!(config.refuse.contains(&DiagnosticCode::Syntax));
        assert!(!config.refuse.contains(&DiagnosticCode::DanglingRef));
        assert!(config.gitignore, "the project's ignore rules apply unless turned off");
    }

    /// `stardust.toml` is never ignored, nor the schemas folder by the project's rules; `[store]
    /// ignore` adds to those rules.
    #[test]
    fn what_the_ignore_rules_may_not_hide() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".gitignore"),
            "*.toml
schemas/
*.json
",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[store]
ignore = [\"schemas/old/**\"]\n",
        )
        .unwrap();
        let config = Config::load(dir.path()).unwrap();
        assert!(!config.is_ignored(CONFIG_FILE, false));
        assert!(config.is_ignored("other.toml", false));
        assert!(!config.is_ignored("schemas/a.schema.json", false));
        assert!(config.is_ignored("schemas/old/a.schema.json", false));
        assert!(config.is_ignored("data/a.json", false));
        assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);

        std::fs::write(dir.path().join(CONFIG_FILE), "[store]\ngitignore = false\n").unwrap();
        let config = Config::load(dir.path()).unwrap();
        assert!(!config.is_ignored("data/a.json", false));
        assert!(config.warnings.is_empty());
    }

    #[test]
    fn strictness() {
        check_err(
            "[store]\nignroe = []\n",
            expect![[r#"
                invalid configuration in stardust.toml: TOML parse error at line 2, column 1
                  |
                2 | ignroe = []
                  | ^^^^^^
                unknown field `ignroe`, expected one of `ignore`, `gitignore`, `schemas`, `backend`, `url`, `jsonc`"#]],
        );
        check_err(
            "[notifications]\nmax_pending = \"many\"\n",
            expect![[r#"
                invalid configuration in stardust.toml: TOML parse error at line 2, column 15
                  |
                2 | max_pending = "many"
                  |               ^^^^^^
                invalid type: string "many", expected usize"#]],
        );
        check_err(
            "[mcp]\nmutation = \"gated\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: mcp.mutation_allowlist is required when mcp.mutation = "gated"; list the MCP client names allowed to confirm"#
            ]],
        );
        check_err(
            "[mcp]\nmutation_allowlist = [\"x\"]\n",
            expect![[
                r#"invalid configuration in stardust.toml: mcp.mutation_allowlist is set but mcp.mutation is "off"; set mcp.mutation = "gated" or remove the allowlist"#
            ]],
        );
        check_err(
            "[save]\nrefuse = [\"schema\", \"typo\"]\n",
            expect![[
                r#"invalid configuration in stardust.toml: save.refuse: unknown diagnostic code "typo"; known codes are "syntax", "duplicate-key", "schema", "unknown-type", "invalid-id", "duplicate-id", "dangling-ref", "ref-type", "invalid-query", "view-path", "duplicate-view-path", "schema-unavailable", "code-error""#
            ]],
        );
        check_err(
            "[types.book]\nformat = \"yaml\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: types.book.format: expected "json" or "dust", found "yaml""#
            ]],
        );
        check_err(
            "[store]\nschemas = \"../elsewhere\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: store.schemas: '../elsewhere' must not leave the store ('..' is not allowed)"#
            ]],
        );
        check_err(
            "[store]\nignore = [\"a[\"]\n",
            expect![[
                r#"invalid configuration in stardust.toml: store.ignore: 'a[' is not a valid glob: error parsing glob 'a[': unclosed character class; missing ']'"#
            ]],
        );
        check_err(
            "[validation]\nformats = \"check\"\n",
            expect![[
                r#"invalid configuration in stardust.toml: validation.formats: expected "annotate" or "assert", found "check""#
            ]],
        );
        check_err(
            "[notifications]\nmax_pending = 0\n",
            expect![[
                r#"invalid configuration in stardust.toml: notifications.max_pending must be at least 1"#
            ]],
        );
    }
}

//! `stardust init [DIR]` (SPEC §27) as rules: which languages a folder holds, which of their
//! language servers are on PATH, the commented `stardust.toml` that makes the folder a store,
//! the private folder's `.gitignore`, and the lines to paste into editors and MCP hosts. An
//! existing `stardust.toml` is never overwritten.
//!
//! Also the hint `stardust check` gives on a folder with no configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::codefiles::{Probe, find_program, shell_word, trust_command};
use crate::config::CONFIG_FILE;
use crate::error::Code;
use crate::scan::PRIVATE_DIR;

/// What `.stardust/.gitignore` holds: git never lists the private folder.
pub const PRIVATE_GITIGNORE: &str = "*\n";

/// Folders of installed packages and caches: never data, so `init` ignores them (and does
/// not count their files as the project's languages).
const VENDOR_DIRS: [&str; 8] = [
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
];

/// At most this many entries of the folder are looked at.
const WALK_BUDGET: usize = 200_000;

/// A language `init` knows, and the servers that serve it, best first.
struct Language {
    name: &'static str,
    extensions: &'static [&'static str],
    servers: &'static [ServerTemplate],
    /// How to install the first server, for the comment of a language without one on PATH.
    install: &'static str,
}

/// A `[servers.<table>]` table as `init` writes it.
struct ServerTemplate {
    table: &'static str,
    command: &'static str,
    args: &'static [&'static str],
    /// Extension -> LSP languageId.
    languages: &'static [(&'static str, &'static str)],
    root_markers: &'static [&'static str],
    /// More lines of the table, as written (each with its comment).
    extra: &'static [&'static str],
}

const PYTHON: &[(&str, &str)] = &[("py", "python"), ("pyi", "python")];

const LANGUAGES: &[Language] = &[
    Language {
        name: "Python",
        extensions: &["py", "pyi"],
        servers: &[
            ServerTemplate {
                table: "pyright",
                command: "pyright-langserver",
                args: &["--stdio"],
                languages: PYTHON,
                root_markers: &["pyproject.toml", "setup.py", "requirements.txt"],
                extra: &[],
            },
            ServerTemplate {
                table: "basedpyright",
                command: "basedpyright-langserver",
                args: &["--stdio"],
                languages: PYTHON,
                root_markers: &["pyproject.toml", "setup.py", "requirements.txt"],
                extra: &[],
            },
            ServerTemplate {
                table: "pylsp",
                command: "pylsp",
                args: &[],
                languages: PYTHON,
                root_markers: &["pyproject.toml", "setup.py", "requirements.txt"],
                extra: &[],
            },
        ],
        install: "npm install --global pyright",
    },
    Language {
        name: "TypeScript and JavaScript",
        extensions: &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
        servers: &[ServerTemplate {
            table: "typescript",
            command: "typescript-language-server",
            args: &["--stdio"],
            languages: &[
                ("ts", "typescript"),
                ("tsx", "typescriptreact"),
                ("mts", "typescript"),
                ("cts", "typescript"),
                ("js", "javascript"),
                ("jsx", "javascriptreact"),
                ("mjs", "javascript"),
                ("cjs", "javascript"),
            ],
            root_markers: &["tsconfig.json", "jsconfig.json", "package.json"],
            extra: &[
                "# tsserver takes a while to load a project the first time.",
                "timeouts = { startup = 60 }",
            ],
        }],
        install: "npm install --global typescript-language-server typescript@5",
    },
    Language {
        name: "C and C++",
        extensions: &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"],
        servers: &[ServerTemplate {
            table: "clangd",
            command: "clangd",
            args: &["--log=error"],
            languages: &[
                ("c", "c"),
                ("h", "c"),
                ("cc", "cpp"),
                ("cpp", "cpp"),
                ("cxx", "cpp"),
                ("hh", "cpp"),
                ("hpp", "cpp"),
                ("hxx", "cpp"),
            ],
            root_markers: &["compile_commands.json", "compile_flags.txt"],
            extra: &[],
        }],
        install: "apt install clangd",
    },
    Language {
        name: "Rust",
        extensions: &["rs"],
        servers: &[ServerTemplate {
            table: "rust-analyzer",
            command: "rust-analyzer",
            args: &[],
            languages: &[("rs", "rust")],
            root_markers: &["Cargo.toml"],
            extra: &[
                "# rust-analyzer loads the whole workspace before it answers.",
                "timeouts = { startup = 120 }",
            ],
        }],
        install: "rustup component add rust-analyzer",
    },
    Language {
        name: "Go",
        extensions: &["go"],
        servers: &[ServerTemplate {
            table: "gopls",
            command: "gopls",
            args: &[],
            languages: &[("go", "go")],
            root_markers: &["go.mod"],
            extra: &[],
        }],
        install: "go install golang.org/x/tools/gopls@latest",
    },
];

/// What a folder holds, as far as `init` cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Survey {
    /// Each language present (by name) and how many of its files there are.
    pub languages: BTreeMap<&'static str, usize>,
    /// The vendor folders present, by name (what `[store] ignore` leaves out).
    pub vendor: BTreeSet<&'static str>,
}

/// Look at the folder at `root`: the code files' languages (outside `.git`, `.stardust` and
/// vendor folders) and the vendor folders. Symbolic links are not followed; unreadable
/// entries are skipped.
pub fn survey(root: &Path) -> Survey {
    let mut survey = Survey::default();
    let mut entries =
        walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name().into_iter();
    let mut seen = 0usize;
    while let Some(entry) = entries.next() {
        seen += 1;
        if seen > WALK_BUDGET {
            break;
        }
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy();
        if entry.file_type().is_dir() {
            if entry.depth() == 0 {
                continue;
            }
            if let Some(vendor) = VENDOR_DIRS.iter().find(|v| **v == name) {
                survey.vendor.insert(vendor);
                entries.skip_current_dir();
            } else if name == PRIVATE_DIR || name == ".git" {
                entries.skip_current_dir();
            }
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        let Some((_, ext)) = name.rsplit_once('.') else { continue };
        if let Some(language) = LANGUAGES.iter().find(|l| l.extensions.contains(&ext)) {
            *survey.languages.entry(language.name).or_default() += 1;
        }
    }
    survey
}

/// A language present, and the server `init` configures for it (`None`: none on PATH).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub language: &'static str,
    pub files: usize,
    /// The table written (`[servers.<name>]`) and the program it found on PATH.
    pub server: Option<(&'static str, PathBuf)>,
    /// How to install a server, when none is on PATH.
    pub install: &'static str,
}

/// What `init` would write for a folder with `survey`, given PATH and the file system's
/// answer about programs: each language's server, and the `stardust.toml` text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub found: Vec<Found>,
    pub ignore: Vec<String>,
    pub config: String,
}

/// The plan for `survey`: for each language present, the first of its servers whose program
/// is on `path_var` (as a server's command is looked up when it starts).
pub fn plan(survey: &Survey, path_var: Option<&OsStr>, probe: &dyn Fn(&Path) -> Probe) -> Plan {
    let mut found = Vec::new();
    for language in LANGUAGES {
        let Some(&files) = survey.languages.get(language.name) else { continue };
        let server = language.servers.iter().find_map(|server| {
            find_program(server.command, path_var, probe).ok().map(|path| (server.table, path))
        });
        found.push(Found { language: language.name, files, server, install: language.install });
    }
    let ignore: Vec<String> = survey.vendor.iter().map(|v| format!("**/{v}/**")).collect();
    let config = config_text(&found, &ignore);
    Plan { found, ignore, config }
}

fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn list(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| quoted(i.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

fn table(out: &mut String, server: &ServerTemplate, prefix: &str) {
    let _ = writeln!(out, "{prefix}[servers.{}]", server.table);
    let _ = writeln!(out, "{prefix}command = {}", quoted(server.command));
    if !server.args.is_empty() {
        let _ = writeln!(out, "{prefix}args = {}", list(server.args));
    }
    let languages: Vec<String> =
        server.languages.iter().map(|(ext, id)| format!("{ext} = {}", quoted(id))).collect();
    let _ = writeln!(out, "{prefix}languages = {{ {} }}", languages.join(", "));
    if !server.root_markers.is_empty() {
        let _ = writeln!(out, "{prefix}root_markers = {}", list(server.root_markers));
    }
    for line in server.extra {
        let _ = writeln!(out, "{prefix}{line}");
    }
}

/// The commented `stardust.toml`.
fn config_text(found: &[Found], ignore: &[String]) -> String {
    let mut out = String::from(
        "# This folder is a Stardust store: Stardust checks its JSON and DUST documents, serves\n\
         # them and the code beside them to editors (`stardust lsp`) and agents (`stardust mcp`),\n\
         # and shows them as files (`stardust mount`). Written by `stardust init`; every key is\n\
         # optional, and an unknown key is an error (`stardust check .` says which).\n\
         #\n\
         # An object with string `id` and `type` fields is an entity, checked against\n\
         # schemas/<type>.schema.json when that file exists.\n\
         \n\
         [store]\n\
         # Globs (from this folder) of files that are not documents: build output, installed\n\
         # packages, test fixtures that are broken on purpose.\n",
    );
    let _ = writeln!(out, "ignore = {}", list(ignore));
    out.push_str(
        "# Where the JSON Schemas of entity types are: <type>.schema.json.\n\
         # schemas = \"schemas\"\n",
    );
    if found.is_empty() {
        return out;
    }
    out.push_str(
        "\n# Language servers for the code files. Each table names a program that Stardust will\n\
         # run, so a store's own tables run only once you have read them and run\n\
         # `stardust trust .` here (a table changed later must be trusted again). The same\n\
         # tables in ~/.config/stardust/servers.toml run without trust.\n",
    );
    for language in found {
        let template = LANGUAGES
            .iter()
            .find(|l| l.name == language.language)
            .expect("found languages are known");
        out.push('\n');
        match &language.server {
            Some((name, _)) => {
                let server = template.servers.iter().find(|s| s.table == *name).expect("known");
                let _ = writeln!(
                    out,
                    "# {} ({}): {} was on PATH.",
                    language.language,
                    files(language.files),
                    server.command
                );
                table(&mut out, server, "");
            }
            None => {
                let server = &template.servers[0];
                let _ = writeln!(
                    out,
                    "# {} ({}): no server was on PATH. Install one ({}),\n\
                     # then remove the `# ` before each line below and run `stardust trust .`.",
                    language.language,
                    files(language.files),
                    language.install
                );
                table(&mut out, server, "# ");
            }
        }
    }
    out
}

fn files(n: usize) -> String {
    if n == 1 { "1 file".to_owned() } else { format!("{n} files") }
}

/// Why `init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(
        "{} already exists, and stardust init never overwrites it: edit it (the reference \
         lists every key), or move it away and run stardust init again",
        .0.display()
    )]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

impl InitError {
    pub fn code(&self) -> Code {
        match self {
            InitError::Exists(_) => Code::Conflict,
            InitError::Io { .. } => Code::Internal,
        }
    }
}

/// What `init` did.
#[derive(Clone, Debug)]
pub struct Report {
    /// The store's root (canonical).
    pub root: PathBuf,
    pub plan: Plan,
    /// Whether `.stardust/.gitignore` was written (it is left alone when there).
    pub wrote_gitignore: bool,
}

/// Make the folder at `dir` (made when missing) a store: write `stardust.toml` (never over
/// an existing one: [`InitError::Exists`], nothing written) and `.stardust/.gitignore`.
/// `path_var` is PATH, where servers are looked for.
pub fn init(dir: &Path, path_var: Option<&OsStr>) -> Result<Report, InitError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| InitError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let root = dir.canonicalize().map_err(io(dir))?;
    let config_path = root.join(CONFIG_FILE);
    if config_path.exists() {
        return Err(InitError::Exists(config_path));
    }
    let plan = plan(&survey(&root), path_var, &crate::codefiles::probe);
    // `create_new`: a file made in the meantime is still never overwritten.
    let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).open(&config_path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(InitError::Exists(config_path));
        }
        Err(err) => return Err(io(&config_path)(err)),
    };
    std::io::Write::write_all(&mut file, plan.config.as_bytes()).map_err(io(&config_path))?;
    file.sync_all().map_err(io(&config_path))?;
    let private = root.join(PRIVATE_DIR);
    std::fs::create_dir_all(&private).map_err(io(&private))?;
    let gitignore = private.join(".gitignore");
    let wrote_gitignore = !gitignore.exists();
    if wrote_gitignore {
        std::fs::write(&gitignore, PRIVATE_GITIGNORE).map_err(io(&gitignore))?;
    }
    Ok(Report { root, plan, wrote_gitignore })
}

/// What `stardust init` prints: what it wrote, the trust step, and the lines to paste into
/// editors and MCP hosts.
pub fn instructions(report: &Report) -> String {
    let root = report.root.display().to_string();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Wrote {root}/{CONFIG_FILE}{}.",
        if report.wrote_gitignore {
            " and .stardust/.gitignore (git ignores Stardust's private folder)"
        } else {
            ""
        }
    );
    if !report.plan.ignore.is_empty() {
        let _ = writeln!(out, "Ignored (not documents): {}.", report.plan.ignore.join(", "));
    }
    if report.plan.found.is_empty() {
        out.push_str("No code files of a language Stardust knows a server for.\n");
    }
    for found in &report.plan.found {
        match &found.server {
            Some((table, path)) => {
                let _ = writeln!(
                    out,
                    "{} ({}): [servers.{table}] runs {}.",
                    found.language,
                    files(found.files),
                    path.display()
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{} ({}): no server on PATH; its table is commented out. Install one: {}.",
                    found.language,
                    files(found.files),
                    found.install
                );
            }
        }
    }
    let trust = trust_command(&report.root);
    let servers = report.plan.found.iter().any(|f| f.server.is_some());
    out.push_str("\nNext:\n");
    if servers {
        let _ = writeln!(
            out,
            "  1. Read the [servers.*] tables in {CONFIG_FILE}: each names a program Stardust will run.\n     \
             Then allow them: {trust}"
        );
    } else {
        let _ = writeln!(
            out,
            "  1. Once you add [servers.*] tables to {CONFIG_FILE}, allow them: {trust}"
        );
    }
    let _ = writeln!(out, "  2. See what Stardust finds: stardust check {}", shell_word(&root));
    let store = quoted(&root);
    let _ = write!(
        out,
        "\nEditors (`stardust lsp` finds the store from the file you open):\n\
         \x20 Neovim 0.10+, in init.lua:\n\
         \x20   vim.filetype.add({{ extension = {{ dust = 'dust' }} }})\n\
         \x20   vim.api.nvim_create_autocmd('FileType', {{ pattern = {{ 'dust', 'json' }}, callback = function(a) local root = vim.fs.root(a.buf, {{ 'stardust.toml', '.stardust' }}); if root then vim.lsp.start({{ name = 'stardust', cmd = {{ 'stardust', 'lsp' }}, root_dir = root }}) end end }})\n\
         \x20 VS Code, with the Generic LSP Client extension (zsol.vscode-glspc), in .vscode/settings.json:\n\
         \x20   {{ \"files.associations\": {{ \"*.dust\": \"plaintext\" }}, \"glspc.server.command\": \"stardust\", \"glspc.server.commandArguments\": [\"lsp\"], \"glspc.server.languageId\": [\"plaintext\", \"json\"] }}\n\
         \x20 Helix, in .helix/languages.toml:\n\
         \x20   [language-server.stardust]\n\
         \x20   command = \"stardust\"\n\
         \x20   args = [\"lsp\"]\n\
         \x20   [[language]]\n\
         \x20   name = \"json\"\n\
         \x20   language-servers = [\"stardust\"]\n\
         \x20 Emacs 29+ (eglot), in init.el, then M-x eglot in a JSON buffer:\n\
         \x20   (with-eval-after-load 'eglot (add-to-list 'eglot-server-programs '((json-mode json-ts-mode) . (\"stardust\" \"lsp\"))))\n\
         \nAgents (MCP, over stdio):\n\
         \x20 .mcp.json in {root} (Claude Code and other hosts that read it):\n\
         \x20   {{ \"mcpServers\": {{ \"stardust\": {{ \"command\": \"stardust\", \"args\": [\"mcp\", \"--store\", {store}] }} }} }}\n\
         \x20 Codex, in ~/.codex/config.toml:\n\
         \x20   [mcp_servers.stardust]\n\
         \x20   command = \"stardust\"\n\
         \x20   args = [\"mcp\", \"--store\", {store}]\n"
    );
    out
}

/// The last line `stardust check` prints for the folder at `root` when it has no
/// `stardust.toml` and found `problems` diagnostics: configuration (`[store] ignore`, the
/// schemas' folder) is where a store says which files are its data, so point at `init`.
pub fn check_hint(root: &Path, problems: usize) -> Option<String> {
    if problems == 0 || root.join(CONFIG_FILE).exists() {
        return None;
    }
    let dir = shell_word(&root.display().to_string());
    Some(format!(
        "hint: {dir} has no {CONFIG_FILE}; `stardust init {dir}` writes one, where [store] \
         ignore leaves out files that are not data"
    ))
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::config::Config;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A project: Python and TypeScript code, C in a vendor folder only, packages installed.
    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "py/shop/__init__.py", "");
        write(root, "py/shop/pricing.py", "def f() -> int:\n    return 1\n");
        write(root, "web/src/app.ts", "export const x = 1;\n");
        write(root, "web/package.json", "{\"name\": \"web\"}\n");
        write(root, "node_modules/left-pad/index.js", "module.exports = 1;\n");
        write(root, ".venv/lib/native.c", "int main(void) { return 0; }\n");
        write(root, "py/shop/__pycache__/pricing.cpython-311.pyc", "");
        write(root, ".git/hooks/x.py", "");
        write(root, ".gitignore", "node_modules/\n.venv/\n");
        dir
    }

    #[test]
    fn the_survey_counts_the_projects_languages_and_finds_vendor_folders() {
        let dir = project();
        let survey = survey(dir.path());
        let languages: Vec<(&str, usize)> = survey.languages.into_iter().collect();
        assert_eq!(languages, [("Python", 2), ("TypeScript and JavaScript", 1)]);
        let vendor: Vec<&str> = survey.vendor.into_iter().collect();
        assert_eq!(vendor, [".venv", "__pycache__", "node_modules"]);
    }

    /// A table for each language present whose server is on PATH, a commented one for a
    /// language without, none for absent languages; the text is a valid configuration.
    #[test]
    fn the_plan_configures_the_servers_on_path() {
        let survey = survey(project().path());
        let path = OsStr::new("/opt/bin:relative/bin");
        let probe = |p: &Path| {
            if p == Path::new("/opt/bin/basedpyright-langserver") {
                Probe::Executable
            } else {
                Probe::Missing
            }
        };
        let plan = plan(&survey, Some(path), &probe);
        let servers: Vec<_> = plan.found.iter().map(|f| (f.language, f.server.clone())).collect();
        assert_eq!(
            servers,
            [
                (
                    "Python",
                    Some(("basedpyright", PathBuf::from("/opt/bin/basedpyright-langserver")))
                ),
                ("TypeScript and JavaScript", None),
            ]
        );
        let config = Config::parse(&plan.config, Path::new("stardust.toml")).unwrap();
        assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["basedpyright"]);
        assert_eq!(config.ignore, ["**/.venv/**", "**/__pycache__/**", "**/node_modules/**"]);
        expect![[r##"
            # This folder is a Stardust store: Stardust checks its JSON and DUST documents, serves
            # them and the code beside them to editors (`stardust lsp`) and agents (`stardust mcp`),
            # and shows them as files (`stardust mount`). Written by `stardust init`; every key is
            # optional, and an unknown key is an error (`stardust check .` says which).
            #
            # An object with string `id` and `type` fields is an entity, checked against
            # schemas/<type>.schema.json when that file exists.

            [store]
            # Globs (from this folder) of files that are not documents: build output, installed
            # packages, test fixtures that are broken on purpose.
            ignore = ["**/.venv/**", "**/__pycache__/**", "**/node_modules/**"]
            # Where the JSON Schemas of entity types are: <type>.schema.json.
            # schemas = "schemas"

            # Language servers for the code files. Each table names a program that Stardust will
            # run, so a store's own tables run only once you have read them and run
            # `stardust trust .` here (a table changed later must be trusted again). The same
            # tables in ~/.config/stardust/servers.toml run without trust.

            # Python (2 files): basedpyright-langserver was on PATH.
            [servers.basedpyright]
            command = "basedpyright-langserver"
            args = ["--stdio"]
            languages = { py = "python", pyi = "python" }
            root_markers = ["pyproject.toml", "setup.py", "requirements.txt"]

            # TypeScript and JavaScript (1 file): no server was on PATH. Install one (npm install --global typescript-language-server typescript@5),
            # then remove the `# ` before each line below and run `stardust trust .`.
            # [servers.typescript]
            # command = "typescript-language-server"
            # args = ["--stdio"]
            # languages = { ts = "typescript", tsx = "typescriptreact", mts = "typescript", cts = "typescript", js = "javascript", jsx = "javascriptreact", mjs = "javascript", cjs = "javascript" }
            # root_markers = ["tsconfig.json", "jsconfig.json", "package.json"]
            # # tsserver takes a while to load a project the first time.
            # timeouts = { startup = 60 }
        "##]]
        .assert_eq(&plan.config);
        // Uncommented as the comment says, the table is valid too.
        let at = plan.config.find("# [servers.typescript]").unwrap();
        let table: String = plan.config[at..].lines().map(|l| format!("{}\n", &l[2..])).collect();
        let uncommented = format!("{}{table}", &plan.config[..at]);
        let config = Config::parse(&uncommented, Path::new("stardust.toml")).unwrap();
        assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["basedpyright", "typescript"]);
    }

    /// Every language's every server table is a valid configuration, alone and all together
    /// (no extension claimed twice within a language's first choice).
    #[test]
    fn every_known_table_is_valid() {
        for language in LANGUAGES {
            for server in language.servers {
                let mut text = String::new();
                table(&mut text, server, "");
                let config = Config::parse(&text, Path::new("stardust.toml"))
                    .unwrap_or_else(|e| panic!("{}: {e}", server.table));
                assert_eq!(config.servers.len(), 1);
            }
        }
        let mut all = String::new();
        for language in LANGUAGES {
            table(&mut all, &language.servers[0], "");
        }
        Config::parse(&all, Path::new("stardust.toml")).unwrap();
    }

    #[test]
    fn init_writes_once_and_never_overwrites() {
        let dir = project();
        let report = init(dir.path(), Some(OsStr::new(""))).unwrap();
        assert!(report.wrote_gitignore);
        let written = std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
        assert_eq!(written, report.plan.config);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".stardust/.gitignore")).unwrap(),
            PRIVATE_GITIGNORE
        );
        let text = instructions(&report);
        assert!(text.contains(&format!("stardust trust {}", report.root.display())), "{text}");
        assert!(text.contains("[mcp_servers.stardust]"), "{text}");
        std::fs::write(dir.path().join(CONFIG_FILE), "# mine\n").unwrap();
        let err = init(dir.path(), None).unwrap_err();
        assert_eq!(err.code(), Code::Conflict);
        assert!(err.to_string().contains("never overwrites"), "{err}");
        assert_eq!(std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap(), "# mine\n");
        // An existing private .gitignore is left as it is.
        let other = tempfile::tempdir().unwrap();
        write(other.path(), ".stardust/.gitignore", "mine\n");
        let report = init(&other.path().join("."), None).unwrap();
        assert!(!report.wrote_gitignore);
        assert!(report.plan.found.is_empty());
        assert_eq!(
            std::fs::read_to_string(other.path().join(".stardust/.gitignore")).unwrap(),
            "mine\n"
        );
        // A missing folder is made.
        let made = other.path().join("new/store");
        init(&made, None).unwrap();
        assert!(made.join(CONFIG_FILE).is_file());
    }

    #[test]
    fn check_hints_at_init_only_without_configuration_and_with_problems() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check_hint(dir.path(), 0), None);
        let hint = check_hint(dir.path(), 2).unwrap();
        assert!(hint.starts_with("hint: ") && hint.contains("stardust init "), "{hint}");
        assert!(!hint.contains('\n'));
        std::fs::write(dir.path().join(CONFIG_FILE), "").unwrap();
        assert_eq!(check_hint(dir.path(), 2), None);
    }
}

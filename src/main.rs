//! The `stardust` command line: argument parsing and dispatch only; every rule is in the core.

mod cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "stardust", version, about = "One store of JSON and DUST documents.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make an existing folder a store, and say how to reach it from editors and agents.
    ///
    /// Writes a commented stardust.toml (a [servers.*] table for each language present whose
    /// server is on PATH) and .stardust/.gitignore, and prints the trust step and the lines to
    /// paste into editors and MCP hosts. Never overwrites a stardust.toml.
    Init {
        /// The folder (made when missing); by default the working directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Print every diagnostic of a store; exit 1 if any is an error.
    Check {
        /// The store directory.
        store: PathBuf,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Rewrite documents canonically in place, or format standard input with `-`.
    Fmt {
        /// Documents or directories to format; `-` reads standard input.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Write nothing; exit 1 if any document would change.
        #[arg(long)]
        check: bool,
        /// The notation of standard input.
        #[arg(long, value_enum)]
        lang: Option<LangArg>,
    },
    /// List the transactions of a store, oldest first.
    ///
    /// Text: one line per transaction (seq, UTC time, origin, documents). JSON: one object per
    /// line (JSON Lines) with seq, time, origin, and per document its path, change, before and
    /// after versions (SHA-256) and the entity ids created, changed and deleted.
    Log {
        /// The store directory.
        store: PathBuf,
        /// List only the transactions after this seq.
        #[arg(long, default_value_t = 0)]
        since: u64,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Check every record of the log (checksums, order) and report damage; changes
        /// nothing. Exit 1 if history is damaged.
        #[arg(long, conflicts_with = "since")]
        verify: bool,
    },
    /// Print a view's result (an entity of type view) as of the store's current seq: the
    /// bytes the mount shows at the view's path. Exit 1 when it is the view's error object.
    View {
        /// The store directory.
        store: PathBuf,
        /// The view's id, e.g. view/books-by-year.
        id: String,
    },
    /// Run a query (DUST or JSON text; `-` reads it from standard input) and print a page
    /// of its rows.
    Query {
        /// The store directory.
        store: PathBuf,
        /// The query, e.g. "find [?b ?t] where [[?b type book] [?b title ?t]]".
        query: String,
        #[arg(long, value_enum, default_value_t = cmd::query::Format::Table)]
        format: cmd::query::Format,
        /// Print how the query ran (each step, how it finds bindings, estimated and actual
        /// counts) instead of its rows.
        #[arg(long)]
        explain: bool,
    },
    /// Evaluate an expression, e.g. "@book/dune.author.name" (`-` reads it from standard input).
    Eval {
        /// The store directory.
        store: PathBuf,
        expression: String,
        /// An entity whose fields bare names read: `--entity book/dune 'year > 1960'`.
        #[arg(long)]
        entity: Option<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Preview a patch (what it would change, resolved ids, new and resolved diagnostics);
    /// with `--yes`, commit it. Exit 1 when the save authority refuses it.
    Apply {
        /// The store directory.
        store: PathBuf,
        /// The patch (`ops [...]`, DUST or JSON); `-` reads standard input.
        patch: PathBuf,
        /// Commit at once instead of only previewing.
        #[arg(long)]
        yes: bool,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Print a file of the store as of a seq (default: the latest): any document, or any file
    /// the log records.
    Show {
        /// The store directory.
        store: PathBuf,
        /// The file's path, relative to the store root.
        path: String,
        /// The seq after which to read it.
        #[arg(long)]
        at: Option<u64>,
    },
    /// Print unified diffs of what transactions changed: `SEQ` alone, or `SEQ..SEQ` (both
    /// included), optionally only some paths.
    Diff {
        /// The store directory.
        store: PathBuf,
        /// A seq, or a range of seqs `FIRST..LAST`.
        seqs: String,
        /// Only these files (store-relative paths).
        paths: Vec<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Preview undoing a transaction (merged around later changes that do not overlap it);
    /// with `--yes`, commit it through the save authority. Exit 1 when refused.
    Revert {
        /// The store directory.
        store: PathBuf,
        /// The transaction to undo.
        seq: u64,
        /// Commit at once instead of only previewing.
        #[arg(long)]
        yes: bool,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Run the store's one core: LSP, MCP and the command line attach to it over a Unix
    /// socket (recorded in STORE/.stardust/run/daemon.json) until SIGINT or SIGTERM.
    Serve {
        /// The store directory.
        store: PathBuf,
        /// Also show the store at this folder (as `stardust mount` does), through this core.
        #[arg(long, value_name = "DIR")]
        mount: Option<PathBuf>,
        /// Stop after this many seconds with no client connected.
        #[arg(long, value_name = "SECONDS")]
        idle_exit: Option<u64>,
        /// Also serve MCP over streamable HTTP on this loopback address (e.g. 127.0.0.1:8765;
        /// the endpoint is `http://ADDR/mcp`), through this core.
        #[arg(long, value_name = "ADDR")]
        mcp_http: Option<std::net::SocketAddr>,
        /// Let editors confirm or discard the previews of every session of this core (an
        /// agent's proposed edit, listed by stardust.previews.list), as `[previews] share`.
        #[arg(long)]
        share_previews: bool,
    },
    /// Serve the Language Server Protocol on standard input and output.
    Lsp {
        /// The store directory; by default the nearest folder at or above the working
        /// directory with `stardust.toml` or `.stardust/`, else the client's root.
        #[arg(long)]
        store: Option<PathBuf>,
        /// The client is a program using a Stardust SDK: its commits have origin
        /// `sdk:<client name>` instead of `lsp:<client name>`.
        #[arg(long)]
        sdk: bool,
    },
    /// Serve the Model Context Protocol on standard input and output, for coding agents.
    Mcp {
        /// The store directory; by default the nearest folder at or above the working
        /// directory with `stardust.toml` or `.stardust/`.
        #[arg(long)]
        store: Option<PathBuf>,
        /// Let every client confirm previews (list and allow `preview_confirm`), whatever
        /// `[mcp] mutation` says.
        #[arg(long)]
        allow_mutation: bool,
        /// Serve streamable HTTP on this loopback address (e.g. 127.0.0.1:8765) instead of
        /// standard input and output; the endpoint is `http://ADDR/mcp`.
        #[arg(long, value_name = "ADDR")]
        mcp_http: Option<std::net::SocketAddr>,
    },
    /// Back a store up by a backup definition, check an archive, or restore one.
    Backup {
        #[command(subcommand)]
        command: cmd::backup::BackupCommand,
    },
    /// Show the store as ordinary files at DIR until SIGINT or SIGTERM (then unmount).
    ///
    /// Reads return committed content; every save of a document goes through the save
    /// authority (a refused save fails with EIO at close/fsync, EINVAL at rename, and its
    /// bytes are kept in DIR/.stardust/rejected/).
    Mount {
        /// The store directory.
        store: PathBuf,
        /// An empty folder outside the store.
        dir: PathBuf,
        /// The largest document or scratch file a write may make, in bytes (EFBIG beyond).
        #[arg(long, default_value_t = 64 * 1024 * 1024)]
        max_file_size: u64,
        /// Threads serving the kernel's requests.
        #[arg(long, default_value_t = 4)]
        threads: usize,
    },
    /// Allow the language servers of a store's stardust.toml to run: record the SHA-256 of
    /// each of its [servers.<name>] tables in $XDG_CONFIG_HOME/stardust/trusted.toml. A table
    /// changed later must be trusted again. Servers in your own servers.toml need no trust.
    Trust {
        /// The store directory.
        store: PathBuf,
        /// Forget the store's trust instead: its servers no longer start.
        #[arg(long)]
        revoke: bool,
    },
    /// A team store's database on PostgreSQL: create or upgrade its tables.
    Db {
        #[command(subcommand)]
        command: cmd::db::DbCommand,
    },
    /// Make a store's documents exactly those of the folder store DIR, byte for byte, as one
    /// transaction (origin external; never refused). The store keeps its own stardust.toml.
    Import {
        /// The store directory (a team store or a folder store).
        store: PathBuf,
        /// The folder store to take the documents from.
        dir: PathBuf,
    },
    /// Write a store's documents as of its current seq into DIR (new or empty), byte for
    /// byte, with its stardust.toml made a folder store's.
    Export {
        /// The store directory.
        store: PathBuf,
        /// Where the folder store is written.
        dir: PathBuf,
    },
    /// Generate typed SDK definitions from the store's schemas.
    Sdk {
        #[command(subcommand)]
        command: cmd::sdk::SdkCommand,
    },
    /// Write a document in the other notation to standard output.
    Convert {
        file: PathBuf,
        #[arg(long, value_enum)]
        to: LangArg,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LangArg {
    Json,
    /// JSON with comments and trailing commas (SPEC §23).
    Jsonc,
    Dust,
}

impl From<LangArg> for stardust_core::syntax::Lang {
    fn from(lang: LangArg) -> Self {
        match lang {
            LangArg::Json => stardust_core::syntax::Lang::Json,
            LangArg::Jsonc => stardust_core::syntax::Lang::Jsonc,
            LangArg::Dust => stardust_core::syntax::Lang::Dust,
        }
    }
}

// An analysis allocates many small nodes and a commit copies and frees index tables; glibc's
// allocator spent a third of a commit's CPU in its slow paths (`_int_malloc`,
// `malloc_consolidate`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // mimalloc asks for transparent huge pages on its arenas, so each thread's heap can cost a
    // 2 MB page for a few small allocations: a core serving 300 clients (1,285 threads) peaked
    // at 916 MB. Without huge pages it is a few MB per connection. Inherited by a core this
    // process starts.
    // A language server's supervisor (stardust-servers) is this executable again, with a
    // hidden first argument: no helper to find on PATH, and it runs before anything else.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(hidden) = args.get(1).filter(|a| *a == stardust_servers::supervisor::HIDDEN) {
        let code = stardust_servers::supervisor::main(std::slice::from_ref(hidden), &args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = Cli::parse();
    init_logging();
    // Team stores (SPEC §22) open their PostgreSQL database through this connector.
    stardust_core::store::remote::install(stardust_pg::connect);
    #[cfg(target_os = "linux")]
    if let Err(err) = nix::sys::prctl::set_thp_disable(true) {
        tracing::warn!("cannot turn transparent huge pages off: {err}");
    }
    let result = match cli.command {
        Command::Init { dir } => cmd::init::run(&dir),
        Command::Check { store, format } => cmd::check::run(&store, format),
        Command::Fmt { paths, check, lang } => cmd::fmt::run(&paths, check, lang),
        Command::Convert { file, to } => cmd::fmt::convert(&file, to),
        Command::Query { store, query, format, explain } => {
            cmd::query::run(&store, &query, format, explain)
        }
        Command::View { store, id } => cmd::view::run(&store, &id),
        Command::Eval { store, expression, entity, format } => {
            cmd::eval::run(&store, &expression, entity.as_deref(), format)
        }
        Command::Log { store, verify: true, format, .. } => cmd::log::verify(&store, format),
        Command::Log { store, since, format, .. } => cmd::log::run(&store, since, format),
        Command::Apply { store, patch, yes, format } => {
            cmd::apply::run(&store, &patch, yes, format)
        }
        Command::Show { store, path, at } => cmd::history::show(&store, &path, at),
        Command::Diff { store, seqs, paths, format } => {
            cmd::history::diff(&store, &seqs, &paths, format)
        }
        Command::Revert { store, seq, yes, format } => {
            cmd::history::revert(&store, seq, yes, format)
        }
        Command::Serve { store, mount, idle_exit, mcp_http, share_previews } => {
            cmd::serve::run(&store, mount.as_deref(), idle_exit, mcp_http, share_previews)
        }
        Command::Lsp { store, sdk } => cmd::lsp::run(store.as_deref(), sdk),
        Command::Mcp { store, allow_mutation, mcp_http } => {
            cmd::mcp::run(store.as_deref(), allow_mutation, mcp_http)
        }
        Command::Backup { command } => cmd::backup::run(command),
        Command::Sdk { command } => cmd::sdk::run(command),
        Command::Db { command } => cmd::db::run(command),
        Command::Import { store, dir } => cmd::db::import(&store, &dir),
        Command::Export { store, dir } => cmd::db::export(&store, &dir),
        Command::Trust { store, revoke } => cmd::trust::run(&store, revoke),
        Command::Mount { store, dir, max_file_size, threads } => {
            let options = stardust_fuse::MountOptions { max_file_size, threads };
            cmd::mount::run(&store, &dir, options)
        }
    };
    match result {
        Ok(code) => code,
        Err(err) => cmd::report(&err),
    }
}

/// Logs go to stderr; stdout carries only requested output. Colours only on a terminal, so a
/// log captured in a file (an editor's LSP log, `2>serve.log`) has no escape codes in it.
fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("stardust=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

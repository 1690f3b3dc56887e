//! `stardust sdk generate STORE --lang typescript|python|rust --out DIR [--check]` (SPEC §21,
//! §27): writes the package the core's `sdkgen` makes from the store's schemas (definitions,
//! manifest and runtime), or with `--check` only says (exit 1) which files are out of date.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use stardust_core::analysis::Analysis;
use stardust_core::sdkgen::{self, Lang};

#[derive(Subcommand)]
pub(crate) enum SdkCommand {
    /// Write a typed package for every entity type with a schema; the same schemas give the
    /// same bytes.
    ///
    /// TypeScript: an npm package (package.json, compiled JavaScript with declarations, its
    /// runtime inside). Python: a pip package (pyproject.toml, py.typed, its runtime inside).
    /// Both install with nothing fetched (`npm install ./DIR`, `pip install ./DIR`) and are
    /// named after DIR. Rust: serde types (mod.rs) for the stardust-sdk crate.
    Generate {
        /// The store directory.
        store: PathBuf,
        #[arg(long, value_enum)]
        lang: LangArg,
        /// The folder to write into (made when missing; other files in it are left alone).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Write nothing; exit 1 when a file in DIR is missing or differs.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LangArg {
    Typescript,
    Python,
    Rust,
}

pub(crate) fn run(command: SdkCommand) -> anyhow::Result<ExitCode> {
    let SdkCommand::Generate { store, lang, out, check } = command;
    let lang = match lang {
        LangArg::Typescript => Lang::TypeScript,
        LangArg::Python => Lang::Python,
        LangArg::Rust => Lang::Rust,
    };
    let analysis = Analysis::load(&store)?;
    let types = sdkgen::types_of(&analysis);
    let name = sdkgen::package_name(&folder_name(&out)?, lang);
    let started = std::time::Instant::now();
    let files = sdkgen::package(&types, lang, &name);
    let took = started.elapsed();
    let existing = |path: &str| std::fs::read(out.join(path)).ok();
    let stale = sdkgen::stale(&files, existing);
    let obsolete = sdkgen::obsolete(lang, existing);
    if check {
        if stale.is_empty() && obsolete.is_empty() {
            eprintln!("{} is up to date ({} files)", out.display(), files.len());
            return Ok(ExitCode::SUCCESS);
        }
        for path in &stale {
            eprintln!("out of date: {}", out.join(path).display());
        }
        for path in &obsolete {
            eprintln!("out of date: {} (no longer generated)", out.join(path).display());
        }
        eprintln!(
            "run `stardust sdk generate {} --lang {} --out {}` to update",
            store.display(),
            lang_name(lang),
            out.display()
        );
        return Ok(ExitCode::from(1));
    }
    for file in files.iter().filter(|f| stale.contains(&f.path)) {
        write(&out.join(&file.path), &file.bytes)?;
    }
    for path in &obsolete {
        let path = out.join(path);
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    eprintln!(
        "wrote {} of {} files to {} (package {name}, {} types, generated in {:.1} ms)",
        stale.len(),
        files.len(),
        out.display(),
        types.len(),
        took.as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}

/// The last name of `out` (which may not exist yet): what the package is named after.
fn folder_name(out: &Path) -> anyhow::Result<String> {
    let absolute = out.canonicalize().or_else(|_| std::path::absolute(out))?;
    absolute.file_name().map(|n| n.to_string_lossy().into_owned()).ok_or_else(|| {
        stardust_core::Error::InvalidArguments(format!(
            "--out {}: the package is named after the folder, and this path names none; give \
             a folder such as ./my-store-types",
            out.display()
        ))
        .into()
    })
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::TypeScript => "typescript",
        Lang::Python => "python",
        Lang::Rust => "rust",
    }
}

/// Write through a temporary file beside it and a rename, so a reader never sees half a file.
fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

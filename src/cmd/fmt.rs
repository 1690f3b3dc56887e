//! `stardust fmt` and `stardust convert`: the canonical formatter and conversion on files.
//! A file's notation is its store's (`scan::FileLangs`: `.jsonc`, and `.json` files matched
//! by `[store] jsonc`, are JSON with comments).
//!
//! Output contract: stdout carries the requested text (`fmt -`, `convert`) or the paths of the
//! documents that changed (or would change, with `--check`), one a line. Problems go to stderr:
//! `path:line:col: error[syntax] message` for a text that does not parse (that document is
//! left untouched), `error[<code>]: message` otherwise. Exit 0 when all went well, 1 when a
//! document could not be formatted or `--check` found one to change, 2 for usage errors.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use stardust_core::Error;
use stardust_core::format::{self, FormatError};
use stardust_core::scan;
use stardust_core::store;
use stardust_core::syntax::{Lang, SyntaxError};
use stardust_core::text::{Encoding, LineIndex};

use crate::LangArg;

pub(crate) fn run(
    paths: &[PathBuf],
    check: bool,
    lang: Option<LangArg>,
) -> anyhow::Result<ExitCode> {
    if paths.iter().any(|path| path.as_os_str() == "-") {
        if paths.len() > 1 {
            return Err(usage("`-` (standard input) cannot be combined with other paths"));
        }
        let lang = lang.ok_or_else(|| {
            usage(
                "formatting standard input needs its notation: add --lang dust, --lang json or \
                 --lang jsonc",
            )
        })?;
        return format_stdin(lang.into(), check);
    }
    if lang.is_some() {
        return Err(usage(
            "--lang applies only to standard input (`-`); files are told apart by their extension",
        ));
    }

    let documents = collect(paths)?;
    let mut stdout = io::stdout().lock();
    let mut failed = false;
    let mut changed = false;
    for (path, lang) in documents {
        match format_file(&path, lang, check) {
            Ok(Outcome::Unchanged) => {}
            Ok(Outcome::Changed) => {
                changed = true;
                writeln!(stdout, "{}", path.display())
                    .context("cannot write to standard output")?;
            }
            Ok(Outcome::Broken) => failed = true,
            Err(err) => {
                failed = true;
                eprintln!("{}", stardust_core::error::error_line(err.code(), &err.to_string()));
            }
        }
    }
    Ok(if failed || (check && changed) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

pub(crate) fn convert(file: &Path, to: LangArg) -> anyhow::Result<ExitCode> {
    let from = scan::FileLangs::default().lang_of(file)?.ok_or_else(|| {
        usage(format!(
            "{} is not a document; convert reads .json, .jsonc and .dust files",
            file.display()
        ))
    })?;
    let bytes = read(file)?;
    let Some(text) = decode(&file.display().to_string(), &bytes) else {
        return Ok(ExitCode::from(1));
    };
    match format::convert(&text, from, to.into()) {
        Ok(conversion) => {
            io::stdout()
                .lock()
                .write_all(conversion.text.as_bytes())
                .context("cannot write to standard output")?;
            if conversion.lost_comments > 0 {
                let n = conversion.lost_comments;
                let s = if n == 1 { "" } else { "s" };
                eprintln!(
                    "warning: {}: {n} comment{s} dropped, JSON has no comments",
                    file.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(FormatError::Syntax(errors)) => {
            print_syntax_errors(&file.display().to_string(), &text, &errors);
            Ok(ExitCode::from(1))
        }
        Err(err) => Err(Error::from(err).into()),
    }
}

enum Outcome {
    Unchanged,
    Changed,
    /// The text does not parse; the problems were printed and the file left as it is.
    Broken,
}

fn format_stdin(lang: Lang, check: bool) -> anyhow::Result<ExitCode> {
    let mut bytes = Vec::new();
    io::stdin().read_to_end(&mut bytes).map_err(|e| Error::io("cannot read standard input", e))?;
    let Some(text) = decode("<stdin>", &bytes) else {
        return Ok(ExitCode::from(1));
    };
    match format::format(&text, lang) {
        Ok(formatted) if check => {
            Ok(if formatted == text { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Ok(formatted) => {
            io::stdout()
                .lock()
                .write_all(formatted.as_bytes())
                .context("cannot write to standard output")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(FormatError::Syntax(errors)) => {
            print_syntax_errors("<stdin>", &text, &errors);
            Ok(ExitCode::from(1))
        }
        Err(err) => Err(Error::from(err).into()),
    }
}

fn format_file(path: &Path, lang: Lang, check: bool) -> Result<Outcome, Error> {
    let bytes = read(path)?;
    let Some(text) = decode(&path.display().to_string(), &bytes) else {
        return Ok(Outcome::Broken);
    };
    let formatted = match format::format(&text, lang) {
        Ok(formatted) => formatted,
        Err(FormatError::Syntax(errors)) => {
            print_syntax_errors(&path.display().to_string(), &text, &errors);
            return Ok(Outcome::Broken);
        }
        Err(err) => return Err(err.into()),
    };
    if formatted == text {
        return Ok(Outcome::Unchanged);
    }
    if !check {
        write_atomically(path, &formatted)?;
    }
    Ok(Outcome::Changed)
}

/// The documents named by `paths`, in order, each once: files as given (they must be
/// documents), directories searched recursively in name order.
fn collect(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Lang)>, Error> {
    let mut documents = Vec::new();
    let mut langs = scan::FileLangs::default();
    for path in paths {
        let metadata = fs::metadata(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => {
                Error::NotFound(format!("{}: no such file or directory", path.display()))
            }
            _ => Error::io(format!("cannot read {}", path.display()), e),
        })?;
        if metadata.is_dir() {
            walk(path, &mut langs, &mut documents)?;
        } else {
            let lang = langs.lang_of(path)?.ok_or_else(|| {
                Error::InvalidArguments(format!(
                    "{} is not a document; give .json, .jsonc or .dust files, or directories",
                    path.display()
                ))
            })?;
            documents.push((path.clone(), lang));
        }
    }
    let mut seen = HashSet::new();
    documents.retain(|(path, _)| seen.insert(path.clone()));
    Ok(documents)
}

/// Add the documents under `dir`, skipping `.stardust/`, `.git/` and symbolic links (which
/// may lead out of the tree or around in a cycle).
fn walk(
    dir: &Path,
    langs: &mut scan::FileLangs,
    documents: &mut Vec<(PathBuf, Lang)>,
) -> Result<(), Error> {
    let context = || format!("cannot list {}", dir.display());
    let mut entries = fs::read_dir(dir)
        .and_then(|entries| entries.collect::<io::Result<Vec<_>>>())
        .map_err(|e| Error::io(context(), e))?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let file_type = entry.file_type().map_err(|e| Error::io(context(), e))?;
        if file_type.is_dir() {
            if !scan::PRIVATE_DIRS.iter().any(|skip| entry.file_name() == *skip) {
                walk(&path, langs, documents)?;
            }
        } else if file_type.is_file()
            && let Some(lang) = langs.lang_of(&path)?
        {
            documents.push((path, lang));
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    fs::read(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => Error::NotFound(format!("{}: no such file", path.display())),
        _ => Error::io(format!("cannot read {}", path.display()), e),
    })
}

/// The text of a document, or `None` (after printing where) when it is not UTF-8.
fn decode(name: &str, bytes: &[u8]) -> Option<String> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text.to_owned()),
        Err(err) => {
            let valid = String::from_utf8_lossy(&bytes[..err.valid_up_to()]);
            let index = LineIndex::new(&valid);
            let end = u32::try_from(valid.len()).unwrap_or(u32::MAX);
            let position = index.position(&valid, end, Encoding::Utf32);
            eprintln!(
                "{name}:{}:{}: error[syntax] invalid UTF-8; a document must be UTF-8 text",
                position.line + 1,
                position.column + 1
            );
            None
        }
    }
}

/// Print each error as `name:line:col: error[code] message`, 1-based, columns in characters.
fn print_syntax_errors(name: &str, text: &str, errors: &[SyntaxError]) {
    let index = LineIndex::new(text);
    for error in errors {
        let position = index.position(text, error.span.start, Encoding::Utf32);
        let code = error.kind.code();
        eprintln!(
            "{name}:{}:{}: error[{code}] {}",
            position.line + 1,
            position.column + 1,
            error.message
        );
    }
}

/// Replace the file at `path` with `text` so that a reader sees the old or the new content,
/// never a mix (the core's atomic replacement, permissions kept). A symbolic link is written
/// through, to the file it names. A read-only file is refused.
fn write_atomically(path: &Path, text: &str) -> Result<(), Error> {
    let target = fs::canonicalize(path)
        .map_err(|e| Error::io(format!("cannot resolve {}", path.display()), e))?;
    let permissions = fs::metadata(&target)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?
        .permissions();
    if permissions.readonly() {
        return Err(Error::InvalidArguments(format!(
            "{} is read-only; make it writable to format it",
            path.display()
        )));
    }
    store::replace_file(&target, text.as_bytes())
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

fn usage(message: impl Into<String>) -> anyhow::Error {
    Error::InvalidArguments(message.into()).into()
}

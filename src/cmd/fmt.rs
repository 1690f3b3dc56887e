//! `stardust fmt` and `stardust convert`: the canonical formatter and conversion on files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::LangArg;

pub(crate) fn run(
    _paths: &[PathBuf],
    _check: bool,
    _lang: Option<LangArg>,
) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet written")
}

pub(crate) fn convert(_file: &Path, _to: LangArg) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet written")
}

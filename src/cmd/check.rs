//! `stardust check STORE`: every diagnostic of a store, for people or (`--format json`) scripts.

use std::path::Path;
use std::process::ExitCode;

use crate::OutputFormat;

pub(crate) fn run(_store: &Path, _format: OutputFormat) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet written")
}

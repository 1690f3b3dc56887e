//! `stardust lsp [--store STORE]`: the LSP front on standard input and output.

use std::path::Path;
use std::process::ExitCode;

pub(crate) fn run(store: Option<&Path>) -> anyhow::Result<ExitCode> {
    stardust_lsp::run_stdio(store.map(Path::to_owned))?;
    Ok(ExitCode::SUCCESS)
}

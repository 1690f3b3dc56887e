//! `stardust lsp [--store STORE]`: the LSP front on standard input and output, attached to the
//! store's core (started in the background when none runs), so that the editor shares it with
//! agents and the mount. When no core can run (another kind of process owns the store) or no
//! store is known before the client names its root, the server runs in this process.

use std::path::Path;
use std::process::ExitCode;

use stardust_daemon::{Front, Hello};

/// `sdk`: the client is a program using an SDK (`--sdk`), whose commits have origin
/// `sdk:<client>` rather than `lsp:<client>` (SPEC §6).
pub(crate) fn run(store: Option<&Path>, sdk: bool) -> anyhow::Result<ExitCode> {
    let front = if sdk { Front::Sdk } else { Front::Lsp };
    let cwd = std::env::current_dir()?;
    let found = stardust_core::scan::find_store(store, &cwd).and_then(|r| r.canonicalize().ok());
    if let Some(root) = found
        && super::attach_stdio(&root, &Hello::new(front, "stardust lsp"))?
    {
        return Ok(ExitCode::SUCCESS);
    }
    stardust_lsp::run_stdio(store.map(Path::to_owned), Some(super::code_host()?), front)?;
    Ok(ExitCode::SUCCESS)
}

//! `stardust mcp [--store STORE] [--allow-mutation]`: the MCP front on standard input and
//! output.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use stardust_core::service::Service;
use stardust_core::store::{OpenOptions, Store};

pub(crate) fn run(store: Option<&Path>, allow_mutation: bool) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let Some(root) = stardust_lsp::find_store(store, &cwd) else {
        return Err(stardust_core::Error::NotFound(
            "no store found: run inside a store (a folder with stardust.toml or .stardust/) or \
             give --store"
                .to_owned(),
        )
        .into());
    };
    let store = Store::open(&root, OpenOptions::default())?;
    tracing::info!("serving the store {} over MCP", store.root().display());
    let service = Arc::new(Service::new(store));
    stardust_mcp::run_stdio(service, stardust_mcp::Options { allow_mutation })?;
    Ok(ExitCode::SUCCESS)
}

//! `stardust mcp [--store STORE] [--allow-mutation] [--mcp-http ADDR]`: the MCP front on
//! standard input and output, attached to the store's core (started in the background when
//! none runs) so that an agent shares it with editors and the mount; or, with `--mcp-http`,
//! on streamable HTTP on loopback, serving the store from this process.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use stardust_core::service::Service;
use stardust_core::store::{OpenOptions, Store};
use stardust_daemon::{Front, Hello};

pub(crate) fn run(
    store: Option<&Path>,
    allow_mutation: bool,
    http: Option<SocketAddr>,
) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let Some(root) = stardust_core::scan::find_store(store, &cwd) else {
        return Err(stardust_core::Error::NotFound(
            "no store found: run inside a store (a folder with stardust.toml or .stardust/) or \
             give --store"
                .to_owned(),
        )
        .into());
    };
    let options = stardust_mcp::Options { allow_mutation };
    // On stdio, share the store's core with editors and the mount (starting one when none
    // runs); serve alone only when no core can run.
    if http.is_none()
        && let Ok(canonical) = root.canonicalize()
    {
        let hello = Hello { allow_mutation, ..Hello::new(Front::Mcp, "stardust mcp") };
        if super::attach_stdio(&canonical, &hello)? {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let store = Store::open(&root, OpenOptions::default())?;
    tracing::info!("serving the store {} over MCP", store.root().display());
    let service = Arc::new(Service::new(store).with_code_host(super::code_host()?));
    match http {
        Some(addr) => stardust_mcp::run_http(service.clone(), options, addr, |bound| {
            tracing::info!("MCP over streamable HTTP at http://{bound}/mcp");
        })?,
        None => stardust_mcp::run_stdio(service.clone(), options)?,
    }
    service.shutdown_code_servers();
    Ok(ExitCode::SUCCESS)
}

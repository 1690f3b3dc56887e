//! Stardust's MCP front: the core's command registry and editor features as Model Context
//! Protocol tools and resources, for coding agents. No rule lives here (SPEC §13): the front
//! converts tool calls into `Service::execute` and the core's editor features, and answers
//! back as structured content with bounded pages and SPEC §16 error codes.
//!
//! Shape: `rmcp`'s server over stdio (or streamable HTTP on loopback), with hand-written
//! `list_tools`/`call_tool` because the tool list is generated from the registry. Each call
//! runs on its task's thread against the current snapshot: one quick call at a time in place,
//! its long waits escaping, every other in `block_in_place` (its worker's other tasks handed
//! to another thread), so the connection keeps reading while a query runs. The wire framing
//! is ours where rmcp's falls short of JSON-RPC 2.0:
//! every inbound line or body is checked before rmcp sees it (`jsonrpc`); stdio and the
//! daemon socket use our line transport (`lines`) with its bound (`bounded`), and HTTP
//! answers a body rmcp cannot read with a JSON-RPC error (`http`).
#![deny(clippy::print_stdout)]

mod bounded;
mod derived;
mod fdio;
mod http;
mod jsonrpc;
mod lines;
mod server;
mod tools;
mod views;

use std::sync::Arc;

use rmcp::ServiceExt;
use stardust_core::service::Service;

pub use http::run_http;
pub use server::{McpServer, Options};
pub use tools::{CONFIRM_TOOL, command_of, tool_name};

/// Serve one MCP connection of a store's core (`stardust serve`), reading `input` and writing
/// `output` (two copies of the connection's socket, or the pipes or sockets the attacher
/// passed), a session of the shared `service`, until the client closes its input or `gone`
/// resolves (the core saw the client go, which the session may not notice while it holds back
/// on a client that stopped reading). Both are closed, with their flags as found, on return.
pub fn run_attached(
    service: Arc<Service>,
    options: Options,
    input: std::os::fd::OwnedFd,
    output: std::os::fd::OwnedFd,
    gone: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // Restored after the runtime, and with it every copy the session holds, has gone (in the
    // reverse order, for input and output that are one file description).
    let _input_flags = fdio::Nonblocking::set(&input)?;
    let _output_flags = fdio::Nonblocking::set(&output)?;
    let runtime = runtime(SESSION_WORKERS)?;
    let served: anyhow::Result<()> = runtime.block_on(async {
        let (read, write) = (fdio::reader(&input)?, fdio::writer(&output)?);
        let running = McpServer::new(service, options)
            .serve(lines::transport(read, write))
            .await
            .map_err(|e| anyhow::anyhow!("the MCP session did not start: {e}"))?;
        let cancel = running.cancellation_token();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        tokio::select! {
            ended = &mut waiting => {
                ended.map_err(|e| anyhow::anyhow!("the MCP session failed: {e}"))?;
            }
            () = gone => {
                tracing::info!("the agent has gone: ending its session");
                // The service loop may itself be stuck writing to the gone client: give it a
                // moment to stop, then dropping the runtime drops it.
                cancel.cancel();
                let _ = tokio::time::timeout(std::time::Duration::from_secs(1), waiting).await;
            }
        }
        Ok(())
    });
    drop(runtime);
    served
}

/// The runtime of one MCP server: multi-threaded, as `block_in_place` (tool calls) needs,
/// with `workers` threads. Resource reads, and the workers `block_in_place` hands over, use
/// its blocking pool, bounded: two cores gain nothing from hundreds of threads, and every
/// thread keeps its own allocator heap.
///
/// One session ([`SESSION_WORKERS`]) has one worker. A second worker only added a hand-over
/// to every call: rmcp spawns a task per request, and tokio wakes a parked worker for it,
/// which then hands the I/O driver back (two cross-thread wake-ups a call, measured as
/// 0.12 → 0.16–0.18 ms on `server_status`). Nothing waits on the worker: a call that may
/// wait long leaves it through `block_in_place` (`stardust_core::sync::long_wait`).
pub(crate) fn runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .max_blocking_threads(16)
        .enable_all()
        .build()
}

/// The workers of a runtime that serves one session (stdio, or a connection of the core).
pub(crate) const SESSION_WORKERS: usize = 1;

/// The workers of the HTTP server's runtime, which all its sessions share: one a core.
pub(crate) const HTTP_WORKERS: usize = 2;

/// Serve MCP on standard input and output until the client closes the input.
pub fn run_stdio(service: Arc<Service>, options: Options) -> anyhow::Result<()> {
    let runtime = runtime(SESSION_WORKERS)?;
    runtime.block_on(async move {
        let running = McpServer::new(service, options)
            .serve({
                let (read, write) = rmcp::transport::stdio();
                lines::transport(read, write)
            })
            .await
            .map_err(|e| anyhow::anyhow!("the MCP session did not start: {e}"))?;
        running.waiting().await.map_err(|e| anyhow::anyhow!("the MCP session failed: {e}"))?;
        Ok(())
    })
}

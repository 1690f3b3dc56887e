//! Streamable HTTP on loopback (`stardust mcp --mcp-http 127.0.0.1:PORT`): rmcp's service,
//! one MCP session per client, behind DNS-rebinding protection. Only loopback addresses may
//! be bound; requests must name this server in `Host` (`127.0.0.1:PORT`, `localhost:PORT`),
//! and a browser `Origin`, when sent, must be this server's own.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use stardust_core::Error;
use stardust_core::service::Service;

use crate::{McpServer, Options};

/// Serve MCP over streamable HTTP on `addr` until the process is stopped. `ready` is told
/// the bound address (the port may have been 0).
pub fn run_http(
    service: Arc<Service>,
    options: Options,
    addr: SocketAddr,
    ready: impl FnOnce(SocketAddr),
) -> anyhow::Result<()> {
    if !addr.ip().is_loopback() {
        return Err(Error::InvalidArguments(format!(
            "--mcp-http serves on loopback only; give 127.0.0.1:PORT or [::1]:PORT, not {addr}"
        ))
        .into());
    }
    let runtime = crate::runtime()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let port = bound.port();
        let hosts =
            [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
        let origins: Vec<String> = hosts.iter().map(|h| format!("http://{h}")).collect();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation();
        let http = StreamableHttpService::new(
            move || Ok(McpServer::new(service.clone(), options)),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        ready(bound);
        loop {
            let (stream, peer) = listener.accept().await?;
            let http = http.clone();
            tokio::spawn(async move {
                let served = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(http))
                    .await;
                if let Err(err) = served {
                    tracing::debug!("the HTTP connection from {peer} ended: {err}");
                }
            });
        }
    })
}

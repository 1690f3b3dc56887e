//! Streamable HTTP on loopback (`stardust mcp --mcp-http 127.0.0.1:PORT`): rmcp's service,
//! one MCP session per client, behind DNS-rebinding protection. Only loopback addresses may
//! be bound; requests must name this server in `Host` (`127.0.0.1:PORT`, `localhost:PORT`),
//! and a browser `Origin`, when sent, must be this server's own.
//!
//! A JSON body rmcp cannot read as a message gets HTTP 400 with the JSON-RPC error it calls
//! for (`-32700` or `-32600`, see [`crate::jsonrpc`]) instead of rmcp's 415 with plain text,
//! and a session ended by `DELETE` gets 204 instead of rmcp's 202.
//! rmcp still decides everything first (Host and Origin, Accept, Content-Type, size,
//! sessions): only its answer to an unreadable JSON body is rewritten, from a copy of the
//! body's chunks kept while rmcp reads them (shared `Bytes`, not copied).

use stardust_core::sync::lock;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::{Request, Response, StatusCode};
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
    let runtime = crate::runtime(crate::HTTP_WORKERS)?;
    let inline = crate::server::InlineSlot::default();
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
            // One runtime for every session: one slot for a call in place among them all.
            move || Ok(McpServer::sharing(service.clone(), options, inline.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let rmcp = TowerToHyperService::new(http);
        ready(bound);
        loop {
            let (stream, peer) = listener.accept().await?;
            let rmcp = rmcp.clone();
            let service = hyper::service::service_fn(move |request| answer(rmcp.clone(), request));
            tokio::spawn(async move {
                let served = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                if let Err(err) = served {
                    tracing::debug!("the HTTP connection from {peer} ended: {err}");
                }
            });
        }
    })
}

/// rmcp's answer to `request`, except that its 415 to a JSON body it could not read as a
/// message becomes a 400 carrying the JSON-RPC error.
async fn answer<S, B>(rmcp: S, request: Request<Incoming>) -> Result<Response<Reply<B>>, S::Error>
where
    S: hyper::service::Service<Request<Tee>, Response = Response<B>>,
{
    let json = is_json(&request);
    let delete = request.method() == hyper::Method::DELETE;
    let body = Tee { inner: None, chunks: Arc::new(Mutex::new(Vec::new())) };
    let chunks = body.chunks.clone();
    let request = request.map(|inner| Tee { inner: Some(inner), ..body });
    let mut response = rmcp.call(request).await?;
    // A session ended by DELETE: rmcp answers 202, which the MCP Python SDK reports as a
    // failed termination (it takes 200 and 204); nothing follows, so 204 says it exactly.
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    // rmcp answers 415 to a JSON Content-Type only when the body is not a message (its
    // Content-Type check is what answers 415 otherwise).
    if !(json && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE) {
        return Ok(response.map(Reply::Rmcp));
    }
    let body: Vec<u8> = lock(&chunks).iter().flat_map(|c| c.iter().copied()).collect();
    let error = crate::jsonrpc::refusal(&body);
    tracing::debug!("answering an unusable request body: {error}");
    let refused = Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Reply::Refused(Some(Bytes::from(error.to_string()))))
        .expect("a valid response");
    Ok(refused)
}

/// Whether the request says its body is JSON, by the essence of its Content-Type as rmcp
/// reads it.
fn is_json(request: &Request<Incoming>) -> bool {
    let header = request.headers().get(hyper::header::CONTENT_TYPE);
    header.and_then(|h| h.to_str().ok()).is_some_and(|h| {
        let essence = h.split_once(';').map_or(h, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

/// A request body that keeps (a reference to) each data chunk as it is read.
pub struct Tee {
    inner: Option<Incoming>,
    chunks: Arc<Mutex<Vec<Bytes>>>,
}

impl Body for Tee {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else { return Poll::Ready(None) };
        let polled = Pin::new(inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            lock(&this.chunks).push(data.clone());
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.as_ref().map(Body::size_hint).unwrap_or_default()
    }
}

/// A response body: rmcp's, or the JSON-RPC error that replaced it.
pub enum Reply<B> {
    Rmcp(B),
    Refused(Option<Bytes>),
}

impl<B: Body<Data = Bytes> + Unpin> Body for Reply<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.get_mut() {
            Reply::Rmcp(body) => Pin::new(body).poll_frame(cx),
            Reply::Refused(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Reply::Rmcp(body) => body.is_end_stream(),
            Reply::Refused(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Reply::Rmcp(body) => body.size_hint(),
            Reply::Refused(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
        }
    }
}

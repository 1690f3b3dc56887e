//! Cancelled requests answer with the SPEC §16 code: `async-lsp`'s concurrency layer aborts a
//! request on `$/cancelRequest` and answers `RequestCancelled` without `data`; this layer adds
//! `{"code": "cancelled"}` so that every error a client sees carries a code.

use std::ops::ControlFlow;
use std::task::{Context, Poll};

use async_lsp::{AnyEvent, AnyNotification, AnyRequest, ErrorCode, LspService, ResponseError};
use futures::TryFutureExt;
use futures::future::MapErr;
use serde_json::json;
use tower::{Layer, Service};

/// The layer adding the `cancelled` code.
#[derive(Clone, Copy, Debug, Default)]
pub struct CancelledCodeLayer;

impl<S> Layer<S> for CancelledCodeLayer {
    type Service = CancelledCode<S>;

    fn layer(&self, inner: S) -> CancelledCode<S> {
        CancelledCode(inner)
    }
}

pub struct CancelledCode<S>(S);

fn with_code(mut err: ResponseError) -> ResponseError {
    if err.code == ErrorCode::REQUEST_CANCELLED && err.data.is_none() {
        err.data = Some(json!({"code": stardust_core::Code::Cancelled}));
        err.message = "the client cancelled the request".to_owned();
    }
    err
}

impl<S> Service<AnyRequest> for CancelledCode<S>
where
    S: Service<AnyRequest, Error = ResponseError>,
{
    type Response = S::Response;
    type Error = ResponseError;
    type Future = MapErr<S::Future, fn(ResponseError) -> ResponseError>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ResponseError>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: AnyRequest) -> Self::Future {
        self.0.call(req).map_err(with_code as fn(ResponseError) -> ResponseError)
    }
}

impl<S> LspService for CancelledCode<S>
where
    S: LspService<Error = ResponseError>,
{
    fn notify(&mut self, notif: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
        self.0.notify(notif)
    }

    fn emit(&mut self, event: AnyEvent) -> ControlFlow<async_lsp::Result<()>> {
        self.0.emit(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cancellations_without_data_get_the_code() {
        let cancelled = with_code(ResponseError::new(ErrorCode::REQUEST_CANCELLED, "x"));
        assert_eq!(cancelled.data, Some(json!({"code": "cancelled"})));
        let other = with_code(ResponseError::new(ErrorCode::REQUEST_FAILED, "x"));
        assert_eq!(other.data, None);
    }
}

//! The editor features of the core (hover, definition, references, symbols, formatting),
//! registered on the router as requests that run on a snapshot off the main loop.

use async_lsp::router::Router;
use lsp_types::ServerCapabilities;

use crate::server::State;

/// The capabilities of the features registered by [`register`].
pub(crate) fn capabilities() -> ServerCapabilities {
    ServerCapabilities::default()
}

pub(crate) fn register(_router: &mut Router<State>) {}

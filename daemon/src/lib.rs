//! One core per store (SPEC §15): `stardust serve` owns the store and serves every front over
//! a Unix socket; `stardust lsp`, `stardust mcp` and the command line attach to it, starting
//! one in the background when none runs, so an editor, an agent and the mount share one core.
#![deny(clippy::print_stdout)]

pub mod attach;
pub mod hangup;
pub mod pass;
pub mod record;
pub mod server;

use serde::{Deserialize, Serialize};
/// Which protocol a connection speaks after its hello: the core's own [`Front`].
pub use stardust_core::service::Front;

/// The version of the hello exchange; an attacher and a core must agree on it.
pub const PROTOCOL: u32 = 1;

/// The first line of every connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    pub stardust: u32,
    pub front: Front,
    /// Who is attaching (for logs and `stardust.status`; the LSP and MCP clients name
    /// themselves again in their own protocol).
    pub client: String,
    /// `stardust mcp --allow-mutation`: the attacher's own flag, passed to the MCP front.
    #[serde(default)]
    pub allow_mutation: bool,
    /// The attacher offers its own standard input and output (`stardust mcp`, `stardust
    /// lsp`): a core that takes them answers `{"ok": true, "stdio": true}` and then receives
    /// them over the socket (see [`server`]), so the session's bytes no longer pass through
    /// the attacher. A core that ignores the field answers as before and the attacher relays.
    #[serde(default)]
    pub pass_stdio: bool,
}

impl Hello {
    pub fn new(front: Front, client: &str) -> Hello {
        Hello {
            stardust: PROTOCOL,
            front,
            client: client.to_owned(),
            allow_mutation: false,
            pass_stdio: false,
        }
    }
}

//! stardust-servers: supervised external language servers for the code files of a store
//! (SPEC §17): the process tree of each server, bound to the core so that nothing of it
//! outlives the core, and the LSP client side that talks to it.
//!
//! The core depends on nothing here; this crate depends on the core (for `Code` and file
//! URIs). A `ServerSpec` is the plain, already-checked launch spec (the core's
//! `[servers.<name>]` table converted); `LanguageServer` is one supervised server, started
//! lazily and shared by every session:
//!
//! ```no_run
//! use std::path::Path;
//! use stardust_servers::{LanguageServer, ServerSpec, SupervisorProgram};
//!
//! let mut spec = ServerSpec::new("pyright", "/usr/bin/pyright-langserver", "/work/store");
//! spec.args = vec!["--stdio".into()];
//! spec.languages.insert("py".into(), "python".into());
//! let server = LanguageServer::new(spec, SupervisorProgram::stardust()?);
//! server.open(Path::new("/work/store/app.py"), "x = 1\n")?;
//! let hover = server.request(
//!     "textDocument/hover",
//!     serde_json::json!({"textDocument": {"uri": "file:///work/store/app.py"},
//!                        "position": {"line": 0, "character": 0}}),
//!     None,
//! )?;
//! println!("{} ({})", hover.result, hover.readiness.as_str());
//! server.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The supervisor is a separate process (`supervisor::main`), run either as the crate's
//! `stardust-supervisor` executable or by an executable that calls `supervisor::main` when
//! it sees a hidden first argument (`SupervisorProgram::current_exe`). Linux only (it reads
//! /proc and uses PR_SET_PDEATHSIG and PR_SET_CHILD_SUBREAPER).

mod client;
pub mod error;
pub mod frame;
mod host;
mod process;
mod server;
pub mod spec;
pub mod supervisor;

pub use client::{EventSink, PublishedDiagnostics, Readiness};
pub use error::ServerError;
pub use host::{Host, status_json};
pub use server::{Answer, LanguageServer, PositionEncoding, RETRIES, State, Status};
pub use spec::{ServerSpec, SupervisorProgram, Timeouts};

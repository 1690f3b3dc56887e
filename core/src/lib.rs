//! Stardust's capability core: everything Stardust knows about documents, with no protocol.
//!
//! Fronts (CLI, LSP, MCP, FUSE) convert their inputs into calls on this crate and convert the
//! answers back; no rule lives in a front. See `docs/ARCHITECTURE.md` for the codemap.

pub mod analysis;
pub mod answers;
pub mod backup;
pub mod builtin;
pub mod codefiles;
pub mod config;
pub mod diagnostics;
pub mod edit;
pub mod error;
#[doc(hidden)]
pub mod fixture;
pub mod format;
pub mod ide;
pub mod ignores;
pub mod init;
pub mod model;
pub mod patch;
pub mod qlang;
pub mod query;
pub mod scan;
pub mod schema;
pub mod sdkgen;
pub mod service;
mod shared_map;
pub mod store;
pub mod sync;
pub mod syntax;
pub mod text;
pub mod views;

pub use error::{Code, Error, Result};

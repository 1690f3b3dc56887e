//! Stardust's LSP front: converts Language Server Protocol messages into calls on the core and
//! the core's answers back into protocol. No rule lives here (SPEC §12).
//!
//! Shape: `async-lsp`'s main loop owns the [`State`]. Notifications are handled on the main
//! loop in the order received (text sync must be strictly ordered); everything that analyses
//! runs on the blocking pool against an immutable snapshot, so the loop keeps reading.
#![deny(clippy::print_stdout)]

mod actions;
mod cancel;
mod commands;
mod convert;
mod features;
mod frames;
mod inflight;
mod server;

pub use server::{run_attached, run_stdio};

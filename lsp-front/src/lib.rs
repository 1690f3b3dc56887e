//! Stardust's LSP front: converts Language Server Protocol messages into calls on the core and
//! the core's answers back into protocol. No rule lives here (SPEC §12).
//!
//! Shape: `async-lsp`'s main loop (`server`) owns the router's `State` (`state`). Notifications
//! are handled on the main loop in the order received (`sync`: text sync must be strictly
//! ordered); everything that analyses runs on the blocking pool against an immutable snapshot
//! of the core's buffers (`stardust_core::ide::Buffers`), so the loop keeps reading.
#![deny(clippy::print_stdout)]

mod actions;
mod cancel;
mod code_tokens;
mod commands;
mod convert;
mod diagnostics;
mod features;
mod frames;
mod inflight;
mod progress;
mod relay;
mod server;
mod state;
mod structure;
mod sync;
mod tokens;
mod views;

pub use server::{run_attached, run_stdio};

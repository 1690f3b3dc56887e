//! Helpers shared by the end-to-end tests: run the real `stardust` binary and read its output.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The repository root, where `examples/` lives.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run `stardust ARGS` from the repository root, with logging left at its default.
pub fn stardust(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(args)
        .current_dir(repo())
        .env_remove("RUST_LOG")
        .output()
        .expect("the stardust binary runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("output is UTF-8")
}

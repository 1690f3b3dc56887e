//! Helpers shared by the end-to-end tests: run the real `stardust` binary and read its output.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
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

/// Copy a store from `from` to `to`, without its private `.stardust/` (a run in the checkout
/// may have made one).
pub fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".stardust" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_store(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A fresh copy of `examples/library` in a temporary folder.
pub fn library() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_store(&repo().join("examples/library"), tmp.path());
    tmp
}

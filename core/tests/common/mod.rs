//! Helpers shared by the store tests: opening a store without the watcher, and writing and
//! reading documents behind its back.

#![allow(dead_code)]

pub mod child;
pub mod code;
pub mod fixture;
pub mod remote;

use std::path::Path;

use stardust_core::store::{OpenOptions, Store};

/// Options without the file watcher, so tests decide when outside edits are noticed.
pub fn options() -> OpenOptions {
    OpenOptions { watch: false, ..OpenOptions::default() }
}

pub fn open(root: &Path) -> Store {
    Store::open(root, options()).unwrap()
}

pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel)).ok()
}

/// A person entity as a JSON document.
pub fn person(id: &str, name: &str) -> String {
    format!("{{\"id\": \"{id}\", \"type\": \"person\", \"name\": \"{name}\"}}\n")
}

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
mod server;

use std::path::{Path, PathBuf};

pub use server::{run_attached, run_stdio};

/// The store root for a server started in `cwd` with `--store` = `flag`: the flag, else the
/// nearest folder at or above `cwd` holding `stardust.toml` or `.stardust/`. `None` means the
/// client's `rootUri` decides.
pub fn find_store(flag: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    if let Some(flag) = flag {
        return Some(flag.to_owned());
    }
    cwd.ancestors()
        .find(|dir| dir.join("stardust.toml").is_file() || dir.join(".stardust").is_dir())
        .map(Path::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_the_flag_else_the_nearest_marked_ancestor() {
        let tmp = std::env::temp_dir().join(format!("stardust-lsp-find-{}", std::process::id()));
        let deep = tmp.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find_store(None, &deep), None);
        std::fs::write(tmp.join("a/stardust.toml"), "").unwrap();
        assert_eq!(find_store(None, &deep), Some(tmp.join("a")));
        std::fs::create_dir_all(tmp.join("a/b/.stardust")).unwrap();
        assert_eq!(find_store(None, &deep), Some(tmp.join("a/b")));
        assert_eq!(find_store(Some(Path::new("/x")), &deep), Some(PathBuf::from("/x")));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}

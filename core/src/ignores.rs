//! The project's own ignore rules (SPEC §23): `.gitignore` files (nested ones too), `.ignore`
//! files and `.git/info/exclude`, applied as git applies them, with the `ignore` crate's
//! matcher (ripgrep's) for the patterns themselves.
//!
//! How a path is judged, as git does:
//! - a path inside an ignored folder is ignored, whatever a deeper file says (git never looks
//!   inside an ignored folder, so nothing there can be re-included);
//! - otherwise the rule files of the path's own folder and of each folder above it are asked,
//!   the deepest first; the first file with a matching pattern decides (within a file the last
//!   matching pattern wins, `!pattern` re-includes); at one folder `.ignore` is asked before
//!   `.gitignore` (ripgrep's order); `.git/info/exclude` is asked last.
//!
//! The rules are read once, by [`ProjectIgnores::load`], which walks the store's folders
//! without entering ignored ones (so a `node_modules/` costs one directory entry). Rule files in
//! the folders above the store up to the repository's root (the folder holding `.git`) apply
//! too, as they do for git. A store that is in no repository still honours its own rule files:
//! whoever wrote a `.gitignore` there meant it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use globset::GlobSet;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The store's own folder (its log, lock and kept files), at the root of the store.
pub const PRIVATE_DIR: &str = ".stardust";

/// Folders at the root of a store that never hold documents and are never walked.
pub const PRIVATE_DIRS: [&str; 2] = [PRIVATE_DIR, ".git"];

/// The rule files read in each folder, the one asked first first.
pub const RULE_FILES: [&str; 2] = [".ignore", ".gitignore"];

/// A rule file larger than this is not read (a warning says so): the matcher's cost grows
/// with the number of patterns, and no real project writes megabytes of them.
pub const MAX_RULE_FILE: u64 = 4 * 1024 * 1024;

/// The ignore rules of one project folder tree.
#[derive(Clone, Debug, Default)]
pub struct ProjectIgnores {
    /// The rule files of each folder that has any, by the folder's store-relative path ("" for
    /// the root), in the order they are asked.
    levels: HashMap<String, Vec<Gitignore>>,
    /// The rule files of the folders above the store, up to the repository's root, nearest
    /// first, each with the store root's path relative to its folder (`"data/"`).
    above: Vec<(String, Gitignore)>,
    /// `.git/info/exclude` of the repository, with the store root's path relative to the
    /// repository's root.
    exclude: Option<(String, Gitignore)>,
    /// What could not be read or understood, for the user (a warning each).
    pub warnings: Vec<String>,
}

impl ProjectIgnores {
    /// Read every rule file of the store at `root` and of the folders above it up to its
    /// repository's root. Folders the rules ignore are not entered; neither are the private
    /// folders, nor folders `pruned` matches (the `[store] ignore` globs).
    pub fn load(root: &Path, pruned: &GlobSet) -> ProjectIgnores {
        let mut out = ProjectIgnores::default();
        out.load_above(root);
        let mut it = walkdir::WalkDir::new(root).follow_links(false).into_iter();
        while let Some(entry) = it.next() {
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_dir() {
                continue;
            }
            let Some(rel) = relative(root, entry.path()) else {
                it.skip_current_dir();
                continue;
            };
            if entry.depth() > 0
                && ((entry.depth() == 1 && PRIVATE_DIRS.contains(&rel.as_str()))
                    || pruned.is_match(&rel)
                    || out.is_ignored(&rel, true))
            {
                it.skip_current_dir();
                continue;
            }
            let files = out.read_rules(entry.path(), &rel);
            if !files.is_empty() {
                out.levels.insert(rel, files);
            }
        }
        out
    }

    /// Whether the store-relative path `rel` is ignored (`dir`: it names a folder).
    pub fn is_ignored(&self, rel: &str, dir: bool) -> bool {
        if self.levels.is_empty() && self.above.is_empty() && self.exclude.is_none() {
            return false;
        }
        // Each folder above the path first: a path in an ignored folder is ignored.
        let mut at = 0;
        while let Some(slash) = rel[at..].find('/') {
            let folder = &rel[..at + slash];
            if self.decides(folder, true) {
                return true;
            }
            at += slash + 1;
        }
        self.decides(rel, dir)
    }

    /// Whether the rules ignore `rel` itself (not asking about the folders above it).
    fn decides(&self, rel: &str, dir: bool) -> bool {
        // The folders holding rule files that apply, deepest first: the path's parent, its
        // parent, ... the root.
        let mut folder = rel.rfind('/').map_or("", |i| &rel[..i]);
        loop {
            if let Some(files) = self.levels.get(folder) {
                let local = if folder.is_empty() { rel } else { &rel[folder.len() + 1..] };
                for file in files {
                    match file.matched(local, dir) {
                        Match::Ignore(_) => return true,
                        Match::Whitelist(_) => return false,
                        Match::None => {}
                    }
                }
            }
            if folder.is_empty() {
                break;
            }
            folder = folder.rfind('/').map_or("", |i| &folder[..i]);
        }
        for (prefix, file) in self.above.iter().chain(&self.exclude) {
            match file.matched(format!("{prefix}{rel}"), dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }

    /// The rule files of the folder `dir` (store-relative `rel`), in the order they are asked.
    fn read_rules(&mut self, dir: &Path, rel: &str) -> Vec<Gitignore> {
        RULE_FILES.iter().filter_map(|name| self.read_file(dir, &dir.join(name), rel)).collect()
    }

    /// One rule file whose patterns are relative to `dir`; `None` when there is none (or it
    /// cannot be used: a warning says why). `shown` names the folder in warnings.
    fn read_file(&mut self, dir: &Path, file: &Path, shown: &str) -> Option<Gitignore> {
        let meta = std::fs::metadata(file).ok()?;
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let place = if shown.is_empty() { name.clone() } else { format!("{shown}/{name}") };
        if !meta.is_file() {
            return None;
        }
        if meta.len() > MAX_RULE_FILE {
            self.warnings.push(format!(
                "{place} is {} bytes, over the {} MiB read for ignore rules: its patterns are not \
                 applied; shorten it",
                meta.len(),
                MAX_RULE_FILE / 1024 / 1024
            ));
            return None;
        }
        let mut builder = GitignoreBuilder::new(dir);
        if let Some(err) = builder.add(file) {
            // Partial: the lines that could be read are kept.
            self.warnings.push(format!("{place}: some ignore patterns are not applied: {err}"));
        }
        match builder.build() {
            Ok(matcher) if !matcher.is_empty() => Some(matcher),
            Ok(_) => None,
            Err(err) => {
                self.warnings.push(format!("{place}: its ignore patterns are not applied: {err}"));
                None
            }
        }
    }

    /// The rule files of the folders above `root` up to its repository's root, and that
    /// repository's `info/exclude`. Nothing when `root` is in no repository (or is its root:
    /// then only the exclude file).
    fn load_above(&mut self, root: &Path) {
        let mut prefix = String::new();
        let mut dir: PathBuf = root.to_owned();
        loop {
            if let Some(git) = git_dir(&dir) {
                let exclude = git.join("info").join("exclude");
                if let Some(file) = self.read_file(&dir, &exclude, ".git/info") {
                    self.exclude = Some((prefix, file));
                }
                return;
            }
            let Some(parent) = dir.parent() else {
                // In no repository: the folders above have no say.
                self.above.clear();
                return;
            };
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            let Some(name) = name else { return };
            prefix = format!("{name}/{prefix}");
            dir = parent.to_owned();
            let shown = dir.display().to_string();
            for name in RULE_FILES {
                if let Some(file) = self.read_file(&dir, &dir.join(name), &shown) {
                    self.above.push((prefix.clone(), file));
                }
            }
        }
    }
}

/// The git directory of the repository whose root is `dir`: `dir/.git` when it is a folder,
/// or the common directory a `.git` file (a worktree's, a submodule's) leads to.
fn git_dir(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let linked = dir.join(text.strip_prefix("gitdir:")?.trim());
    // A worktree's git directory names the repository's own in `commondir`.
    match std::fs::read_to_string(linked.join("commondir")) {
        Ok(common) => Some(linked.join(common.trim())),
        Err(_) => Some(linked),
    }
}

/// The `/`-separated path of `path` relative to `root`, if it is valid UTF-8.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

#[cfg(test)]
mod tests;

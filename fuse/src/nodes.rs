//! Inode numbers: one stable number per path for as long as the mount runs.
//!
//! The kernel names files by inode number; the store names them by path. A document keeps its
//! number across commits (which replace the file on disk), so editors that compare inode
//! numbers before and after a save see the same file. Numbers are never reused. A hard link
//! made through the mount gives a second path to the same number.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

/// The root folder's inode number (FUSE's fixed `FUSE_ROOT_ID`).
pub const ROOT: u64 = 1;

#[derive(Debug)]
pub struct Nodes {
    /// The main path of each number.
    by_ino: HashMap<u64, String>,
    /// In path order, so the paths under a folder are one range (a rename or delete costs
    /// what it moves, not every known path: `rsync` renames each file it writes).
    by_path: BTreeMap<String, u64>,
    /// Further paths of numbers with several (hard links made through the mount).
    aliases: HashMap<u64, Vec<String>>,
    next: u64,
}

impl Default for Nodes {
    fn default() -> Nodes {
        let mut nodes = Nodes {
            by_ino: HashMap::new(),
            by_path: BTreeMap::new(),
            aliases: HashMap::new(),
            next: ROOT + 1,
        };
        nodes.by_ino.insert(ROOT, String::new());
        nodes.by_path.insert(String::new(), ROOT);
        nodes
    }
}

impl Nodes {
    /// The number of `path`, given one on first sight.
    pub fn ino(&mut self, path: &str) -> u64 {
        if let Some(ino) = self.by_path.get(path) {
            return *ino;
        }
        let ino = self.next;
        self.next += 1;
        self.by_ino.insert(ino, path.to_owned());
        self.by_path.insert(path.to_owned(), ino);
        ino
    }

    /// Give `path` the number `ino` too (a hard link), replacing whatever `path` was.
    pub fn link(&mut self, ino: u64, path: &str) {
        self.remove(path);
        match self.by_ino.entry(ino) {
            std::collections::hash_map::Entry::Vacant(main) => {
                main.insert(path.to_owned());
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.aliases.entry(ino).or_default().push(path.to_owned());
            }
        }
        self.by_path.insert(path.to_owned(), ino);
    }

    /// The path of `ino`, if it still has one.
    pub fn path(&self, ino: u64) -> Option<String> {
        self.by_ino.get(&ino).cloned()
    }

    /// The number of `path` if it has one already.
    pub fn get(&self, path: &str) -> Option<u64> {
        self.by_path.get(path).copied()
    }

    /// Forget `path` and everything under it (deleted).
    pub fn remove(&mut self, path: &str) {
        for p in self.under(path) {
            if let Some(ino) = self.by_path.remove(&p) {
                self.unname(ino, &p);
            }
        }
    }

    /// Move `from` and everything under it to `to`, replacing whatever `to` was.
    pub fn rename(&mut self, from: &str, to: &str) {
        if from == to {
            return;
        }
        self.remove(to);
        for old in self.under(from) {
            let Some(ino) = self.by_path.remove(&old) else { continue };
            let new = format!("{to}{}", &old[from.len()..]);
            if self.by_ino.get(&ino) == Some(&old) {
                self.by_ino.insert(ino, new.clone());
            } else if let Some(alias) =
                self.aliases.get_mut(&ino).and_then(|a| a.iter_mut().find(|a| **a == old))
            {
                *alias = new.clone();
            }
            self.by_path.insert(new, ino);
        }
    }

    /// Every known (number, path).
    pub fn all(&self) -> Vec<(u64, String)> {
        self.by_ino.iter().map(|(ino, path)| (*ino, path.clone())).collect()
    }

    /// `path` and the known paths under it.
    fn under(&self, path: &str) -> Vec<String> {
        let prefix = format!("{path}/");
        let below = self
            .by_path
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .map(|(p, _)| p)
            .take_while(|p| p.starts_with(&prefix));
        let itself = self.by_path.get_key_value(path).map(|(p, _)| p);
        itself.into_iter().chain(below).cloned().collect()
    }

    /// `path` no longer names `ino`: another of its paths becomes the main one, if any.
    fn unname(&mut self, ino: u64, path: &str) {
        let aliases = self.aliases.get_mut(&ino);
        if self.by_ino.get(&ino).is_some_and(|main| main == path) {
            match aliases.and_then(|a| a.pop()) {
                Some(other) => {
                    self.by_ino.insert(ino, other);
                }
                None => {
                    self.by_ino.remove(&ino);
                }
            }
        } else if let Some(aliases) = aliases {
            aliases.retain(|a| a != path);
        }
        if self.aliases.get(&ino).is_some_and(Vec::is_empty) {
            self.aliases.remove(&ino);
        }
    }
}

/// `parent/name`, or `name` at the root.
pub fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_owned() } else { format!("{parent}/{name}") }
}

/// The parent folder of a store-relative path (`""` for the root's children).
pub fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable_and_follow_renames() {
        let mut nodes = Nodes::default();
        assert_eq!(nodes.ino(""), ROOT);
        let dir = nodes.ino("books");
        let dune = nodes.ino("books/dune.dust");
        let other = nodes.ino("books2");
        assert_eq!(nodes.ino("books/dune.dust"), dune);
        nodes.rename("books", "library");
        assert_eq!(nodes.path(dir).as_deref(), Some("library"));
        assert_eq!(nodes.path(dune).as_deref(), Some("library/dune.dust"));
        assert_eq!(
            nodes.path(other).as_deref(),
            Some("books2"),
            "a sibling sharing a prefix stays"
        );
        assert_eq!(nodes.get("books/dune.dust"), None);
        // A rename over an existing path replaces it.
        let x = nodes.ino("x.json");
        let y = nodes.ino("y.json");
        nodes.rename("x.json", "y.json");
        assert_eq!(nodes.get("y.json"), Some(x));
        assert_eq!(nodes.path(y), None);
        nodes.remove("library");
        assert_eq!(nodes.path(dune), None);
        assert!(nodes.ino("new") > other, "numbers are never reused");
    }

    #[test]
    fn hard_links_share_a_number() {
        let mut nodes = Nodes::default();
        let a = nodes.ino("a");
        nodes.link(a, "b");
        nodes.link(a, "d/c");
        assert_eq!(nodes.get("b"), Some(a));
        nodes.remove("a");
        let main = nodes.path(a).unwrap();
        assert!(main == "b" || main == "d/c", "{main}");
        nodes.rename("d", "e");
        assert_eq!(nodes.get("e/c"), Some(a));
        nodes.remove("b");
        assert_eq!(nodes.path(a).as_deref(), Some("e/c"));
        nodes.remove("e");
        assert_eq!(nodes.path(a), None);
        assert!(nodes.aliases.is_empty());
    }

    #[test]
    fn paths() {
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a/b", "c"), "a/b/c");
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(parent("a"), "");
    }
}

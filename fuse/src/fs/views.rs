//! Views in the mount (SPEC §19): each view's result at its path, read-only, and the
//! `.stardust/views.json` index. The results come from the core's `views::Live`; this module
//! only shows them.
//!
//! A view's file is one `Rendered` (one seq, whole): `open` copies its bytes into the handle,
//! so a reader sees one result to the end even when a newer one is published meanwhile;
//! attributes are never cached (TTL 0) and the kernel's cache entries are dropped when a
//! result changes (lib.rs). Folders above a view's path that are not on disk are virtual and
//! read-only. A path the mount shows a view at is a private (read-only) path to the save
//! rules, so writes, truncation, deletion and renames answer `EROFS`.

use std::sync::Arc;
use std::time::Duration;

use fuser::{Errno, FileAttr, FileType, FopenFlags, INodeNo};
use stardust_core::store::PRIVATE_DIR;
use stardust_core::views::Rendered;

use super::{Handle, StardustFs};

/// The index of the views, inside the private folder.
const INDEX: &str = "views.json";

/// The extended attribute holding the seq a view's file is as of.
pub(super) const SEQ_XATTR: &str = "user.stardust.seq";

/// What the mount shows at a path because of views.
pub(super) enum ViewNode {
    File(Arc<Rendered>),
    /// A folder above a view's path that is not on disk.
    Dir,
    /// `.stardust/views.json`.
    Index(Vec<u8>),
}

/// Whether `path` is the index (asked of every path the mount looks up: no allocation).
fn is_index(path: &str) -> bool {
    path.strip_prefix(PRIVATE_DIR).and_then(|rest| rest.strip_prefix('/')) == Some(INDEX)
}

impl StardustFs {
    /// The view file, virtual folder or index at `path`, if views put one there.
    pub(super) fn view_node(&self, path: &str) -> Option<ViewNode> {
        if is_index(path) {
            let mut bytes = serde_json::to_vec_pretty(&self.views.state().index_json()).ok()?;
            bytes.push(b'\n');
            return Some(ViewNode::Index(bytes));
        }
        if path.is_empty() || Self::is_private(path) {
            return None;
        }
        let state = self.views.state();
        if let Some(rendered) = state.at_path(path) {
            return Some(ViewNode::File(rendered.clone()));
        }
        let above = |p: &str| p.strip_prefix(path).is_some_and(|rest| rest.starts_with('/'));
        if state.paths().any(|(p, _)| above(p)) && self.disk_meta(path).is_err() {
            return Some(ViewNode::Dir);
        }
        None
    }

    /// Whether `path` is a view's file, a virtual folder above one, or a name inside such a
    /// folder: read-only.
    pub(super) fn is_view_path(&self, path: &str) -> bool {
        matches!(self.view_node(path), Some(ViewNode::File(_) | ViewNode::Dir))
            || matches!(self.view_node(crate::nodes::parent(path)), Some(ViewNode::Dir))
    }

    pub(super) fn view_attr(&self, path: &str, node: &ViewNode) -> (FileAttr, Duration) {
        let ino = self.ino_of(path);
        let (kind, size, perm, time) = match node {
            ViewNode::File(r) => (FileType::RegularFile, r.bytes.len() as u64, 0o444, r.time),
            ViewNode::Dir => (FileType::Directory, 0, 0o555, self.started),
            ViewNode::Index(bytes) => {
                (FileType::RegularFile, bytes.len() as u64, 0o444, self.started)
            }
        };
        let attr = FileAttr {
            ino: INodeNo(ino),
            ..super::attr::synthetic_attr(kind, size, perm, time, self.owner)
        };
        (attr, Duration::ZERO)
    }

    /// Open a view's file or the index for reading: the bytes of one result, fixed at open.
    pub(super) fn open_view(
        &self,
        node: ViewNode,
        write: bool,
    ) -> Result<(u64, FopenFlags), Errno> {
        let bytes = match node {
            ViewNode::Dir => return Err(Errno::EISDIR),
            _ if write => return Err(Errno::EROFS),
            ViewNode::File(r) => r.bytes.to_vec(),
            ViewNode::Index(bytes) => bytes,
        };
        Ok((self.fh(Handle::Bytes(bytes)), FopenFlags::FOPEN_DIRECT_IO))
    }

    /// Add the views' files and virtual folders inside the folder `path` to its listing.
    pub(super) fn add_view_entries(&self, path: &str, entries: &mut Vec<(String, FileType)>) {
        if path == PRIVATE_DIR {
            entries.push((INDEX.to_owned(), FileType::RegularFile));
            return;
        }
        let state = self.views.state();
        let prefix = if path.is_empty() { String::new() } else { format!("{path}/") };
        for (view_path, _) in state.paths() {
            let Some(rest) = view_path.strip_prefix(&prefix) else { continue };
            let (name, kind) = match rest.split_once('/') {
                Some((dir, _)) => (dir, FileType::Directory),
                None => (rest, FileType::RegularFile),
            };
            if let Some(entry) = entries.iter_mut().find(|(n, _)| n == name) {
                // A view's file shows over a plain file of the same name.
                if kind == FileType::RegularFile {
                    entry.1 = kind;
                }
            } else {
                entries.push((name.to_owned(), kind));
            }
        }
    }

    /// The value of extended attribute `name` of `path`, when views define it.
    pub(super) fn view_xattr(&self, path: &str, name: &str) -> Option<Vec<u8>> {
        match self.view_node(path)? {
            ViewNode::File(r) if name == SEQ_XATTR => Some(r.seq.to_string().into_bytes()),
            ViewNode::Index(_) if name == SEQ_XATTR => {
                Some(self.views.state().seq.to_string().into_bytes())
            }
            _ => None,
        }
    }
}

//! The documents of a snapshot: found by path in a shared map, walked in path order.
//!
//! A commit replaces a document or two of thousands; a map whose clones share storage makes
//! the new snapshot's copy cost about the change (a cloned `BTreeMap` of 10,000 documents was
//! the largest part of a one-document commit). The sorted path list is shared as well and
//! copied only when a document is added or removed.

use std::ops::Index;
use std::sync::Arc;

use crate::shared_map::SharedMap;

use super::Document;

#[derive(Clone, Default)]
pub(super) struct Docs {
    by_path: SharedMap<Arc<str>, Arc<Document>>,
    /// Every path, sorted.
    order: Arc<Vec<Arc<str>>>,
}

impl Docs {
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    pub(super) fn get(&self, path: &str) -> Option<&Arc<Document>> {
        self.by_path.get(path)
    }

    /// The document at `path`, to replace or to edit in place (its shard is copied first if
    /// another snapshot shares it).
    pub(super) fn get_mut(&mut self, path: &str) -> Option<&mut Arc<Document>> {
        self.by_path.get_mut(path)
    }

    pub(super) fn contains_key(&self, path: &str) -> bool {
        self.by_path.contains_key(path)
    }

    pub(super) fn insert(&mut self, path: Arc<str>, doc: Arc<Document>) {
        if self.by_path.insert(path.clone(), doc).is_none() {
            let order = Arc::make_mut(&mut self.order);
            let at = order.binary_search(&path).unwrap_or_else(|at| at);
            order.insert(at, path);
        }
    }

    pub(super) fn remove(&mut self, path: &str) {
        if self.by_path.remove(path).is_some() {
            let order = Arc::make_mut(&mut self.order);
            if let Ok(at) = order.binary_search_by(|p| (**p).cmp(path)) {
                order.remove(at);
            }
        }
    }

    /// Paths in order.
    pub(super) fn keys(&self) -> impl Iterator<Item = &Arc<str>> {
        self.order.iter()
    }

    /// The paths under the folder `folder` (not `folder` itself), in order: one binary
    /// search, then what is there.
    pub(super) fn keys_under<'a>(&'a self, folder: &str) -> impl Iterator<Item = &'a Arc<str>> {
        let prefix = format!("{folder}/");
        let start = self.order.partition_point(|p| **p < *prefix.as_str());
        self.order[start..].iter().take_while(move |p| p.starts_with(&prefix))
    }

    /// Documents in path order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<Document>> {
        self.iter().map(|(_, doc)| doc)
    }

    /// Paths and documents in path order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<Document>)> {
        self.order.iter().map(|path| (path, &self[&**path]))
    }
}

impl Index<&str> for Docs {
    type Output = Arc<Document>;

    fn index(&self, path: &str) -> &Arc<Document> {
        self.by_path.get(path).expect("every listed path has a document")
    }
}

impl FromIterator<(Arc<str>, Arc<Document>)> for Docs {
    fn from_iter<I: IntoIterator<Item = (Arc<str>, Arc<Document>)>>(iter: I) -> Docs {
        let by_path: SharedMap<Arc<str>, Arc<Document>> = iter.into_iter().collect();
        let mut order: Vec<Arc<str>> = by_path.keys().cloned().collect();
        order.sort();
        Docs { by_path, order: Arc::new(order) }
    }
}

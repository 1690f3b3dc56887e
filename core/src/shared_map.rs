//! A hash map whose clones share their storage, so that a snapshot with a few entries changed
//! costs about the change rather than a copy of the whole map.
//!
//! The entries are spread over [`SHARDS`] small maps, each behind an `Arc`, in [`GROUPS`]
//! groups, each also behind an `Arc`. Cloning the map copies the group pointers only; a write
//! copies the group and the shard it lands in if another clone still shares them
//! (`Arc::make_mut`). The analysis clones its indexes on every commit, which made a
//! one-document commit into a 100,000-entity store cost a copy of 100,000 entries.
//!
//! Why two levels: copying a shard clones every entry (two reference counts each, scattered in
//! memory), and cloning a flat list of shards touched one count per shard. With 1,024 flat
//! shards of about 100 entries, a commit into the 100,000-entity store spent more time copying
//! shards than parsing its document. 4,096 shards of about 25 entries in 64 groups make both
//! copies small.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

// Seeded per map like std's, several times faster than SipHash on short keys (ids, paths):
// hashing was a tenth of analysing a store.
use foldhash::fast::RandomState;
use std::sync::Arc;

/// Groups of shards per map.
pub const GROUPS: usize = 64;
/// Shards per group.
const PER_GROUP: usize = 64;
/// Shards per map: a shard of a 100,000-entry map holds about 25 entries.
pub const SHARDS: usize = GROUPS * PER_GROUP;

type Shard<K, V> = Arc<HashMap<K, V, RandomState>>;

pub struct SharedMap<K, V> {
    hasher: RandomState,
    len: usize,
    groups: Vec<Arc<Vec<Shard<K, V>>>>,
}

impl<K, V> Clone for SharedMap<K, V> {
    fn clone(&self) -> Self {
        SharedMap { hasher: self.hasher.clone(), len: self.len, groups: self.groups.clone() }
    }
}

impl<K: std::fmt::Debug, V: std::fmt::Debug> std::fmt::Debug for SharedMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, V> Default for SharedMap<K, V> {
    fn default() -> Self {
        // Every shard starts as the same empty map and every group as the same list of it; the
        // first write to one gives it its own.
        let empty = Arc::new(HashMap::default());
        let group = Arc::new(vec![empty; PER_GROUP]);
        SharedMap { hasher: RandomState::default(), len: 0, groups: vec![group; GROUPS] }
    }
}

impl<K, V> SharedMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    fn shards(&self) -> impl Iterator<Item = &Shard<K, V>> {
        self.groups.iter().flat_map(|group| group.iter())
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.shards().flat_map(|shard| shard.iter())
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.iter().map(|(k, _)| k)
    }
}

impl<K: Hash + Eq + Clone, V: Clone> SharedMap<K, V> {
    /// The group and the shard within it.
    fn shard_of<Q: Hash + ?Sized>(&self, key: &Q) -> (usize, usize) {
        // The high half of the hash picks the shard; the shard's own map hashes again with its
        // own keys, so the two choices are independent.
        let index = (self.hasher.hash_one(key) >> 32) as usize % SHARDS;
        (index / PER_GROUP, index % PER_GROUP)
    }

    fn shard(&self, (group, shard): (usize, usize)) -> &HashMap<K, V, RandomState> {
        &self.groups[group][shard]
    }

    /// The shard to write, copied first (with its group) if another clone shares it.
    fn shard_mut(&mut self, (group, shard): (usize, usize)) -> &mut HashMap<K, V, RandomState> {
        Arc::make_mut(&mut Arc::make_mut(&mut self.groups[group])[shard])
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard(self.shard_of(key)).get(key)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(key).is_some()
    }

    /// The value at `key` to change in place; copies its shard only if the key is there.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let at = self.shard_of(key);
        if !self.shard(at).contains_key(key) {
            return None;
        }
        self.shard_mut(at).get_mut(key)
    }

    /// The value at `key`, inserting `V::default()` first if there is none.
    pub fn get_or_insert_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        let at = self.shard_of(&key);
        if !self.shard(at).contains_key(&key) {
            self.len += 1;
        }
        self.shard_mut(at).entry(key).or_default()
    }

    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let at = self.shard_of(&key);
        let old = self.shard_mut(at).insert(key, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let at = self.shard_of(key);
        if !self.shard(at).contains_key(key) {
            return None;
        }
        let old = self.shard_mut(at).remove(key);
        self.len -= 1;
        old
    }
}

impl<K: Hash + Eq + Clone, V: Clone> FromIterator<(K, V)> for SharedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = SharedMap::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u16, u8),
        Remove(u16),
        Push(u16, u8),
        Retain(u16),
        Snapshot,
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct keys, so that operations meet the same entries.
        let key = 0u16..300;
        prop_oneof![
            (key.clone(), any::<u8>()).prop_map(|(k, v)| Op::Insert(k, v)),
            key.clone().prop_map(Op::Remove),
            (key.clone(), any::<u8>()).prop_map(|(k, v)| Op::Push(k, v)),
            key.prop_map(Op::Retain),
            Just(Op::Snapshot),
        ]
    }

    fn contents(map: &SharedMap<u16, Vec<u8>>) -> HashMap<u16, Vec<u8>> {
        map.iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    proptest! {
        /// The map behaves as a `HashMap`, and a clone taken at any point keeps exactly the
        /// entries it had, whatever is written to the original afterwards.
        #[test]
        fn matches_a_hash_map_and_clones_are_independent(ops in prop::collection::vec(op(), 0..200)) {
            let mut map: SharedMap<u16, Vec<u8>> = SharedMap::new();
            let mut model: HashMap<u16, Vec<u8>> = HashMap::new();
            let mut snapshots = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        prop_assert_eq!(map.insert(k, vec![v]), model.insert(k, vec![v]));
                    }
                    Op::Remove(k) => prop_assert_eq!(map.remove(&k), model.remove(&k)),
                    Op::Push(k, v) => {
                        map.get_or_insert_default(k).push(v);
                        model.entry(k).or_default().push(v);
                    }
                    Op::Retain(k) => {
                        let absent = !model.contains_key(&k);
                        prop_assert_eq!(map.get_mut(&k).is_none(), absent);
                        if let Some(v) = map.get_mut(&k) {
                            v.retain(|b| b % 2 == 0);
                        }
                        if let Some(v) = model.get_mut(&k) {
                            v.retain(|b| b % 2 == 0);
                        }
                    }
                    Op::Snapshot => snapshots.push((map.clone(), model.clone())),
                }
                prop_assert_eq!(map.len(), model.len());
            }
            prop_assert_eq!(contents(&map), model.clone());
            for k in 0..300 {
                prop_assert_eq!(map.get(&k), model.get(&k));
                prop_assert_eq!(map.contains_key(&k), model.contains_key(&k));
            }
            for (snapshot, expected) in snapshots {
                prop_assert_eq!(snapshot.len(), expected.len());
                prop_assert_eq!(contents(&snapshot), expected);
            }
        }
    }

    #[test]
    fn a_write_copies_only_its_own_shard_and_group() {
        let mut map: SharedMap<u32, u32> = (0..10_000).map(|i| (i, i)).collect();
        let copy = map.clone();
        map.insert(7, 70);
        let shared = map.shards().zip(copy.shards()).filter(|(a, b)| Arc::ptr_eq(a, b));
        assert_eq!(shared.count(), SHARDS - 1);
        let shared = map.groups.iter().zip(&copy.groups).filter(|(a, b)| Arc::ptr_eq(a, b));
        assert_eq!(shared.count(), GROUPS - 1);
        assert_eq!((map.get(&7), copy.get(&7)), (Some(&70), Some(&7)));
    }

    #[test]
    fn looking_up_a_missing_key_for_writing_copies_nothing() {
        let mut map: SharedMap<u32, u32> = (0..100).map(|i| (i, i)).collect();
        let copy = map.clone();
        assert_eq!(map.get_mut(&1000), None);
        assert_eq!(map.remove(&1000), None);
        assert!(map.groups.iter().zip(&copy.groups).all(|(a, b)| Arc::ptr_eq(a, b)));
    }
}

//! The indexes a query runs on, computed once per analysis snapshot: the entities numbered
//! in document order, entities by id, and per attribute the entities holding each value
//! (built the first time a query names the attribute), plus who references whom.
//!
//! An index may be carried from the previous snapshot's ([`QueryIndex::carry`]): the entities
//! are numbered afresh (the numbering is document order, which an added document shifts), but
//! an attribute the previous index had built is built from its values for the entities of
//! the documents both snapshots share (the same `Arc<Document>`, so the same content), and
//! reads the JSON of the changed documents only. The values of each entity are the same as a
//! fresh build reads, in the same order, so the indexes are the same.

use crate::sync;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::analysis::{Analysis, Document};
pub use crate::qlang::Attr;
use crate::qlang::value::{FastBuild, Val};

/// The number of an entity in a [`QueryIndex`].
pub type EntityNum = u32;

/// One entity: its document, its place in the document's entity list, and where its id is
/// in [`QueryIndex::id_text`].
struct Ent {
    doc: Arc<Document>,
    slot: u32,
    id: (u32, u32),
}

/// Indexes over one analysis snapshot. Only entities with a string id take part; of several
/// entities sharing an id, the first in document path order stands for it (the duplicate is
/// a diagnostic of its own).
pub struct QueryIndex {
    entities: Vec<Ent>,
    /// Every id, one after the other: reading ids from here does not touch the documents.
    id_text: String,
    /// Entities by the hash of their id ([`id_hash`]); an id whose hash an earlier id has
    /// already is in `spill`. Keyed by hash, the map holds no string of its own: building it
    /// allocates nothing per entity, and dropping it frees one table.
    by_hash: HashMap<u64, EntityNum, BuildHasherDefault<IdentityHasher>>,
    spill: HashMap<Box<str>, EntityNum, FastBuild>,
    attrs: Mutex<HashMap<String, Arc<OnceLock<Arc<AttrIndex>>>>>,
    referrers: OnceLock<HashMap<Box<str>, Vec<EntityNum>>>,
    /// What a carried index builds attributes from.
    carried: Option<Carried>,
}

/// The previous index's built attributes, and for each entity of this index its number
/// there when its document is the same one (`NOT_CARRIED` when not).
struct Carried {
    /// Taken out when built from, so that the previous index's memory goes then.
    attrs: Mutex<HashMap<String, Arc<AttrIndex>>>,
    old: Vec<EntityNum>,
}

const NOT_CARRIED: EntityNum = EntityNum::MAX;

impl std::fmt::Debug for QueryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryIndex").field("entities", &self.entities.len()).finish()
    }
}

/// One attribute: the entities holding each value, and each entity's values.
///
/// Postings are keyed by the value's [`Val::hash64`]; a lookup may return an entity whose
/// value merely collides, so callers check the value again (they read it anyway, from the
/// column). The column keeps each entity's values side by side, scalars inline and strings in
/// one buffer, so that reading an attribute of many entities does not chase pointers through
/// every entity's object.
#[derive(Debug)]
pub struct AttrIndex {
    postings: HashMap<u64, Vec<EntityNum>, BuildHasherDefault<IdentityHasher>>,
    /// The entities with at least one value, ascending.
    holders: Vec<EntityNum>,
    /// The number of (entity, value) pairs.
    pairs: usize,
    /// Entity `n`'s values are `cells[starts[n]..starts[n + 1]]`.
    starts: Vec<u32>,
    cells: Vec<Cell>,
    text: String,
}

/// A value in an attribute's column.
#[derive(Clone, Copy, Debug)]
enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A range of [`AttrIndex::text`].
    Str(u32, u32),
    /// The entity has an array or object value here: read its values from the entity.
    Entity,
}

/// The hash [`QueryIndex`] finds ids by.
fn id_hash(id: &str) -> u64 {
    FastBuild::default().hash_one(id)
}

/// The postings are keyed by a hash already.
#[derive(Default)]
pub struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

impl AttrIndex {
    /// The entities that may hold `value` (ascending; see the type's note on collisions).
    pub fn lookup(&self, value: &Val) -> &[EntityNum] {
        self.postings.get(&value.hash64()).map_or(&[], Vec::as_slice)
    }

    pub fn holders(&self) -> &[EntityNum] {
        &self.holders
    }

    /// The number of distinct values (by hash).
    pub fn distinct(&self) -> usize {
        self.postings.len()
    }

    /// The number of (entity, value) pairs.
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// The values entity `num` has in the column, unless it has an array or object value
    /// there (false: read them from the entity).
    fn cell_values<'a>(&'a self, num: EntityNum, out: &mut Vec<Val<'a>>) -> bool {
        let n = num as usize;
        let (Some(&start), Some(&end)) = (self.starts.get(n), self.starts.get(n + 1)) else {
            return true;
        };
        for cell in &self.cells[start as usize..end as usize] {
            match self.cell_value(*cell) {
                Some(value) => out.push(value),
                None => {
                    out.clear();
                    return false;
                }
            }
        }
        true
    }

    /// A cell's value; `None` for [`Cell::Entity`] (read the entity instead).
    fn cell_value(&self, cell: Cell) -> Option<Val<'_>> {
        Some(match cell {
            Cell::Null => Val::Null,
            Cell::Bool(b) => Val::Bool(b),
            Cell::Int(i) => Val::Int(i),
            Cell::Float(f) => Val::Float(f),
            Cell::Str(from, len) => Val::Str(std::borrow::Cow::Borrowed(
                &self.text[from as usize..(from + len) as usize],
            )),
            Cell::Entity => return None,
        })
    }

    /// The distinct values of `attr` (the attribute of this index) in entity `num`.
    pub fn values_of<'a>(
        &'a self,
        idx: &'a QueryIndex,
        attr: &Attr,
        num: EntityNum,
        out: &mut Vec<Val<'a>>,
    ) {
        let n = num as usize;
        let (Some(&start), Some(&end)) = (self.starts.get(n), self.starts.get(n + 1)) else {
            return;
        };
        for cell in &self.cells[start as usize..end as usize] {
            match self.cell_value(*cell) {
                Some(value) => out.push(value),
                None => return attr.values(idx.value(num), out),
            }
        }
    }
}

impl QueryIndex {
    pub fn build(analysis: &Analysis) -> QueryIndex {
        let mut index = QueryIndex {
            entities: Vec::with_capacity(analysis.entity_count()),
            id_text: String::new(),
            by_hash: HashMap::with_capacity_and_hasher(
                analysis.entity_count(),
                BuildHasherDefault::default(),
            ),
            spill: HashMap::default(),
            attrs: Mutex::new(HashMap::new()),
            referrers: OnceLock::new(),
            carried: None,
        };
        for doc in analysis.documents() {
            for (slot, entity) in doc.entities.iter().enumerate() {
                let Some(id) = &entity.id else { continue };
                let num = EntityNum::try_from(index.entities.len()).unwrap_or(EntityNum::MAX);
                // Offsets are u32: past 4 GiB of ids (or 4 billion entities), stop numbering.
                let Ok(from) =
                    u32::try_from(index.id_text.len() + id.len()).map(|end| end - id.len() as u32)
                else {
                    break;
                };
                if num == EntityNum::MAX || index.lookup(id).is_some() {
                    continue;
                }
                match index.by_hash.entry(id_hash(id)) {
                    std::collections::hash_map::Entry::Occupied(_) => {
                        index.spill.insert(id.as_str().into(), num);
                    }
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(num);
                    }
                }
                index.id_text.push_str(id);
                index.entities.push(Ent {
                    doc: doc.clone(),
                    slot: slot as u32,
                    id: (from, id.len() as u32),
                });
            }
        }
        index
    }

    /// The index of `analysis`, carried from `previous` (the index of an earlier snapshot):
    /// the same as [`QueryIndex::build`] gives, with the attributes `previous` had built
    /// built, when first asked for, from its values for the unchanged documents' entities.
    pub fn carry(previous: &QueryIndex, analysis: &Analysis) -> QueryIndex {
        let mut index = QueryIndex::build(analysis);
        let attrs: HashMap<String, Arc<AttrIndex>> = sync::lock(&previous.attrs)
            .iter()
            .filter_map(|(name, cell)| Some((name.clone(), cell.get()?.clone())))
            .collect();
        if attrs.is_empty() {
            return index;
        }
        // Each document's entities are consecutive, in slot order, in both indexes. While
        // `previous` lives it holds every one of its documents, so a document of this
        // snapshot at the same address is the same, unchanged one.
        let mut runs: HashMap<*const Document, (usize, usize)> = HashMap::new();
        let mut start = 0;
        while start < previous.entities.len() {
            let doc = &previous.entities[start].doc;
            let mut end = start + 1;
            while end < previous.entities.len() && Arc::ptr_eq(&previous.entities[end].doc, doc) {
                end += 1;
            }
            runs.insert(Arc::as_ptr(doc), (start, end));
            start = end;
        }
        let mut old = vec![NOT_CARRIED; index.entities.len()];
        let mut start = 0;
        while start < index.entities.len() {
            let doc = index.entities[start].doc.clone();
            let mut end = start + 1;
            while end < index.entities.len() && Arc::ptr_eq(&index.entities[end].doc, &doc) {
                end += 1;
            }
            if let Some(&(mut from, to)) = runs.get(&Arc::as_ptr(&doc)) {
                // The same document may number different entities when a duplicate id
                // elsewhere came or went: match them by slot.
                for (num, ent) in old[start..end].iter_mut().zip(&index.entities[start..end]) {
                    while from < to && previous.entities[from].slot < ent.slot {
                        from += 1;
                    }
                    if from < to && previous.entities[from].slot == ent.slot {
                        *num = from as EntityNum;
                    }
                }
            }
            start = end;
        }
        index.carried = Some(Carried { attrs: Mutex::new(attrs), old });
        index
    }

    pub fn len(&self) -> usize {
        self.entities.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    pub fn lookup(&self, id: &str) -> Option<EntityNum> {
        match self.by_hash.get(&id_hash(id)) {
            Some(&num) if self.id(num) == id => Some(num),
            // Another id has the hash: this one, if it exists, was spilled.
            Some(_) => self.spill.get(id).copied(),
            None => None,
        }
    }

    pub fn id(&self, num: EntityNum) -> &str {
        let (from, len) = self.entities[num as usize].id;
        &self.id_text[from as usize..(from + len) as usize]
    }

    /// The entity's value (an object).
    pub fn value(&self, num: EntityNum) -> &Value {
        let ent = &self.entities[num as usize];
        let root = &ent.doc.parse.value;
        match ent.doc.entities[ent.slot as usize].index {
            None => root,
            Some(i) => root.get(i).unwrap_or(&Value::Null),
        }
    }

    /// The value of the entity with `id`, if there is one.
    pub fn entity_value(&self, id: &str) -> Option<&Value> {
        self.lookup(id).map(|num| self.value(num))
    }

    /// The index of attribute `attr`, built on first use.
    pub fn attr(&self, attr: &Attr) -> Arc<AttrIndex> {
        let cell = {
            let mut attrs = sync::lock(&self.attrs);
            attrs.entry(attr.name.clone()).or_default().clone()
        };
        // Built outside the map's lock, so that other attributes stay available meanwhile.
        cell.get_or_init(|| Arc::new(self.build_attr(attr))).clone()
    }

    fn build_attr(&self, attr: &Attr) -> AttrIndex {
        let previous = self.carried.as_ref().and_then(|c| sync::lock(&c.attrs).remove(&attr.name));
        let from = previous.as_deref().zip(self.carried.as_ref().map(|c| &c.old));
        let mut postings: HashMap<u64, Vec<EntityNum>, BuildHasherDefault<IdentityHasher>> =
            HashMap::default();
        let mut holders = Vec::new();
        let mut pairs = 0;
        let mut values = Vec::new();
        let mut starts = Vec::with_capacity(self.entities.len() + 1);
        let mut cells = Vec::new();
        let mut text = String::new();
        starts.push(0);
        for num in 0..self.entities.len() as EntityNum {
            values.clear();
            let read = match from {
                Some((previous, old)) if old[num as usize] != NOT_CARRIED => {
                    previous.cell_values(old[num as usize], &mut values)
                }
                _ => false,
            };
            if !read {
                attr.values(self.value(num), &mut values);
            }
            if !values.is_empty() {
                holders.push(num);
                pairs += values.len();
                for value in &values {
                    let list = postings.entry(value.hash64()).or_default();
                    // Distinct values of one entity may still share a hash.
                    if list.last() != Some(&num) {
                        list.push(num);
                    }
                }
                let first = cells.len();
                for value in &values {
                    let cell = match value {
                        Val::Null => Cell::Null,
                        Val::Bool(b) => Cell::Bool(*b),
                        Val::Int(i) => Cell::Int(*i),
                        Val::Float(f) => Cell::Float(*f),
                        Val::Str(s) => match u32::try_from(text.len() + s.len()) {
                            Ok(_) => {
                                text.push_str(s);
                                Cell::Str((text.len() - s.len()) as u32, s.len() as u32)
                            }
                            Err(_) => Cell::Entity,
                        },
                        _ => Cell::Entity,
                    };
                    if matches!(cell, Cell::Entity) {
                        cells.truncate(first);
                        cells.push(Cell::Entity);
                        break;
                    }
                    cells.push(cell);
                }
            }
            starts.push(u32::try_from(cells.len()).unwrap_or(u32::MAX));
        }
        AttrIndex { postings, holders, pairs, starts, cells, text }
    }

    /// The entities whose values reference `id` (each once, ascending).
    pub fn referrers(&self, id: &str) -> &[EntityNum] {
        let map = self.referrers.get_or_init(|| {
            let mut map: HashMap<Box<str>, Vec<EntityNum>> = HashMap::new();
            let mut start = 0;
            // Entities of one document are consecutive.
            while start < self.entities.len() {
                let doc = &self.entities[start].doc;
                let mut end = start;
                let mut nums: Vec<Option<EntityNum>> = vec![None; doc.entities.len()];
                while end < self.entities.len() && Arc::ptr_eq(&self.entities[end].doc, doc) {
                    nums[self.entities[end].slot as usize] = Some(end as EntityNum);
                    end += 1;
                }
                for reference in &doc.references {
                    let Some(Some(num)) = nums.get(reference.entity) else { continue };
                    let list = map.entry(reference.target.as_str().into()).or_default();
                    if list.last() != Some(num) {
                        list.push(*num);
                    }
                }
                start = end;
            }
            map
        });
        map.get(id).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn values(attr: &str, entity: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        Attr::new(attr).values(entity, &mut out);
        out.iter().map(Val::to_json).collect()
    }

    #[test]
    fn an_id_whose_hash_another_id_has_is_found_in_the_spill() {
        let ctx = Arc::new(crate::analysis::StoreContext {
            root: "/spill".into(),
            config: crate::config::Config::default(),
        });
        let doc = br#"[{"id": "a/1", "type": "t"}, {"id": "a/2", "type": "t"}]"#.to_vec();
        let mut idx = QueryIndex::build(&Analysis::new(ctx, vec![("a.json".to_owned(), doc)]));
        let (one, two) = (idx.lookup("a/1").unwrap(), idx.lookup("a/2").unwrap());
        // As if "a/2" hashed like "a/1": its hash's entry names the other entity.
        idx.by_hash.insert(id_hash("a/2"), one);
        idx.spill.insert("a/2".into(), two);
        assert_eq!((idx.lookup("a/1"), idx.lookup("a/2")), (Some(one), Some(two)));
        idx.spill.clear();
        assert_eq!(idx.lookup("a/2"), None, "an id whose hash names another is not that one");
        assert_eq!(idx.lookup("a/3"), None);
    }

    #[test]
    fn the_index_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<QueryIndex>();
        shared::<AttrIndex>();
    }

    #[test]
    fn attributes_read_fields_paths_and_array_elements() {
        let e = json!({
            "id": "book/a",
            "author": "@person/x",
            "tags": ["a", "b", "a"],
            "rights": {"holder": "H"},
            "editions": [{"year": 1}, {"year": 2}, {"year": 1}, "odd"],
            "x.y": 5,
            "x": {"y": 6}
        });
        assert_eq!(values("author", &e), vec![json!("person/x")]);
        assert_eq!(values("tags", &e), vec![json!("a"), json!("b")]);
        assert_eq!(values("rights.holder", &e), vec![json!("H")]);
        assert_eq!(values("editions.year", &e), vec![json!(1), json!(2)]);
        assert_eq!(values("x.y", &e), vec![json!(5)], "an exact field name wins");
        assert!(values("missing", &e).is_empty());
        assert!(values("rights.missing", &e).is_empty());
        assert!(values("author.name", &e).is_empty(), "paths do not follow references");
    }
}

//! Property test: a query index carried from the previous snapshot (`Analysis::query_index_from`,
//! as the views' thread does) is the index a fresh build gives: the same entities in the same
//! numbers, the same ids, and per attribute the same holders, values and postings.

use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use stardust_core::analysis::{Analysis, StoreContext};
use stardust_core::config::Config;
use stardust_core::query::{Attr, QueryIndex, Val};

const ATTRS: &[&str] = &["type", "n", "s", "r", "l", "o.k"];

/// Entities `e/0`..`e/k` (`offset` apart, so that two stores share some ids) with optional
/// fields, in documents of one to three entities.
fn docs_strategy(offset: usize) -> impl Strategy<Value = Vec<Vec<Value>>> {
    let entity = (
        0usize..8,
        prop_oneof![Just("t"), Just("u")],
        prop::option::of(0i64..3),
        prop::option::of(prop_oneof![Just("a"), Just("b")]),
        prop::option::of(0usize..8),
        prop::option::of(prop::collection::vec(0i64..3, 0..3)),
        prop::option::of(prop_oneof![Just(json!(1)), Just(json!([2, [3]])), Just(json!({"z": 1}))]),
    );
    prop::collection::vec(prop::collection::vec(entity, 1..4), 1..8).prop_map(move |docs| {
        docs.into_iter()
            .map(|entities| {
                entities
                    .into_iter()
                    .map(|(i, ty, n, s, r, l, o)| {
                        let mut e = json!({"id": format!("e/{}", i + offset), "type": ty});
                        let map = e.as_object_mut().unwrap();
                        n.map(|n| map.insert("n".into(), json!(n)));
                        s.map(|s| map.insert("s".into(), json!(s)));
                        r.map(|r| map.insert("r".into(), json!(format!("@e/{r}"))));
                        l.map(|l| map.insert("l".into(), json!(l)));
                        o.map(|o| map.insert("o".into(), json!({"k": o})));
                        e
                    })
                    .collect()
            })
            .collect()
    })
}

/// The observable content of an index: per entity its id, `lookup` of every id, and per
/// attribute the holders, pairs, distinct values, each entity's values and each value's
/// postings.
fn content(idx: &QueryIndex, ids: &[String]) -> Value {
    let entities: Vec<&str> = (0..idx.len() as u32).map(|n| idx.id(n)).collect();
    let lookups: Vec<Option<u32>> = ids.iter().map(|id| idx.lookup(id)).collect();
    let attrs: Vec<Value> = ATTRS
        .iter()
        .map(|name| {
            let attr = Attr::new(name);
            let index = idx.attr(&attr);
            let mut per_entity = Vec::new();
            let mut postings = Vec::new();
            for n in 0..idx.len() as u32 {
                let mut values = Vec::new();
                index.values_of(idx, &attr, n, &mut values);
                for v in &values {
                    postings.push(json!([v.to_json(), index.lookup(v)]));
                }
                per_entity.push(values.iter().map(Val::to_json).collect::<Vec<_>>());
            }
            json!({
                "holders": index.holders(),
                "pairs": index.pairs(),
                "distinct": index.distinct(),
                "values": per_entity,
                "postings": postings,
            })
        })
        .collect();
    json!({"entities": entities, "lookups": lookups, "attrs": attrs})
}

fn bytes(entities: &[Value]) -> Vec<u8> {
    serde_json::to_vec(entities).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Documents kept, deleted, rewritten and added between, with ids that may come to be
    /// duplicated or stop being: the carried index is the fresh one.
    #[test]
    fn a_carried_index_is_the_index_built_afresh(
        before in docs_strategy(0),
        other in docs_strategy(3),
        ops in prop::collection::vec(0u8..4, 8),
        built in prop::collection::vec(any::<bool>(), ATTRS.len()),
    ) {
        let ctx = Arc::new(StoreContext { root: PathBuf::from("/carry"), config: Config::default() });
        let docs = before.iter().enumerate().map(|(i, d)| (format!("d{i}.json"), bytes(d))).collect();
        let first = Analysis::new(ctx, docs);
        // The previous snapshot's index, with some attributes built.
        let previous = first.query_index();
        for (name, built) in ATTRS.iter().zip(&built) {
            if *built {
                previous.attr(&Attr::new(name));
            }
        }
        let mut changes = Vec::new();
        for (i, _) in before.iter().enumerate() {
            let replacement = other.get(i).map(|d| bytes(d));
            match (ops[i % ops.len()], replacement) {
                (1, _) => changes.push((format!("d{i}.json"), None)),
                (2, Some(b)) => changes.push((format!("d{i}.json"), Some(b))),
                // Sorts between `d{i}.json` and the next document.
                (3, Some(b)) => changes.push((format!("d{i}x.json"), Some(b))),
                _ => {}
            }
        }
        let second = first.with_changes(changes);
        let carried = second.query_index_from(&first);
        let fresh = QueryIndex::build(&second);
        let ids: Vec<String> = (0..12).map(|i| format!("e/{i}")).collect();
        prop_assert_eq!(content(&carried, &ids), content(&fresh, &ids));
    }
}

#[test]
fn an_index_is_carried_only_from_a_snapshot_that_has_one() {
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/carry"), config: Config::default() });
    let doc = |id: &str| bytes(&[json!({"id": id, "type": "t"})]);
    let first = Analysis::new(ctx, vec![("a.json".to_owned(), doc("e/a"))]);
    let second = first.with_changes(vec![("b.json".to_owned(), Some(doc("e/b")))]);
    // `first` has no index: the second is built afresh, and stays the snapshot's index.
    let index = second.query_index_from(&first);
    assert!(Arc::ptr_eq(&index, &second.query_index()));
    assert_eq!(index.len(), 2);
    assert_eq!(index.lookup("e/b"), Some(1));
}

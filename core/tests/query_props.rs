//! Property test: random queries over a random store give what a brute-force evaluator gives.
//!
//! The reference below knows nothing of indexes or plans: it matches each pattern against every
//! (entity, value) pair of the store, joins solutions as sets, applies `or` as a projected
//! union and `not` as an anti-join (after the positive clauses, since `not` only removes), then
//! filters, projects, groups, sorts and pages.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use stardust_core::analysis::{Analysis, StoreContext};
use stardust_core::config::Config;
use stardust_core::query::{self, Query, QueryOptions};

const ATTRS: &[&str] = &["type", "n", "s", "r", "l", "o.k"];
const VARS: &[&str] = &["?x", "?y", "?z"];

/// A random store: entities `e/0`..`e/N` with optional fields; `r` may dangle.
fn store_strategy() -> impl Strategy<Value = Vec<Value>> {
    (2usize..12).prop_flat_map(|n| {
        let entity = (
            prop_oneof![Just("t"), Just("u")],
            prop::option::weighted(0.8, 0i64..3),
            prop::option::weighted(0.8, prop_oneof![Just("a"), Just("b"), Just("c")]),
            prop::option::weighted(0.8, 0..n + 1),
            prop::option::weighted(0.8, prop::collection::vec(0i64..3, 0..4)),
            prop::option::weighted(0.8, 0i64..3),
        );
        prop::collection::vec(entity, n).prop_map(|entities| {
            entities
                .into_iter()
                .enumerate()
                .map(|(i, (ty, num, s, r, l, o))| {
                    let mut e = json!({"id": format!("e/{i}"), "type": ty});
                    let map = e.as_object_mut().unwrap();
                    if let Some(num) = num {
                        map.insert("n".into(), json!(num));
                    }
                    if let Some(s) = s {
                        map.insert("s".into(), json!(s));
                    }
                    if let Some(r) = r {
                        map.insert("r".into(), json!(format!("@e/{r}")));
                    }
                    if let Some(l) = l {
                        map.insert("l".into(), json!(l));
                    }
                    if let Some(o) = o {
                        map.insert("o".into(), json!({"k": o}));
                    }
                    e
                })
                .collect()
        })
    })
}

#[derive(Clone, Debug)]
enum Clause {
    Pattern([Value; 3]),
    Not(Vec<Clause>),
    Or(Vec<Vec<Clause>>),
}

fn term_strategy(entity: bool) -> BoxedStrategy<Value> {
    let var = prop::sample::select(VARS).prop_map(|v| json!(v));
    if entity {
        prop_oneof![8 => var, 1 => Just(json!("_")), 1 => (0usize..4).prop_map(|k| json!(format!("e/{k}")))].boxed()
    } else {
        prop_oneof![
            10 => var,
            1 => Just(json!("_")),
            1 => (0i64..3).prop_map(|k| json!(k)),
            1 => prop::sample::select(vec!["a", "b", "t", "u"]).prop_map(|s| json!(s)),
            1 => (0usize..4).prop_map(|k| json!(format!("@e/{k}"))),
        ]
        .boxed()
    }
}

fn pattern_strategy() -> impl Strategy<Value = Clause> {
    (term_strategy(true), prop::sample::select(ATTRS), term_strategy(false))
        .prop_map(|(e, a, v)| Clause::Pattern([e, json!(a), v]))
}

fn clauses_strategy() -> impl Strategy<Value = Vec<Clause>> {
    let extra = prop_oneof![
        3 => Just(None),
        1 => pattern_strategy().prop_map(|p| Some(Clause::Not(vec![p]))),
        1 => (pattern_strategy(), pattern_strategy()).prop_map(|(a, b)| Some(Clause::Or(vec![vec![a], vec![b]]))),
    ];
    (prop::collection::vec(pattern_strategy(), 1..4), extra).prop_map(|(mut patterns, extra)| {
        patterns.extend(extra);
        patterns
    })
}

fn clause_json(clause: &Clause) -> Value {
    match clause {
        Clause::Pattern(p) => json!(p),
        Clause::Not(inner) => json!({"not": inner.iter().map(clause_json).collect::<Vec<_>>()}),
        Clause::Or(branches) => json!({"or": branches
            .iter()
            .map(|b| b.iter().map(clause_json).collect::<Vec<_>>())
            .collect::<Vec<_>>()}),
    }
}

// ---- the reference evaluator ----

type Solution = BTreeMap<String, Key>;

/// Values of the random store are whole numbers and strings; this orders them as the engine
/// does (numbers before strings).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    Num(i64),
    Str(String),
    Other(String),
}

fn key(value: &Value) -> Key {
    match value {
        Value::Number(n) => Key::Num(n.as_i64().unwrap()),
        Value::String(s) => match s.strip_prefix('@') {
            Some(id) if !id.starts_with('@') => Key::Str(id.to_owned()),
            _ => Key::Str(s.clone()),
        },
        other => Key::Other(other.to_string()),
    }
}

fn key_json(key: &Key) -> Value {
    match key {
        Key::Num(n) => json!(n),
        Key::Str(s) => json!(s),
        Key::Other(s) => serde_json::from_str(s).unwrap(),
    }
}

fn values(entity: &Value, attr: &str) -> Vec<Key> {
    let found =
        if attr == "o.k" { entity.get("o").and_then(|o| o.get("k")) } else { entity.get(attr) };
    let mut out: Vec<Key> = match found {
        Some(Value::Array(items)) => items.iter().map(key).collect(),
        Some(v) => vec![key(v)],
        None => vec![],
    };
    out.dedup_by(|a, b| a == b);
    let mut seen = BTreeSet::new();
    out.retain(|k| seen.insert(k.clone()));
    out
}

fn unify(term: &Value, value: &Key, sol: &mut Solution) -> bool {
    match term.as_str() {
        Some("_") => true,
        Some(var) if var.starts_with('?') => match sol.get(var) {
            Some(bound) => bound == value,
            None => {
                sol.insert(var.to_owned(), value.clone());
                true
            }
        },
        _ => key(term) == *value,
    }
}

fn binds(clauses: &[Clause]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for clause in clauses {
        match clause {
            Clause::Pattern(p) => {
                for t in [&p[0], &p[2]] {
                    if let Some(v) = t.as_str().filter(|v| v.starts_with('?')) {
                        out.insert(v.to_owned());
                    }
                }
            }
            Clause::Not(_) => {}
            Clause::Or(branches) => {
                let sets: Vec<BTreeSet<String>> = branches.iter().map(|b| binds(b)).collect();
                let common = sets
                    .iter()
                    .skip(1)
                    .fold(sets[0].clone(), |a, b| a.intersection(b).cloned().collect());
                out.extend(common);
            }
        }
    }
    out
}

fn eval(store: &[Value], clauses: &[Clause], start: BTreeSet<Solution>) -> BTreeSet<Solution> {
    let mut sols = start;
    let (positive, negative): (Vec<&Clause>, Vec<&Clause>) =
        clauses.iter().partition(|c| !matches!(c, Clause::Not(_)));
    for clause in positive {
        let mut next = BTreeSet::new();
        for sol in &sols {
            match clause {
                Clause::Pattern([e, a, v]) => {
                    for entity in store {
                        let id = key(&entity["id"]);
                        for value in values(entity, a.as_str().unwrap()) {
                            let mut s = sol.clone();
                            if unify(e, &id, &mut s) && unify(v, &value, &mut s) {
                                next.insert(s);
                            }
                        }
                    }
                }
                Clause::Or(branches) => {
                    let visible = binds(std::slice::from_ref(clause));
                    for branch in branches {
                        for s in eval(store, branch, BTreeSet::from([sol.clone()])) {
                            let projected: Solution = s
                                .into_iter()
                                .filter(|(k, _)| sol.contains_key(k) || visible.contains(k))
                                .collect();
                            next.insert(projected);
                        }
                    }
                }
                Clause::Not(_) => unreachable!(),
            }
        }
        sols = next;
    }
    for clause in negative {
        if let Clause::Not(inner) = clause {
            sols.retain(|sol| eval(store, inner, BTreeSet::from([sol.clone()])).is_empty());
        }
    }
    sols
}

#[derive(Clone, Debug)]
struct Case {
    store: Vec<Value>,
    clauses: Vec<Clause>,
    /// `(var, constant, equal)`: a filter `var = constant` or `var != constant`.
    filter: Option<(usize, Value, bool)>,
    /// Indexes into the bound variables to find, and whether to count the last one instead.
    find: Vec<usize>,
    count: bool,
    limit: u64,
    offset: u64,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        store_strategy(),
        clauses_strategy(),
        prop::option::weighted(
            0.3,
            (
                0usize..3,
                prop_oneof![(0i64..3).prop_map(|k| json!(k)), Just(json!("a"))],
                any::<bool>(),
            ),
        ),
        prop::collection::vec(0usize..3, 1..3),
        prop::bool::weighted(0.25),
        0u64..6,
        0u64..4,
    )
        .prop_map(|(store, clauses, filter, find, count, limit, offset)| Case {
            store,
            clauses,
            filter,
            find,
            count,
            limit,
            offset,
        })
}

fn run_case(case: &Case) -> Result<(), TestCaseError> {
    let bound: Vec<String> = binds(&case.clauses).into_iter().collect();
    prop_assume!(!bound.is_empty());
    let mut find_vars: Vec<String> =
        case.find.iter().map(|i| bound[i % bound.len()].clone()).collect();
    find_vars.dedup();
    let mut find: Vec<String> = find_vars.clone();
    let counted = if case.count { find_vars.pop() } else { None };
    if let Some(var) = &counted {
        *find.last_mut().unwrap() = format!("count({var})");
    }
    let filter = case.filter.as_ref().map(|(i, c, eq)| {
        let var = bound[i % bound.len()].clone();
        let text = format!("{var} {} {}", if *eq { "=" } else { "!=" }, c);
        (var, key(c), *eq, text)
    });
    let mut query = json!({
        "find": find,
        "where": case.clauses.iter().map(clause_json).collect::<Vec<_>>(),
        "limit": case.limit,
        "offset": case.offset,
    });
    if let Some((_, _, _, text)) = &filter {
        query["filter"] = json!([text]);
    }
    let parsed = match Query::from_json(&query) {
        Ok(q) => q,
        // Random `or`s may use a branch's own variable elsewhere: a refusal, not a result.
        Err(e) if e.to_string().contains("only some branches") => {
            return Err(TestCaseError::reject("or-local variable"));
        }
        Err(e) => return Err(TestCaseError::fail(format!("{query}: {e}"))),
    };

    // The engine.
    let docs = case
        .store
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("d{i}.json"), serde_json::to_vec(e).unwrap()))
        .collect();
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/random"), config: Config::default() });
    let analysis = Analysis::new(ctx, docs);
    let got = query::execute(&analysis, &parsed, &QueryOptions::default())
        .map_err(|e| TestCaseError::fail(format!("{query}: {e}")))?;

    // The reference.
    let mut sols = eval(&case.store, &case.clauses, BTreeSet::from([Solution::new()]));
    if let Some((var, constant, eq, _)) = &filter {
        sols.retain(|s| (s[var] == *constant) == *eq);
    }
    let mut rows: Vec<Vec<Key>> = if let Some(counted) = &counted {
        let mut groups: BTreeMap<Vec<Key>, i64> = BTreeMap::new();
        for sol in &sols {
            let _ = &sol[counted];
            *groups.entry(find_vars.iter().map(|v| sol[v].clone()).collect()).or_default() += 1;
        }
        if find_vars.is_empty() && groups.is_empty() {
            groups.insert(vec![], 0);
        }
        groups
            .into_iter()
            .map(|(mut k, n)| {
                k.push(Key::Num(n));
                k
            })
            .collect()
    } else {
        let set: BTreeSet<Vec<Key>> =
            sols.iter().map(|s| find_vars.iter().map(|v| s[v].clone()).collect()).collect();
        set.into_iter().collect()
    };
    rows.sort_by(|a, b| a.iter().cmp(b.iter()).then(Ordering::Equal));
    let total = rows.len() as u64;
    let page: Vec<Vec<Value>> = rows
        .iter()
        .skip(case.offset as usize)
        .take(case.limit as usize)
        .map(|r| r.iter().map(key_json).collect())
        .collect();
    let next =
        (case.offset + case.limit < total && case.limit > 0).then_some(case.offset + case.limit);
    prop_assert_eq!(&got.rows, &page, "query {}", query);
    prop_assert_eq!(got.total, total, "query {}", query);
    prop_assert_eq!(got.next_offset, next, "query {}", query);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, max_global_rejects: 20000, ..ProptestConfig::default() })]

    #[test]
    fn queries_agree_with_a_brute_force_evaluator(case in case_strategy()) {
        run_case(&case)?;
    }
}

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

/// Expressions from the grammar, right or wrong in type: numbers, strings, lists, variables,
/// entities and paths, operators and every function.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (-3i64..4).prop_map(|n| n.to_string()),
        Just("2.5".to_owned()),
        Just("'a'".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        prop::sample::select(VARS).prop_map(str::to_owned),
        (0usize..5).prop_map(|k| format!("@e/{k}")),
        prop::sample::select(vec![
            "@e/0.r", "@e/1.r.n", "@e/2.l.0", "@e/0.o.k", "?x.r.s", "n", "l"
        ])
        .prop_map(str::to_owned),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        let op = prop::sample::select(vec!["+", "-", "*", "/", "=", "!=", "<", ">=", "and", "or"]);
        let func = prop::sample::select(vec![
            "count",
            "len",
            "lower",
            "upper",
            "contains",
            "starts_with",
            "keys",
            "sum",
            "min",
            "max",
            "referrers",
        ]);
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("not {a}")),
            inner.clone().prop_map(|a| format!("-{a}")),
            (func, prop::collection::vec(inner.clone(), 0..3))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            inner.prop_map(|a| format!("({a}).r")),
        ]
    })
}

/// Queries close to valid ones: generated clauses, with the other keys drawn from valid and
/// invalid values.
fn query_value() -> impl Strategy<Value = Value> {
    let find = prop_oneof![
        6 => Just(json!(["?x"])),
        3 => Just(json!(["?x", "count(?y)"])),
        2 => Just(json!(["sum(?x)", "min(?y)", "max(?z)"])),
        2 => Just(json!("?y")),
        1 => Just(json!([])),
        1 => Just(json!([1])),
        1 => Just(json!(["?x", "?x"])),
    ];
    let order = prop_oneof![
        6 => Just(json!(null)),
        2 => Just(json!([["?x", "desc"]])),
        2 => Just(json!(["?y", "?x"])),
        1 => Just(json!(["?x", "up"])),
        1 => Just(json!([["count(?y)", "desc"]])),
    ];
    let number = prop_oneof![
        6 => Just(json!(null)),
        6 => (0u64..5).prop_map(|n| json!(n)),
        1 => Just(json!(-1)),
        1 => Just(json!(1e30)),
    ];
    let filters =
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(expression(), 1..3)];
    (
        find,
        clauses_strategy(),
        filters,
        order,
        number.clone(),
        number,
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(find, clauses, filters, order, limit, offset, pull)| {
            let mut q =
                json!({"find": find, "where": clauses.iter().map(clause_json).collect::<Vec<_>>()});
            if !filters.is_empty() {
                q["filter"] = json!(filters);
            }
            for (key, value) in [("order", order), ("limit", limit), ("offset", offset)] {
                if !value.is_null() {
                    q[key] = value;
                }
            }
            if let Some(pull) = pull {
                q["pull"] = json!(pull);
            }
            q
        })
}

fn check_any(analysis: &Analysis, query: &Value) -> Result<(), TestCaseError> {
    let codes = ["invalid-arguments", "type-error", "not-found"];
    match Query::from_json(query) {
        Ok(q) => {
            let options = QueryOptions { max_bindings: 10_000, ..QueryOptions::default() };
            if let Err(e) = query::execute(analysis, &q, &options) {
                prop_assert!(codes.contains(&e.code().as_str()), "{query}: {e}");
            }
            let _ = query::explain(analysis, &q, &options).to_text();
        }
        Err(e) => prop_assert_eq!(e.code(), "invalid-arguments", "{}: {}", query, e),
    }
    Ok(())
}

fn analysis_of(store: &[Value]) -> Analysis {
    let docs = store
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("d{i}.json"), serde_json::to_vec(e).unwrap()))
        .collect();
    let ctx = Arc::new(StoreContext { root: PathBuf::from("/random"), config: Config::default() });
    Analysis::new(ctx, docs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Whatever the query, reading, planning, running and explaining it gives a result or a
    /// typed error, and never panics; also written as DUST text, cut short anywhere.
    #[test]
    fn any_query_gives_a_result_or_a_typed_error(query in query_value(), store in store_strategy(), cut in 0usize..400) {
        let analysis = analysis_of(&store);
        check_any(&analysis, &query)?;
        let text = stardust_core::format::value_to_dust(&query).unwrap();
        let cut = text.char_indices().map(|(i, _)| i).find(|i| *i >= cut).unwrap_or(text.len());
        if let Err(e) = Query::parse(&text[..cut]).and_then(|q| query::execute(&analysis, &q, &QueryOptions::default())) {
            prop_assert!(["invalid-arguments", "type-error", "not-found"].contains(&e.code().as_str()), "{}: {}", &text[..cut], e);
        }
    }

    /// Whatever the expression, evaluating it gives a value or a typed error.
    #[test]
    fn any_expression_gives_a_value_or_a_typed_error(expr in expression(), store in store_strategy()) {
        let analysis = analysis_of(&store);
        for entity in [None, Some("e/0")] {
            if let Err(e) = query::evaluate(&analysis, &expr, entity) {
                prop_assert!(["invalid-arguments", "type-error", "not-found"].contains(&e.code().as_str()), "{expr}: {e}");
            }
        }
    }
}

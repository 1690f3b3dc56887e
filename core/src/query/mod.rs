//! Queries (Datalog over entities) and expressions, SPEC §8.
//!
//! A [`Query`] is read from DUST or JSON ([`Query::parse`]), planned against the indexes of
//! an analysis snapshot ([`QueryIndex`], built once per snapshot and cached in it), and run
//! by nested loops that stream bindings, so that memory holds only the distinct result rows
//! and work is bounded ([`QueryOptions::max_bindings`]). Rows are ordered, then paginated.
//!
//! Semantics, beyond SPEC §8 (see docs/DECISIONS.md, "Queries"):
//! - results are sets: without aggregates, equal rows appear once; aggregates run over every
//!   distinct solution of `where` (a binding of all its variables);
//! - the default order is by the columns of `find`, ascending; `order` keys come first and
//!   the remaining columns break ties, so the order is always total and pages are stable;
//! - a reference binds the referenced id; a string variable in the entity place selects the
//!   entity with that id, and matches nothing when there is none.

mod eval;
mod exec;
mod index;
mod plan;

pub use crate::qlang::expr;
use crate::qlang::{parse, value};

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::analysis::Analysis;
use crate::error::{Error, Result};
use exec::{Exec, Flow, slots};
use parse::{Agg, FindItem, binds, bit};
use plan::Step;
use value::FastBuild;

pub use crate::qlang::Val;
pub use crate::qlang::{MAX_CLAUSES, MAX_FILTERS, MAX_NESTING, MAX_VARS, Query};
pub use index::{Attr, AttrIndex, EntityNum, QueryIndex};

/// Rows per page when neither the query nor the caller says.
pub const DEFAULT_LIMIT: u64 = 100;
/// The most rows one page may hold; a larger limit is lowered to this and the result says so.
pub const MAX_LIMIT: u64 = 1000;
/// The most intermediate bindings one query may make by default (SPEC: bounded evaluation).
pub const MAX_BINDINGS: u64 = 1_000_000;

/// What the caller adds to a query.
#[derive(Clone, Debug)]
pub struct QueryOptions {
    /// Overrides the query's `limit`.
    pub limit: Option<u64>,
    /// Overrides the query's `offset`.
    pub offset: Option<u64>,
    /// The query fails (`invalid-arguments`, "narrow it") past this many bindings.
    pub max_bindings: u64,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions { limit: None, offset: None, max_bindings: MAX_BINDINGS }
    }
}

/// One page of results, in the shape of SPEC §8.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Rows in all pages.
    pub total: u64,
    /// The offset of the next page, if there is one.
    pub next_offset: Option<u64>,
    /// Set when the requested limit was above [`MAX_LIMIT`] and was lowered to it.
    pub limit_capped: Option<u64>,
}

impl QueryResult {
    /// `{"columns", "rows", "total", "nextOffset"}`, plus `"limitCapped"` when the limit was
    /// lowered.
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "columns": self.columns,
            "rows": self.rows,
            "total": self.total,
            "nextOffset": self.next_offset,
        });
        if let (Some(cap), Some(map)) = (self.limit_capped, out.as_object_mut()) {
            map.insert("limitCapped".to_owned(), json!(cap));
        }
        out
    }
}

impl Analysis {
    /// The query indexes of this snapshot, built on first use.
    pub fn query_index(&self) -> Arc<QueryIndex> {
        self.derived(QueryIndex::build)
    }

    /// [`Analysis::query_index`], carried from `before`'s index when `before` (an earlier
    /// snapshot of the same store) has one built and this snapshot has none yet: the same
    /// index, built from `before`'s for the documents both share (see [`QueryIndex::carry`]).
    pub fn query_index_from(&self, before: &Analysis) -> Arc<QueryIndex> {
        match before.derived_if_built::<QueryIndex>() {
            Some(previous) => self.derived(|a| QueryIndex::carry(&previous, a)),
            None => self.query_index(),
        }
    }
}

/// Run `query` on a snapshot.
pub fn execute(analysis: &Analysis, query: &Query, options: &QueryOptions) -> Result<QueryResult> {
    let idx = analysis.query_index();
    let plan = plan::plan(&idx, &query.clauses, &query.filters, &query.vars);
    let mut exec = Exec::new(&idx, plan.ids, query.vars.len(), options.max_bindings);
    run(&mut exec, &plan.steps, query, options)
}

/// Run `query` and describe how it ran: each step, how it finds its bindings, how many it
/// was expected to make and how many it made.
pub fn explain(analysis: &Analysis, query: &Query, options: &QueryOptions) -> Explain {
    let idx = analysis.query_index();
    let plan = plan::plan(&idx, &query.clauses, &query.filters, &query.vars);
    let mut exec = Exec::new(&idx, plan.ids, query.vars.len(), options.max_bindings);
    let result = run(&mut exec, &plan.steps, query, options);
    let mut steps = Vec::new();
    describe(&plan.steps, 0, &exec.counts, &mut steps);
    Explain { steps, order: order_text(query), result }
}

/// Evaluate an expression on a snapshot, optionally with a context entity whose fields bare
/// names read. Entities in the value come out whole.
pub fn evaluate(analysis: &Analysis, text: &str, entity: Option<&str>) -> Result<Value> {
    let idx = analysis.query_index();
    let this = match entity {
        Some(id) => Some(idx.entity_value(id).ok_or_else(|| {
            Error::NotFound(format!(
                "no entity has the id '{id}'; give the id of an existing entity"
            ))
        })?),
        None => None,
    };
    let mut var = |name: &str| -> std::result::Result<usize, String> {
        Err(format!("?{name} has no value: an expression evaluated on its own has no variables"))
    };
    let parsed = expr::parse(text, &mut expr::Scope { var: &mut var, fields: this.is_some() })
        .map_err(|e| {
            Error::InvalidArguments(format!(
                "the expression has an error at column {}: {}",
                e.column(text),
                e.message
            ))
        })?;
    let value = eval::eval(&parsed, &eval::Env { idx: &idx, vars: &[], this })?;
    eval::to_output(&value, &idx)
}

enum Collect<'a> {
    /// Rows of plain variables; a set when the projection may repeat a row.
    Rows { list: Vec<Vec<Val<'a>>>, set: Option<HashSet<Vec<Val<'a>>, FastBuild>> },
    /// Aggregates per group of the plain variables.
    Groups(HashMap<Vec<Val<'a>>, Vec<AggState<'a>>, FastBuild>),
}

#[derive(Clone, Debug)]
enum AggState<'a> {
    Count(u64),
    Sum(Val<'a>),
    Min(Option<Val<'a>>),
    Max(Option<Val<'a>>),
}

impl<'a> AggState<'a> {
    fn new(agg: Agg) -> AggState<'a> {
        match agg {
            Agg::Count => AggState::Count(0),
            Agg::Sum => AggState::Sum(Val::Int(0)),
            Agg::Min => AggState::Min(None),
            Agg::Max => AggState::Max(None),
        }
    }

    fn add(&mut self, value: Val<'a>, column: &str) -> Result<()> {
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Sum(total) => {
                let sum = match (&*total, &value) {
                    (Val::Int(a), Val::Int(b)) => a.checked_add(*b).map(Val::Int),
                    _ => None,
                };
                *total = match sum {
                    Some(sum) => sum,
                    None => {
                        let (Some(a), Some(b)) = (total.as_f64(), value.as_f64()) else {
                            return Err(Error::TypeError(format!(
                                "{column} adds numbers, found {} ({})",
                                value.type_name(),
                                value.describe()
                            )));
                        };
                        Val::try_float(a + b).ok_or_else(|| {
                            Error::TypeError(format!("{column} is out of the range of numbers"))
                        })?
                    }
                };
            }
            AggState::Min(best) => {
                if best.as_ref().is_none_or(|b| value < *b) {
                    *best = Some(value);
                }
            }
            AggState::Max(best) => {
                if best.as_ref().is_none_or(|b| value > *b) {
                    *best = Some(value);
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Val<'a> {
        match self {
            AggState::Count(n) => Val::Int(i64::try_from(n).unwrap_or(i64::MAX)),
            AggState::Sum(total) => total,
            AggState::Min(v) | AggState::Max(v) => v.unwrap_or(Val::Null),
        }
    }
}

fn run<'a>(
    exec: &mut Exec<'a>,
    steps: &'a [Step<'a>],
    query: &'a Query,
    options: &QueryOptions,
) -> Result<QueryResult> {
    let columns = query.columns();
    let plain: Vec<usize> = query
        .find
        .iter()
        .filter_map(|f| match f {
            FindItem::Var(s) => Some(*s),
            FindItem::Agg(..) => None,
        })
        .collect();
    let aggs: Vec<(Agg, usize, &str)> = query
        .find
        .iter()
        .zip(&columns)
        .filter_map(|(f, name)| match f {
            FindItem::Agg(agg, s) => Some((*agg, *s, name.as_str())),
            FindItem::Var(_) => None,
        })
        .collect();
    // Rows without aggregates carry the hidden order variables after the found ones.
    let keyed: Vec<usize> = plain.iter().chain(&query.hidden).copied().collect();
    let found: u64 = keyed.iter().fold(0, |s, v| s | bit(*v));
    let mut collect = if aggs.is_empty() {
        // Solutions are distinct bindings of every variable `where` binds, so rows of all of
        // them are distinct already; a projection onto fewer may repeat.
        let repeats = binds(&query.clauses) & !found != 0;
        Collect::Rows { list: Vec::new(), set: repeats.then(HashSet::default) }
    } else {
        Collect::Groups(HashMap::default())
    };
    let mut binding = vec![None; query.vars.len()];
    let value_of = |b: &exec::Binding<'a>, slot: usize| b[slot].clone().unwrap_or(Val::Null);
    exec.run(steps, &mut binding, &mut |b| {
        match &mut collect {
            Collect::Rows { set: Some(set), .. } => {
                set.insert(keyed.iter().map(|s| value_of(b, *s)).collect());
            }
            Collect::Rows { list, set: None } => {
                list.push(keyed.iter().map(|s| value_of(b, *s)).collect())
            }
            Collect::Groups(groups) => {
                let key: Vec<Val<'a>> = plain.iter().map(|s| value_of(b, *s)).collect();
                let states = groups
                    .entry(key)
                    .or_insert_with(|| aggs.iter().map(|a| AggState::new(a.0)).collect());
                for (state, (_, slot, name)) in states.iter_mut().zip(&aggs) {
                    state.add(value_of(b, *slot), name)?;
                }
            }
        }
        Ok(Flow::Continue)
    })?;

    // Rows in the order of `find`.
    let mut rows: Vec<Vec<Val<'a>>> = match collect {
        Collect::Rows { set: Some(set), .. } => set.into_iter().collect(),
        Collect::Rows { list, .. } => list,
        Collect::Groups(mut groups) => {
            // With no plain variable there is one group, even over no solution.
            if plain.is_empty() && groups.is_empty() {
                groups.insert(Vec::new(), aggs.iter().map(|a| AggState::new(a.0)).collect());
            }
            groups
                .into_iter()
                .map(|(key, states)| {
                    let mut key = key.into_iter();
                    let mut states = states.into_iter();
                    query
                        .find
                        .iter()
                        .map(|f| match f {
                            FindItem::Var(_) => key.next().unwrap_or(Val::Null),
                            FindItem::Agg(..) => states.next().map_or(Val::Null, AggState::finish),
                        })
                        .collect()
                })
                .collect()
        }
    };

    let requested = options.limit.or(query.limit).unwrap_or(DEFAULT_LIMIT);
    let limit = requested.min(MAX_LIMIT);
    let offset = options.offset.or(query.offset).unwrap_or(0);
    let compare = |a: &Vec<Val>, b: &Vec<Val>| -> Ordering {
        for &(column, desc) in &query.order {
            let ord = a[column].cmp(&b[column]);
            let ord = if desc { ord.reverse() } else { ord };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        a.cmp(b)
    };
    let width = query.find.len();
    let total;
    if query.hidden.is_empty() {
        total = rows.len() as u64;
        // Only the rows up to the end of the page need to be in order.
        let end = offset.saturating_add(limit).min(total) as usize;
        if end > 0 && end < rows.len() {
            rows.select_nth_unstable_by(end - 1, compare);
            rows.truncate(end);
        }
        rows.sort_unstable_by(compare);
    } else {
        // A row may come with several values of a hidden order variable: it takes the place
        // of its first one in the order, once.
        rows.sort_unstable_by(compare);
        let mut seen: HashSet<Vec<Val>, FastBuild> = HashSet::default();
        rows.retain_mut(|row| {
            row.truncate(width);
            seen.insert(row.clone())
        });
        total = rows.len() as u64;
    }
    let end = offset.saturating_add(limit).min(total) as usize;
    let start = (offset.min(total)) as usize;
    let idx = exec.idx;
    let pulled: Vec<bool> = query
        .find
        .iter()
        .map(|f| query.pull && matches!(f, FindItem::Var(s) if query.entity_vars & bit(*s) != 0))
        .collect();
    let page: Vec<Vec<Value>> = rows[start..end.max(start)]
        .iter()
        .map(|row| {
            row[..width]
                .iter()
                .zip(&pulled)
                .map(|(cell, pull)| match (pull, cell.as_id()) {
                    (true, Some(id)) => idx.entity_value(id).cloned().unwrap_or(Value::Null),
                    _ => cell.to_json(),
                })
                .collect()
        })
        .collect();
    let next = offset.saturating_add(limit);
    Ok(QueryResult {
        columns,
        rows: page,
        total,
        next_offset: (next < total && limit > 0).then_some(next),
        limit_capped: (requested > MAX_LIMIT).then_some(MAX_LIMIT),
    })
}

/// A run of a query, step by step.
pub struct Explain {
    pub steps: Vec<ExplainStep>,
    /// How the rows are ordered.
    pub order: String,
    pub result: Result<QueryResult>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExplainStep {
    /// Nesting under `not` and `or`.
    pub depth: usize,
    pub step: String,
    /// How the step finds its bindings.
    pub how: String,
    /// The planner's estimate of bindings per incoming binding, for patterns and `or`.
    pub estimate: Option<f64>,
    /// The bindings the step let through (`None` for a branch heading).
    pub actual: Option<u64>,
}

impl Explain {
    pub fn to_text(&self) -> String {
        let mut out =
            String::from("plan (estimate: bindings per incoming binding; actual: bindings made)\n");
        let label = |s: &ExplainStep| format!("{}{}", "  ".repeat(s.depth + 1), s.step);
        let width = self.steps.iter().map(|s| label(s).chars().count()).max().unwrap_or(0);
        let how_width = self.steps.iter().map(|s| s.how.chars().count()).max().unwrap_or(0);
        for s in &self.steps {
            let estimate = s.estimate.map_or(String::new(), |e| format!("~{}", round(e)));
            let line = format!(
                "{:width$}  {:how_width$}  {:>10}  {:>8}",
                label(s),
                s.how,
                estimate,
                s.actual.map_or(String::new(), |a| a.to_string()),
                width = width,
                how_width = how_width
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let _ = writeln!(out, "  {}", self.order);
        match &self.result {
            Ok(r) => {
                let _ = writeln!(out, "{} rows in total, {} in this page", r.total, r.rows.len());
            }
            Err(e) => {
                let _ = writeln!(out, "stopped: error[{}]: {e}", e.code());
            }
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| json!({"depth": s.depth, "step": s.step, "how": s.how, "estimate": s.estimate.map(round), "actual": s.actual}))
            .collect();
        let mut out = json!({"plan": steps, "order": self.order});
        if let Some(map) = out.as_object_mut() {
            match &self.result {
                Ok(r) => map.insert("total".to_owned(), json!(r.total)),
                Err(e) => map.insert(
                    "error".to_owned(),
                    json!({"code": e.code(), "message": e.to_string()}),
                ),
            };
        }
        out
    }
}

/// Estimates to three significant digits, so plans read (and snapshot) stably.
fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let digits = 3 - 1 - x.abs().log10().floor() as i32;
    let factor = 10f64.powi(digits);
    (x * factor).round() / factor
}

fn describe(steps: &[Step], depth: usize, counts: &[u64], out: &mut Vec<ExplainStep>) {
    let actual = |id: &usize| Some(counts.get(*id).copied().unwrap_or(0));
    for step in steps {
        match step {
            Step::Match { id, pattern, estimate, how, .. } => out.push(ExplainStep {
                depth,
                step: pattern.text.clone(),
                how: how.clone(),
                estimate: Some(*estimate),
                actual: actual(id),
            }),
            Step::Filter { id, filter } => out.push(ExplainStep {
                depth,
                step: format!("filter '{}'", filter.expr.src),
                how: "evaluate".to_owned(),
                estimate: None,
                actual: actual(id),
            }),
            Step::Not { id, steps } => {
                out.push(ExplainStep {
                    depth,
                    step: "not".to_owned(),
                    how: "keep when nothing below matches".to_owned(),
                    estimate: None,
                    actual: actual(id),
                });
                describe(steps, depth + 1, counts, out);
            }
            Step::Or { id, branches, out: binds, estimate } => {
                let how = if *binds == 0 {
                    "keep when a branch matches".to_owned()
                } else {
                    format!("bind {} variable(s) from any branch", slots(*binds).len())
                };
                out.push(ExplainStep {
                    depth,
                    step: "or".to_owned(),
                    how,
                    estimate: Some(*estimate),
                    actual: actual(id),
                });
                for (i, branch) in branches.iter().enumerate() {
                    out.push(ExplainStep {
                        depth: depth + 1,
                        step: format!("branch {}", i + 1),
                        how: String::new(),
                        estimate: None,
                        actual: None,
                    });
                    describe(branch, depth + 2, counts, out);
                }
            }
        }
    }
}

fn order_text(query: &Query) -> String {
    let mut columns = query.columns();
    columns.extend(query.hidden.iter().map(|s| format!("?{}", query.vars[*s])));
    let keys: Vec<String> = query
        .order
        .iter()
        .map(|(c, desc)| format!("{} {}", columns[*c], if *desc { "desc" } else { "asc" }))
        .collect();
    if keys.is_empty() {
        format!("order by {} ascending", query.columns().join(", "))
    } else {
        format!("order by {}, then the other columns ascending", keys.join(", "))
    }
}

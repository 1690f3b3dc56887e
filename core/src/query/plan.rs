//! The query planner: the order in which `where` clauses run, and how each pattern finds its
//! entities.
//!
//! Greedy and index-driven: it starts from the pattern that the indexes say yields the fewest
//! bindings, then repeatedly takes the cheapest clause that shares a variable with what is
//! already bound (so a cross product happens only when the query asks for one). A pattern
//! with a known entity reads that entity; with a known value it looks the value up in the
//! attribute's index; otherwise it scans the entities that have the attribute. Filters and
//! `not` clauses run as soon as their variables are bound.
//!
//! A filter `?v = c` (or `c = ?v`) with a literal `c` pins `?v`: a pattern that would scan
//! the holders of its attribute to bind `?v` looks `c` up in the attribute's index instead
//! (and is estimated so). The filter still runs after it, so the answers are the same: the
//! filter rejects every binding whose `?v` differs from `c`, and an entity whose values
//! include `c` is among the postings of `c`, because the filter's `=` is the equality the
//! postings are hashed for ([`Val`]'s `Eq` and `Hash` agree), and `=` never fails, so no
//! binding it would have rejected could have raised an error in it instead.

use std::collections::HashMap;
use std::sync::Arc;

use super::index::{AttrIndex, QueryIndex};
use super::parse::{Clause, Filter, Pattern, Term, VarSet, binds, bit};
use super::value::Val;
use crate::qlang::expr::{BinOp, ExprKind};

pub(crate) struct Plan<'q> {
    pub steps: Vec<Step<'q>>,
    /// The number of step ids (steps at every level).
    pub ids: usize,
}

pub(crate) enum Step<'q> {
    Match {
        id: usize,
        pattern: &'q Pattern,
        index: Arc<AttrIndex>,
        /// The constant a filter pins the value variable to: the entities are the
        /// constant's postings rather than every holder (see the module's note).
        pinned: Option<&'q Val<'static>>,
        estimate: f64,
        how: String,
    },
    Filter {
        id: usize,
        filter: &'q Filter,
    },
    Not {
        id: usize,
        steps: Vec<Step<'q>>,
    },
    /// `out`: the variables the `or` binds at this point.
    Or {
        id: usize,
        branches: Vec<Vec<Step<'q>>>,
        out: VarSet,
        estimate: f64,
    },
}

/// Plan the top level of a query.
pub(crate) fn plan<'q>(
    idx: &QueryIndex,
    clauses: &'q [Clause],
    filters: &'q [Filter],
    vars: &[String],
) -> Plan<'q> {
    let mut planner = Planner { idx, vars, ids: 0, attrs: HashMap::new(), pins: HashMap::new() };
    let (steps, _) = planner.list(clauses, 0, filters);
    Plan { steps, ids: planner.ids }
}

struct Planner<'i, 'v, 'q> {
    idx: &'i QueryIndex,
    vars: &'v [String],
    ids: usize,
    attrs: HashMap<String, Arc<AttrIndex>>,
    /// The variables the filters of the list being planned pin to a constant.
    pins: HashMap<usize, &'q Val<'static>>,
}

/// The variables `filters` pin to a literal: `?v = c` or `c = ?v`, with `c` a scalar whose
/// `=` agrees with the postings' hash. Not a float zero: `-0.0 = 0.0`, yet their bits, and so
/// their hashes, differ (a guard only: a whole float, zero too, is read as an integer).
fn pins(filters: &[Filter]) -> HashMap<usize, &Val<'static>> {
    let mut pins = HashMap::new();
    for filter in filters {
        let ExprKind::Binary(BinOp::Eq, left, right) = &filter.expr.root.kind else { continue };
        let (slot, value) = match (&left.kind, &right.kind) {
            (ExprKind::Var { slot, .. }, ExprKind::Lit(value))
            | (ExprKind::Lit(value), ExprKind::Var { slot, .. }) => (*slot, value),
            _ => continue,
        };
        let pinnable = match value {
            Val::Null | Val::Bool(_) | Val::Int(_) | Val::Str(_) => true,
            Val::Float(f) => *f != 0.0,
            _ => false,
        };
        if pinnable {
            pins.entry(slot).or_insert(value);
        }
    }
    pins
}

/// A clause the greedy loop may take next, and what it costs.
struct Candidate {
    at: usize,
    estimate: f64,
    vars: VarSet,
}

impl<'q> Planner<'_, '_, 'q> {
    fn id(&mut self) -> usize {
        self.ids += 1;
        self.ids - 1
    }

    fn attr(&mut self, pattern: &Pattern) -> Arc<AttrIndex> {
        if let Some(index) = self.attrs.get(&pattern.attr.name) {
            return index.clone();
        }
        let index = self.idx.attr(&pattern.attr);
        self.attrs.insert(pattern.attr.name.clone(), index.clone());
        index
    }

    /// Plan `clauses` with `bound` already bound; returns the steps and the estimated number
    /// of bindings they yield per incoming binding.
    fn list(
        &mut self,
        clauses: &'q [Clause],
        bound: VarSet,
        filters: &'q [Filter],
    ) -> (Vec<Step<'q>>, f64) {
        // Nested lists (under `not` and `or`) have no filters of their own, so no pins.
        let outer = std::mem::replace(&mut self.pins, pins(filters));
        let planned = self.list_pinned(clauses, bound, filters);
        self.pins = outer;
        planned
    }

    /// [`Planner::list`] with this list's pins in place.
    fn list_pinned(
        &mut self,
        clauses: &'q [Clause],
        bound: VarSet,
        filters: &'q [Filter],
    ) -> (Vec<Step<'q>>, f64) {
        let reachable = bound | binds(clauses);
        let mut bound = bound;
        let mut rows = 1.0;
        let mut steps = Vec::new();
        let mut left: Vec<usize> = (0..clauses.len()).collect();
        let mut filters_left: Vec<&'q Filter> = filters.iter().collect();
        loop {
            self.ready(
                clauses,
                &mut left,
                &mut filters_left,
                bound,
                reachable,
                &mut steps,
                &mut rows,
            );
            let mut candidates = Vec::new();
            for &at in &left {
                match &clauses[at] {
                    Clause::Pattern(pattern) => {
                        let estimate = self.estimate(pattern, bound).0;
                        candidates.push(Candidate { at, estimate, vars: pattern.vars() });
                    }
                    clause @ Clause::Or(branches) => {
                        let inputs = clause.vars() & !clause.binds() & reachable;
                        if inputs & !bound == 0 {
                            let estimate = branches.iter().map(|b| self.rough(b, bound)).sum();
                            candidates.push(Candidate { at, estimate, vars: clause.vars() });
                        }
                    }
                    Clause::Not(_) => {}
                }
            }
            let chosen = if candidates.is_empty() {
                // Only clauses waiting on each other remain (an `or` whose inputs another
                // `or` binds, say): take them in order rather than wait forever.
                match left.iter().find(|&&at| !matches!(clauses[at], Clause::Not(_))) {
                    Some(&at) => Candidate { at, estimate: 1.0, vars: clauses[at].vars() },
                    None => break,
                }
            } else {
                let connected = |c: &Candidate| bound == 0 || c.vars & bound != 0;
                let any_connected = candidates.iter().any(connected);
                let best = candidates
                    .into_iter()
                    .filter(|c| !any_connected || connected(c))
                    .min_by(|a, b| a.estimate.total_cmp(&b.estimate));
                match best {
                    Some(best) => best,
                    None => break,
                }
            };
            let step = match &clauses[chosen.at] {
                Clause::Pattern(pattern) => {
                    let (estimate, how) = self.estimate(pattern, bound);
                    let index = self.attr(pattern);
                    let pinned = self.pinned(pattern, bound);
                    Step::Match { id: self.id(), pattern, index, pinned, estimate, how }
                }
                clause @ Clause::Or(branches) => {
                    let id = self.id();
                    let branches = branches.iter().map(|b| self.list(b, bound, &[]).0).collect();
                    Step::Or {
                        id,
                        branches,
                        out: clause.binds() & !bound,
                        estimate: chosen.estimate,
                    }
                }
                // Never chosen: `not` clauses are placed by `ready`.
                Clause::Not(_) => {
                    left.retain(|&x| x != chosen.at);
                    continue;
                }
            };
            bound |= clauses[chosen.at].binds();
            rows *= chosen.estimate;
            steps.push(step);
            left.retain(|&x| x != chosen.at);
        }
        // What is left waits for nothing any more (or waits in vain): run it at the end.
        self.ready(
            clauses,
            &mut left,
            &mut filters_left,
            u64::MAX,
            reachable,
            &mut steps,
            &mut rows,
        );
        (steps, rows)
    }

    /// Append the filters and `not` clauses whose variables are all bound.
    #[allow(clippy::too_many_arguments)]
    fn ready(
        &mut self,
        clauses: &'q [Clause],
        left: &mut Vec<usize>,
        filters: &mut Vec<&'q Filter>,
        bound: VarSet,
        reachable: VarSet,
        steps: &mut Vec<Step<'q>>,
        rows: &mut f64,
    ) {
        let mut i = 0;
        while i < filters.len() {
            if filters[i].vars & !bound == 0 {
                let id = self.id();
                steps.push(Step::Filter { id, filter: filters.remove(i) });
                *rows *= 0.5;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < left.len() {
            let clause = &clauses[left[i]];
            match clause {
                Clause::Not(inner) if clause.vars() & reachable & !bound == 0 => {
                    let id = self.id();
                    let (inner_steps, _) = self.list(inner, bound & reachable, &[]);
                    steps.push(Step::Not { id, steps: inner_steps });
                    *rows *= 0.5;
                    left.remove(i);
                }
                _ => i += 1,
            }
        }
    }

    /// A cheap estimate of what a branch yields: its most selective pattern.
    fn rough(&mut self, clauses: &[Clause], bound: VarSet) -> f64 {
        let mut best = f64::INFINITY;
        for clause in clauses {
            if let Clause::Pattern(p) = clause {
                best = best.min(self.estimate(p, bound).0);
            }
        }
        if best.is_finite() { best } else { 1.0 }
    }

    /// The constant a filter pins the pattern's value variable to, when the pattern would
    /// otherwise scan the attribute's holders to bind it.
    fn pinned(&self, p: &Pattern, bound: VarSet) -> Option<&'q Val<'static>> {
        let (Term::Var(e), Term::Var(v)) = (&p.e, &p.v) else { return None };
        if e == v || bound & (bit(*e) | bit(*v)) != 0 {
            return None;
        }
        self.pins.get(v).copied()
    }

    /// The expected number of bindings one incoming binding yields, and how the pattern
    /// finds them.
    fn estimate(&mut self, p: &Pattern, bound: VarSet) -> (f64, String) {
        let n = self.idx.len().max(1) as f64;
        let index = self.attr(p);
        let holders = index.holders().len() as f64;
        let pairs = index.pairs() as f64;
        let distinct = index.distinct().max(1) as f64;
        let known = |t: &Term| match t {
            Term::Var(s) => bound & bit(*s) != 0,
            Term::Const(_) => true,
            Term::Any => false,
        };
        let same_var = matches!((&p.e, &p.v), (Term::Var(a), Term::Var(b)) if a == b);
        let (e_known, v_known) = (known(&p.e), known(&p.v) || (same_var && known(&p.e)));
        let name = &p.attr.name;
        let index_name = if name == "type" {
            "the type index".to_owned()
        } else {
            format!("the index of {name}")
        };
        let postings = |t: &Term| match t {
            Term::Const(c) => index.lookup(&Val::from_data(c)).len() as f64,
            _ => pairs / distinct,
        };
        if e_known {
            let how = format!("read {}", self.term_text(&p.e, "the entity"));
            let estimate = if v_known {
                match &p.v {
                    Term::Const(_) => postings(&p.v) / n,
                    _ => holders / n / distinct,
                }
            } else if p.v == Term::Any {
                holders / n
            } else {
                pairs / n
            };
            (estimate, how)
        } else if v_known {
            let how = format!("look up {name} = {} in {index_name}", self.term_text(&p.v, "?"));
            let per = postings(&p.v);
            (if p.e == Term::Any { per.min(1.0) } else { per }, how)
        } else if let Some(pin) = self.pinned(p, bound) {
            let how = format!(
                "look up {name} = {} (a filter's constant) in {index_name}",
                super::parse::render(&pin.to_json())
            );
            (index.lookup(pin).len() as f64, how)
        } else {
            let how = format!("scan the {} entities that have {name}", index.holders().len());
            let estimate = match (&p.e, &p.v) {
                (Term::Any, Term::Any) => holders.min(1.0),
                (Term::Any, _) => distinct,
                (_, Term::Any) => holders,
                _ => pairs,
            };
            (estimate, how)
        }
    }

    fn term_text(&self, term: &Term, any: &str) -> String {
        match term {
            Term::Var(s) => format!("?{}", self.vars[*s]),
            Term::Const(c) => super::parse::render(c),
            Term::Any => any.to_owned(),
        }
    }
}

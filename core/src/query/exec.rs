//! Running a plan: nested loops over index lookups that stream each binding into a sink,
//! counting the work so that a query that would make too many bindings stops early with a
//! typed error instead of exhausting memory or time.

use std::borrow::Cow;
use std::collections::HashSet;

use super::eval::{Env, eval};
use super::index::{AttrIndex, EntityNum, QueryIndex};
use super::parse::{Pattern, Term, VarSet};
use super::plan::Step;
use super::value::{FastBuild, Val};
use crate::error::{Error, Result};

/// What a sink tells the loops: go on, or stop (an existence check found one).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flow {
    Continue,
    Stop,
}

/// The value of each variable slot, `None` while unbound.
pub(crate) type Binding<'a> = Vec<Option<Val<'a>>>;

pub(crate) type Sink<'s, 'a> = dyn FnMut(&Binding<'a>) -> Result<Flow> + 's;

pub(crate) struct Exec<'a> {
    pub idx: &'a QueryIndex,
    /// Bindings each step let through, by step id (for `--explain`).
    pub counts: Vec<u64>,
    work: u64,
    cap: u64,
    /// For a variable bound in the entity place of a pattern: that entity's number, so that
    /// later patterns on it skip the id lookup. `None` for a variable bound any other way.
    entities: Vec<Option<EntityNum>>,
    /// Spare buffers for the values of an attribute, reused across bindings.
    buffers: Vec<Vec<Val<'a>>>,
}

impl<'a> Exec<'a> {
    pub fn new(idx: &'a QueryIndex, ids: usize, vars: usize, cap: u64) -> Exec<'a> {
        Exec {
            idx,
            counts: vec![0; ids],
            work: 0,
            cap,
            entities: vec![None; vars],
            buffers: Vec::new(),
        }
    }

    fn tick(&mut self, id: usize) -> Result<()> {
        if let Some(count) = self.counts.get_mut(id) {
            *count += 1;
        }
        self.work += 1;
        if self.work > self.cap {
            return Err(Error::InvalidArguments(format!(
                "the query makes more than {} intermediate bindings, the most one query may make; narrow it with constants in patterns, more selective patterns or filters",
                self.cap
            )));
        }
        Ok(())
    }

    /// Run `steps` from binding `b`, giving each complete binding to `sink`. `b` is
    /// restored before returning.
    pub fn run(
        &mut self,
        steps: &'a [Step<'a>],
        b: &mut Binding<'a>,
        sink: &mut Sink<'_, 'a>,
    ) -> Result<Flow> {
        let Some((step, rest)) = steps.split_first() else { return sink(b) };
        match step {
            Step::Match { id, pattern, index, pinned, .. } => {
                self.pattern(*id, (pattern, *pinned), index, rest, b, sink)
            }
            Step::Filter { id, filter } => {
                let env = Env { idx: self.idx, vars: b, this: None };
                match eval(&filter.expr, &env)? {
                    Val::Bool(true) => {
                        self.tick(*id)?;
                        self.run(rest, b, sink)
                    }
                    Val::Bool(false) => Ok(Flow::Continue),
                    other => Err(Error::TypeError(format!(
                        "the filter '{}' must be true or false, found {} ({})",
                        filter.expr.src,
                        other.type_name(),
                        other.describe()
                    ))),
                }
            }
            Step::Not { id, steps } => {
                let mut found = false;
                self.run(steps, b, &mut |_| {
                    found = true;
                    Ok(Flow::Stop)
                })?;
                if found {
                    return Ok(Flow::Continue);
                }
                self.tick(*id)?;
                self.run(rest, b, sink)
            }
            Step::Or { id, branches, out, .. } => {
                let slots = slots(*out);
                // Each branch may bind the same values (and a branch's own variables are
                // projected away), so the extensions are made distinct first.
                let mut seen: HashSet<Vec<Val<'a>>, FastBuild> = HashSet::default();
                let mut extensions = Vec::new();
                for branch in branches {
                    self.run(branch, b, &mut |bb| {
                        let key: Vec<Val<'a>> =
                            slots.iter().map(|s| bb[*s].clone().unwrap_or(Val::Null)).collect();
                        if !seen.contains(&key) {
                            seen.insert(key.clone());
                            extensions.push(key);
                        }
                        Ok(Flow::Continue)
                    })?;
                }
                for extension in extensions {
                    for (slot, value) in slots.iter().zip(extension) {
                        b[*slot] = Some(value);
                    }
                    self.tick(*id)?;
                    let flow = self.run(rest, b, sink);
                    for slot in &slots {
                        b[*slot] = None;
                    }
                    if flow? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                }
                Ok(Flow::Continue)
            }
        }
    }

    /// The value a term has now: a constant, a bound variable, or `None`.
    fn term(term: &'a Term, b: &Binding<'a>) -> Option<Val<'a>> {
        match term {
            Term::Var(slot) => b[*slot].clone(),
            Term::Const(value) => Some(Val::from_data(value)),
            Term::Any => None,
        }
    }

    /// `p` with the constant a filter pins its value variable to, if any.
    fn pattern(
        &mut self,
        id: usize,
        (p, pinned): (&'a Pattern, Option<&'a Val<'static>>),
        index: &'a AttrIndex,
        rest: &'a [Step<'a>],
        b: &mut Binding<'a>,
        sink: &mut Sink<'_, 'a>,
    ) -> Result<Flow> {
        let mut values = self.buffers.pop().unwrap_or_default();
        let flow = self.pattern_with(id, (p, pinned), index, rest, b, sink, &mut values);
        values.clear();
        self.buffers.push(values);
        flow
    }

    #[allow(clippy::too_many_arguments)]
    fn pattern_with(
        &mut self,
        id: usize,
        (p, pinned): (&'a Pattern, Option<&'a Val<'static>>),
        index: &'a AttrIndex,
        rest: &'a [Step<'a>],
        b: &mut Binding<'a>,
        sink: &mut Sink<'_, 'a>,
        values: &mut Vec<Val<'a>>,
    ) -> Result<Flow> {
        let idx = self.idx;
        let e = Self::term(&p.e, b);
        let v = Self::term(&p.v, b);
        if let Some(e) = e {
            // A known entity: read it (a value that is no entity's id matches nothing).
            let known = match &p.e {
                Term::Var(slot) => self.entities[*slot],
                _ => None,
            };
            let Some(num) = known.or_else(|| e.as_id().and_then(|id| idx.lookup(id))) else {
                return Ok(Flow::Continue);
            };
            index.values_of(idx, &p.attr, num, values);
            return self.values(id, p, values, v, rest, b, sink);
        }
        match &p.e {
            Term::Var(slot) => {
                // Pinned: only the constant's postings can pass the filter that follows.
                let candidates = match (&v, pinned) {
                    (Some(v), _) => index.lookup(v),
                    (None, Some(pin)) => index.lookup(pin),
                    (None, None) => index.holders(),
                };
                for &num in candidates {
                    values.clear();
                    index.values_of(idx, &p.attr, num, values);
                    b[*slot] = Some(Val::Str(Cow::Borrowed(idx.id(num))));
                    self.entities[*slot] = Some(num);
                    // `[?x a ?x]`: the value must be the entity's own id.
                    let v_now = match &p.v {
                        Term::Var(vs) if vs == slot => b[*slot].clone(),
                        _ => v.clone(),
                    };
                    let flow = self.values(id, p, values, v_now, rest, b, sink);
                    b[*slot] = None;
                    self.entities[*slot] = None;
                    if flow? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                }
                Ok(Flow::Continue)
            }
            // `_` in the entity place: does any entity have the value, or which values exist.
            _ => {
                if let Some(v) = v {
                    let found = index.lookup(&v).iter().any(|&num| {
                        values.clear();
                        index.values_of(idx, &p.attr, num, values);
                        values.contains(&v)
                    });
                    if !found {
                        return Ok(Flow::Continue);
                    }
                    self.tick(id)?;
                    return self.run(rest, b, sink);
                }
                match &p.v {
                    Term::Var(vs) => {
                        let mut seen: HashSet<Val<'a>, FastBuild> = HashSet::default();
                        for &num in index.holders() {
                            values.clear();
                            index.values_of(idx, &p.attr, num, values);
                            for value in values.drain(..) {
                                if seen.contains(&value) {
                                    continue;
                                }
                                seen.insert(value.clone());
                                b[*vs] = Some(value);
                                self.tick(id)?;
                                let flow = self.run(rest, b, sink);
                                b[*vs] = None;
                                if flow? == Flow::Stop {
                                    return Ok(Flow::Stop);
                                }
                            }
                        }
                        Ok(Flow::Continue)
                    }
                    _ if index.holders().is_empty() => Ok(Flow::Continue),
                    _ => {
                        self.tick(id)?;
                        self.run(rest, b, sink)
                    }
                }
            }
        }
    }

    /// Given the values of the pattern's attribute in one entity (already bound), match
    /// or bind the value place.
    #[allow(clippy::too_many_arguments)]
    fn values(
        &mut self,
        id: usize,
        p: &'a Pattern,
        values: &[Val<'a>],
        v: Option<Val<'a>>,
        rest: &'a [Step<'a>],
        b: &mut Binding<'a>,
        sink: &mut Sink<'_, 'a>,
    ) -> Result<Flow> {
        match (&p.v, v) {
            (_, Some(v)) => {
                if !values.contains(&v) {
                    return Ok(Flow::Continue);
                }
                self.tick(id)?;
                self.run(rest, b, sink)
            }
            (Term::Var(slot), None) => {
                for value in values {
                    b[*slot] = Some(value.clone());
                    self.tick(id)?;
                    let flow = self.run(rest, b, sink);
                    b[*slot] = None;
                    if flow? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                }
                Ok(Flow::Continue)
            }
            _ if values.is_empty() => Ok(Flow::Continue),
            _ => {
                self.tick(id)?;
                self.run(rest, b, sink)
            }
        }
    }
}

/// The slots of a variable set, ascending.
pub(crate) fn slots(set: VarSet) -> Vec<usize> {
    (0..64).filter(|s| set & (1 << s) != 0).collect()
}

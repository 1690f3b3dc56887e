//! What a query reads: the entity types and the attributes its result can depend on, so
//! that a view is recomputed only when a commit changes one of them (SPEC §19).
//!
//! Conservative by construction: whatever the query might read that this cannot name (an
//! entity variable without a `type` pattern, a constant entity, `pull`, a filter that follows
//! fields or calls `keys`/`referrers`) widens the answer to "any type" or "every attribute".

use std::collections::BTreeSet;

use super::Query;
use super::expr::{Expr, ExprKind, Func};
use super::parse::{Clause, Term};

/// The types and attributes a query's result can depend on; `None` is "any".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// The types of the entities the query can bind, when every entity it reads is known
    /// to have one of them.
    pub types: Option<BTreeSet<String>>,
    /// The top-level fields it reads of those entities (`type` always among them).
    pub attrs: Option<BTreeSet<String>>,
}

impl Query {
    /// What this query reads.
    pub fn reads(&self) -> Reads {
        let mut attrs = BTreeSet::from(["type".to_owned()]);
        let mut entity_vars = BTreeSet::new();
        let mut any_entity = false;
        visit(&self.clauses, &mut |p| {
            attrs.insert(p.attr.name.split('.').next().unwrap_or_default().to_owned());
            match &p.e {
                Term::Var(slot) => {
                    entity_vars.insert(*slot);
                }
                Term::Any | Term::Const(_) => any_entity = true,
            }
        });
        // Dotted attributes follow nested objects only, but a value bound from a reference
        // can be any entity's: its fields are read by patterns naming it in the entity place.
        let mut typed: BTreeSet<usize> = BTreeSet::new();
        let mut types = BTreeSet::new();
        for clause in &self.clauses {
            if let Clause::Pattern(p) = clause
                && p.attr.name == "type"
                && let (Term::Var(slot), Term::Const(serde_json::Value::String(ty))) = (&p.e, &p.v)
            {
                typed.insert(*slot);
                types.insert(ty.clone());
            }
        }
        let all_typed = !any_entity && entity_vars.iter().all(|v| typed.contains(v));
        let filters_pure = self.filters.iter().all(|f| pure(&f.expr.root));
        Reads {
            types: (all_typed && filters_pure).then_some(types),
            attrs: (!self.pull && filters_pure).then_some(attrs),
        }
    }
}

fn visit(clauses: &[Clause], f: &mut impl FnMut(&super::parse::Pattern)) {
    for clause in clauses {
        match clause {
            Clause::Pattern(p) => f(p),
            Clause::Not(inner) => visit(inner, f),
            Clause::Or(branches) => branches.iter().for_each(|b| visit(b, f)),
        }
    }
}

/// Whether an expression reads nothing but its variables' values.
fn pure(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Lit(_) | ExprKind::Var { .. } => true,
        ExprKind::List(items) => items.iter().all(pure),
        ExprKind::Neg(e) | ExprKind::Not(e) => pure(e),
        ExprKind::Binary(_, a, b) => pure(a) && pure(b),
        ExprKind::Call(func, args) => {
            matches!(func, Func::Lower | Func::Upper | Func::Contains | Func::StartsWith)
                && args.iter().all(pure)
        }
        ExprKind::Entity(_) | ExprKind::Field(_) | ExprKind::Path(..) => false,
    }
}

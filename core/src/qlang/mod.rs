//! The query language as text (SPEC §8): the reader of query documents into a checked
//! [`Query`], the expression parser, attributes and the values they compare.
//!
//! It depends on nothing but one document's syntax, so the analysis can diagnose a query
//! written inside an entity (a `view`'s `query`) with the same reader the engine uses; the
//! engine itself (`query`) plans and runs a [`Query`] on a snapshot.

mod attr;
pub mod expr;
pub(crate) mod parse;
mod reads;
pub(crate) mod value;

pub use attr::Attr;
pub use parse::{MAX_CLAUSES, MAX_FILTERS, MAX_NESTING, MAX_VARS, Query};
pub use reads::Reads;
pub use value::Val;

//! Typed SDK definitions generated from a store's schemas (SPEC §21): the schemas of the
//! snapshot's entity types in, files (path, bytes) out. Pure and deterministic: the same
//! schemas give the same bytes, whatever the order they come in.
//!
//! Generation has two steps. `lower` reads each JSON Schema into one small model of types
//! (objects become named declarations, references typed ids of their target type); every
//! place where the schema says more than the model can (`oneOf` of objects,
//! `patternProperties`, a recursive `$ref`, ...) becomes the closest *sound* type (one that
//! accepts at least every valid value) and a note saying why, never a failure. Then one
//! renderer per language (`typescript`, `python`, `rust`) writes the model out, together with the
//! model itself as data ("shapes") that the runtimes decode answers with, so a value from the
//! core that does not fit the generated type is a decode error naming the field. `runtime`
//! wraps the definitions into an installable package that carries its runtime.

mod lower;
mod names;
mod python;
mod runtime;
mod rust;
mod shape;
mod typescript;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::analysis::Analysis;

pub use runtime::{obsolete, package_name};

/// The language of a generated SDK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    TypeScript,
    Python,
    Rust,
}

impl Lang {
    /// The language by its command-line name (`typescript`, `python`).
    pub fn parse(name: &str) -> Option<Lang> {
        match name {
            "typescript" | "ts" => Some(Lang::TypeScript),
            "python" | "py" => Some(Lang::Python),
            "rust" | "rs" => Some(Lang::Rust),
            _ => None,
        }
    }
}

/// One entity type and its schema (the root of the schema document).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeSchema {
    pub name: String,
    pub schema: Value,
}

/// One generated file: a path relative to the output folder, and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// The entity types of a snapshot that have a schema in the store's schema folder, in name
/// order.
pub fn types_of(analysis: &Analysis) -> Vec<TypeSchema> {
    let mut types: Vec<TypeSchema> = analysis
        .documents()
        .filter_map(|doc| {
            let name = doc.path.rsplit('/').next()?.strip_suffix(".schema.json")?;
            // Only a schema at the path the configuration gives the type is that type's.
            analysis.type_schema(name).filter(|(path, _)| *path == *doc.path)?;
            Some(TypeSchema { name: name.to_owned(), schema: doc.parse.value.clone() })
        })
        .collect();
    types.sort_by(|a, b| a.name.cmp(&b.name));
    types
}

/// The definitions of the SDK for `types` in `lang`, relative to the module's folder (see
/// [`package`] for the whole output folder).
pub fn generate(types: &[TypeSchema], lang: Lang) -> Vec<File> {
    let mut sorted: Vec<&TypeSchema> = types.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted.dedup_by(|a, b| a.name == b.name);
    let model = lower::lower(&sorted, lang);
    match lang {
        Lang::TypeScript => typescript::render(&model),
        Lang::Python => python::render(&model),
        Lang::Rust => rust::render(&model),
    }
}

/// The whole output folder of the SDK for `types` in `lang`: the definitions [`generate`]
/// makes and, for TypeScript and Python, an installable package named `name` around them
/// (see [`package_name`]): its manifest, a README and the runtime, so that `npm install DIR`
/// or `pip install DIR` needs nothing else. Rust: the definitions alone (a module for the
/// `stardust-sdk` crate).
pub fn package(types: &[TypeSchema], lang: Lang, name: &str) -> Vec<File> {
    runtime::package(generate(types, lang), lang, name)
}

/// The paths (relative to the output folder) whose bytes differ from what `files` would
/// write there: missing or different files. `existing` reads a path's current bytes.
pub fn stale(files: &[File], existing: impl Fn(&str) -> Option<Vec<u8>>) -> Vec<String> {
    files
        .iter()
        .filter(|f| existing(&f.path).as_deref() != Some(f.bytes.as_slice()))
        .map(|f| f.path.clone())
        .collect()
}

/// The model the renderers write out.
#[derive(Debug)]
struct Model {
    /// Every named object declaration: entity types first (in name order), then nested ones in
    /// the order they were met.
    decls: Vec<Decl>,
    /// Each entity type and the index of its declaration.
    types: Vec<(String, usize)>,
    /// Every type named by an `x-stardust-ref` or an `id`, sorted (Python's `NewType`s).
    targets: Vec<String>,
}

/// A named object type.
#[derive(Debug)]
struct Decl {
    name: String,
    doc: Option<String>,
    fields: Vec<Field>,
    /// What other keys may hold: `None` when the schema forbids them.
    extra: Option<Ty>,
    notes: Vec<String>,
}

#[derive(Debug)]
struct Field {
    /// The key exactly as on the wire.
    key: String,
    ty: Ty,
    required: bool,
    doc: Option<String>,
    /// Why the type is wider than the schema, when it is.
    notes: Vec<String>,
}

/// A type of the model.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    /// Any JSON value.
    Unknown,
    Null,
    Bool,
    Int,
    Num,
    Str,
    /// One of these JSON scalars (`enum`, `const`).
    Lit(Vec<Value>),
    /// A reference to an entity of this type (`@type/slug`).
    Ref(String),
    /// The id of an entity of this type (`type/slug`): an entity type's `id` field.
    Id(String),
    Array(Box<Ty>),
    /// An object with no fixed keys, every value of this type.
    Map(Box<Ty>),
    /// The declaration at this index.
    Named(usize),
    Union(Vec<Ty>),
}

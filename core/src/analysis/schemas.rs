//! Which documents of a snapshot are JSON Schemas, and the URIs the store knows each schema by
//! (SPEC §23). One decision for the whole core: a schema holds no entities, so the id index,
//! the query index, the SDK generator, views and the mount's entity files all agree.
//!
//! A document is a schema when it is under `[store] schemas`, its `$schema` names a JSON Schema
//! dialect, a `[[schema]]` entry names it, or it is used as one: a document's `$schema` or a
//! schema's `$ref` (`$dynamicRef`, a nested `$schema`) resolves to it. A reference reaches a
//! document by its store path (`file:///__store__/<path>`, what a relative reference resolves
//! to when no `$id` moved the base), by a `[[schema]] url`, or by the `$id` of a schema
//! (draft 4: `id`) or of one of its subschemas. Only schemas are known by their `$id`s, so a
//! URI never makes a document a schema except through the configuration.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::config::Config;
use crate::diagnostics::{Diagnostic, DiagnosticCode, Related};
use crate::schema::{self, Draft, Source};
use crate::text::Span;

use super::docs::Docs;
use super::{Document, SchemaName};

/// What the store holds at one URI.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Held {
    /// A whole schema document.
    Document(String),
    /// A subschema with its own identifier: its document and JSON Pointer tokens.
    Sub(String, Vec<String>),
    /// Two or more documents claim the URI, so none is used for it.
    Claimed(Vec<String>),
}

/// Where a document's schema is, for validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// A key of the snapshot's compiled schemas: a store path, or a URI for a subschema (a
    /// fragment, or a subschema's identifier), compiled as `{"$ref": URI}`.
    Key(String),
    /// The schema cannot be used, and why.
    Unavailable(String),
}

/// The schemas of one snapshot.
#[derive(Default, Debug)]
pub(super) struct Schemas {
    /// Every document that is a schema (and `[[schema]]` paths that are not documents).
    pub(super) paths: BTreeSet<String>,
    /// Each readable schema document's value as the dialect reads it.
    values: HashMap<String, Arc<Value>>,
    /// What the store holds at each URI outside its base (without fragment).
    uris: HashMap<String, Held>,
    /// Store paths that the configuration, schemas or `$schema`s name and that are not
    /// documents: creating one changes the schemas.
    pub(super) wanted: HashSet<String>,
    /// Problems of schema documents found here (URIs claimed twice), by path.
    pub(super) problems: HashMap<String, Vec<Diagnostic>>,
}

/// Whether `path` is under the schemas folder (or, with the store root as that folder, a
/// `*.schema.json` file).
pub(super) fn in_schemas_dir(config: &Config, path: &str) -> bool {
    let dir = config.schemas_dir.trim_end_matches('/');
    if dir.is_empty() || dir == "." {
        return path.ends_with(".schema.json");
    }
    path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

/// Whether the configuration makes `path` a schema.
pub(super) fn configured(config: &Config, path: &str) -> bool {
    in_schemas_dir(config, path)
        || config.schema_globs.iter().any(|g| g.path == path)
        || config.schema_urls.iter().any(|u| u.path == path)
}

struct Finder<'a> {
    config: &'a Config,
    docs: &'a Docs,
    out: Schemas,
    queue: Vec<String>,
    /// Every identifier's claimants: URI -> (path, pointer, span of the identifier's value).
    claims: HashMap<String, Vec<(String, Vec<String>, Span)>>,
}

impl Finder<'_> {
    /// Make `path` a schema.
    fn add(&mut self, path: &str) {
        if self.out.paths.insert(path.to_owned()) {
            self.queue.push(path.to_owned());
        }
    }

    /// Follow a reference to `uri` (resolved, maybe with a fragment).
    fn reach(&mut self, uri: &str) {
        let base = uri.split('#').next().unwrap_or(uri);
        if let Some(path) = schema::path_of(base) {
            if self.docs.contains_key(path) {
                self.add(path);
            } else {
                self.out.wanted.insert(path.to_owned());
            }
        }
        // A URI reaches a document only through the configuration, which is seeded.
    }

    fn visit(&mut self, path: &str) {
        let Some(doc) = self.docs.get(path) else {
            self.out.wanted.insert(path.to_owned());
            return;
        };
        if doc.parse.root.is_none() || !doc.parse.errors.is_empty() {
            return;
        }
        let value = &doc.parse.value;
        let readable = schema::dialect::readable(value, self.config.dialect).into_owned();
        self.out.values.insert(path.to_owned(), Arc::new(readable));
        for id in schema::identifiers(path, value) {
            let mut at = id.pointer.clone();
            at.push(id.key.to_owned());
            let span = span_at(doc, &at);
            // An identifier that is not a URI is the schema's own compile error (schema.rs).
            if let Some(uri) = id.uri.filter(|u| !u.is_empty()) {
                self.claims.entry(uri).or_default().push((path.to_owned(), id.pointer, span));
            }
        }
        for (_, keyword, uri) in schema::references(path, value) {
            if keyword == "$schema" && Draft::of(&uri) != Draft::Other {
                continue;
            }
            self.reach(&uri);
        }
    }

    fn finish(mut self) -> Schemas {
        let configured: HashSet<&str> =
            self.config.schema_urls.iter().map(|u| u.url.as_str()).collect();
        for (uri, mut claimants) in std::mem::take(&mut self.claims) {
            if configured.contains(uri.as_str()) {
                continue;
            }
            claimants.sort();
            let mut paths: Vec<String> = claimants.iter().map(|(p, _, _)| p.clone()).collect();
            paths.dedup();
            if paths.len() == 1 {
                let (path, pointer, _) = claimants.swap_remove(0);
                // A document claiming one URI twice keeps the outermost.
                let held = if pointer.is_empty() {
                    Held::Document(path)
                } else {
                    Held::Sub(path, pointer)
                };
                self.out.uris.insert(uri, held);
                continue;
            }
            for (path, _, span) in &claimants {
                let others: Vec<&(String, Vec<String>, Span)> =
                    claimants.iter().filter(|(p, _, _)| p != path).collect();
                let names: Vec<String> = others.iter().map(|(p, _, _)| format!("'{p}'")).collect();
                let related = others
                    .iter()
                    .map(|(p, _, s)| Related {
                        path: p.clone(),
                        span: *s,
                        message: format!("'{uri}' is also claimed here"),
                    })
                    .collect();
                self.out.problems.entry(path.clone()).or_default().push(
                    Diagnostic::new(
                        DiagnosticCode::SchemaUnavailable,
                        *span,
                        format!(
                            "the URI '{uri}' is also the identifier of {}: two schemas claim it, \
                             so neither is used for it; give each schema its own $id",
                            names.join(", ")
                        ),
                    )
                    .with_related(related)
                    .with_data(serde_json::json!({"uri": uri})),
                );
            }
            self.out.uris.insert(uri, Held::Claimed(paths));
        }
        for problems in self.out.problems.values_mut() {
            problems.sort_by_key(|d| (d.span.start, d.span.end));
        }
        self.out
    }
}

/// The span of the value at `pointer` in `doc`, else its start.
fn span_at(doc: &Document, pointer: &[String]) -> Span {
    doc.parse
        .root
        .as_ref()
        .and_then(|root| root.at_pointer(&doc.parse.value, pointer))
        .map_or(Span::empty(0), |(node, _, _)| node.span)
}

/// The schemas of the documents `docs` under `config`.
pub(super) fn find(config: &Config, docs: &Docs) -> Schemas {
    let mut finder =
        Finder { config, docs, out: Schemas::default(), queue: Vec::new(), claims: HashMap::new() };
    for entry in &config.schema_urls {
        finder.out.uris.insert(entry.url.clone(), Held::Document(entry.path.clone()));
        finder.add(&entry.path);
    }
    for glob in &config.schema_globs {
        finder.add(&glob.path);
    }
    for (path, doc) in docs.iter() {
        if in_schemas_dir(config, path) || doc.names_dialect() {
            finder.add(path);
        }
        if let Some((SchemaName::Uri(uri), _)) = &doc.dollar_schema {
            finder.reach(uri);
        }
    }
    while let Some(path) = finder.queue.pop() {
        finder.visit(&path);
    }
    finder.finish()
}

impl Schemas {
    /// The schema documents to compile, in path order.
    pub(super) fn readable(&self) -> impl Iterator<Item = &String> {
        self.paths.iter()
    }

    /// What schemas compiled against this snapshot may reach.
    pub(super) fn source(this: &Arc<Schemas>, config: &Config) -> Source {
        let (by_path, by_uri) = (this.clone(), this.clone());
        Source {
            document: Arc::new(move |path: &str| by_path.values.get(path).cloned()),
            uri: Arc::new(move |uri: &str| by_uri.value_at(uri)),
            formats: config.formats,
            dialect: config.dialect,
        }
    }

    /// The readable value of the schema document at `path`, when it is one.
    pub(super) fn value(&self, path: &str) -> Option<&Arc<Value>> {
        self.values.get(path)
    }

    /// The schema the store holds at `uri` (without fragment), or why it has none.
    fn value_at(&self, uri: &str) -> Result<Arc<Value>, String> {
        match self.uris.get(uri) {
            Some(Held::Document(path)) => self.values.get(path).cloned().ok_or_else(|| {
                format!(
                    "[[schema]] url maps '{uri}' to '{path}', which is not a readable \
                         document of the store; save the schema there or fix the path"
                )
            }),
            Some(Held::Sub(path, pointer)) => {
                let root = self.values.get(path).ok_or_else(|| schema::not_held(uri))?;
                let mut value = subschema(root, pointer).cloned().unwrap_or(Value::Bool(true));
                // The subschema is read in the draft its document declares.
                if let (Value::Object(map), Some(draft)) = (&mut value, root.get("$schema")) {
                    map.entry("$schema").or_insert_with(|| draft.clone());
                }
                Ok(Arc::new(value))
            }
            Some(Held::Claimed(paths)) => Err(claimed(uri, paths)),
            None => Err(schema::not_held(uri)),
        }
    }

    /// Where the schema named by `uri` (resolved, maybe with a fragment) is, for validating a
    /// document against it.
    pub(super) fn target(&self, config: &Config, docs: &Docs, uri: &str) -> Target {
        let (base, fragment) = uri.split_once('#').unwrap_or((uri, ""));
        let whole = fragment.is_empty();
        if let Some(path) = schema::path_of(base) {
            if !docs.contains_key(path) {
                // A schema inside `node_modules/` (`./node_modules/x/schema.json`, as tools'
                // configuration files name theirs) is left out like everything there.
                if config.is_ignored(path, false) {
                    return Target::Unavailable(format!(
                        "'{path}' is ignored ([store] ignore or the project's ignore rules), so \
                         the store does not read it; copy the schema to a folder that is not \
                         ignored and name it by that path or its $id"
                    ));
                }
                return Target::Unavailable(format!(
                    "'{path}' is not a document of the store; create it or fix the path"
                ));
            }
            return Target::Key(if whole { path.to_owned() } else { uri.to_owned() });
        }
        if base.starts_with("file:") {
            return Target::Unavailable(format!(
                "it leaves the store ({base}); schemas are read only from inside the store, so \
                 copy it into the store and name it by a relative path or its $id"
            ));
        }
        match self.uris.get(base) {
            Some(Held::Document(path)) if !docs.contains_key(path.as_str()) => {
                Target::Unavailable(format!(
                    "[[schema]] url maps '{base}' to '{path}', which is not a document of the \
                     store; save the schema there or fix the path"
                ))
            }
            Some(Held::Document(path)) if whole => Target::Key(path.clone()),
            Some(Held::Document(_) | Held::Sub(..)) => Target::Key(uri.to_owned()),
            Some(Held::Claimed(paths)) => Target::Unavailable(claimed(base, paths)),
            None => Target::Unavailable(schema::not_held(base)),
        }
    }

    /// The store path and JSON Pointer tokens the store holds `uri` (resolved, maybe with a
    /// fragment) at, for following a link; `None` when it holds nothing there.
    pub(super) fn locate(&self, uri: &str) -> Option<(String, Vec<String>)> {
        let (base, fragment) = uri.split_once('#').unwrap_or((uri, ""));
        let (path, mut pointer) = match schema::path_of(base) {
            Some(path) => (path.to_owned(), Vec::new()),
            None => match self.uris.get(base)? {
                Held::Document(path) => (path.clone(), Vec::new()),
                Held::Sub(path, pointer) => (path.clone(), pointer.clone()),
                Held::Claimed(_) => return None,
            },
        };
        if let Some(rest) = fragment.strip_prefix('/') {
            pointer.extend(rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")));
        }
        Some((path, pointer))
    }
}

/// The value at `pointer` in a schema as its dialect reads it (an array `items` became
/// `prefixItems`).
fn subschema<'a>(root: &'a Value, pointer: &[String]) -> Option<&'a Value> {
    let mut value = root;
    for token in pointer {
        value = match value {
            Value::Object(map) => match map.get(token.as_str()) {
                Some(v) if token != "items" || !map.contains_key("prefixItems") => v,
                _ => map.get("prefixItems").filter(|_| token == "items")?,
            },
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

fn claimed(uri: &str, paths: &[String]) -> String {
    let names: Vec<String> = paths.iter().map(|p| format!("'{p}'")).collect();
    format!(
        "{} all claim the URI '{uri}' as their $id, so none is used for it; give each schema its \
         own $id",
        names.join(" and ")
    )
}

//! Derived documents of the mount (SPEC §19): the JSON projection of every DUST document at
//! `.stardust/json/<path>.json`, and one file per entity at `.stardust/entities/<id>.json`
//! (an id's `/` are folders), as pure rules over one snapshot: which paths exist and what kind
//! they are, what each reads as, and which document changes a write or a delete of one means.
//!
//! A change to a derived path is a change of what it derives from: [`translate`] turns it into
//! changes of the real documents (the new value rewritten into the document's text with
//! `crate::edit`, so comments, order and alignment of untouched members stay), and the store
//! commits those through the one save authority. The version a change to a derived path
//! expects is the version of the document it derives from, so a write based on what was read
//! before the document changed is a `conflict`.
//!
//! Invariants: reading gives `format::value_to_json` of one snapshot's value, so a projection
//! read and written back unchanged changes nothing; a write refused for its own bytes (not
//! JSON, an entity file naming another id) is a `refused` with a diagnostic in those bytes,
//! so a front keeps them and answers exactly as for a refused direct save.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::analysis::{Analysis, Document};
use crate::diagnostics::{Diagnostic, DiagnosticCode};
use crate::edit;
use crate::format;
use crate::model;
use crate::patch;
use crate::syntax::{self, Lang};
use crate::text::Span;

use super::error::{StoreError, StoreResult};
use super::paths::{PathKind, is_scratch_name};
use super::{Change, ChangeKind, DocumentNotice, EntityNotice, Op, PRIVATE_DIR, Version};

/// The folder of JSON projections inside [`PRIVATE_DIR`].
pub const JSON_DIR: &str = "json";
/// The folder of entity files inside [`PRIVATE_DIR`].
pub const ENTITIES_DIR: &str = "entities";
/// Every derived file's name ends so.
const SUFFIX: &str = ".json";

/// The two folders of derived files.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Area {
    /// `.stardust/json/`: DUST documents as JSON.
    Json,
    /// `.stardust/entities/`: one file per entity.
    Entities,
}

/// What a derived file stands for, whether it exists or not.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Target {
    /// The projection of the DUST document at this store-relative path.
    Projection(String),
    /// The entity with this id.
    Entity(String),
}

/// What a path in a derived area names in one snapshot.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Derived {
    Folder,
    File(Target),
}

/// The area of a store-relative path and the part after the area's folder (`""` for the
/// folder itself); `None` outside both areas.
pub fn area(path: &str) -> Option<(Area, &str)> {
    let rest = path.strip_prefix(PRIVATE_DIR)?.strip_prefix('/')?;
    let (first, rest) = rest.split_once('/').unwrap_or((rest, ""));
    match first {
        JSON_DIR => Some((Area::Json, rest)),
        ENTITIES_DIR => Some((Area::Entities, rest)),
        _ => None,
    }
}

/// What the derived file at `path` would stand for, by its name alone.
pub fn target(path: &str) -> Option<Target> {
    let (area, rest) = area(path)?;
    let stem = rest.strip_suffix(SUFFIX).filter(|s| !s.is_empty())?;
    Some(match area {
        Area::Json => Target::Projection(stem.to_owned()),
        Area::Entities => Target::Entity(stem.to_owned()),
    })
}

/// The derived path of `target`.
pub fn path_of(target: &Target) -> String {
    match target {
        Target::Projection(doc) => format!("{PRIVATE_DIR}/{JSON_DIR}/{doc}{SUFFIX}"),
        Target::Entity(id) => format!("{PRIVATE_DIR}/{ENTITIES_DIR}/{id}{SUFFIX}"),
    }
}

/// The folders of one area: each folder (relative to the area, `""` for its top) with its
/// entries (name, is a folder), sorted. Built once per snapshot.
#[derive(Debug, Default)]
struct Folders(HashMap<String, Vec<(String, bool)>>);

struct JsonFolders(Folders);
struct EntityFolders(Folders);

impl Folders {
    /// The folders holding a file for each of `stems` (a path without its `.json`). A stem
    /// with an empty, `.` or `..` segment cannot be a path and is left out; a file whose name
    /// a folder also has is shadowed by the folder.
    fn build<'a>(stems: impl Iterator<Item = &'a str>) -> Folders {
        let mut folders: BTreeMap<String, BTreeSet<(String, bool)>> = BTreeMap::new();
        folders.insert(String::new(), BTreeSet::new());
        for stem in stems {
            if stem.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
                continue;
            }
            let mut folder = String::new();
            let mut segments = stem.split('/').peekable();
            while let Some(segment) = segments.next() {
                let last = segments.peek().is_none();
                let name = if last { format!("{segment}{SUFFIX}") } else { segment.to_owned() };
                folders.entry(folder.clone()).or_default().insert((name, !last));
                if !last {
                    if !folder.is_empty() {
                        folder.push('/');
                    }
                    folder.push_str(segment);
                    folders.entry(folder.clone()).or_default();
                }
            }
        }
        let out = folders
            .into_iter()
            .map(|(folder, entries)| {
                let kept = entries
                    .iter()
                    .filter(|(name, dir)| *dir || !entries.contains(&(name.clone(), true)))
                    .cloned()
                    .collect();
                (folder, kept)
            })
            .collect();
        Folders(out)
    }
}

/// Run `f` on the folders of `area` in `analysis` (built on first use, kept with the
/// snapshot).
fn with_folders<R>(analysis: &Analysis, area: Area, f: impl FnOnce(&Folders) -> R) -> R {
    match area {
        Area::Json => f(&analysis
            .derived(|a| {
                let docs = a.documents().filter(|d| d.lang == Lang::Dust);
                JsonFolders(Folders::build(docs.map(|d| d.path.as_str())))
            })
            .0),
        Area::Entities => f(&analysis
            .derived(|a| {
                let ids = a
                    .documents()
                    .flat_map(|d| d.entities.iter())
                    .filter_map(|e| e.id.as_deref())
                    .filter(|id| model::id_problem(id).is_none());
                EntityFolders(Folders::build(ids))
            })
            .0),
    }
}

/// The DUST document `doc`, if the snapshot has it.
fn dust_document<'a>(analysis: &'a Analysis, doc: &str) -> Option<&'a std::sync::Arc<Document>> {
    analysis.document(doc).filter(|d| d.lang == Lang::Dust)
}

/// Where the entity `id` lives: its document and its index in that document's top-level
/// array (`None`: the document is the entity). `None` when no entity has the id; an error
/// when several do.
fn entity_place<'a>(
    analysis: &'a Analysis,
    id: &str,
) -> StoreResult<Option<(&'a std::sync::Arc<Document>, Option<usize>)>> {
    match analysis.entity(id) {
        [] => Ok(None),
        [loc] => {
            let doc = analysis.document(&loc.path).expect("an entity's document exists");
            Ok(Some((doc, doc.entities[loc.index].index)))
        }
        many => Err(StoreError::InvalidArguments(format!(
            "{id} is defined in {} places; fix the duplicate-id before writing its entity file",
            many.len()
        ))),
    }
}

/// What the path `path` in a derived area names in `analysis`.
pub fn resolve(analysis: &Analysis, path: &str) -> Option<Derived> {
    let (area, rest) = area(path)?;
    if with_folders(analysis, area, |folders| folders.0.contains_key(rest)) {
        return Some(Derived::Folder);
    }
    let target = target(path)?;
    let exists = match &target {
        Target::Projection(doc) => dust_document(analysis, doc).is_some(),
        Target::Entity(id) => !analysis.entity(id).is_empty(),
    };
    exists.then_some(Derived::File(target))
}

/// The entries of the derived folder at `path` (name, is a folder), sorted; `None` when
/// `path` is no derived folder.
pub fn list(analysis: &Analysis, path: &str) -> Option<Vec<(String, bool)>> {
    let (area, rest) = area(path)?;
    with_folders(analysis, area, |folders| folders.0.get(rest).cloned())
}

/// The kind of a path in a derived area, for a front that shows the store as files: its
/// folders are read-only ([`PathKind::Private`]); a derived file (existing, or any other
/// `.json` name, which a write would create) is [`PathKind::Derived`]; any other name is a
/// scratch file, held outside the store until it is renamed onto a derived file (`sed -i`,
/// editors' temporary files). `None` outside the areas.
pub fn kind(analysis: &Analysis, path: &str) -> Option<PathKind> {
    let (_, rest) = area(path)?;
    Some(match resolve(analysis, path) {
        _ if rest.is_empty() => PathKind::Private,
        Some(Derived::Folder) => PathKind::Private,
        Some(Derived::File(_)) => PathKind::Derived,
        None => {
            let name = rest.rsplit('/').next().unwrap_or(rest);
            if name.ends_with(SUFFIX) && !is_scratch_name(name) && target(path).is_some() {
                PathKind::Derived
            } else {
                PathKind::Scratch
            }
        }
    })
}

/// Every derived file of `area` in `analysis`, as store-relative paths in path order:
/// exactly the files the mount shows there (a stem that cannot be a path is left out, a file
/// shadowed by a folder of its name too). For a front that lists derived files as resources.
pub fn files(analysis: &Analysis, area: Area) -> Vec<String> {
    let top = match area {
        Area::Json => JSON_DIR,
        Area::Entities => ENTITIES_DIR,
    };
    let mut out: Vec<String> = with_folders(analysis, area, |folders| {
        folders
            .0
            .iter()
            .flat_map(|(folder, entries)| {
                entries.iter().filter(|(_, dir)| !dir).map(move |(name, _)| match folder.as_str() {
                    "" => format!("{PRIVATE_DIR}/{top}/{name}"),
                    folder => format!("{PRIVATE_DIR}/{top}/{folder}/{name}"),
                })
            })
            .collect()
    });
    out.sort_unstable();
    out
}

/// A derived file that a transaction changed, as a change notification names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedChange {
    /// The derived file's store-relative path.
    pub path: String,
    pub change: ChangeKind,
    /// The version of the document it derives from, as [`Read::version`] gives it: what a
    /// write based on a read of it now expects. `None` when it was deleted.
    pub version: Option<Version>,
}

/// The derived files that changed with `documents` and `entities` (one notice of the change
/// feed): the projection of each DUST document (created, changed or deleted with it), and
/// the entity file of each entity (with it), in path order. `analysis` is the snapshot the
/// notice reaches or a later one, for the version of an entity's document. An id that cannot
/// be a path has no file, so no entry.
pub fn changed(
    analysis: &Analysis,
    documents: &[DocumentNotice],
    entities: &[EntityNotice],
) -> Vec<DerivedChange> {
    let projections = documents
        .iter()
        .filter(|d| Lang::from_path(&d.path) == Some(Lang::Dust))
        .map(|d| DerivedChange {
            path: path_of(&Target::Projection(d.path.clone())),
            change: d.change,
            version: d.version,
        });
    let files = entities.iter().filter(|e| model::id_problem(&e.id).is_none()).map(|e| {
        let version = match e.change {
            ChangeKind::Deleted => None,
            _ => analysis
                .entity(&e.id)
                .first()
                .and_then(|loc| analysis.document(&loc.path))
                .map(|doc| version_of(doc)),
        };
        DerivedChange { path: path_of(&Target::Entity(e.id.clone())), change: e.change, version }
    });
    let mut out: Vec<DerivedChange> = projections.chain(files).collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// A derived file's content as of one snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// Pretty JSON with a final newline.
    pub bytes: Vec<u8>,
    /// The store-relative path of the document it derives from.
    pub source: String,
    /// That document's version: what a write based on this read expects.
    pub version: Version,
}

/// The content of the derived file `target`, if it exists.
pub fn read(analysis: &Analysis, target: &Target) -> Option<Read> {
    let (doc, value) = match target {
        Target::Projection(path) => {
            let doc = dust_document(analysis, path)?;
            (doc, &doc.parse.value)
        }
        Target::Entity(id) => {
            let loc = analysis.entity(id).first()?;
            let doc = analysis.document(&loc.path)?;
            (doc, doc.entity_node(loc.index)?.1)
        }
    };
    Some(Read {
        bytes: format::value_to_json(value).into_bytes(),
        source: doc.path.clone(),
        version: version_of(doc),
    })
}

fn version_of(doc: &Document) -> Version {
    doc.version.parse().unwrap_or_else(|_| Version::of(doc.text.as_bytes()))
}

/// The changes of real documents that `changes` mean: a change of a derived path becomes the
/// change of what it derives from (see [`plan_write`] and [`plan_delete`]); any other change
/// passes as it is. Two changes reaching one document are refused (`invalid-arguments`).
pub fn translate(analysis: &Analysis, changes: Vec<Change>) -> StoreResult<Vec<Change>> {
    let mut out: Vec<Change> = Vec::with_capacity(changes.len());
    for change in changes {
        let Some(target) = target(&change.path) else {
            if area(&change.path).is_some() {
                return Err(not_derived(&change.path));
            }
            out.push(change);
            continue;
        };
        let planned = match &change.op {
            Op::Put(bytes) | Op::Create(bytes) => {
                plan_write(analysis, &change.path, &target, bytes, change.expected)?
            }
            Op::Delete => plan_delete(analysis, &change.path, &target, change.expected)?,
        };
        for change in planned {
            if out.iter().any(|c| c.path == change.path) {
                return Err(StoreError::InvalidArguments(format!(
                    "two changes of one commit reach {}; change it once",
                    change.path
                )));
            }
            out.push(change);
        }
    }
    Ok(out)
}

fn not_derived(path: &str) -> StoreError {
    StoreError::InvalidArguments(format!(
        "{path} is no derived file: they are .stardust/json/<document>.json and \
         .stardust/entities/<id>.json"
    ))
}

/// Refuse bytes written to the derived file `path` for a problem found in them.
fn refuse(path: &str, diagnostic: Diagnostic) -> StoreError {
    StoreError::Refused { problems: vec![(path.to_owned(), diagnostic)] }
}

/// The JSON value of bytes written to the derived file `path`; anything but one clean JSON
/// value is refused with its syntax problems.
fn written_value(path: &str, bytes: &[u8]) -> StoreResult<(Value, syntax::Parse)> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let at = crate::text::to_u32(e.valid_up_to());
            return Err(refuse(
                path,
                Diagnostic::new(
                    DiagnosticCode::Syntax,
                    Span::empty(at),
                    format!(
                        "the file is not valid UTF-8 (invalid byte at offset {at}); write UTF-8 JSON"
                    ),
                ),
            ));
        }
    };
    let parse = syntax::parse(text, Lang::Json);
    if parse.root.is_none() || !parse.errors.is_empty() {
        let problems = if parse.errors.is_empty() {
            vec![Diagnostic::new(
                DiagnosticCode::Syntax,
                Span::empty(0),
                "the file holds no JSON value; write the document's whole value as JSON",
            )]
        } else {
            parse
                .errors
                .iter()
                .map(|e| Diagnostic::new(e.kind.code(), e.span, e.message.clone()))
                .collect()
        };
        return Err(StoreError::Refused {
            problems: problems.into_iter().map(|d| (path.to_owned(), d)).collect(),
        });
    }
    Ok((parse.value.clone(), parse))
}

/// A `conflict` when the caller's view of `doc` (`expected`) is not its current version.
fn check_expected(doc: &Document, expected: Option<Version>) -> StoreResult<Version> {
    let current = version_of(doc);
    match expected {
        Some(expected) if expected != current => Err(StoreError::Conflict {
            path: doc.path.clone(),
            expected: Some(expected),
            found: Some(current),
        }),
        _ => Ok(current),
    }
}

/// The changes that writing `bytes` to the derived file `path` (standing for `target`) means,
/// planned on `analysis`; `expected`: the version of the source document the writer read.
///
/// - A projection: the DUST document is rewritten to hold the new value (created, written
///   canonically, when there is none yet).
/// - An entity file: the new value must be an object whose `id` is the file's id; it replaces
///   that entity in its document (only that item of an array changes). A file for an id no
///   entity has creates the entity where a patch's `create` would.
pub fn plan_write(
    analysis: &Analysis,
    path: &str,
    target: &Target,
    bytes: &[u8],
    expected: Option<Version>,
) -> StoreResult<Vec<Change>> {
    let (value, parse) = written_value(path, bytes)?;
    match target {
        Target::Projection(doc_path) => {
            if Lang::from_path(doc_path) != Some(Lang::Dust) {
                return Err(StoreError::InvalidArguments(format!(
                    "{path} names no DUST document: projections are .stardust/json/<path>.dust.json"
                )));
            }
            match dust_document(analysis, doc_path) {
                Some(doc) => {
                    let version = check_expected(doc, expected)?;
                    let text = edit::rewrite(&doc.text, &doc.parse, Lang::Dust, &value);
                    Ok(vec![Change::put(doc_path.clone(), text).expecting(version)])
                }
                None => {
                    let text = edit::canonical(&value, Lang::Dust);
                    Ok(vec![Change::create(doc_path.clone(), text)])
                }
            }
        }
        Target::Entity(id) => {
            let written_id = value.get("id").and_then(Value::as_str);
            if !value.is_object() || written_id != Some(id.as_str()) {
                let span = parse
                    .root
                    .as_ref()
                    .and_then(|root| root.member(&parse.value, "id"))
                    .map_or_else(
                        || parse.root.as_ref().map_or(Span::empty(0), |r| r.span),
                        |(m, _)| m.value.span,
                    );
                let found = written_id.map_or("no id".to_owned(), |w| format!("the id {w}"));
                return Err(refuse(
                    path,
                    Diagnostic::new(
                        DiagnosticCode::InvalidId,
                        span,
                        format!(
                            "the entity file of {id} must hold an object with \"id\": \"{id}\", \
                             found {found}; to change an id use stardust.entity.rename"
                        ),
                    ),
                ));
            }
            match entity_place(analysis, id)? {
                Some((doc, index)) => {
                    let version = check_expected(doc, expected)?;
                    let mut new = doc.parse.value.clone();
                    match (index, &mut new) {
                        (None, _) => new = value,
                        (Some(i), Value::Array(items)) if i < items.len() => items[i] = value,
                        _ => return Err(unreadable(&doc.path)),
                    }
                    let text = edit::rewrite(&doc.text, &doc.parse, doc.lang, &new);
                    Ok(vec![Change::put(doc.path.clone(), text).expecting(version)])
                }
                None => {
                    let Value::Object(entity) = value else { unreachable!("checked above") };
                    let plan = patch::plan(
                        analysis,
                        &patch::Patch { ops: vec![patch::Op::Create(entity)] },
                    )
                    .map_err(StoreError::Core)?;
                    Ok(plan
                        .documents
                        .into_iter()
                        .filter_map(|d| d.after.map(|text| Change::create(d.path, text)))
                        .collect())
                }
            }
        }
    }
}

fn unreadable(path: &str) -> StoreError {
    StoreError::InvalidArguments(format!(
        "{path} changed its shape while being read; re-read the entity file and retry"
    ))
}

/// The changes that deleting the derived file `path` (standing for `target`) means: a
/// projection's DUST document is deleted; an entity is removed from its document (the
/// document is deleted when it is the entity). The save authority then decides (deleting an
/// entity others reference adds `dangling-ref`).
pub fn plan_delete(
    analysis: &Analysis,
    path: &str,
    target: &Target,
    expected: Option<Version>,
) -> StoreResult<Vec<Change>> {
    let missing = || StoreError::NotFound(path.to_owned());
    match target {
        Target::Projection(doc_path) => {
            let doc = dust_document(analysis, doc_path).ok_or_else(missing)?;
            let version = check_expected(doc, expected)?;
            Ok(vec![Change::delete(doc_path.clone()).expecting(version)])
        }
        Target::Entity(id) => {
            let (doc, index) = entity_place(analysis, id)?.ok_or_else(missing)?;
            let version = check_expected(doc, expected)?;
            match index {
                None => Ok(vec![Change::delete(doc.path.clone()).expecting(version)]),
                Some(i) => {
                    let mut new = doc.parse.value.clone();
                    match &mut new {
                        Value::Array(items) if i < items.len() => {
                            items.remove(i);
                        }
                        _ => return Err(unreadable(&doc.path)),
                    }
                    let text = edit::rewrite(&doc.text, &doc.parse, doc.lang, &new);
                    Ok(vec![Change::put(doc.path.clone(), text).expecting(version)])
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_and_targets() {
        assert_eq!(area(".stardust/json"), Some((Area::Json, "")));
        assert_eq!(
            area(".stardust/json/books/a.dust.json"),
            Some((Area::Json, "books/a.dust.json"))
        );
        assert_eq!(
            area(".stardust/entities/book/dune.json"),
            Some((Area::Entities, "book/dune.json"))
        );
        assert_eq!(area(".stardust/transactions/x"), None);
        assert_eq!(area(".stardust"), None);
        assert_eq!(area("json/a.json"), None);
        assert_eq!(
            target(".stardust/entities/book/dune.json"),
            Some(Target::Entity("book/dune".into()))
        );
        assert_eq!(
            target(".stardust/json/books/a.dust.json"),
            Some(Target::Projection("books/a.dust".into()))
        );
        assert_eq!(target(".stardust/entities/.json"), None);
        assert_eq!(target(".stardust/entities/book"), None);
        let t = Target::Entity("book/dune".into());
        assert_eq!(target(&path_of(&t)), Some(t));
    }

    #[test]
    fn folders_shadow_files_and_skip_unpathable_stems() {
        let folders = Folders::build(["a/b", "a/b.json/c", "x//y", "..", "top"].into_iter());
        let root = &folders.0[""];
        assert_eq!(root, &[("a".to_owned(), true), ("top.json".to_owned(), false)]);
        assert_eq!(folders.0["a"], [("b.json".to_owned(), true)]);
        assert_eq!(folders.0["a/b.json"], [("c.json".to_owned(), false)]);
    }
}

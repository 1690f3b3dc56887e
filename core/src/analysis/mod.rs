//! The analysis of a whole store: documents, entities, the id index, schemas and every
//! diagnostic of SPEC §5.
//!
//! An [`Analysis`] is an immutable snapshot. It is built from documents in memory (so unsaved
//! editor buffers and not-yet-committed changes are analysed exactly like files), and a new
//! snapshot is derived from an old one with [`Analysis::with_changes`], which re-parses only
//! the changed documents.
//!
//! Diagnostics come in three layers:
//! - local: depend only on the document's text (syntax, duplicate keys, id rule, missing type);
//! - validation: depend on the document, the schemas and the types of the entities it
//!   references (schema, unknown-type, ref-type), computed per document;
//! - store-wide: duplicate ids and dangling references, read from the id index on demand;
//!   views' paths against the store's documents and each other (views.rs).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::builtin;
use crate::config::Config;
use crate::diagnostics::{Diagnostic, DiagnosticCode, Related};
use crate::error::{Error, Result};
use crate::model::{self, Entity, Reference};
use crate::schema::{self, Compiled, EntityTypes, Subject};
use crate::shared_map::SharedMap;
use crate::syntax::{self, Lang, Node, NodeKind, Parse};
use crate::text::{LineIndex, Span};

mod docs;
mod memo;
mod schemas;
mod splice;
mod views;

use docs::Docs;
use memo::Memo;
use schemas::{Schemas, Target};
use splice::Splice;
pub use views::{ViewDef, Views};

/// What every analysis of one store shares: where it is and how it is configured.
#[derive(Debug)]
pub struct StoreContext {
    pub root: PathBuf,
    pub config: Config,
}

impl StoreContext {
    /// Read the configuration of the store at `root`.
    pub fn load(root: &Path) -> Result<StoreContext> {
        let meta = match std::fs::metadata(root) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::InvalidArguments(format!(
                    "there is no store at {}; give the path of a store's root folder",
                    root.display()
                )));
            }
            Err(err) => {
                return Err(Error::io(format!("cannot open the store {}", root.display()), err));
            }
        };
        if !meta.is_dir() {
            return Err(Error::InvalidArguments(format!(
                "{} is not a directory; give the store's root folder",
                root.display()
            )));
        }
        Ok(StoreContext { root: root.to_owned(), config: Config::load(root)? })
    }
}

/// The SHA-256 of a document's content, in lowercase hex: its version.
pub fn version_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    out
}

/// One document, parsed, with what can be known from its text alone.
#[derive(Clone, Debug)]
pub struct Document {
    /// Store-relative, `/`-separated.
    pub path: String,
    pub lang: Lang,
    /// The text; for a file that is not UTF-8, its valid prefix. Shared with the editor's
    /// buffer it came from, if any ([`Content::Text`]): a whole-text change is not copied.
    pub text: Arc<String>,
    /// The length of the content in bytes; longer than `text` when the content is not UTF-8.
    pub byte_len: u64,
    pub version: String,
    pub line_index: LineIndex,
    pub parse: Parse,
    pub entities: Vec<Entity>,
    pub references: Vec<Reference>,
    /// Diagnostics that depend on nothing but this document.
    pub local: Vec<Diagnostic>,
    /// How many of `local`, first, depend on the text alone (the rest on the entities).
    text_problems: usize,
    /// Whether the document is a JSON Schema, which holds no entities (SPEC §23). Its
    /// `$schema` names a dialect, or the analysis found it used as a schema.
    schema: bool,
    /// The schema the document names with a top-level `$schema` key.
    dollar_schema: Option<(SchemaName, Span)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SchemaName {
    /// A URI, resolved against the document's own (`file:///__store__/<path>`); a store
    /// document's when it is under [`schema::BASE`].
    Uri(String),
    /// A JSON Schema meta-schema: the document is itself a schema.
    Meta,
    /// Not a URI reference.
    Invalid(String),
}

impl Document {
    /// Parse and locally diagnose the document at store-relative `path` holding `bytes`,
    /// written in `lang` (the store's [`crate::scan::lang_of`] the path).
    pub fn new(path: String, lang: Lang, bytes: Vec<u8>) -> Document {
        Document::of(path, lang, Content::Bytes(bytes))
    }

    /// [`Document::new`] of either kind of content; a shared text is kept, not copied.
    pub fn of(path: String, lang: Lang, content: Content) -> Document {
        let version = version_of(content.as_bytes());
        let byte_len = content.as_bytes().len() as u64;
        let mut local = Vec::new();
        let bytes = match content {
            Content::Text(text) if text.len() <= u32::MAX as usize => {
                return Document::parsed(path, lang, text, byte_len, version, local);
            }
            Content::Text(text) => Arc::unwrap_or_clone(text).into_bytes(),
            Content::Bytes(bytes) => bytes,
        };
        let text: String = if bytes.len() > u32::MAX as usize {
            local.push(Diagnostic::new(
                DiagnosticCode::Syntax,
                Span::empty(0),
                format!("the document is {} bytes; documents are limited to 4 GiB", bytes.len()),
            ));
            String::new()
        } else {
            match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(err) => {
                    let valid = err.utf8_error().valid_up_to();
                    let mut bytes = err.into_bytes();
                    bytes.truncate(valid);
                    local.push(Diagnostic::new(
                        DiagnosticCode::Syntax,
                        Span::empty(crate::text::to_u32(valid)),
                        format!(
                            "the document is not valid UTF-8 (invalid byte at offset {valid}); save it as UTF-8"
                        ),
                    ));
                    String::from_utf8(bytes).unwrap_or_default()
                }
            }
        };
        Document::parsed(path, lang, Arc::new(text), byte_len, version, local)
    }

    /// The document of `text`, with the problems `local` found in its bytes (none: it is
    /// parsed).
    fn parsed(
        path: String,
        lang: Lang,
        text: Arc<String>,
        byte_len: u64,
        version: String,
        mut local: Vec<Diagnostic>,
    ) -> Document {
        let parse = if local.is_empty() {
            syntax::parse(&text, lang)
        } else {
            Parse {
                value: Value::Null,
                root: None,
                implicit_object: false,
                comments: Vec::new(),
                errors: Vec::new(),
            }
        };
        for err in &parse.errors {
            local.push(Diagnostic::new(err.kind.code(), err.span, err.message.clone()));
        }
        let dollar_schema = dollar_schema(&path, &parse);
        let line_index = LineIndex::new(&text);
        let mut doc = Document {
            path,
            lang,
            text,
            byte_len,
            version,
            line_index,
            parse,
            entities: Vec::new(),
            references: Vec::new(),
            text_problems: local.len(),
            local,
            schema: matches!(dollar_schema, Some((SchemaName::Meta, _))),
            dollar_schema,
        };
        doc.derive();
        doc
    }

    /// The entities, references and the problems they have, from the parse: none in a schema.
    fn derive(&mut self) {
        self.local.truncate(self.text_problems);
        if self.schema {
            self.entities = Vec::new();
            self.references = Vec::new();
        } else {
            self.entities = model::entities(&self.parse);
            self.references = model::references(&self.parse, &self.entities);
            for entity in &self.entities {
                self.local.extend(entity_problems(entity));
            }
        }
        let views = views::local_problems(self);
        self.local.extend(views);
    }

    /// Whether the document is a JSON Schema, holding no entities (SPEC §23).
    pub fn is_schema(&self) -> bool {
        self.schema
    }

    /// Make the document a schema (no entities) or not, as the whole store says it is.
    fn set_schema(&mut self, schema: bool) {
        if self.schema != schema {
            self.schema = schema;
            self.derive();
        }
    }

    /// Whether the document's own `$schema` names a JSON Schema dialect.
    fn names_dialect(&self) -> bool {
        matches!(self.dollar_schema, Some((SchemaName::Meta, _)))
    }

    /// The URI the top-level `$schema` names, resolved against the document's own, and the
    /// span of its value; `None` when there is no `$schema`, or it names a meta-schema.
    pub fn named_schema(&self) -> Option<(&str, Span)> {
        match &self.dollar_schema {
            Some((SchemaName::Uri(uri), span)) => Some((uri, *span)),
            _ => None,
        }
    }

    /// The tree and value of entity `i`.
    pub fn entity_node(&self, i: usize) -> Option<(&Node, &Value)> {
        let root = self.parse.root.as_ref()?;
        match self.entities.get(i)?.index {
            None => Some((root, &self.parse.value)),
            Some(index) => root.item(&self.parse.value, index),
        }
    }
}

/// The notation of a store's document at `path`; JSON for a path that is no document's.
fn lang_of(config: &Config, path: &str) -> Lang {
    crate::scan::lang_of(config, path).unwrap_or(Lang::Json)
}

/// The id rule of one entity.
fn entity_problems(entity: &Entity) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    match &entity.id {
        Some(id) => {
            if let Some(problem) = model::id_problem(id) {
                out.push(
                    Diagnostic::new(
                        DiagnosticCode::InvalidId,
                        entity.id_span,
                        format!("invalid id '{id}': {problem}"),
                    )
                    .with_data(json!({"id": id})),
                );
            }
        }
        None => {
            let ty = &entity.ty;
            out.push(Diagnostic::new(
                DiagnosticCode::InvalidId,
                entity.id_span,
                format!("an entity's id must be a string like '{ty}/<name>'"),
            ));
        }
    }
    out
}

/// The `$schema` of a document whose top level is an object.
fn dollar_schema(path: &str, parse: &Parse) -> Option<(SchemaName, Span)> {
    let root = parse.root.as_ref()?;
    let (member, value) = root.member(&parse.value, "$schema")?;
    let name = value.as_str()?;
    let span = member.value.span;
    let meta = ["http://json-schema.org/", "https://json-schema.org/"];
    if meta.iter().any(|p| name.starts_with(p)) {
        return Some((SchemaName::Meta, span));
    }
    Some(match schema::resolve(path, name) {
        Some(uri) => (SchemaName::Uri(uri), span),
        None => (SchemaName::Invalid(name.to_owned()), span),
    })
}

/// Where an entity is: its document and its index in that document's entity list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntityLoc {
    pub path: Arc<str>,
    pub index: usize,
}

// The indexes a commit updates live in shared maps: each snapshot copies only what changed.
// Keys and values are shared too, so that copying a shard is a table of reference counts.
type Ids = SharedMap<Arc<str>, Arc<Vec<EntityLoc>>>;
type Referrers = SharedMap<Arc<str>, Arc<Vec<Arc<str>>>>;
type Types = SharedMap<Arc<str>, Arc<str>>;
type Validation = SharedMap<Arc<str>, Arc<Vec<Diagnostic>>>;

/// Changes to documents: (store-relative path, new content, or `None` for a deletion).
type Changes = Vec<(String, Option<Content>)>;

/// A document's new content: the bytes of a file, or the text an editor's buffer holds,
/// which the document then shares instead of copying (a 2 MB text copied is 2 MB of memory
/// the process may never have touched: docs/DECISIONS.md "The first edit after an open").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    Bytes(Vec<u8>),
    Text(Arc<String>),
}

impl Content {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Content::Bytes(bytes) => bytes,
            Content::Text(text) => text.as_bytes(),
        }
    }

    /// As a shared text, without copying; `None` for bytes that are not UTF-8.
    fn into_text(self) -> Result<Arc<String>, Content> {
        match self {
            Content::Text(text) => Ok(text),
            Content::Bytes(bytes) => {
                String::from_utf8(bytes).map(Arc::new).map_err(|e| Content::Bytes(e.into_bytes()))
            }
        }
    }
}

impl From<Vec<u8>> for Content {
    fn from(bytes: Vec<u8>) -> Content {
        Content::Bytes(bytes)
    }
}
/// Documents parsed whole for a change, `None` for a deletion.
type Parsed = Vec<(String, Option<Arc<Document>>)>;

impl EntityTypes for Types {
    fn type_of(&self, id: &str) -> Option<&str> {
        self.get(id).map(|ty| &**ty)
    }
}

/// An immutable snapshot of the analysis of a whole store.
#[derive(Clone)]
pub struct Analysis {
    ctx: Arc<StoreContext>,
    docs: Arc<Docs>,
    /// Every entity by id; more than one location means a duplicate id.
    ids: Arc<Ids>,
    /// The documents referencing each id (once per reference), for incremental revalidation.
    referrers: Arc<Referrers>,
    /// Type of each entity id (the first one, for duplicates), for `x-stardust-ref`.
    types: Arc<Types>,
    /// Which documents are schemas, and the URIs the store knows them by.
    schema_set: Arc<Schemas>,
    /// Compiled schemas by store-relative path (by URI for a subschema a document names).
    schemas: Arc<HashMap<String, Compiled>>,
    /// Validation diagnostics (schema, unknown-type, ref-type) per document.
    validation: Arc<Validation>,
    /// What layers above derive from this snapshot (the query engine's indexes), built on
    /// first use; shared by clones, which are the same snapshot, and reset by a change.
    memo: Arc<Memo>,
}

impl std::fmt::Debug for Analysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analysis")
            .field("root", &self.ctx.root)
            .field("documents", &self.docs.len())
            .field("entities", &self.ids.len())
            .finish()
    }
}

impl Analysis {
    /// Read and analyse the store at `root` from disk.
    pub fn load(root: &Path) -> Result<Analysis> {
        let ctx = Arc::new(StoreContext::load(root)?);
        let files = crate::scan::documents(root, &ctx.config)?;
        let read: Vec<(String, Vec<u8>)> =
            crate::scan::read_many(&files, |(_, abs)| std::fs::read(abs))
                .into_iter()
                .zip(files)
                .filter_map(|(result, (rel, _))| match result {
                    Ok(bytes) => Some((rel, bytes)),
                    Err(err) => {
                        tracing::warn!("skipping {rel}: {err}");
                        None
                    }
                })
                .collect();
        Ok(Analysis::new(ctx, read))
    }

    /// Analyse the given documents (store-relative path, content).
    pub fn new(ctx: Arc<StoreContext>, docs: Vec<(String, Vec<u8>)>) -> Analysis {
        let docs: Docs = docs
            .into_par_iter()
            .map(|(path, bytes)| {
                let lang = lang_of(&ctx.config, &path);
                (Arc::<str>::from(path.as_str()), Arc::new(Document::new(path, lang, bytes)))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        Analysis::build(ctx, Arc::new(docs))
    }

    /// A new snapshot with documents put (`Some(content)`) or deleted (`None`). Only the
    /// changed documents are parsed again, and only the documents whose validation can depend
    /// on them are validated again (all of them when a schema changes).
    pub fn with_changes(&self, changes: Vec<(String, Option<Vec<u8>>)>) -> Analysis {
        self.clone().into_with_changes(changes)
    }

    /// [`Analysis::into_with_changes`] of any [`Content`]: a shared text becomes the
    /// document's own without a copy (an editor's buffer, [`crate::ide::Buffers`]).
    pub fn into_with_contents(self, changes: Changes) -> Analysis {
        self.into_with(changes)
    }

    /// [`Analysis::with_changes`], consuming this snapshot. A changed document that no other
    /// snapshot shares is edited in place when the edit stays inside one item of a top-level
    /// entity array: only that item is parsed and validated again, which keeps an edit of a
    /// large document in the time of its item rather than of the whole text.
    pub fn into_with_changes(self, changes: Vec<(String, Option<Vec<u8>>)>) -> Analysis {
        let changes = changes.into_iter().map(|(path, bytes)| (path, bytes.map(Content::Bytes)));
        self.into_with(changes.collect())
    }

    fn into_with(mut self, changes: Changes) -> Analysis {
        let (splices, rest) = self.splice_in_place(changes);
        tracing::debug!("{} documents edited in place, {} parsed whole", splices.len(), rest.len());
        let parsed: Parsed = rest
            .into_par_iter()
            .map(|(path, content)| {
                let lang = lang_of(&self.ctx.config, &path);
                let doc = content.map(|c| Arc::new(Document::of(path.clone(), lang, c)));
                (path, doc)
            })
            .collect();
        let (touched_ids, schema_change) = self.reindex(&splices, &parsed);
        let views = self.memo.get::<views::Views>();
        self.memo = Arc::default();
        if schema_change {
            return Analysis::build(self.ctx.clone(), self.docs);
        }
        // The views as the previous snapshot had them, with the changed documents' own: a
        // commit then costs views nothing per document of the store (every snapshot's views
        // are asked for by the views' thread).
        if let Some(views) = views {
            let changed = splices
                .iter()
                .map(|(p, _)| p.as_str())
                .chain(parsed.iter().map(|(p, _)| p.as_str()));
            let carried = views.carry(&self, changed);
            self.memo.get_or_init(|| carried);
        }
        let retyped = self.retype(&touched_ids);
        let mut revalidate: BTreeSet<String> = parsed.iter().map(|(p, _)| p.clone()).collect();
        for id in &retyped {
            let referring = self.referrers.get(id.as_str()).into_iter().flat_map(|v| v.iter());
            revalidate.extend(referring.map(|p| p.to_string()));
        }
        // A spliced document keeps the validation of its other items, unless a type changed:
        // then any of its items may see it through a reference.
        if !retyped.is_empty() {
            revalidate.extend(splices.iter().map(|(path, _)| path.clone()));
        }
        self.revalidate_spliced(&splices, &revalidate);
        self.revalidate_whole(revalidate);
        self
    }

    /// This snapshot's documents under another configuration of the same store (SPEC §23: a
    /// changed `stardust.toml` or ignore file takes effect in a running core): the documents
    /// that are still documents keep their parse (parsed again when `[store] jsonc` changed
    /// their notation), the others leave, and everything that depends on the configuration
    /// (schemas, validation, the indexes) is derived again. Files that become documents are
    /// not read here; the store takes them in as edits.
    pub fn reconfigured(&self, ctx: Arc<StoreContext>) -> Analysis {
        let docs: Docs = self
            .docs
            .iter()
            .filter(|(path, _)| crate::scan::is_document_path(&ctx.config, path))
            .map(|(path, doc)| {
                let lang = lang_of(&ctx.config, path);
                let doc = if lang == doc.lang {
                    doc.clone()
                } else {
                    let text = Content::Text(doc.text.clone());
                    Arc::new(Document::of(doc.path.clone(), lang, text))
                };
                (path.clone(), doc)
            })
            .collect();
        Analysis::build(ctx, Arc::new(docs))
    }

    /// Whether an edit of the document at `path` may be taken in place (when it stays inside
    /// one item): a clean JSON document whose top level is an array, which is no schema, names
    /// none and is not validated whole. Schemas and documents validated whole are always
    /// parsed whole.
    pub fn spliceable(&self, path: &str) -> bool {
        !self.schema_set.paths.contains(path)
            && !self.schema_set.wanted.contains(path)
            && !schemas::configured(&self.ctx.config, path)
            && self.docs.get(path).is_some_and(|doc| {
                doc.lang == Lang::Json
                    && doc.parse.is_clean()
                    && matches!(doc.parse.root, Some(Node { kind: NodeKind::Array(_), .. }))
                    && !has_associated_schema(&self.ctx.config, doc)
            })
    }

    /// This snapshot, owning a copy of each [`Analysis::spliceable`] document of `paths`: the
    /// next edit of one of them is then taken in place without copying it first. An editor's
    /// buffers make it ahead of the first edit after an open, off the edit's path, since the
    /// store's snapshot shares the opened document (docs/DECISIONS.md "The first edit after
    /// an open").
    pub fn owning(mut self, paths: &[String]) -> Analysis {
        let paths: Vec<&String> = paths.iter().filter(|p| self.spliceable(p)).collect();
        if paths.is_empty() {
            return self;
        }
        let docs = Arc::make_mut(&mut self.docs);
        for path in paths {
            if let Some(doc) = docs.get_mut(path) {
                Arc::make_mut(doc);
            }
        }
        self
    }

    /// Edit in place each changed document, when the edit stays inside one item of a top-level
    /// entity array; the other changes are returned to be parsed whole. A document another
    /// snapshot shares (the first edit after an editor opens it, which the store's snapshot
    /// holds too, unless the buffers copied it ahead: [`Analysis::owning`]) is copied first: a
    /// copy costs a fraction of a parse and a whole validation.
    fn splice_in_place(&mut self, changes: Changes) -> (Vec<(String, Splice)>, Changes) {
        let eligible: Vec<bool> =
            changes.iter().map(|(path, bytes)| bytes.is_some() && self.spliceable(path)).collect();
        if !eligible.contains(&true) {
            return (Vec::new(), changes);
        }
        let docs = Arc::make_mut(&mut self.docs);
        let mut splices = Vec::new();
        let mut rest = Vec::new();
        for ((path, content), eligible) in changes.into_iter().zip(eligible) {
            // The new text is taken as it is (shared, or the bytes' own memory), never copied.
            let text = match content {
                Some(content) if eligible => content.into_text(),
                content => {
                    rest.push((path, content));
                    continue;
                }
            };
            let spliced = match &text {
                Ok(text) => docs.get_mut(&path).and_then(|doc| {
                    note_copy(Arc::strong_count(doc) > 1);
                    Arc::make_mut(doc).splice(text)
                }),
                Err(_) => None,
            };
            match spliced {
                Some(splice) => splices.push((path, splice)),
                None => rest.push((path, Some(text.map_or_else(|bytes| bytes, Content::Text)))),
            }
        }
        (splices, rest)
    }

    /// Put the spliced entities and the documents parsed whole into the documents and the id
    /// and referrer indexes. Returns the ids whose definitions changed, and whether a schema
    /// may have changed (a schema document, or a document naming one, was touched).
    fn reindex(
        &mut self,
        splices: &[(String, Splice)],
        parsed: &Parsed,
    ) -> (HashSet<String>, bool) {
        let docs = Arc::make_mut(&mut self.docs);
        let ids = Arc::make_mut(&mut self.ids);
        let referrers = Arc::make_mut(&mut self.referrers);
        let mut touched_ids: HashSet<String> = HashSet::new();
        for (path, splice) in splices {
            let doc = &docs[path.as_str()];
            let path: Arc<str> = path.as_str().into();
            if let Some((j, old)) = &splice.entity {
                let j = *j;
                unindex_entity(ids, referrers, &path, j, old, &splice.old_refs, &mut touched_ids);
                let refs: Vec<&Reference> =
                    doc.references.iter().filter(|r| r.entity == j).collect();
                index_entity(ids, referrers, &path, j, &doc.entities[j], &refs, &mut touched_ids);
            }
        }
        let mut schema_change = false;
        let set = &self.schema_set;
        for (path, doc) in parsed {
            // The schemas change when a schema, or a path a schema or `$schema` names, changes;
            // or when a document's `$schema` names another schema than before.
            schema_change |= set.paths.contains(path)
                || set.wanted.contains(path)
                || schemas::configured(&self.ctx.config, path);
            let old = docs.get(path.as_str());
            let named = |d: Option<&Arc<Document>>| {
                d.and_then(|d| d.dollar_schema.as_ref().map(|(name, _)| name.clone()))
            };
            schema_change |= named(old) != named(doc.as_ref());
            if let Some(old) = old {
                unindex(ids, referrers, old, &mut touched_ids);
            }
            match doc {
                Some(doc) => {
                    index(ids, referrers, doc, &mut touched_ids);
                    docs.insert(path.as_str().into(), doc.clone());
                }
                None => {
                    docs.remove(path.as_str());
                }
            }
        }
        (touched_ids, schema_change)
    }

    /// Update the type of each touched id; returns the ids whose type changed. Another
    /// document's validation sees an entity only through its type (`x-stardust-ref`), so only
    /// the referrers of these ids need validating again.
    fn retype(&mut self, touched_ids: &HashSet<String>) -> Vec<String> {
        let types = Arc::make_mut(&mut self.types);
        let mut retyped = Vec::new();
        for id in touched_ids {
            let ty = first_type(&self.docs, &self.ids, id);
            if types.get(id.as_str()).map(|t| &**t) == ty.as_deref() {
                continue;
            }
            retyped.push(id.clone());
            match ty {
                Some(ty) => types.insert(id.as_str().into(), ty.into()),
                None => types.remove(id.as_str()),
            };
        }
        retyped
    }

    /// For each spliced document not validated whole again: validate the edited entity only,
    /// and move the validation of its other items by the edit's length.
    fn revalidate_spliced(&mut self, splices: &[(String, Splice)], whole: &BTreeSet<String>) {
        let (docs, types) = (&self.docs, self.types.clone());
        let validation = Arc::make_mut(&mut self.validation);
        for (path, splice) in splices {
            if whole.contains(path) {
                continue;
            }
            let doc = &docs[path.as_str()];
            let fresh = match &splice.entity {
                Some((j, _)) => schema::with_entity_types(types.clone(), || {
                    validate_entity(&self.ctx.config, docs, &self.schemas, doc, *j)
                }),
                None => Vec::new(),
            };
            let mut diags = validation.get(path.as_str()).map_or_else(Vec::new, |v| v.to_vec());
            splice::splice_by_span(&mut diags, splice.old, splice.delta, fresh, |d| &mut d.span);
            validation.insert(path.as_str().into(), Arc::new(diags));
        }
    }

    /// Validate the documents at `paths` whole (in parallel); a path no longer in the
    /// snapshot loses its validation.
    fn revalidate_whole(&mut self, paths: BTreeSet<String>) {
        let (docs, types) = (&self.docs, self.types.clone());
        let fresh: Vec<(String, Option<Arc<Vec<Diagnostic>>>)> = paths
            .into_par_iter()
            .map(|path| {
                let diags = docs.get(path.as_str()).map(|doc| {
                    Arc::new(schema::with_entity_types(types.clone(), || {
                        validate_document(
                            &self.ctx.config,
                            docs,
                            &self.schema_set,
                            &self.schemas,
                            doc,
                        )
                    }))
                });
                (path, diags)
            })
            .collect();
        let validation = Arc::make_mut(&mut self.validation);
        for (path, diags) in fresh {
            match diags {
                Some(diags) => validation.insert(path.as_str().into(), diags),
                None => validation.remove(path.as_str()),
            };
        }
    }

    fn build(ctx: Arc<StoreContext>, mut docs: Arc<Docs>) -> Analysis {
        let schema_set = Arc::new(schemas::find(&ctx.config, &docs));
        // A schema holds no entities; a document no longer used as one holds its own again.
        let flipped: Vec<Arc<str>> = docs
            .iter()
            .filter(|(path, doc)| doc.is_schema() != schema_set.paths.contains(&***path))
            .map(|(path, _)| path.clone())
            .collect();
        if !flipped.is_empty() {
            let docs = Arc::make_mut(&mut docs);
            for path in flipped {
                if let Some(doc) = docs.get_mut(&path) {
                    let schema = !doc.is_schema();
                    Arc::make_mut(doc).set_schema(schema);
                }
            }
        }
        let mut ids = Ids::new();
        let mut referrers = Referrers::new();
        let mut touched = HashSet::new();
        let mut types = SharedMap::new();
        // Documents come in path order: the first type seen for an id is its first entity's.
        for doc in docs.values() {
            for entity in &doc.entities {
                if let (Some(id), ty) = (&entity.id, &entity.ty)
                    && !types.contains_key(id.as_str())
                {
                    types.insert(id.as_str().into(), ty.as_str().into());
                }
            }
            index(&mut ids, &mut referrers, doc, &mut touched);
        }
        let schemas = compile_schemas(&ctx.config, &docs, &schema_set);
        let types: Arc<Types> = Arc::new(types);
        let validation = docs
            .iter()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|(path, doc)| {
                let diags = schema::with_entity_types(types.clone(), || {
                    validate_document(&ctx.config, &docs, &schema_set, &schemas, doc)
                });
                (path.clone(), Arc::new(diags))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect::<SharedMap<_, _>>();
        Analysis {
            ctx,
            docs,
            ids: Arc::new(ids),
            referrers: Arc::new(referrers),
            types,
            schema_set,
            schemas: Arc::new(schemas),
            validation: Arc::new(validation),
            memo: Arc::default(),
        }
    }

    /// The documents whose diagnostics a change of `changed` (from `before` to `self`) can
    /// alter: the changed documents, the documents defining or referencing an id they defined
    /// before or after, or every document when a schema changed.
    pub fn affected_by(&self, before: &Analysis, changed: &[String]) -> BTreeSet<String> {
        if !Arc::ptr_eq(&self.schemas, &before.schemas) && !same_schemas(self, before) {
            return self.docs.keys().chain(before.docs.keys()).map(|p| p.to_string()).collect();
        }
        let mut out: BTreeSet<String> = changed.iter().cloned().collect();
        self.views_affected_by(before, changed, &mut out);
        let mut ids = HashSet::new();
        for path in changed {
            for snapshot in [before, self] {
                if let Some(doc) = snapshot.docs.get(path.as_str()) {
                    ids.extend(doc.entities.iter().filter_map(|e| e.id.clone()));
                }
            }
        }
        for id in &ids {
            // What other documents say about an id (dangling-ref, ref-type, duplicate-id)
            // depends only on where it is defined and its type: unchanged, they are unaffected.
            fn places<'a>(a: &'a Analysis, id: &str) -> Vec<&'a str> {
                let mut paths: Vec<&str> = a.entity(id).iter().map(|l| &*l.path).collect();
                paths.sort_unstable();
                paths
            }
            if places(before, id) == places(self, id) && before.type_of(id) == self.type_of(id) {
                continue;
            }
            for snapshot in [before, self] {
                out.extend(snapshot.entity(id).iter().map(|loc| loc.path.to_string()));
                let referring =
                    snapshot.referrers.get(id.as_str()).into_iter().flat_map(|v| v.iter());
                out.extend(referring.map(|p| p.to_string()));
            }
        }
        out
    }

    /// The value of type `T` that `build` derives from this snapshot, built the first time
    /// it is asked for and kept as long as the snapshot. Each type has its own slot.
    pub(crate) fn derived<T: std::any::Any + Send + Sync>(
        &self,
        build: impl FnOnce(&Analysis) -> T,
    ) -> Arc<T> {
        self.memo.get_or_init(|| build(self))
    }

    /// The value of type `T` derived from this snapshot, if it has been built.
    pub(crate) fn derived_if_built<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.memo.get()
    }

    pub fn context(&self) -> &Arc<StoreContext> {
        &self.ctx
    }

    pub fn config(&self) -> &Config {
        &self.ctx.config
    }

    pub fn document(&self, path: &str) -> Option<&Arc<Document>> {
        self.docs.get(path)
    }

    /// Documents in path order.
    pub fn documents(&self) -> impl Iterator<Item = &Arc<Document>> {
        self.docs.values()
    }

    /// The paths of the documents in the folder `folder` and its subfolders, in order; costs
    /// what it finds, not the store's documents.
    pub fn document_paths_under(&self, folder: &str) -> Vec<String> {
        self.docs.keys_under(folder).map(|p| p.to_string()).collect()
    }

    pub fn document_count(&self) -> usize {
        self.docs.len()
    }

    /// Number of distinct entity ids.
    pub fn entity_count(&self) -> usize {
        self.ids.len()
    }

    /// Where the entity `id` is defined (several places for a duplicate id).
    pub fn entity(&self, id: &str) -> &[EntityLoc] {
        self.ids.get(id).map_or(&[], |locs| locs.as_slice())
    }

    /// The documents holding a reference to `id`, each once, in path order.
    pub fn referrers(&self, id: &str) -> Vec<&str> {
        let mut paths: Vec<&str> =
            self.referrers.get(id).into_iter().flat_map(|v| v.iter()).map(|p| &**p).collect();
        paths.sort_unstable();
        paths.dedup();
        paths
    }

    /// Whether the document at `path` is the store's data (SPEC §24): it holds entities, a
    /// schema of the store governs it (its `$schema` names one the store holds, by path,
    /// `$id` or `[[schema]] url`, or a `[[schema]]` glob associates one), or it is a schema. A project's own JSON (`package.json`, a fixture, a
    /// configuration naming a schema the store does not hold) is not.
    pub fn is_data(&self, path: &str) -> bool {
        let Some(doc) = self.docs.get(path) else { return false };
        !doc.entities.is_empty()
            || self.is_schema(path)
            || doc.named_schema().is_some_and(|(uri, _)| {
                matches!(self.schema_set.target(&self.ctx.config, &self.docs, uri), Target::Key(_))
            })
            || self.ctx.config.schema_globs.iter().any(|g| g.matcher.is_match(path))
    }

    /// Whether the document at `path` is a JSON Schema (SPEC §23): it holds no entities and
    /// is compiled as a schema.
    pub fn is_schema(&self, path: &str) -> bool {
        self.schema_set.paths.contains(path)
    }

    /// The store path and JSON Pointer tokens of the schema a reference resolved to `uri`
    /// names (a store path, a `[[schema]] url`, or a schema's `$id`); `None` when the store
    /// holds nothing there.
    pub fn schema_at(&self, uri: &str) -> Option<(String, Vec<String>)> {
        self.schema_set.locate(uri)
    }

    /// The type of entity `id`.
    pub fn type_of(&self, id: &str) -> Option<&str> {
        self.types.get(id).map(|ty| &**ty)
    }

    /// The store-relative path of the schema of entity type `ty`, with its compiled form, if
    /// the store has it.
    pub fn type_schema(&self, ty: &str) -> Option<(String, &Compiled)> {
        let path = self.ctx.config.type_schema_path(ty);
        let compiled = self.schemas.get(&path)?;
        Some((path, compiled))
    }

    /// Every diagnostic of the document at `path`, in source order.
    pub fn diagnostics_of(&self, path: &str) -> Vec<Diagnostic> {
        self.docs.get(path).map_or_else(Vec::new, |doc| self.diagnostics_of_document(doc))
    }

    fn diagnostics_of_document(&self, doc: &Document) -> Vec<Diagnostic> {
        let mut out = doc.local.clone();
        if let Some(v) = self.validation.get(doc.path.as_str()) {
            out.extend(v.iter().cloned());
        }
        out.extend(self.duplicate_ids(doc));
        out.extend(self.dangling_refs(doc));
        out.extend(self.view_problems(doc));
        out.sort_by_key(|d| (d.span.start, d.span.end, d.code));
        out
    }

    /// Every diagnostic of the store, by document path.
    pub fn all_diagnostics(&self) -> Vec<(String, Vec<Diagnostic>)> {
        self.docs
            .values()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|doc| (doc.path.clone(), self.diagnostics_of_document(doc)))
            .filter(|(_, diags)| !diags.is_empty())
            .collect()
    }

    fn duplicate_ids(&self, doc: &Document) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for (index, entity) in doc.entities.iter().enumerate() {
            let Some(id) = &entity.id else { continue };
            let mut locs = self.entity(id).to_vec();
            if locs.len() < 2 {
                continue;
            }
            locs.sort_by(|a, b| a.path.cmp(&b.path).then(a.index.cmp(&b.index)));
            let related: Vec<Related> = locs
                .iter()
                .filter(|loc| !(*loc.path == *doc.path && loc.index == index))
                .filter_map(|loc| {
                    let other = self.docs.get(&loc.path)?.entities.get(loc.index)?;
                    Some(Related {
                        path: loc.path.to_string(),
                        span: other.id_span,
                        message: format!("'{id}' is also defined here"),
                    })
                })
                .collect();
            let elsewhere: Vec<&str> = related.iter().map(|r| r.path.as_str()).collect();
            out.push(
                Diagnostic::new(
                    DiagnosticCode::DuplicateId,
                    entity.id_span,
                    format!(
                        "the id '{id}' is used by {} entities (also in {}); ids must be unique, rename all but one",
                        locs.len(),
                        elsewhere.join(", ")
                    ),
                )
                .with_related(related)
                .with_data(json!({"id": id})),
            );
        }
        out
    }

    fn dangling_refs(&self, doc: &Document) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for reference in &doc.references {
            let target = &reference.target;
            if self.ids.contains_key(target.as_str()) {
                continue;
            }
            let diagnostic = if let Some(problem) = model::id_problem(target) {
                Diagnostic::new(
                    DiagnosticCode::DanglingRef,
                    reference.span,
                    format!(
                        "'@{target}' is not a valid reference: {problem}; write '@@' to start a string with a literal '@'"
                    ),
                )
                .with_data(json!({"id": target, "candidates": []}))
            } else {
                let candidates = self.closest_ids(target, 3);
                let hint = match candidates.as_slice() {
                    [] => "create it or fix the reference".to_owned(),
                    [one] => format!("did you mean '@{one}'?"),
                    many => format!(
                        "did you mean {}?",
                        many.iter().map(|c| format!("'@{c}'")).collect::<Vec<_>>().join(", ")
                    ),
                };
                Diagnostic::new(
                    DiagnosticCode::DanglingRef,
                    reference.span,
                    format!("no entity has the id '{target}'; {hint}"),
                )
                .with_data(json!({"id": target, "candidates": candidates}))
            };
            out.push(diagnostic);
        }
        out
    }

    /// Up to `n` existing ids closest to `target` by edit distance, nearest first.
    pub fn closest_ids(&self, target: &str, n: usize) -> Vec<String> {
        let limit = (target.chars().count() / 3).max(2);
        let target_len = target.chars().count();
        let mut scored: Vec<(usize, &Arc<str>)> = self
            .ids
            .keys()
            .filter(|id| id.len().abs_diff(target.len()) <= limit * 4)
            .filter(|id| id.chars().count().abs_diff(target_len) <= limit)
            .filter_map(|id| {
                let d = model::edit_distance(target, id);
                (d <= limit).then_some((d, id))
            })
            .collect();
        scored.sort();
        scored.into_iter().take(n).map(|(_, id)| id.to_string()).collect()
    }
}

/// Add a document's entities and references to the indexes, noting the ids involved.
fn index(ids: &mut Ids, referrers: &mut Referrers, doc: &Document, touched: &mut HashSet<String>) {
    let path: Arc<str> = doc.path.as_str().into();
    for (index, entity) in doc.entities.iter().enumerate() {
        let Some(id) = &entity.id else { continue };
        Arc::make_mut(ids.get_or_insert_default(id.as_str().into()))
            .push(EntityLoc { path: path.clone(), index });
        touched.insert(id.clone());
    }
    for reference in &doc.references {
        Arc::make_mut(referrers.get_or_insert_default(reference.target.as_str().into()))
            .push(path.clone());
    }
}

/// Remove a document's entities and references from the indexes, noting the ids involved.
fn unindex(
    ids: &mut Ids,
    referrers: &mut Referrers,
    doc: &Document,
    touched: &mut HashSet<String>,
) {
    for entity in &doc.entities {
        let Some(id) = &entity.id else { continue };
        if let Some(locs) = ids.get_mut(id.as_str()) {
            let locs = Arc::make_mut(locs);
            locs.retain(|loc| *loc.path != *doc.path);
            if locs.is_empty() {
                ids.remove(id.as_str());
            }
        }
        touched.insert(id.clone());
    }
    for reference in &doc.references {
        if let Some(paths) = referrers.get_mut(reference.target.as_str()) {
            let paths = Arc::make_mut(paths);
            paths.retain(|p| **p != *doc.path);
            if paths.is_empty() {
                referrers.remove(reference.target.as_str());
            }
        }
    }
}

/// Add one entity of the document at `path` and its references to the indexes, each in the
/// place a fresh index would give it (locations and referrers in path and entity order).
fn index_entity(
    ids: &mut Ids,
    referrers: &mut Referrers,
    path: &Arc<str>,
    index: usize,
    entity: &Entity,
    refs: &[&Reference],
    touched: &mut HashSet<String>,
) {
    if let Some(id) = &entity.id {
        let locs = Arc::make_mut(ids.get_or_insert_default(id.as_str().into()));
        let at = locs.partition_point(|l| (&*l.path, l.index) < (&**path, index));
        locs.insert(at, EntityLoc { path: path.clone(), index });
        touched.insert(id.clone());
    }
    for reference in refs {
        let paths =
            Arc::make_mut(referrers.get_or_insert_default(reference.target.as_str().into()));
        let at = paths.partition_point(|p| **p <= **path);
        paths.insert(at, path.clone());
    }
}

/// Remove entity `index` (in its document's entity list) of the document at `path` and its
/// references from the indexes.
fn unindex_entity(
    ids: &mut Ids,
    referrers: &mut Referrers,
    path: &Arc<str>,
    index: usize,
    entity: &Entity,
    refs: &[Reference],
    touched: &mut HashSet<String>,
) {
    if let Some(id) = &entity.id {
        if let Some(locs) = ids.get_mut(id.as_str()) {
            let locs = Arc::make_mut(locs);
            locs.retain(|loc| !(*loc.path == **path && loc.index == index));
            if locs.is_empty() {
                ids.remove(id.as_str());
            }
        }
        touched.insert(id.clone());
    }
    for reference in refs {
        if let Some(paths) = referrers.get_mut(reference.target.as_str()) {
            let paths = Arc::make_mut(paths);
            if let Some(at) = paths.iter().position(|p| **p == **path) {
                paths.remove(at);
            }
            if paths.is_empty() {
                referrers.remove(reference.target.as_str());
            }
        }
    }
}

/// The type of the first entity (in path order) with `id`.
fn first_type(docs: &Docs, ids: &Ids, id: &str) -> Option<String> {
    let loc = ids.get(id)?.iter().min_by(|a, b| a.path.cmp(&b.path).then(a.index.cmp(&b.index)))?;
    Some(docs.get(&loc.path)?.entities.get(loc.index)?.ty.clone())
}

fn same_schemas(a: &Analysis, b: &Analysis) -> bool {
    a.schemas.len() == b.schemas.len()
        && a.schemas.keys().all(|p| {
            b.schemas.contains_key(p)
                && a.docs.get(p.as_str()).map(|d| &d.version)
                    == b.docs.get(p.as_str()).map(|d| &d.version)
        })
}

/// The save authority's rule (SPEC §6): the diagnostics with a code in `refuse` that `after`
/// has and `before` has not, among the documents the change of `changed` affects.
pub fn new_problems(
    before: &Analysis,
    after: &Analysis,
    changed: &[String],
    refuse: &[DiagnosticCode],
) -> Found {
    let mut out = Vec::new();
    for path in after.affected_by(before, changed) {
        let (old, new) = (before.diagnostics_of(&path), after.diagnostics_of(&path));
        let refused = unmatched(&new, &old).filter(|d| refuse.contains(&d.code));
        out.extend(refused.map(|d| (path.clone(), d.clone())));
    }
    out
}

/// Diagnostics with the store-relative path of their document.
pub type Found = Vec<(String, Diagnostic)>;

/// Every diagnostic a change adds and every one it removes, among the documents it affects
/// (a preview's delta). `new_problems` is the added ones the save authority refuses.
pub fn diagnostics_delta(
    before: &Analysis,
    after: &Analysis,
    changed: &[String],
) -> (Found, Found) {
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for path in after.affected_by(before, changed) {
        let (old, new) = (before.diagnostics_of(&path), after.diagnostics_of(&path));
        added.extend(unmatched(&new, &old).map(|d| (path.clone(), d.clone())));
        removed.extend(unmatched(&old, &new).map(|d| (path.clone(), d.clone())));
    }
    (added, removed)
}

/// The diagnostics of `these` left over after matching each of `those` once. Ranges move with
/// edits, so diagnostics match by code and message.
fn unmatched<'a>(
    these: &'a [Diagnostic],
    those: &'a [Diagnostic],
) -> impl Iterator<Item = &'a Diagnostic> {
    let mut counts: HashMap<(DiagnosticCode, &str), usize> = HashMap::new();
    for d in those {
        *counts.entry((d.code, d.message.as_str())).or_default() += 1;
    }
    these.iter().filter(move |d| match counts.get_mut(&(d.code, d.message.as_str())) {
        Some(n) if *n > 0 => {
            *n -= 1;
            false
        }
        _ => true,
    })
}

/// Compile every schema of the store (schemas.rs says which), the built-in types' schemas the
/// store does not replace, and the subschemas documents name by URI.
fn compile_schemas(
    config: &Config,
    docs: &Arc<Docs>,
    set: &Arc<Schemas>,
) -> HashMap<String, Compiled> {
    let source = Schemas::source(set, config);
    let mut jobs: Vec<(String, Option<Value>)> =
        set.readable().map(|path| (path.clone(), None)).collect();
    // A document naming part of a schema (a fragment, or a subschema's `$id`) is validated
    // against a schema that refers to that part.
    for doc in docs.values() {
        if let Some((uri, _)) = doc.named_schema()
            && let Target::Key(key) = set.target(config, docs, uri)
            && key == uri
        {
            jobs.push((key, Some(json!({"$ref": uri}))));
        }
    }
    jobs.sort_by(|a, b| a.0.cmp(&b.0));
    jobs.dedup_by(|a, b| a.0 == b.0);
    let mut compiled: HashMap<String, Compiled> = jobs
        .into_par_iter()
        .filter_map(|(key, wrapper)| {
            if let Some(wrapper) = wrapper {
                return Some((key.clone(), schema::compile(&key, &wrapper, &source)));
            }
            let doc = docs.get(key.as_str())?;
            let compiled = if doc.parse.root.is_none() || !doc.parse.errors.is_empty() {
                let message = if doc.parse.errors.is_empty() {
                    "the schema holds no value, only comments; write the schema's object"
                } else {
                    "the schema has syntax errors; fix them first"
                };
                Compiled::Invalid {
                    message: message.to_owned(),
                    pointer: Vec::new(),
                    data: json!({}),
                }
            } else {
                match set.value(&key) {
                    Some(readable) => {
                        schema::compile_readable(&key, &doc.parse.value, readable.clone(), &source)
                    }
                    None => schema::compile(&key, &doc.parse.value, &source),
                }
            };
            Some((key, compiled))
        })
        .collect();
    // Built-in types stand in for a schema the store does not have (SPEC §10).
    for (ty, schema) in builtin::types() {
        let path = config.type_schema_path(ty);
        if let std::collections::hash_map::Entry::Vacant(slot) = compiled.entry(path) {
            let builtin = schema::compile(slot.key(), schema, &source);
            slot.insert(builtin);
        }
    }
    compiled
}

/// The schema value at `path`: the store's document, or a built-in type's schema.
fn schema_value<'a>(config: &Config, docs: &'a Docs, path: &str) -> Option<&'a Value> {
    match docs.get(path) {
        Some(doc) => Some(&doc.parse.value),
        None => builtin::types()
            .into_iter()
            .find(|(ty, _)| path == config.type_schema_path(ty))
            .map(|(_, schema)| schema),
    }
}

/// Schema, unknown-type, ref-type and schema-unavailable diagnostics of one document.
fn validate_document(
    config: &Config,
    docs: &Docs,
    set: &Schemas,
    schemas: &HashMap<String, Compiled>,
    doc: &Document,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(root) = &doc.parse.root else { return out };

    // The document is itself a schema that does not compile, or whose identifiers are wrong.
    if let Some(problems) = set.problems.get(&doc.path) {
        out.extend(problems.iter().cloned());
    }
    if let Some(Compiled::Invalid { message, pointer, data }) = schemas.get(&doc.path) {
        let brace = Span::new(root.span.start, (root.span.start + 1).min(root.span.end));
        let span = match root.at_pointer(&doc.parse.value, pointer) {
            Some((node, _, _)) if !pointer.is_empty() => node.span,
            _ => brace,
        };
        if doc.parse.errors.is_empty() {
            out.push(
                Diagnostic::new(DiagnosticCode::Schema, span, message.clone())
                    .with_data(data.clone()),
            );
        }
    }

    // Each entity against the schema of its type.
    for i in 0..doc.entities.len() {
        out.extend(validate_entity(config, docs, schemas, doc, i));
    }

    // The document against the schema it names or a `[[schema]]` glob associates, each schema
    // once however many associations name it.
    let mut associated: Vec<(Target, String, Span)> = Vec::new();
    // A schema whose `$schema` cannot be used does not compile, and its own diagnostic says
    // why: the same problem gets no second diagnostic here.
    let own_invalid = matches!(schemas.get(&doc.path), Some(Compiled::Invalid { .. }));
    match &doc.dollar_schema {
        _ if own_invalid || doc.is_schema() => {}
        Some((SchemaName::Uri(uri), span)) => {
            let written = root
                .member(&doc.parse.value, "$schema")
                .and_then(|(_, v)| v.as_str())
                .unwrap_or(uri)
                .to_owned();
            associated.push((set.target(config, docs, uri), written, *span));
        }
        Some((SchemaName::Invalid(name), span)) => out.push(unavailable(
            *span,
            name,
            "it is not a URI reference; name the schema by a relative path or its URI",
        )),
        _ => {}
    }
    for glob in &config.schema_globs {
        if glob.matcher.is_match(&doc.path) {
            let target = match docs.contains_key(glob.path.as_str()) {
                true => Target::Key(glob.path.clone()),
                false => Target::Unavailable(format!(
                    "'{}' ([[schema]] glob '{}') is not a document of the store; create it or fix \
                     the path",
                    glob.path, glob.glob
                )),
            };
            associated.push((
                target,
                glob.path.clone(),
                Span::new(root.span.start, root.span.start),
            ));
        }
    }
    let mut seen: Vec<Target> = Vec::new();
    for (target, written, span) in associated {
        if seen.contains(&target) {
            continue;
        }
        seen.push(target.clone());
        let key = match target {
            Target::Key(key) => key,
            Target::Unavailable(why) => {
                out.push(unavailable(span, &written, &why));
                continue;
            }
        };
        match schemas.get(&key) {
            Some(Compiled::Ok(validator)) => {
                let name = key.split('#').next().unwrap_or(&key);
                let name = name.trim_end_matches('/').rsplit('/').next().unwrap_or(name);
                let name = name.trim_end_matches(".json").trim_end_matches(".schema");
                let subject =
                    Subject { name, schema: docs.get(key.as_str()).map(|d| &d.parse.value) };
                let anchor =
                    if doc.parse.implicit_object || !matches!(root.kind, NodeKind::Object(_)) {
                        span
                    } else {
                        Span::new(root.span.start, root.span.start + 1)
                    };
                out.extend(schema::validate(validator, root, &doc.parse.value, anchor, &subject));
            }
            Some(Compiled::Invalid { message, .. }) => {
                out.push(unavailable(span, &written, &schema_problem(&key, message)));
            }
            None => out.push(unavailable(
                span,
                &written,
                &format!("'{key}' cannot be read as a schema; fix its syntax errors"),
            )),
        }
    }
    // Two associations may still report one failure alike (two schemas with one rule).
    let mut unique: Vec<Diagnostic> = Vec::with_capacity(out.len());
    for d in out {
        if !unique.iter().any(|u| u.code == d.code && u.span == d.span && u.message == d.message) {
            unique.push(d);
        }
    }
    unique
}

/// "the schema 'x' cannot be used, so this document was not validated: why".
fn unavailable(span: Span, written: &str, why: &str) -> Diagnostic {
    Diagnostic::new(
        DiagnosticCode::SchemaUnavailable,
        span,
        format!("the schema '{written}' cannot be used, so this document was not validated: {why}"),
    )
    .with_data(json!({"schema": written}))
}

/// The problem of the schema at `key`, named so the reader knows where to look.
fn schema_problem(key: &str, message: &str) -> String {
    match schema::path_of(key) {
        _ if key.contains(':') => format!("{message} (in the schema at {key})"),
        _ => format!("{key} has a problem: {message}"),
    }
}

/// Entity `i` of `doc` against the schema of its type.
fn validate_entity(
    config: &Config,
    docs: &Docs,
    schemas: &HashMap<String, Compiled>,
    doc: &Document,
    i: usize,
) -> Vec<Diagnostic> {
    let entity = &doc.entities[i];
    let ty = &entity.ty;
    let schema_path = config.type_schema_path(ty);
    let Some((node, value)) = doc.entity_node(i) else { return Vec::new() };
    match schemas.get(&schema_path) {
        Some(Compiled::Ok(validator)) => {
            let subject = Subject { name: ty, schema: schema_value(config, docs, &schema_path) };
            schema::validate(validator, node, value, entity.anchor, &subject)
        }
        Some(Compiled::Invalid { message, .. }) => {
            let span = entity.type_span;
            vec![
                Diagnostic::new(
                    DiagnosticCode::SchemaUnavailable,
                    span,
                    format!(
                        "the schema of type '{ty}' cannot be used, so this entity was not \
                         validated: {}",
                        schema_problem(&schema_path, message)
                    ),
                )
                .with_data(json!({"schema": schema_path, "type": ty})),
            ]
        }
        None => {
            let span = entity.type_span;
            vec![
                Diagnostic::new(
                    DiagnosticCode::UnknownType,
                    span,
                    format!(
                        "no schema for type '{ty}': add {schema_path} or use a known type{}",
                        known_types_hint(config, docs, schemas, ty)
                    ),
                )
                .with_data(json!({"type": ty})),
            ]
        }
    }
}

// How many shared documents an edit on this thread copied before splicing them.
#[cfg(test)]
thread_local! {
    static COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Count a document an edit copies on the edit's path (a test's measure).
fn note_copy(copied: bool) {
    #[cfg(test)]
    COPIES.with(|c| c.set(c.get() + usize::from(copied)));
    let _ = copied;
}

/// How many shared documents edits on this thread copied before splicing them.
#[cfg(test)]
pub(crate) fn copies_on_this_thread() -> usize {
    COPIES.with(std::cell::Cell::get)
}

/// Whether the whole document is validated against a schema it names or a glob associates;
/// such a validation can report anywhere in the document, so an edit re-validates it whole.
fn has_associated_schema(config: &Config, doc: &Document) -> bool {
    doc.dollar_schema.is_some() || config.schema_globs.iter().any(|g| g.matcher.is_match(&doc.path))
}

fn known_types_hint(
    config: &Config,
    docs: &Docs,
    schemas: &HashMap<String, Compiled>,
    ty: &str,
) -> String {
    let prefix = format!("{}/", config.schemas_dir.trim_end_matches('/'));
    let mut known: Vec<(usize, &str)> = schemas
        .keys()
        .filter_map(|p| Some((p, p.strip_prefix(&prefix)?.strip_suffix(".schema.json")?)))
        .filter(|(_, t)| !t.contains('/'))
        .map(|(p, t)| (p, t, model::edit_distance(ty, t)))
        // A built-in type is suggested only as a correction, not listed among the store's.
        .filter(|(p, _, d)| docs.contains_key(p.as_str()) || *d <= 2)
        .map(|(_, t, d)| (d, t))
        .collect();
    known.sort();
    match known.first() {
        Some((d, t)) if *d <= 2 => format!(" (did you mean '{t}'?)"),
        Some(_) => {
            let names: Vec<&str> = known.iter().map(|(_, t)| *t).take(8).collect();
            format!(" ({})", names.join(", "))
        }
        None => String::new(),
    }
}

//! JSON Schemas: compiling them offline, validating values, and turning failures into
//! diagnostics with exact ranges and messages a person can act on.
//!
//! Schemas resolve only inside the store: every schema gets the virtual base URI
//! `file:///__store__/<store-relative path>`, which its `$id` may move. The retriever answers
//! URIs under that base from the store's in-memory documents, and any other URI from what the
//! store knows by URI ([`Source::uri`]: the `$id`s of its schemas and `[[schema]] url`
//! entries, SPEC §23). Nothing else is ever fetched, so validation never touches the network
//! or files outside the store.
//!
//! Schemas are compiled as the configured [`Dialect`] reads them (dialect.rs).
//!
//! The keyword `x-stardust-ref` constrains a reference's target type. Whether a reference is
//! allowed depends on the target entity's type, which lives in the store's id index, so the
//! validator reads it from a per-thread context set around each validation
//! ([`with_entity_types`]). A missing target is not this keyword's concern (`dangling-ref`).

use crate::sync;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{Keyword, ReferencingError, Uri, ValidationError, Validator};
use serde_json::{Map, Value, json};

use crate::diagnostics::{Diagnostic, DiagnosticCode};
use crate::model::reference_target;
use crate::syntax::{Member, Node};
use crate::text::Span;

pub mod dialect;
mod messages;

pub use dialect::{Dialect, Draft};
use messages::Wording;

pub const REF_KEYWORD: &str = "x-stardust-ref";
/// The base URI of the store's documents: `file:///__store__/<store-relative path>`.
pub const BASE: &str = "file:///__store__/";

/// A store document's value by store-relative path.
pub type DocumentSource = Arc<dyn Fn(&str) -> Option<Arc<Value>> + Send + Sync>;
/// The schema at a URI, or why there is none.
pub type UriSource = Arc<dyn Fn(&str) -> std::result::Result<Arc<Value>, String> + Send + Sync>;

/// What a schema may reach while it compiles.
#[derive(Clone)]
pub struct Source {
    /// A store document's value by store-relative path, as the dialect reads it; `None` when
    /// the store has no such document.
    pub document: DocumentSource,
    /// The schema the store holds at a URI outside the store's base (fragment removed), or why
    /// it has none.
    pub uri: UriSource,
    pub formats: Formats,
    pub dialect: Dialect,
}

/// Schema documents by store-relative path: the one compiled and those its `$ref`s reached.
pub type Documents = HashMap<String, Arc<Value>>;

/// How `format` keywords are treated (`[validation] formats`, SPEC §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Formats {
    /// `[validation] formats` unset: `format` is an annotation, as JSON Schema 2020-12's
    /// default vocabulary says, except in a schema declaring draft 4, 6 or 7 read in the
    /// compatible dialect, where it is checked as ajv (with ajv-formats) and VS Code check it
    /// (docs/DECISIONS.md).
    #[default]
    ByDraft,
    /// `format` is an annotation only, as JSON Schema 2020-12's default vocabulary says.
    Annotate,
    /// `format` is checked: a value that is not a valid date, email, URI, ... fails.
    Assert,
}

/// A compiled schema with the documents it was built from, which messages read keywords'
/// siblings from (the limit of a failing `minContains`, say).
pub struct Schema {
    validator: Validator,
    docs: Documents,
    /// The store-relative path of the schema itself (a key of `docs`).
    path: String,
}

/// A compiled schema, or the reason it could not be compiled.
#[derive(Clone)]
pub enum Compiled {
    Ok(Arc<Schema>),
    /// The schema is invalid; `pointer` locates the problem inside the schema document when known.
    Invalid {
        message: String,
        pointer: Vec<String>,
        data: Value,
    },
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compiled::Ok(_) => f.write_str("Compiled::Ok"),
            Compiled::Invalid { message, .. } => write!(f, "Compiled::Invalid({message})"),
        }
    }
}

/// Compile the schema `value` found at store-relative `path`, as `source.dialect` reads it.
pub fn compile(path: &str, value: &Value, source: &Source) -> Compiled {
    let readable = Arc::new(dialect::readable(value, source.dialect).into_owned());
    compile_readable(path, value, readable, source)
}

/// Compile the schema `value` found at store-relative `path`, given as the dialect reads it
/// (`readable`, shared with the documents other schemas reach).
pub fn compile_readable(
    path: &str,
    value: &Value,
    readable: Arc<Value>,
    source: &Source,
) -> Compiled {
    let assert_formats = match source.formats {
        Formats::Assert => true,
        Formats::Annotate => false,
        Formats::ByDraft => {
            source.dialect == Dialect::Compatible
                && matches!(
                    dialect::declared(value),
                    Some(Draft::Draft4 | Draft::Draft6 | Draft::Draft7)
                )
        }
    };
    let value = &*readable;
    let served: Arc<Mutex<Documents>> = Arc::default();
    let options = jsonschema::options()
        .with_base_uri(format!("{BASE}{path}"))
        .with_retriever(StoreRetriever { source: source.clone(), served: served.clone() })
        .with_keyword(REF_KEYWORD, ref_keyword_factory)
        .should_validate_formats(assert_formats);
    let options = match &*META_SCHEMAS {
        Some(registry) => options.with_registry(registry),
        None => options,
    };
    let built = options.build(value);
    let mut docs = std::mem::take(&mut *sync::lock(&served));
    docs.insert(path.to_owned(), readable.clone());
    // Failures inside the schema are located by the URI its `$id` gives it.
    if let Some(id) = root_uri(path, value) {
        docs.insert(id, readable.clone());
    }
    match built {
        Ok(validator) => Compiled::Ok(Arc::new(Schema { validator, docs, path: path.to_owned() })),
        Err(err) => {
            let (message, pointer) = invalid_schema(path, value, &err, &docs, source);
            Compiled::Invalid { message, pointer, data: json!({"rule": err.kind().keyword()}) }
        }
    }
}

/// Why a URI the store holds no schema at cannot be used, and how to vendor the schema.
pub fn not_held(uri: &str) -> String {
    let name = uri.split('#').next().unwrap_or(uri).trim_end_matches('/');
    let name = name.rsplit('/').next().filter(|n| !n.is_empty() && !n.contains(':'));
    let file = match name {
        Some(n) if n.ends_with(".json") => n.to_owned(),
        Some(n) => format!("{n}.json"),
        None => "schema.json".to_owned(),
    };
    format!(
        "the store holds no schema with the URI '{uri}', and schemas are never fetched; save a \
         copy in the store and map the URI to it in stardust.toml: [[schema]] url = \"{uri}\" \
         path = \"vendor/{file}\""
    )
}

/// The URI (without fragment) the root `$id` of the schema at `path` gives it, when it has one.
fn root_uri(path: &str, value: &Value) -> Option<String> {
    let map = value.as_object()?;
    let (_, id) = dialect::identifier(map, dialect::declared(value))?;
    let base = jsonschema::uri::from_str(&format!("{BASE}{path}")).ok()?;
    let resolved = jsonschema::uri::resolve_against(&base.borrow(), id).ok()?;
    Some(resolved.as_str().split('#').next()?.to_owned())
}

/// Why the schema `value` at `path` does not compile, and where in it (a JSON Pointer's
/// tokens; empty for the whole document).
fn invalid_schema(
    path: &str,
    value: &Value,
    err: &ValidationError<'_>,
    docs: &Documents,
    source: &Source,
) -> (String, Vec<String>) {
    if let ValidationErrorKind::Referencing(inner) = err.kind() {
        // The error names the resolved URI only: find the `$ref` (or `$schema`) that led to it,
        // so the diagnostic sits on the reference as written.
        return match locate_reference(path, value, inner) {
            Some((pointer, keyword, written)) => {
                let message = match (inner, store_path(path, &written)) {
                    // A `$schema` naming a document of the store: say which of the two ways
                    // it cannot be used applies.
                    (ReferencingError::UnknownSpecification { .. }, Some(target)) => {
                        let exists = (source.document)(&target).is_some();
                        messages::store_meta_schema(&written, &target, exists)
                    }
                    _ => messages::referencing(inner, Some((&keyword, &written))),
                };
                (message, pointer)
            }
            None => match identifiers(path, value).into_iter().find(|id| id.uri.is_none()) {
                // An identifier that is not a URI reference.
                Some(id) if matches!(inner, ReferencingError::InvalidUri(_)) => {
                    let mut pointer = id.pointer;
                    pointer.push(id.key.to_owned());
                    let message = format!(
                        "this schema is invalid: the {} '{}' is not a URI; write an absolute URI \
                         such as \"https://example.com/schemas/name.json\", or a reference \
                         relative to the schema's base",
                        id.key, id.written
                    );
                    (message, pointer)
                }
                _ => (messages::referencing(inner, None), Vec::new()),
            },
        };
    }
    let pointer = segments(err.instance_path());
    let at = match err.instance_path().as_str() {
        "" => "at the root".to_owned(),
        p => format!("at {p}"),
    };
    let message = if let ValidationErrorKind::Custom { message, .. } = err.kind() {
        // Raised while compiling a keyword (ours, `x-stardust-ref`, among them): the message
        // is the keyword's own.
        format!("this schema is invalid: {} ({at})", messages::lowercase_first(message))
    } else if pointer.last().map(String::as_str) == Some("type") {
        format!(
            "this schema is invalid: {} is not a JSON Schema type; use one of array, boolean, \
             integer, null, number, object, string ({at})",
            err.instance()
        )
    } else {
        let wording = Wording { docs, root: path, place: &|_| at.clone() };
        format!("this schema is invalid: {}", wording.message(err))
    };
    (message, pointer)
}

/// `reference` resolved against the store document at `path` (`file:///__store__/<path>`);
/// `None` when it is not a URI reference.
pub fn resolve(path: &str, reference: &str) -> Option<String> {
    let base = jsonschema::uri::from_str(&format!("{BASE}{path}")).ok()?;
    let resolved = jsonschema::uri::resolve_against(&base.borrow(), reference).ok()?;
    Some(resolved.as_str().to_owned())
}

/// The store-relative path of a resolved URI under the store's base, its fragment dropped.
pub fn path_of(uri: &str) -> Option<&str> {
    uri.split('#').next()?.strip_prefix(BASE)
}

/// Every identifier of the schema `value` at store-relative `path` as its draft reads them
/// (the root's and its subschemas'), each with the pointer to the object it identifies, the key
/// it is written under (`$id`, or draft 4's `id`) and the URI it resolves to against the base
/// in force there (without its fragment), or `None` when it is not a URI reference.
pub fn identifiers(path: &str, value: &Value) -> Vec<Identifier> {
    let mut out = Vec::new();
    let Ok(base) = jsonschema::uri::from_str(&format!("{BASE}{path}")) else { return out };
    identifiers_in(value, &base, dialect::declared(value), &mut Vec::new(), &mut out);
    out
}

/// One identifier of a schema (see [`identifiers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identifier {
    pub pointer: Vec<String>,
    pub key: &'static str,
    pub written: String,
    pub uri: Option<String>,
}

fn identifiers_in(
    value: &Value,
    base: &Uri<String>,
    draft: Option<Draft>,
    pointer: &mut Vec<String>,
    out: &mut Vec<Identifier>,
) {
    match value {
        Value::Object(map) => {
            let draft = dialect::declared(value).or(draft);
            let mut moved = None;
            if let Some((key, id)) = dialect::identifier(map, draft) {
                moved = jsonschema::uri::resolve_against(&base.borrow(), id).ok();
                let uri =
                    moved.as_ref().map(|u| u.as_str().split('#').next().unwrap_or("").to_owned());
                out.push(Identifier { pointer: pointer.clone(), key, written: id.to_owned(), uri });
            }
            let base = moved.as_ref().unwrap_or(base);
            for (key, v) in map {
                if matches!(key.as_str(), "enum" | "const" | "default" | "examples" | "example")
                    || key.starts_with("x-")
                {
                    continue;
                }
                pointer.push(key.clone());
                identifiers_in(v, base, draft, pointer, out);
                pointer.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointer.push(i.to_string());
                identifiers_in(v, base, draft, pointer, out);
                pointer.pop();
            }
        }
        _ => {}
    }
}

/// The store-relative path `reference` names when resolved against the schema at `path`, if
/// it stays inside the store (the fragment dropped).
pub fn store_path(path: &str, reference: &str) -> Option<String> {
    let base = jsonschema::uri::from_str(&format!("{BASE}{path}")).ok()?;
    let resolved = jsonschema::uri::resolve_against(&base.borrow(), reference).ok()?;
    let target = resolved.as_str().split('#').next()?.strip_prefix(BASE)?;
    Some(target.to_owned())
}

/// The reference of the schema `value` at `path` that `error` is about: the pointer to the
/// reference's value, the keyword (`$ref`, `$dynamicRef`, `$schema`, ...) and the reference as
/// written. References resolve against the base in force where they stand (`$id` moves it).
fn locate_reference(
    path: &str,
    value: &Value,
    error: &ReferencingError,
) -> Option<(Vec<String>, String, String)> {
    let base = jsonschema::uri::from_str(&format!("{BASE}{path}")).ok()?;
    let mut found = None;
    walk_references(value, &base, &mut Vec::new(), &mut |r| {
        if found.is_none() && is_culprit(error, r.keyword, r.written, r.base) {
            found = Some((r.pointer.to_vec(), r.keyword.to_owned(), r.written.to_owned()));
        }
    });
    found
}

fn is_culprit(error: &ReferencingError, keyword: &str, written: &str, base: &Uri<String>) -> bool {
    let resolved = jsonschema::uri::resolve_against(&base.borrow(), written);
    let fragment = written.split_once('#').map(|(_, f)| f);
    match error {
        ReferencingError::Unretrievable { uri, .. } => resolved.is_ok_and(|r| {
            let r = r.as_str();
            r.split('#').next() == Some(uri.split('#').next().unwrap_or(uri))
        }),
        ReferencingError::PointerToNowhere { pointer }
        | ReferencingError::InvalidPercentEncoding { pointer, .. }
        | ReferencingError::InvalidArrayIndex { pointer, .. } => fragment == Some(pointer.as_str()),
        ReferencingError::NoSuchAnchor { anchor } | ReferencingError::InvalidAnchor { anchor } => {
            fragment == Some(anchor.as_str())
        }
        ReferencingError::InvalidUri(_) => resolved.is_err(),
        ReferencingError::UnknownSpecification { specification } => {
            keyword == "$schema"
                && written.trim_end_matches('#') == specification.trim_end_matches('#')
        }
        ReferencingError::CircularMetaschema { .. } => keyword == "$schema",
    }
}

/// One reference of a schema: where its value is, its keyword and text, and the base URI it
/// resolves against.
struct Reference<'a> {
    pointer: &'a [String],
    keyword: &'a str,
    written: &'a str,
    base: &'a Uri<String>,
}

/// Call `f` with every reference of `value`, each with the base in force where it stands (an
/// identifier moves it as the draft there reads identifiers).
fn walk_references(
    value: &Value,
    base: &Uri<String>,
    pointer: &mut Vec<String>,
    f: &mut dyn FnMut(Reference<'_>),
) {
    walk_references_in(value, base, dialect::declared(value), pointer, f);
}

fn walk_references_in(
    value: &Value,
    base: &Uri<String>,
    draft: Option<Draft>,
    pointer: &mut Vec<String>,
    f: &mut dyn FnMut(Reference<'_>),
) {
    match value {
        Value::Object(map) => {
            let draft = dialect::declared(value).or(draft);
            let moved = dialect::identifier(map, draft)
                .and_then(|(_, id)| jsonschema::uri::resolve_against(&base.borrow(), id).ok());
            let base = moved.as_ref().unwrap_or(base);
            for (key, v) in map {
                if matches!(key.as_str(), "enum" | "const" | "default" | "examples" | "example") {
                    continue;
                }
                pointer.push(key.clone());
                match (key.as_str(), v) {
                    ("$ref" | "$dynamicRef" | "$recursiveRef" | "$schema", Value::String(s)) => {
                        f(Reference { pointer, keyword: key, written: s, base });
                    }
                    _ => walk_references_in(v, base, draft, pointer, f),
                }
                pointer.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointer.push(i.to_string());
                walk_references_in(v, base, draft, pointer, f);
                pointer.pop();
            }
        }
        _ => {}
    }
}

/// Every reference of the schema `value` at store-relative `path` (`$ref`, `$dynamicRef`,
/// `$recursiveRef` and nested `$schema`s, the root `$schema` too) resolved against the base in
/// force where it stands, with the pointer to its value. A reference that is not a valid URI
/// reference is left out.
pub fn references(path: &str, value: &Value) -> Vec<(Vec<String>, String, String)> {
    let mut out = Vec::new();
    let Ok(base) = jsonschema::uri::from_str(&format!("{BASE}{path}")) else { return out };
    walk_references(value, &base, &mut Vec::new(), &mut |r| {
        if let Ok(resolved) = jsonschema::uri::resolve_against(&r.base.borrow(), r.written) {
            out.push((r.pointer.to_vec(), r.keyword.to_owned(), resolved.as_str().to_owned()));
        }
    });
    out
}

struct StoreRetriever {
    source: Source,
    /// Every document served, by store-relative path (by URI for one the store knows by URI),
    /// for [`Schema::docs`].
    served: Arc<Mutex<Documents>>,
}

impl jsonschema::Retrieve for StoreRetriever {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let uri = uri.as_str();
        let (key, value) = match uri.strip_prefix(BASE) {
            Some(path) => {
                let value = (self.source.document)(path)
                    .ok_or_else(|| format!("'{path}' is not a document of the store"))?;
                (path, value)
            }
            None if uri.starts_with("file:") => {
                return Err(format!("refused to read '{uri}'").into());
            }
            None => (uri, (self.source.uri)(uri)?),
        };
        let owned = (*value).clone();
        sync::lock(&self.served).insert(key.to_owned(), value);
        Ok(owned)
    }
}

/// The draft 4, 6 and 7 meta-schemas (jsonschema's copies), which a schema of another draft
/// may `$ref`: jsonschema preloads only the meta-schemas of the root schema's draft, and a
/// schema read in the compatible dialect is a 2019-09 one.
static META_SCHEMAS: LazyLock<Option<jsonschema::Registry<'static>>> = LazyLock::new(|| {
    let drafts: [(&str, &'static Arc<Value>); 3] = [
        ("draft-04", &referencing::meta::DRAFT4),
        ("draft-06", &referencing::meta::DRAFT6),
        ("draft-07", &referencing::meta::DRAFT7),
    ];
    let mut pairs: Vec<(String, &'static Value)> = Vec::new();
    for (draft, value) in drafts {
        for scheme in ["http", "https"] {
            pairs.push((format!("{scheme}://json-schema.org/{draft}/schema"), &**value));
        }
    }
    jsonschema::Registry::new().extend(pairs).and_then(|b| b.prepare()).ok()
});

thread_local! {
    static ENTITY_TYPES: RefCell<Option<Arc<dyn EntityTypes>>> = const { RefCell::new(None) };
}

/// The type of each entity of the store, by id, as `x-stardust-ref` needs it.
pub trait EntityTypes: Send + Sync {
    fn type_of(&self, id: &str) -> Option<&str>;
}

impl EntityTypes for HashMap<String, String> {
    fn type_of(&self, id: &str) -> Option<&str> {
        self.get(id).map(String::as_str)
    }
}

/// Run `f` with `types` as the entity types `x-stardust-ref` checks against on this thread.
pub fn with_entity_types<R>(types: Arc<dyn EntityTypes>, f: impl FnOnce() -> R) -> R {
    let previous = ENTITY_TYPES.with(|cell| cell.replace(Some(types)));
    let result = f();
    ENTITY_TYPES.with(|cell| *cell.borrow_mut() = previous);
    result
}

fn ref_keyword_factory<'a>(
    _parent: &'a Map<String, Value>,
    value: &'a Value,
    _path: jsonschema::paths::Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let allowed: Vec<String> = match value {
        Value::String(ty) => vec![ty.clone()],
        Value::Array(items) if items.iter().all(Value::is_string) => {
            items.iter().filter_map(Value::as_str).map(str::to_owned).collect()
        }
        _ => {
            return Err(ValidationError::custom(format!(
                "{REF_KEYWORD} must be a type name or a list of type names"
            )));
        }
    };
    Ok(Box::new(RefKeyword { allowed }))
}

struct RefKeyword {
    allowed: Vec<String>,
}

impl RefKeyword {
    /// The type of the referenced entity when it is not allowed.
    fn violation(&self, instance: &Value) -> Option<(String, String)> {
        let target = instance.as_str().and_then(reference_target)?;
        ENTITY_TYPES.with(|cell| {
            let types = cell.borrow();
            let ty = types.as_ref()?.type_of(target)?;
            (!self.allowed.iter().any(|a| a == ty)).then(|| (target.to_owned(), ty.to_owned()))
        })
    }
}

impl<'i> Keyword<'i> for RefKeyword {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.violation(instance) {
            None => Ok(()),
            Some((target, ty)) => Err(ValidationError::custom(format!(
                "'@{target}' is a {ty}, but this reference must name {}",
                one_of(&self.allowed, "a ")
            ))),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.violation(instance).is_none()
    }
}

fn one_of(types: &[String], article: &str) -> String {
    match types {
        [one] => format!("{article}{one}"),
        _ => format!("one of {}", types.join(", ")),
    }
}

/// What a validation is about, for messages: "book.status".
pub struct Subject<'a> {
    /// The entity type, or the schema's name for documents that are not entities.
    pub name: &'a str,
    /// The schema value, to read defaults and allowed properties for repairs.
    pub schema: Option<&'a Value>,
}

/// Validate `value` (whose tree is `node`) and turn every failure into a diagnostic.
pub fn validate(
    schema: &Schema,
    node: &Node,
    value: &Value,
    anchor: Span,
    subject: &Subject<'_>,
) -> Vec<Diagnostic> {
    let place = |location: &jsonschema::paths::Location| place(subject.name, &segments(location));
    let wording = Wording { docs: &schema.docs, root: &schema.path, place: &place };
    let mut out = Vec::new();
    for err in schema.validator.iter_errors(value) {
        let pointer = segments(err.instance_path());
        let located = node.at_pointer(value, &pointer);
        let (target, member) = match located {
            Some((n, _, m)) => (n, m),
            None => (node, None),
        };
        let site = Site {
            node: target,
            member,
            instance: value_at(value, &pointer),
            anchor,
            place: place(err.instance_path()),
        };
        out.extend(diagnose(&err, &site, subject, &wording));
    }
    out
}

/// "book.rights.holder": the subject's name, then the instance location's tokens.
fn place(name: &str, pointer: &[String]) -> String {
    if pointer.is_empty() { name.to_owned() } else { format!("{name}.{}", pointer.join(".")) }
}

/// Where a failure is: the instance's node (and its member, when it is an object's value),
/// its value, the caller's anchor for the validated root, and its place in messages.
struct Site<'a> {
    node: &'a Node,
    member: Option<&'a Member>,
    instance: &'a Value,
    anchor: Span,
    place: String,
}

fn value_at<'a>(value: &'a Value, pointer: &[String]) -> &'a Value {
    let mut v = value;
    for token in pointer {
        v = match v {
            Value::Object(map) => map.get(token.as_str()).unwrap_or(&Value::Null),
            Value::Array(items) => {
                token.parse::<usize>().ok().and_then(|i| items.get(i)).unwrap_or(&Value::Null)
            }
            _ => &Value::Null,
        };
    }
    v
}

fn segments(location: &jsonschema::paths::Location) -> Vec<String> {
    location
        .segments()
        .map(|s| match s {
            LocationSegment::Property(p) => p.into_owned(),
            LocationSegment::Index(i) => i.to_string(),
        })
        .collect()
}

/// The span that stands for an object as a whole: its key when it is a member's value, its
/// opening brace otherwise.
fn object_span(node: &Node, member: Option<&Member>) -> Span {
    match member {
        Some(m) => m.key,
        None => Span::new(node.span.start, (node.span.start + 1).min(node.span.end)),
    }
}

fn diagnose(
    err: &ValidationError<'_>,
    site: &Site<'_>,
    subject: &Subject<'_>,
    wording: &Wording<'_>,
) -> Vec<Diagnostic> {
    let Site { node, member, instance, anchor, place } = site;
    let (node, place) = (*node, place.as_str());
    let pointer = err.instance_path().as_str().to_owned();
    let rule = err.kind().keyword().to_owned();
    let schema_diag = |span: Span, message: String, extra: Value| {
        let mut data = json!({"rule": rule, "pointer": pointer});
        if let (Value::Object(data), Value::Object(extra)) = (&mut data, extra) {
            data.extend(extra);
        }
        Diagnostic::new(DiagnosticCode::Schema, span, message).with_data(data)
    };
    match err.kind() {
        ValidationErrorKind::Custom { keyword, message } if keyword == REF_KEYWORD => {
            vec![
                Diagnostic::new(DiagnosticCode::RefType, node.span, format!("{message} ({place})"))
                    .with_data(json!({"pointer": pointer})),
            ]
        }
        ValidationErrorKind::Enum { options } => vec![schema_diag(
            node.span,
            wording.message_at(err, place),
            json!({"allowed": options.as_ref()}),
        )],
        ValidationErrorKind::Constant { expected_value } => vec![schema_diag(
            node.span,
            wording.message_at(err, place),
            json!({"allowed": [expected_value.as_ref()]}),
        )],
        ValidationErrorKind::Type { .. } => {
            let expected = wording.parts(err).expected;
            vec![schema_diag(node.span, wording.message_at(err, place), json!({"expected": expected}))]
        }
        ValidationErrorKind::Format { format } => vec![schema_diag(
            node.span,
            wording.message_at(err, &format!("{place}, format '{format}'")),
            json!({"format": format}),
        )],
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let default = subject
                .schema
                .and_then(|s| property_schema(s, err.schema_path(), name))
                .and_then(|p| p.get("default").cloned());
            // The validated root has no key of its own here: use the caller's anchor.
            let span = if pointer.is_empty() { *anchor } else { object_span(node, *member) };
            let because = wording
                .required_by(err, name)
                .map_or_else(String::new, |t| format!(", required because '{t}' is present"));
            vec![schema_diag(
                span,
                format!("missing required property '{name}' ({place}){because}; add it"),
                json!({"property": name, "default": default}),
            )]
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => unexpected
            .iter()
            .map(|name| {
                let span = node.member(instance, name).map_or(node.span, |(m, _)| m.key);
                schema_diag(
                    span,
                    format!("unknown property '{name}' ({place}): the schema does not allow it; remove it or fix its name"),
                    json!({"property": name}),
                )
            })
            .collect(),
        ValidationErrorKind::AdditionalItems { limit } => node
            .items(instance)
            .enumerate()
            .skip(*limit)
            .map(|(i, (item, value))| {
                schema_diag(
                    item.span,
                    format!(
                        "unexpected item {} ({place}.{i}): the schema allows no items after the first {}; remove it",
                        show(value),
                        if *limit == 1 { "one".to_owned() } else { limit.to_string() }
                    ),
                    json!({"index": i}),
                )
            })
            .collect(),
        ValidationErrorKind::UnevaluatedItems { unexpected } => {
            unevaluated_items(node, instance, unexpected)
                .into_iter()
                .map(|(i, item, value)| {
                    schema_diag(
                        item.span,
                        format!(
                            "unexpected item {} ({place}.{i}): no keyword of the schema describes it (unevaluatedItems); remove it",
                            show(value)
                        ),
                        json!({"index": i}),
                    )
                })
                .collect()
        }
        ValidationErrorKind::PropertyNames { error } => {
            let name = error.instance().as_str().unwrap_or_default().to_owned();
            let span = node.member(instance, &name).map_or(node.span, |(m, _)| m.key);
            let inner = wording.parts(error);
            vec![schema_diag(
                span,
                format!(
                    "expected every property name to be {} ({place}), found the property name '{name}'; rename it",
                    inner.expected
                ),
                json!({"property": name}),
            )]
        }
        ValidationErrorKind::Referencing(inner) => vec![schema_diag(
            node.span,
            format!("{} ({place})", messages::referencing(inner, None)),
            json!({}),
        )],
        _ => vec![schema_diag(node.span, wording.message_at(err, place), json!({}))],
    }
}

/// The items `unexpected` (their JSON texts, in array order) stands for, with their index.
/// Items the schema leaves unevaluated usually trail the array, so texts are matched from
/// the end: of equal items, the later ones are taken.
fn unevaluated_items<'a>(
    node: &'a Node,
    instance: &'a Value,
    unexpected: &[String],
) -> Vec<(usize, &'a Node, &'a Value)> {
    let items: Vec<(&Node, &Value)> = node.items(instance).collect();
    let mut wanted = unexpected.iter().rev().peekable();
    let mut out = Vec::new();
    for (i, (item, value)) in items.into_iter().enumerate().rev() {
        let text = value.to_string();
        if wanted.peek().is_some_and(|w| **w == text) {
            wanted.next();
            out.push((i, item, value));
        }
    }
    out.reverse();
    out
}

/// The schema of property `name` of the object schema at `schema_path` (the path of the
/// failing `required` keyword), when it can be read without following a `$ref`.
fn property_schema<'a>(
    schema: &'a Value,
    schema_path: &jsonschema::paths::Location,
    name: &str,
) -> Option<&'a Value> {
    let mut tokens = segments(schema_path);
    if tokens.last().map(String::as_str) == Some("required") {
        tokens.pop();
    }
    let mut object = schema;
    for token in &tokens {
        object = match object {
            Value::Object(map) => map.get(token.as_str())?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    object.get("properties")?.get(name)
}

/// A value as a person reads it in a message: strings in single quotes.
pub fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// A value's kind and, for scalars, the value itself: "the string '1965'".
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string '{s}'"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

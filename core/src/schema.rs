//! JSON Schemas: compiling them offline, validating values, and turning failures into
//! diagnostics with exact ranges and messages a person can act on.
//!
//! Schemas resolve only inside the store: every schema gets the virtual base URI
//! `file:///__store__/<store-relative path>`, and the retriever answers only URIs under that
//! base, from the store's in-memory documents. Anything else (`https://...`, `/etc/...`) is
//! refused, so validation never touches the network or files outside the store.
//!
//! The keyword `x-stardust-ref` constrains a reference's target type. Whether a reference is
//! allowed depends on the target entity's type, which lives in the store's id index, so the
//! validator reads it from a per-thread context set around each validation
//! ([`with_entity_types`]). A missing target is not this keyword's concern (`dangling-ref`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{Keyword, Uri, ValidationError, Validator};
use serde_json::{Map, Value, json};

use crate::diagnostics::{Diagnostic, DiagnosticCode};
use crate::model::reference_target;
use crate::syntax::{Member, Node};
use crate::text::Span;

pub const REF_KEYWORD: &str = "x-stardust-ref";
const BASE: &str = "file:///__store__/";

/// Looks up a store document's value by store-relative path (for `$ref` resolution).
pub type SchemaSource = Arc<dyn Fn(&str) -> Option<Value> + Send + Sync>;

/// A compiled schema, or the reason it could not be compiled.
#[derive(Clone)]
pub enum Compiled {
    Ok(Arc<Validator>),
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

/// Compile the schema `value` found at store-relative `path`.
pub fn compile(path: &str, value: &Value, source: SchemaSource) -> Compiled {
    let options = jsonschema::options()
        .with_base_uri(format!("{BASE}{path}"))
        .with_retriever(StoreRetriever { source })
        .with_keyword(REF_KEYWORD, ref_keyword_factory)
        .should_validate_formats(false);
    match options.build(value) {
        Ok(validator) => Compiled::Ok(Arc::new(validator)),
        Err(err) => {
            let pointer = segments(err.instance_path());
            let message = match err.kind() {
                ValidationErrorKind::Referencing(inner) => {
                    format!("cannot resolve a $ref: {}", describe_referencing(&inner.to_string()))
                }
                _ if pointer.last().map(String::as_str) == Some("type") => format!(
                    "this schema is invalid: {} is not a JSON Schema type; use one of array, \
                     boolean, integer, null, number, object, string (at {})",
                    err.instance(),
                    err.instance_path().as_str()
                ),
                _ => format!(
                    "this schema is invalid: {} (at {})",
                    err,
                    if err.instance_path().as_str().is_empty() {
                        "the root"
                    } else {
                        err.instance_path().as_str()
                    }
                ),
            };
            Compiled::Invalid { message, pointer, data: json!({"rule": err.kind().keyword()}) }
        }
    }
}

fn describe_referencing(message: &str) -> String {
    format!("{message}; schemas resolve only inside the store (no network, no outside files)")
}

struct StoreRetriever {
    source: SchemaSource,
}

impl jsonschema::Retrieve for StoreRetriever {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let uri = uri.as_str();
        let Some(path) = uri.strip_prefix(BASE) else {
            return Err(format!("refused to fetch '{uri}'").into());
        };
        (self.source)(path).ok_or_else(|| format!("'{path}' is not a document of the store").into())
    }
}

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
    validator: &Validator,
    node: &Node,
    value: &Value,
    anchor: Span,
    subject: &Subject<'_>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for err in validator.iter_errors(value) {
        let pointer = segments(err.instance_path());
        let located = node.at_pointer(value, &pointer);
        let place = if pointer.is_empty() {
            subject.name.to_owned()
        } else {
            format!("{}.{}", subject.name, pointer.join("."))
        };
        let (target, member) = match located {
            Some((n, _, m)) => (n, m),
            None => (node, None),
        };
        out.extend(diagnose(
            &err,
            target,
            member,
            value_at(value, &pointer),
            anchor,
            &place,
            subject,
        ));
    }
    out
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
    node: &Node,
    member: Option<&Member>,
    instance: &Value,
    anchor: Span,
    place: &str,
    subject: &Subject<'_>,
) -> Vec<Diagnostic> {
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
        ValidationErrorKind::Enum { options } => {
            let allowed: Vec<String> =
                options.as_array().map(|a| a.iter().map(show).collect()).unwrap_or_default();
            vec![schema_diag(
                node.span,
                format!(
                    "expected one of {} ({place}), found {}",
                    allowed.join(", "),
                    show(instance)
                ),
                json!({"allowed": options.as_ref()}),
            )]
        }
        ValidationErrorKind::Constant { expected_value } => vec![schema_diag(
            node.span,
            format!("expected {} ({place}), found {}", show(expected_value), show(instance)),
            json!({"allowed": [expected_value.as_ref()]}),
        )],
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => with_article(&t.to_string()),
                TypeKind::Multiple(set) => {
                    let names: Vec<String> = set.iter().map(|t| with_article(&t.to_string())).collect();
                    names.join(" or ")
                }
            };
            vec![schema_diag(
                node.span,
                format!("expected {expected} ({place}), found {}", describe(instance)),
                json!({"expected": expected}),
            )]
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let default = subject
                .schema
                .and_then(|s| property_schema(s, err.schema_path(), name))
                .and_then(|p| p.get("default").cloned());
            // The validated root has no key of its own here: use the caller's anchor.
            let span = if pointer.is_empty() { anchor } else { object_span(node, member) };
            vec![schema_diag(
                span,
                format!("missing required property '{name}' ({place}); add it"),
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
        ValidationErrorKind::Minimum { limit } => {
            vec![schema_diag(node.span, format!("expected at least {limit} ({place}), found {}", show(instance)), json!({}))]
        }
        ValidationErrorKind::Maximum { limit } => {
            vec![schema_diag(node.span, format!("expected at most {limit} ({place}), found {}", show(instance)), json!({}))]
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            vec![schema_diag(node.span, format!("expected more than {limit} ({place}), found {}", show(instance)), json!({}))]
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            vec![schema_diag(node.span, format!("expected less than {limit} ({place}), found {}", show(instance)), json!({}))]
        }
        ValidationErrorKind::MinLength { limit } => vec![schema_diag(
            node.span,
            format!("expected at least {limit} characters ({place}), found {}", chars(instance)),
            json!({}),
        )],
        ValidationErrorKind::MaxLength { limit } => vec![schema_diag(
            node.span,
            format!("expected at most {limit} characters ({place}), found {}", chars(instance)),
            json!({}),
        )],
        ValidationErrorKind::Pattern { pattern } => vec![schema_diag(
            node.span,
            format!("expected a string matching /{pattern}/ ({place}), found {}", show(instance)),
            json!({}),
        )],
        ValidationErrorKind::MinItems { limit } => vec![schema_diag(
            node.span,
            format!("expected at least {limit} items ({place}), found {}", len(instance)),
            json!({}),
        )],
        ValidationErrorKind::MaxItems { limit } => vec![schema_diag(
            node.span,
            format!("expected at most {limit} items ({place}), found {}", len(instance)),
            json!({}),
        )],
        ValidationErrorKind::UniqueItems => {
            vec![schema_diag(node.span, format!("expected unique items ({place}); remove the repeated ones"), json!({}))]
        }
        _ => vec![schema_diag(node.span, format!("{err} ({place})"), json!({}))],
    }
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

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string '{s}'"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn with_article(ty: &str) -> String {
    match ty {
        "null" => "null".to_owned(),
        "array" | "object" | "integer" => format!("an {ty}"),
        _ => format!("a {ty}"),
    }
}

fn chars(value: &Value) -> usize {
    value.as_str().map_or(0, |s| s.chars().count())
}

fn len(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

//! The words of schema diagnostics: for every kind of JSON Schema failure, what was expected,
//! what was found and where, so no message shows the validator's own wording (SPEC §5).
//!
//! A message is built from [`Parts`]: the expectation ("a string", "at most 3 items"), what
//! was found ("the number 1"), and advice for the person fixing it. The top-level message is
//! `expected <expectation> (<place>), found <found>[; advice]`; inside an `anyOf`/`oneOf`
//! message each alternative contributes only its expectation, so the alternatives read as one
//! sentence ("expected a string or an integer").

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::Location;
use jsonschema::{ReferencingError, ValidationError};
use serde_json::{Map, Value};

use super::{Documents, REF_KEYWORD, describe, show};

/// How many alternatives of an `anyOf`/`oneOf` a message spells out before "...".
const MAX_ALTERNATIVES: usize = 4;

/// The pieces of one failure's message.
pub(super) struct Parts {
    /// What the schema wants, as a noun phrase: "a string", "at most 3 items".
    pub expected: String,
    /// What the value is, as a noun phrase, or `None` when the expectation says it all.
    pub found: Option<String>,
    /// What to do, when "make it match" is not obvious.
    pub advice: Option<String>,
}

/// Words for failures of one schema: `place` names an instance location ("book.status"),
/// `docs` are the schema documents the validator was built from (to read a keyword's siblings,
/// such as the limit of `minContains`).
pub(super) struct Wording<'a> {
    pub docs: &'a Documents,
    /// The store-relative path of the schema validated against (a key of `docs`).
    pub root: &'a str,
    pub place: &'a dyn Fn(&Location) -> String,
}

impl Wording<'_> {
    /// The whole message of `err`.
    pub fn message(&self, err: &ValidationError<'_>) -> String {
        let place = (self.place)(err.instance_path());
        self.message_at(err, &place)
    }

    /// The whole message of `err`, its place written as `place`.
    pub fn message_at(&self, err: &ValidationError<'_>, place: &str) -> String {
        let parts = self.parts(err);
        let mut out = format!("expected {}", parts.expected);
        if !place.is_empty() {
            out.push_str(&format!(" ({place})"));
        }
        if let Some(found) = parts.found {
            out.push_str(&format!(", found {found}"));
        }
        if let Some(advice) = parts.advice {
            out.push_str(&format!("; {advice}"));
        }
        out
    }

    /// The parts of `err`'s message.
    pub fn parts(&self, err: &ValidationError<'_>) -> Parts {
        let instance: &Value = err.instance();
        let found = |s: String| Some(s);
        let plain =
            |expected: String, f: Option<String>| Parts { expected, found: f, advice: None };
        match err.kind() {
            ValidationErrorKind::AdditionalItems { limit } => Parts {
                expected: format!("no items after the first {}", count(*limit as u64, "item")),
                found: found(count(len(instance).saturating_sub(*limit) as u64, "more item")),
                advice: Some("remove them".to_owned()),
            },
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => Parts {
                expected: "no other properties".to_owned(),
                found: found(quoted_list("property", "properties", unexpected)),
                advice: Some("remove them or fix their names".to_owned()),
            },
            ValidationErrorKind::AnyOf { context } => {
                self.alternatives(err, context, "at least one", "anyOf")
            }
            ValidationErrorKind::OneOfNotValid { context } => {
                self.alternatives(err, context, "exactly one", "oneOf")
            }
            ValidationErrorKind::OneOfMultipleValid { context } => {
                let valid: Vec<String> = context
                    .iter()
                    .enumerate()
                    .filter(|(_, errors)| errors.is_empty())
                    .map(|(i, _)| (i + 1).to_string())
                    .collect();
                Parts {
                    expected: format!(
                        "a value matching exactly one of the {} oneOf alternatives",
                        context.len()
                    ),
                    found: found(format!(
                        "{} matching alternatives {}",
                        describe(instance),
                        and_list(&valid)
                    )),
                    advice: Some(
                        "make the alternatives exclusive in the schema, or change the value so \
                         only one matches"
                            .to_owned(),
                    ),
                }
            }
            ValidationErrorKind::BacktrackLimitExceeded { .. } => Parts {
                expected: self.pattern_expectation(err),
                found: found(format!(
                    "{}, which takes too much backtracking to check",
                    show(instance)
                )),
                advice: Some("simplify the schema's pattern".to_owned()),
            },
            ValidationErrorKind::RegexEngineFailure { message } => Parts {
                expected: self.pattern_expectation(err),
                found: found(format!(
                    "{}, which the regular expression engine failed on ({})",
                    show(instance),
                    lowercase_first(message)
                )),
                advice: Some("simplify the schema's pattern".to_owned()),
            },
            ValidationErrorKind::Constant { expected_value } => {
                plain(show(expected_value), found(show(instance)))
            }
            ValidationErrorKind::Contains => self.contains(err, instance),
            ValidationErrorKind::ContentEncoding { content_encoding } => {
                plain(format!("a string in {content_encoding} encoding"), found(show(instance)))
            }
            ValidationErrorKind::FromUtf8 { .. } => plain(
                "base64 text that decodes to UTF-8".to_owned(),
                found("text that decodes to bytes that are not UTF-8".to_owned()),
            ),
            ValidationErrorKind::ContentMediaType { content_media_type } => {
                plain(format!("a string holding {content_media_type}"), found(show(instance)))
            }
            ValidationErrorKind::Custom { keyword, message } if keyword == REF_KEYWORD => {
                plain(format!("a reference the schema allows: {message}"), None)
            }
            ValidationErrorKind::Custom { keyword, message } => Parts {
                expected: if keyword.is_empty() {
                    "a valid schema".to_owned()
                } else {
                    format!("a value the '{keyword}' keyword accepts")
                },
                found: found(format!("{} ({})", show(instance), lowercase_first(message))),
                advice: None,
            },
            ValidationErrorKind::Enum { options } => {
                let allowed: Vec<String> =
                    options.as_array().map(|a| a.iter().map(show).collect()).unwrap_or_default();
                plain(format!("one of {}", allowed.join(", ")), found(show(instance)))
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                plain(format!("less than {limit}"), found(show(instance)))
            }
            ValidationErrorKind::ExclusiveMinimum { limit } => {
                plain(format!("more than {limit}"), found(show(instance)))
            }
            ValidationErrorKind::Maximum { limit } => {
                plain(format!("at most {limit}"), found(show(instance)))
            }
            ValidationErrorKind::Minimum { limit } => {
                plain(format!("at least {limit}"), found(show(instance)))
            }
            ValidationErrorKind::FalseSchema => Parts {
                expected: "no value at all, as the schema here is false".to_owned(),
                found: found(describe(instance)),
                advice: Some("remove it".to_owned()),
            },
            ValidationErrorKind::Format { format } => {
                plain(format_noun(format), found(show(instance)))
            }
            ValidationErrorKind::MaxItems { limit } => plain(
                format!("at most {}", count(*limit, "item")),
                found(len(instance).to_string()),
            ),
            ValidationErrorKind::MinItems { limit } => plain(
                format!("at least {}", count(*limit, "item")),
                found(len(instance).to_string()),
            ),
            ValidationErrorKind::MaxLength { limit } => plain(
                format!("at most {}", count(*limit, "character")),
                found(chars(instance).to_string()),
            ),
            ValidationErrorKind::MinLength { limit } => plain(
                format!("at least {}", count(*limit, "character")),
                found(chars(instance).to_string()),
            ),
            ValidationErrorKind::MaxProperties { limit } => plain(
                format!("at most {}", count(*limit, "property")),
                found(properties(instance).to_string()),
            ),
            ValidationErrorKind::MinProperties { limit } => plain(
                format!("at least {}", count(*limit, "property")),
                found(properties(instance).to_string()),
            ),
            ValidationErrorKind::MultipleOf { multiple_of } => {
                plain(format!("a multiple of {multiple_of}"), found(show(instance)))
            }
            ValidationErrorKind::Not { schema } => {
                plain(not_expectation(schema), found(describe(instance)))
            }
            ValidationErrorKind::Pattern { pattern } => {
                plain(format!("a string matching /{pattern}/"), found(show(instance)))
            }
            ValidationErrorKind::PropertyNames { error } => {
                let inner = self.parts(error);
                Parts {
                    expected: format!("property names that are {}", inner.expected),
                    found: found(format!("the property name {}", show(error.instance()))),
                    advice: Some("rename the property".to_owned()),
                }
            }
            ValidationErrorKind::Required { property } => Parts {
                expected: format!("a property {}", show(property)),
                found: found("none".to_owned()),
                advice: Some("add it".to_owned()),
            },
            ValidationErrorKind::Type { kind } => {
                plain(type_expectation(kind), found(describe(instance)))
            }
            ValidationErrorKind::UnevaluatedItems { unexpected } => Parts {
                expected: "no items the schema does not describe (unevaluatedItems)".to_owned(),
                found: found(format!("{} more", count(unexpected.len() as u64, "item"))),
                advice: Some("remove them".to_owned()),
            },
            ValidationErrorKind::UniqueItems => Parts {
                expected: "unique items".to_owned(),
                found: repeated(instance).map(|v| format!("{} more than once", show(v))),
                advice: Some("remove the repeated ones".to_owned()),
            },
            ValidationErrorKind::Referencing(error) => Parts {
                expected: "a schema whose references resolve".to_owned(),
                found: found(referencing(error, None)),
                advice: None,
            },
        }
    }

    /// `anyOf` / `oneOf` with no matching alternative: the alternatives' expectations joined
    /// with "or", or, when they are too different to read as one phrase, counted.
    fn alternatives(
        &self,
        err: &ValidationError<'_>,
        context: &[Vec<ValidationError<'static>>],
        how_many: &str,
        keyword: &str,
    ) -> Parts {
        let here = err.instance_path().as_str();
        let mut phrases: Vec<String> = Vec::new();
        for branch in context.iter().take(MAX_ALTERNATIVES) {
            let mut parts: Vec<String> = Vec::new();
            for inner in branch.iter().take(2) {
                let expected = self.parts(inner).expected;
                if inner.instance_path().as_str() == here {
                    parts.push(expected);
                } else {
                    parts.push(format!("{expected} at {}", (self.place)(inner.instance_path())));
                }
            }
            if branch.len() > 2 {
                parts.push("more".to_owned());
            }
            let phrase = parts.join(" and ");
            if !phrase.is_empty() && !phrases.contains(&phrase) {
                phrases.push(phrase);
            }
        }
        if context.len() > MAX_ALTERNATIVES {
            phrases.push(format!(
                "{} more",
                count((context.len() - MAX_ALTERNATIVES) as u64, "alternative")
            ));
        }
        let expected = if phrases.is_empty() {
            format!("a value matching {how_many} of the {keyword} alternatives")
        } else {
            phrases.join(" or ")
        };
        Parts {
            expected,
            found: Some(describe(err.instance())),
            advice: (keyword == "oneOf" && context.len() > 1)
                .then(|| "exactly one alternative (oneOf) must match".to_owned()),
        }
    }

    /// `contains`, `minContains` and `maxContains` all fail as `Contains`; which one failed is
    /// the last segment of the keyword's location, and its limit is read from the schema.
    fn contains(&self, err: &ValidationError<'_>, instance: &Value) -> Parts {
        let keyword = err.schema_path().as_str().rsplit('/').next().unwrap_or("contains");
        let parent = self.keyword_parent(err);
        let limit = |name: &str| parent.and_then(|p| p.get(name)).and_then(Value::as_u64);
        let items = count(len(instance) as u64, "item");
        match (keyword, limit("minContains"), limit("maxContains")) {
            ("maxContains", _, Some(max)) => Parts {
                expected: format!("at most {} matching the schema's contains", count(max, "item")),
                found: Some(format!("more among its {items}")),
                advice: None,
            },
            ("minContains", Some(min), _) => Parts {
                expected: format!("at least {} matching the schema's contains", count(min, "item")),
                found: Some(format!("fewer among its {items}")),
                advice: None,
            },
            _ => Parts {
                expected: "at least one item matching the schema's contains".to_owned(),
                found: Some(format!("none among its {items}")),
                advice: None,
            },
        }
    }

    /// "a string matching /p/" for a `pattern` that could not be evaluated, which names no
    /// pattern of its own: it is read from the schema.
    fn pattern_expectation(&self, err: &ValidationError<'_>) -> String {
        match self.keyword_parent(err).and_then(|p| p.get("pattern")).and_then(Value::as_str) {
            Some(pattern) => format!("a string matching /{pattern}/"),
            None => "a string matching the schema's pattern".to_owned(),
        }
    }

    /// For a `required` failure raised by `dependentRequired` (or draft 7's `dependencies`),
    /// the property whose presence requires `name`.
    pub fn required_by(&self, err: &ValidationError<'_>, name: &str) -> Option<String> {
        let keyword = err.schema_path().as_str().rsplit('/').next()?;
        if keyword != "dependentRequired" && keyword != "dependencies" {
            return None;
        }
        let instance = err.instance().as_object()?;
        let rules = self.keyword_parent(err)?.get(keyword)?.as_object()?;
        rules.iter().find_map(|(trigger, required)| {
            let listed = required.as_array()?.iter().any(|r| r.as_str() == Some(name));
            (listed && instance.contains_key(trigger)).then(|| trigger.clone())
        })
    }

    /// The schema object holding the failing keyword (the last segment of its schema path),
    /// read from the documents the validator was built from by the keyword's absolute
    /// location. Some keywords carry none; their schema path is then read in the root document.
    fn keyword_parent(&self, err: &ValidationError<'_>) -> Option<&Map<String, Value>> {
        let keyword = err.schema_path().as_str().rsplit('/').next()?;
        let relative;
        let (path, fragment) = match err.absolute_keyword_location() {
            // Store documents are known by path, others by their URI.
            Some(uri) => {
                let uri = uri.as_str();
                let (document, fragment) = uri.split_once('#').unwrap_or((uri, ""));
                (document.strip_prefix(super::BASE).unwrap_or(document), fragment)
            }
            None => {
                relative = err.schema_path().as_str().to_owned();
                (self.root, relative.as_str())
            }
        };
        // The location may go on past the keyword (`dependentRequired`'s points into its
        // value): the parent is the last object on the way that the keyword is taken from.
        let mut value: &Value = self.docs.get(path)?;
        let mut parent = None;
        for token in fragment.split('/').skip(1) {
            let token = percent_decode(token).replace("~1", "/").replace("~0", "~");
            if token == keyword {
                parent = value.as_object().filter(|m| m.contains_key(&token));
            }
            let next = match value {
                Value::Object(map) => map.get(token.as_str()),
                Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            match next {
                Some(next) => value = next,
                None => break,
            }
        }
        parent
    }
}

/// Why a `$ref` (or a `$schema`) could not be used, as a whole sentence; `written` is the
/// keyword and the reference as the schema spells it, when the reference was found.
pub(super) fn referencing(error: &ReferencingError, written: Option<(&str, &str)>) -> String {
    let subject = match written {
        Some(("$schema", value)) => format!("cannot use the meta-schema '{value}'"),
        Some((keyword, value)) => format!("cannot resolve the {keyword} '{value}'"),
        None => "cannot resolve a $ref".to_owned(),
    };
    let why = match error {
        ReferencingError::Unretrievable { uri, source } => match uri.strip_prefix(super::BASE) {
            Some(path) => {
                format!("'{path}' is not a document of the store; create it or fix the reference")
            }
            None if uri.starts_with("file:") => format!(
                "it leaves the store ({uri}); schemas resolve only inside the store, so copy \
                 the schema into the store and refer to it by a relative path or its $id"
            ),
            // Written as the URI itself, the reference needs no spelling out.
            None if written.is_some_and(|(_, w)| w.split('#').next() == Some(uri.as_str())) => {
                source.to_string()
            }
            None => format!("it names {uri}: {source}"),
        },
        ReferencingError::PointerToNowhere { pointer } => {
            format!("the schema has nothing at '{pointer}'; fix the pointer")
        }
        ReferencingError::InvalidPercentEncoding { pointer, .. } => {
            format!("its pointer '{pointer}' has %-escapes that are not UTF-8; fix the pointer")
        }
        ReferencingError::InvalidArrayIndex { pointer, index, .. } => {
            format!("'{index}' in its pointer '{pointer}' is not an array index; fix the pointer")
        }
        ReferencingError::NoSuchAnchor { anchor } => format!(
            "no schema declares the anchor '{anchor}'; add \"$anchor\": \"{anchor}\" where it \
             belongs or fix the reference"
        ),
        ReferencingError::InvalidAnchor { anchor } => format!(
            "'{anchor}' cannot be an anchor (an anchor starts with a letter and holds letters, \
             digits, '-', '_', ':' and '.'); fix the reference"
        ),
        ReferencingError::InvalidUri(_) => {
            "it is not a valid URI reference; fix the reference".to_owned()
        }
        ReferencingError::UnknownSpecification { specification } => {
            let subject = match written {
                Some(_) => subject,
                None => format!("cannot use the meta-schema '{specification}'"),
            };
            return format!(
                "{subject}: it is not a JSON Schema draft Stardust knows; use \
                 \"https://json-schema.org/draft/2020-12/schema\" (or draft 2019-09, 7, 6 or 4)"
            );
        }
        ReferencingError::CircularMetaschema { uri } => format!(
            "its chain of meta-schemas comes back to '{uri}'; end the chain at a published \
             draft such as \"https://json-schema.org/draft/2020-12/schema\""
        ),
    };
    format!("{subject}: {why}")
}

/// Why a schema's `$schema` naming the store document `target` cannot be used: the document
/// is missing, or it is there but JSON Schema validation only knows the published drafts.
pub(super) fn store_meta_schema(written: &str, target: &str, exists: bool) -> String {
    let why = if exists {
        "a meta-schema of the store cannot define how a schema is read".to_owned()
    } else {
        format!("'{target}' is not a document of the store")
    };
    format!(
        "cannot use the meta-schema '{written}': {why}; use a published draft such as \
         \"https://json-schema.org/draft/2020-12/schema\""
    )
}

/// The noun phrase of a `format`, with an example of a valid value.
pub(super) fn format_noun(format: &str) -> String {
    match format {
        "date" => "a date such as 2024-05-31".to_owned(),
        "date-time" => "a date-time such as 2024-05-31T12:00:00Z".to_owned(),
        "time" => "a time such as 12:00:00Z".to_owned(),
        "duration" => "a duration such as P3D or PT1H30M".to_owned(),
        "email" | "idn-email" => "an email address such as ada@example.com".to_owned(),
        "hostname" | "idn-hostname" => "a host name such as example.com".to_owned(),
        "ipv4" => "an IPv4 address such as 192.0.2.1".to_owned(),
        "ipv6" => "an IPv6 address such as 2001:db8::1".to_owned(),
        "uri" => "an absolute URI such as https://example.com/page".to_owned(),
        "uri-reference" => "a URI reference such as ../page#top".to_owned(),
        "iri" => "an absolute IRI such as https://example.com/café".to_owned(),
        "iri-reference" => "an IRI reference such as ../café#top".to_owned(),
        "uri-template" => "a URI template such as /books/{id}".to_owned(),
        "json-pointer" => "a JSON Pointer such as /tags/0".to_owned(),
        "relative-json-pointer" => "a relative JSON Pointer such as 1/tags".to_owned(),
        "regex" => "a regular expression".to_owned(),
        "uuid" => "a UUID such as 123e4567-e89b-12d3-a456-426614174000".to_owned(),
        other => format!("a string of the format '{other}'"),
    }
}

fn type_expectation(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => with_article(&t.to_string()),
        TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| with_article(&t.to_string())).collect();
            names.join(" or ")
        }
    }
}

/// What `not` wants, in words for the common shapes of its schema.
fn not_expectation(schema: &Value) -> String {
    let keys: Vec<&str> = schema.as_object().map_or_else(Vec::new, |m| {
        m.keys().map(String::as_str).filter(|k| !matches!(*k, "title" | "description")).collect()
    });
    match (keys.as_slice(), schema) {
        (_, Value::Bool(true)) => "nothing at all (the schema is not: true)".to_owned(),
        (["type"], _) => match &schema["type"] {
            Value::String(t) => format!("anything but {}", with_article(t)),
            Value::Array(ts) => {
                let names: Vec<String> =
                    ts.iter().filter_map(Value::as_str).map(with_article).collect();
                format!("anything but {}", names.join(" or "))
            }
            other => format!("a value not matching {{\"type\": {other}}}"),
        },
        (["const"], _) => format!("anything but {}", show(&schema["const"])),
        (["enum"], _) => {
            let values: Vec<String> =
                schema["enum"].as_array().map(|a| a.iter().map(show).collect()).unwrap_or_default();
            format!("none of {}", values.join(", "))
        }
        (["required"], _) => {
            let names: Vec<String> = schema["required"]
                .as_array()
                .map(|a| a.iter().map(show).collect())
                .unwrap_or_default();
            match names.as_slice() {
                [one] => format!("no property {one}"),
                _ => format!("not all of the properties {}", names.join(", ")),
            }
        }
        _ => format!("a value that does not match {schema}"),
    }
}

fn with_article(ty: &str) -> String {
    match ty {
        "null" => "null".to_owned(),
        "array" | "object" | "integer" => format!("an {ty}"),
        _ => format!("a {ty}"),
    }
}

/// "1 item", "3 items", "1 property", "2 properties".
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if let Some(stem) = noun.strip_suffix('y') {
        format!("{n} {stem}ies")
    } else {
        format!("{n} {noun}s")
    }
}

fn quoted_list(one: &str, many: &str, names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    let noun = if names.len() == 1 { one } else { many };
    format!("the {noun} {}", and_list(&quoted))
}

fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The first value an array holds twice.
fn repeated(value: &Value) -> Option<&Value> {
    let items = value.as_array()?;
    items.iter().enumerate().find_map(|(i, v)| items[..i].contains(v).then_some(v))
}

pub(super) fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn chars(value: &Value) -> usize {
    value.as_str().map_or(0, |s| s.chars().count())
}

fn len(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

fn properties(value: &Value) -> usize {
    value.as_object().map_or(0, Map::len)
}

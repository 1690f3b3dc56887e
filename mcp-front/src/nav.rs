//! The navigation tools of SPEC §13 (`diagnostics`, `hover`, `definition`, `references`,
//! `document_symbols`, `workspace_symbols`, `describe_type`): their schemas, and the
//! conversion between tool arguments and the core's editor features.
//!
//! Places are addressed by `path` + `position {line, column}` (1-based, columns in
//! characters) or by `entity` + optional JSON `pointer`; every location in an answer uses the
//! same convention and names its entity.

use std::path::Path;

use serde_json::{Map, Value, json};
use stardust_core::Error;
use stardust_core::analysis::{Analysis, Document};
use stardust_core::diagnostics;
use stardust_core::ide::{self, Symbol, SymbolKind};

use crate::page;

/// One navigation tool's contract.
pub struct NavTool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input: Value,
    pub output: Value,
}

fn address_properties() -> Map<String, Value> {
    let props = json!({
        "path": {"type": "string", "description": "a document path, relative to the store root or absolute inside it"},
        "position": {
            "type": "object",
            "description": "1-based line and column, the column counted in characters (what grep -n and editors show)",
            "required": ["line", "column"],
            "additionalProperties": false,
            "properties": {
                "line": {"type": "integer", "minimum": 1},
                "column": {"type": "integer", "minimum": 1},
            },
        },
        "entity": {"type": "string", "description": "an entity id, instead of path and position"},
        "pointer": {"type": "string", "description": "a JSON Pointer into the entity, e.g. /author; empty for its id"},
    });
    props.as_object().cloned().unwrap_or_default()
}

fn page_properties() -> Map<String, Value> {
    let props = json!({
        "limit": {"type": "integer", "minimum": 0, "maximum": page::MAX_LIMIT, "default": page::DEFAULT_LIMIT},
        "offset": {"type": "integer", "minimum": 0, "default": 0},
    });
    props.as_object().cloned().unwrap_or_default()
}

fn object(properties: Map<String, Value>, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn paged_output(key: &str) -> Value {
    json!({
        "type": "object",
        "required": [key, "total", "nextOffset"],
        "properties": {
            key: {"type": "array"},
            "total": {"type": "integer"},
            "nextOffset": {"type": ["integer", "null"]},
            "pageShrunk": {"type": "boolean"},
        },
    })
}

/// Every navigation tool, in the order of SPEC §13.
pub fn tools() -> Vec<NavTool> {
    let address = address_properties;
    let with = |mut base: Map<String, Value>, extra: Map<String, Value>| {
        base.extend(extra);
        base
    };
    let mut diagnostics_args = page_properties();
    diagnostics_args.insert(
        "path".into(),
        json!({"type": "string", "description": "only this document; every document when absent"}),
    );
    diagnostics_args.insert("severity".into(), json!({"enum": ["error", "warning"]}));
    let mut references_args = with(address(), page_properties());
    references_args.insert(
        "includeDeclaration".into(),
        json!({"type": "boolean", "default": true, "description": "list the entity's own id first"}),
    );
    let mut document_args = page_properties();
    document_args.insert("path".into(), json!({"type": "string"}));
    let mut workspace_args = page_properties();
    workspace_args.insert(
        "query".into(),
        json!({"type": "string", "description": "characters of an id or title, in order; empty lists every entity"}),
    );
    vec![
        NavTool {
            name: "diagnostics",
            title: "List diagnostics",
            description: "The problems Stardust finds in one document or the whole store (syntax, schema, dangling references, ...), in path and source order. `data` carries what a repair needs.",
            input: object(diagnostics_args, &[]),
            output: paged_output("diagnostics"),
        },
        NavTool {
            name: "hover",
            title: "Describe what is at a place",
            description: "What the key or value at a place is: the schema's description and type of a field, or the summary of a referenced entity.",
            input: object(address(), &[]),
            output: json!({"type": "object", "required": ["hover"], "properties": {"hover": {"type": ["object", "null"]}}}),
        },
        NavTool {
            name: "definition",
            title: "Go to the definition",
            description: "Where the reference or type at a place is defined: the referenced entity's id, or the type's schema.",
            input: object(address(), &[]),
            output: paged_output("locations"),
        },
        NavTool {
            name: "references",
            title: "Find references",
            description: "Every reference to the entity whose id or reference is at a place, in path and source order.",
            input: object(references_args, &[]),
            output: paged_output("references"),
        },
        NavTool {
            name: "document_symbols",
            title: "Outline a document",
            description: "A document's entities by id, each with its members and their ranges.",
            input: object(document_args, &["path"]),
            output: paged_output("symbols"),
        },
        NavTool {
            name: "workspace_symbols",
            title: "Find entities by id or title",
            description: "Entities whose id or title matches the query fuzzily, best first.",
            input: object(workspace_args, &[]),
            output: paged_output("symbols"),
        },
        NavTool {
            name: "code_actions",
            title: "List repairs at a place",
            description: "The repairs Stardust offers for the diagnostics at a place (closest id for a dangling reference, allowed values, a missing required field with its default, an unknown field removed, a bareword quoted), each with its exact text edits, and whether the document can be converted to the other notation. Read-only: apply a repair with patch_apply (set/unset) or by saving the edited document through the mount.",
            input: object(with(address(), page_properties()), &[]),
            output: paged_output("actions"),
        },
        NavTool {
            name: "describe_type",
            title: "Describe an entity type",
            description: "A type's fields, required fields, types, allowed values, reference targets and descriptions, from its schema: what a valid new entity needs.",
            input: object(
                json!({"type": {"type": "string", "minLength": 1}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                &["type"],
            ),
            output: json!({"type": "object", "required": ["type", "schema", "required", "fields"]}),
        },
    ]
}

/// Run navigation tool `name` on `analysis` of the store at `root` (canonical).
pub fn run(
    name: &str,
    analysis: &Analysis,
    root: &Path,
    args: &Map<String, Value>,
) -> Result<Value, Error> {
    let tool = tools().into_iter().find(|t| t.name == name).ok_or_else(|| {
        Error::InvalidArguments(format!("unknown tool {name}; tools/list names every tool"))
    })?;
    check_shape(&tool, args)?;
    match name {
        "diagnostics" => diagnostics(analysis, root, args),
        "hover" => {
            let (doc, offset) = place(analysis, root, args)?;
            let hover = ide::hover(analysis, &doc.path, offset).map(|h| {
                let mut out = ide::location_json(analysis, &doc.path, h.span);
                out["markdown"] = json!(h.markdown);
                out
            });
            Ok(json!({"hover": hover}))
        }
        "definition" => {
            let (doc, offset) = place(analysis, root, args)?;
            let found = ide::definition(analysis, &doc.path, offset);
            let items =
                found.iter().map(|f| ide::location_json(analysis, &f.path, f.span)).collect();
            page::page("locations", items, args)
        }
        "references" => {
            let (doc, offset) = place(analysis, root, args)?;
            let declaration = args.get("includeDeclaration").and_then(Value::as_bool);
            let found = ide::references(analysis, &doc.path, offset, declaration.unwrap_or(true));
            let items =
                found.iter().map(|f| ide::location_json(analysis, &f.path, f.span)).collect();
            page::page("references", items, args)
        }
        "document_symbols" => {
            let doc = document(analysis, root, text(args, "path").unwrap_or_default())?;
            let items = ide::document_symbols(doc).iter().map(|s| symbol(doc, s)).collect();
            page::page("symbols", items, args)
        }
        "workspace_symbols" => {
            let query = text(args, "query").unwrap_or_default();
            let items = ide::workspace_symbols(analysis, query, usize::MAX)
                .into_iter()
                .map(|s| {
                    json!({
                        "id": s.id,
                        "type": s.ty,
                        "title": s.title,
                        "location": ide::location_json(analysis, &s.location.path, s.location.span),
                    })
                })
                .collect();
            page::page("symbols", items, args)
        }
        "code_actions" => {
            let (doc, offset) = place(analysis, root, args)?;
            let span = stardust_core::text::Span::empty(offset);
            let items = ide::code_actions(analysis, &doc.path, span)
                .iter()
                .map(|a| action(analysis, &doc.path, a))
                .collect();
            page::page("actions", items, args)
        }
        "describe_type" => ide::describe_type(analysis, text(args, "type").unwrap_or_default()),
        other => Err(Error::InvalidArguments(format!("unknown tool {other}"))),
    }
}

/// A code action as the `code_actions` tool answers it: edits with the tool's ranges.
fn action(analysis: &Analysis, path: &str, action: &ide::Action) -> Value {
    let edits: Vec<Value> = action
        .edits
        .iter()
        .map(|e| {
            let mut at = ide::location_json(analysis, path, e.span);
            at["newText"] = json!(e.text);
            at
        })
        .collect();
    json!({
        "title": action.title,
        "kind": match action.kind {
            ide::ActionKind::QuickFix => "quickfix",
            ide::ActionKind::Convert => "convert",
        },
        "preferred": action.preferred,
        "diagnostic": action.diagnostic.as_ref().map(|d| json!({"code": d.code, "message": d.message})),
        "edits": edits,
        "to": action.to.map(|l| l.as_str()),
    })
}

fn text<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// Required keys present, no unknown keys, and each value of its schema's JSON type: the
/// error names the field.
fn check_shape(tool: &NavTool, args: &Map<String, Value>) -> Result<(), Error> {
    let invalid = |msg: String| {
        Error::InvalidArguments(format!("invalid arguments for {}: {msg}", tool.name))
    };
    let properties = tool.input["properties"].as_object().cloned().unwrap_or_default();
    for required in
        tool.input["required"].as_array().into_iter().flatten().filter_map(Value::as_str)
    {
        if !args.contains_key(required) {
            return Err(invalid(format!("`{required}` is required")));
        }
    }
    for (key, value) in args {
        let Some(schema) = properties.get(key) else {
            let known: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(invalid(format!(
                "`{key}` is not an argument; the arguments are {}",
                known.join(", ")
            )));
        };
        let fits = match schema.get("type").and_then(Value::as_str) {
            Some("string") => value.is_string(),
            Some("integer") => value.is_u64(),
            Some("boolean") => value.is_boolean(),
            Some("object") => value.is_object(),
            _ => schema.get("enum").and_then(Value::as_array).is_none_or(|e| e.contains(value)),
        };
        if !fits {
            let want = schema.get("type").map_or_else(
                || format!("one of {}", schema["enum"]),
                |t| format!("a {}", t.as_str().unwrap_or("value")),
            );
            return Err(invalid(format!("`{key}` must be {want}, not {value}")));
        }
    }
    Ok(())
}

/// The document at a `path` argument.
fn document<'a>(analysis: &'a Analysis, root: &Path, given: &str) -> Result<&'a Document, Error> {
    let path = ide::store_path(root, given)?;
    analysis.document(&path).map(|d| &**d).ok_or_else(|| {
        Error::NotFound(format!(
            "{path} is not a document of the store; documents end in .json or .dust"
        ))
    })
}

/// The document and byte offset the address arguments name.
fn place<'a>(
    analysis: &'a Analysis,
    root: &Path,
    args: &Map<String, Value>,
) -> Result<(&'a Document, u32), Error> {
    if let Some(id) = text(args, "entity") {
        if args.contains_key("path") || args.contains_key("position") {
            return Err(Error::InvalidArguments(
                "give either `entity` (and `pointer`) or `path` and `position`, not both".into(),
            ));
        }
        let (path, span) = ide::entity_place(analysis, id, text(args, "pointer").unwrap_or(""))?;
        let doc = analysis
            .document(&path)
            .map(|d| &**d)
            .ok_or_else(|| Error::NotFound(format!("no entity has the id '{id}'; check the id")))?;
        return Ok((doc, span.start));
    }
    if args.contains_key("pointer") {
        return Err(Error::InvalidArguments("`pointer` goes with `entity`".into()));
    }
    let (Some(path), Some(position)) = (text(args, "path"), args.get("position")) else {
        return Err(Error::InvalidArguments(
            "give `path` and `position {line, column}` (1-based), or `entity` and an optional `pointer`"
                .into(),
        ));
    };
    let number = |key: &str| {
        position.get(key).and_then(Value::as_u64).ok_or_else(|| {
            Error::InvalidArguments(format!(
                "`position.{key}` must be a positive integer (1-based)"
            ))
        })
    };
    let (line, column) = (number("line")?, number("column")?);
    let doc = document(analysis, root, path)?;
    Ok((doc, ide::position_offset(doc, line, column)?))
}

fn diagnostics(
    analysis: &Analysis,
    root: &Path,
    args: &Map<String, Value>,
) -> Result<Value, Error> {
    let docs: Vec<&Document> = match text(args, "path") {
        Some(given) => vec![document(analysis, root, given)?],
        None => analysis.documents().map(|d| &**d).collect(),
    };
    let severity = text(args, "severity");
    let mut items = Vec::new();
    for doc in docs {
        for d in analysis.diagnostics_of(&doc.path) {
            if severity.is_none_or(|s| d.severity.as_str() == s) {
                let mut item = diagnostics::to_json(analysis, doc, &d);
                if let Some(id) = ide::entity_at(doc, d.span.start) {
                    item["entity"] = json!(id);
                }
                items.push(item);
            }
        }
    }
    page::page("diagnostics", items, args)
}

fn symbol(doc: &Document, s: &Symbol) -> Value {
    let kind = match s.kind {
        SymbolKind::Entity => "entity",
        SymbolKind::Object => "object",
        SymbolKind::Array => "array",
        SymbolKind::String => "string",
        SymbolKind::Number => "number",
        SymbolKind::Boolean => "boolean",
        SymbolKind::Null => "null",
    };
    json!({
        "name": s.name,
        "detail": s.detail,
        "kind": kind,
        "range": diagnostics::range_json(doc, s.span),
        "selectionRange": diagnostics::range_json(doc, s.selection),
        "children": s.children.iter().map(|c| symbol(doc, c)).collect::<Vec<_>>(),
    })
}

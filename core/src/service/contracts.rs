//! The command registry (SPEC §7, §13): every command and tool as one [`Contract`] — name,
//! argument and result schemas, effect, the fronts it is shown in, and its handler. Both
//! fronts, `stardust.commands.describe` and the command line's core connection render and
//! dispatch from this one list.
//!
//! Schemas use `anyOf` instead of an array-valued `type`: some hosts' tool calling rejects
//! `"type": [..]` (MCP Inspector `--strict` warns about it); a test walks every schema.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{Value, json};

use super::{Front, Handler, commands, history, nav, page};

/// Whether a command only reads, or proposes a change (and so answers with a preview).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Read,
    Mutation,
    /// The preview commands themselves (SPEC §7 shows "—"): they act on a preview;
    /// `stardust.preview.confirm` is the one command that writes.
    Preview,
    /// Runs at once and writes outside the store (a backup archive into its target), without
    /// a preview: the command line's operations (SPEC §10), shown only in the `cli` front.
    Operation,
}

/// Whether the change a command proposes needs `stardust.preview.confirm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confirmation {
    None,
    Required,
}

/// A command's contract.
#[derive(Debug, Serialize)]
pub struct Contract {
    pub name: &'static str,
    pub title: &'static str,
    /// What an agent is told the tool does, where the title and effect do not say enough.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'static str>,
    pub effect: Effect,
    /// Whether the command's own work is short (an answer from the snapshot, or one language
    /// server request whose waits go through `sync::long_wait`): a front may run it on a
    /// thread that others depend on, provided it escapes the long waits.
    #[serde(skip)]
    pub quick: bool,
    pub confirmation: Confirmation,
    /// The fronts that show (and accept) the command: `lsp` (editors and SDK programs),
    /// `mcp` (agents), `cli` (the command line's connection to a core).
    pub fronts: &'static [Front],
    /// JSON Schema of the one argument object.
    pub arguments: Value,
    /// JSON Schema of the result.
    pub result: Value,
    /// Argument validator, compiled once.
    #[serde(skip)]
    pub(crate) validator: jsonschema::Validator,
    #[serde(skip)]
    pub(crate) handler: Handler,
}

impl Contract {
    /// Whether a session of `front` sees and may run this command. SDK programs speak LSP.
    pub fn shown_in(&self, front: Front) -> bool {
        let front = if front == Front::Sdk { Front::Lsp } else { front };
        self.fronts.contains(&front)
    }
}

/// The fronts of the commands of SPEC §7.
const EVERY_FRONT: &[Front] = &[Front::Lsp, Front::Mcp, Front::Cli];
/// The navigation tools of SPEC §13: editors have the same features as LSP requests.
const AGENTS: &[Front] = &[Front::Mcp];
/// The command line's operations.
const COMMAND_LINE: &[Front] = &[Front::Cli];

/// Every command and tool: the commands in the order of SPEC §7, the navigation tools in
/// the order of SPEC §13, `preview_get` (an agent's pages of a preview), then the command
/// line's operations.
pub fn registry() -> &'static [Contract] {
    static REGISTRY: OnceLock<Vec<Contract>> = OnceLock::new();
    REGISTRY.get_or_init(build)
}

/// The contract of `name`.
pub fn contract(name: &str) -> Option<&'static Contract> {
    registry().iter().find(|c| c.name == name)
}

/// The contracts a session of `front` sees, in registry order.
pub fn shown_in(front: Front) -> impl Iterator<Item = &'static Contract> {
    registry().iter().filter(move |c| c.shown_in(front))
}

/// The commands of SPEC §7 (every contract shown to editors) as JSON, for
/// `stardust.commands.describe` and capability advertisements.
pub fn describe() -> Value {
    json!({ "commands": shown_in(Front::Lsp).collect::<Vec<_>>() })
}

/// What [`build`] compiles into a [`Contract`].
struct Spec {
    name: &'static str,
    title: &'static str,
    description: Option<&'static str>,
    effect: Effect,
    quick: bool,
    fronts: &'static [Front],
    arguments: Value,
    result: Value,
    handler: Handler,
}

impl Spec {
    fn new(
        name: &'static str,
        title: &'static str,
        effect: Effect,
        arguments: Value,
        result: Value,
        handler: Handler,
    ) -> Spec {
        Spec {
            name,
            title,
            description: None,
            effect,
            quick: false,
            fronts: EVERY_FRONT,
            arguments,
            result,
            handler,
        }
    }

    fn tool(mut self, description: &'static str) -> Spec {
        self.description = Some(description);
        self.fronts = AGENTS;
        self
    }

    /// See [`Contract::quick`].
    fn quick(mut self) -> Spec {
        self.quick = true;
        self
    }
}

fn build() -> Vec<Contract> {
    let specs = reads().into_iter().chain(mutations()).chain(previews()).chain(changes());
    let specs = specs.chain(history());
    specs.chain(navigation()).chain(preview_pages()).chain(operations()).map(compile).collect()
}

fn compile(spec: Spec) -> Contract {
    let validator = jsonschema::options()
        .build(&spec.arguments)
        .unwrap_or_else(|e| panic!("the argument schema of {} is invalid: {e}", spec.name));
    let confirmation =
        if spec.effect == Effect::Mutation { Confirmation::Required } else { Confirmation::None };
    Contract {
        name: spec.name,
        title: spec.title,
        description: spec.description,
        effect: spec.effect,
        quick: spec.quick,
        confirmation,
        fronts: spec.fronts,
        arguments: spec.arguments,
        result: spec.result,
        validator,
        handler: spec.handler,
    }
}

// Schema pieces.

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// `properties` with `more` added (both objects).
fn with(mut properties: Value, more: Value) -> Value {
    if let (Some(properties), Value::Object(more)) = (properties.as_object_mut(), more) {
        properties.extend(more);
    }
    properties
}

/// One of several JSON types, portable to every host (`anyOf`, not an array `type`).
fn one_of_types(types: &[&str]) -> Value {
    json!({"anyOf": types.iter().map(|t| json!({"type": t})).collect::<Vec<_>>()})
}

fn nullable(ty: &str) -> Value {
    one_of_types(&[ty, "null"])
}

/// A query, patch or entity: an object, or its DUST or JSON text.
fn document(what: &str) -> Value {
    let mut schema = one_of_types(&["object", "string"]);
    schema["description"] = json!(format!("the {what}, as an object or as DUST or JSON text"));
    schema
}

fn id() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 200})
}

/// An id described: what the argument names.
fn id_of(what: &str) -> Value {
    let mut schema = id();
    schema["description"] = json!(what);
    schema
}

fn preview_result() -> Value {
    let ids = json!({"type": "array", "items": {"type": "string"}});
    let version = nullable("string");
    json!({
        "type": "object",
        "required": ["previewId", "expiresAt", "documents", "entities", "resolved", "diagnostics", "committable"],
        "properties": {
            "previewId": {"type": "string"},
            "expiresAt": {"type": "string", "format": "date-time"},
            "documents": {"type": "array", "items": {
                "type": "object",
                "required": ["path", "change", "before", "after", "diff"],
                "properties": {
                    "path": {"type": "string"},
                    "change": {"enum": ["created", "changed", "deleted"]},
                    "before": version, "after": version,
                    "diff": {"type": "string"},
                    "diffTruncated": {"type": "boolean", "description": "the diff alone is over a page: only its beginning is here"},
                    "diffBytes": {"type": "integer", "description": "the whole diff's size, when it was cut"},
                },
            }},
            "total": {"type": "integer", "description": "how many documents the preview changes (an agent's answer pages `documents`)"},
            "nextOffset": {
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "description": "the first document not in this answer; read from there with preview_get {previewId, offset}; null when every document is here",
            },
            "pageShrunk": {"type": "boolean", "description": "`documents` was cut to fit one 64 KiB page"},
            "omitted": {"type": "object", "description": "lists cut to fit one page, with how many items each left out"},
            "entities": {"type": "object", "properties": {"created": ids, "changed": ids, "deleted": ids}},
            "resolved": {"type": "object", "additionalProperties": {"type": "string"}},
            "diagnostics": {"type": "object", "properties": {
                "new": {"type": "array"}, "resolved": {"type": "array"},
            }},
            "committable": {"type": "boolean"},
            "reasons": {"type": "array", "items": {"type": "string"}},
            "incomplete": {"type": "array", "items": {"type": "object"}},
        },
    })
}

/// A paged list answer: `{<key>: [...], total, nextOffset, pageShrunk?}`.
fn paged(key: &str) -> Value {
    json!({
        "type": "object",
        "required": [key, "total", "nextOffset"],
        "properties": {
            key: {"type": "array"},
            "total": {"type": "integer"},
            "nextOffset": nullable("integer"),
            "pageShrunk": {"type": "boolean"},
        },
    })
}

/// `limit` and `offset` of a query (the query engine's bound on `limit`).
fn query_page() -> Value {
    json!({
        "limit": {"type": "integer", "minimum": 0, "maximum": crate::query::MAX_LIMIT, "description": "rows in the page, instead of the query's own limit (default 100)"},
        "offset": {"type": "integer", "minimum": 0, "description": "rows skipped before the page, instead of the query's own offset (default 0)"},
    })
}

/// `limit` and `offset` of a navigation tool's list (SPEC §13's page bounds).
fn tool_page() -> Value {
    json!({
        "limit": {"type": "integer", "minimum": 0, "maximum": page::MAX_LIMIT, "default": page::DEFAULT_LIMIT, "description": "items in the page"},
        "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "items skipped before the page"},
    })
}

// The commands of SPEC §7, by job.

fn reads() -> Vec<Spec> {
    let rows = json!({
        "type": "object",
        "required": ["columns", "rows", "total", "nextOffset"],
        "properties": {
            "columns": {"type": "array", "items": {"type": "string"}},
            "rows": {"type": "array", "items": {"type": "array"}},
            "total": {"type": "integer"},
            "nextOffset": nullable("integer"),
        },
    });
    vec![
        Spec::new(
            "stardust.commands.describe",
            "Describe every command",
            Effect::Read,
            object(json!({}), &[]),
            json!({"type": "object", "required": ["commands"], "properties": {"commands": {"type": "array"}}}),
            commands::describe,
        ),
        Spec::new(
            "stardust.status",
            "Show the store's status",
            Effect::Read,
            object(json!({}), &[]),
            json!({"type": "object", "required": ["store", "seq", "documents", "entities", "sessions", "decisions"]}),
            commands::status,
        ),
        Spec::new(
            "stardust.expression.evaluate",
            "Evaluate an expression",
            Effect::Read,
            object(
                json!({
                    "expression": {"type": "string", "minLength": 1, "description": "the expression, e.g. @book/dune.author.name"},
                    "entity": id_of("an entity whose fields bare names read"),
                }),
                &["expression"],
            ),
            json!({"type": "object", "required": ["value"]}),
            commands::evaluate,
        ),
        Spec::new(
            "stardust.query.execute",
            "Run a query",
            Effect::Read,
            object(with(json!({"document": document("query")}), query_page()), &["document"]),
            rows,
            commands::query,
        ),
        Spec::new(
            "stardust.entity.get",
            "Get an entity",
            Effect::Read,
            object(json!({"id": id_of("the entity's id")}), &["id"]),
            json!({
                "type": "object",
                "required": ["id", "value", "path", "range", "version"],
                "properties": {
                    "id": {"type": "string"}, "value": {"type": "object"}, "path": {"type": "string"},
                    "range": {"type": "object"}, "version": {"type": "string"},
                },
            }),
            commands::entity_get,
        ),
        Spec::new(
            "stardust.entity.validate",
            "Validate an entity without committing it",
            Effect::Read,
            object(json!({"entity": document("entity")}), &["entity"]),
            json!({"type": "object", "required": ["valid", "diagnostics"],
                   "properties": {"valid": {"type": "boolean"}, "diagnostics": {"type": "array"}}}),
            commands::entity_validate,
        ),
    ]
}

fn mutations() -> Vec<Spec> {
    vec![
        Spec::new(
            "stardust.entity.create",
            "Create entities",
            Effect::Mutation,
            object(
                json!({"entities": {"type": "array", "minItems": 1, "items": document("entity"), "description": "the new entities; an id may be a temporary name ?name, resolved at commit, and @?name refers to it"}}),
                &["entities"],
            ),
            preview_result(),
            commands::entity_create,
        ),
        Spec::new(
            "stardust.mutation.execute",
            "Set or unset fields of the entities a query finds",
            Effect::Mutation,
            object(
                json!({
                    "document": document("query"),
                    "set": {"type": "object", "description": "fields to set (dotted keys set nested fields)"},
                    "unset": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "fields to remove"},
                }),
                &["document"],
            ),
            preview_result(),
            commands::mutation_execute,
        ),
        Spec::new(
            "stardust.patch.apply",
            "Apply a patch",
            Effect::Mutation,
            object(json!({"document": document("patch")}), &["document"]),
            preview_result(),
            commands::patch_apply,
        ),
        Spec::new(
            "stardust.entity.rename",
            "Rename an entity and every reference to it",
            Effect::Mutation,
            object(
                json!({"id": id_of("the entity's id"), "newId": id_of("its new id")}),
                &["id", "newId"],
            ),
            preview_result(),
            commands::entity_rename,
        ),
        Spec::new(
            "stardust.backup.define",
            "Define a backup",
            Effect::Mutation,
            object(
                json!({
                    "id": id_of("the definition's id, e.g. backup/nightly"),
                    "include": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "globs of store-relative paths to archive; default every file"},
                    "target": {"type": "string", "minLength": 1, "description": "the folder archives are written to, outside the store"},
                    "keep": {"type": "integer", "minimum": 1, "description": "how many of the newest archives to keep; default 7"},
                }),
                &["id", "target"],
            ),
            preview_result(),
            commands::backup_define,
        ),
    ]
}

fn previews() -> Vec<Spec> {
    let preview_id = || {
        object(
            json!({"previewId": {"type": "string", "minLength": 1, "description": "the preview's id"}}),
            &["previewId"],
        )
    };
    vec![
        Spec::new(
            "stardust.preview.confirm",
            "Confirm a preview",
            Effect::Preview,
            preview_id(),
            json!({"type": "object", "required": ["seq", "resolved"],
                   "properties": {"seq": {"type": "integer"}, "resolved": {"type": "object"}}}),
            commands::preview_confirm,
        ),
        Spec::new(
            "stardust.preview.discard",
            "Discard a preview",
            Effect::Preview,
            preview_id(),
            json!({"type": "object", "required": ["discarded"], "properties": {"discarded": {"type": "boolean"}}}),
            commands::preview_discard,
        ),
        Spec::new(
            "stardust.previews.list",
            "List the open previews",
            Effect::Read,
            object(json!({}), &[]),
            json!({"type": "object", "required": ["previews", "shared"], "properties": {
                "previews": {"type": "array", "items": {"type": "object", "required": ["previewId", "mine", "session", "command", "files", "diagnostics", "committable"]}},
                "shared": {"type": "boolean", "description": "whether this session may confirm or discard other sessions' previews"},
            }}),
            commands::previews_list,
        ),
    ]
}

fn changes() -> Vec<Spec> {
    vec![Spec::new(
        "stardust.changes.since",
        "List what changed after a seq",
        Effect::Read,
        object(
            json!({"seq": {"type": "integer", "minimum": 0, "description": "what changed after this seq"}}),
            &["seq"],
        ),
        json!({
            "type": "object",
            "required": ["seq"],
            "properties": {
                "seq": {"type": "integer"},
                "overflow": {"type": "boolean"},
                "documents": {"type": "array"},
                "entities": {"type": "array"},
                "more": {"type": "boolean"},
            },
        }),
        commands::changes_since,
    )]
}

// History (SPEC §26).

fn seq(what: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "description": what})
}

fn history() -> Vec<Spec> {
    let change = json!({
        "type": "object",
        "required": ["path", "change", "before", "after", "diff"],
        "properties": {
            "path": {"type": "string"},
            "change": {"enum": ["created", "changed", "deleted"]},
            "before": nullable("string"), "after": nullable("string"),
            "diff": {"type": "string"},
        },
    });
    let at = json!({
        "type": "object",
        "required": ["path", "seq", "changedAt", "version", "text", "bytes"],
        "properties": {
            "path": {"type": "string"}, "seq": {"type": "integer"},
            "changedAt": {"type": "integer", "description": "the seq of the transaction that left the file so"},
            "version": {"type": "string"}, "text": {"type": "string"}, "bytes": {"type": "integer"},
        },
    });
    let path = json!({"type": "string", "minLength": 1, "description": "a file's path, relative to the store root or absolute inside it (or a mount of it)"});
    vec![
        Spec::new(
            "stardust.history.list",
            "List the transactions touching a path or an entity",
            Effect::Read,
            object(
                with(
                    tool_page(),
                    json!({
                        "path": path.clone(),
                        "entity": id_of("only transactions that created, changed or deleted this entity"),
                    }),
                ),
                &[],
            ),
            paged("transactions"),
            history::list,
        ),
        Spec::new(
            "stardust.document.at",
            "Read a file as of a seq",
            Effect::Read,
            object(
                json!({"path": path.clone(), "seq": seq("the transaction after which to read it")}),
                &["path", "seq"],
            ),
            at,
            history::document_at,
        ),
        Spec::new(
            "stardust.entity.at",
            "Read an entity as of a seq",
            Effect::Read,
            object(
                json!({"id": id_of("the entity's id"), "seq": seq("the transaction after which to read it")}),
                &["id", "seq"],
            ),
            json!({
                "type": "object",
                "required": ["id", "seq", "value", "path", "changedAt", "version"],
                "properties": {
                    "id": {"type": "string"}, "seq": {"type": "integer"}, "value": {"type": "object"},
                    "path": {"type": "string"}, "changedAt": {"type": "integer"}, "version": {"type": "string"},
                },
            }),
            history::entity_at,
        ),
        Spec::new(
            "stardust.transaction.diff",
            "Show what transactions changed",
            Effect::Read,
            object(
                json!({
                    "seq": seq("the first transaction"),
                    "toSeq": seq("the last transaction (default: seq alone)"),
                    "paths": {"type": "array", "items": path, "description": "only these files"},
                }),
                &["seq"],
            ),
            json!({
                "type": "object",
                "required": ["seq", "toSeq", "documents"],
                "properties": {
                    "seq": {"type": "integer"}, "toSeq": {"type": "integer"},
                    "documents": {"type": "array", "items": change},
                },
            }),
            history::diff,
        ),
        Spec::new(
            "stardust.transaction.revert",
            "Revert a transaction",
            Effect::Mutation,
            object(json!({"seq": seq("the transaction to undo")}), &["seq"]),
            preview_result(),
            history::revert,
        ),
    ]
}

// The navigation tools of SPEC §13.

/// `path` + `position`, or `entity` + `pointer`.
fn address() -> Value {
    json!({
        "path": {"type": "string", "description": "a document or code file path, relative to the store root or absolute inside it (or a mount of it)"},
        "position": {
            "type": "object",
            "description": "1-based line and column, the column counted in characters (what grep -n and editors show)",
            "required": ["line", "column"],
            "additionalProperties": false,
            "properties": {
                "line": {"type": "integer", "minimum": 1, "description": "the line, 1-based"},
                "column": {"type": "integer", "minimum": 1, "description": "the column in characters, 1-based"},
            },
        },
        "entity": {"type": "string", "description": "an entity id, instead of path and position"},
        "pointer": {"type": "string", "description": "a JSON Pointer into the entity, e.g. /author; empty for its id"},
    })
}

fn navigation() -> Vec<Spec> {
    let diagnostics_args = with(
        tool_page(),
        json!({
            "path": {"type": "string", "description": "only this document; every document when absent"},
            "severity": {"enum": ["error", "warning"], "description": "only diagnostics of this severity"},
        }),
    );
    let references_args = with(
        with(address(), tool_page()),
        json!({"includeDeclaration": {"type": "boolean", "default": true, "description": "list the entity's own id first"}}),
    );
    let hover = json!({"type": "object", "required": ["hover"], "properties": {"hover": nullable("object")}});
    let workspace_args = with(
        tool_page(),
        json!({
            "query": {"type": "string", "description": "characters of an id or title, in order; empty lists every entity"},
            "server": {"type": "string", "description": "only this language server's symbols (no entities); every server that may start when absent"},
        }),
    );
    let read = |name, title, arguments, result, handler| {
        Spec::new(name, title, Effect::Read, arguments, result, handler)
    };
    vec![
        read("diagnostics", "List diagnostics", object(diagnostics_args, &[]), paged("diagnostics"), nav::diagnostics)
            .tool("The problems Stardust finds in one document or the whole store (syntax, schema, dangling references, ...), in path and source order. `data` carries what a repair needs. Answers for code files too: a code file's `path` gives its language server's diagnostics, and the whole store (no `path`) includes every code file's diagnostics its server published, each naming its `server`; `complete: false` while a server is still indexing."),
        read("hover", "Describe what is at a place", object(address(), &[]), hover, nav::hover)
            .tool("What the key or value at a place is: the schema's description and type of a field, or the summary of a referenced entity. Answers for code files too: at a place of a code file, its language server's hover (a symbol's type and documentation).")
            .quick(),
        read("definition", "Go to the definition", object(address(), &[]), paged("locations"), nav::definition)
            .tool("Where the reference or type at a place is defined: the referenced entity's id, or the type's schema. Answers for code files too: at a place of a code file, where its language server says the symbol is defined.")
            .quick(),
        read("references", "Find references", object(references_args, &[]), paged("references"), nav::references)
            .tool("Every reference to the entity whose id or reference is at a place, in path and source order. Answers for code files too: at a place of a code file, every reference its language server finds in the workspace, asked once the server is ready; `complete: false` if it was not.")
            .quick(),
        read(
            "document_symbols",
            "Outline a document",
            object(with(tool_page(), json!({"path": {"type": "string", "description": "the document or code file"}})), &["path"]),
            paged("symbols"),
            nav::document_symbols,
        )
        .tool("A document's entities by id, each with its members and their ranges. Answers for code files too: a code file's symbols from its language server."),
        read("workspace_symbols", "Find entities by id or title", object(workspace_args, &[]), paged("symbols"), nav::workspace_symbols)
            .tool("Entities whose id or title matches the query fuzzily, best first. Answers for code files too: every language server's workspace symbols matching the query (each naming its `server`), asked once the server is ready; `complete: false` if one was not."),
        read("code_actions", "List repairs at a place", object(with(address(), tool_page()), &[]), paged("actions"), nav::code_actions)
            .tool("The repairs Stardust offers for the diagnostics at a place (closest id for a dangling reference, allowed values, a missing required field with its default, an unknown field removed, a bareword quoted), each with its exact text edits, and whether the document can be converted to the other notation. Read-only: apply a repair with patch_apply (set/unset) or by saving the edited document through the mount. For a code file: its language server's actions at the place, each with a `handle` for code_action_preview."),
        read(
            "describe_type",
            "Describe an entity type",
            object(json!({"type": {"type": "string", "minLength": 1, "description": "the entity type, e.g. book"}}), &["type"]),
            json!({"type": "object", "required": ["type", "schema", "required", "fields"]}),
            nav::describe_type,
        )
        .tool("A type's fields, required fields, types, allowed values, reference targets and descriptions, from its schema: what a valid new entity needs."),
        read("declaration", "Go to the declaration", object(with(address(), tool_page()), &[]), paged("locations"), nav::declaration)
            .tool("Where the symbol at a place of a code file is declared, from its language server (for a document: its definition)."),
        read("type_definition", "Go to the type's definition", object(with(address(), tool_page()), &[]), paged("locations"), nav::type_definition)
            .tool("Where the type of the symbol at a place of a code file is defined, from its language server (for a document: its definition)."),
        read("implementation", "Find implementations", object(with(address(), tool_page()), &[]), paged("locations"), nav::implementation)
            .tool("The implementations of the interface, class or method at a place of a code file, from its language server, asked once the server is ready; `complete: false` if it was not."),
        read("signature_help", "Show the signature being called", object(address(), &[]), json!({"type": "object", "required": ["signatureHelp"], "properties": {"signatureHelp": nullable("object")}}), nav::signature_help)
            .tool("The signatures of the call at a place of a code file and the active parameter, from its language server."),
        read("incoming_calls", "List the callers", object(with(address(), tool_page()), &[]), paged("calls"), nav::incoming_calls)
            .tool("The functions that call the function at a place of a code file, each with the ranges of its calls, asked once its language server is ready; `complete: false` if it was not."),
        read("outgoing_calls", "List the callees", object(with(address(), tool_page()), &[]), paged("calls"), nav::outgoing_calls)
            .tool("The functions the function at a place of a code file calls, each with the ranges of the calls, asked once its language server is ready; `complete: false` if it was not."),
        read("prepare_rename", "Check a rename", object(address(), &[]), json!({"type": "object", "required": ["rename"], "properties": {"rename": nullable("object")}}), nav::prepare_rename)
            .tool("Whether the symbol (or entity id) at a place can be renamed: its range and current name, or null."),
        Spec::new(
            "rename_preview",
            "Preview a rename",
            Effect::Mutation,
            object(with(address(), json!({"newName": {"type": "string", "minLength": 1, "description": "the new name (for a document: the entity's new id)"}})), &["newName"]),
            preview_result(),
            nav::rename_preview,
        )
        .tool("Rename the symbol at a place of a code file everywhere its language server finds it (or the entity id at a place of a document, with every reference), as a preview: each file's diff, and the diagnostics the edit would add or resolve, checked by the language server on the edited texts (and on the files that import them or name the symbol) without writing them. For a code file the server must be ready (else `busy`), and a rename that leaves out a place the server's references report is `committable: false` with an `incomplete` reason listing them. Nothing is written until preview_confirm."),
        Spec::new(
            "code_action_preview",
            "Preview a code action",
            Effect::Mutation,
            object(json!({"handle": {"type": "string", "minLength": 1, "description": "an action's handle from the code_actions listing of a code file"}}), &["handle"]),
            preview_result(),
            nav::code_action_preview,
        )
        .tool("Apply a code action of a code file (a quick fix, organize imports, ...) by the handle its code_actions listing gave, as a preview: each file's diff, and the diagnostics the edit would add or resolve, checked by the language server on the edited texts without writing them. A handle is used once, belongs to the session that listed it, and is stale once the file changes. Actions that only run a command on the server are not offered as previews. Nothing is written until preview_confirm."),
        read(
            "server_status",
            "Show the language servers",
            object(with(tool_page(), json!({"server": {"type": "string", "description": "only this server"}})), &[]),
            paged("servers"),
            nav::server_status,
        )
        .tool("The language servers configured for this store's code files: where each table comes from, whether it may start (trust, program), its state (starting, indexing, ready, crashed) and since when, pids, restarts, capabilities and progress.")
        .quick(),
        read(
            "server_restart",
            "Restart a language server",
            object(json!({"server": {"type": "string", "minLength": 1, "description": "the server's table name, as server_status lists it"}}), &["server"]),
            json!({"type": "object", "required": ["server"], "properties": {"server": {"type": "object"}}}),
            nav::server_restart,
        )
        .tool("Stop a language server with its whole process tree and start it again, clearing its crash count (a server past max_restarts is only started again this way)."),
    ]
}

// An agent's pages of a preview.

/// `preview_get`: the documents of an open preview from `offset`, for a preview whose answer
/// (one 64 KiB page) did not hold them all.
fn preview_pages() -> Vec<Spec> {
    let arguments = with(
        tool_page(),
        json!({"previewId": {"type": "string", "minLength": 1, "description": "the previewId a mutation tool answered"}}),
    );
    vec![
        Spec::new("preview_get", "Page through a preview", Effect::Read, object(arguments, &["previewId"]), preview_result(), commands::preview_get)
            .tool("An open preview of this session again, with its documents (each with its diff) from `offset`: a mutation's answer holds as many as fit in 64 KiB and gives `total` and `nextOffset`; call this with `offset: nextOffset` until `nextOffset` is null. Reads only: preview_confirm commits every document of the preview, whichever pages were read.")
            .quick(),
    ]
}

// The command line's operations.

/// `stardust backup run` through a core: the archive is written by the process that owns the
/// store, as of its latest commit.
pub const BACKUP_RUN: &str = "stardust.backup.run";

fn operations() -> Vec<Spec> {
    let mut run = Spec::new(
        BACKUP_RUN,
        "Run a backup",
        Effect::Operation,
        object(
            json!({"id": {"type": "string", "minLength": 1, "description": "the backup definition's id, e.g. backup/nightly"}}),
            &["id"],
        ),
        json!({
            "type": "object",
            "required": ["archive", "seq", "entries", "bytes", "removed"],
            "properties": {
                "archive": {"type": "string"},
                "seq": {"type": "integer"},
                "entries": {"type": "integer"},
                "bytes": {"type": "integer"},
                "removed": {"type": "array", "items": {"type": "string"}},
            },
        }),
        commands::backup_run,
    );
    run.description = Some(
        "Archive the store as of its latest commit by a backup definition, sending progress \
         (phase, done, total, path) before the answer.",
    );
    run.fronts = COMMAND_LINE;
    vec![run]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `type` in `schema` (at `at`) that is an array, as a list of places.
    fn array_types(schema: &Value, at: String, found: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                for (key, value) in map {
                    // A property may be named `type`; its schema is a value of `properties`.
                    let is_keyword = key == "type" && !at.ends_with("/properties");
                    if is_keyword && value.is_array() {
                        found.push(format!("{at}/type"));
                    }
                    array_types(value, format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    array_types(item, format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn no_schema_has_an_array_valued_type() {
        let mut found = Vec::new();
        for contract in registry() {
            array_types(&contract.arguments, format!("{} arguments", contract.name), &mut found);
            array_types(&contract.result, format!("{} result", contract.name), &mut found);
        }
        assert!(found.is_empty(), "use anyOf instead of an array `type` at: {found:#?}");
        // The walk does find one.
        array_types(&json!({"properties": {"x": {"type": ["a", "b"]}}}), String::new(), &mut found);
        assert_eq!(found, ["/properties/x/type"]);
    }

    #[test]
    fn every_front_sees_its_own_list_from_the_one_registry() {
        let names = |front| shown_in(front).map(|c| c.name).collect::<Vec<_>>();
        let (lsp, mcp, cli) = (names(Front::Lsp), names(Front::Mcp), names(Front::Cli));
        assert_eq!(lsp.len(), 20, "{lsp:?}");
        assert_eq!(names(Front::Sdk), lsp);
        assert_eq!(mcp[..20], lsp[..]);
        assert_eq!(
            lsp[15..],
            [
                "stardust.history.list",
                "stardust.document.at",
                "stardust.entity.at",
                "stardust.transaction.diff",
                "stardust.transaction.revert",
            ]
        );
        assert_eq!(
            mcp[20..],
            [
                "diagnostics",
                "hover",
                "definition",
                "references",
                "document_symbols",
                "workspace_symbols",
                "code_actions",
                "describe_type",
                "declaration",
                "type_definition",
                "implementation",
                "signature_help",
                "incoming_calls",
                "outgoing_calls",
                "prepare_rename",
                "rename_preview",
                "code_action_preview",
                "server_status",
                "server_restart",
                "preview_get",
            ]
        );
        assert_eq!(cli[..20], lsp[..]);
        assert_eq!(cli[20..], [BACKUP_RUN]);
        let described = describe();
        assert_eq!(described["commands"].as_array().unwrap().len(), 20);
        assert_eq!(described["commands"][0]["fronts"], json!(["lsp", "mcp", "cli"]));
    }
}

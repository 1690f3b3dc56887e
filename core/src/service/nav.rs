//! The navigation tools of SPEC §13 (`diagnostics`, `hover`, `definition`, `references`,
//! `document_symbols`, `workspace_symbols`, `code_actions`, `describe_type`): the handlers of
//! their contracts, over the core's editor features.
//!
//! Places are addressed by `path` + `position {line, column}` (1-based, columns in
//! characters) or by `entity` + optional JSON `pointer`, resolved by `ide::address`; every
//! location in an answer uses the same convention and names its entity. Arguments arrive
//! validated against the contract's schema.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{Call, CommandResult, code, page};
use crate::analysis::{Analysis, Document};
use crate::answers;
use crate::error::Error;
use crate::ide::{self, Symbol, SymbolKind};

pub(super) fn diagnostics(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::diagnostics(call, &target);
    }
    let (analysis, root, args) = call.parts();
    let docs: Vec<&Document> = match text(args, "path") {
        Some(given) => vec![document(analysis, root, given)?],
        None => analysis.documents().map(|d| &**d).collect(),
    };
    let severity = text(args, "severity");
    let whole_store = !args.contains_key("path");
    let mut items = Vec::new();
    for doc in docs {
        for d in analysis.diagnostics_of(&doc.path) {
            if severity.is_none_or(|s| d.severity.as_str() == s) {
                let mut item = answers::diagnostic_json(analysis, doc, &d);
                if let Some(id) = ide::entity_at(doc, d.span.start) {
                    item["entity"] = json!(id);
                }
                items.push(item);
            }
        }
    }
    if !whole_store {
        return Ok(page::page("diagnostics", items, args)?);
    }
    // The whole store: the code files' diagnostics their servers published too (SPEC §25).
    let severity = severity.map(str::to_owned);
    let (code, complete) = code::published_diagnostics(call, severity.as_deref())?;
    items.extend(code);
    // Stable: each file's diagnostics keep their order.
    items.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let mut out = page::page("diagnostics", items, &call.args)?;
    out["complete"] = json!(complete);
    out["readiness"] = json!(if complete { "ready" } else { "indexing" });
    Ok(out)
}

pub(super) fn hover(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::hover(call, &target);
    }
    let (analysis, root, args) = call.parts();
    let (doc, offset) = place(analysis, root, args)?;
    let hover = ide::hover(analysis, &doc.path, offset).map(|h| {
        let mut out = answers::location_json(analysis, &doc.path, h.span);
        out["markdown"] = json!(h.markdown);
        out
    });
    Ok(json!({"hover": hover}))
}

pub(super) fn definition(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::locations(call, &target, "textDocument/definition");
    }
    let (analysis, root, args) = call.parts();
    let (doc, offset) = place(analysis, root, args)?;
    let found = ide::definition(analysis, &doc.path, offset);
    let items = found.iter().map(|f| answers::location_json(analysis, &f.path, f.span)).collect();
    Ok(page::page("locations", items, args)?)
}

pub(super) fn references(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::references(call, &target);
    }
    let (analysis, root, args) = call.parts();
    let (doc, offset) = place(analysis, root, args)?;
    let declaration = args.get("includeDeclaration").and_then(Value::as_bool);
    let found = ide::references(analysis, &doc.path, offset, declaration.unwrap_or(true));
    let items = found.iter().map(|f| answers::location_json(analysis, &f.path, f.span)).collect();
    Ok(page::page("references", items, args)?)
}

pub(super) fn document_symbols(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::document_symbols(call, &target);
    }
    let (analysis, root, args) = call.parts();
    let doc = document(analysis, root, text(args, "path").unwrap_or_default())?;
    let items = ide::document_symbols(doc).iter().map(|s| symbol(doc, s)).collect();
    Ok(page::page("symbols", items, args)?)
}

pub(super) fn workspace_symbols(call: &mut Call<'_>) -> CommandResult {
    let (analysis, _, args) = call.parts();
    let query = text(args, "query").unwrap_or_default();
    let items = ide::workspace_symbols(analysis, query, usize::MAX)
        .into_iter()
        .map(|s| {
            json!({
                "id": s.id,
                "type": s.ty,
                "title": s.title,
                "location": answers::location_json(analysis, &s.location.path, s.location.span),
            })
        })
        .collect();
    code::workspace_symbols(call, items)
}

pub(super) fn code_actions(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return super::code_edit::code_actions(call, &target);
    }
    let (analysis, root, args) = call.parts();
    let (doc, offset) = place(analysis, root, args)?;
    let span = crate::text::Span::empty(offset);
    let items = ide::code_actions(analysis, &doc.path, span)
        .iter()
        .map(|a| action(analysis, &doc.path, a))
        .collect();
    Ok(page::page("actions", items, args)?)
}

/// `declaration`: for a document, the definition (an entity is declared where it is
/// defined); for a code file, the server's.
pub(super) fn declaration(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::locations(call, &target, "textDocument/declaration");
    }
    definition(call)
}

/// `type_definition`: for a document, what `definition` answers (a `type` value's schema, a
/// reference's entity); for a code file, the server's.
pub(super) fn type_definition(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::locations(call, &target, "textDocument/typeDefinition");
    }
    definition(call)
}

/// The tools that only code files have an answer for (`implementation`, `signature_help`,
/// the call hierarchy): a document answers `unsupported`, saying so.
fn code_only(call: &Call<'_>, tool: &str) -> Result<code::CodeTarget, super::CommandError> {
    match code::target_of(call)? {
        Some(target) => Ok(target),
        None => Err(Error::Unsupported(format!(
            "{tool} answers for code files; give the `path` and `position` of a code file (documents have no {tool})"
        ))
        .into()),
    }
}

pub(super) fn implementation(call: &mut Call<'_>) -> CommandResult {
    let target = code_only(call, "implementation")?;
    code::locations(call, &target, "textDocument/implementation")
}

pub(super) fn signature_help(call: &mut Call<'_>) -> CommandResult {
    let target = code_only(call, "signature_help")?;
    code::signature_help(call, &target)
}

pub(super) fn incoming_calls(call: &mut Call<'_>) -> CommandResult {
    let target = code_only(call, "incoming_calls")?;
    code::calls(call, &target, true)
}

pub(super) fn outgoing_calls(call: &mut Call<'_>) -> CommandResult {
    let target = code_only(call, "outgoing_calls")?;
    code::calls(call, &target, false)
}

/// `prepare_rename`: for a document, the entity id at the place that a rename would change;
/// for a code file, the server's answer.
pub(super) fn prepare_rename(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return code::prepare_rename(call, &target);
    }
    let (analysis, root, args) = call.parts();
    let (doc, offset) = place(analysis, root, args)?;
    let rename = ide::rename_target(analysis, &doc.path, offset).map(|(id, span)| {
        let mut out = answers::location_json(analysis, &doc.path, span);
        out["placeholder"] = json!(id);
        out
    });
    Ok(json!({"rename": rename}))
}

/// `rename_preview` (SPEC §18): for a code file, the language server's rename as a preview
/// with its speculative diagnostics delta; for a document, the rename of the entity id at the
/// place, as `stardust.entity.rename` previews it.
pub(super) fn rename_preview(call: &mut Call<'_>) -> CommandResult {
    if let Some(target) = code::target_of(call)? {
        return super::code_edit::rename_preview(call, &target);
    }
    let (analysis, root, args) = call.parts();
    let (doc, offset) = place(analysis, root, args)?;
    let Some((id, _)) = ide::rename_target(analysis, &doc.path, offset) else {
        return Err(Error::Unsupported(
            "no entity id or reference at that place; rename_preview renames the entity whose              id or reference is there"
                .into(),
        )
        .into());
    };
    let to = text(args, "newName").unwrap_or_default().to_owned();
    call.preview(&crate::patch::Patch { ops: vec![crate::patch::Op::Rename { from: id, to }] })
}

/// `code_action_preview {handle}` (SPEC §18): a code action of a code file, by the handle
/// its `code_actions` listing minted, as a preview with its speculative diagnostics delta.
pub(super) fn code_action_preview(call: &mut Call<'_>) -> CommandResult {
    super::code_edit::code_action_preview(call)
}

pub(super) fn server_status(call: &mut Call<'_>) -> CommandResult {
    code::server_status(call)
}

pub(super) fn server_restart(call: &mut Call<'_>) -> CommandResult {
    code::server_restart(call)
}

pub(super) fn describe_type(call: &mut Call<'_>) -> CommandResult {
    let (analysis, _, args) = call.parts();
    Ok(ide::describe_type(analysis, text(args, "type").unwrap_or_default())?)
}

/// A code action as the `code_actions` tool answers it: edits with the tool's ranges.
fn action(analysis: &Analysis, path: &str, action: &ide::Action) -> Value {
    let edits: Vec<Value> = action
        .edits
        .iter()
        .map(|e| {
            let mut at = answers::location_json(analysis, path, e.span);
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
        "range": answers::range_json(doc, s.span),
        "selectionRange": answers::range_json(doc, s.selection),
        "children": s.children.iter().map(|c| symbol(doc, c)).collect::<Vec<_>>(),
    })
}

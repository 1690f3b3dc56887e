//! The closed tool list of SPEC §13, generated: one tool per command of the core's registry
//! (named without `stardust.` and with `.` -> `_`, the contract's schemas as input and output
//! schemas) and the navigation tools. Nothing here is written per command.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use stardust_core::service::{Contract, Effect, registry};

use crate::{nav, page};

/// The tool that commits previews; listed only when the mutation gate allows it.
pub const CONFIRM_TOOL: &str = "preview_confirm";

/// The MCP tool name of registry command `command`: `stardust.query.execute` -> `query_execute`.
pub fn tool_name(command: &str) -> String {
    command.strip_prefix("stardust.").unwrap_or(command).replace('.', "_")
}

/// The registry command a tool runs, if it is one.
pub fn command_of(tool: &str) -> Option<&'static Contract> {
    registry().iter().find(|c| tool_name(c.name) == tool)
}

/// Every tool a session sees: the registry's commands (without `preview_confirm` unless
/// `confirm` is allowed) and then the navigation tools.
pub fn list(confirm: bool) -> Vec<Tool> {
    let mut tools: Vec<Tool> = registry()
        .iter()
        .filter(|c| confirm || tool_name(c.name) != CONFIRM_TOOL)
        .map(command_tool)
        .collect();
    tools.extend(nav::tools().into_iter().map(|t| {
        Tool::new(t.name, t.description, schema_object(t.input))
            .with_title(t.title)
            .with_raw_output_schema(schema_object(t.output))
            .with_annotations(
                ToolAnnotations::with_title(t.title).read_only(true).open_world(false),
            )
    }));
    tools
}

fn command_tool(contract: &'static Contract) -> Tool {
    let name = tool_name(contract.name);
    let description = match contract.effect {
        Effect::Read => format!("{} (`{}`). Reads only.", contract.title, contract.name),
        Effect::Mutation => format!(
            "{} (`{}`). Writes nothing: answers with a preview (diffs, resolved ids, diagnostics \
             delta, committable); `preview_confirm` commits it when mutation is allowed.",
            contract.title, contract.name
        ),
        Effect::Preview if name == CONFIRM_TOOL => format!(
            "{} (`{}`): commit a preview made in this session, through the save authority.",
            contract.title, contract.name
        ),
        Effect::Preview => format!("{} (`{}`).", contract.title, contract.name),
    };
    let annotations = ToolAnnotations::with_title(contract.title)
        .read_only(contract.effect != Effect::Preview || name != CONFIRM_TOOL)
        .destructive(name == CONFIRM_TOOL)
        .open_world(false);
    Tool::new(name, description, schema_object(mcp_arguments(&contract.arguments)))
        .with_title(contract.title)
        .with_raw_output_schema(schema_object(contract.result.clone()))
        .with_annotations(annotations)
}

/// The contract's argument schema with MCP's page bounds on `limit`.
fn mcp_arguments(arguments: &Value) -> Value {
    let mut schema = arguments.clone();
    if let Some(limit) = schema.pointer_mut("/properties/limit") {
        limit["maximum"] = json!(page::MAX_LIMIT);
        limit["default"] = json!(page::DEFAULT_LIMIT);
    }
    schema
}

fn schema_object(schema: Value) -> Arc<JsonObject> {
    Arc::new(match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool list and the registry the LSP front advertises (`stardust.commands.describe`)
    /// are one source: every command is a tool with the contract's schemas, and no other
    /// tool exists besides the navigation tools.
    #[test]
    fn the_tools_are_the_registry_plus_navigation() {
        let tools = list(true);
        let described = stardust_core::service::describe();
        let commands = described["commands"].as_array().unwrap();
        assert_eq!(tools.len(), commands.len() + nav::tools().len());
        for (tool, command) in tools.iter().zip(commands) {
            let name = command["name"].as_str().unwrap();
            assert_eq!(tool.name, tool_name(name));
            assert_eq!(command_of(&tool.name).map(|c| c.name), Some(name));
            assert_eq!(
                Value::Object((*tool.output_schema.clone().unwrap()).clone()),
                command["result"]
            );
            let mut input = Value::Object((*tool.input_schema).clone());
            if let Some(limit) = input.pointer_mut("/properties/limit") {
                assert_eq!(limit["maximum"], json!(page::MAX_LIMIT));
                limit["maximum"] = command["arguments"]["properties"]["limit"]["maximum"].clone();
                limit.as_object_mut().unwrap().remove("default");
            }
            assert_eq!(input, command["arguments"], "{name}");
        }
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "commands_describe",
                "status",
                "expression_evaluate",
                "query_execute",
                "entity_get",
                "entity_validate",
                "entity_create",
                "mutation_execute",
                "patch_apply",
                "entity_rename",
                "backup_define",
                "preview_confirm",
                "preview_discard",
                "changes_since",
                "diagnostics",
                "hover",
                "definition",
                "references",
                "document_symbols",
                "workspace_symbols",
                "code_actions",
                "describe_type",
            ]
        );
        let closed: Vec<String> = list(false).into_iter().map(|t| t.name.into_owned()).collect();
        assert!(!closed.contains(&CONFIRM_TOOL.to_owned()));
        assert_eq!(closed.len(), tools.len() - 1);
    }
}

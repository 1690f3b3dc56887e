//! The closed tool list of SPEC §13, generated: one tool per contract of the core's registry
//! shown to agents (named without `stardust.` and with `.` -> `_`, the contract's schemas as
//! input and output schemas), the navigation tools included. Nothing here is written per tool.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use stardust_core::service::{Contract, Effect, Front, page, shown_in};

/// The tool that commits previews; listed only when the session may confirm.
pub const CONFIRM_TOOL: &str = "preview_confirm";

/// The MCP tool name of registry command `command`: `stardust.query.execute` -> `query_execute`.
pub fn tool_name(command: &str) -> String {
    command.strip_prefix("stardust.").unwrap_or(command).replace('.', "_")
}

/// The registry contract a tool runs, if it is one shown to agents.
pub fn command_of(tool: &str) -> Option<&'static Contract> {
    shown_in(Front::Mcp).find(|c| tool_name(c.name) == tool)
}

/// Every tool a session sees, in registry order (without `preview_confirm` unless the session
/// may `confirm`).
pub fn list(confirm: bool) -> Vec<Tool> {
    shown_in(Front::Mcp)
        .filter(|c| confirm || tool_name(c.name) != CONFIRM_TOOL)
        .map(contract_tool)
        .collect()
}

fn contract_tool(contract: &'static Contract) -> Tool {
    let name = tool_name(contract.name);
    let description = match (contract.description, contract.effect) {
        (Some(description), _) => description.to_owned(),
        (None, Effect::Read) => format!("{} (`{}`). Reads only.", contract.title, contract.name),
        (None, Effect::Mutation) => format!(
            "{} (`{}`). Writes nothing: answers with a preview (diffs, resolved ids, diagnostics \
             delta, committable); `preview_confirm` commits it when mutation is allowed.",
            contract.title, contract.name
        ),
        (None, Effect::Preview) if name == CONFIRM_TOOL => format!(
            "{} (`{}`): commit a preview made in this session, through the save authority.",
            contract.title, contract.name
        ),
        (None, Effect::Preview | Effect::Operation) => {
            format!("{} (`{}`).", contract.title, contract.name)
        }
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
    use stardust_core::service::registry;

    use super::*;

    /// The tool list and the registry the LSP front advertises (`stardust.commands.describe`)
    /// are one source: every command is a tool with the contract's schemas, and no other
    /// tool exists besides the navigation tools, which are contracts of the registry too.
    #[test]
    fn the_tools_are_the_registry_plus_navigation() {
        let tools = list(true);
        let described = stardust_core::service::describe();
        let commands = described["commands"].as_array().unwrap();
        let agents: Vec<&Contract> = registry().iter().filter(|c| c.shown_in(Front::Mcp)).collect();
        assert_eq!(tools.len(), agents.len());
        for (tool, contract) in tools.iter().zip(&agents) {
            assert_eq!(tool.name, tool_name(contract.name));
            assert_eq!(command_of(&tool.name).map(|c| c.name), Some(contract.name));
            assert_eq!(
                Value::Object((*tool.output_schema.clone().unwrap()).clone()),
                contract.result
            );
            let mut input = Value::Object((*tool.input_schema).clone());
            if let Some(limit) = input.pointer_mut("/properties/limit") {
                assert_eq!(limit["maximum"], json!(page::MAX_LIMIT));
                limit["maximum"] = contract.arguments["properties"]["limit"]["maximum"].clone();
                if contract.arguments["properties"]["limit"].get("default").is_none() {
                    limit.as_object_mut().unwrap().remove("default");
                }
            }
            assert_eq!(input, contract.arguments, "{}", contract.name);
        }
        // The commands of SPEC §7 come first, as `stardust.commands.describe` lists them.
        for (tool, command) in tools.iter().zip(commands) {
            assert_eq!(tool.name, tool_name(command["name"].as_str().unwrap()));
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
                "previews_list",
                "changes_since",
                "history_list",
                "document_at",
                "entity_at",
                "transaction_diff",
                "transaction_revert",
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
        let closed: Vec<String> = list(false).into_iter().map(|t| t.name.into_owned()).collect();
        assert!(!closed.contains(&CONFIRM_TOOL.to_owned()));
        assert_eq!(closed.len(), tools.len() - 1);
    }
}

//! `stardust mcp` driven by a real MCP client, rmcp's: the handshake, the tool list and its
//! schemas, structured results and tool errors as the SDK types read them.

mod util;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;

fn args(value: serde_json::Value) -> rmcp::model::JsonObject {
    value.as_object().cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_lists_and_calls_tools() {
    let tmp = tempfile::tempdir().unwrap();
    util::copy_store(&util::repo().join("examples/library"), tmp.path());
    let store = tmp.path().to_owned();
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_stardust")).configure(|cmd| {
        cmd.arg("mcp")
            .arg("--store")
            .arg(&store)
            .env("STARDUST_IDLE_EXIT", "2")
            .env_remove("RUST_LOG");
    });
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("rmcp-test-client", "1.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_06_18)
    .serve(TokioChildProcess::new(command).unwrap())
    .await
    .expect("the handshake succeeds");
    let server = client.peer_info().expect("the server answered initialize");
    assert_eq!(server.server_info.as_ref().map(|i| i.name.as_str()), Some("stardust"));

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"query_execute") && names.contains(&"describe_type"), "{names:?}");
    assert!(!names.contains(&"preview_confirm"), "mutation is off by default");
    assert!(tools.iter().all(|t| t.output_schema.is_some()), "every tool has an output schema");

    let rows = client
        .call_tool(CallToolRequestParams::new("query_execute").with_arguments(args(json!({
            "document": "find [?t] where [[?b id book/dune] [?b title ?t]]"
        }))))
        .await
        .unwrap();
    assert_eq!(rows.is_error, Some(false));
    assert_eq!(rows.structured_content.unwrap()["rows"], json!([["Dune"]]));

    let failed = client
        .call_tool(
            CallToolRequestParams::new("entity_get").with_arguments(args(json!({"id": "nobody"}))),
        )
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(failed.structured_content, None, "an error has no structured content");
    let failed = serde_json::to_value(&failed).unwrap();
    assert_eq!(util::mcp::tool_error(&failed)["code"], "not-found");

    let unknown = client
        .call_tool(CallToolRequestParams::new("run_shell").with_arguments(args(json!({}))))
        .await;
    assert!(unknown.is_err(), "an unknown tool is a protocol error");
    client.cancel().await.unwrap();
}

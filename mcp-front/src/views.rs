//! Views as MCP resources (SPEC §19): `stardust://views/<id>` lists and reads a view's
//! latest result (the bytes of its file in the mount, with its seq), and a subscribed client
//! hears `notifications/resources/updated` when it changes. The results are the core's
//! (`Service::views`); this module converts them.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ReadResourceResult, Resource, ResourceContents};
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;
use stardust_core::Code;
use stardust_core::service::Service;
use stardust_core::sync::lock;

pub(crate) const VIEWS: &str = "stardust://views/";

fn mime(format: &str) -> &'static str {
    match format {
        "json" => "application/json",
        "jsonl" => "application/jsonl",
        "csv" => "text/csv",
        _ => "text/plain",
    }
}

/// Every view as a resource, in id order.
pub(crate) fn list(service: &Service) -> Vec<Resource> {
    let Some(live) = service.views() else { return Vec::new() };
    let state = live.state();
    state
        .views
        .values()
        .map(|r| {
            let shown = r
                .path
                .as_deref()
                .map_or("not shown in the mount".to_owned(), |p| format!("shown at {p}"));
            Resource::new(format!("{VIEWS}{}", r.id), r.id.clone())
                .with_mime_type(mime(&r.format))
                .with_description(format!("view ({}, {shown}), as of seq {}", r.format, r.seq))
        })
        .collect()
}

/// The view named by `uri`, when it is a view's URI.
pub(crate) fn read(service: &Service, uri: &str) -> Option<Result<ReadResourceResult, McpError>> {
    let id = uri.strip_prefix(VIEWS)?;
    let not_found = |message: String| {
        McpError::resource_not_found(message, Some(json!({"code": Code::NotFound})))
    };
    let Some(live) = service.views() else {
        return Some(Err(McpError::internal_error(
            "views are not available in this core",
            Some(json!({"code": Code::Internal})),
        )));
    };
    let state = live.state();
    let Some(r) = state.views.get(id) else {
        return Some(Err(not_found(format!(
            "no view has the id '{id}'; resources/list names the views"
        ))));
    };
    let text = String::from_utf8_lossy(&r.bytes).into_owned();
    let mut seq = serde_json::Map::new();
    seq.insert("seq".into(), json!(r.seq));
    let contents = ResourceContents::text(text, uri)
        .with_mime_type(mime(&r.format))
        .with_meta(rmcp::model::MetaObject(seq));
    Some(Ok(ReadResourceResult::new(vec![contents])))
}

/// Forward changes of views' results to the client, for the view URIs it subscribed to.
pub(crate) fn start_feed(
    service: &Service,
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
    closed: Arc<AtomicBool>,
    peer: Peer<RoleServer>,
) {
    let Some(live) = service.views() else { return };
    let events = live.subscribe();
    let runtime = tokio::runtime::Handle::current();
    let spawned = std::thread::Builder::new().name("mcp-views".into()).spawn(move || {
        // Holding `live` keeps the results fresh while the connection lasts.
        let _live = live;
        while !closed.load(Ordering::Relaxed) {
            let Ok(event) = events.recv_timeout(Duration::from_millis(200)) else { continue };
            let wanted = lock(&subscriptions).clone();
            for id in event.ids {
                let uri = format!("{VIEWS}{id}");
                if !wanted.contains(&uri) {
                    continue;
                }
                crate::server::notify_updated(&runtime, &peer, uri);
            }
        }
    });
    if let Err(err) = spawned {
        tracing::warn!("no view update notifications: cannot start a thread: {err}");
    }
}

//! The MCP server: one connection's session (whose capabilities the core's mutation gate
//! decided), tool calls converted to registry commands, resources and their update
//! notifications.

use stardust_core::sync::lock;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, InitializeRequestParams, InitializeResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use stardust_core::Code;
use stardust_core::error::{error_line, error_object};
use stardust_core::service::{Front, Service, Session, SessionOptions};
use stardust_core::store::{Notice, projections};

use crate::derived;
use crate::tools::{self, CONFIRM_TOOL};
use crate::views::{self, VIEWS};

/// How a server was started.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `stardust mcp --allow-mutation`: every client may confirm previews.
    pub allow_mutation: bool,
}

/// Answers up to this size also carry their JSON in the text content, for hosts that show
/// the model only text; larger ones carry a summary there and the data in structured content.
const INLINE_JSON_BYTES: usize = 4 * 1024;

/// Resources listed per `resources/list` page.
const RESOURCE_PAGE: usize = 500;

/// Documents, and the derived files under `.stardust/json/` and `.stardust/entities/`.
pub(crate) const DOCUMENTS: &str = "stardust://documents/";
const ENTITIES: &str = "stardust://entities/";

/// One MCP connection to a store's [`Service`].
pub struct McpServer {
    conn: Arc<Conn>,
    inline: InlineSlot,
}

/// The one quick tool call at a time (`Contract::quick`) that runs on its runtime worker
/// itself, shared by every session of one runtime; every other call runs in
/// `block_in_place`, which first hands the worker's other tasks to a new thread.
///
/// A call in place holds its worker, and that worker may be the one the I/O driver needs (the
/// other may be asleep on its condition variable): so it may hold it only briefly. A quick
/// call's own work is short, and each of its waits that may be long (a language server's
/// answer past 2 ms, its start, another request's speculative check) goes through
/// `stardust_core::sync::long_wait`, which runs it in `block_in_place` here. The gain is the
/// hand-over, the largest cost of a fast call after its own work.
#[derive(Clone, Default)]
pub(crate) struct InlineSlot(Arc<AtomicBool>);

impl InlineSlot {
    fn run<T>(&self, quick: bool, call: impl FnOnce() -> T) -> T {
        struct Free<'a>(&'a AtomicBool);
        impl Drop for Free<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        if quick
            && self.0.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            let _free = Free(&self.0);
            stardust_core::sync::escaping(escape, call)
        } else {
            tokio::task::block_in_place(call)
        }
    }
}

/// A long wait of a call in place: in `block_in_place`, after all.
fn escape(wait: &mut dyn FnMut()) {
    tokio::task::block_in_place(wait)
}

struct Conn {
    service: Arc<Service>,
    options: Options,
    /// Set at `initialize`, from the client's name.
    state: OnceLock<Session>,
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
    feed_started: AtomicBool,
    closed: Arc<AtomicBool>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Relaxed);
        if let Some(session) = self.state.get() {
            self.service.close_session(session);
        }
    }
}

impl McpServer {
    /// A session on a runtime of its own (`crate::runtime`).
    pub fn new(service: Arc<Service>, options: Options) -> McpServer {
        McpServer::sharing(service, options, InlineSlot::default())
    }

    /// A session on a runtime whose other sessions hold the same `inline` slot.
    pub(crate) fn sharing(
        service: Arc<Service>,
        options: Options,
        inline: InlineSlot,
    ) -> McpServer {
        McpServer {
            inline,
            conn: Arc::new(Conn {
                service,
                options,
                state: OnceLock::new(),
                subscriptions: Arc::default(),
                feed_started: AtomicBool::new(false),
                closed: Arc::default(),
            }),
        }
    }
}

impl Conn {
    /// This connection's session, opened once: at `initialize` with the client's name, or
    /// (for a client that skipped it) with no name, which keeps a gated posture closed. The
    /// core decides (and records) whether it may confirm.
    fn state(&self, client: Option<&str>) -> &Session {
        self.state.get_or_init(|| {
            let options = SessionOptions { client, allow_mutation: self.options.allow_mutation };
            self.service.open_session_with(Front::Mcp, options)
        })
    }

    fn call(&self, name: &str, args: Map<String, Value>) -> CallToolResult {
        let session = self.state(None).clone();
        let Some(contract) = tools::command_of(name) else {
            let message = format!("unknown tool {name}; tools/list names every tool");
            return error_result(Code::InvalidArguments, &message, json!({}));
        };
        match self.service.execute_paged_json(&session, contract.name, args) {
            Ok((value, json)) => ok_result(name, value, &json),
            Err(err) => tool_error(&err.to_json(&self.service.store().snapshot().analysis)),
        }
    }
}

/// The answer `value`, whose compact JSON (as the core measured it) is `json`.
fn ok_result(tool: &str, value: Value, json: &str) -> CallToolResult {
    let mut text = summary(tool, &value);
    if json.len() <= INLINE_JSON_BYTES {
        text.push('\n');
        text.push_str(json);
    }
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// A tool failure of the front itself (a page bound, an answer too large).
fn error_result(code: Code, message: &str, details: Value) -> CallToolResult {
    tool_error(&error_object(code, message, details))
}

/// A tool failure as every host reads it (SPEC §13): `isError`, and two text blocks: the
/// summary `error[<code>]: message` (the code first, then what to do), and the error object
/// `{"error": {code, message, ...details}}` as JSON text. No `structuredContent`: hosts built
/// on the TypeScript SDK validate it against the tool's `outputSchema` even on an error, and
/// would replace the error with their own.
fn tool_error(error: &Value) -> CallToolResult {
    let code = error["code"].as_str().and_then(Code::parse).unwrap_or(Code::Internal);
    let summary = error_line(code, error["message"].as_str().unwrap_or_default());
    let object = json!({ "error": error }).to_string();
    CallToolResult::error(vec![ContentBlock::text(summary), ContentBlock::text(object)])
}

/// One line saying what an answer holds, and what was left out to fit 64 KiB.
fn summary(tool: &str, value: &Value) -> String {
    let mut line = headline(tool, value);
    if let Some(omitted) = value.get("omitted").and_then(Value::as_object) {
        let lists: Vec<String> = omitted.iter().map(|(k, n)| format!("{n} {k}")).collect();
        line.push_str(&format!(" (answer cut to fit 64 KiB; left out: {})", lists.join(", ")));
    }
    line
}

fn headline(tool: &str, value: &Value) -> String {
    if let Some(id) = value.get("previewId").and_then(Value::as_str) {
        let shown = value["documents"].as_array().map_or(0, Vec::len);
        let total = value["total"].as_u64().map_or(shown, |n| n as usize);
        let committable = value["committable"].as_bool().unwrap_or(false);
        let mut line = if committable {
            format!("{tool}: preview {id} changes {total} documents; commit it with {CONFIRM_TOOL}")
        } else {
            format!(
                "{tool}: preview {id} changes {total} documents and could not be committed (see reasons)"
            )
        };
        // A page of the documents: say which, and where the rest is.
        let next = value["nextOffset"].as_u64().map(|n| n as usize);
        let start = next.unwrap_or(total).saturating_sub(shown);
        if shown < total {
            line.push_str(&format!(
                "; this answer shows documents {} to {} of {total}",
                start + 1,
                start + shown
            ));
        }
        if let Some(next) = next {
            line.push_str(&format!(
                "; read the rest with preview_get {{\"previewId\": \"{id}\", \"offset\": {next}}}"
            ));
        }
        return line;
    }
    let list = ["rows", "diagnostics", "references", "locations", "symbols", "transactions"]
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_array));
    if let (Some(total), Some(list)) = (value.get("total"), list) {
        let next = match value.get("nextOffset").and_then(Value::as_u64) {
            Some(next) => format!("; more from offset {next}"),
            None => String::new(),
        };
        let shrunk =
            if value.get("pageShrunk").is_some() { " (page shrunk to fit 64 KiB)" } else { "" };
        return format!("{tool}: {} of {total}{next}{shrunk}", list.len());
    }
    if let Some(seq) = value.get("seq").filter(|_| tool == CONFIRM_TOOL) {
        return format!("{tool}: committed as seq {seq}");
    }
    format!("{tool}: ok")
}

fn protocol_error(code: Code, message: String) -> McpError {
    McpError::invalid_params(message, Some(json!({ "code": code })))
}

/// The MIME type of a document's text: JSON's for plain JSON; JSON with comments (which a
/// JSON reader refuses) and DUST are text.
fn document_mime(doc: &stardust_core::analysis::Document) -> &'static str {
    if doc.lang == stardust_core::syntax::Lang::Json { "application/json" } else { "text/plain" }
}

impl Conn {
    fn resources(&self, cursor: Option<&str>) -> Result<ListResourcesResult, McpError> {
        let offset = match cursor {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| {
                protocol_error(
                    Code::InvalidArguments,
                    format!("the cursor '{c}' is not one this server gave"),
                )
            })?,
        };
        let snapshot = self.service.store().snapshot();
        let analysis = &snapshot.analysis;
        let documents = analysis.documents().map(|doc| {
            let mime = document_mime(doc);
            Resource::new(format!("{DOCUMENTS}{}", doc.path), doc.path.clone()).with_mime_type(mime)
        });
        let entities = analysis.documents().flat_map(|doc| {
            doc.entities.iter().filter_map(|e| {
                let id = e.id.as_ref()?;
                let r = Resource::new(format!("{ENTITIES}{id}"), id.clone())
                    .with_mime_type("application/json")
                    .with_description(format!("entity of type {} in {}", e.ty, doc.path));
                Some(r)
            })
        });
        let mut all: Vec<Resource> = documents
            .chain(derived::list(analysis))
            .chain(entities)
            .chain(views::list(&self.service))
            .skip(offset)
            .take(RESOURCE_PAGE + 1)
            .collect();
        let more = all.len() > RESOURCE_PAGE;
        all.truncate(RESOURCE_PAGE);
        let mut result = ListResourcesResult::with_all_items(all);
        if more {
            result.next_cursor = Some((offset + RESOURCE_PAGE).to_string());
        }
        Ok(result)
    }

    fn read(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        let not_found = |what: String| {
            McpError::resource_not_found(what, Some(json!({"code": Code::NotFound})))
        };
        if let Some(result) = views::read(&self.service, uri) {
            return result;
        }
        let snapshot = self.service.store().snapshot();
        if let Some(path) = uri.strip_prefix(DOCUMENTS) {
            if let Some(result) = derived::read(&snapshot.analysis, path, uri) {
                return result;
            }
            let doc = snapshot.analysis.document(path).ok_or_else(|| {
                not_found(format!(
                    "{path} is not a document of the store; resources/list names them"
                ))
            })?;
            let mime = document_mime(doc);
            let contents = ResourceContents::text(doc.text.to_string(), uri).with_mime_type(mime);
            return Ok(ReadResourceResult::new(vec![contents]));
        }
        if let Some(id) = uri.strip_prefix(ENTITIES) {
            let session = self.state(None).clone();
            let value = self
                .service
                .execute(&session, "stardust.entity.get", json!({ "id": id }))
                .map_err(|e| not_found(e.to_string()))?;
            let text = serde_json::to_string_pretty(&value).unwrap_or_default();
            let contents = ResourceContents::text(text, uri).with_mime_type("application/json");
            return Ok(ReadResourceResult::new(vec![contents]));
        }
        Err(not_found(format!(
            "no resource {uri}; resources are {DOCUMENTS}<path>, {ENTITIES}<id> and {VIEWS}<id>"
        )))
    }

    /// Forward the store's change feed to this client as `notifications/resources/updated`
    /// for the URIs it subscribed to. One thread per connection, started at the first
    /// subscription; it ends with the connection.
    fn start_feed(&self, peer: Peer<RoleServer>) {
        if self.feed_started.swap(true, Ordering::SeqCst) {
            return;
        }
        views::start_feed(
            &self.service,
            self.subscriptions.clone(),
            self.closed.clone(),
            peer.clone(),
        );
        let feed = self.service.store().subscribe();
        let subscriptions = self.subscriptions.clone();
        let closed = self.closed.clone();
        let runtime = tokio::runtime::Handle::current();
        // Weak: this thread must not keep the core's service alive.
        let service = Arc::downgrade(&self.service);
        let spawned = std::thread::Builder::new().name("mcp-feed".into()).spawn(move || {
            while !closed.load(Ordering::Relaxed) {
                let Some(notice) = feed.next_timeout(Duration::from_millis(200)) else {
                    continue;
                };
                let wanted = lock(&subscriptions).clone();
                let changed: Vec<String> = match notice {
                    Notice::Changes { documents, entities, .. } => {
                        // Derived files only when one is subscribed to: naming them costs a
                        // look-up per changed entity.
                        let derived = wanted.iter().any(|uri| {
                            uri.strip_prefix(DOCUMENTS)
                                .is_some_and(|p| projections::area(p).is_some())
                        });
                        let service = service.upgrade().filter(|_| derived);
                        let derived = service.map(|service| {
                            let analysis = &service.store().snapshot().analysis;
                            derived::changed(analysis, &documents, &entities).collect::<Vec<_>>()
                        });
                        documents
                            .iter()
                            .map(|d| format!("{DOCUMENTS}{}", d.path))
                            .chain(entities.iter().map(|e| format!("{ENTITIES}{}", e.id)))
                            .chain(derived.into_iter().flatten())
                            .filter(|uri| wanted.contains(uri))
                            .collect()
                    }
                    // Too much changed to list: everything subscribed may have.
                    Notice::Overflow { .. } => wanted.into_iter().collect(),
                };
                for uri in changed {
                    notify_updated(&runtime, &peer, uri);
                }
            }
        });
        if let Err(err) = spawned {
            tracing::warn!("no resource update notifications: cannot start a thread: {err}");
        }
    }
}

/// Tell `peer` that the resource `uri` changed (`notifications/resources/updated`), from a
/// feed thread, without waiting for the write.
pub(crate) fn notify_updated(
    runtime: &tokio::runtime::Handle,
    peer: &Peer<RoleServer>,
    uri: String,
) {
    let peer = peer.clone();
    runtime.spawn(async move {
        let param = ResourceUpdatedNotificationParam::new(uri);
        if let Err(err) = peer.notify_resource_updated(param).await {
            tracing::debug!("could not send a resource update: {err}");
        }
    });
}

#[allow(deprecated)] // resources/subscribe is what every protocol version up to 2025-11-25 uses.
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("stardust", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Stardust serves one store of JSON and DUST documents. Read with query_execute, \
                 entity_get, diagnostics, hover, references and describe_type; mutation tools \
                 only preview, and preview_confirm (listed only when mutation is allowed) \
                 commits a preview. Positions are 1-based, columns in characters; entities are \
                 addressed by id.",
            )
    }

    /// Sessions begin with `initialize`, whose `clientInfo.name` the mutation gate needs.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        self.conn.state(Some(&request.client_info.name));
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let allowed = self.conn.state(None).may_confirm();
        // The list depends on the client's name: never shared between clients.
        Ok(ListToolsResult::with_all_items(tools::list(allowed))
            .with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let Some(contract) = tools::command_of(&name) else {
            return Err(protocol_error(
                Code::InvalidArguments,
                format!("unknown tool {name}; tools/list names every tool"),
            ));
        };
        let quick = contract.quick;
        let args = request.arguments.unwrap_or_default();
        // Run on this task's thread: in place (`InlineSlot`), or handing its other tasks to a
        // new worker for the while. Either way the connection keeps reading during a long
        // query, as on the blocking pool, but a call neither waits for a pool thread to wake
        // nor for this task to be woken back. Every server runtime is multi-threaded
        // (`crate::runtime`), which this needs. A panic is still an answer (as the pool's
        // join error was), not a silent request.
        let call = std::panic::AssertUnwindSafe(|| self.conn.call(&name, args));
        let result =
            self.inline.run(quick, || std::panic::catch_unwind(call)).unwrap_or_else(|_| {
                error_result(Code::Internal, "the tool failed: it panicked", json!({}))
            });
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let conn = self.conn.clone();
        let cursor = request.and_then(|r| r.cursor);
        tokio::task::spawn_blocking(move || conn.resources(cursor.as_deref()))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        // RFC 6570 reserved expansion: a path or an id keeps its slashes.
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(format!("{DOCUMENTS}{{+path}}"), "document").with_description(
                "a document of the store by its store-relative path, as text; also a derived \
                 file: .stardust/json/<document>.json, .stardust/entities/<id>.json",
            ),
            ResourceTemplate::new(format!("{ENTITIES}{{+id}}"), "entity")
                .with_description("an entity by id: its value, document path, range and version")
                .with_mime_type("application/json"),
            ResourceTemplate::new(format!("{VIEWS}{{+id}}"), "view").with_description(
                "a view's latest result (its file in the mount), with its seq in _meta",
            ),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || conn.read(&request.uri))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?
            .map(ReadResourceResponse::from)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if ![DOCUMENTS, ENTITIES, VIEWS].iter().any(|p| request.uri.starts_with(p)) {
            return Err(protocol_error(
                Code::InvalidArguments,
                format!(
                    "cannot subscribe to {}; resources are {DOCUMENTS}<path>, {ENTITIES}<id> and {VIEWS}<id>",
                    request.uri
                ),
            ));
        }
        lock(&self.conn.subscriptions).insert(request.uri);
        self.conn.start_feed(context.peer.clone());
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        lock(&self.conn.subscriptions).remove(&request.uri);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    /// How many times a ticker task ran while `call` ran through `slot` (`quick` or not), on
    /// a runtime of one worker: the ticker can only run if the call's worker was handed over.
    fn ticks_during(slot: &InlineSlot, quick: bool, call: fn()) -> usize {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build();
        let runtime = runtime.unwrap();
        let ticks = Arc::new(AtomicUsize::new(0));
        let counting = ticks.clone();
        runtime.spawn(async move {
            loop {
                counting.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        let slot = slot.clone();
        let during = runtime.block_on(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let ticks = ticks.clone();
            tokio::spawn(async move {
                let before = ticks.load(Ordering::Relaxed);
                slot.run(quick, call);
                ticks.load(Ordering::Relaxed) - before
            })
            .await
            .unwrap()
        });
        runtime.shutdown_background();
        during
    }

    fn short() {
        std::thread::sleep(Duration::from_millis(100));
    }

    fn long() {
        stardust_core::sync::long_wait(|| std::thread::sleep(Duration::from_millis(100)));
    }

    #[test]
    fn a_quick_call_runs_in_place_and_its_long_waits_hand_the_worker_over() {
        let slot = InlineSlot::default();
        // In place: its worker is held for the whole call.
        assert_eq!(ticks_during(&slot, true, short), 0);
        // A long wait of a call in place hands the worker over first.
        assert!(ticks_during(&slot, true, long) > 3);
        // Any other call hands it over at once.
        assert!(ticks_during(&slot, false, short) > 3);
        // Only one call at a time runs in place: with the slot taken, a quick one hands over.
        slot.0.store(true, Ordering::Relaxed);
        assert!(ticks_during(&slot, true, short) > 3);
    }
}

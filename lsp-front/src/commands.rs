//! `workspace/executeCommand` for every command of the core's registry (SPEC §7), the change
//! notifications of SPEC §11, and `$/progress` for long work.

use std::sync::{Arc, Weak};

use async_lsp::router::Router;
use async_lsp::{ClientSocket, ErrorCode, LanguageClient, ResponseError};
use lsp_types::notification::Notification;
use lsp_types::request::ExecuteCommand;
use lsp_types::{
    ExecuteCommandOptions, ExecuteCommandParams, ServerCapabilities, WorkDoneProgressOptions,
};
use serde_json::{Value, json};
use stardust_core::Code;
use stardust_core::service::{self, CommandError, Front};
use stardust_core::store::{Notice, Subscription, projections};

use crate::diagnostics::publish_now;
use crate::progress::Progress;
use crate::state::DiagnosticsMode;
use crate::state::{Shared, State, error, internal};

/// The version of the `stardust/*` extensions to the protocol; bumped on incompatible change.
pub const PROTOCOL_VERSION: u32 = 1;

/// The notifications a client can ask for, by their names in `experimental.stardust`.
const NOTIFICATIONS: [&str; 2] = ["documentsChanged", "entitiesChanged"];

enum DocumentsChanged {}

impl Notification for DocumentsChanged {
    type Params = Value;
    const METHOD: &'static str = "stardust/documentsChanged";
}

enum EntitiesChanged {}

impl Notification for EntitiesChanged {
    type Params = Value;
    const METHOD: &'static str = "stardust/entitiesChanged";
}

/// Advertise the commands (and progress for them) in the server's capabilities, and the
/// `stardust` extensions in `experimental`. A read-only server offers no notifications: it
/// sees no commits.
pub fn extend_capabilities(capabilities: &mut ServerCapabilities, read_only: bool) {
    capabilities.execute_command_provider = Some(ExecuteCommandOptions {
        commands: service::shown_in(Front::Lsp).map(|c| c.name.to_owned()).collect(),
        work_done_progress_options: WorkDoneProgressOptions { work_done_progress: Some(true) },
    });
    let notifications: &[&str] = if read_only { &[] } else { &NOTIFICATIONS };
    capabilities.experimental = Some(json!({
        "stardust": {
            "protocolVersion": PROTOCOL_VERSION,
            "notifications": notifications,
            "readOnly": read_only,
            "commands": service::describe()["commands"],
        }
    }));
}

pub fn register(router: &mut Router<State>) {
    router.request::<ExecuteCommand, _>(|st, params| {
        let shared = st.shared();
        let progress = Progress::start(
            st.client(),
            params.work_done_progress_params.work_done_token.clone(),
            &params.command,
        );
        async move {
            let answer = tokio::task::spawn_blocking(move || execute(&shared, params))
                .await
                .map_err(internal)?;
            progress.end();
            answer
        }
    });
}

/// Run one command for this connection's session. LSP passes one argument object.
fn execute(shared: &Shared, params: ExecuteCommandParams) -> Result<Option<Value>, ResponseError> {
    let name = params.command;
    let mut arguments = params.arguments;
    if arguments.len() > 1 {
        return Err(error(
            ErrorCode::INVALID_PARAMS,
            Code::InvalidArguments,
            format!(
                "{name} takes one argument object (`\"arguments\": [{{...}}]`), not {}",
                arguments.len()
            ),
        ));
    }
    // Clients written in Lua send an empty table as `[]`: it means no arguments, like `{}`.
    let args = match arguments.pop() {
        Some(Value::Array(items)) if items.is_empty() => Value::Null,
        Some(args) => args,
        None => Value::Null,
    };
    if service::contract(&name).is_none_or(|c| !c.shown_in(Front::Lsp)) {
        return Err(error(
            ErrorCode::INVALID_PARAMS,
            Code::InvalidArguments,
            format!("unknown command {name}; `stardust.commands.describe` lists every command"),
        ));
    }
    if name == "stardust.commands.describe" {
        // Needs no store, so it answers in read-only mode too.
        return Ok(Some(service::describe()));
    }
    let (service, session) = shared.service()?;
    match service.execute(&session, &name, args) {
        Ok(value) => Ok(Some(value)),
        Err(err) => Err(command_error(&err, &service.store().snapshot().analysis)),
    }
}

/// A command's error as a JSON-RPC error whose `data` is the core's error object.
pub(crate) fn command_error(
    err: &CommandError,
    analysis: &stardust_core::analysis::Analysis,
) -> ResponseError {
    let rpc = match err.code() {
        Code::InvalidArguments => ErrorCode::INVALID_PARAMS,
        Code::Internal => ErrorCode::INTERNAL_ERROR,
        _ => ErrorCode::REQUEST_FAILED,
    };
    ResponseError::new_with_data(rpc, err.to_string(), err.to_json(analysis))
}

/// Forward the store's change feed to the client on a thread of its own, and re-diagnose the
/// open buffers after every commit (another client's commit may resolve or break them). Ends
/// when the store closes or the connection's state is gone.
pub fn forward_changes(subscription: Subscription, client: ClientSocket, shared: Weak<Shared>) {
    // The refresh request is answered asynchronously, on the server's runtime.
    let runtime = tokio::runtime::Handle::try_current().ok();
    let spawned =
        std::thread::Builder::new().name("stardust-lsp-feed".to_owned()).spawn(move || {
            while let Some(notice) = subscription.next() {
                let Some(shared) = shared.upgrade() else { break };
                if notify(&client, &shared, &notice).is_err() {
                    break;
                }
                shared.bump();
                let mode = shared.connection().map(|c| c.diagnostics).unwrap_or_default();
                match (mode, &runtime) {
                    (DiagnosticsMode::Pull, Some(runtime)) => {
                        let mut client = client.clone();
                        let shared = Arc::downgrade(&shared);
                        runtime.spawn(async move {
                            let Err(err) = client.workspace_diagnostic_refresh(()).await else {
                                return;
                            };
                            tracing::debug!("the client refused to refresh ({err}); publishing");
                            if let Some(shared) = shared.upgrade() {
                                let _ = tokio::task::spawn_blocking(move || {
                                    publish_now(client, &shared);
                                })
                                .await;
                            }
                        });
                    }
                    _ => publish_now(client.clone(), &shared),
                }
            }
        });
    if let Err(err) = spawned {
        tracing::warn!("cannot start the change feed thread ({err}); no change notifications");
    }
}

/// Send the notifications the client asked for. `Err` when the connection is gone.
fn notify(client: &ClientSocket, shared: &Shared, notice: &Notice) -> async_lsp::Result<()> {
    let conn = shared.connection();
    let (wants, paths) = (conn.map(|c| c.wants).unwrap_or_default(), conn.map(|c| &c.paths));
    match notice {
        Notice::Overflow { seq } => {
            let overflow = json!({"seq": seq, "overflow": true});
            if wants.documents {
                client.notify::<DocumentsChanged>(overflow.clone())?;
            }
            if wants.entities {
                client.notify::<EntitiesChanged>(overflow)?;
            }
        }
        Notice::Changes { seq, documents, entities } => {
            if wants.documents && !documents.is_empty() {
                // The projections and entity files the commit changed come with the documents
                // they derive from (SPEC §19, docs/DECISIONS.md).
                let service = conn.and_then(|c| c.service());
                let derived = service.map(|s| {
                    projections::changed(&s.store().snapshot().analysis, documents, entities)
                });
                let derived = derived.into_iter().flatten().map(|d| {
                    json!({
                        "uri": paths.as_ref().and_then(|p| p.uri(&d.path)),
                        "path": d.path,
                        "change": d.change,
                        "version": d.version,
                        "derived": true,
                    })
                });
                let documents: Vec<Value> = documents
                    .iter()
                    .map(|d| {
                        json!({
                            "uri": paths.as_ref().and_then(|p| p.uri(&d.path)),
                            "path": d.path,
                            "change": d.change,
                            "version": d.version,
                        })
                    })
                    .chain(derived)
                    .collect();
                client.notify::<DocumentsChanged>(json!({"seq": seq, "documents": documents}))?;
            }
            if wants.entities && !entities.is_empty() {
                client.notify::<EntitiesChanged>(json!({"seq": seq, "entities": entities}))?;
            }
        }
    }
    Ok(())
}

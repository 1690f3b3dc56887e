//! Views' results in `stardust/documentsChanged` (SPEC §19): when a view's result changes,
//! appears or goes, a client that asked for document notifications hears of its path with
//! `"derived": true`. The results and what changed are the core's (`Service::views`).

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_lsp::ClientSocket;
use lsp_types::notification::Notification;
use serde_json::{Value, json};
use stardust_core::analysis::version_of;
use stardust_core::views::Live;

use crate::state::Shared;

enum DocumentsChanged {}

impl Notification for DocumentsChanged {
    type Params = Value;
    const METHOD: &'static str = "stardust/documentsChanged";
}

/// Forward changes of views' results on a thread of its own until the connection is gone.
pub fn forward(live: Arc<Live>, client: ClientSocket, shared: Weak<Shared>) {
    let events = live.subscribe();
    let spawned =
        std::thread::Builder::new().name("stardust-lsp-views".to_owned()).spawn(move || {
            loop {
                let event = events.recv_timeout(Duration::from_secs(1));
                let Some(shared) = shared.upgrade() else { break };
                let Ok(event) = event else { continue };
                let state = live.state();
                let conn = shared.connection();
                let (wants, paths) =
                    (conn.map(|c| c.wants).unwrap_or_default(), conn.map(|c| &c.paths));
                let documents: Vec<Value> = event
                    .paths
                    .iter()
                    .map(|(path, change)| {
                        json!({
                            "uri": paths.as_ref().and_then(|p| p.uri(path)),
                            "path": path,
                            "change": change.as_str(),
                            "version": state.at_path(path).map(|r| version_of(&r.bytes)),
                            "derived": true,
                        })
                    })
                    .collect();
                if wants.documents
                    && !documents.is_empty()
                    && client
                        .notify::<DocumentsChanged>(
                            json!({"seq": event.seq, "documents": documents}),
                        )
                        .is_err()
                {
                    break;
                }
            }
        });
    if let Err(err) = spawned {
        tracing::warn!("cannot start the views' thread ({err}); no notifications for views");
    }
}

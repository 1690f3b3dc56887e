//! Text sync: the client's document notifications, on the main loop in the order received,
//! converted into calls on the core's buffers (positions into byte offsets in the negotiated
//! encoding), then a publication when diagnostics are pushed.

use std::ops::ControlFlow;

use async_lsp::{AnyNotification, ClientSocket, LanguageClient};
use lsp_types::notification::{self, Notification};
use lsp_types::{
    DidChangeTextDocumentParams, DidChangeWatchedFilesParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, PublishDiagnosticsParams, Url,
};
use stardust_core::ide::{Edit, Edited};
use stardust_core::text::{Encoding, LineIndex};

use crate::convert;
use crate::diagnostics::publish;
use crate::state::DiagnosticsMode;
use crate::state::{Shared, State};

/// Every notification, dispatched here so that bad parameters are logged instead of stopping
/// the main loop (the router's typed handlers break it).
pub(crate) fn on_notification(
    st: &mut State,
    notif: AnyNotification,
) -> ControlFlow<async_lsp::Result<()>> {
    let method = notif.method.as_str();
    let changed = match method {
        notification::DidOpenTextDocument::METHOD => {
            parse::<DidOpenTextDocumentParams>(notif.params, method)
                .map(|p| did_open(&st.shared, p))
        }
        notification::DidChangeTextDocument::METHOD => {
            parse::<DidChangeTextDocumentParams>(notif.params, method)
                .map(|p| did_change(&st.shared, p))
        }
        notification::DidSaveTextDocument::METHOD => {
            parse::<DidSaveTextDocumentParams>(notif.params, method)
                .map(|p| mark_stale(&st.shared, [p.text_document.uri]))
        }
        notification::Initialized::METHOD | notification::Exit::METHOD => None,
        notification::DidChangeWatchedFiles::METHOD => {
            parse::<DidChangeWatchedFilesParams>(notif.params, method)
                .map(|p| mark_stale(&st.shared, p.changes.into_iter().map(|c| c.uri)))
        }
        notification::DidCloseTextDocument::METHOD => {
            parse::<DidCloseTextDocumentParams>(notif.params, method)
                .map(|p| did_close(&st.client, &st.shared, p))
        }
        _ => {
            tracing::debug!("ignoring the notification {method}");
            None
        }
    };
    if changed == Some(true)
        && let Some(conn) = st.shared.connection()
        && conn.diagnostics == DiagnosticsMode::Push
    {
        publish(st.client.clone(), st.shared.clone(), conn.buffers.generation());
    }
    ControlFlow::Continue(())
}

fn parse<T: serde::de::DeserializeOwned>(params: serde_json::Value, method: &str) -> Option<T> {
    serde_json::from_value(params)
        .map_err(|err| tracing::warn!("ignoring {method}: bad parameters: {err}"))
        .ok()
}

fn did_open(shared: &Shared, params: DidOpenTextDocumentParams) -> bool {
    let doc = params.text_document;
    let conn = shared.connection();
    let Some((conn, path)) = conn.and_then(|c| Some((c, c.paths.relative(&doc.uri)?))) else {
        tracing::warn!("{} is outside the store; it is not analysed", doc.uri);
        return false;
    };
    conn.buffers.open_buffer(path, doc.text, doc.version, doc.uri)
}

/// Apply the changes in order. A change whose range is not inside the current text is refused:
/// it and the changes after it in the same notification are dropped with a warning, and the
/// buffer keeps the text it had before that change (later changes were computed against a text
/// we do not have).
fn did_change(shared: &Shared, params: DidChangeTextDocumentParams) -> bool {
    let uri = params.text_document.uri;
    let version = params.text_document.version;
    let conn = shared.connection();
    let Some((conn, path)) = conn.and_then(|c| Some((c, c.paths.relative(&uri)?))) else {
        tracing::warn!("didChange for {uri}, which is not open; ignored");
        return false;
    };
    let ranges: Vec<_> = params.content_changes.iter().map(|c| c.range).collect();
    let edits = params.content_changes.into_iter().map(|change| match change.range {
        None => Edit::Replace(change.text),
        Some(range) => Edit::Splice { range, text: change.text },
    });
    match conn.buffers.edit(&path, version, edits, resolver(conn.encoding)) {
        Edited::NotOpen => {
            tracing::warn!("didChange for {uri}, which is not open; ignored");
            false
        }
        Edited::Applied => true,
        Edited::Refused(i) => {
            tracing::warn!(
                "refusing an edit of {uri} (version {version}) whose range {:?} is not inside the text; the buffer keeps its previous text",
                ranges[i]
            );
            true
        }
    }
}

/// Protocol ranges as byte ranges of the text they were computed against, `None` when an end
/// is not inside it.
pub(crate) fn resolver(
    encoding: Encoding,
) -> impl FnMut(&LineIndex, &str, &lsp_types::Range) -> Option<std::ops::Range<u32>> {
    move |index, text, range| {
        let start = convert::offset(index, text, range.start, encoding)?;
        let end = convert::offset(index, text, range.end, encoding)?;
        Some(start..end)
    }
}

/// Note that documents may differ on disk from what the read-only base holds. In store mode
/// the store's watcher takes such edits in as `external` commits, which re-diagnose.
fn mark_stale(shared: &Shared, uris: impl IntoIterator<Item = Url>) -> bool {
    let Some(conn) = shared.connection() else { return false };
    conn.buffers.mark_stale(uris.into_iter().filter_map(|uri| conn.paths.relative(&uri)))
}

fn did_close(client: &ClientSocket, shared: &Shared, params: DidCloseTextDocumentParams) -> bool {
    let uri = params.text_document.uri;
    let conn = shared.connection();
    let Some((conn, path)) = conn.and_then(|c| Some((c, c.paths.relative(&uri)?))) else {
        return false;
    };
    stardust_core::sync::lock(&shared.token_results).forget(&uri);
    // A closed document's diagnostics are those of its file, which the workspace pull reports.
    conn.buffers.close(&path, |buffer| {
        let _ = client.clone().publish_diagnostics(PublishDiagnosticsParams {
            uri: buffer.meta().clone(),
            diagnostics: Vec::new(),
            version: None,
        });
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range, TextDocumentContentChangeEvent};
    use stardust_core::ide::Buffer;

    fn change(sl: u32, sc: u32, el: u32, ec: u32, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range { start: Position::new(sl, sc), end: Position::new(el, ec) }),
            range_length: None,
            text: text.to_owned(),
        }
    }

    /// The buffer's text after `change`; its line index must stay that of its text.
    fn applied(
        text: &str,
        change: &TextDocumentContentChangeEvent,
        encoding: Encoding,
    ) -> Option<String> {
        let mut buffer = Buffer::new("a.json".to_owned(), text.to_owned(), 1, ());
        let edit = match change.range {
            None => Edit::Replace(change.text.clone()),
            Some(range) => Edit::Splice { range, text: change.text.clone() },
        };
        let result = buffer.apply(edit, resolver(encoding));
        assert_eq!(
            *buffer.index(),
            LineIndex::new(buffer.text()),
            "the line index follows the text"
        );
        result.then(|| buffer.text().to_owned())
    }

    #[test]
    fn changes_apply_in_the_client_encoding() {
        let text = "a😀b\nc";
        assert_eq!(
            applied(text, &change(0, 3, 0, 4, "X"), Encoding::Utf16).as_deref(),
            Some("a😀X\nc")
        );
        assert_eq!(
            applied(text, &change(0, 2, 0, 3, "X"), Encoding::Utf32).as_deref(),
            Some("a😀X\nc")
        );
        assert_eq!(applied(text, &change(0, 5, 1, 0, ""), Encoding::Utf8).as_deref(), Some("a😀c"));
    }

    #[test]
    fn out_of_range_changes_are_refused() {
        let text = "ab\ncd";
        assert_eq!(applied(text, &change(0, 3, 0, 3, "X"), Encoding::Utf16), None);
        assert_eq!(applied(text, &change(4, 0, 4, 0, "X"), Encoding::Utf16), None);
        assert_eq!(applied(text, &change(1, 1, 0, 0, "X"), Encoding::Utf16), None);
        // Inside a surrogate pair.
        assert_eq!(applied("😀", &change(0, 1, 0, 1, "X"), Encoding::Utf16), None);
        let whole = TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: "new".to_owned(),
        };
        assert_eq!(applied(text, &whole, Encoding::Utf16).as_deref(), Some("new"));
    }

    /// The protocol position of char index `i` of `text` in `encoding`, computed naively.
    fn naive_position(text: &str, i: usize, encoding: Encoding) -> Position {
        let before: String = text.chars().take(i).collect();
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let line = &before[line_start..];
        let column = match encoding {
            Encoding::Utf8 => line.len(),
            Encoding::Utf16 => line.encode_utf16().count(),
            Encoding::Utf32 => line.chars().count(),
        };
        Position::new(before.matches('\n').count() as u32, column as u32)
    }

    proptest::proptest! {
        /// An edit addressed in any encoding splices exactly the characters it names.
        #[test]
        fn edits_splice_the_named_characters(
            text in "[a-zé😀\n ]{0,40}",
            a in 0usize..50,
            b in 0usize..50,
            insert in "[x😀\n]{0,3}",
            enc in 0usize..3,
        ) {
            let encoding = [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32][enc];
            let n = text.chars().count();
            let (start, end) = (a.min(b).min(n), a.max(b).min(n));
            let range = Range {
                start: naive_position(&text, start, encoding),
                end: naive_position(&text, end, encoding),
            };
            let change = TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: insert.clone() };
            let expected: String = text.chars().take(start).chain(insert.chars()).chain(text.chars().skip(end)).collect();
            proptest::prop_assert_eq!(applied(&text, &change, encoding), Some(expected));
        }
    }
}

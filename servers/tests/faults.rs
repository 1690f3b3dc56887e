//! Every fault of issue 18 against the fake server, and the LSP client's behaviours (retries,
//! timeouts, server requests, progress, encodings, documents, diagnostics).

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use stardust_core::Code;
use stardust_servers::{LanguageServer, PositionEncoding, Readiness, ServerError, State};

fn state(server: &LanguageServer) -> Value {
    server.request("fake/state", Value::Null, None).expect("fake/state answers").result
}

#[test]
fn a_missing_server_is_unavailable_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), &[]);
    spec.command = PathBuf::from("/nonexistent/fake-lsp");
    let server = LanguageServer::new(spec, program());
    let err = server.request("fake/state", Value::Null, None).unwrap_err();
    assert_eq!(err.code(), Code::ServerUnavailable);
    assert_eq!(
        err.to_string(),
        "language server 'fake' cannot start: /nonexistent/fake-lsp does not exist; install it or fix `command` in [servers.fake]"
    );
    assert_eq!(server.status().state, State::Idle);
    assert_eq!(server.status().supervisor_pid, None);
}

#[test]
fn a_root_that_is_not_a_folder_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(&dir.path().join("gone"), &[]);
    let err = server.request("fake/state", Value::Null, None).unwrap_err();
    assert_eq!(err.code(), Code::ServerUnavailable);
    assert_eq!(
        err.to_string(),
        format!(
            "language server 'fake' failed to start: its root {} is not a folder",
            dir.path().join("gone").display()
        )
    );
}

#[test]
fn a_server_that_exits_at_once_failed_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &["--exit-at-once"]);
    let err = server.request("fake/state", Value::Null, None).unwrap_err();
    assert_eq!(err.code(), Code::ServerUnavailable);
    let message = err.to_string();
    assert!(message.starts_with("language server 'fake' failed to start: the server closed its output before answering initialize"), "{message}");
    assert!(message.contains("it exited (exit code 1)"), "{message}");
    assert!(message.contains("its last words: fake-lsp: exiting at once as asked"), "{message}");
    assert_eq!(server.status().state, State::Crashed);
}

#[test]
fn a_server_that_never_answers_initialize_is_stopped_at_the_startup_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("leak.pid");
    let mut spec = spec(dir.path(), &["--no-initialize", "--leak", pidfile.to_str().unwrap()]);
    spec.timeouts.startup = Duration::from_millis(500);
    let server = LanguageServer::new(spec, program());
    let started = Instant::now();
    let err = server.request("fake/state", Value::Null, None).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(err.code(), Code::ServerUnavailable);
    assert!(
        err.to_string().contains("it did not answer initialize within 0.5s (timeouts.startup)"),
        "{err}"
    );
    let leaked = leaked_pid(&pidfile);
    assert_eq!(survivors(&[leaked], Duration::from_secs(5)), Vec::<i32>::new());
}

#[test]
fn a_server_that_answers_garbage_failed_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &["--garbage"]);
    let err = server.request("fake/state", Value::Null, None).unwrap_err();
    assert_eq!(err.code(), Code::ServerUnavailable);
    assert!(
        err.to_string().contains(
            "the server wrote garbage (not an LSP header: \"this is not a language server\") before answering initialize"
        ),
        "{err}"
    );
}

#[test]
fn a_crash_mid_request_is_unavailable_then_the_server_restarts_with_its_documents() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let file = dir.path().join("a.fk");
    server.open(&file, "one").unwrap();
    let (_, first_pid) = tree_pids(&server);
    let err = server.request("fake/crash", Value::Null, None).unwrap_err();
    assert_eq!(err.code(), Code::ServerUnavailable);
    assert!(matches!(err, ServerError::Crashed { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with("language server 'fake' stopped while answering fake/crash"),
        "{err}"
    );
    // Not replayed: the next request starts a new server, which has the open document.
    let docs = state(&server)["documents"].clone();
    assert_eq!(
        docs,
        json!({crate::file_uri(&file): {"version": 1, "text": "one", "languageId": "fake"}})
    );
    let status = server.status();
    assert_eq!(status.restarts, 1);
    assert_eq!(status.recent_crashes, 1);
    assert_ne!(status.server_pid, Some(first_pid));
    assert!(status.last_error.unwrap().contains("it exited (exit code 3)"));
}

fn file_uri(path: &std::path::Path) -> String {
    stardust_core::ide::file_uri(path)
}

#[test]
fn restarts_are_limited_per_minute_until_an_explicit_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), &[]);
    spec.max_restarts = 2;
    let server = LanguageServer::new(spec, program());
    for _ in 0..3 {
        let err = server.request("fake/crash", Value::Null, None).unwrap_err();
        assert!(matches!(err, ServerError::Crashed { .. }), "{err:?}");
    }
    let err = server.request("fake/state", Value::Null, None).unwrap_err();
    assert_eq!(err.code(), Code::ServerUnavailable);
    assert_eq!(
        err.to_string(),
        "language server 'fake' crashed 3 times within a minute and is not restarted; run server_restart after fixing it"
    );
    assert_eq!(server.status().state, State::Unavailable);
    let status = server.restart().unwrap();
    // Running again, its initial analysis not yet over (it says nothing: SPEC §25's quiet).
    assert_eq!(status.state, State::Indexing);
    assert!(status.since.is_some());
    assert_eq!(status.recent_crashes, 0);
    assert!(state(&server)["pid"].is_u64());
}

#[test]
fn a_flood_of_notifications_does_not_block_requests() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let file = dir.path().join("flood.fk");
    let uri = file_uri(&file);
    let started = Instant::now();
    let flood = json!({"count": 10000, "uri": uri});
    let answer = server.request("fake/flood", flood, Some(Duration::from_secs(60))).unwrap();
    assert_eq!(answer.result, json!(10000));
    server.open(&file, "x").unwrap();
    let hover = server
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
            None,
        )
        .unwrap();
    assert_eq!(hover.result["contents"]["value"], "v1 1 bytes");
    eprintln!("20,000 notifications and two requests in {:?}", started.elapsed());
    assert!(server.notifications_seen() >= 20000, "{}", server.notifications_seen());
    let diagnostics = server.diagnostics(&file).unwrap();
    assert_eq!(diagnostics.version, Some(9999));
    assert_eq!(diagnostics.diagnostics[0]["message"], "flood 9999");
}

#[test]
fn a_request_past_its_timeout_is_busy_and_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    server.ensure_started().unwrap();
    let started = Instant::now();
    let err =
        server.request("fake/never", Value::Null, Some(Duration::from_millis(200))).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(err.code(), Code::Busy);
    assert_eq!(
        err.to_string(),
        "language server 'fake' did not answer fake/never within 0.2s (cancelled); it may still be indexing, try again later"
    );
    assert_eq!(state(&server)["cancelled"].as_array().unwrap().len(), 1);
    // A late answer to a forgotten request is dropped, and the server still answers.
    let err = server
        .request("fake/slow", json!({"ms": 300}), Some(Duration::from_millis(50)))
        .unwrap_err();
    assert_eq!(err.code(), Code::Busy);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(state(&server)["cancelled"].as_array().unwrap().len(), 2);
}

#[test]
fn content_modified_and_server_cancelled_are_retried_three_times() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let answer = server.request("fake/modified", json!({"key": "a", "times": 3}), None).unwrap();
    assert_eq!(answer.result, json!("done"));
    let answer =
        server.request("fake/server-cancelled", json!({"key": "b", "times": 2}), None).unwrap();
    assert_eq!(answer.result, json!("done"));
    let err = server.request("fake/modified", json!({"key": "c", "times": 4}), None).unwrap_err();
    assert_eq!(err.code(), Code::Busy);
    assert_eq!(
        err.to_string(),
        "language server 'fake' kept cancelling fake/modified (the file kept changing); try again"
    );
}

#[test]
fn methods_the_server_lacks_are_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let err = server.request("textDocument/definition", json!({}), None).unwrap_err();
    assert_eq!(err.code(), Code::Unsupported);
    assert_eq!(err.to_string(), "language server 'fake' does not support textDocument/definition");
}

#[test]
fn the_servers_requests_are_answered_and_edits_never_applied() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    // Asked by the fake right after `initialized`; answered by the reader meanwhile.
    let until = Instant::now() + Duration::from_secs(5);
    let mut configuration = state(&server)["configuration"].clone();
    while configuration.is_null() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
        configuration = state(&server)["configuration"].clone();
    }
    assert_eq!(configuration, json!([{"answer": 42}, {"fake": {"answer": 42}}]));
    let ask = |method: &str, params: Value| {
        server
            .request("fake/ask", json!({"method": method, "params": params}), None)
            .unwrap()
            .result
    };
    let edit = json!({"edit": {"changes": {file_uri(&dir.path().join("a.fk")): [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "newText": "x"}
    ]}}});
    assert_eq!(
        ask("workspace/applyEdit", edit),
        json!({"applied": false, "failureReason": "stardust applies edits only through a preview the user confirms"})
    );
    assert!(!dir.path().join("a.fk").exists());
    assert_eq!(ask("window/workDoneProgress/create", json!({"token": 7})), Value::Null);
    assert_eq!(
        ask(
            "client/registerCapability",
            json!({"registrations": [{"id": "1", "method": "workspace/didChangeWatchedFiles"}]})
        ),
        Value::Null
    );
    assert_eq!(
        ask(
            "workspace/configuration",
            json!({"items": [{"section": "fake.answer"}, {"section": "other"}]})
        ),
        json!([42, null])
    );
    assert_eq!(
        ask("workspace/workspaceFolders", Value::Null),
        json!([{"uri": file_uri(dir.path()), "name": dir.path().file_name().unwrap().to_str().unwrap()}])
    );
    assert_eq!(
        ask("no/such", Value::Null),
        json!({"error": {"code": -32601, "message": "stardust does not implement no/such"}})
    );
}

#[test]
fn progress_makes_answers_indexing_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &["--progress-at-start", "600"]);
    let answer = server.request("fake/state", Value::Null, None).unwrap();
    assert_eq!(answer.readiness, Readiness::Indexing);
    let status = server.status();
    assert_eq!(status.state, State::Indexing);
    assert_eq!(status.progress.as_deref(), Some("indexing the fake"));
    let until = Instant::now() + Duration::from_secs(5);
    while server.readiness() == Readiness::Indexing && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        server.request("fake/state", Value::Null, None).unwrap().readiness,
        Readiness::Ready
    );
    server.request("fake/progress", json!({"token": "t", "kind": "begin"}), None).unwrap();
    assert_eq!(
        server.request("fake/state", Value::Null, None).unwrap().readiness,
        Readiness::Indexing
    );
    server.request("fake/progress", json!({"token": "t", "kind": "end"}), None).unwrap();
    // Ready once it stayed out of work for READY_SETTLE.
    let until = Instant::now() + Duration::from_secs(5);
    while server.readiness() != Readiness::Ready && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let answer = server.request("fake/state", Value::Null, None).unwrap();
    assert_eq!(answer.readiness, Readiness::Ready);
    assert_eq!(server.status().state, State::Ready);
}

#[test]
fn the_position_encoding_is_negotiated() {
    let dir = tempfile::tempdir().unwrap();
    for (supports, chosen) in [
        ("utf-16", PositionEncoding::Utf16),
        ("utf-16,utf-8", PositionEncoding::Utf8),
        ("utf-32,utf-16", PositionEncoding::Utf32),
        ("none", PositionEncoding::Utf16),
    ] {
        let server = server(dir.path(), &["--encodings", supports]);
        server.ensure_started().unwrap();
        assert_eq!(server.status().position_encoding, Some(chosen), "{supports}");
        let offered =
            state(&server)["initialize"]["capabilities"]["general"]["positionEncodings"].clone();
        assert_eq!(offered, json!(["utf-8", "utf-32", "utf-16"]));
    }
}

#[test]
fn documents_are_opened_changed_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let file = dir.path().join("a.fk");
    let uri = file_uri(&file);
    server.open(&file, "one").unwrap();
    server.change(&file, "three").unwrap();
    assert_eq!(server.document_version(&file), Some(2));
    let hover = server
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
            None,
        )
        .unwrap();
    assert_eq!(hover.result["contents"]["value"], "v2 5 bytes");
    server.close(&file);
    assert_eq!(state(&server)["documents"], json!({}));
    let err = server.open(&dir.path().join("a.py"), "x").unwrap_err();
    assert_eq!(err.code(), Code::Unsupported);
    let notifications = state(&server)["notifications"].clone();
    assert_eq!(
        notifications,
        json!([
            "initialized",
            "textDocument/didOpen",
            "textDocument/didChange",
            "textDocument/didClose"
        ])
    );
}

/// Small messages are written in place and large ones by the writer thread: a request sent
/// right after a change far larger than the pipe still reaches the server after it, whole.
#[test]
fn messages_keep_their_order_between_writes_in_place_and_the_writer_thread() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let file = dir.path().join("a.fk");
    let uri = file_uri(&file);
    let hover = |server: &LanguageServer| {
        let at = json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}});
        server.request("textDocument/hover", at, None).unwrap().result["contents"]["value"].clone()
    };
    server.open(&file, "one").unwrap();
    let big = "x".repeat(4 << 20);
    for round in 0..3 {
        server.change(&file, &big).unwrap();
        assert_eq!(hover(&server), format!("v{} {} bytes", 2 + 2 * round, big.len()));
        server.change(&file, "small").unwrap();
        assert_eq!(hover(&server), format!("v{} 5 bytes", 3 + 2 * round));
    }
}

#[test]
fn push_diagnostics_are_kept_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let (a, b) = (dir.path().join("a.fk"), dir.path().join("b.fk"));
    let diagnostic = |m: &str| json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": m});
    server
        .request(
            "fake/publish",
            json!({"uri": file_uri(&a), "version": 3, "diagnostics": [diagnostic("in a")]}),
            None,
        )
        .unwrap();
    server
        .request(
            "fake/publish",
            json!({"uri": file_uri(&b), "diagnostics": [diagnostic("in b")]}),
            None,
        )
        .unwrap();
    server.request("fake/publish", json!({"uri": file_uri(&b), "diagnostics": []}), None).unwrap();
    let a_diags = server.diagnostics(&a).unwrap();
    assert_eq!(
        (a_diags.version, a_diags.diagnostics[0]["message"].clone()),
        (Some(3), json!("in a"))
    );
    assert_eq!(server.diagnostics(&b).unwrap().diagnostics, Vec::<Value>::new());
    assert_eq!(server.diagnostics(&dir.path().join("c.fk")), None);
}

/// What a speculative check waits on: work announced (`window/workDoneProgress/create`) is
/// work in progress before it begins (readiness `indexing`, SPEC §25); every publication and
/// report of work done has its place on one clock; a crash is told.
#[test]
fn activity_places_publications_and_work_done_on_one_clock() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let a = dir.path().join("a.fk");
    let publish = |version: i64| {
        let params = json!({"uri": file_uri(&a), "version": version, "diagnostics": []});
        server.request("fake/publish", params, None).unwrap();
        server.diagnostics(&a).unwrap().at
    };
    let first = publish(1);
    let idle = server.activity().unwrap();
    assert!(!idle.busy && !idle.reports && idle.stopped.is_none(), "{idle:?}");
    assert_eq!(idle.done_at, 0);
    assert!(idle.last_heard.is_some());

    let progress = |kind: &str| {
        server.request("fake/progress", json!({"token": "t", "kind": kind}), None).unwrap()
    };
    assert_eq!(progress("create").readiness, Readiness::Indexing);
    let announced = server.activity().unwrap();
    assert!(announced.busy && announced.reports, "{announced:?}");
    let second = publish(2);
    assert!(second > first);
    assert_eq!(progress("begin").readiness, Readiness::Indexing);
    assert!(server.activity().unwrap().busy);
    progress("end");
    let done = server.activity().unwrap();
    assert!(!done.busy && done.reports, "{done:?}");
    assert!(done.done_at > second, "{done:?} after {second}");
    // Published after the work was done: later on the clock.
    assert!(publish(3) > done.done_at);

    let _ = server.request("fake/crash", Value::Null, None).unwrap_err();
    let stopped = server.activity().unwrap();
    assert!(stopped.stopped.is_some(), "{stopped:?}");
}

#[test]
fn the_server_gets_a_scrubbed_environment_and_its_own_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let state = state(&server);
    for key in state["env"].as_array().unwrap() {
        let key = key.as_str().unwrap();
        assert!(
            stardust_servers::spec::KEPT_ENV.contains(&key) || key.starts_with("LC_"),
            "{key} reached the server"
        );
    }
    assert_eq!(state["pid"], state["pgid"], "the server leads its own process group");
    let (supervisor, pid) = tree_pids(&server);
    assert_eq!(state["pid"], json!(pid));
    assert_ne!(supervisor, pid);
    assert_ne!(state["pgid"], json!(nix::unistd::getpgrp().as_raw()));
}

#[test]
fn a_server_that_hangs_on_shutdown_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("leak.pid");
    let mut spec = spec(dir.path(), &["--hang-on-shutdown", "--leak", pidfile.to_str().unwrap()]);
    spec.timeouts.shutdown = Duration::from_millis(500);
    let server = LanguageServer::new(spec, program());
    server.ensure_started().unwrap();
    let (supervisor, pid) = tree_pids(&server);
    let leaked = leaked_pid(&pidfile);
    let started = Instant::now();
    server.shutdown();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(survivors(&[supervisor, pid, leaked], Duration::from_secs(5)), Vec::<i32>::new());
    assert_eq!(server.status().state, State::Stopped);
    let err = server.request("fake/state", Value::Null, None).unwrap_err();
    assert_eq!(
        (err.code(), err.to_string()),
        (Code::ServerUnavailable, "language server 'fake' was stopped".into())
    );
}

#[test]
fn concurrent_first_requests_share_one_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    let pids: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            (0..8).map(|_| scope.spawn(|| state(&server)["pid"].as_u64().unwrap())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(pids.iter().all(|&p| p == pids[0]), "{pids:?}");
    assert_eq!(server.status().restarts, 0);
}

#[test]
fn a_request_that_hangs_does_not_block_another_caller() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), &[]);
    server.ensure_started().unwrap();
    std::thread::scope(|scope| {
        let hung =
            scope.spawn(|| server.request("fake/never", Value::Null, Some(Duration::from_secs(3))));
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        assert!(state(&server)["pid"].is_u64());
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        assert_eq!(hung.join().unwrap().unwrap_err().code(), Code::Busy);
    });
}

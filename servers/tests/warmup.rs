//! SPEC §25 against the fake server through the core: readiness from a server's own signals
//! (or its quiet), warm-up when a session attaches (once however many attach, never for an
//! untrusted table, within the restart budget for one that crashes), navigation that waits
//! for readiness or answers `busy` naming it, and idle servers stopped.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{alive, fake_exe, program};
use serde_json::{Value, json};
use stardust_core::service::{Front, Service, Session};
use stardust_core::store::{OpenOptions, Store};
use stardust_servers::Host;

/// A store with one `.fk` file and the user's `[servers.fake]` table (its `extra` keys and the
/// fake's `args`), served by a core with the real host.
struct Core {
    _dir: tempfile::TempDir,
    store: PathBuf,
    pids: PathBuf,
    service: Arc<Service>,
}

fn table(args: &[&str], pids: &Path, extra: &str) -> String {
    let mut args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    args.push(format!("\"--pid-log\", {:?}", pids.to_str().unwrap()));
    format!(
        "[servers.fake]\ncommand = {:?}\nargs = [{}]\nlanguages = {{ fk = \"fake\" }}\n{extra}",
        fake_exe().to_str().unwrap(),
        args.join(", "),
    )
}

/// The table in the user's `servers.toml` (trusted), or in the store's own `stardust.toml`
/// (`in_store`: untrusted, since nobody ran `stardust trust`).
fn core_with(args: &[&str], extra: &str, in_store: bool) -> Core {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let store = base.join("store");
    let config = base.join("config");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    let pids = base.join("pids");
    let table = table(args, &pids, extra);
    let (store_toml, user_toml) = if in_store {
        (format!("[store]\n{table}"), String::new())
    } else {
        ("[store]\n".into(), table)
    };
    std::fs::write(store.join("stardust.toml"), store_toml).unwrap();
    std::fs::write(config.join("servers.toml"), user_toml).unwrap();
    std::fs::write(store.join("a.fk"), "alpha\n").unwrap();
    let opened =
        Store::open(&store, OpenOptions { watch: false, ..OpenOptions::default() }).unwrap();
    let service = Service::new(opened)
        .with_code_config_dir(Some(config))
        .with_code_host(Arc::new(Host::new(program())));
    Core { _dir: dir, store, pids, service: Arc::new(service) }
}

fn core(args: &[&str], extra: &str) -> Core {
    core_with(args, extra, false)
}

impl Core {
    fn session(&self) -> Session {
        self.service.open_session(Front::Mcp, "test-agent")
    }

    /// The pids the fake servers wrote when they started.
    fn started(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }

    fn status(&self, session: &Session) -> Value {
        let out = self.service.execute(session, "server_status", json!({})).unwrap();
        out["servers"][0].clone()
    }

    /// `server_status` once `done` holds of it (or after `limit`).
    fn status_when(
        &self,
        session: &Session,
        limit: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let until = Instant::now() + limit;
        loop {
            let status = self.status(session);
            if done(&status) || Instant::now() > until {
                return status;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn references(&self, session: &Session) -> Result<Value, Value> {
        let args = json!({"path": "a.fk", "position": {"line": 1, "column": 1}});
        let snapshot = self.service.store().snapshot();
        self.service.execute(session, "references", args).map_err(|e| e.to_json(&snapshot.analysis))
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        self.service.shutdown_code_servers();
    }
}

#[test]
fn a_server_that_never_reports_progress_is_ready_after_its_quiet_and_warmed_up_at_attach() {
    let core = core(&[], "");
    let session = core.session();
    // Started in the background by the session attaching: no request asked for it.
    let status = core.status_when(&session, Duration::from_secs(10), |s| s["pid"].is_i64());
    assert!(matches!(status["state"].as_str(), Some("starting" | "indexing")), "{status}");
    assert!(status["since"].is_string(), "{status}");
    // Asked at once, `references` waits for the quiet period, then answers complete.
    let answer = core.references(&session).unwrap();
    assert_eq!((&answer["readiness"], &answer["complete"]), (&json!("ready"), &json!(true)));
    assert_eq!(answer["total"], 1);
    let status = core.status(&session);
    assert_eq!(status["state"], "ready", "{status}");
    assert_eq!(core.started().len(), 1);
}

/// A server that goes silent while it works without reporting it (pyright running the
/// interpreter) is not taken as ready when its quiet period passes: it answers the probe only
/// once its work is over, and is ready only after a quiet period it answers promptly in.
#[test]
fn a_server_silent_at_work_is_not_ready_until_it_answers_a_probe_promptly() {
    let core = core(&["--stall-after-initialized", "4000"], "");
    let session = core.session();
    let status = core.status_when(&session, Duration::from_secs(10), |s| s["pid"].is_i64());
    assert!(status["pid"].is_i64(), "{status}");
    let started = Instant::now();
    // Well past the quiet period, still at work.
    std::thread::sleep(Duration::from_millis(3_000));
    let status = core.status(&session);
    assert_eq!(status["state"], "indexing", "{status}");
    // Its work over, it answers, and is ready once a prompt probe follows a quiet period.
    let status = core.status_when(&session, Duration::from_secs(15), |s| s["state"] == "ready");
    assert_eq!(status["state"], "ready", "{status}");
    assert!(started.elapsed() >= Duration::from_millis(4_000), "{:?}", started.elapsed());
    let answer = core.references(&session).unwrap();
    assert_eq!((&answer["readiness"], &answer["complete"]), (&json!("ready"), &json!(true)));
}

#[test]
fn a_server_indexing_forever_answers_busy_naming_its_readiness() {
    let core = core(&["--indexing-forever"], "timeouts = { request = 1 }\n");
    let session = core.session();
    let err = core.references(&session).unwrap_err();
    assert_eq!(err["code"], "busy", "{err}");
    assert_eq!((&err["server"], &err["readiness"]), (&json!("fake"), &json!("indexing")));
    assert!(err["since"].is_string(), "{err}");
    assert!(err["message"].as_str().unwrap().contains("is indexing"), "{err}");
    let status = core.status(&session);
    assert_eq!(
        (&status["state"], &status["progress"]),
        (&json!("indexing"), &json!("indexing forever"))
    );
}

#[test]
fn a_server_crashing_while_warming_up_is_restarted_within_its_budget() {
    let core = core(&["--crash-after", "100"], "max_restarts = 2\n");
    let session = core.session();
    // Started, crashed and started again twice, then given up: three processes in all.
    let status = core.status_when(&session, Duration::from_secs(20), |s| s["gaveUp"] == true);
    assert_eq!(
        (&status["state"], &status["gaveUp"]),
        (&json!("crashed"), &json!(true)),
        "{status}"
    );
    assert_eq!(core.started().len(), 3, "{status}");
    assert!(status["since"].is_string(), "{status}");
    let err = core.references(&session).unwrap_err();
    assert_eq!(err["code"], "server-unavailable", "{err}");
    // Another session attaching does not start it again past its budget.
    let _other = core.session();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(core.started().len(), 3);
}

#[test]
fn an_untrusted_table_starts_nothing_at_warm_up_and_says_so_only_when_asked() {
    let core = core_with(&[], "", true);
    let session = core.session();
    std::thread::sleep(Duration::from_millis(500));
    assert!(core.started().is_empty(), "an untrusted server started");
    let status = core.status(&session);
    assert_eq!(status["state"], "untrusted", "{status}");
    let err = core.references(&session).unwrap_err();
    assert_eq!(err["code"], "untrusted", "{err}");
    assert!(core.started().is_empty());
    assert!(core.store.join("a.fk").exists());
}

#[test]
fn twenty_sessions_attaching_at_once_warm_one_server_up() {
    let core = Arc::new(core(&[], ""));
    let barrier = Arc::new(Barrier::new(20));
    let sessions: Vec<Session> = (0..20)
        .map(|_| {
            let (core, barrier) = (core.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                core.session()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let status = core.status_when(&sessions[0], Duration::from_secs(10), |s| s["state"] == "ready");
    assert_eq!(status["state"], "ready", "{status}");
    let started = core.started();
    assert_eq!(started.len(), 1, "one warm-up, one process: {started:?}");
    assert_eq!(status["pid"], json!(started[0]));
    for session in &sessions {
        assert_eq!(core.status(session)["pid"], json!(started[0]));
    }
}

#[test]
fn a_lazy_server_waits_for_the_first_request_and_an_idle_one_is_stopped() {
    let core = core(&[], "start = \"lazy\"\nidle_stop = 1\n");
    let session = core.session();
    std::thread::sleep(Duration::from_millis(500));
    assert!(core.started().is_empty(), "a lazy server started before any request");
    assert_eq!(core.status(&session)["state"], "idle");
    let answer = core.references(&session).unwrap();
    assert_eq!(answer["complete"], true);
    let pid = core.started()[0];
    assert!(alive(pid));
    // Unused for idle_stop: stopped with its process, and started again by the next request.
    let status = core.status_when(&session, Duration::from_secs(10), |s| s["state"] == "idle");
    assert_eq!((&status["state"], &status["pid"]), (&json!("idle"), &Value::Null), "{status}");
    assert!(common::survivors(&[pid], Duration::from_secs(5)).is_empty());
    core.references(&session).unwrap();
    assert_eq!(core.started().len(), 2);
}

#[test]
fn the_warm_up_opens_the_first_file_with_content_not_an_empty_one() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("opened");
    let core = core(&["--open-log", log.to_str().unwrap()], "");
    // Before `a.fk` in path order, and nothing to check in it (an empty `__init__.py`).
    std::fs::write(core.store.join("0.fk"), " \n").unwrap();
    let session = core.session();
    let status = core.status_when(&session, Duration::from_secs(10), |s| s["state"] == "ready");
    assert_eq!(status["state"], "ready", "{status}");
    let opened = std::fs::read_to_string(&log).unwrap();
    let opened: Vec<&str> = opened.lines().collect();
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert!(opened[0].ends_with("/store/a.fk"), "{opened:?}");
}

#[test]
fn a_rename_s_cross_check_is_asked_while_the_rename_is_computed() {
    // The fake answers the rename only once the references are asked too: asked one after
    // the other, the rename would be `busy` after the request timeout.
    let core = core(
        &["--rename-waits-for-references", "--publish-on-change"],
        "timeouts = { request = 3 }\n",
    );
    let session = core.session();
    let args = json!({"path": "a.fk", "position": {"line": 1, "column": 1}, "newName": "omega"});
    let snapshot = core.service.store().snapshot();
    let preview = core
        .service
        .execute(&session, "rename_preview", args)
        .map_err(|e| e.to_json(&snapshot.analysis))
        .unwrap();
    assert_eq!(preview["committable"], true, "{preview}");
    let documents = preview["documents"].as_array().unwrap();
    assert_eq!(documents.len(), 1, "{preview}");
    assert_eq!(documents[0]["path"], "a.fk", "{preview}");
    assert!(documents[0]["diff"].as_str().unwrap().contains("+omega"), "{preview}");
}

//! One smoke test against a real server: a hover and push diagnostics from pyright through
//! the supervised client, when `pyright-langserver` is installed (`npm i -g pyright`); the
//! other tests use only the fake server.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use stardust_servers::{LanguageServer, ServerSpec, Timeouts};

fn pyright() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("pyright-langserver")).find(|p| p.is_file())
}

#[test]
fn pyright_hovers_and_diagnoses_a_python_file() {
    let Some(command) = pyright() else {
        eprintln!(
            "pyright-langserver is not on PATH (npm i -g pyright): the real-server smoke test did not run"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("app.py");
    let text = "def greet(name: str) -> str:\n    return name\n\ncount: int = greet(\"x\")\n";
    std::fs::write(&file, text).unwrap();
    let mut spec = ServerSpec::new("pyright", command, &root);
    spec.args = vec!["--stdio".into()];
    spec.languages.insert("py".into(), "python".into());
    spec.timeouts = Timeouts {
        startup: Duration::from_secs(60),
        request: Duration::from_secs(60),
        shutdown: Duration::from_secs(5),
    };
    let server = LanguageServer::new(spec, common::program());
    let started = Instant::now();
    server.open(&file, text).unwrap();
    let uri = stardust_core::ide::file_uri(&file);
    let hover = server
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 3, "character": 14}}),
            None,
        )
        .unwrap();
    let shown = hover.result["contents"]["value"].as_str().unwrap_or_default().to_owned();
    assert!(shown.contains("def greet(name: str) -> str"), "{}", hover.result);
    eprintln!(
        "pyright: first hover {:?} after the start ({}), encoding {:?}",
        started.elapsed(),
        hover.readiness.as_str(),
        server.status().position_encoding
    );
    // `count: int = greet("x")` assigns a str to an int: pyright pushes an error for line 4.
    let until = Instant::now() + Duration::from_secs(30);
    let diagnostics = loop {
        if let Some(d) = server.diagnostics(&file).filter(|d| !d.diagnostics.is_empty()) {
            break d.diagnostics;
        }
        assert!(Instant::now() < until, "no diagnostics from pyright within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 3, "{diagnostics:?}");
    let (supervisor, pid) = common::tree_pids(&server);
    server.shutdown();
    assert_eq!(common::survivors(&[supervisor, pid], Duration::from_secs(5)), Vec::<i32>::new());
}

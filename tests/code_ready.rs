//! SPEC §25 end to end: the real `stardust mcp` (rmcp's client) with the real pyright and
//! typescript-language-server on a project generated here, large enough that their first
//! analysis takes seconds (500 modules importing each other). Asked the moment the session
//! opens, `references` is complete or says it is not, and `rename_preview` is complete and
//! committable, not committable, or `busy` — never a committable partial rename; a confirmed
//! rename leaves the project compiling (pyright's and tsc's own command lines say so); a
//! rename that breaks a file it does not touch shows the new error in its delta; a harmless
//! rename beside a pre-existing error has an empty delta.
//!
//! HOME and XDG_CONFIG_HOME point into each test's temporary folder. Each test starts its
//! server once (a cold start is the point) and groups its checks.

mod util;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

/// How many modules the generated projects have.
const MODULES: usize = 500;

/// The modules module `i` imports (and calls): a chain, a tree and a stride, so that each
/// module is imported by a few others.
fn deps(i: usize) -> Vec<usize> {
    let mut deps: Vec<usize> = [i.checked_sub(1), Some(i / 2), i.checked_sub(7)]
        .into_iter()
        .flatten()
        .filter(|&j| j < i)
        .collect();
    deps.sort_unstable();
    deps.dedup();
    deps
}

/// The modules that import module `i`.
fn importers(i: usize) -> Vec<usize> {
    (0..MODULES).filter(|&k| deps(k).contains(&i)).collect()
}

/// A generated store with one language and its server's table, trusted.
struct Project {
    dir: tempfile::TempDir,
    store: PathBuf,
    /// The language's folder in the store (`py`, `web`): the server's root.
    folder: &'static str,
}

impl Project {
    fn new(folder: &'static str, table: &str, files: Vec<(String, String)>) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        for (rel, text) in files {
            let path = store.join(folder).join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::write(store.join("stardust.toml"), format!("[store]\n{table}")).unwrap();
        let store = store.canonicalize().unwrap();
        std::fs::create_dir_all(dir.path().join("xdg/stardust")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let project = Project { dir, store, folder };
        let out = Command::new(env!("CARGO_BIN_EXE_stardust"))
            .args(["trust", project.store.to_str().unwrap()])
            .envs(project.env())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", util::text(&out.stderr));
        project
    }

    /// A Python package of [`MODULES`] modules (`pkg/mNNNN.py`, each a function `fNNNN`
    /// calling those of [`deps`], and a few classes), a protocol and a class that meets it
    /// only by its shape (`proto.py`, `impl.py`), and a file with an error of its own
    /// (`flawed.py`).
    fn python() -> Project {
        let mut files = vec![
            ("pyproject.toml".to_owned(), "[tool.pyright]\n".to_owned()),
            ("pkg/__init__.py".to_owned(), String::new()),
            ("pkg/core.py".to_owned(), "def shared_helper(x: int) -> int:\n    return x + 1\n".to_owned()),
            (
                "pkg/proto.py".to_owned(),
                "from typing import Protocol\n\n\nclass Runner(Protocol):\n    def run(self) -> int: ...\n\n\n\
                 def go(p: Runner) -> int:\n    return p.run()\n"
                    .to_owned(),
            ),
            (
                "pkg/impl.py".to_owned(),
                "from pkg.proto import go\n\n\nclass Impl:\n    def run(self) -> int:\n        return 1\n\n\n\
                 x = go(Impl())\n"
                    .to_owned(),
            ),
            (
                "pkg/flawed.py".to_owned(),
                "def helper_a(x: int = \"s\") -> int:\n    return x\n".to_owned(),
            ),
        ];
        for i in 0..MODULES {
            let mut text = "from pkg.core import shared_helper\n".to_owned();
            for j in deps(i) {
                writeln!(text, "from pkg.m{j:04} import f{j:04}").unwrap();
            }
            let calls: Vec<String> = deps(i).iter().map(|j| format!("f{j:04}(x)")).collect();
            writeln!(text, "\n\ndef f{i:04}(x: int) -> int:").unwrap();
            writeln!(
                text,
                "    return {}shared_helper(x)",
                calls.iter().map(|c| format!("{c} + ")).collect::<String>()
            )
            .unwrap();
            for k in 0..5 {
                writeln!(
                    text,
                    "\n\nclass C{i}x{k}:\n    def m(self, y: int) -> int:\n        return y * {k}"
                )
                .unwrap();
            }
            files.push((format!("pkg/m{i:04}.py"), text));
        }
        let table = "[servers.pyright]\ncommand = \"pyright-langserver\"\nargs = [\"--stdio\"]\n\
                     languages = { py = \"python\" }\nroot_markers = [\"pyproject.toml\"]\n\
                     settings = { python = { analysis = { typeCheckingMode = \"standard\" } } }\n";
        Project::new("py", table, files)
    }

    /// The same project in TypeScript (`src/mNNNN.ts`, `proto.ts`, `impl.ts`, `flawed.ts`).
    fn typescript() -> Project {
        let mut files = vec![
            (
                "tsconfig.json".to_owned(),
                "{\"compilerOptions\": {\"strict\": true, \"target\": \"es2020\", \"module\": \"commonjs\", \
                 \"noEmit\": true}, \"include\": [\"src\"]}\n"
                    .to_owned(),
            ),
            ("src/core.ts".to_owned(), "export function sharedHelper(x: number): number {\n  return x + 1;\n}\n".to_owned()),
            (
                "src/proto.ts".to_owned(),
                "export interface Runner {\n  run(): number;\n}\n\nexport function go(p: Runner): number {\n  return p.run();\n}\n"
                    .to_owned(),
            ),
            (
                "src/impl.ts".to_owned(),
                "import { go } from \"./proto\";\n\nclass Impl {\n  run(): number {\n    return 1;\n  }\n}\n\n\
                 export const x = go(new Impl());\n"
                    .to_owned(),
            ),
            (
                "src/flawed.ts".to_owned(),
                "export function helperA(x: number = \"s\"): number {\n  return x;\n}\n".to_owned(),
            ),
        ];
        for i in 0..MODULES {
            let mut text = "import { sharedHelper } from \"./core\";\n".to_owned();
            for j in deps(i) {
                writeln!(text, "import {{ f{j:04} }} from \"./m{j:04}\";").unwrap();
            }
            let calls: String = deps(i).iter().map(|j| format!("f{j:04}(x) + ")).collect();
            writeln!(text, "\nexport function f{i:04}(x: number): number {{\n  return {calls}sharedHelper(x);\n}}").unwrap();
            for k in 0..5 {
                writeln!(text, "\nexport class C{i}x{k} {{\n  m(y: number): number {{\n    return y * {k};\n  }}\n}}").unwrap();
            }
            files.push((format!("src/m{i:04}.ts"), text));
        }
        let table = "[servers.typescript]\ncommand = \"typescript-language-server\"\nargs = [\"--stdio\"]\n\
                     languages = { ts = \"typescript\" }\nroot_markers = [\"tsconfig.json\"]\n\
                     timeouts = { startup = 60, request = 60 }\n";
        Project::new("web", table, files)
    }

    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("XDG_CONFIG_HOME", self.dir.path().join("xdg")),
            ("HOME", self.dir.path().join("home")),
        ]
    }

    /// `stardust mcp --allow-mutation` on the store; the core it starts stops 2 s after its
    /// last client.
    async fn connect(&self) -> Client {
        let command =
            tokio::process::Command::new(env!("CARGO_BIN_EXE_stardust")).configure(|cmd| {
                cmd.args(["mcp", "--allow-mutation", "--store"])
                    .arg(&self.store)
                    .envs(self.env())
                    .env("STARDUST_IDLE_EXIT", "2")
                    .env_remove("RUST_LOG");
            });
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("code-ready-test", "1.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_06_18)
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .expect("the handshake succeeds")
    }

    /// The store path of the file `rel` of the language's folder.
    fn path(&self, rel: &str) -> String {
        format!("{}/{rel}", self.folder)
    }

    /// The errors the language's own command line reports for the whole project, each as
    /// `file:rule` (messages aside).
    fn compile_errors(&self) -> Vec<String> {
        let root = self.store.join(self.folder);
        let mut found = if self.folder == "py" {
            let out =
                Command::new("pyright").arg("--outputjson").current_dir(&root).output().unwrap();
            let report: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("pyright's report: {e}: {}", util::text(&out.stderr)));
            report["generalDiagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["severity"] == "error")
                .map(|d| {
                    let file = d["file"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
                    format!("{file}:{}", d["rule"].as_str().unwrap_or("-"))
                })
                .collect::<Vec<_>>()
        } else {
            let out = Command::new("tsc")
                .args(["--noEmit", "-p", "."])
                .current_dir(&root)
                .output()
                .unwrap();
            util::text(&out.stdout)
                .lines()
                .filter(|l| l.contains("error TS"))
                .map(|l| {
                    let file = l.split('(').next().unwrap().rsplit('/').next().unwrap();
                    let code = l.split("error ").nth(1).unwrap().split(':').next().unwrap();
                    format!("{file}:{code}")
                })
                .collect()
        };
        found.sort();
        found
    }
}

async fn try_call(peer: &Peer<RoleClient>, tool: &str, args: Value) -> Result<Value, Value> {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap());
    let result = peer.call_tool(params).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
    let content = result.structured_content.unwrap_or(Value::Null);
    if result.is_error == Some(true) { Err(content["error"].clone()) } else { Ok(content) }
}

async fn call(peer: &Peer<RoleClient>, tool: &str, args: Value) -> Value {
    try_call(peer, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool} {args} failed: {e}"))
}

fn at(path: &str, line: usize, column: usize) -> Value {
    json!({"path": path, "position": {"line": line, "column": column}})
}

fn rename_at(path: &str, line: usize, column: usize, name: &str) -> Value {
    let mut args = at(path, line, column);
    args["newName"] = json!(name);
    args
}

/// The 1-based line of `fNNNN`'s definition in its module (`ext`): after the imports and
/// two blank lines in Python, one in TypeScript.
fn def_line(i: usize, ext: &str) -> usize {
    1 + deps(i).len() + if ext == "py" { 3 } else { 2 }
}

/// The files a rename of `fNNNN` must change: its module and every importer.
fn rename_files(project: &Project, i: usize, ext: &str) -> Vec<String> {
    let mut files: Vec<String> = std::iter::once(i)
        .chain(importers(i))
        .map(|k| {
            project.path(&format!("{}/m{k:04}.{ext}", if ext == "py" { "pkg" } else { "src" }))
        })
        .collect();
    files.sort();
    files
}

fn preview_paths(preview: &Value) -> Vec<String> {
    let mut paths: Vec<String> = preview["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_owned())
        .collect();
    paths.sort();
    paths
}

/// A cold rename asked the moment the session opens: complete and committable, or refused
/// (not committable, or `busy`). A committable one must be the whole rename.
fn judge_cold_rename(answer: &Result<Value, Value>, whole: &[String]) -> bool {
    match answer {
        Ok(preview) if preview["committable"] == true => {
            assert_eq!(preview_paths(preview), whole, "a committable partial rename: {preview}");
            assert!(preview.get("incomplete").is_none(), "{preview}");
            true
        }
        Ok(preview) => {
            let reasons = preview["reasons"].to_string();
            assert!(
                reasons.contains("incomplete"),
                "not committable for another reason: {preview}"
            );
            false
        }
        Err(err) => {
            assert_eq!(err["code"], "busy", "{err}");
            assert!(err["readiness"].is_string(), "{err}");
            false
        }
    }
}

/// What every language is checked for (see the module's comment); `ext` is the files'
/// extension, `folder` the source folder in the language's folder.
async fn the_contract_holds(project: &Project, ext: &str, folder: &str) {
    let baseline = project.compile_errors();
    let client = project.connect().await;
    let peer = client.peer().clone();
    // The moment the session opens: references to f0100, and a rename of f0200, at once.
    let m = |i: usize| project.path(&format!("{folder}/m{i:04}.{ext}"));
    let column = if ext == "py" { 5 } else { 17 };
    let (references, rename) = tokio::join!(
        try_call(&peer, "references", at(&m(100), def_line(100, ext), column)),
        try_call(
            &peer,
            "rename_preview",
            rename_at(&m(200), def_line(200, ext), column, "renamed0200")
        ),
    );
    let expected = 1 + 2 * importers(100).len();
    match &references {
        Ok(answer) if answer["complete"] == true => {
            assert_eq!(answer["total"], expected, "a complete answer misses references: {answer}");
        }
        Ok(answer) => assert_eq!(answer["complete"], false, "{answer}"),
        Err(err) => assert_eq!(err["code"], "busy", "{err}"),
    }
    let whole = rename_files(project, 200, ext);
    let mut preview = rename.clone();
    if !judge_cold_rename(&rename, &whole) {
        // Asked again on the server now ready: the whole rename.
        preview = try_call(
            &peer,
            "rename_preview",
            rename_at(&m(200), def_line(200, ext), column, "renamed0200"),
        )
        .await;
        assert!(judge_cold_rename(&preview, &whole), "{preview:?}");
    }
    let preview = preview.unwrap();
    assert_eq!(preview["diagnostics"]["new"], json!([]), "{preview}");
    call(&peer, "preview_confirm", json!({"previewId": preview["previewId"]})).await;
    // Once ready, references are complete.
    let answer = call(&peer, "references", at(&m(100), def_line(100, ext), column)).await;
    assert_eq!(
        (&answer["complete"], &answer["total"]),
        (&json!(true), &json!(expected)),
        "{answer}"
    );
    let status = call(&peer, "server_status", json!({})).await;
    assert_eq!(status["servers"][0]["state"], "ready", "{status}");
    assert!(status["servers"][0]["since"].is_string(), "{status}");

    // A rename that breaks a file it does not touch (a class that meets the protocol by its
    // shape only): the delta shows the new error there.
    let (proto, line, column) =
        if ext == "py" { ("pkg/proto.py", 5, 9) } else { ("src/proto.ts", 2, 3) };
    let broken =
        call(&peer, "rename_preview", rename_at(&project.path(proto), line, column, "execute"))
            .await;
    assert_eq!(preview_paths(&broken), [project.path(proto)], "{broken}");
    let new: Vec<&str> = broken["diagnostics"]["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    let impl_file = project.path(&format!("{folder}/impl.{ext}"));
    assert!(new.contains(&impl_file.as_str()), "the delta misses the broken file: {broken}");
    call(&peer, "preview_discard", json!({"previewId": broken["previewId"]})).await;

    // A harmless rename in a file with an error of its own: an empty delta.
    let (flawed, name, column) = if ext == "py" {
        ("pkg/flawed.py", "helper_longer_name", 5)
    } else {
        ("src/flawed.ts", "helperLongerName", 17)
    };
    let harmless =
        call(&peer, "rename_preview", rename_at(&project.path(flawed), 1, column, name)).await;
    assert_eq!(harmless["diagnostics"], json!({"new": [], "resolved": []}), "{harmless}");
    assert_eq!(harmless["committable"], true, "{harmless}");
    call(&peer, "preview_discard", json!({"previewId": harmless["previewId"]})).await;

    // The whole store's diagnostics include what the server published for the flawed file
    // (open on it since the preview), naming the server.
    let all = call(&peer, "diagnostics", json!({"limit": 500})).await;
    let flawed_path = project.path(flawed);
    let published: Vec<&Value> = all["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["path"] == flawed_path.as_str())
        .collect();
    assert!(!published.is_empty(), "no diagnostics of {flawed_path}: {all}");
    assert!(published.iter().all(|d| d["server"].is_string()), "{all}");
    client.cancel().await.unwrap();

    // The confirmed rename left every file compiling: the language's own check finds what it
    // found before (the flawed file's error) and nothing else.
    assert_eq!(project.compile_errors(), baseline);
    let renamed = std::fs::read_to_string(project.store.join(m(201))).unwrap();
    assert!(renamed.contains("renamed0200"), "{renamed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_answers_completely_or_says_so_from_a_cold_start() {
    let project = Project::python();
    assert_eq!(project.compile_errors(), ["flawed.py:reportArgumentType"]);
    the_contract_holds(&project, "py", "pkg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_answers_completely_or_says_so_from_a_cold_start() {
    let project = Project::typescript();
    assert_eq!(project.compile_errors(), ["flawed.ts:TS2322"]);
    the_contract_holds(&project, "ts", "src").await;
}

//! A repository's folder as a store (SPEC §23, issue 34), end to end with the real binary:
//! `examples/project` (a TypeScript monorepo with its service catalog) and
//! `examples/project-broken` (the same with mistakes) through `stardust check`, the LSP, MCP's
//! `diagnostics` and the mount. The project's own JSON (package.json, tsconfig.json with
//! comments, editor settings, a dashboard, test fixtures, node_modules) is never Stardust data;
//! its schemas resolve by their `$id` URLs.

mod util;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use util::lsp::Lsp;
use util::mcp::Mcp;
use util::mount::Mounted;
use util::{repo, stardust, text};

const PROJECT: &str = "examples/project";
const BROKEN: &str = "examples/project-broken";

/// Files the example's own ignore rules list, committed in this repository all the same so
/// that the tests see them (`git add -f`).
const IGNORED: [&str; 4] = [
    "node_modules/left-pad/package.json",
    "node_modules/stray-data/data.json",
    "node_modules/.package-lock.json",
    "tests/fixtures/broken-truncated.json",
];

/// A copy of the example `name` in a fresh temporary folder (at its root).
fn copy(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    util::copy_store(&repo().join(name), tmp.path());
    tmp
}

fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).unwrap()
}

/// Run `script` with `sh` in `dir` (git with a fixed author): its exit code and output.
fn sh(dir: &Path, script: &str) -> (i32, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@b")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@b")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", text(&out.stdout), text(&out.stderr)))
}

#[test]
fn the_example_holds_the_files_its_own_rules_ignore() {
    for rel in IGNORED {
        for example in [PROJECT, BROKEN] {
            let path = repo().join(example).join(rel);
            assert!(path.is_file(), "{} is part of the example (git add -f)", path.display());
        }
    }
}

/// Everything valid: exit 0 and not one diagnostic, although the folder holds broken JSON in
/// `node_modules/` and a gitignored fixture, JSON with comments, `"@acme/web"` names, a
/// dashboard's `"id": 1`, fixtures sharing an id, and schemas of five drafts known by URL.
#[test]
fn the_project_checks_clean() {
    let out = stardust(&["check", PROJECT]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{}", text(&out.stderr));
    assert!(stdout.starts_with("ok in "), "{stdout}");
    assert!(stdout.ends_with(" documents (4 entities): 0 errors, 0 warnings\n"), "{stdout}");
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
}

/// Without the project's ignore rules the broken files the example keeps are checked again: the
/// clean check above is the rules' doing, not an empty folder.
#[test]
fn the_projects_ignore_rules_are_what_keep_it_clean() {
    let tmp = copy(PROJECT);
    let config =
        read(tmp.path(), "stardust.toml").replace("[store]\n", "[store]\ngitignore = false\n");
    fs::write(tmp.path().join("stardust.toml"), config).unwrap();
    let out = stardust(&["check", tmp.path().to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for rel in IGNORED {
        assert!(stdout.contains(&format!("{rel}:")), "{rel} is checked:\n{stdout}");
    }
}

/// The mistakes of the broken variant, each once, and nothing on the project's own files: schema
/// errors through schemas resolved by URL (all five drafts, a `[[schema]] url` mapping, a
/// JSONC document), `schema-unavailable` for an unvendored URL and for a schema whose `$ref`
/// leaves the store's schemas, references inside entities.
#[test]
fn the_broken_project_reports_exactly_its_mistakes() {
    let out = stardust(&["check", BROKEN]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    expect_test::expect_file!["../examples/project-broken/expected-check.txt"]
        .assert_eq(&text(&out.stdout));
}

/// An editor on the project: `tsconfig.json` and `.vscode/*.json` opened as `jsonc` show no
/// syntax error; a `$schema` URL links to the store's copy of the schema; package manifests,
/// the dashboard and the fixtures get no entity or reference diagnostic; the whole workspace
/// is clean.
#[test]
fn an_editor_on_the_project_sees_no_noise() {
    let tmp = copy(PROJECT);
    let root = tmp.path();
    let (mut editor, _) = Lsp::initialized(root, json!({}));
    for rel in [
        "tsconfig.json",
        "tests/tsconfig.json",
        "packages/api/tsconfig.json",
        ".vscode/settings.json",
    ] {
        let uri = editor.open_as(rel, "jsonc", &read(root, rel));
        assert_eq!(editor.published(&uri, 1), Vec::<Value>::new(), "{rel}");
    }
    for rel in [
        "package.json",
        "packages/web/package.json",
        "dashboards/web.json",
        "tests/fixtures/users.json",
        "tests/fixtures/order-created.json",
        "tests/fixtures/order-updated.json",
        "vendor/acme/common/resources.json",
        "deploy/production.json",
        "catalog/services/web.dust",
    ] {
        let uri = editor.open(rel, &read(root, rel));
        assert_eq!(editor.published(&uri, 1), Vec::<Value>::new(), "{rel}");
    }
    let workspace = editor.request("workspace/diagnostic", json!({"previousResultIds": []}));
    assert_eq!(workspace["items"], json!([]), "the project is clean: {workspace}");

    // `$schema` URLs open the store's copy: by the schema's own `$id`, and by `[[schema]] url`.
    editor.open("deploy/jobs/migrate.json", &read(root, "deploy/jobs/migrate.json"));
    for (rel, schema) in [
        ("deploy/production.json", "vendor/acme/deploy/deployment.json"),
        ("deploy/jobs/migrate.json", "vendor/acme/k8s/container.json"),
        ("tsconfig.json", "vendor/schemastore/tsconfig.json"),
    ] {
        let links =
            editor.request("textDocument/documentLink", json!({"textDocument": editor.doc(rel)}));
        let line = read(root, rel).lines().position(|l| l.contains("\"$schema\"")).unwrap();
        let link = links
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["range"]["start"]["line"] == json!(line))
            .unwrap_or_else(|| panic!("{rel}: no link on its $schema: {links}"));
        assert_eq!(link["target"], format!("{}#L1,1", editor.uri(schema)), "{rel}");
    }
    editor.shutdown();
}

/// The editor sees the broken variant's mistakes where `check` does: a schema error inside a
/// JSONC `tsconfig.json` (its comments still no error), a reference inside an entity.
#[test]
fn an_editor_on_the_broken_project_sees_its_mistakes() {
    let tmp = copy(BROKEN);
    let root = tmp.path();
    let (mut editor, _) = Lsp::initialized(root, json!({}));
    let tsconfig = read(root, "tsconfig.json");
    let uri = editor.open_as("tsconfig.json", "jsonc", &tsconfig);
    let diagnostics = editor.published(&uri, 1);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["code"], "schema");
    let line = tsconfig.lines().position(|l| l.contains("\"yes\"")).unwrap();
    assert_eq!(diagnostics[0]["range"]["start"]["line"], json!(line));
    let uri = editor.open("catalog/services/web.dust", &read(root, "catalog/services/web.dust"));
    let codes: Vec<Value> = editor.published(&uri, 1).iter().map(|d| d["code"].clone()).collect();
    assert_eq!(codes, [json!("dangling-ref"), json!("ref-type")]);
    editor.shutdown();
}

/// An agent's `diagnostics` on the project: none; on the broken variant, what `check` prints,
/// each on its document, with nothing on the project's own files.
#[test]
fn an_agent_sees_what_check_sees() {
    let tmp = copy(PROJECT);
    let mut agent = Mcp::open(tmp.path(), &[], "test-agent");
    let all = agent.ok("diagnostics", json!({"limit": 500}));
    assert_eq!(all["total"], 0, "{all}");
    drop(agent);

    let tmp = copy(BROKEN);
    let mut agent = Mcp::open(tmp.path(), &[], "test-agent");
    let all = agent.ok("diagnostics", json!({"limit": 500}));
    let expected = read(&repo().join(BROKEN), "expected-check.txt");
    let lines =
        expected.lines().filter(|l| !l.starts_with(' ') && !l.starts_with("failed")).count();
    assert_eq!(all["total"], lines, "{all}");
    let paths: Vec<&str> = all["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    for quiet in ["package.json", "dashboards/web.json", "tests/fixtures/order-created.json"] {
        assert!(!paths.contains(&quiet), "{quiet}: {all}");
    }
    let renovate = agent.ok("diagnostics", json!({"path": "renovate.json"}));
    let d = &renovate["diagnostics"][0];
    assert_eq!(
        (d["code"].clone(), d["severity"].clone()),
        (json!("schema-unavailable"), json!("warning"))
    );
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("[[schema]] url = \"https://docs.renovatebot.com/renovate-schema.json\""),
        "{message}"
    );
    let web = agent.ok("diagnostics", json!({"path": "catalog/services/web.dust"}));
    let d = &web["diagnostics"][0];
    assert_eq!(
        (d["code"].clone(), d["entity"].clone()),
        (json!("dangling-ref"), json!("service/web"))
    );
    let tsconfig = agent.ok("diagnostics", json!({"path": "tsconfig.json"}));
    assert_eq!(tsconfig["total"], 1, "{tsconfig}");
    assert_eq!(tsconfig["diagnostics"][0]["code"], "schema");
}

/// The project committed to git and mounted: `git status` in the mount is clean (the private
/// folder never shows); a broken save of the gitignored fixture, of `node_modules/` or of a
/// plain manifest is committed as it is; a broken save of an entity (a syntax error, a value
/// the draft-04 schema its type's schema names by URL refuses), or of a deploy file that its
/// `$schema` URL governs, is refused and leaves the file as it was.
#[test]
fn the_mounted_project_is_a_clean_git_checkout() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    util::copy_store(&repo().join(PROJECT), &store);
    let (code, out) = sh(&store, "git init -q -b main . && git add -A && git commit -qm project");
    assert_eq!(code, 0, "{out}");
    let (_, tracked) = sh(&store, "git ls-files");
    assert!(!tracked.contains("node_modules/"), "{tracked}");
    assert!(!tracked.contains("broken-truncated"), "{tracked}");
    let store = store.canonicalize().unwrap();
    let dir: PathBuf = tmp.path().join("mnt");
    let mnt = Mounted::start(tmp, store, dir, &[], &[]);
    let status = |mnt: &Mounted| {
        let (code, out) = sh(&mnt.dir, "git status --porcelain");
        assert_eq!(code, 0, "{out}");
        out
    };
    assert_eq!(status(&mnt), "", "{}", mnt.log());
    let (_, ignored) = sh(&mnt.dir, "git status --porcelain --ignored");
    assert!(ignored.contains("!! node_modules/"), "{ignored}");
    assert!(!ignored.contains(".stardust"), "{ignored}");

    // Not data: committed as written, however broken.
    for (rel, bytes) in [
        ("tests/fixtures/broken-truncated.json", "{\"id\": 1, \"items\": [oops"),
        ("node_modules/left-pad/package.json", "{\"name\": "),
        ("package.json", "{\"name\": \"@acme/monorepo\", }"),
    ] {
        let mut file = fs::File::create(mnt.path(rel)).unwrap();
        std::io::Write::write_all(&mut file, bytes.as_bytes()).unwrap();
        file.sync_all().unwrap_or_else(|e| panic!("{rel}: {e}\n{}", mnt.log()));
        drop(file);
        assert_eq!(mnt.on_disk(rel), bytes, "{rel}");
    }
    assert_eq!(status(&mnt), " M package.json\n");
    let (code, out) = sh(&mnt.dir, "git checkout -q -- package.json");
    assert_eq!(code, 0, "{out}");

    // Data: refused, the file left as it was.
    for (rel, from, to) in [
        ("catalog/teams/web.json", "\"name\": \"Web\",", "\"name\": ,"),
        ("catalog/services/web.dust", "{cpu 0.5 memory 512Mi}", "{cpu 0 memory 512Mi}"),
        ("deploy/staging.json", "\"environment\": \"staging\"", "\"environment\": \"qa\""),
    ] {
        let before = mnt.on_disk(rel);
        assert!(before.contains(from), "{rel}");
        let mut file = fs::File::create(mnt.path(rel)).unwrap();
        std::io::Write::write_all(&mut file, before.replace(from, to).as_bytes()).unwrap();
        let refused = file.sync_all().expect_err(rel);
        assert_eq!(refused.raw_os_error(), Some(5), "{rel}: EIO");
        drop(file);
        assert_eq!(mnt.on_disk(rel), before, "{rel}");
    }
    assert_eq!(mnt.rejected().len(), 3, "{:?}", mnt.rejected());
    assert_eq!(status(&mnt), "", "refused saves leave the checkout clean");
}

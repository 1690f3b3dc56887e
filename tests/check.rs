//! End-to-end tests of `stardust check`: the real binary on the sample stores.

mod util;

use std::path::Path;

use util::{stardust, text};

#[test]
fn the_sample_library_checks_clean() {
    let out = stardust(&["check", "examples/library"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{}", text(&out.stderr));
    assert!(stdout.starts_with("ok in "), "{stdout}");
    assert!(stdout.ends_with(": 0 errors, 0 warnings\n"), "{stdout}");
}

#[test]
fn the_broken_store_shows_every_code_and_fails() {
    let out = stardust(&["check", "examples/broken"]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for code in [
        "syntax",
        "duplicate-key",
        "schema",
        "unknown-type",
        "invalid-id",
        "duplicate-id",
        "dangling-ref",
        "ref-type",
        "invalid-query",
        "view-path",
        "duplicate-view-path",
        "schema-unavailable",
    ] {
        assert!(stdout.contains(&format!("[{code}]")), "no {code} in:\n{stdout}");
    }
    expect_test::expect_file!["../examples/broken/expected-check.txt"].assert_eq(&stdout);
}

#[test]
fn json_output_is_one_document_with_a_summary() {
    let out = stardust(&["check", "examples/broken", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let diagnostics = report["diagnostics"].as_array().unwrap();
    assert!(!diagnostics.is_empty());
    assert_eq!(
        report["summary"]["errors"].as_u64().unwrap() as usize
            + report["summary"]["warnings"].as_u64().unwrap() as usize,
        diagnostics.len()
    );
    let first = &diagnostics[0];
    for key in ["path", "range", "severity", "code", "message", "source", "related", "data"] {
        assert!(first.get(key).is_some(), "missing {key} in {first}");
    }
    assert_eq!(first["source"], "stardust");
}

#[test]
fn usage_and_configuration_errors_exit_2() {
    let out = stardust(&["check", "no/such/store"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .starts_with("error[invalid-arguments]: there is no store at no/such/store"),
        "{}",
        text(&out.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stardust.toml"), "[store]\nignroe = []\n").unwrap();
    let out = stardust(&["check", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error[config-invalid]: "), "{stderr}");
    assert!(stderr.contains("ignroe"), "the message names the key: {stderr}");

    let out = stardust(&["check"]);
    assert_eq!(out.status.code(), Some(2), "clap usage errors exit 2");
}

#[test]
fn warnings_alone_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.dust"), "id thing/a\ntype thing\n").unwrap();
    let out = stardust(&["check", dir.path().to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("a.dust:2:6: warning[unknown-type] no schema for type 'thing'"),
        "{stdout}"
    );
}

#[test]
fn nothing_but_diagnostics_reaches_stdout() {
    let out = stardust(&["check", Path::new("examples/library").to_str().unwrap()]);
    assert!(text(&out.stdout).lines().all(|l| l.starts_with("ok in ")), "{}", text(&out.stdout));
}

/// `[validation] formats = "assert"` makes `format` a check (SPEC §2): a date that is no date
/// is a `schema` error naming the format and fails the check; with the default (`annotate`)
/// the same store checks clean.
#[test]
fn asserted_formats_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("schemas")).unwrap();
    std::fs::create_dir_all(root.join("events")).unwrap();
    std::fs::write(
        root.join("schemas/event.schema.json"),
        r#"{"type": "object", "properties": {"on": {"type": "string", "format": "date"}}}"#,
    )
    .unwrap();
    std::fs::write(root.join("events/launch.dust"), "id event/launch\ntype event\non 2024-13-45\n")
        .unwrap();
    let store = root.to_str().unwrap();

    let out = stardust(&["check", store]);
    assert_eq!(out.status.code(), Some(0), "annotate by default: {}", text(&out.stdout));

    std::fs::write(root.join("stardust.toml"), "[validation]\nformats = \"assert\"\n").unwrap();
    let out = stardust(&["check", store]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "events/launch.dust:3:4: error[schema] expected a date such as 2024-05-31 \
             (event.on, format 'date'), found '2024-13-45'"
        ),
        "{stdout}"
    );

    std::fs::write(root.join("stardust.toml"), "[validation]\nformats = \"strict\"\n").unwrap();
    let out = stardust(&["check", store]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error[config-invalid]: "), "{stderr}");
    assert!(stderr.contains("validation.formats"), "the message names the key: {stderr}");
}

/// A relative `$ref` that leaves the store is reported at the `$ref` value, not at 1:1 of the
/// schema (issue 17 item 3).
#[test]
fn a_ref_leaving_the_store_is_reported_at_the_ref() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("schemas")).unwrap();
    std::fs::write(
        dir.path().join("schemas/book.schema.json"),
        "{\n  \"type\": \"object\",\n  \"properties\": {\"x\": {\"$ref\": \"../../etc/x.json\"}}\n}\n",
    )
    .unwrap();
    let out = stardust(&["check", dir.path().to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "schemas/book.schema.json:3:32: error[schema] cannot resolve the $ref \
             '../../etc/x.json': it leaves the store (file:///etc/x.json)"
        ),
        "{stdout}"
    );
}

/// The project's ignore rules (SPEC §23): what `.gitignore` (nested), `.ignore` and
/// `.git/info/exclude` list is not a document, so a broken fixture or a `node_modules/` there
/// is not checked; `[store] gitignore = false` checks them again; `stardust.toml` is never
/// ignored, and an ignored schemas folder is still read, with a warning.
#[test]
fn the_project_ignore_rules_are_respected() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |path: &str, content: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    };
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    write(".gitignore", "node_modules/\nstardust.toml\nschemas/\n");
    write("tests/.gitignore", "broken-*.json\n");
    write(".ignore", "scratch/\n");
    write(".git/info/exclude", "mine.json\n");
    write("node_modules/pkg/broken.json", "{\"a\": ");
    write("tests/broken-1.json", "{oops}");
    write("scratch/x.json", "[1,");
    write("mine.json", "{");
    write("stardust.toml", "[store]\nignore = []\n");
    write("schemas/thing.schema.json", "{\"type\": \"object\", \"required\": [\"name\"]}");
    write("things/a.json", "{\"id\": \"thing/a\", \"type\": \"thing\", \"name\": \"A\"}");
    let store = root.to_str().unwrap();

    let out = stardust(&["check", store]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("in 2 documents (1 entity): 0 errors, 0 warnings"), "{stdout}");
    assert!(
        stderr.contains(
            "warning: the schemas folder 'schemas' is ignored by the project's ignore rules"
        ),
        "{stderr}"
    );

    write("stardust.toml", "[store]\ngitignore = false\n");
    let out = stardust(&["check", store]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for broken in
        ["node_modules/pkg/broken.json", "tests/broken-1.json", "scratch/x.json", "mine.json"]
    {
        assert!(stdout.contains(&format!("{broken}:1:")), "{broken} is checked again:\n{stdout}");
    }
}
/// The JSON with comments of a project folder (SPEC §23): `tsconfig.json`, `.vscode/*.json`
/// and `.jsonc` files with comments and trailing commas check clean; the same text in a plain
/// `.json` file is a `syntax` error whose message says where comments are allowed.
#[test]
fn a_projects_json_with_comments_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let files = [
        ("tsconfig.json", TSCONFIG),
        ("packages/web/tsconfig.build.json", "{\"extends\": \"../../tsconfig.json\", // base\n}"),
        (".vscode/settings.json", "{\n  // format on save\n  \"editor.formatOnSave\": true,\n}"),
        (".vscode/extensions.json", "{\"recommendations\": [\"x.y\",],}"),
        (".devcontainer/devcontainer.json", "{/* image */ \"image\": \"base\",}"),
        ("notes.jsonc", "[\"http://x // not a comment\", /* one */]"),
        ("package.json", "{\"name\": \"web\", \"private\": true}"),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let out = stardust(&["check", root.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.ends_with(": 0 errors, 0 warnings\n"), "{stdout}");

    std::fs::write(root.join("plain.json"), TSCONFIG).unwrap();
    let out = stardust(&["check", root.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "plain.json:1:1: error[syntax] comments are not allowed in JSON; remove it (comments \
             are allowed in .jsonc files and in .json files matched by [store] jsonc)"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("DUST"), "{stdout}");
    assert!(!stdout.contains("tsconfig.json:"), "{stdout}");
}

const TSCONFIG: &str = "// TypeScript's configuration\n{\n  \"compilerOptions\": {\n    \"strict\": true, /* checks */\n    \"lib\": [\"dom\", \"es2022\",],\n  },\n}\n";
/// Schemas in drafts 4, 6, 7, 2019-09 and 2020-12 that reference each other by `$id` URLs, and
/// documents naming them by `$schema` URL, all valid: the check is clean (SPEC §23).
#[test]
fn schemas_known_by_url_check_clean() {
    let out = stardust(&["check", "examples/schema-uris"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{}", text(&out.stderr));
    assert!(stdout.ends_with(": 0 errors, 0 warnings\n"), "{stdout}");
}

/// The same schemas with documents that break them: each failure once, at its value, and
/// `schema-unavailable` where a schema cannot be used (SPEC §23).
#[test]
fn schemas_known_by_url_report_what_breaks_them() {
    let out = stardust(&["check", "examples/schema-uris-broken"]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    expect_test::expect_file!["../examples/schema-uris-broken/expected-check.txt"]
        .assert_eq(&text(&out.stdout));
}

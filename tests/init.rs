//! `stardust init [DIR]` end to end (SPEC §27) on a folder with Python and TypeScript code and
//! a `.gitignore`: the files it writes (a server table for the language whose server is on
//! PATH, a commented one for the other), what it prints (the trust step, the editor and MCP
//! lines), its refusal to overwrite `stardust.toml`, a `stardust check` and a `stardust trust`
//! that pass right after; and the hint `stardust check` gives on a folder without
//! configuration.
//!
//! The fixture holds no JSON that today's scan would diagnose (its `package.json` and
//! `tsconfig.json` are plain, comment-free JSON holding no entities), so `check` passes with
//! or without `.gitignore`-aware scanning.

mod util;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use util::text;

fn write(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// Run `stardust ARGS` with PATH set to `path` and the user's configuration in `config`.
fn run(args: &[&str], path: &Path, config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(args)
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", config)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn init_makes_a_project_folder_a_store_and_never_overwrites_its_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    write(&project, ".gitignore", "node_modules/\n__pycache__/\ndist/\n");
    write(&project, "pyproject.toml", "[project]\nname = \"shop\"\nversion = \"1.0\"\n");
    write(&project, "shop/__init__.py", "");
    write(
        &project,
        "shop/pricing.py",
        "def with_tax(cents: int) -> int:\n    return cents * 6 // 5\n",
    );
    write(&project, "web/package.json", "{\"name\": \"web\", \"private\": true}\n");
    write(&project, "web/tsconfig.json", "{\"compilerOptions\": {\"strict\": true}}\n");
    write(
        &project,
        "web/src/cart.ts",
        "export const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);\n",
    );
    write(&project, "web/node_modules/left-pad/package.json", "{\"name\": \"left-pad\"}\n");
    // PATH holds a Python server and no TypeScript one.
    let bin = tmp.path().join("bin");
    write(&bin, "pyright-langserver", "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(
        bin.join("pyright-langserver"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let config = tmp.path().join("config");
    let p = project.to_str().unwrap();

    let out = run(&["init", p], &bin, &config);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let toml = std::fs::read_to_string(project.join("stardust.toml")).unwrap();
    assert!(toml.contains("\n[servers.pyright]\ncommand = \"pyright-langserver\"\n"), "{toml}");
    assert!(toml.contains("\n# [servers.typescript]\n"), "{toml}");
    assert!(toml.contains("npm install --global typescript-language-server"), "{toml}");
    assert!(
        !toml.contains("clangd") && !toml.contains("gopls"),
        "no table for absent languages: {toml}"
    );
    assert!(toml.contains("ignore = [\"**/node_modules/**\"]"), "{toml}");
    assert!(toml.contains("`stardust trust .`"), "the trust step is explained: {toml}");
    assert_eq!(std::fs::read_to_string(project.join(".stardust/.gitignore")).unwrap(), "*\n");
    let said = text(&out.stdout);
    let canonical = project.canonicalize().unwrap();
    let root = canonical.to_str().unwrap();
    for line in [
        format!("Then allow them: stardust trust {root}"),
        format!("\"args\": [\"mcp\", \"--store\", \"{root}\"]"),
        "[mcp_servers.stardust]".to_owned(),
        "vim.lsp.start({ name = 'stardust', cmd = { 'stardust', 'lsp' }".to_owned(),
        "\"glspc.server.command\": \"stardust\"".to_owned(),
        "[language-server.stardust]".to_owned(),
        "eglot-server-programs".to_owned(),
        "TypeScript and JavaScript (1 file): no server on PATH".to_owned(),
    ] {
        assert!(said.contains(&line), "{line:?} missing from:\n{said}");
    }

    // Right after: the store checks clean, and its tables can be trusted.
    let check = run(&["check", p], &bin, &config);
    assert_eq!(check.status.code(), Some(0), "{}{}", text(&check.stdout), text(&check.stderr));
    assert!(text(&check.stdout).starts_with("ok in "), "{}", text(&check.stdout));
    assert!(!text(&check.stdout).contains("hint:"), "{}", text(&check.stdout));
    let trust = run(&["trust", p], &bin, &config);
    assert_eq!(trust.status.code(), Some(0), "{}", text(&trust.stderr));
    assert!(text(&trust.stdout).contains("pyright"), "{}", text(&trust.stdout));

    // Never over an existing stardust.toml: a typed error, nothing changed.
    std::fs::write(project.join("stardust.toml"), "# mine\n").unwrap();
    let again = run(&["init", p], &bin, &config);
    assert_eq!(again.status.code(), Some(1));
    let err = text(&again.stderr);
    assert!(err.starts_with("error[conflict]: ") && err.contains("never overwrites"), "{err}");
    assert_eq!(std::fs::read_to_string(project.join("stardust.toml")).unwrap(), "# mine\n");
}

#[test]
fn init_in_the_working_directory_makes_it_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .arg("init")
        .current_dir(tmp.path())
        .env("PATH", "")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(tmp.path().join("stardust.toml").is_file());
    assert!(text(&out.stdout).contains("No code files of a language"), "{}", text(&out.stdout));
}

/// `stardust check` on a folder with no stardust.toml that found problems ends with one line
/// pointing at `stardust init`; with a stardust.toml, or no problem, it does not.
#[test]
fn check_without_configuration_hints_at_init() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "vendor/fixture.json", "{\"broken\": }\n");
    let d = tmp.path().to_str().unwrap();
    let out = util::stardust(&["check", d]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().unwrap();
    assert!(last.starts_with("hint: ") && last.contains(&format!("stardust init {d}")), "{stdout}");
    // JSON stays JSON: the hint goes to stderr.
    let out = util::stardust(&["check", d, "--format", "json"]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap();
    assert!(text(&out.stderr).contains("stardust init"), "{}", text(&out.stderr));
    std::fs::write(tmp.path().join("stardust.toml"), "[store]\nignore = [\"vendor/**\"]\n")
        .unwrap();
    let out = util::stardust(&["check", d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("hint:"), "{}", text(&out.stdout));
}

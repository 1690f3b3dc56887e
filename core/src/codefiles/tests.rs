//! Table tests of routing, merging, trust and the launch rule, without processes.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt::Write;
use std::path::Path;

use expect_test::expect;

use super::*;
use crate::config::servers::parse_user_servers;

fn store_config(text: &str) -> Config {
    Config::parse(text, Path::new("stardust.toml")).unwrap()
}

fn user(text: &str) -> BTreeMap<String, ServerConfig> {
    parse_user_servers(text, Path::new("servers.toml")).unwrap()
}

const STORE_TOML: &str = r#"
[store]
ignore = ["node_modules/**"]

[servers.pyright]
command = "pyright-langserver"
args = ["--stdio"]
languages = { py = "python", pyi = "python" }

[servers.tsserver]
command = "typescript-language-server"
args = ["--stdio"]
languages = { ts = "typescript", tsx = "typescriptreact" }
globs = ["scripts/*.mjs"]

[servers.clangd]
command = "/usr/bin/clangd"
languages = { c = "c", h = "c" }
"#;

const USER_TOML: &str = r#"
[servers.clangd]
command = "/opt/llvm/bin/clangd"
languages = { c = "c", h = "c" }

[servers.marksman]
command = "marksman"
languages = { md = "markdown" }
globs = ["py/generated/**"]
"#;

#[test]
fn which_server_covers_a_file() {
    let config = store_config(STORE_TOML);
    let servers = Servers::new(user(USER_TOML), config.servers.clone());
    let mut report = String::new();
    for path in [
        "src/app.py",
        "src/app.pyi",
        "web/main.ts",
        "web/App.tsx",
        "scripts/build.mjs",
        "scripts/deep/build.mjs",
        "native/lib.c",
        "README.md",
        "py/generated/model.py",
        "books/dune.dust",
        "people/frank.json",
        "node_modules/pkg/package.json",
        "tsconfig.json",
        "Makefile",
        "src/lib.rs",
        ".git/hooks/pre-commit.py",
        ".stardust/log/0.json",
    ] {
        let owner = match route(&config, &servers, path) {
            Ok(Owner::Document) => "document".to_owned(),
            Ok(Owner::Server { server, language_id }) => format!("{server} ({language_id})"),
            Err(err) => format!("error[{}]: {err}", err.code()),
        };
        writeln!(report, "{path}: {owner}").unwrap();
    }
    expect![[r#"
        src/app.py: pyright (python)
        src/app.pyi: pyright (python)
        web/main.ts: tsserver (typescript)
        web/App.tsx: tsserver (typescriptreact)
        scripts/build.mjs: tsserver (mjs)
        scripts/deep/build.mjs: tsserver (mjs)
        native/lib.c: clangd (c)
        README.md: marksman (markdown)
        py/generated/model.py: marksman (py)
        books/dune.dust: document
        people/frank.json: document
        node_modules/pkg/package.json: error[unsupported]: no language server covers node_modules/pkg/package.json; add a [servers.<name>] table (stardust.toml or your servers.toml) whose languages include "json" or whose globs match it
        tsconfig.json: document
        Makefile: error[unsupported]: no language server covers Makefile; add a [servers.<name>] table (stardust.toml or your servers.toml) whose globs match it
        src/lib.rs: error[unsupported]: no language server covers src/lib.rs; add a [servers.<name>] table (stardust.toml or your servers.toml) whose languages include "rs" or whose globs match it
        .git/hooks/pre-commit.py: error[unsupported]: .git/hooks/pre-commit.py is in the store's private folder; no language server serves it
        .stardust/log/0.json: error[unsupported]: .stardust/log/0.json is in the store's private folder; no language server serves it
    "#]].assert_eq(&report);
}

#[test]
fn the_users_table_wins_over_the_stores_of_the_same_name() {
    let config = store_config(STORE_TOML);
    let servers = Servers::new(user(USER_TOML), config.servers.clone());
    let order: Vec<String> = servers
        .iter()
        .map(|s| format!("{} {:?} {}", s.name(), s.origin, s.config.command))
        .collect();
    expect![[r#"
        [
            "clangd User /opt/llvm/bin/clangd",
            "marksman User marksman",
            "pyright Store pyright-langserver",
            "tsserver Store typescript-language-server",
        ]
    "#]]
    .assert_debug_eq(&order);
    assert_eq!(servers.shadowed(), ["clangd"]);
    assert_eq!(servers.get("clangd").unwrap().origin, Origin::User);
}

/// A fake file system for the launch rule: executable paths and paths that exist but are not.
fn fake_probe(path: &Path) -> Probe {
    match path.to_str().unwrap() {
        "/usr/bin/pyright-langserver"
        | "/usr/local/bin/typescript-language-server"
        | "/opt/llvm/bin/clangd"
        | "/home/u/bin/marksman" => Probe::Executable,
        "/usr/bin/typescript-language-server" | "/usr/bin/clangd" => Probe::NotExecutable,
        _ => Probe::Missing,
    }
}

#[test]
fn may_a_server_start() {
    let store = Path::new("/home/u/my store");
    let config = store_config(STORE_TOML);
    let hashes = |names: &[&str]| -> BTreeMap<String, ServerConfig> {
        names.iter().map(|n| (n.to_string(), config.servers[*n].clone())).collect()
    };
    let mut trusted_all = Trusted::default();
    trusted_all.trust(store, &hashes(&["pyright", "tsserver", "clangd"])).unwrap();
    let mut trusted_py = Trusted::default();
    trusted_py.trust(store, &hashes(&["pyright"])).unwrap();
    // A trust recorded for a table that has changed since: pyright's args differ.
    let changed = store_config(
        &STORE_TOML.replace("[\"--stdio\"]\nlanguages = { py", "[]\nlanguages = { py"),
    );
    let mut trusted_old = Trusted::default();
    trusted_old.trust(store, &changed.servers).unwrap();
    // The same store at another path is another store.
    let mut trusted_elsewhere = Trusted::default();
    trusted_elsewhere.trust(Path::new("/home/u/other"), &config.servers).unwrap();

    let store_only = Servers::new(BTreeMap::new(), config.servers.clone());
    let with_user = Servers::new(user(USER_TOML), config.servers.clone());
    let path = OsStr::new("relative/bin:/usr/local/bin:/usr/bin::/home/u/bin");
    let mut report = String::new();
    for (label, servers, trusted, name, path_var) in [
        ("nothing trusted", &store_only, &Trusted::default(), "pyright", Some(path)),
        ("trusted", &store_only, &trusted_py, "pyright", Some(path)),
        ("another server trusted", &store_only, &trusted_py, "tsserver", Some(path)),
        ("changed since trusted", &store_only, &trusted_old, "pyright", Some(path)),
        ("trusted at another path", &store_only, &trusted_elsewhere, "pyright", Some(path)),
        ("first executable on PATH", &store_only, &trusted_all, "tsserver", Some(path)),
        ("absolute, not executable", &store_only, &trusted_all, "clangd", Some(path)),
        ("no PATH", &store_only, &trusted_all, "pyright", None),
        ("user's table, no trust needed", &with_user, &Trusted::default(), "clangd", Some(path)),
        ("user's, found on PATH", &with_user, &Trusted::default(), "marksman", Some(path)),
        (
            "user's, relative PATH entry skipped",
            &with_user,
            &Trusted::default(),
            "marksman",
            Some(OsStr::new("relative/bin:.")),
        ),
    ] {
        let server = servers.get(name).unwrap();
        let answer = match may_start(server, store, trusted, path_var, &fake_probe) {
            Ok(spec) => format!(
                "start {} {:?} (root {}, {:?}, request timeout {}s)",
                spec.command.display(),
                spec.args,
                spec.root.display(),
                spec.origin,
                spec.timeouts.request.as_secs()
            ),
            Err(err) => format!("error[{}]: {err}", err.code()),
        };
        writeln!(report, "{label}: {answer}").unwrap();
    }
    expect![[r#"
        nothing trusted: error[untrusted]: the language server 'pyright' is configured in /home/u/my store/stardust.toml and is not trusted; nothing was started. Review its [servers.pyright] table, then run `stardust trust '/home/u/my store'`
        trusted: start /usr/bin/pyright-langserver ["--stdio"] (root /home/u/my store, Store, request timeout 30s)
        another server trusted: error[untrusted]: the language server 'tsserver' is configured in /home/u/my store/stardust.toml and is not trusted; nothing was started. Review its [servers.tsserver] table, then run `stardust trust '/home/u/my store'`
        changed since trusted: error[untrusted]: the language server 'pyright' is configured in /home/u/my store/stardust.toml and its table changed since it was trusted; nothing was started. Review its [servers.pyright] table, then run `stardust trust '/home/u/my store'`
        trusted at another path: error[untrusted]: the language server 'pyright' is configured in /home/u/my store/stardust.toml and is not trusted; nothing was started. Review its [servers.pyright] table, then run `stardust trust '/home/u/my store'`
        first executable on PATH: start /usr/local/bin/typescript-language-server ["--stdio"] (root /home/u/my store, Store, request timeout 30s)
        absolute, not executable: error[server-unavailable]: the language server 'clangd' cannot start: /usr/bin/clangd is not an executable file; install it, or set servers.clangd.command to its absolute path
        no PATH: error[server-unavailable]: the language server 'pyright' cannot start: 'pyright-langserver' is not found on PATH; install it, or set servers.pyright.command to its absolute path
        user's table, no trust needed: start /opt/llvm/bin/clangd [] (root /home/u/my store, User, request timeout 30s)
        user's, found on PATH: start /home/u/bin/marksman [] (root /home/u/my store, User, request timeout 30s)
        user's, relative PATH entry skipped: error[server-unavailable]: the language server 'marksman' cannot start: 'marksman' is not found on PATH; install it, or set servers.marksman.command to its absolute path
    "#]].assert_eq(&report);
}

#[test]
fn launch_errors_carry_their_details() {
    let store = Path::new("/home/u/my store");
    let config = store_config(STORE_TOML);
    let servers = Servers::new(BTreeMap::new(), config.servers.clone());
    let pyright = servers.get("pyright").unwrap();
    let err = may_start(pyright, store, &Trusted::default(), None, &fake_probe).unwrap_err();
    let object = crate::error::error_object(err.code(), &err.to_string(), err.details());
    expect![[r#"
        {
          "server": "pyright",
          "store": "/home/u/my store",
          "changed": false,
          "run": "stardust trust '/home/u/my store'",
          "code": "untrusted",
          "message": "the language server 'pyright' is configured in /home/u/my store/stardust.toml and is not trusted; nothing was started. Review its [servers.pyright] table, then run `stardust trust '/home/u/my store'`"
        }"#]].assert_eq(&serde_json::to_string_pretty(&object).unwrap());
    let mut trusted = Trusted::default();
    trusted.trust(store, &config.servers).unwrap();
    let err = may_start(pyright, store, &trusted, None, &fake_probe).unwrap_err();
    expect![[r#"{"server":"pyright","command":"pyright-langserver"}"#]]
        .assert_eq(&err.details().to_string());
}

#[test]
fn trusted_toml_round_trips_and_is_strict() {
    let config = store_config(STORE_TOML);
    let store = Path::new("/home/u/proj");
    let mut trusted = Trusted::default();
    trusted.trust(store, &config.servers).unwrap();
    let text = trusted.to_toml();
    let again = Trusted::parse(&text, Path::new("trusted.toml")).unwrap();
    assert_eq!(again, trusted);
    assert_eq!(again.hash(store, "pyright"), Some(config.servers["pyright"].hash.as_str()));
    // The file's shape, hashes elided.
    let shape: String = text
        .lines()
        .map(|line| match line.split_once(" = ") {
            Some((key, _)) => format!("{key} = <sha-256>\n"),
            None => format!("{line}\n"),
        })
        .collect();
    expect![[r##"
        # Written by `stardust trust STORE`: for each store (by its canonical path), the SHA-256 of
        # each [servers.<name>] table of its stardust.toml that you allowed to run. A table that
        # changed needs `stardust trust STORE` again; `stardust trust --revoke STORE` forgets a store.

        [stores."/home/u/proj"]
        clangd = <sha-256>
        pyright = <sha-256>
        tsserver = <sha-256>
    "##]].assert_eq(&shape);

    assert_eq!(trusted.revoke(store), ["clangd", "pyright", "tsserver"]);
    assert_eq!(trusted.hash(store, "pyright"), None);
    assert!(trusted.revoke(store).is_empty());
    // Trusting a store with no tables forgets it.
    trusted.trust(store, &config.servers).unwrap();
    trusted.trust(store, &BTreeMap::new()).unwrap();
    assert_eq!(trusted, Trusted::default());

    let mut report = String::new();
    for text in [
        "[stores.\"/p\"]\npyright = \"abc\"\n",
        "[store.\"/p\"]\npyright = \"abc\"\n",
        "[stores.\"/p\"]\npyright = 3\n",
    ] {
        let err = Trusted::parse(text, Path::new("trusted.toml")).unwrap_err();
        writeln!(report, "error[{}]: {err}", err.code()).unwrap();
    }
    expect![[r#"
        error[config-invalid]: invalid configuration in trusted.toml: stores."/p".pyright: 'abc' is not a SHA-256 in hex; run `stardust trust /p` again
        error[config-invalid]: invalid configuration in trusted.toml: TOML parse error at line 1, column 2
          |
        1 | [store."/p"]
          |  ^^^^^
        unknown field `store`, expected `stores`
        error[config-invalid]: invalid configuration in trusted.toml: TOML parse error at line 2, column 11
          |
        2 | pyright = 3
          |           ^
        invalid type: integer `3`, expected a string
    "#]].assert_eq(&report);
}

#[test]
fn trusted_toml_is_private_and_refused_when_others_may_write_it() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("config/stardust").join(TRUSTED_FILE);
    let mut trusted = Trusted::default();
    trusted.trust(Path::new("/p"), &store_config(STORE_TOML).servers).unwrap();
    trusted.save(&path).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(Trusted::load(&path).unwrap(), trusted);
    // Saving again replaces it and leaves no temporary file behind.
    Trusted::default().save(&path).unwrap();
    assert_eq!(Trusted::load(&path).unwrap(), Trusted::default());
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [TRUSTED_FILE]);

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
    let err = Trusted::load(&path).unwrap_err();
    assert_eq!(err.code(), "config-invalid");
    assert!(err.to_string().contains("chmod 600"), "{err}");
    assert_eq!(Trusted::load(&tmp.path().join("missing.toml")).unwrap(), Trusted::default());
}

#[test]
fn the_users_configuration_folder() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter().find(|(k, _)| *k == name).map(|(_, v)| std::ffi::OsString::from(v))
        }
    };
    type Vars = &'static [(&'static str, &'static str)];
    let cases: [(Vars, Option<&str>); 5] = [
        (&[("XDG_CONFIG_HOME", "/x/cfg"), ("HOME", "/home/u")], Some("/x/cfg/stardust")),
        (&[("HOME", "/home/u")], Some("/home/u/.config/stardust")),
        (&[("XDG_CONFIG_HOME", ""), ("HOME", "/home/u")], Some("/home/u/.config/stardust")),
        (&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/home/u")], Some("/home/u/.config/stardust")),
        (&[], None),
    ];
    for (vars, want) in cases {
        assert_eq!(user_config_dir(env(vars)), want.map(std::path::PathBuf::from), "{vars:?}");
    }
}

#[test]
fn the_real_probe() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("server");
    std::fs::write(&exe, "#!/bin/sh\n").unwrap();
    assert_eq!(probe(&exe), Probe::NotExecutable);
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(probe(&exe), Probe::Executable);
    assert_eq!(probe(tmp.path()), Probe::NotExecutable);
    assert_eq!(probe(&tmp.path().join("missing")), Probe::Missing);
    let found = find_program("server", Some(tmp.path().as_os_str()), &probe).unwrap();
    assert_eq!(found, exe);
}

/// The sample mixed store: every file of it, and who answers for it, with no user servers.
#[test]
fn the_mixed_example_routes_every_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mixed");
    let config = Config::load(&root).unwrap();
    let servers = Servers::new(BTreeMap::new(), config.servers.clone());
    let mut report = String::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = scan::relative(&root, entry.path()).unwrap();
        if !entry.file_type().is_file() || rel.starts_with(".stardust/") {
            continue;
        }
        let owner = match route(&config, &servers, &rel) {
            Ok(Owner::Document) => "document".to_owned(),
            Ok(Owner::Server { server, language_id }) => format!("{server} ({language_id})"),
            Err(err) => format!("{}", err.code()),
        };
        writeln!(report, "{rel}: {owner}").unwrap();
    }
    expect![[r#"
        README.md: unsupported
        native/checksum.c: clangd (c)
        native/checksum.h: clangd (c)
        native/compile_flags.txt: unsupported
        products/desk-lamp.dust: document
        products/standing-desk.dust: document
        py/pyproject.toml: unsupported
        py/shop/__init__.py: pyright (python)
        py/shop/catalog.py: pyright (python)
        py/shop/pricing.py: pyright (python)
        schemas/product.schema.json: document
        schemas/supplier.schema.json: document
        stardust.toml: unsupported
        suppliers/lumen-works.json: document
        suppliers/oak-and-iron.json: document
        web/src/main.ts: typescript (typescript)
        web/src/price.ts: typescript (typescript)
        web/tsconfig.json: document
    "#]]
    .assert_eq(&report);
}

#[test]
fn the_first_file_of_each_server_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = store_config(STORE_TOML);
    let servers = Servers::new(user(USER_TOML), config.servers.clone());
    for rel in [
        ".stardust/early.py",
        ".git/early.py",
        "node_modules/pkg/index.ts",
        "a/notes.md",
        "b/app.py",
        "b/lib.c",
        "b/more.py",
        "c/z.ts",
        "py/generated/aa.py",
        "scripts/tool.mjs",
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "x\n").unwrap();
    }
    // A link is never followed, so a folder outside cannot lend a server its first file.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("aa.ts"), "x\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("a/linked")).unwrap();
    let mut report = String::new();
    // `b/app.py` is not usable (the server could not be given it): the next one is taken.
    for name in ["pyright", "tsserver", "clangd", "marksman", "nobody"] {
        let found = first_file(root, &config, &servers, name, |rel| {
            (rel != "b/app.py").then(|| rel.to_owned())
        });
        writeln!(report, "{name}: {found:?}").unwrap();
    }
    // Past its budget, the walk gives up rather than read a huge store.
    let ts = |rel: &str| match route(&config, &servers, rel) {
        Ok(Owner::Server { server: "tsserver", .. }) => Some(rel.to_owned()),
        _ => None,
    };
    writeln!(report, "budget 3: {:?}", scan::find_file(root, &config, 3, ts)).unwrap();
    expect![[r#"
        pyright: Some("b/more.py")
        tsserver: Some("c/z.ts")
        clangd: Some("b/lib.c")
        marksman: Some("a/notes.md")
        nobody: None
        budget 3: None
    "#]]
    .assert_eq(&report);
}

#[test]
fn the_workspace_root_is_the_nearest_marked_folder_inside_the_store() {
    let files = ["py/pyproject.toml", "web/tsconfig.json", "web/app/tsconfig.json", ".git"];
    let exists = |p: &str| files.contains(&p);
    let markers = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut report = String::new();
    for (rel, m) in [
        ("py/shop/catalog.py", markers(&["pyproject.toml"])),
        ("py/pyproject.toml", markers(&["pyproject.toml"])),
        ("web/app/src/main.ts", markers(&["tsconfig.json"])),
        ("web/src/main.ts", markers(&["tsconfig.json"])),
        ("scripts/x.py", markers(&["pyproject.toml"])),
        ("native/lib.c", markers(&["compile_flags.txt", ".git"])),
        ("top.py", markers(&[])),
    ] {
        writeln!(report, "{rel} {m:?}: '{}'", root_for(rel, &m, &exists)).unwrap();
    }
    expect![[r#"
        py/shop/catalog.py ["pyproject.toml"]: 'py'
        py/pyproject.toml ["pyproject.toml"]: 'py'
        web/app/src/main.ts ["tsconfig.json"]: 'web/app'
        web/src/main.ts ["tsconfig.json"]: 'web'
        scripts/x.py ["pyproject.toml"]: ''
        native/lib.c ["compile_flags.txt", ".git"]: ''
        top.py []: ''
    "#]]
    .assert_eq(&report);
}

#[test]
fn trusting_many_stores_at_once_records_every_one() {
    let tmp = tempfile::tempdir().unwrap();
    let config_dir = tmp.path().join("config/stardust");
    let stores: Vec<_> = (0..8)
        .map(|i| {
            let store = tmp.path().join(format!("store-{i}"));
            std::fs::create_dir_all(&store).unwrap();
            std::fs::write(store.join("stardust.toml"), STORE_TOML).unwrap();
            store
        })
        .collect();
    // Each `stardust trust` reads trusted.toml, adds its store and writes it back: without
    // the file's lock, one that read before another wrote would drop the other's store.
    std::thread::scope(|scope| {
        for store in &stores {
            let config_dir = &config_dir;
            scope.spawn(move || trust_store(store, config_dir).unwrap());
        }
    });
    let trusted = Trusted::load(&config_dir.join(TRUSTED_FILE)).unwrap();
    for store in &stores {
        let canonical = std::fs::canonicalize(store).unwrap();
        let name = store_config(STORE_TOML).servers.keys().next().unwrap().clone();
        assert!(trusted.hash(&canonical, &name).is_some(), "{} is trusted", store.display());
    }
    // Revoking them all at once leaves none.
    std::thread::scope(|scope| {
        for store in &stores {
            let config_dir = &config_dir;
            scope.spawn(move || revoke_store(store, config_dir).unwrap());
        }
    });
    assert_eq!(Trusted::load(&config_dir.join(TRUSTED_FILE)).unwrap(), Trusted::default());
}

/// SPEC §25's readiness from what a server said: a server that reports work is ready once it
/// ended, one that publishes once it published, one that says nothing after a quiet period,
/// one that keeps talking after the bound; never while at work or just after.
#[test]
fn readiness_from_what_a_server_said() {
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let started = Activity { initialized: Some(t0), ..Activity::default() };
    let state = |a: &Activity, now: u64| {
        let (r, since) = readiness(a, at(now));
        (r.as_str(), since.duration_since(t0).as_millis() as u64)
    };
    // No clock: the host does not say, taken as ready.
    let (r, _) = readiness(&Activity::default(), at(0));
    assert_eq!(r, Readiness::Ready);
    // Silent: indexing until the quiet period, then ready from its end.
    let quiet = READY_QUIET.as_millis() as u64;
    assert_eq!(state(&started, 10), ("indexing", 0));
    assert_eq!(state(&started, quiet + 200), ("ready", quiet));
    // Talking (a log line) restarts the quiet period.
    let talking = Activity { last_heard: Some(at(1500)), ..started.clone() };
    assert_eq!(state(&talking, quiet + 200), ("indexing", 0));
    // The bound: talking forever without publishing or reporting work.
    let chatty = Activity { last_heard: Some(at(20_000)), ..started.clone() };
    assert_eq!(state(&chatty, 20_200), ("ready", READY_BOUND.as_millis() as u64));
    // A publication is the end of its first analysis (after the settle).
    let published =
        Activity { first_published: Some(at(300)), last_heard: Some(at(300)), ..started.clone() };
    assert_eq!(state(&published, 350), ("indexing", 0));
    assert_eq!(state(&published, 500), ("ready", 300));
    // At work: indexing since the work began, whatever was published before.
    let busy =
        Activity { busy: true, reports: true, work_changed: Some(at(400)), ..published.clone() };
    assert_eq!(state(&busy, 5_000), ("indexing", 400));
    // Work reported and ended: ready once the settle passed, since the end.
    let ended =
        Activity { busy: false, reports: true, work_changed: Some(at(900)), ..started.clone() };
    assert_eq!(state(&ended, 950), ("indexing", 0));
    assert_eq!(state(&ended, 1_100), ("ready", 900));
    // An answer to a request after the work ended ends the settle (what the server announced
    // in the turn that ended its work came before the answer); one from before does not.
    let answered = Activity { answered: Some(at(920)), ..ended.clone() };
    assert_eq!(state(&answered, 950), ("ready", 900));
    let earlier = Activity { answered: Some(at(850)), ..ended.clone() };
    assert_eq!(state(&earlier, 950), ("indexing", 0));
    // An answer that arrives just after the work ended was not given at work: what the
    // server announced before it is on the wire before it.
    assert_eq!(answer_readiness(&ended, at(950)), Readiness::Ready);
    assert_eq!(answer_readiness(&published, at(350)), Readiness::Ready);
    assert_eq!(answer_readiness(&busy, at(5_000)), Readiness::Indexing);
    assert_eq!(answer_readiness(&started, at(10)), Readiness::Indexing);
    // Work ended after the first analysis: ready since the work ended.
    let again = Activity { busy: false, work_changed: Some(at(900)), ..published.clone() };
    assert_eq!(state(&again, 2_000), ("ready", 900));
    // A closed connection: crashed since it closed.
    let crashed =
        Activity { stopped: Some("gone".into()), stopped_at: Some(at(42)), ..started.clone() };
    assert_eq!(state(&crashed, 100), ("crashed", 42));
}

/// Silence is not readiness where the host probes: a server busy with work it does not report
/// (pyright running the interpreter) answers a probe late, and only a probe sent after the
/// quiet period and answered promptly makes the quiet count.
#[test]
fn a_silent_server_is_ready_only_once_it_answers_a_probe_promptly() {
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let quiet = READY_QUIET.as_millis() as u64;
    let prompt = PROBE_PROMPT.as_millis() as u64;
    let state = |a: &Activity, now: u64| {
        let (r, since) = readiness(a, at(now));
        (r.as_str(), since.duration_since(t0).as_millis() as u64)
    };
    let silent = Activity { initialized: Some(t0), probes: true, ..Activity::default() };
    // Quiet, never probed: a probe is wanted, and the server is not ready yet.
    assert!(!wants_probe(&silent, at(quiet - 1)));
    assert!(wants_probe(&silent, at(quiet)));
    assert_eq!(state(&silent, quiet + 200), ("indexing", 0));
    // Probed and not answered (the server is at work): still indexing, no second probe.
    let probed = Activity { probe_sent: Some(at(quiet)), ..silent.clone() };
    assert!(!wants_probe(&probed, at(quiet + 3_000)));
    assert_eq!(state(&probed, quiet + 3_000), ("indexing", 0));
    // Answered promptly: ready since the quiet period ended.
    let prompt_answer = Activity { probe_answered: Some(at(quiet + 20)), ..probed.clone() };
    assert_eq!(state(&prompt_answer, quiet + 150), ("ready", quiet));
    // Answered late (it was at work): the quiet starts again from the answer, which wants
    // a probe of its own.
    let late = quiet + prompt + 4_000;
    let slow = Activity { probe_answered: Some(at(late)), ..probed.clone() };
    assert_eq!(state(&slow, late + 10), ("indexing", 0));
    assert!(!wants_probe(&slow, at(late + quiet - 1)));
    assert!(wants_probe(&slow, at(late + quiet)));
    // A probe sent before the server last spoke proves nothing about the silence after.
    let spoke = Activity { last_heard: Some(at(quiet + 100)), ..prompt_answer.clone() };
    assert_eq!(state(&spoke, quiet + 200), ("indexing", 0));
    assert!(wants_probe(&spoke, at(2 * quiet + 100)));
    // A server that published or reported work is never probed.
    let published = Activity { first_published: Some(at(300)), ..silent.clone() };
    assert!(!wants_probe(&published, at(10 * quiet)));
    // The bound still holds for a server that never answers.
    assert_eq!(state(&probed, 20_200), ("ready", READY_BOUND.as_millis() as u64));
}

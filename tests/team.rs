//! Team stores end to end (SPEC §22): two cores, as two machines (their own folders, sockets
//! and mounts), on one PostgreSQL database of the test cluster (`STARDUST_TEST_DATABASE_URL`,
//! which scripts/test sets). A save through one machine's mount reaches the other's mount and
//! an editor there; both logs agree; a core killed right after a commit loses nothing.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use util::lsp::Lsp;
use util::{Serve, stardust, text, wait_until};

/// A fresh database on the test cluster (dropped at the end) and its URL.
struct Db {
    name: String,
    url: String,
    admin: String,
}

impl Db {
    fn new(tag: &str) -> Db {
        let admin = std::env::var("STARDUST_TEST_DATABASE_URL").expect(
            "STARDUST_TEST_DATABASE_URL names the test cluster; run the tests with scripts/test",
        );
        let name = format!("stardust_e2e_{tag}_{}", std::process::id());
        let url = stardust_pg::scratch::create(&admin, &name).unwrap();
        Db { name, url, admin }
    }
}

impl Db {
    /// Make the database unreachable for the cores (as if its server stopped), or reachable.
    fn reachable(&self, yes: bool) {
        stardust_pg::scratch::set_reachable(&self.admin, &self.name, yes).unwrap();
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = stardust_pg::scratch::drop(&self.admin, &self.name);
    }
}

/// A machine's store folder at `dir/name` whose stardust.toml is the sample library's plus
/// the team store's database; with the library's documents when `documents`.
fn machine(dir: &Path, name: &str, db: &Db, documents: bool) -> PathBuf {
    let store = dir.join(name);
    if documents {
        util::copy_store(&util::repo().join("examples/library"), &store);
    } else {
        std::fs::create_dir_all(&store).unwrap();
    }
    let config =
        std::fs::read_to_string(util::repo().join("examples/library/stardust.toml")).unwrap();
    let config = config.replacen(
        "[store]\n",
        &format!("[store]\nbackend = \"postgres\"\nurl = \"{}\"\n", db.url),
        1,
    );
    std::fs::write(store.join("stardust.toml"), config).unwrap();
    store.canonicalize().unwrap()
}

fn mount(dir: &Path, name: &str, store: &Path) -> (PathBuf, Serve) {
    let mnt = dir.join(name);
    std::fs::create_dir_all(&mnt).unwrap();
    let serve = Serve::mounted(store, &mnt);
    wait_until("the store is mounted", || mnt.join(".stardust/store.json").is_file());
    (mnt.canonicalize().unwrap(), serve)
}

fn log(store: &Path) -> Vec<Value> {
    let out = stardust(&["log", store.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

const ZED: &str = "id person/zed\ntype person\nname 'Zed Team'\nroles [author]\n";

#[test]
fn a_save_through_one_machines_mount_reaches_the_other_machines_mount_and_editor() {
    let db = Db::new("mount");
    let dir = tempfile::tempdir().unwrap();
    let a = machine(dir.path(), "a", &db, true);
    let b = machine(dir.path(), "b", &db, false);
    let out = stardust(&["db", "migrate", a.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("from schema 0 to {}", stardust_pg::SCHEMA)),
        "{}",
        text(&out.stdout)
    );

    let (mnt_a, serve_a) = mount(dir.path(), "mnt-a", &a);
    let (mnt_b, serve_b) = mount(dir.path(), "mnt-b", &b);
    // B took A's documents from the database.
    let dune = std::fs::read(mnt_a.join("books/dune.dust")).unwrap();
    assert_eq!(std::fs::read(mnt_b.join("books/dune.dust")).unwrap(), dune);

    // An editor on machine B, rooted in B's mount, listening for changes.
    let mut editor = Lsp::start(&mnt_b, &mnt_b, None);
    editor.initialize(json!({
        "processId": null,
        "rootUri": format!("file://{}", mnt_b.display()),
        "clientInfo": {"name": "editor-b"},
        "capabilities": {"experimental": {"stardust": {"notifications": ["documentsChanged"]}}}
    }));

    // A save through machine A's mount, as any program makes one.
    std::fs::write(mnt_a.join("people/zed.dust"), ZED).unwrap();
    wait_until("the save reaches machine B's mount", || {
        std::fs::read_to_string(mnt_b.join("people/zed.dust")).is_ok_and(|t| t == ZED)
    });
    let changed = editor.wait(|m| {
        m["method"] == "stardust/documentsChanged"
            && m["params"]["documents"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["path"] == "people/zed.dust")
    });
    let entry = &changed["params"]["documents"][0];
    assert_eq!(entry["change"], "created", "{changed}");
    assert_eq!(entry["uri"], format!("file://{}/people/zed.dust", mnt_b.display()));

    // A change to a document B's mount has already shown, by a rename over it (as editors
    // save): B's mount shows the new bytes.
    let _ = std::fs::read(mnt_b.join("books/dune.dust")).unwrap();
    let mut changed_dune = dune.clone();
    changed_dune.extend_from_slice(b"; a note from machine A\n");
    std::fs::write(mnt_a.join("books/.dune.dust.tmp"), &changed_dune).unwrap();
    std::fs::rename(mnt_a.join("books/.dune.dust.tmp"), mnt_a.join("books/dune.dust")).unwrap();
    wait_until("the change reaches machine B's mount", || {
        std::fs::read(mnt_b.join("books/dune.dust")).is_ok_and(|t| t == changed_dune)
    });

    // An agent on machine B reads the entity A saved.
    let mut agent = util::mcp::Mcp::open(&b, &[], "agent-b");
    let found =
        agent.ok("query_execute", json!({"document": "find [?p] where [[?p name 'Zed Team']]"}));
    assert_eq!(found["rows"], json!([["person/zed"]]), "{found}");
    drop(agent);

    // One history, which both machines' `stardust log` agree on.
    let log_a = log(&a);
    assert_eq!(log_a.len(), 3);
    assert_eq!(log_a[1]["origin"], "mount");
    assert_eq!(log_a[2]["origin"], "mount");
    wait_until("machine B's log has the saves", || log(&b).len() == 3);
    assert_eq!(log(&b), log_a);
    editor.shutdown();
    assert!(serve_a.stop().success());
    assert!(serve_b.stop().success());
}

#[test]
fn a_thousand_saves_through_two_machines_mounts_at_once_keep_one_history() {
    let db = Db::new("many");
    let dir = tempfile::tempdir().unwrap();
    let a = machine(dir.path(), "a", &db, true);
    let b = machine(dir.path(), "b", &db, false);
    assert!(stardust(&["db", "migrate", a.to_str().unwrap()]).status.success());
    let (mnt_a, serve_a) = mount(dir.path(), "mnt-a", &a);
    let (mnt_b, serve_b) = mount(dir.path(), "mnt-b", &b);
    let start = log(&a).len();
    // Each machine saves 500 documents of its own through its mount, at the same time, so
    // the two cores keep finding the database's head moved and catching up first.
    let writers: Vec<_> = [("a", mnt_a.clone()), ("b", mnt_b.clone())]
        .into_iter()
        .map(|(name, mnt)| {
            std::thread::spawn(move || {
                std::fs::create_dir_all(mnt.join(format!("notes-{name}"))).unwrap();
                for i in 0..500 {
                    let doc = format!("id note/{name}{i}\ntype note\ntitle 'N {i}'\n");
                    std::fs::write(mnt.join(format!("notes-{name}/n{i}.dust")), doc).unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    let total = start + 1000;
    wait_until("both machines' logs have every save", || {
        log(&a).len() == total && log(&b).len() == total
    });
    let log_a = log(&a);
    assert_eq!(log_a, log(&b), "the two machines' histories differ");
    let seqs: Vec<u64> = log_a.iter().map(|t| t["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=total as u64).collect::<Vec<_>>(), "one strictly increasing history");
    let saves = |name: &str| {
        log_a
            .iter()
            .filter(|t| {
                t["origin"] == "mount"
                    && t["documents"][0]["path"]
                        .as_str()
                        .is_some_and(|p| p.starts_with(&format!("notes-{name}/")))
            })
            .count()
    };
    assert_eq!((saves("a"), saves("b")), (500, 500));
    // Each mount shows the other's documents.
    for (mnt, other) in [(&mnt_a, "b"), (&mnt_b, "a")] {
        wait_until("a mount shows the other machine's saves", || {
            std::fs::read_dir(mnt.join(format!("notes-{other}")))
                .is_ok_and(|d| d.filter_map(Result::ok).count() == 500)
        });
    }
    assert!(serve_a.stop().success());
    assert!(serve_b.stop().success());
}

#[test]
fn a_core_killed_right_after_a_commit_loses_nothing_and_catches_up_when_it_returns() {
    let db = Db::new("kill");
    let dir = tempfile::tempdir().unwrap();
    let a = machine(dir.path(), "a", &db, true);
    let b = machine(dir.path(), "b", &db, false);
    assert!(stardust(&["db", "migrate", a.to_str().unwrap()]).status.success());
    let (mnt_a, mut serve_a) = mount(dir.path(), "mnt-a", &a);
    let serve_b = Serve::start(&b);

    std::fs::write(mnt_a.join("people/zed.dust"), ZED).unwrap();
    serve_a.child.kill().unwrap();
    serve_a.child.wait().unwrap();
    let _ = Command::new("fusermount3").arg("-uz").arg(&mnt_a).status();
    // The commit was acknowledged (the write returned), so it is in the database: B has it.
    wait_until("machine B takes the commit in", || {
        std::fs::read_to_string(b.join("people/zed.dust")).is_ok_and(|t| t == ZED)
    });
    // Machine B commits while A is down; A, back, takes it in.
    let out = stardust(&["log", b.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success());
    std::fs::write(b.join("people/zed.dust"), ZED.replace("Zed Team", "Zed B")).unwrap();
    wait_until("machine B records the edit", || log(&b).len() == 3);
    drop(serve_b);
    let out = stardust(&["log", a.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log_a: Vec<Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(log_a.len(), 3);
    assert_eq!(log_a, log(&b));
    assert_eq!(
        std::fs::read_to_string(a.join("people/zed.dust")).unwrap(),
        ZED.replace("Zed Team", "Zed B")
    );
}

#[test]
fn a_save_while_the_database_is_away_is_refused_kept_and_resumes() {
    let db = Db::new("away");
    let dir = tempfile::tempdir().unwrap();
    let a = machine(dir.path(), "a", &db, true);
    assert!(stardust(&["db", "migrate", a.to_str().unwrap()]).status.success());
    let (mnt, serve) = mount(dir.path(), "mnt", &a);
    db.reachable(false);
    // fsync reports the save's outcome (a close's error would be lost by Rust's drop).
    let mut file = std::fs::File::create(mnt.join("people/zed.dust")).unwrap();
    std::io::Write::write_all(&mut file, ZED.as_bytes()).unwrap();
    let err = file.sync_all().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(5), "EIO: {err}");
    drop(file);
    // Nothing was committed, and the bytes are kept with the reason.
    assert!(!a.join("people/zed.dust").exists());
    let rejected = a.join(".stardust/rejected");
    let kept: Vec<String> = std::fs::read_dir(&rejected)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let bytes = kept.iter().find(|n| !n.ends_with(".why")).expect("the refused bytes");
    assert_eq!(std::fs::read_to_string(rejected.join(bytes)).unwrap(), ZED);
    let why = kept.iter().find(|n| n.ends_with(".why")).expect("the reason");
    assert!(std::fs::read_to_string(rejected.join(why)).unwrap().contains("unavailable"));
    db.reachable(true);
    std::fs::write(mnt.join("people/zed.dust"), ZED).unwrap();
    assert_eq!(std::fs::read_to_string(a.join("people/zed.dust")).unwrap(), ZED);
    assert!(serve.stop().success());
}

#[test]
fn import_and_export_move_a_store_between_a_folder_and_the_database_byte_for_byte() {
    let db = Db::new("move");
    let dir = tempfile::tempdir().unwrap();
    let folder = util::library();
    let team = machine(dir.path(), "team", &db, false);
    assert!(stardust(&["db", "migrate", team.to_str().unwrap()]).status.success());
    let out = stardust(&["import", team.to_str().unwrap(), folder.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let exported = dir.path().join("exported");
    let out = stardust(&["export", team.to_str().unwrap(), exported.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("as of seq 1"), "{}", text(&out.stdout));
    let check = stardust(&["check", exported.to_str().unwrap()]);
    let original = stardust(&["check", folder.path().to_str().unwrap()]);
    assert_eq!(check.status.code(), original.status.code());
    for (rel, bytes) in documents(folder.path()) {
        assert_eq!(std::fs::read(exported.join(&rel)).ok(), Some(bytes), "{rel}");
    }
    assert_eq!(documents(&exported).len(), documents(folder.path()).len());
    // A backup of the team store: an archive as of one seq, which verifies.
    let archives = dir.path().join("archives");
    std::fs::create_dir(team.join("backups")).unwrap();
    std::fs::write(
        team.join("backups/nightly.dust"),
        format!(
            "id backup/nightly\ntype backup\ninclude ['**']\ntarget '{}'\n",
            archives.display()
        ),
    )
    .unwrap();
    let out = stardust(&["backup", "run", team.to_str().unwrap(), "backup/nightly"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("as of seq 2"), "{}", text(&out.stdout));
    let archive = std::fs::read_dir(&archives).unwrap().next().unwrap().unwrap().path();
    let out = stardust(&["backup", "verify", archive.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A password in the file is refused before anything connects.
    let leaky = dir.path().join("leaky");
    std::fs::create_dir(&leaky).unwrap();
    std::fs::write(
        leaky.join("stardust.toml"),
        "[store]\nbackend = \"postgres\"\nurl = \"postgresql://ann:pw@db/x\"\n",
    )
    .unwrap();
    let out = stardust(&["log", leaky.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error[config-invalid]"), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("pw@"), "{}", text(&out.stderr));
}

/// The documents of a store folder (JSON and DUST files outside `.stardust/`).
fn documents(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel.starts_with(".stardust") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else if rel.ends_with(".json") || rel.ends_with(".dust") {
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The README's team-store configuration is valid as written.
#[test]
fn the_readmes_team_store_configuration_is_valid() {
    let readme = std::fs::read_to_string(util::repo().join("README.md")).unwrap();
    let section = readme.split("\n## Team stores on PostgreSQL\n").nth(1).expect("the section");
    let block = section.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stardust.toml"), block).unwrap();
    let out = stardust(&["check", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// An agent's confirm while the database is away is `unavailable`, and an MCP host built on
/// the TypeScript SDK receives that error intact (SPEC §13, §16); nothing is written.
#[test]
fn an_agents_confirm_while_the_database_is_away_is_unavailable() {
    let db = Db::new("agent");
    let dir = tempfile::tempdir().unwrap();
    let a = machine(dir.path(), "a", &db, true);
    assert!(stardust(&["db", "migrate", a.to_str().unwrap()]).status.success());
    let mut host = util::hosts::Host::start(
        util::hosts::Sdk::TypeScript,
        "team-agent",
        &a,
        &["--allow-mutation"],
        &[],
    );
    let zed =
        json!({"id": "person/zed", "type": "person", "name": "Zed Team", "roles": ["author"]});
    let preview = host.ok("entity_create", json!({"entities": [zed]}));
    db.reachable(false);
    let error = host.fail_with(
        "unavailable",
        "preview_confirm",
        json!({"previewId": preview["previewId"]}),
    );
    db.reachable(true);
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{error}");
    assert!(!a.join("people/zed.dust").exists(), "nothing was written");
}

/// With no user in the URL and neither `USER` nor `PGUSER` set (a systemd unit, cron, a
/// container), a team store connects as libpq would: as the effective uid's login name from
/// the password database, not as `postgres`.
#[test]
fn with_no_user_anywhere_the_store_connects_as_the_login_name() {
    let admin = std::env::var("STARDUST_TEST_DATABASE_URL").expect(
        "STARDUST_TEST_DATABASE_URL names the test cluster; run the tests with scripts/test",
    );
    let login = Command::new("id").arg("-un").output().unwrap();
    let login = text(&login.stdout).trim().to_owned();
    let name = format!("stardust_e2e_login_{}", std::process::id());
    let url = stardust_pg::scratch::create_owned(&admin, &name, &login).unwrap();
    assert!(!url.contains('@'), "{url}");
    let db = Db { name, url, admin };
    let dir = tempfile::tempdir().unwrap();
    let store = machine(dir.path(), "team", &db, true);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_stardust"))
            .args(args)
            .env_remove("USER")
            .env_remove("PGUSER")
            .env_remove("LOGNAME")
            .env_remove("STARDUST_DATABASE_URL")
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
    };
    let s = store.to_str().unwrap();
    let out = run(&["db", "migrate", s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Opening the store records its documents as a transaction in the database.
    let out = run(&["log", s, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 1, "{}", text(&out.stdout));
    let as_admin = stardust_pg::scratch::with_database(&db.admin, &db.name);
    let owner = stardust_pg::scratch::query_text(
        &as_admin,
        "SELECT tableowner FROM pg_tables WHERE tablename = 'stardust_head'",
    )
    .unwrap();
    assert_eq!(owner, login);
    let committed =
        stardust_pg::scratch::query_text(&as_admin, "SELECT count(*) FROM stardust_transactions")
            .unwrap();
    assert_eq!(committed, "1");
}

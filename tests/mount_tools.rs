//! Working inside the mount (SPEC §24): `git`, `tar`, `cp`, `rsync` and `npm` run in a real
//! mount of a store leave exactly the tree they leave in a plain clone doing the same steps,
//! and exit as they do there. Each step runs in both; their exit codes and trees (paths,
//! bytes, modes, link targets; `.git/` aside) are compared.

mod util;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use util::mount::is_mounted;
use util::{text, wait_until};

/// What one path of a tree is.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File { bytes: Vec<u8>, mode: u32 },
    Link(PathBuf),
    Dir,
}

/// Every path under `root` but `.git/` and `.stardust/`, with what it is.
fn tree(root: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let walker = walkdir::WalkDir::new(root).min_depth(1).follow_links(false);
    for entry in walker.into_iter().filter_entry(|e| {
        !(e.depth() == 1 && matches!(e.file_name().to_str(), Some(".git" | ".stardust")))
    }) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let meta = entry.path().symlink_metadata().unwrap();
        let what = if meta.file_type().is_symlink() {
            Entry::Link(fs::read_link(entry.path()).unwrap())
        } else if meta.is_dir() {
            Entry::Dir
        } else {
            let bytes = fs::read(entry.path()).unwrap();
            Entry::File { bytes, mode: meta.permissions().mode() & 0o777 }
        };
        out.insert(rel, what);
    }
    out
}

/// Run `script` with `sh` in `dir`: its exit code and output.
fn sh(dir: &Path, script: &str) -> (i32, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@b")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@b")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", text(&out.stdout), text(&out.stderr)))
}

fn must(dir: &Path, script: &str) -> String {
    let (code, out) = sh(dir, script);
    assert_eq!(code, 0, "{script}: {out}");
    out
}

const SCHEMA: &str = r#"{"type": "object", "required": ["id", "type", "name"]}"#;

/// A repository with history: data and its schema, a `tsconfig.json` with comments, a broken
/// test fixture, an empty JSON file, symbolic links named `*.py` and `*.json`, then a commit
/// whose data breaks its schema and that deletes and adds files; a branch to merge.
fn origin(dir: &Path) -> PathBuf {
    let repo = dir.join("origin");
    fs::create_dir_all(&repo).unwrap();
    let files = [
        ("schemas/thing.schema.json", SCHEMA),
        ("data/a.json", r#"{"id": "thing/a", "type": "thing", "name": "A"}"#),
        ("data/b.dust", "id    thing/b\ntype  thing\nname  B\nfriend @thing/a\n"),
        ("tsconfig.json", "{\n  // the compiler\n  \"compilerOptions\": {\"strict\": true,},\n}\n"),
        ("tests/fixtures/broken.json", "{\"id\": 1, \"oops\"\n"),
        ("tests/fixtures/user.json", "{\"id\": 2930418, \"name\": \"ada\"}\n"),
        (".vscode/launch.json", "{\"version\": \"0.2.0\", // launch\n}\n"),
        ("empty.json", ""),
        ("src/x.py", "print('x')\n"),
        ("README.md", "# a repository\n"),
        (".gitignore", "build/\n"),
        ("2020", "a file named like a number\n"),
    ];
    for (path, content) in files {
        let path = repo.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    must(&repo, "ln -s src/x.py l.py && ln -s data/a.json x.json && chmod +x src/x.py");
    must(&repo, "git init -q -b main . && git add -A && git commit -qm one && git tag v1");
    fs::write(repo.join("data/a.json"), r#"{"id": "thing/a", "type": "thing"}"#).unwrap();
    fs::write(repo.join("new.json"), "{\"b\": 2}\n").unwrap();
    must(&repo, "git rm -q tsconfig.json l.py && git add -A && git commit -qm two");
    must(&repo, "git checkout -q -b feature v1 && echo 'more' >> README.md");
    must(&repo, "echo '{\"c\": 3}' > feature.json && git add -A && git commit -qm feature");
    must(&repo, "git checkout -q main");
    repo
}

/// Two clones of `origin`: a plain folder, and a store served by `stardust serve --mount`.
struct Pair {
    plain: PathBuf,
    store: PathBuf,
    dir: PathBuf,
    serve: std::process::Child,
    tmp: tempfile::TempDir,
}

impl Pair {
    fn new() -> Pair {
        let tmp = tempfile::tempdir().unwrap();
        let origin = origin(tmp.path());
        let plain = tmp.path().join("plain");
        let store = tmp.path().join("store");
        for to in [&plain, &store] {
            let (code, out) =
                sh(tmp.path(), &format!("git clone -q {} {}", origin.display(), to.display()));
            assert_eq!(code, 0, "{out}");
        }
        let store = store.canonicalize().unwrap();
        let dir = tmp.path().join("mnt");
        fs::create_dir(&dir).unwrap();
        let serve = serve(&store, &dir, &tmp.path().join("serve.log"));
        let pair = Pair { plain, store, dir, serve, tmp };
        pair.wait_mounted();
        pair
    }

    fn wait_mounted(&self) {
        wait_until("the store is mounted", || {
            is_mounted(&self.dir) && self.dir.join(".stardust/store.json").is_file()
        });
    }

    /// `kill -9` the core serving the mount, as a crash would, and serve it again.
    fn crash_and_restart(&mut self) {
        self.serve.kill().unwrap();
        self.serve.wait().unwrap();
        // The kernel keeps a dead FUSE connection mounted: detach it, as a user would.
        let _ = Command::new("fusermount3").arg("-uz").arg(&self.dir).status();
        wait_until("the dead mount is gone", || !is_mounted(&self.dir));
        self.serve = serve(&self.store, &self.dir, &self.tmp.path().join("serve-again.log"));
        self.wait_mounted();
    }

    /// The core's log, and the restarted core's after a crash.
    fn log(&self) -> String {
        let read = |name: &str| fs::read_to_string(self.tmp.path().join(name)).unwrap_or_default();
        read("serve.log") + &read("serve-again.log")
    }

    /// The refused saves kept: (name, bytes).
    fn rejected(&self) -> Vec<(String, String)> {
        let dir = self.store.join(".stardust/rejected");
        let mut out: Vec<(String, String)> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .map(|e| e.unwrap())
            .map(|e| e.file_name().into_string().unwrap())
            .filter(|name| !name.ends_with(".why"))
            .map(|name| {
                let bytes = fs::read_to_string(self.store.join(".stardust/rejected").join(&name));
                (name, bytes.unwrap())
            })
            .collect();
        out.sort();
        out
    }

    /// Run `script` in both; the same exit code and the same tree, or the test fails.
    fn same(&self, script: &str) -> String {
        let (plain_code, plain_out) = sh(&self.plain, script);
        let (mount_code, mount_out) = sh(&self.dir, script);
        assert_eq!(
            mount_code,
            plain_code,
            "{script}: exit {mount_code} in the mount, {plain_code} in the folder\nmount: \
             {mount_out}\nfolder: {plain_out}\n{}",
            self.log()
        );
        self.same_trees(script);
        mount_out
    }

    fn same_trees(&self, after: &str) {
        let (plain, mount) = (tree(&self.plain), tree(&self.dir));
        if plain != mount {
            let only = |a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>| -> Vec<String> {
                a.iter().filter(|(k, v)| b.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect()
            };
            panic!(
                "after {after}: the trees differ\nin the folder, not so in the mount: {:?}\nin \
                 the mount, not so in the folder: {:?}\n{}",
                only(&plain, &mount),
                only(&mount, &plain),
                self.log()
            );
        }
        // The store's folder holds what the mount shows.
        assert_eq!(tree(&self.store), mount, "after {after}: the store's folder");
    }
}

/// `stardust serve STORE --mount DIR`, its log in `log`.
fn serve(store: &Path, dir: &Path, log: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_stardust"))
        .arg("serve")
        .arg(store)
        .arg("--mount")
        .arg(dir)
        .env("RUST_LOG", "stardust=info,stardust_fuse=info")
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.serve.id().to_string()).status();
        let _ = self.serve.wait();
        if is_mounted(&self.dir) {
            let _ = Command::new("fusermount3").arg("-u").arg(&self.dir).status();
        }
    }
}

#[test]
fn git_leaves_the_same_tree_as_in_a_plain_clone() {
    let pair = Pair::new();
    pair.same_trees("the clone");
    let steps = [
        "git status --porcelain",
        "git checkout -q v1",
        "git checkout -q -f main",
        "git switch -q -c topic v1",
        "git switch -q main",
        "echo '{\"id\": \"thing/z\", \"type\": \"thing\", \"name\": \"Z\"}' > data/z.json && echo changed >> README.md",
        "git stash -q",
        "git status --porcelain",
        "git stash pop -q",
        "git status --porcelain --untracked-files=all",
        "git reset -q --hard",
        "git merge -q --no-edit origin/feature",
        "git checkout -q v1 -- data/a.json tsconfig.json",
        "git reset -q --hard HEAD~1",
        "git clean -fdx",
        "git status --porcelain --ignored",
    ];
    for step in steps {
        let out = pair.same(step);
        assert!(!out.contains(".stardust"), "{step}: git saw the private folder: {out}");
    }
    // The store recorded what git wrote, never refusing it; its data is diagnosed, and the
    // history verifies.
    let log = util::stardust(&["log", pair.store.to_str().unwrap(), "--verify"]);
    assert_eq!(log.status.code(), Some(0), "{}", text(&log.stderr));
    assert!(pair.rejected().is_empty(), "nothing git wrote was refused");
}

#[test]
fn archives_copies_and_syncs_leave_the_same_tree() {
    let pair = Pair::new();
    let src = pair.tmp.path().join("src");
    // 2,000 files: plain JSON, broken JSON, empty JSON, JSONC, links, names tools use.
    for i in 0..400 {
        let dir = src.join(format!("d{}", i % 20));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("f{i}.json")), format!("{{\"n\": {i}}}\n")).unwrap();
        fs::write(dir.join(format!("t{i}.txt")), format!("text {i}\n")).unwrap();
        fs::write(dir.join(format!("bad{i}.json")), "{\"n\": ").unwrap();
        fs::write(dir.join(format!("e{i}.json")), "").unwrap();
        std::os::unix::fs::symlink(format!("f{i}.json"), dir.join(format!("l{i}.json"))).unwrap();
    }
    fs::write(src.join("tsconfig.base.json"), "{\n  // base\n  \"a\": 1,\n}\n").unwrap();
    fs::write(src.join("x~"), "left behind\n").unwrap();
    fs::write(src.join("build.tmp"), "left behind\n").unwrap();
    let archive = pair.tmp.path().join("src.tar");
    must(&src, &format!("tar -cf {} .", archive.display()));
    pair.same(&format!("mkdir untar && cd untar && tar -xf {}", archive.display()));
    pair.same(&format!("cp -r {} copied", src.display()));
    pair.same(&format!("rsync -a {}/ synced/", src.display()));
    pair.same(&format!("rsync -a --delete {}/d1/ synced/d2/", src.display()));
    pair.same("rm -rf copied");
    pair.same("find untar -delete");
    assert!(pair.rejected().is_empty(), "nothing a tool wrote was refused");
}

/// Outside the store's data everything is saved as it is; a save that breaks the data is
/// still refused, with its bytes kept once and the refusal in `stardust.status`.
#[test]
fn data_is_still_guarded() {
    let pair = Pair::new();
    let mnt = &pair.dir;
    fs::write(mnt.join("notes.json"), "{ not json").unwrap();
    assert_eq!(fs::read_to_string(pair.store.join("notes.json")).unwrap(), "{ not json");
    let broken = "{\"id\": \"thing/a\", \"type\": \"thing\", \"nope\": }";
    // Rust's `File` drops close's answer: `fsync` carries the refusal (and `close`, which the
    // mount's own tests check with tools that report it).
    let mut file = fs::File::create(mnt.join("data/a.json")).unwrap();
    std::io::Write::write_all(&mut file, broken.as_bytes()).unwrap();
    assert_eq!(file.sync_all().unwrap_err().raw_os_error(), Some(5));
    drop(file);
    // The same bytes refused again (a shell's redirection, whose close nobody checks).
    sh(mnt, &format!("printf '%s' '{broken}' > data/a.json"));
    let kept = pair.rejected();
    assert_eq!(kept.len(), 1, "kept once: {kept:?}");
    assert_eq!(kept[0].1, broken);
    // The refusal is listed where an agent or a person looks.
    let mut agent = util::mcp::Mcp::open(&pair.store, &[], "e2e-agent");
    let status = agent.ok("status", json!({}));
    let refused = status["decisions"].as_array().unwrap().iter().any(|d| {
        d["kind"] == "save" && d["allowed"] == false && d["subject"] == "mount: data/a.json"
    });
    assert!(refused, "{status}");
}

/// `rm -rf .` and `find . -delete` from the mount's root never reach `.stardust/` (it is not
/// in the root's listing), and exit as they do in the folder.
#[test]
fn recursive_deletes_never_reach_the_private_folder() {
    let pair = Pair::new();
    pair.same("rm -rf .");
    pair.same("find . -delete");
    assert!(pair.dir.join(".stardust/store.json").is_file());
    assert!(pair.store.join(".stardust/log/transactions.log").is_file());
}

/// The paths of every document the log of the store at `store` names.
fn logged_paths(store: &Path) -> Vec<String> {
    let txns = stardust_core::store::read_log(store, 0, usize::MAX).unwrap();
    txns.into_iter().flat_map(|t| t.documents.into_iter().map(|d| d.path)).collect()
}

/// Files the project's ignore rules leave out (SPEC §23, §24) pass through the mount as they
/// do in the folder, without a transaction: no commit, no record in the log.
#[test]
fn ignored_files_pass_through_without_a_transaction() {
    let pair = Pair::new();
    pair.same(
        "mkdir -p build/out && cp data/a.json build/a.json && echo '{\"x\": 1}' > build/out/p.json \
         && mv build/a.json build/out/b.json && rsync -a data/ build/copy/ && rm build/out/p.json \
         && echo '{\"x\": 1}' > plain.json",
    );
    let logged = logged_paths(&pair.store);
    assert!(logged.iter().any(|p| p == "plain.json"), "a file not ignored is logged: {logged:?}");
    let ignored: Vec<&String> = logged.iter().filter(|p| p.starts_with("build/")).collect();
    assert!(ignored.is_empty(), "ignored files were committed: {ignored:?}");
}

#[test]
fn npm_install_leaves_the_same_tree() {
    // The packages come from npm's cache, which `scripts/test` fills: nothing is fetched.
    let pair = Pair::new();
    let manifest = r#"{"name": "t", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}}"#;
    pair.same(&format!("echo '{manifest}' > package.json"));
    pair.same("npm install --offline --no-audit --no-fund --loglevel=error");
    pair.same("test -f node_modules/is-number/index.js");
}

/// Links that loop (to themselves, to each other, to a parent folder) and links out of the
/// store (to a file, to a folder) made in the mount are links there as in the folder: tools
/// walking the tree end, and the core never reads through them (SPEC §24).
#[test]
fn links_that_loop_or_leave_the_store_stay_links() {
    let pair = Pair::new();
    let outside = pair.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret.json"), "{\"id\": \"thing/secret\", \"type\": \"thing\"}")
        .unwrap();
    let links = format!(
        "ln -s self.json self.json; ln -s b.json a.json; ln -s a.json b.json; ln -s .. data/up; \
         ln -s {0}/secret.json out.json; ln -s {0} outdir",
        outside.display()
    );
    pair.same(&links);
    for step in [
        "ls -laR . > /dev/null",
        "find . -name '*.json' -not -path './.git/*' | sort",
        "find -L . -name '*.json' > /dev/null",
        "cat self.json",
        "cat a.json",
        "readlink out.json outdir data/up",
        "tar -cf - --exclude=.git . | tar -tf - | sort",
    ] {
        pair.same(step);
    }
    // The core read none of them: no document behind a link, no diagnostic of one.
    let mut agent = util::mcp::Mcp::open(&pair.store, &[], "e2e-agent");
    let missing = agent.fail("entity_get", json!({"id": "thing/secret"}));
    assert_eq!(missing["code"], "not-found", "a link out of the store was followed: {missing}");
    let diagnostics = agent.ok("diagnostics", json!({}));
    for link in ["self.json", "a.json", "b.json", "out.json", "outdir", "data/up"] {
        assert!(
            !diagnostics.to_string().contains(&format!("\"{link}")),
            "{link} was read: {diagnostics}"
        );
    }
}

/// A tool writing 100,000 small files through the mount: every one arrives whole in the
/// store's folder, and the core still answers at once afterwards.
#[test]
fn a_tool_writing_100000_small_files() {
    let pair = Pair::new();
    let script = "import os\nfor i in range(100000):\n    d = f'many/{i // 1000}'\n    \
                  os.makedirs(d, exist_ok=True)\n    \
                  open(f'{d}/f{i}.txt', 'w').write(f'file {i}\\n')\n";
    must(&pair.dir, &format!("python3 -c \"{script}\""));
    let (mut files, mut wrong) = (0, Vec::new());
    for entry in walkdir::WalkDir::new(pair.store.join("many")) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            files += 1;
            let name = entry.file_name().to_str().unwrap();
            let i = &name[1..name.len() - 4];
            if fs::read_to_string(entry.path()).unwrap() != format!("file {i}\n") {
                wrong.push(name.to_owned());
            }
        }
    }
    assert_eq!((files, wrong), (100_000, Vec::<String>::new()));
    let mut agent = util::mcp::Mcp::open(&pair.store, &[], "e2e-agent");
    agent.ok("status", json!({}));
}

/// `kill -9` of the core in the middle of a `git checkout` run in the mount: after a restart
/// every file holds what git wrote or what it held before (or is absent, where git had
/// removed it to write it again), never a part; the log verifies; the checkout finishes and
/// leaves the tree a plain clone has.
#[test]
fn a_core_killed_during_git_checkout_leaves_no_half_file() {
    let mut pair = Pair::new();
    // Two versions of 1,500 files of 2 to 40 KiB: data, plain JSON and text.
    let version = |v: usize, i: usize| -> String {
        let body = format!("{v}-{i}-").repeat(300 + (i * 37 + v * 11) % 6000);
        match i % 3 {
            0 => format!("{{\"id\": \"thing/m{i}\", \"type\": \"thing\", \"name\": \"{body}\"}}"),
            1 => format!("{{\"v\": \"{body}\"}}"),
            _ => body,
        }
    };
    let path = |i: usize| match i % 3 {
        0 | 1 => format!("many/m{i}.json"),
        _ => format!("many/m{i}.txt"),
    };
    for v in [1, 2] {
        for i in 0..1500 {
            let file = pair.plain.join(path(i));
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, version(v, i)).unwrap();
        }
        must(&pair.plain, &format!("git add -A && git commit -qm v{v} && git tag m{v}"));
    }
    must(&pair.plain, "git checkout -q m1");
    must(&pair.dir, &format!("git fetch -q {} --tags && git checkout -q m1", pair.plain.display()));

    let mut git = Command::new("git")
        .args(["checkout", "-q", "m2"])
        .current_dir(&pair.dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = (0..1500).step_by(3).map(|i| pair.store.join(path(i)));
    let started: Vec<PathBuf> = started.collect();
    wait_until("git has written some files", || {
        started.iter().filter(|f| fs::read_to_string(f).is_ok_and(|t| t.contains("\"2-"))).count()
            > 20
    });
    pair.crash_and_restart();
    let _ = git.wait();

    let mut absent = 0;
    for i in 0..1500 {
        match fs::read_to_string(pair.store.join(path(i))) {
            // Documents are committed whole; plain files (the `.txt`) are written into a spare
            // and put in place at their close (SPEC §24: never a half file, whatever the file).
            Ok(text) => assert!(
                text == version(1, i) || text == version(2, i),
                "{} is neither version ({} bytes)",
                path(i),
                text.len()
            ),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => absent += 1,
            Err(err) => panic!("{}: {err}", path(i)),
        }
    }
    eprintln!("{absent} files absent after the kill");
    // What the killed core was writing into spares was removed at the restart.
    let replaced = fs::read_dir(pair.store.join(".stardust/replaced")).unwrap().flatten();
    let left: Vec<String> = replaced
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("written-"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    let log = util::stardust(&["log", pair.store.to_str().unwrap(), "--verify"]);
    assert_eq!(log.status.code(), Some(0), "{}{}", text(&log.stdout), text(&log.stderr));

    // git finishes the job in the mount, as in the folder.
    let _ = fs::remove_file(pair.dir.join(".git/index.lock"));
    must(&pair.dir, "git checkout -q -f m2");
    must(&pair.plain, "git checkout -q m2");
    pair.same_trees("the checkout after the crash");
}

//! Saves of code files through the mount (SPEC §14, §18), end to end: `stardust mount` on a
//! store whose `.py` files the user's `[servers.pyright]` covers. Each save (write and close,
//! a new file, a temporary file renamed over the file) is one `mount` transaction that
//! `stardust log` shows; with `[save] refuse = ["code-error"]`, a save that adds an error from
//! pyright fails with `EIO`, the file keeps its committed content, and the refused bytes are
//! kept under `.stardust/rejected/` with a `.why` naming the error.
//!
//! HOME and XDG_CONFIG_HOME point into the test's temporary folder, so the user's own
//! `servers.toml` is never read.

mod util;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use util::text;

const EIO: i32 = 5;
const APP: &str = "def double(x: int) -> int:\n    return x * 2\n";

/// A mounted store that unmounts when dropped, even when the test fails.
struct Mounted {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    dir: PathBuf,
    child: Option<Child>,
    stderr: PathBuf,
}

impl Mounted {
    /// `stardust mount` of a store holding `app.py`, with `config` as its `stardust.toml` and
    /// pyright covering `.py` files in the user's `servers.toml`.
    fn new(config: &str) -> Mounted {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let dir = tmp.path().join("mnt");
        fs::create_dir_all(&store).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(store.join("stardust.toml"), config).unwrap();
        fs::write(store.join("app.py"), APP).unwrap();
        let xdg = tmp.path().join("xdg");
        fs::create_dir_all(xdg.join("stardust")).unwrap();
        fs::create_dir_all(tmp.path().join("home")).unwrap();
        fs::write(
            xdg.join("stardust/servers.toml"),
            "[servers.pyright]\ncommand = \"pyright-langserver\"\nargs = [\"--stdio\"]\n\
             languages = { py = \"python\" }\n",
        )
        .unwrap();
        let stderr = tmp.path().join("mount.log");
        let child = Command::new(env!("CARGO_BIN_EXE_stardust"))
            .arg("mount")
            .arg(&store)
            .arg(&dir)
            .env("XDG_CONFIG_HOME", &xdg)
            .env("HOME", tmp.path().join("home"))
            .env("RUST_LOG", "stardust=info,stardust_fuse=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("the stardust binary runs");
        let mut mounted = Mounted { _tmp: tmp, store, dir, child: Some(child), stderr };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_mounted(&mounted.dir) {
            if let Some(status) = mounted.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("the mount exited ({status}): {}", mounted.log());
            }
            assert!(Instant::now() < deadline, "not mounted after 20s: {}", mounted.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        mounted
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn on_disk(&self, rel: &str) -> String {
        fs::read_to_string(self.store.join(rel)).unwrap()
    }

    /// The transactions but the store's first record, from `stardust log --format json`: origin and
    /// `path change` of each file.
    fn saves(&self) -> Vec<(String, Vec<String>)> {
        let out = util::stardust(&["log", self.store.to_str().unwrap(), "--format", "json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|txn| txn["origin"] != "external")
            .map(|txn| {
                let docs = txn["documents"].as_array().unwrap().iter();
                let docs = docs.map(|d| format!("{} {}", d["path"], d["change"])).collect();
                (txn["origin"].as_str().unwrap().to_owned(), docs)
            })
            .collect()
    }

    /// The refused saves kept: (content, why).
    fn rejected(&self) -> Vec<(String, String)> {
        let dir = self.store.join(".stardust/rejected");
        let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
        let mut names: Vec<String> = entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.ends_with(".why"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let why = fs::read_to_string(dir.join(format!("{n}.why"))).unwrap();
                (fs::read_to_string(dir.join(&n)).unwrap(), why)
            })
            .collect()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if is_mounted(&self.dir) {
            let _ = Command::new("fusermount3").arg("-u").arg("-z").arg(&self.dir).status();
        }
    }
}

fn is_mounted(dir: &Path) -> bool {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = dir.to_str().unwrap();
    mounts.lines().any(|line| line.split(' ').nth(1) == Some(dir))
}

fn python(code: &str, cwd: &Path) -> String {
    let out = Command::new("python3").arg("-c").arg(code).current_dir(cwd).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn mount(files: &[&str]) -> (String, Vec<String>) {
    ("mount".to_owned(), files.iter().map(|f| f.to_string()).collect())
}

#[test]
fn code_file_saves_through_the_mount_are_transactions() {
    let m = Mounted::new("[store]\n");
    let edited = "def double(x: int) -> int:\n    return x + x\n";
    fs::write(m.path("app.py"), edited).unwrap();
    assert_eq!(m.on_disk("app.py"), edited);
    // A new file, and an editor's temporary file renamed over the file (`app.py.tmp` is a
    // scratch name: it never reaches the store).
    fs::write(m.path("tools/new.py"), "print(1)\n").unwrap_err();
    fs::create_dir(m.path("tools")).unwrap();
    fs::write(m.path("tools/new.py"), "print(1)\n").unwrap();
    let renamed = "def double(x: int) -> int:\n    return 2 * x\n";
    python(
        &format!(
            "import os\nwith open('app.py.tmp', 'w') as f:\n    f.write({renamed:?})\nos.replace('app.py.tmp', 'app.py')\n"
        ),
        &m.dir,
    );
    assert_eq!(m.on_disk("app.py"), renamed);
    let mut names: Vec<String> = fs::read_dir(&m.store)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".stardust", "app.py", "stardust.toml", "tools"]);
    // A plain file a server does not cover is not history.
    fs::write(m.path("notes.txt"), "hello\n").unwrap();
    fs::remove_file(m.path("tools/new.py")).unwrap();
    assert_eq!(
        m.saves(),
        [
            mount(&["\"app.py\" \"changed\""]),
            mount(&["\"tools/new.py\" \"created\""]),
            mount(&["\"app.py\" \"changed\""]),
            mount(&["\"tools/new.py\" \"deleted\""]),
        ],
        "{}",
        m.log()
    );
}

#[test]
fn with_code_error_a_mount_save_adding_an_error_is_refused_and_kept() {
    let m = Mounted::new("[store]\n[save]\nrefuse = [\"code-error\"]\n");
    let clean = "def double(x: int) -> int:\n    return x * 2\n\n\nprint(double(2))\n";
    fs::write(m.path("app.py"), clean).unwrap();
    assert_eq!(m.on_disk("app.py"), clean, "{}", m.log());
    let broken = "def double(x: int) -> int:\n    return x * 2\n\n\nprint(double(\"two\"))\n";
    // `close` answers the refusal (Rust's `fs::write` drops the error of its close).
    let code = format!(
        "f = open('app.py', 'w')\nf.write({broken:?})\ntry:\n    f.close()\nexcept OSError as e:\n    print('errno', e.errno)\n"
    );
    assert_eq!(python(&code, &m.dir), format!("errno {EIO}\n"), "{}", m.log());
    assert_eq!(m.on_disk("app.py"), clean, "the file keeps its committed content");
    let rejected = m.rejected();
    assert_eq!(rejected.len(), 1, "{}", m.log());
    assert_eq!(rejected[0].0, broken);
    let why = &rejected[0].1;
    assert!(why.contains("app.py:5:14: error[code-error] Argument of type"), "{why}");
    assert!(why.contains("(pyright)"), "{why}");
    assert_eq!(m.saves(), [mount(&["\"app.py\" \"changed\""])], "{}", m.log());
}

/// `stardust serve --mount` installs the same rule: a code file saved through its mount is a
/// `mount` transaction of the core, which `stardust log` (through that core) shows.
#[test]
fn a_cores_mount_saves_code_files_as_transactions_too() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, dir, xdg) =
        (tmp.path().join("store"), tmp.path().join("mnt"), tmp.path().join("xdg"));
    for folder in [&store, &dir, &xdg.join("stardust")] {
        fs::create_dir_all(folder).unwrap();
    }
    fs::write(store.join("stardust.toml"), "[store]\n").unwrap();
    fs::write(store.join("app.py"), APP).unwrap();
    fs::write(
        xdg.join("stardust/servers.toml"),
        "[servers.pyright]\ncommand = \"pyright-langserver\"\nargs = [\"--stdio\"]\n\
         languages = { py = \"python\" }\n",
    )
    .unwrap();
    let serve = util::Serve::mounted_with_config(&store, &dir, &xdg);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !is_mounted(&dir) {
        assert!(Instant::now() < deadline, "not mounted after 20s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let edited = "def double(x: int) -> int:\n    return x << 1\n";
    fs::write(dir.join("app.py"), edited).unwrap();
    assert_eq!(fs::read_to_string(store.join("app.py")).unwrap(), edited);
    let out = util::stardust(&["log", store.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let saves: Vec<(String, String)> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|txn| txn["origin"] == "mount")
        .map(|txn| {
            (txn["documents"][0]["path"].to_string(), txn["documents"][0]["change"].to_string())
        })
        .collect();
    assert_eq!(saves, [("\"app.py\"".to_owned(), "\"changed\"".to_owned())]);
    assert!(serve.stop().success());
}

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
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use util::mount::{Mounted, is_mounted};
use util::text;

const EIO: i32 = 5;
const APP: &str = "def double(x: int) -> int:\n    return x * 2\n";

/// The user's `servers.toml` of these tests: pyright covers `.py` files.
const SERVERS: &str = "[servers.pyright]\ncommand = \"pyright-langserver\"\nargs = [\"--stdio\"]\n\
                       languages = { py = \"python\" }\n";

impl Mounted {
    /// `stardust mount` of a store holding `app.py`, with `config` as its `stardust.toml` and
    /// pyright covering `.py` files in the user's `servers.toml`.
    fn new(config: &str) -> Mounted {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let dir = tmp.path().join("mnt");
        fs::create_dir_all(&store).unwrap();
        fs::write(store.join("stardust.toml"), config).unwrap();
        fs::write(store.join("app.py"), APP).unwrap();
        let xdg = tmp.path().join("xdg");
        let home = tmp.path().join("home");
        fs::create_dir_all(xdg.join("stardust")).unwrap();
        fs::create_dir_all(&home).unwrap();
        fs::write(xdg.join("stardust/servers.toml"), SERVERS).unwrap();
        Mounted::start(tmp, store, dir, &[], &[("XDG_CONFIG_HOME", &xdg), ("HOME", &home)])
    }

    /// The transactions but the store's first record, from `stardust log --format json`: origin and
    /// `path change` of each file.
    fn saves(&self) -> Vec<(String, Vec<String>)> {
        self.transactions()
            .iter()
            .filter(|txn| txn["origin"] != "external")
            .map(|txn| {
                let docs = txn["documents"].as_array().unwrap().iter();
                let docs = docs.map(|d| format!("{} {}", d["path"], d["change"])).collect();
                (txn["origin"].as_str().unwrap().to_owned(), docs)
            })
            .collect()
    }
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
    assert_eq!(rejected[0].1, broken);
    let why = &rejected[0].2;
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
    fs::write(xdg.join("stardust/servers.toml"), SERVERS).unwrap();
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

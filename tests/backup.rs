//! End-to-end tests of `stardust backup run|verify|restore`, driving the real binary.

mod util;

use std::path::{Path, PathBuf};

use util::{stardust, text};

/// A store with a backup definition whose target is a sibling folder.
fn store(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("library");
    let backups = dir.join("backups");
    std::fs::create_dir_all(root.join("books")).unwrap();
    std::fs::write(root.join("books/dune.dust"), "id book/dune\ntype book\ntitle 'Dune'\n")
        .unwrap();
    std::fs::write(root.join("README.md"), "# Library\n").unwrap();
    std::fs::write(
        root.join("backup.dust"),
        format!("id backup/nightly\ntype backup\ntarget '{}'\nkeep 2\n", backups.display()),
    )
    .unwrap();
    (root, backups)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn run_verify_restore_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (root, backups) = store(dir.path());

    let out = stardust(&["backup", "run", s(&root), "backup/nightly", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(written["seq"], 1);
    assert_eq!(written["entries"], 4, "README.md, backup.dust, books, books/dune.dust");
    assert_eq!(written["removed"], serde_json::json!([]));
    let archive = PathBuf::from(written["archive"].as_str().unwrap());
    assert!(archive.starts_with(&backups), "{archive:?}");
    // Not a terminal: no progress bar, nothing but the log on stderr.
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("archiving"), "{stderr}");

    let out = stardust(&["backup", "verify", s(&archive)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!("ok: {} holds 4 entries of ", archive.display())),
        "{stdout}"
    );
    assert!(stdout.contains(" as of seq 1 (backup/nightly, made "), "{stdout}");
    assert_eq!(text(&out.stderr), "");

    let restored = dir.path().join("restored");
    let out = stardust(&["backup", "restore", s(&archive), s(&restored)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("restored 4 entries of backup/nightly as of seq 1 into {}\n", restored.display())
    );
    for file in ["books/dune.dust", "README.md", "backup.dust"] {
        assert_eq!(
            std::fs::read(restored.join(file)).unwrap(),
            std::fs::read(root.join(file)).unwrap(),
            "{file}"
        );
    }

    // A second restore into the now non-empty folder is refused unless forced.
    let out = stardust(&["backup", "restore", s(&archive), s(&restored)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error[refused]: {} is not empty; restore into an empty or new folder, or force the \
             restore to write over what is there (`--force`)\n",
            restored.display()
        )
    );
    let out = stardust(&["backup", "restore", s(&archive), s(&restored), "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_damaged_archive_fails_verify_with_the_damage_named() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _) = store(dir.path());
    let out = stardust(&["backup", "run", s(&root), "backup/nightly", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let archive = PathBuf::from(written["archive"].as_str().unwrap());
    let mut bytes = std::fs::read(&archive).unwrap();
    let at = bytes.windows(4).position(|w| w == b"Dune").unwrap();
    bytes[at] = b'd';
    std::fs::write(&archive, bytes).unwrap();

    let out = stardust(&["backup", "verify", s(&archive)]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        format!(
            "error[invalid-arguments]: {} is not a sound backup: the content of 'books/dune.dust' \
             does not match its SHA-256 in the manifest; the member is damaged\n",
            archive.display()
        )
    );
    let restored = dir.path().join("restored");
    let out = stardust(&["backup", "restore", s(&archive), s(&restored)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!restored.join("books").exists());
}

#[test]
fn rotation_and_refusals_reach_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let (root, backups) = store(dir.path());
    let mut archives = Vec::new();
    for _ in 0..3 {
        let out = stardust(&["backup", "run", s(&root), "backup/nightly"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let first = stdout.lines().next().unwrap();
        let path = first.strip_prefix("wrote ").unwrap().split(" (").next().unwrap();
        archives.push(path.to_owned());
        if archives.len() == 3 {
            assert_eq!(stdout.lines().nth(1), Some(format!("removed {}", archives[0]).as_str()));
        }
    }
    assert_eq!(std::fs::read_dir(&backups).unwrap().count(), 2);

    let out = stardust(&["backup", "run", s(&root), "backup/weekly"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error[not-found]: no entity has the id 'backup/weekly'; define it as an entity of type 'backup'\n"
    );

    std::fs::write(root.join("backup.dust"), "id backup/nightly\ntype backup\ntarget 'archives'\n")
        .unwrap();
    let out = stardust(&["backup", "run", s(&root), "backup/nightly"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error[refused]: the backup target "), "{stderr}");
    assert!(stderr.contains("is inside the store"), "{stderr}");

    let out = stardust(&["backup", "verify", s(&dir.path().join("nothing.tar"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error[not-found]: there is no archive "));
}

#[test]
fn a_run_goes_through_the_running_core() {
    let dir = tempfile::tempdir().unwrap();
    let (root, backups) = store(dir.path());
    let root = root.canonicalize().unwrap();
    let serve = util::Serve::start(&root);
    // A commit through the core, then the backup: it is the core's store, as of that commit
    // (opening the store from this process would be refused as busy).
    let patch = dir.path().join("change.patch.dust");
    std::fs::write(&patch, "ops [{create {id book/emma type book title 'Emma'}}]\n").unwrap();
    let out = stardust(&["apply", s(&root), s(&patch), "--yes", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let committed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let out = stardust(&["backup", "run", s(&root), "backup/nightly", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(written["seq"], committed["seq"], "{written}");
    let archive = PathBuf::from(written["archive"].as_str().unwrap());
    assert!(archive.starts_with(&backups), "{archive:?}");
    let out = stardust(&["backup", "verify", s(&archive), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let verified: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verified["seq"], committed["seq"]);
    assert_eq!(verified["entries"], written["entries"]);
    let restored = dir.path().join("restored");
    let out = stardust(&["backup", "restore", s(&archive), s(&restored)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let emma = std::fs::read_to_string(restored.join("book/emma.dust")).unwrap();
    assert!(emma.contains("Emma"), "{emma}");

    // The core's refusals keep their codes.
    let out = stardust(&["backup", "run", s(&root), "backup/weekly"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error[not-found]"), "{}", text(&out.stderr));
    drop(serve);
}

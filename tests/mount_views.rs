//! Views (SPEC §19) end to end: `stardust serve --mount` over a copy of the library with
//! views defined; real programs (`jq`, `cat`, Python's `os.getxattr`, shell redirections) read them, a
//! commit through `stardust apply` changes a result, and writes answer `EROFS`.

mod util;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use util::{mounted_library, stardust, text, wait_until};

const VIEWS: &str = "\
[{id view/dune-years type view format json path views/dune-years.json
  query {find [?t ?y] where [[?b type book] [?b series @series/dune-chronicles] [?b title ?t] [?b year ?y]] order [[?y asc]]}}
 {id view/by-year type view format csv path views/by-year.csv
  query {find [?y count(?b)] where [[?b type book] [?b year ?y]] filter ['?y < 1970']}}
 {id view/broken type view path views/broken.json
  query {find [?t ?nope] where [[?b type book] [?b title ?t]]}}]
";

fn sh(script: &str) -> Output {
    Command::new("bash").arg("-c").arg(script).output().unwrap()
}

fn xattr_seq(path: &Path) -> u64 {
    let out = Command::new("python3")
        .args([
            "-c",
            "import os, sys; print(os.getxattr(sys.argv[1], 'user.stardust.seq').decode())",
        ])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().parse().unwrap()
}

#[test]
fn views_are_read_only_files_that_follow_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mnt, serve) = mounted_library(tmp.path());
    // The views are defined through the mount: a commit like any other.
    fs::write(mnt.join("views.dust"), VIEWS).unwrap();
    let view = mnt.join("views/dune-years.json");
    wait_until("the view shows", || view.is_file());

    // jq reads it: rows are objects keyed by the columns.
    let out = sh(&format!("jq -c '[.[] | .t]' {}", view.display()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let titles: Vec<String> = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(titles.first().map(String::as_str), Some("Dune"), "{titles:?}");
    let seq = xattr_seq(&view);
    let meta = fs::metadata(&view).unwrap();
    assert_eq!(meta.len() as usize, fs::read(&view).unwrap().len(), "size is the content's");
    assert_eq!(meta.mode_bits() & 0o777, 0o444);

    // The index lists it with its seq.
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(mnt.join(".stardust/views.json")).unwrap()).unwrap();
    let entry = index["views"].as_array().unwrap().iter().find(|v| v["id"] == "view/dune-years");
    assert_eq!(entry.unwrap()["_seq"], seq);

    // A commit that changes what the view reads: a later cat shows the new seq's result.
    let patch = tmp.path().join("retitle.patch.dust");
    fs::write(&patch, "ops [{set {id book/dune title 'Dune (1965)'}}]\n").unwrap();
    let out = stardust(&[
        "apply",
        store.to_str().unwrap(),
        patch.to_str().unwrap(),
        "--yes",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let committed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let new_seq = committed["seq"].as_u64().unwrap();
    wait_until("the view is recomputed", || xattr_seq(&view) == new_seq);
    let out = sh(&format!("cat {}", view.display()));
    assert!(text(&out.stdout).contains("\"Dune (1965)\""), "{}", text(&out.stdout));
    // What the view does not read leaves it alone: a person's name.
    fs::write(&patch, "ops [{set {id person/isaac-asimov name 'Isaac Asimov Jr'}}]\n").unwrap();
    let out = stardust(&["apply", store.to_str().unwrap(), patch.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(xattr_seq(&view), new_seq);

    // CSV: a header and RFC 4180 lines.
    let csv = fs::read_to_string(mnt.join("views/by-year.csv")).unwrap();
    assert!(csv.starts_with("y,count(?b)\r\n"), "{csv}");

    // A bad query: the file holds the error object.
    let broken: serde_json::Value =
        serde_json::from_slice(&fs::read(mnt.join("views/broken.json")).unwrap()).unwrap();
    assert_eq!(broken["error"]["code"], "invalid-arguments", "{broken}");
    assert!(broken["error"]["message"].as_str().unwrap().contains("?nope"));
    assert!(broken["_seq"].is_u64());

    // Writes, truncation, deletion and renames answer EROFS; the result stays.
    for script in [
        format!("echo x > {}", view.display()),
        format!("echo x >> {}", view.display()),
        format!("truncate -s 0 {}", view.display()),
        format!("rm {}", view.display()),
        format!("mv {} {}/elsewhere.json", view.display(), mnt.display()),
        format!("touch {}/views/new.json", mnt.display()),
    ] {
        let out = sh(&script);
        assert!(!out.status.success(), "{script} succeeded");
        assert!(
            text(&out.stderr).contains("Read-only file system"),
            "{script}: {}",
            text(&out.stderr)
        );
    }
    assert!(fs::read_to_string(&view).unwrap().contains("Dune (1965)"));

    // `stardust view` prints the same bytes without a mount.
    let out = stardust(&["view", store.to_str().unwrap(), "view/dune-years"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(out.stdout, fs::read(&view).unwrap());
    let out = stardust(&["view", store.to_str().unwrap(), "view/broken"]);
    assert_eq!(out.status.code(), Some(1));
    let out = stardust(&["view", store.to_str().unwrap(), "view/none"]);
    assert!(text(&out.stderr).contains("error[not-found]"), "{}", text(&out.stderr));

    // A view path onto a stored document is refused at validation (tee sees close's EIO).
    let refused = sh(&format!(
        "printf 'id view/clash\\ntype view\\nquery {{find [?b] where [[?b type book]]}}\\npath books/dune.dust\\n' | tee {}/clash.dust",
        mnt.display()
    ));
    assert!(!refused.status.success(), "the clashing view was committed");
    assert!(!store.join("clash.dust").exists());
    let why = fs::read_dir(store.join(".stardust/rejected"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "why"))
        .map(|p| fs::read_to_string(p).unwrap())
        .collect::<String>();
    assert!(why.contains("view-path"), "{why}");
    assert!(serve.stop().success(), "serve stops on SIGTERM with the views running");
}

trait Mode {
    fn mode_bits(&self) -> u32;
}

impl Mode for fs::Metadata {
    fn mode_bits(&self) -> u32 {
        std::os::unix::fs::MetadataExt::mode(self)
    }
}

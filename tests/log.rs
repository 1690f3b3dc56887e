//! End-to-end tests of `stardust log`, driving the real binary.

mod util;

use std::path::Path;
use std::process::Output;

use stardust_core::store::{OpenOptions, Store};
use util::{stardust, text};

fn log(store: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["log", store.to_str().unwrap()];
    args.extend_from_slice(extra);
    stardust(&args)
}

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("people")).unwrap();
    std::fs::write(dir.path().join("people/ann.json"), r#"{"id": "person/ann", "type": "person"}"#)
        .unwrap();
    std::fs::write(dir.path().join("b.dust"), "id x/b\ntype x\n").unwrap();
    std::fs::write(dir.path().join("notes.md"), "not a document").unwrap();
    dir
}

#[test]
fn history_starts_at_the_first_look_and_records_outside_edits() {
    let dir = store();
    let out = log(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].trim_start().starts_with("1  "), "{stdout}");
    assert!(lines[0].contains("  external  created b.dust, created people/ann.json"), "{stdout}");

    std::fs::write(dir.path().join("people/ann.json"), r#"{"id": "person/ann", "type": "p"}"#)
        .unwrap();
    std::fs::remove_file(dir.path().join("b.dust")).unwrap();
    let out = log(dir.path(), &["--since", "1", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let txns: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(txns.len(), 1, "{stdout}");
    let txn = &txns[0];
    assert_eq!((txn["seq"].as_u64(), txn["origin"].as_str()), (Some(2), Some("external")));
    assert!(txn["time"].as_str().unwrap().ends_with('Z'));
    let docs = txn["documents"].as_array().unwrap();
    assert_eq!(docs[0]["path"], "b.dust");
    assert_eq!(docs[0]["change"], "deleted");
    assert_eq!(docs[0]["after"], serde_json::Value::Null);
    assert_eq!(docs[0]["entities"]["deleted"], serde_json::json!(["x/b"]));
    assert_eq!(docs[1]["path"], "people/ann.json");
    assert_eq!(docs[1]["change"], "changed");
    assert_eq!(docs[1]["before"].as_str().unwrap().len(), 64);
    assert_eq!(docs[1]["entities"]["changed"], serde_json::json!(["person/ann"]));

    let out = log(dir.path(), &["--since", "2"]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), String::new()));
}

#[test]
fn verify_reports_a_sound_log_and_a_torn_tail() {
    let dir = store();
    assert_eq!(log(dir.path(), &[]).status.code(), Some(0));
    let out = log(dir.path(), &["--verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("1 transaction (seq 1 to 1) verified"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stdout).contains("checkpoint: through seq 1; nothing to redo"));
    let out = log(dir.path(), &["--verify", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["last_seq"].as_u64(), report["applied_through"].as_u64()),
        (Some(1), Some(1))
    );

    let log_file = dir.path().join(".stardust/log/transactions.log");
    let mut bytes = std::fs::read(&log_file).unwrap();
    bytes.extend_from_slice(b"SDT1\x40\x00");
    std::fs::write(&log_file, &bytes).unwrap();
    let out = log(dir.path(), &["--verify"]);
    assert_eq!(out.status.code(), Some(0), "a torn tail is not damage");
    assert!(text(&out.stdout).contains("unfinished record"), "{}", text(&out.stdout));
    assert_eq!(std::fs::read(&log_file).unwrap(), bytes, "--verify changes nothing");
}

#[test]
fn damage_in_the_middle_is_refused_and_explained() {
    let dir = store();
    assert_eq!(log(dir.path(), &[]).status.code(), Some(0));
    std::fs::write(dir.path().join("c.json"), "{}").unwrap();
    assert_eq!(log(dir.path(), &[]).status.code(), Some(0));
    let log_file = dir.path().join(".stardust/log/transactions.log");
    let mut bytes = std::fs::read(&log_file).unwrap();
    bytes[60] ^= 0x20;
    std::fs::write(&log_file, &bytes).unwrap();

    let out = log(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error[internal]: "), "{stderr}");
    assert!(stderr.contains("seq 1") && stderr.contains("stardust log --verify"), "{stderr}");

    let out = log(dir.path(), &["--verify"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("damaged: the record of seq 1 at byte 0"), "{stdout}");
    let out = log(dir.path(), &["--verify", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["damage"]["seq"], 1);
    assert_eq!(report["damage"]["torn_tail"], false);
    assert_eq!(std::fs::read(&log_file).unwrap(), bytes, "nothing was dropped");
}

#[test]
fn the_log_is_listed_while_another_process_owns_the_store() {
    let dir = store();
    let owner =
        Store::open(dir.path(), OpenOptions { watch: false, ..OpenOptions::default() }).unwrap();
    let out = log(dir.path(), &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 1);
    drop(owner);
}

#[test]
fn a_missing_store_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    for extra in [&[][..], &["--verify"][..]] {
        let out = log(&missing, extra);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).starts_with("error[invalid-arguments]: "),
            "{}",
            text(&out.stderr)
        );
    }
    assert!(!missing.exists());
}

#[test]
fn logs_written_to_a_file_or_pipe_have_no_colour_codes() {
    // The first look at a store logs "history starts" at info on stderr, here a pipe: an
    // editor's or a service's log file must not fill with terminal escape codes.
    let dir = store();
    let out = log(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("history starts"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "escape codes in a piped log: {stderr:?}");
}

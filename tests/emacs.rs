//! Emacs with eglot on a store (examples/editors/emacs/): `stardust.el` loaded into a real
//! Emacs in batch mode (Debian's emacs-nox and elpa-eglot, which scripts/test installs) runs
//! `check.el` on a copy of the sample library outside any version control: it opens a book
//! in `dust-mode`, breaks a reference without saving and reads the diagnostic, asks hover and
//! definition, and checks that one `stardust lsp` process serves DUST and JSON documents of
//! every folder of the store.

mod util;

use std::process::Command;

#[test]
fn emacs_eglot_serves_the_whole_store_with_one_server() {
    let tmp = util::library();
    let dir = util::repo().join("examples/editors/emacs");
    let out = Command::new("emacs")
        .arg("--batch")
        .arg("-l")
        .arg(dir.join("stardust.el"))
        .arg("-l")
        .arg(dir.join("check.el"))
        .env("STARDUST", env!("CARGO_BIN_EXE_stardust"))
        .env("STORE", tmp.path())
        .env("STARDUST_IDLE_EXIT", "2")
        .env_remove("RUST_LOG")
        .current_dir(tmp.path())
        .output()
        .expect("emacs runs: install emacs-nox and elpa-eglot (scripts/test does), then run again");
    let stdout = util::text(&out.stdout);
    let report = format!("{stdout}\n--- stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{report}");
    for check in [
        "ok   the server starts for the store, rooted at it",
        "ok   a dangling reference is diagnosed while typing, unsaved",
        "ok   hover",
        "ok   definition",
        "ok   one server process serves the whole store",
        "ok   commands run",
    ] {
        assert!(stdout.contains(check), "missing `{check}`:\n{report}");
    }
    // The one server process the check saw (`stardust lsp --store STORE`).
    let pid = stdout.lines().find_map(|l| l.strip_prefix("pid  ")).expect("the server's pid");
    assert!(pid.trim().parse::<u32>().is_ok(), "{report}");
    // Nothing was saved: the broken reference stayed in the buffer.
    let book = std::fs::read_to_string(tmp.path().join("books/dune.dust")).unwrap();
    assert!(book.contains("@person/frank-herbert\n"), "{book}");
}

//! The Python SDK (sdk-py/) against a real core: `sdk-py/tests/run.py` generates typed code
//! for examples/library with this build's `stardust`, checks it, the runtime and the tests
//! with `mypy --strict`, and runs pytest on a copy of the library. Python 3.11+, mypy and
//! pytest are required (scripts/test installs them): a missing one fails this test rather
//! than skipping it.

mod util;

use std::process::Command;

#[test]
fn the_python_sdk_against_a_real_core() {
    let out = Command::new("python3")
        .arg(util::repo().join("sdk-py/tests/run.py"))
        .env("STARDUST_BIN", env!("CARGO_BIN_EXE_stardust"))
        .env("STARDUST_LIBRARY", util::repo().join("examples/library"))
        // A core the SDK started (on reconnect) leaves soon after the tests end.
        .env("STARDUST_IDLE_EXIT", "5")
        .env_remove("RUST_LOG")
        .output()
        .expect("python3 runs (install Python 3.11 or newer; scripts/test does)");
    let stdout = util::text(&out.stdout);
    let stderr = util::text(&out.stderr);
    assert!(out.status.success(), "sdk-py tests failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("Success: no issues found"), "mypy --strict: {stdout}");
    // Every test ran and passed: none skipped.
    assert!(stdout.contains("7 passed") && !stdout.contains("skipped"), "{stdout}");
}

/// From an empty folder, with no network: generate the package, `pip install --no-index` it
/// into a fresh venv, `mypy --strict` a small program against it (and refuse one that misuses
/// a field's type), and the venv's `python` runs the program on a real core.
#[test]
fn a_generated_package_installs_offline_into_a_fresh_venv_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    util::copy_store(&util::repo().join("examples/library"), &store);
    let types = dir.path().join("store_types");
    let made = util::stardust(&[
        "sdk",
        "generate",
        store.to_str().unwrap(),
        "--lang",
        "python",
        "--out",
        types.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", util::text(&made.stderr));
    let venv = dir.path().join("venv");
    let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).output().unwrap();
    assert!(made.status.success(), "{}", util::text(&made.stderr));
    let pip = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--no-index",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "./store_types",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(pip.status.success(), "{}{}", util::text(&pip.stdout), util::text(&pip.stderr));
    let program = dir.path().join("main.py");
    std::fs::write(
        &program,
        r#"import os

import store_types as lib

client = lib.connect_sync(os.environ["STORE"])
dune = client.get_book("book/dune")
year: int = dune.value["year"]
page = client.query("find [?b ?t] where [[?b type book] [?b title ?t]] order [[?t asc]] limit 2",
                    (lib.BookColumns.id, lib.BookColumns.title))
book_id, title = page.rows[0]
print(dune.value["title"], year, len(page.rows), book_id.startswith("book/"), len(title) > 0)
try:
    client.get_book("book/no-such-book")
except lib.StardustError as err:
    print(err.code)
client.close()
"#,
    )
    .unwrap();
    let mypy = |file: &std::path::Path| {
        Command::new("python3")
            .args(["-m", "mypy", "--strict", "--no-incremental", "--python-executable"])
            .arg(venv.join("bin/python"))
            .arg("--cache-dir")
            .arg(dir.path().join(".mypy"))
            .arg(file)
            .current_dir(dir.path())
            .output()
            .expect("mypy runs (pip install mypy; scripts/test does)")
    };
    let checked = mypy(&program);
    assert!(checked.status.success(), "{}", util::text(&checked.stdout));
    // The types are the schemas': a year is an int.
    let wrong = dir.path().join("wrong.py");
    std::fs::write(
        &wrong,
        "import store_types as lib\n\ndef y(b: lib.Book) -> str:\n    return b[\"year\"]\n",
    )
    .unwrap();
    let refused = mypy(&wrong);
    assert!(!refused.status.success());
    assert!(
        util::text(&refused.stdout).contains("wrong.py:4: error"),
        "{}",
        util::text(&refused.stdout)
    );

    let run = Command::new(venv.join("bin/python"))
        .arg(&program)
        .current_dir(dir.path())
        .env("STORE", &store)
        .env("STARDUST_BIN", env!("CARGO_BIN_EXE_stardust"))
        .env("STARDUST_IDLE_EXIT", "2")
        .env_remove("RUST_LOG")
        .env_remove("PYTHONPATH")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", util::text(&run.stderr));
    assert_eq!(util::text(&run.stdout), "Dune 1965 2 True True\nnot-found\n");
}

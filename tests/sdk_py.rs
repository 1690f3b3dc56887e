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
    assert!(stdout.contains("6 passed") && !stdout.contains("skipped"), "{stdout}");
}

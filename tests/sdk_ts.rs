//! The TypeScript SDK (sdk-ts/) against a real core: `sdk-ts/test/run.mjs` builds the package,
//! generates typed code for examples/library with this build's `stardust`, type-checks it
//! (`tsc --strict`) with the tests, and runs them with node's test runner on a copy of the
//! library. Node.js and TypeScript are required (scripts/test installs them): a missing one
//! fails this test rather than skipping it.

mod util;

use std::process::Command;

#[test]
fn the_typescript_sdk_against_a_real_core() {
    let out = Command::new("node")
        .arg(util::repo().join("sdk-ts/test/run.mjs"))
        .env("STARDUST_BIN", env!("CARGO_BIN_EXE_stardust"))
        .env("STARDUST_LIBRARY", util::repo().join("examples/library"))
        // A core the SDK started (on reconnect) leaves soon after the tests end.
        .env("STARDUST_IDLE_EXIT", "5")
        .env_remove("RUST_LOG")
        .output()
        .expect("node runs (install Node.js 20 or newer; scripts/test does)");
    let stdout = util::text(&out.stdout);
    let stderr = util::text(&out.stderr);
    assert!(out.status.success(), "sdk-ts tests failed:\n{stdout}\n{stderr}");
    // Every test ran: none was skipped or left as a todo.
    assert!(stdout.contains("# fail 0") && stdout.contains("# skipped 0"), "{stdout}");
    assert!(stdout.contains("# pass 6"), "{stdout}");
}

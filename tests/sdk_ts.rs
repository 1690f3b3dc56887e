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
    assert!(stdout.contains("# pass 7"), "{stdout}");
}

/// The runtime a generated package carries is sdk-ts/dist/src, compiled into the binary: it
/// must be what `tsc -p sdk-ts` makes of sdk-ts/src today.
#[test]
fn the_compiled_runtime_is_current() {
    let out = tempfile::tempdir().unwrap();
    let built = Command::new("tsc")
        .args(["-p", util::repo().join("sdk-ts").to_str().unwrap(), "--outDir"])
        .arg(out.path())
        .output()
        .expect("tsc runs (npm install --global typescript@5; scripts/test does)");
    assert!(built.status.success(), "{}", util::text(&built.stdout));
    let listing = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let committed = util::repo().join("sdk-ts/dist/src");
    let fresh = out.path().join("src");
    let stale: Vec<String> = listing(&fresh)
        .into_iter()
        .chain(listing(&committed))
        .filter(|name| {
            std::fs::read(fresh.join(name)).ok() != std::fs::read(committed.join(name)).ok()
        })
        .collect();
    assert!(
        stale.is_empty(),
        "sdk-ts/dist/src is not what sdk-ts/src compiles to ({stale:?} differ): run `tsc -p sdk-ts` \
         (or `npm run build` in sdk-ts) and commit sdk-ts/dist; the binary carries it"
    );
}

/// From an empty folder, with no network: generate the package, `npm install --offline` it,
/// `tsc --strict` a small program against it (and refuse one that misuses a field's type),
/// and `node` runs the program on a real core.
#[test]
fn a_generated_package_installs_offline_type_checks_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    util::copy_store(&util::repo().join("examples/library"), &store);
    let types = dir.path().join("store-types");
    let made = util::stardust(&[
        "sdk",
        "generate",
        store.to_str().unwrap(),
        "--lang",
        "typescript",
        "--out",
        types.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", util::text(&made.stderr));
    let app = dir.path().join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::write(app.join("package.json"), r#"{"type": "module", "private": true}"#).unwrap();
    let npm = Command::new("npm")
        .args(["install", "--offline", "--no-audit", "--no-fund", "../store-types"])
        .current_dir(&app)
        // Nothing may come from a registry: an attempt would fail on this address.
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .env("npm_config_cache", dir.path().join("npm-cache"))
        .output()
        .expect("npm runs");
    assert!(npm.status.success(), "{}{}", util::text(&npm.stdout), util::text(&npm.stderr));
    std::fs::write(
        app.join("tsconfig.json"),
        r#"{"compilerOptions": {"target": "ES2022", "lib": ["ES2022", "DOM"], "module": "NodeNext",
            "moduleResolution": "NodeNext", "strict": true, "types": []}, "files": ["main.ts"]}"#,
    )
    .unwrap();
    std::fs::write(
        app.join("main.ts"),
        r#"import { columns, connect, StardustError } from "store-types";
import type { Book } from "store-types";

declare const process: { env: Record<string, string | undefined> };

const client = await connect(process.env["STORE"] ?? "");
const dune = await client.get("book/dune");
const book: Book = dune.value;
const page = await client.query(
  "find [?b ?t] where [[?b type book] [?b title ?t]] order [[?t asc]] limit 2",
  [columns.book.id, columns.book.title],
);
const [id, title]: [string, string] = page.rows[0]!;
console.log(`${book.title} ${book.year} ${page.rows.length} ${id.startsWith("book/")} ${title.length > 0}`);
try {
  await client.get("book/no-such-book");
} catch (err) {
  if (err instanceof StardustError) console.log(err.code);
}
client.close();
"#,
    )
    .unwrap();
    let tsc = Command::new("tsc").args(["-p", "."]).current_dir(&app).output().unwrap();
    assert!(tsc.status.success(), "{}", util::text(&tsc.stdout));
    // The types are the schemas': a year is a number.
    std::fs::write(
        app.join("main.ts"),
        "import type { Book } from \"store-types\";\nexport const y = (b: Book): string => b.year;\n",
    )
    .unwrap();
    let wrong =
        Command::new("tsc").args(["-p", ".", "--noEmit"]).current_dir(&app).output().unwrap();
    assert!(!wrong.status.success());
    assert!(util::text(&wrong.stdout).contains("TS2322"), "{}", util::text(&wrong.stdout));

    let node = Command::new("node")
        .arg("main.js")
        .current_dir(&app)
        .env("STORE", &store)
        .env("STARDUST_BIN", env!("CARGO_BIN_EXE_stardust"))
        .env("STARDUST_IDLE_EXIT", "2")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(node.status.success(), "{}", util::text(&node.stderr));
    assert_eq!(util::text(&node.stdout), "Dune 1965 2 true true\nnot-found\n");
}

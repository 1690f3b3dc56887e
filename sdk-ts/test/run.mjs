// Runs the SDK's tests against a real core: generates the package for STARDUST_LIBRARY
// (examples/library) with STARDUST_BIN, installs it as a user would (`npm install --offline`),
// type-checks the tests and the example program against it (strict), then runs the tests with
// node's test runner. The runtime the package carries is sdk-ts/dist/src, which
// tests/sdk_ts.rs checks is what `tsc -p sdk-ts` makes of the sources. Exits non-zero on any
// failure. Used by tests/sdk_ts.rs (`cargo test`) and `npm test`.

import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = dirname(here);
const bin = process.env.STARDUST_BIN;
const library = process.env.STARDUST_LIBRARY ?? join(pkg, "../examples/library");
const tsc = process.env.TSC ?? "tsc";
if (!bin) {
  console.error("set STARDUST_BIN to the stardust executable");
  process.exit(2);
}
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: "inherit", env: { ...process.env, STARDUST_LIBRARY: library } });

const work = mkdtempSync(join(tmpdir(), "stardust-sdk-ts-run-"));
try {
  writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module", private: true }));
  run(bin, ["sdk", "generate", library, "--lang", "typescript", "--out", join(work, "library")]);
  run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", "./library"], work);
  // The generator's snapshot for hostile schemas (core/test-data/sdkgen): its declarations
  // type-check and its module loads, with the runtime the package carries.
  const hostile = join(work, "hostile");
  mkdirSync(hostile);
  for (const part of readFileSync(join(pkg, "../core/test-data/sdkgen/hostile.ts.expect"), "utf8").split("//- ").slice(1)) {
    const newline = part.indexOf("\n");
    writeFileSync(join(hostile, part.slice(0, newline)), part.slice(newline + 1));
  }
  cpSync(join(work, "library/runtime"), join(hostile, "runtime"), { recursive: true });
  writeFileSync(join(hostile, "package.json"), JSON.stringify({ type: "module" }));
  run(tsc, ["--noEmit", "--strict", "--target", "ES2022", "--module", "NodeNext", "--moduleResolution", "NodeNext", join(hostile, "index.d.ts")], work);
  run(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(join(hostile, "index.js"))})`], work);
  cpSync(here, join(work, "test"), { recursive: true, filter: (src) => !src.endsWith(".mjs") });
  cpSync(join(pkg, "src/node.d.ts"), join(work, "node.d.ts"));
  // The example program (examples/sdk-ts) type-checks against the same package.
  cpSync(join(pkg, "../examples/sdk-ts/example.ts"), join(work, "example.ts"));
  writeFileSync(join(work, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      target: "ES2022", lib: ["ES2022"], module: "NodeNext", moduleResolution: "NodeNext",
      strict: true, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true,
      types: [], outDir: "dist", rootDir: ".",
    },
    include: ["test", "example.ts", "node.d.ts"],
  }));
  run(tsc, ["-p", work]);
  const tests = readdirSync(join(work, "dist/test")).filter((f) => f.endsWith(".test.js")).map((f) => join(work, "dist/test", f));
  run(process.execPath, ["--test", ...tests], work);
} finally {
  rmSync(work, { recursive: true, force: true });
}

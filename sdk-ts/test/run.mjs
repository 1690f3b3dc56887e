// Runs the SDK's tests against a real core: builds the package, generates the typed code for
// STARDUST_LIBRARY (examples/library) with STARDUST_BIN, type-checks the generated code and
// the tests together (strict), then runs them with node's test runner. Exits non-zero on any
// failure. Used by tests/sdk_ts.rs (`cargo test`) and `npm test`.

import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
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

run(tsc, ["-p", pkg]);
const work = mkdtempSync(join(tmpdir(), "stardust-sdk-ts-run-"));
try {
  mkdirSync(join(work, "node_modules/@stardust"), { recursive: true });
  symlinkSync(pkg, join(work, "node_modules/@stardust/sdk"));
  writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));
  run(bin, ["sdk", "generate", library, "--lang", "typescript", "--out", join(work, "library")]);
  // The generated code alone, as a user's project would check it.
  run(tsc, ["--noEmit", "--strict", "--target", "ES2022", "--module", "NodeNext", "--moduleResolution", "NodeNext", join(work, "library/index.ts")], work);
  // The generator's snapshot for hostile schemas (core/test-data/sdkgen) type-checks too.
  const hostile = readFileSync(join(pkg, "../core/test-data/sdkgen/hostile.ts.expect"), "utf8");
  mkdirSync(join(work, "hostile"));
  writeFileSync(join(work, "hostile/index.ts"), hostile.slice(hostile.indexOf("\n") + 1));
  run(tsc, ["--noEmit", "--strict", "--target", "ES2022", "--module", "NodeNext", "--moduleResolution", "NodeNext", join(work, "hostile/index.ts")], work);
  cpSync(here, join(work, "test"), { recursive: true, filter: (src) => !src.endsWith(".mjs") });
  cpSync(join(pkg, "src/node.d.ts"), join(work, "node.d.ts"));
  // The example program (examples/sdk-ts) type-checks against the same generated code.
  cpSync(join(pkg, "../examples/sdk-ts/example.ts"), join(work, "example.ts"));
  writeFileSync(join(work, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      target: "ES2022", lib: ["ES2022"], module: "NodeNext", moduleResolution: "NodeNext",
      strict: true, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true,
      types: [], outDir: "dist", rootDir: ".",
    },
    include: ["library", "test", "example.ts", "node.d.ts"],
  }));
  run(tsc, ["-p", work]);
  const tests = readdirSync(join(work, "dist/test")).filter((f) => f.endsWith(".test.js")).map((f) => join(work, "dist/test", f));
  run(process.execPath, ["--test", ...tests], work);
} finally {
  rmSync(work, { recursive: true, force: true });
}

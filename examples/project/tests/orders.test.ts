import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

test("a truncated response is refused", () => {
  const text = readFileSync(new URL("./fixtures/broken-truncated.json", import.meta.url), "utf8");
  assert.throws(() => JSON.parse(text));
});

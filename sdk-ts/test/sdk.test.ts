// The TypeScript SDK against a real core on a copy of examples/library, typed by the package
// `stardust sdk generate` made for it (installed as `library`). Needs STARDUST_BIN and STARDUST_LIBRARY
// (tests/sdk_ts.rs sets both and runs this with node's test runner).

import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import assert from "node:assert/strict";

// The generated package, installed as a user installs it (`npm install ./library`): it
// re-exports its runtime, which `library/runtime` and `library/decode` also reach.
import { DecodeError, StardustError, columns, connect, decls, tempRef } from "library";
import type { Book, EntityAt, Event, History, Subscription, Types } from "library";
import { check } from "library/decode";
import { connect as connectUntyped } from "library/runtime";

const bin = process.env["STARDUST_BIN"];
const library = process.env["STARDUST_LIBRARY"];
if (!bin || !library) throw new Error("set STARDUST_BIN and STARDUST_LIBRARY (tests/sdk_ts.rs does)");
const dir = mkdtempSync(join(tmpdir(), "stardust-sdk-ts-"));
const store = join(dir, "library");
cpSync(library, store, { recursive: true, filter: (src) => !src.includes(".stardust") });

after(async () => {
  await stopCore();
  rmSync(dir, { recursive: true, force: true });
});

/** Stop the store's core (SIGTERM) and wait until its process is gone. */
async function stopCore(root: string = store): Promise<void> {
  let pid: number;
  try {
    pid = (JSON.parse(readFileSync(join(root, ".stardust/run/daemon.json"), "utf8")) as { pid: number }).pid;
    process.kill(pid, "SIGTERM");
  } catch {
    return; // No core runs.
  }
  for (let i = 0; i < 400 && existsSync(`/proc/${pid}`); i++) {
    await new Promise<void>((resolve) => setTimeout(resolve, 25));
  }
}

/** `stardust apply STORE PATCH --yes`: a commit made by another client. */
function apply(patch: string): number {
  const file = join(dir, "change.patch.dust");
  writeFileSync(file, patch);
  const out = spawnSync(bin!, ["apply", store, file, "--yes", "--format", "json"], { encoding: "utf8" });
  assert.equal(out.status, 0, out.stderr);
  return (JSON.parse(out.stdout) as { seq: number }).seq;
}

/** Events until one reaches `seq` (seqs only go up), within 20 s. */
async function through<C>(events: Subscription<C>, seq: number): Promise<Event<C>[]> {
  const seen: Event<C>[] = [];
  const deadline = setTimeout(() => events.close(), 20_000);
  // next() rather than `for await`: a `break` would end the subscription (return()).
  for (;;) {
    const result = await events.next();
    if (result.done) break;
    const event = result.value;
    const last = seen[seen.length - 1];
    if (last) assert.ok(event.seq > last.seq, `seq order: ${last.seq} then ${event.seq}`);
    seen.push(event);
    if (event.seq >= seq) break;
  }
  clearTimeout(deadline);
  assert.equal(seen[seen.length - 1]?.seq, seq, `no event reached seq ${seq}: ${JSON.stringify(seen)}`);
  return seen;
}

test("get and query are typed by the generated code", async () => {
  const client = await connect(store);
  try {
    const dune = await client.get("book/dune");
    const year: number = dune.value.year;
    const author: Book["author"] = dune.value.author;
    assert.equal(year, 1965);
    assert.equal(author, "@person/frank-herbert");
    assert.equal(dune.path, "books/dune.dust");

    const page = await client.query(
      "find [?b ?t ?a] where [[?b type book] [?b title ?t] [?b author ?a] [?a name 'Frank Herbert']] order [[?t asc]] limit 2",
      [columns.book.id, columns.book.title, columns.book.author],
    );
    assert.deepEqual(page.columns, ["?b", "?t", "?a"]);
    const [id, title, who] = page.rows[0]!;
    assert.match(id, /^book\//);
    assert.equal(typeof title, "string");
    assert.equal(who, "person/frank-herbert");

    // A column that does not fit is a typed error naming the cell.
    await assert.rejects(
      client.query("find [?b ?t] where [[?b type book] [?b title ?t]] limit 1", [columns.book.id, columns.book.year]),
      (err) => err instanceof DecodeError && err.code === "type-error" && /row 0 \?t/.test(err.path),
    );
  } finally {
    client.close();
  }
});

test("a created entity's temporary name resolves to its id on disk", async () => {
  const client = await connect(store);
  try {
    const preview = await client.create(
      { id: "?ann", type: "person", name: "Ann Leckie-Test", roles: ["author"] },
      { id: "?book", type: "book", title: "Ancillary Test", author: tempRef<"person">("?ann"), year: 2013, status: "published" },
    );
    assert.ok(preview.committable, JSON.stringify(preview.reasons));
    assert.equal(preview.documents.length, 2);
    assert.match(preview.documents.map((d) => d.diff).join(""), /\+title/);
    const committed = await preview.confirm();
    assert.equal(committed.resolved["?ann"], "person/ann-leckie-test");
    assert.equal(committed.resolved["?book"], "book/ancillary-test");
    const book = await client.get("book/ancillary-test");
    assert.equal(book.value.author, "@person/ann-leckie-test");
    assert.ok(committed.seq > 0);
  } finally {
    client.close();
  }
});

test("a refused change carries the SPEC code", async () => {
  const client = await connect(store);
  try {
    // Reading an entity that is not there.
    await assert.rejects(client.get("book/no-such-book"), (err) => err instanceof StardustError && err.code === "not-found");
    // A book the schema refuses (no author, year or status): the preview says so, and the
    // save authority refuses the confirm.
    const preview = await client.patch("ops [{create {id ?x type book title 'Nobody Wrote This'}}]");
    assert.equal(preview.committable, false);
    assert.ok(preview.diagnostics.new.length > 0);
    await assert.rejects(preview.confirm(), (err) => err instanceof StardustError && err.code === "refused");
    // Arguments the command's schema refuses.
    await assert.rejects(client.execute("stardust.entity.get", {}), (err) => err instanceof StardustError && err.code === "invalid-arguments");
  } finally {
    client.close();
  }
});

test("an entity as of a seq, and the transactions that touched it, newest first", async () => {
  const client = await connect(store);
  try {
    const first = await (await client.patch("ops [{set {id book/dune pages 500}}]")).confirm();
    const second = await (await client.patch("ops [{set {id book/dune pages 501}}]")).confirm();
    assert.ok(second.seq > first.seq);

    const old: EntityAt<Book> = await client.get("book/dune", first.seq);
    assert.equal(old.value.pages, 500);
    assert.equal(old.seq, first.seq);
    assert.equal(old.changedAt, first.seq);
    assert.equal(old.path, "books/dune.dust");
    assert.equal((await client.get("book/dune")).value.pages, 501);

    const history: History = await client.history({ entity: "book/dune" });
    assert.deepEqual(history.transactions.slice(0, 2).map((t) => t.seq), [second.seq, first.seq]);
    assert.deepEqual(
      history.transactions[0]?.documents.map((d) => [d.path, d.change, d.entities.changed]),
      [["books/dune.dust", "changed", ["book/dune"]]],
    );
    assert.equal(history.transactions[0]?.origin, "sdk:stardust-sdk-ts");
    const page = await client.history({ path: "books/dune.dust", limit: 1 });
    assert.deepEqual([page.transactions.map((t) => t.seq), page.nextOffset], [[second.seq], 1]);
    assert.equal(page.total, history.total);

    // A seq past the head is `not-found`, as an entity that did not exist then is.
    await assert.rejects(client.get("book/dune", second.seq + 1), (err) => err instanceof StardustError && err.code === "not-found");
    await assert.rejects(client.get("book/no-such-book", first.seq), (err) => err instanceof StardustError && err.code === "not-found");
  } finally {
    client.close();
  }
});

test("a subscriber receives another client's commit, and resumes after the core restarts", { timeout: 120_000 }, async () => {
  const client = await connect(store);
  const events = client.subscribeEntities();
  const documents = client.subscribeDocuments();
  try {
    await events.open();
    await documents.open();
    const seq = apply("ops [{set {id book/dune pages 413}}]\n");
    const seen = await through(events, seq);
    assert.deepEqual(seen[seen.length - 1], { kind: "changed", seq, changes: [{ id: "book/dune", change: "changed" }] });
    const docs = await through(documents, seq);
    const last = docs[docs.length - 1];
    assert.ok(last?.kind === "changed", JSON.stringify(docs));
    // The document, then the files derived from it (SPEC §19), marked derived.
    assert.deepEqual(
      last.changes.map((c) => [c.path, c.change, c.derived ?? false]),
      [
        ["books/dune.dust", "changed", false],
        [".stardust/entities/book/dune.json", "changed", true],
        [".stardust/json/books/dune.dust.json", "changed", true],
      ],
    );
    documents.close();

    // The core goes away; a commit lands meanwhile; the subscription reconnects (starting a
    // core) and catches up with stardust.changes.since.
    client.close();
    await stopCore();
    const later = apply("ops [{set {id book/dune pages 414}}]\n");
    assert.ok(later > seq);
    const resumed = await through(events, later);
    assert.deepEqual(resumed[resumed.length - 1], { kind: "changed", seq: later, changes: [{ id: "book/dune", change: "changed" }] });
  } finally {
    events.close();
    documents.close();
    client.close();
  }
});

test("an overflow is a re-read, and a core that never comes back ends the subscription with a typed error", { timeout: 120_000 }, async () => {
  // A store whose subscribers may fall only two entries behind.
  const small = join(dir, "small");
  mkdirSync(join(small, "people"), { recursive: true });
  writeFileSync(join(small, "stardust.toml"), "[notifications]\nmax_pending = 2\n");
  writeFileSync(join(small, "people/ann.dust"), "id    person/ann\ntype  person\nname  Ann\n");
  const client = await connectUntyped(small, { reconnectTimeoutMs: 1000, connectTimeoutMs: 5000 });
  const events = client.subscribeEntities();
  try {
    await events.open();
    // Three new entities in three new documents: six pending entries, past max_pending.
    const committed = await (
      await client.patch("ops [{create {id ?a type person name A}} {create {id ?b type person name B}} {create {id ?c type person name C}}]")
    ).confirm();
    assert.deepEqual(await through(events, committed.seq), [{ kind: "reread", seq: committed.seq }]);

    // The core stops and its store is gone: reconnecting fails for reconnectTimeoutMs, then
    // the iterator throws the last attempt's error, with the code the core gave it.
    client.close();
    await stopCore(small);
    rmSync(small, { recursive: true, force: true });
    await assert.rejects(
      events.next(),
      // The core's own answer when `stardust lsp` serves the missing store itself, or
      // `unavailable` when the attempt ends without one.
      (err) => err instanceof StardustError && (err.code === "not-found" || err.code === "unavailable"),
    );
  } finally {
    events.close();
    client.close();
  }
});

test("a value that does not match the generated type is a decode error naming the field", () => {
  const bad = { id: "book/x", type: "book", title: "X", author: "@book/dune", year: 1, status: "published" };
  assert.throws(
    () => check(decls, { kind: "named", name: "Book" }, bad, "book/x"),
    (err) => err instanceof DecodeError && err.path === "book/x.author" && /reference to a person/.test(err.message),
  );
  assert.throws(
    () => check(decls, { kind: "named", name: "Book" }, { ...bad, author: "@person/a", rights: { holder: 3 } }, "book/x"),
    (err) => err instanceof DecodeError && err.path === "book/x.rights.holder",
  );
  assert.throws(
    () => check(decls, { kind: "named", name: "Book" }, { ...bad, author: "@person/a", colour: "red" }, "book/x"),
    (err) => err instanceof DecodeError && err.path === "book/x.colour",
  );
});

// Type-level checks: these lines must not compile (tsc fails on an unused @ts-expect-error).
export function typeChecks(book: Book): void {
  // @ts-expect-error: a reference to a book is not a reference to a person
  const wrong: Book["author"] = "@book/dune";
  // @ts-expect-error: not one of the statuses
  const status: Book["status"] = "lost";
  // @ts-expect-error: `title` is a string
  const title: number = book.title;
  const types: keyof Types = "review";
  void wrong, status, title, types;
}

// @stardust/sdk: the TypeScript client of a Stardust store's core. It speaks the same
// protocol as the Rust SDK (sdk/): an LSP session (`stardust lsp --sdk --store STORE` on stdio,
// attached to the store's one core), registry commands through workspace/executeCommand,
// and the change notifications (`stardust/entitiesChanged`, `stardust/documentsChanged`). Generated code (`stardust sdk generate --lang
// typescript`) types it by the store's schemas.

import { check } from "./decode.js";
import type { Decls, Shape } from "./decode.js";
import { StardustError } from "./errors.js";
import { Connection, findStardust } from "./wire.js";

export { DecodeError, StardustError } from "./errors.js";
export type { Code } from "./errors.js";
export type { Decl, Decls, Shape } from "./decode.js";
export { findStardust } from "./wire.js";

/** The id of an entity of type `T`: `book/dune`. */
export type Id<T extends string> = `${T}/${string}`;
/** A reference to an entity of type `T`, as a field holds it: `@book/dune`. */
export type Ref<T extends string> = `@${T}/${string}`;

/** A reference to an entity created under the temporary name `name` in the same change. */
export function tempRef<T extends string>(name: string): Ref<T> {
  return `@${name.startsWith("?") ? name : `?${name}`}` as Ref<T>;
}

export type ConnectOptions = {
  /** The `stardust` executable; by default STARDUST_BIN, else on PATH, else beside node. */
  exe?: string;
  /** The client's name (shown in `stardust.status`, recorded as the origin of its commits). */
  name?: string;
  /** How long a subscription keeps trying to reconnect after the core went away (ms, 30 s). */
  reconnectTimeoutMs?: number;
  /** How long one connection attempt may take, a core's start included (ms, 60 s). */
  connectTimeoutMs?: number;
};

/** An entity as the core holds it (`stardust.entity.get`). */
export type Entity<V> = {
  id: string;
  value: V;
  /** The document holding it, relative to the store root. */
  path: string;
  range: { line: number; column: number; endLine: number; endColumn: number };
  /** The document's version (SHA-256). */
  version: string;
};

/** An entity as of a seq (`stardust.entity.at`): its value after that transaction. */
export type EntityAt<V> = {
  id: string;
  value: V;
  /** The seq it was read at. */
  seq: number;
  /** The document that held it then, relative to the store root. */
  path: string;
  /** The seq of the transaction that left that document so. */
  changedAt: number;
  /** That document's version then (SHA-256). */
  version: string;
};

/** One document's part in a transaction: versions before and after (`null`: none). */
export type TransactionDocument = {
  path: string;
  change: ChangeKind;
  before: string | null;
  after: string | null;
  entities: { created: string[]; changed: string[]; deleted: string[] };
};

/** A committed transaction as the log records it (`stardust log --format json`). */
export type Transaction = { seq: number; time: string; origin: string; documents: TransactionDocument[] };

/** Which transactions `history` lists: those touching `path` or `entity` (or all), paged. */
export type HistoryOptions = { path?: string; entity?: string; limit?: number; offset?: number };

/** A page of transactions, newest first. */
export type History = { transactions: Transaction[]; total: number; nextOffset: number | null };

/** A page of query rows. */
export type Page<Row> = { columns: string[]; rows: Row[]; total: number; nextOffset: number | null };

/** A typed query column: what the row's cell holds (see the generated `columns`). */
export type Column<T> = { readonly shape: Shape; readonly __type?: T };
export function column<T>(shape: Shape): Column<T> {
  return { shape };
}
type Rows<C extends readonly Column<unknown>[]> = { -readonly [K in keyof C]: C[K] extends Column<infer T> ? T : never };

export type DocumentDiff = { path: string; change: ChangeKind; before: string | null; after: string | null; diff: string };
export type Committed = { seq: number; resolved: Record<string, string> };
export type ChangeKind = "created" | "changed" | "deleted";
export type EntityChange = { id: string; change: ChangeKind };
export type DocumentChange = { path: string; change: ChangeKind; version?: string | null; derived?: boolean };
/** What a subscription yields: changes as of `seq`, or `reread` when changes were dropped. */
export type Event<C> = { kind: "changed"; seq: number; changes: C[] } | { kind: "reread"; seq: number };

/** A mutation's preview: nothing is written until `confirm()`. */
export class Preview {
  readonly id: string;
  readonly expiresAt: string;
  readonly committable: boolean;
  readonly reasons: string[];
  readonly documents: DocumentDiff[];
  readonly entities: { created: string[]; changed: string[]; deleted: string[] };
  /** Temporary names and the ids they would get (final at confirm). */
  readonly resolved: Record<string, string>;
  /** New and resolved diagnostics (objects with code, severity, range, message). */
  readonly diagnostics: { new: unknown[]; resolved: unknown[] };
  readonly raw: Record<string, unknown>;
  private readonly conn: Connection;

  constructor(conn: Connection, raw: unknown) {
    const r = (raw ?? {}) as Record<string, unknown>;
    if (typeof r["previewId"] !== "string") throw new StardustError("internal", `a preview without a previewId: ${JSON.stringify(raw)}`);
    this.conn = conn;
    this.raw = r;
    this.id = r["previewId"];
    this.expiresAt = String(r["expiresAt"] ?? "");
    this.committable = r["committable"] === true;
    this.reasons = (r["reasons"] as string[] | undefined) ?? [];
    this.documents = (r["documents"] as DocumentDiff[] | undefined) ?? [];
    const e = (r["entities"] ?? {}) as Partial<Preview["entities"]>;
    this.entities = { created: e.created ?? [], changed: e.changed ?? [], deleted: e.deleted ?? [] };
    this.resolved = (r["resolved"] as Record<string, string> | undefined) ?? {};
    const d = (r["diagnostics"] ?? {}) as Partial<Preview["diagnostics"]>;
    this.diagnostics = { new: d.new ?? [], resolved: d.resolved ?? [] };
  }

  /** Commit exactly what was previewed: the seq, and every temporary name's id on disk. */
  async confirm(): Promise<Committed> {
    const answer = (await this.conn.execute("stardust.preview.confirm", { previewId: this.id })) as Partial<Committed>;
    if (typeof answer?.seq !== "number") throw new StardustError("internal", `a confirm answer without a seq: ${JSON.stringify(answer)}`);
    return { seq: answer.seq, resolved: answer.resolved ?? {} };
  }

  /** Drop the preview; `false` when the core no longer had it. */
  async discard(): Promise<boolean> {
    const answer = (await this.conn.execute("stardust.preview.discard", { previewId: this.id })) as { discarded?: boolean };
    return answer?.discarded === true;
  }
}

/** The generated code's description of the store's types. */
export type Schema = { decls: Decls; types: { readonly [type: string]: string } };

/** A connection to a store's core; `M` maps each entity type to its generated type. */
export class Client<M = Record<string, Record<string, unknown>>> {
  readonly store: string;
  private readonly conn: Connection;
  private readonly schema: Schema | undefined;
  private readonly exe: string;
  private readonly options: ConnectOptions;

  private constructor(store: string, conn: Connection, exe: string, schema: Schema | undefined, options: ConnectOptions) {
    this.store = store;
    this.conn = conn;
    this.exe = exe;
    this.schema = schema;
    this.options = options;
  }

  /** @internal */
  static async open<M>(store: string, schema: Schema | undefined, options: ConnectOptions = {}): Promise<Client<M>> {
    const exe = findStardust(options.exe);
    const conn = await Connection.open(store, options.name ?? "stardust-sdk-ts", exe, [], options.connectTimeoutMs);
    return new Client<M>(store, conn, exe, schema, options);
  }

  /** Run any registry command with its argument object. */
  execute(command: string, args: unknown = {}): Promise<unknown> {
    return this.conn.execute(command, args);
  }

  /** The store's current seq. */
  async seq(): Promise<number> {
    return seqOf(await this.conn.execute("stardust.status", {}));
  }

  /**
   * One entity by id (`not-found` when there is none), its value checked against its type.
   * With `at`, the entity as of that seq (`stardust.entity.at`): `not-found` when it did not
   * exist then, or the seq is past the head or compacted away; a value that no longer fits
   * today's type is a `type-error`, as a current one is.
   */
  get<T extends keyof M & string>(id: Id<T>): Promise<Entity<M[T]>>;
  get<T extends keyof M & string>(id: Id<T>, at: number): Promise<EntityAt<M[T]>>;
  get<T extends keyof M & string>(id: Id<T>, at?: number): Promise<Entity<M[T]> | EntityAt<M[T]>>;
  async get<T extends keyof M & string>(id: Id<T>, at?: number): Promise<Entity<M[T]> | EntityAt<M[T]>> {
    const entity = (at === undefined
      ? await this.conn.execute("stardust.entity.get", { id })
      : await this.conn.execute("stardust.entity.at", { id, seq: at })) as { value: unknown };
    const type = id.slice(0, id.indexOf("/"));
    const name = this.schema?.types[type];
    if (this.schema && name) check(this.schema.decls, { kind: "named", name }, entity.value, id);
    return entity as Entity<M[T]> | EntityAt<M[T]>;
  }

  /** The transactions touching a path or an entity (or all), newest first, paged (`stardust.history.list`). */
  async history(options: HistoryOptions = {}): Promise<History> {
    const answer = (await this.conn.execute("stardust.history.list", options)) as Partial<History>;
    if (!Array.isArray(answer?.transactions)) throw new StardustError("internal", `a history answer without transactions: ${JSON.stringify(answer)}`);
    return { transactions: answer.transactions, total: answer.total ?? answer.transactions.length, nextOffset: answer.nextOffset ?? null };
  }

  /**
   * Run a query (DUST or JSON text, or an object). With `columns` (the generated ones, in
   * `find` order) each row is checked and typed; without, rows are `unknown[]`.
   */
  async query<const C extends readonly Column<unknown>[]>(
    query: string | object,
    columns?: C,
    page: { limit?: number; offset?: number } = {},
  ): Promise<Page<Rows<C>>> {
    const answer = (await this.conn.execute("stardust.query.execute", { document: query, ...page })) as Page<unknown[]>;
    if (columns) {
      const decls = this.schema?.decls ?? {};
      answer.rows.forEach((row, i) => {
        if (row.length !== columns.length) {
          throw new StardustError("type-error", `row ${i} has ${row.length} cells but ${columns.length} columns were given (${answer.columns.join(" ")})`);
        }
        columns.forEach((c, j) => check(decls, c.shape, row[j], `row ${i} ${answer.columns[j] ?? j}`));
      });
    }
    return answer as unknown as Page<Rows<C>>;
  }

  /** Evaluate an expression, optionally with an entity as its context. */
  async evaluate(expression: string, entity?: string): Promise<unknown> {
    const args: Record<string, unknown> = { expression };
    if (entity !== undefined) args["entity"] = entity;
    const answer = (await this.conn.execute("stardust.expression.evaluate", args)) as { value?: unknown };
    return answer?.value ?? null;
  }

  /** Preview a patch (`ops [...]`, DUST or JSON text, or an object). */
  async patch(patch: string | object): Promise<Preview> {
    return this.preview("stardust.patch.apply", { document: patch });
  }

  /** Preview the creation of entities; ids may be temporary names (`?name`). */
  async create(...entities: Creatable<M>[]): Promise<Preview> {
    return this.preview("stardust.entity.create", { entities });
  }

  /** Preview any mutation command. */
  async preview(command: string, args: unknown): Promise<Preview> {
    return new Preview(this.conn, await this.conn.execute(command, args));
  }

  /** Follow entity changes (from `since`, else from now), resuming across core restarts. */
  subscribeEntities(since?: number): Subscription<EntityChange> {
    return new Subscription<EntityChange>(this.store, this.exe, this.options, "entities", since);
  }

  /** Follow document changes. */
  subscribeDocuments(since?: number): Subscription<DocumentChange> {
    return new Subscription<DocumentChange>(this.store, this.exe, this.options, "documents", since);
  }

  close(): void {
    this.conn.dispose();
  }
}

/** An entity to create: its type's fields, with an id or a temporary name (`?name`). */
export type Creatable<M> = {
  [T in keyof M & string]: Omit<M[T], "id"> & { id: Id<T> | `?${string}` };
}[keyof M & string];

/** Connect to the core of `store` (starting one when none runs), untyped. */
export function connect(store: string, options?: ConnectOptions): Promise<Client> {
  return Client.open(store, undefined, options);
}

/** Connect typed by generated declarations (what the generated `connect` calls). */
export function connectTyped<M>(store: string, schema: Schema, options?: ConnectOptions): Promise<Client<M>> {
  return Client.open<M>(store, schema, options);
}

function seqOf(value: unknown): number {
  const seq = (value as { seq?: unknown } | null)?.seq;
  if (typeof seq !== "number") throw new StardustError("internal", `an answer without a seq: ${JSON.stringify(value)}`);
  return seq;
}

const KINDS = {
  entities: { notification: "entitiesChanged", method: "stardust/entitiesChanged" },
  documents: { notification: "documentsChanged", method: "stardust/documentsChanged" },
} as const;

/**
 * Changes in increasing seq order, as an async iterator, on a connection of its own. When
 * the core goes away it connects again (a core is started when none runs) for up to
 * `reconnectTimeoutMs`, asks `stardust.changes.since` for what changed after the last seq it
 * yielded and yields that first, so a restart loses nothing; past the timeout the iterator
 * throws the connection's error (code `unavailable`). Overflow is `{kind: "reread"}`.
 */
export class Subscription<C> implements AsyncIterable<Event<C>> {
  private conn: Connection | undefined;
  private last: number;
  private readonly ready: Event<C>[] = [];
  private started: Promise<void> | undefined;
  private done = false;

  constructor(
    private readonly store: string,
    private readonly exe: string,
    private readonly options: ConnectOptions,
    private readonly field: "entities" | "documents",
    private readonly since: number | undefined,
  ) {
    this.last = since ?? 0;
  }

  /** The newest seq accounted for (give it as `since` to resume elsewhere). */
  get seq(): number {
    return this.last;
  }

  /** Connect now (the first `next()` does otherwise); changes after this are not missed. */
  open(): Promise<void> {
    this.started ??= this.start();
    return this.started;
  }

  private async start(): Promise<void> {
    const conn = await this.connect();
    if (this.since === undefined) this.last = seqOf(await conn.execute("stardust.status", {}));
    else await this.catchUp(conn);
    this.conn = conn;
  }

  private connect(): Promise<Connection> {
    return Connection.open(
      this.store,
      this.options.name ?? "stardust-sdk-ts",
      this.exe,
      [KINDS[this.field].notification],
      this.options.connectTimeoutMs,
    );
  }

  private async reconnect(): Promise<void> {
    const deadline = performance.now() + (this.options.reconnectTimeoutMs ?? 30_000);
    for (;;) {
      try {
        const conn = await this.connect();
        await this.catchUp(conn);
        this.conn = conn;
        return;
      } catch (err) {
        if (performance.now() >= deadline) throw err;
        await new Promise<void>((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  private async catchUp(conn: Connection): Promise<void> {
    for (;;) {
      const answer = (await conn.execute("stardust.changes.since", { seq: this.last })) as Record<string, unknown>;
      if (answer["overflow"] === true) {
        this.last = seqOf(answer);
        this.ready.push({ kind: "reread", seq: this.last });
        return;
      }
      this.accept(answer);
      if (answer["more"] !== true) return;
    }
  }

  private accept(params: unknown): void {
    const p = (params ?? {}) as Record<string, unknown>;
    const seq = seqOf(p);
    if (seq <= this.last) return;
    this.last = seq;
    if (p["overflow"] === true) {
      this.ready.push({ kind: "reread", seq });
      return;
    }
    const changes = (p[this.field] as C[] | undefined) ?? [];
    if (changes.length > 0) this.ready.push({ kind: "changed", seq, changes });
  }

  async next(): Promise<IteratorResult<Event<C>>> {
    await this.open();
    for (;;) {
      const event = this.ready.shift();
      if (event) return { value: event, done: false };
      if (this.done) return { value: undefined, done: true };
      if (!this.conn || this.conn.closed) {
        this.conn = undefined;
        await this.reconnect();
        continue;
      }
      try {
        const n = await this.conn.notification();
        if (n.method === KINDS[this.field].method) this.accept(n.params);
      } catch {
        if (this.done) return { value: undefined, done: true };
        this.conn = undefined;
      }
    }
  }

  async return(): Promise<IteratorResult<Event<C>>> {
    this.close();
    return { value: undefined, done: true };
  }

  close(): void {
    this.done = true;
    this.conn?.dispose();
  }

  [Symbol.asyncIterator](): AsyncIterator<Event<C>> {
    return this;
  }
}

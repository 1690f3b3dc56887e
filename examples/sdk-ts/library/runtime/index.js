// @stardust/sdk: the TypeScript client of a Stardust store's core. It speaks the same
// protocol as the Rust SDK (sdk/): an LSP session (`stardust lsp --sdk --store STORE` on stdio,
// attached to the store's one core), registry commands through workspace/executeCommand,
// and the change notifications (`stardust/entitiesChanged`, `stardust/documentsChanged`). Generated code (`stardust sdk generate --lang
// typescript`) types it by the store's schemas.
import { check } from "./decode.js";
import { StardustError } from "./errors.js";
import { Connection, findStardust } from "./wire.js";
export { DecodeError, StardustError } from "./errors.js";
export { findStardust } from "./wire.js";
/** A reference to an entity created under the temporary name `name` in the same change. */
export function tempRef(name) {
    return `@${name.startsWith("?") ? name : `?${name}`}`;
}
export function column(shape) {
    return { shape };
}
/** A mutation's preview: nothing is written until `confirm()`. */
export class Preview {
    id;
    expiresAt;
    committable;
    reasons;
    documents;
    entities;
    /** Temporary names and the ids they would get (final at confirm). */
    resolved;
    /** New and resolved diagnostics (objects with code, severity, range, message). */
    diagnostics;
    raw;
    conn;
    constructor(conn, raw) {
        const r = (raw ?? {});
        if (typeof r["previewId"] !== "string")
            throw new StardustError("internal", `a preview without a previewId: ${JSON.stringify(raw)}`);
        this.conn = conn;
        this.raw = r;
        this.id = r["previewId"];
        this.expiresAt = String(r["expiresAt"] ?? "");
        this.committable = r["committable"] === true;
        this.reasons = r["reasons"] ?? [];
        this.documents = r["documents"] ?? [];
        const e = (r["entities"] ?? {});
        this.entities = { created: e.created ?? [], changed: e.changed ?? [], deleted: e.deleted ?? [] };
        this.resolved = r["resolved"] ?? {};
        const d = (r["diagnostics"] ?? {});
        this.diagnostics = { new: d.new ?? [], resolved: d.resolved ?? [] };
    }
    /** Commit exactly what was previewed: the seq, and every temporary name's id on disk. */
    async confirm() {
        const answer = (await this.conn.execute("stardust.preview.confirm", { previewId: this.id }));
        if (typeof answer?.seq !== "number")
            throw new StardustError("internal", `a confirm answer without a seq: ${JSON.stringify(answer)}`);
        return { seq: answer.seq, resolved: answer.resolved ?? {} };
    }
    /** Drop the preview; `false` when the core no longer had it. */
    async discard() {
        const answer = (await this.conn.execute("stardust.preview.discard", { previewId: this.id }));
        return answer?.discarded === true;
    }
}
/** A connection to a store's core; `M` maps each entity type to its generated type. */
export class Client {
    store;
    conn;
    schema;
    exe;
    options;
    constructor(store, conn, exe, schema, options) {
        this.store = store;
        this.conn = conn;
        this.exe = exe;
        this.schema = schema;
        this.options = options;
    }
    /** @internal */
    static async open(store, schema, options = {}) {
        const exe = findStardust(options.exe);
        const conn = await Connection.open(store, options.name ?? "stardust-sdk-ts", exe, [], options.connectTimeoutMs);
        return new Client(store, conn, exe, schema, options);
    }
    /** Run any registry command with its argument object. */
    execute(command, args = {}) {
        return this.conn.execute(command, args);
    }
    /** The store's current seq. */
    async seq() {
        return seqOf(await this.conn.execute("stardust.status", {}));
    }
    async get(id, at) {
        const entity = (at === undefined
            ? await this.conn.execute("stardust.entity.get", { id })
            : await this.conn.execute("stardust.entity.at", { id, seq: at }));
        const type = id.slice(0, id.indexOf("/"));
        const name = this.schema?.types[type];
        if (this.schema && name)
            check(this.schema.decls, { kind: "named", name }, entity.value, id);
        return entity;
    }
    /** The transactions touching a path or an entity (or all), newest first, paged (`stardust.history.list`). */
    async history(options = {}) {
        const answer = (await this.conn.execute("stardust.history.list", options));
        if (!Array.isArray(answer?.transactions))
            throw new StardustError("internal", `a history answer without transactions: ${JSON.stringify(answer)}`);
        return { transactions: answer.transactions, total: answer.total ?? answer.transactions.length, nextOffset: answer.nextOffset ?? null };
    }
    /**
     * Run a query (DUST or JSON text, or an object). With `columns` (the generated ones, in
     * `find` order) each row is checked and typed; without, rows are `unknown[]`.
     */
    async query(query, columns, page = {}) {
        const answer = (await this.conn.execute("stardust.query.execute", { document: query, ...page }));
        if (columns) {
            const decls = this.schema?.decls ?? {};
            answer.rows.forEach((row, i) => {
                if (row.length !== columns.length) {
                    throw new StardustError("type-error", `row ${i} has ${row.length} cells but ${columns.length} columns were given (${answer.columns.join(" ")})`);
                }
                columns.forEach((c, j) => check(decls, c.shape, row[j], `row ${i} ${answer.columns[j] ?? j}`));
            });
        }
        return answer;
    }
    /** Evaluate an expression, optionally with an entity as its context. */
    async evaluate(expression, entity) {
        const args = { expression };
        if (entity !== undefined)
            args["entity"] = entity;
        const answer = (await this.conn.execute("stardust.expression.evaluate", args));
        return answer?.value ?? null;
    }
    /** Preview a patch (`ops [...]`, DUST or JSON text, or an object). */
    async patch(patch) {
        return this.preview("stardust.patch.apply", { document: patch });
    }
    /** Preview the creation of entities; ids may be temporary names (`?name`). */
    async create(...entities) {
        return this.preview("stardust.entity.create", { entities });
    }
    /** Preview any mutation command. */
    async preview(command, args) {
        return new Preview(this.conn, await this.conn.execute(command, args));
    }
    /** Follow entity changes (from `since`, else from now), resuming across core restarts. */
    subscribeEntities(since) {
        return new Subscription(this.store, this.exe, this.options, "entities", since);
    }
    /** Follow document changes. */
    subscribeDocuments(since) {
        return new Subscription(this.store, this.exe, this.options, "documents", since);
    }
    close() {
        this.conn.dispose();
    }
}
/** Connect to the core of `store` (starting one when none runs), untyped. */
export function connect(store, options) {
    return Client.open(store, undefined, options);
}
/** Connect typed by generated declarations (what the generated `connect` calls). */
export function connectTyped(store, schema, options) {
    return Client.open(store, schema, options);
}
function seqOf(value) {
    const seq = value?.seq;
    if (typeof seq !== "number")
        throw new StardustError("internal", `an answer without a seq: ${JSON.stringify(value)}`);
    return seq;
}
const KINDS = {
    entities: { notification: "entitiesChanged", method: "stardust/entitiesChanged" },
    documents: { notification: "documentsChanged", method: "stardust/documentsChanged" },
};
/**
 * Changes in increasing seq order, as an async iterator, on a connection of its own. When
 * the core goes away it connects again (a core is started when none runs) for up to
 * `reconnectTimeoutMs`, asks `stardust.changes.since` for what changed after the last seq it
 * yielded and yields that first, so a restart loses nothing; past the timeout the iterator
 * throws the connection's error (code `unavailable`). Overflow is `{kind: "reread"}`.
 */
export class Subscription {
    store;
    exe;
    options;
    field;
    since;
    conn;
    last;
    ready = [];
    started;
    done = false;
    constructor(store, exe, options, field, since) {
        this.store = store;
        this.exe = exe;
        this.options = options;
        this.field = field;
        this.since = since;
        this.last = since ?? 0;
    }
    /** The newest seq accounted for (give it as `since` to resume elsewhere). */
    get seq() {
        return this.last;
    }
    /** Connect now (the first `next()` does otherwise); changes after this are not missed. */
    open() {
        this.started ??= this.start();
        return this.started;
    }
    async start() {
        const conn = await this.connect();
        if (this.since === undefined)
            this.last = seqOf(await conn.execute("stardust.status", {}));
        else
            await this.catchUp(conn);
        this.conn = conn;
    }
    connect() {
        return Connection.open(this.store, this.options.name ?? "stardust-sdk-ts", this.exe, [KINDS[this.field].notification], this.options.connectTimeoutMs);
    }
    async reconnect() {
        const deadline = performance.now() + (this.options.reconnectTimeoutMs ?? 30_000);
        for (;;) {
            try {
                const conn = await this.connect();
                await this.catchUp(conn);
                this.conn = conn;
                return;
            }
            catch (err) {
                if (performance.now() >= deadline)
                    throw err;
                await new Promise((resolve) => setTimeout(resolve, 50));
            }
        }
    }
    async catchUp(conn) {
        for (;;) {
            const answer = (await conn.execute("stardust.changes.since", { seq: this.last }));
            if (answer["overflow"] === true) {
                this.last = seqOf(answer);
                this.ready.push({ kind: "reread", seq: this.last });
                return;
            }
            this.accept(answer);
            if (answer["more"] !== true)
                return;
        }
    }
    accept(params) {
        const p = (params ?? {});
        const seq = seqOf(p);
        if (seq <= this.last)
            return;
        this.last = seq;
        if (p["overflow"] === true) {
            this.ready.push({ kind: "reread", seq });
            return;
        }
        const changes = p[this.field] ?? [];
        if (changes.length > 0)
            this.ready.push({ kind: "changed", seq, changes });
    }
    async next() {
        await this.open();
        for (;;) {
            const event = this.ready.shift();
            if (event)
                return { value: event, done: false };
            if (this.done)
                return { value: undefined, done: true };
            if (!this.conn || this.conn.closed) {
                this.conn = undefined;
                await this.reconnect();
                continue;
            }
            try {
                const n = await this.conn.notification();
                if (n.method === KINDS[this.field].method)
                    this.accept(n.params);
            }
            catch {
                if (this.done)
                    return { value: undefined, done: true };
                this.conn = undefined;
            }
        }
    }
    async return() {
        this.close();
        return { value: undefined, done: true };
    }
    close() {
        this.done = true;
        this.conn?.dispose();
    }
    [Symbol.asyncIterator]() {
        return this;
    }
}

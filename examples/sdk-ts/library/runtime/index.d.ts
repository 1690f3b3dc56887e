import type { Decls, Shape } from "./decode.js";
import { Connection } from "./wire.js";
export { DecodeError, StardustError } from "./errors.js";
export type { Code } from "./errors.js";
export type { Decl, Decls, Shape } from "./decode.js";
export { findStardust } from "./wire.js";
/** The id of an entity of type `T`: `book/dune`. */
export type Id<T extends string> = `${T}/${string}`;
/** A reference to an entity of type `T`, as a field holds it: `@book/dune`. */
export type Ref<T extends string> = `@${T}/${string}`;
/** A reference to an entity created under the temporary name `name` in the same change. */
export declare function tempRef<T extends string>(name: string): Ref<T>;
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
    range: {
        line: number;
        column: number;
        endLine: number;
        endColumn: number;
    };
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
    entities: {
        created: string[];
        changed: string[];
        deleted: string[];
    };
};
/** A committed transaction as the log records it (`stardust log --format json`). */
export type Transaction = {
    seq: number;
    time: string;
    origin: string;
    documents: TransactionDocument[];
};
/** Which transactions `history` lists: those touching `path` or `entity` (or all), paged. */
export type HistoryOptions = {
    path?: string;
    entity?: string;
    limit?: number;
    offset?: number;
};
/** A page of transactions, newest first. */
export type History = {
    transactions: Transaction[];
    total: number;
    nextOffset: number | null;
};
/** A page of query rows. */
export type Page<Row> = {
    columns: string[];
    rows: Row[];
    total: number;
    nextOffset: number | null;
};
/** A typed query column: what the row's cell holds (see the generated `columns`). */
export type Column<T> = {
    readonly shape: Shape;
    readonly __type?: T;
};
export declare function column<T>(shape: Shape): Column<T>;
type Rows<C extends readonly Column<unknown>[]> = {
    -readonly [K in keyof C]: C[K] extends Column<infer T> ? T : never;
};
export type DocumentDiff = {
    path: string;
    change: ChangeKind;
    before: string | null;
    after: string | null;
    diff: string;
};
export type Committed = {
    seq: number;
    resolved: Record<string, string>;
};
export type ChangeKind = "created" | "changed" | "deleted";
export type EntityChange = {
    id: string;
    change: ChangeKind;
};
export type DocumentChange = {
    path: string;
    change: ChangeKind;
    version?: string | null;
    derived?: boolean;
};
/** What a subscription yields: changes as of `seq`, or `reread` when changes were dropped. */
export type Event<C> = {
    kind: "changed";
    seq: number;
    changes: C[];
} | {
    kind: "reread";
    seq: number;
};
/** A mutation's preview: nothing is written until `confirm()`. */
export declare class Preview {
    readonly id: string;
    readonly expiresAt: string;
    readonly committable: boolean;
    readonly reasons: string[];
    readonly documents: DocumentDiff[];
    readonly entities: {
        created: string[];
        changed: string[];
        deleted: string[];
    };
    /** Temporary names and the ids they would get (final at confirm). */
    readonly resolved: Record<string, string>;
    /** New and resolved diagnostics (objects with code, severity, range, message). */
    readonly diagnostics: {
        new: unknown[];
        resolved: unknown[];
    };
    readonly raw: Record<string, unknown>;
    private readonly conn;
    constructor(conn: Connection, raw: unknown);
    /** Commit exactly what was previewed: the seq, and every temporary name's id on disk. */
    confirm(): Promise<Committed>;
    /** Drop the preview; `false` when the core no longer had it. */
    discard(): Promise<boolean>;
}
/** The generated code's description of the store's types. */
export type Schema = {
    decls: Decls;
    types: {
        readonly [type: string]: string;
    };
};
/** A connection to a store's core; `M` maps each entity type to its generated type. */
export declare class Client<M = Record<string, Record<string, unknown>>> {
    readonly store: string;
    private readonly conn;
    private readonly schema;
    private readonly exe;
    private readonly options;
    private constructor();
    /** @internal */
    static open<M>(store: string, schema: Schema | undefined, options?: ConnectOptions): Promise<Client<M>>;
    /** Run any registry command with its argument object. */
    execute(command: string, args?: unknown): Promise<unknown>;
    /** The store's current seq. */
    seq(): Promise<number>;
    /**
     * One entity by id (`not-found` when there is none), its value checked against its type.
     * With `at`, the entity as of that seq (`stardust.entity.at`): `not-found` when it did not
     * exist then, or the seq is past the head or compacted away; a value that no longer fits
     * today's type is a `type-error`, as a current one is.
     */
    get<T extends keyof M & string>(id: Id<T>): Promise<Entity<M[T]>>;
    get<T extends keyof M & string>(id: Id<T>, at: number): Promise<EntityAt<M[T]>>;
    get<T extends keyof M & string>(id: Id<T>, at?: number): Promise<Entity<M[T]> | EntityAt<M[T]>>;
    /** The transactions touching a path or an entity (or all), newest first, paged (`stardust.history.list`). */
    history(options?: HistoryOptions): Promise<History>;
    /**
     * Run a query (DUST or JSON text, or an object). With `columns` (the generated ones, in
     * `find` order) each row is checked and typed; without, rows are `unknown[]`.
     */
    query<const C extends readonly Column<unknown>[]>(query: string | object, columns?: C, page?: {
        limit?: number;
        offset?: number;
    }): Promise<Page<Rows<C>>>;
    /** Evaluate an expression, optionally with an entity as its context. */
    evaluate(expression: string, entity?: string): Promise<unknown>;
    /** Preview a patch (`ops [...]`, DUST or JSON text, or an object). */
    patch(patch: string | object): Promise<Preview>;
    /** Preview the creation of entities; ids may be temporary names (`?name`). */
    create(...entities: Creatable<M>[]): Promise<Preview>;
    /** Preview any mutation command. */
    preview(command: string, args: unknown): Promise<Preview>;
    /** Follow entity changes (from `since`, else from now), resuming across core restarts. */
    subscribeEntities(since?: number): Subscription<EntityChange>;
    /** Follow document changes. */
    subscribeDocuments(since?: number): Subscription<DocumentChange>;
    close(): void;
}
/** An entity to create: its type's fields, with an id or a temporary name (`?name`). */
export type Creatable<M> = {
    [T in keyof M & string]: Omit<M[T], "id"> & {
        id: Id<T> | `?${string}`;
    };
}[keyof M & string];
/** Connect to the core of `store` (starting one when none runs), untyped. */
export declare function connect(store: string, options?: ConnectOptions): Promise<Client>;
/** Connect typed by generated declarations (what the generated `connect` calls). */
export declare function connectTyped<M>(store: string, schema: Schema, options?: ConnectOptions): Promise<Client<M>>;
/**
 * Changes in increasing seq order, as an async iterator, on a connection of its own. When
 * the core goes away it connects again (a core is started when none runs) for up to
 * `reconnectTimeoutMs`, asks `stardust.changes.since` for what changed after the last seq it
 * yielded and yields that first, so a restart loses nothing; past the timeout the iterator
 * throws the connection's error (code `unavailable`). Overflow is `{kind: "reread"}`.
 */
export declare class Subscription<C> implements AsyncIterable<Event<C>> {
    private readonly store;
    private readonly exe;
    private readonly options;
    private readonly field;
    private readonly since;
    private conn;
    private last;
    private readonly ready;
    private started;
    private done;
    constructor(store: string, exe: string, options: ConnectOptions, field: "entities" | "documents", since: number | undefined);
    /** The newest seq accounted for (give it as `since` to resume elsewhere). */
    get seq(): number;
    /** Connect now (the first `next()` does otherwise); changes after this are not missed. */
    open(): Promise<void>;
    private start;
    private connect;
    private reconnect;
    private catchUp;
    private accept;
    next(): Promise<IteratorResult<Event<C>>>;
    return(): Promise<IteratorResult<Event<C>>>;
    close(): void;
    [Symbol.asyncIterator](): AsyncIterator<Event<C>>;
}

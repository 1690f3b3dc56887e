export type Shape = {
    kind: "unknown" | "null" | "boolean" | "integer" | "number" | "string";
} | {
    kind: "literal";
    values: readonly unknown[];
} | {
    kind: "ref" | "id";
    type: string;
} | {
    kind: "array";
    items: Shape;
} | {
    kind: "map";
    values: Shape;
} | {
    kind: "named";
    name: string;
} | {
    kind: "union";
    of: readonly Shape[];
};
export type Decl = {
    fields: ReadonlyArray<{
        key: string;
        shape: Shape;
        required: boolean;
    }>;
    /** What other keys may hold; `null` when none are allowed. */
    extra: Shape | null;
};
export type Decls = {
    readonly [name: string]: Decl;
};
/** Check `value` against `shape`; `path` names where it is (`book/dune.rights.holder`). */
export declare function check(decls: Decls, shape: Shape, value: unknown, path: string): void;

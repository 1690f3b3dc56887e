/** Stardust's stable error codes. */
export type Code = "config-invalid" | "invalid-arguments" | "not-found" | "outside-store" | "ambiguous-position" | "unsupported" | "refused" | "conflict" | "preview-not-found" | "preview-expired" | "preview-stale" | "mutation-disabled" | "type-error" | "busy" | "cancelled" | "internal" | "server-unavailable" | "untrusted" | "unavailable";
/**
 * A failure: `code` is the error code (the core's for a command it refused; `unavailable`
 * when no core could be reached or it went away; `type-error` for a value that does not fit
 * the generated type). `data` holds the core's details (`problems` of a refused commit, ...).
 */
export declare class StardustError extends Error {
    readonly code: Code;
    readonly data: unknown;
    constructor(code: Code, message: string, data?: unknown);
}
/** A value from the core that does not match the generated type; `path` names the field. */
export declare class DecodeError extends StardustError {
    readonly path: string;
    constructor(path: string, message: string);
}
/** A JSON-RPC error as the SDK's error: the error code is in `data.code`. */
export declare function commandError(error: unknown): StardustError;

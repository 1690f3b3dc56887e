// The SDK's errors: every one carries one of Stardust's error codes, the core's own when it refused.
const CODES = new Set([
    "config-invalid", "invalid-arguments", "not-found", "outside-store", "ambiguous-position",
    "unsupported", "refused", "conflict", "preview-not-found", "preview-expired", "preview-stale",
    "mutation-disabled", "type-error", "busy", "cancelled", "internal", "server-unavailable",
    "untrusted", "unavailable",
]);
/**
 * A failure: `code` is the error code (the core's for a command it refused; `unavailable`
 * when no core could be reached or it went away; `type-error` for a value that does not fit
 * the generated type). `data` holds the core's details (`problems` of a refused commit, ...).
 */
export class StardustError extends Error {
    code;
    data;
    constructor(code, message, data) {
        super(`${message} [${code}]`);
        this.name = "StardustError";
        this.code = code;
        this.data = data ?? { code };
    }
}
/** A value from the core that does not match the generated type; `path` names the field. */
export class DecodeError extends StardustError {
    path;
    constructor(path, message) {
        super("type-error", `${path}: ${message}`, { code: "type-error", path });
        this.name = "DecodeError";
        this.path = path;
    }
}
/** A JSON-RPC error as the SDK's error: the error code is in `data.code`. */
export function commandError(error) {
    const e = (error ?? {});
    const message = typeof e.message === "string" ? e.message : "the core gave no message";
    const data = e.data;
    let code = "internal";
    if (data && typeof data.code === "string" && CODES.has(data.code))
        code = data.code;
    else if (e.code === -32800)
        code = "cancelled";
    return new StardustError(code, message, e.data ?? { code });
}

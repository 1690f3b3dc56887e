// The SDK's errors: every one carries one of Stardust's error codes, the core's own when it refused.

/** Stardust's stable error codes. */
export type Code =
  | "config-invalid"
  | "invalid-arguments"
  | "not-found"
  | "outside-store"
  | "ambiguous-position"
  | "unsupported"
  | "refused"
  | "conflict"
  | "preview-not-found"
  | "preview-expired"
  | "preview-stale"
  | "mutation-disabled"
  | "type-error"
  | "busy"
  | "cancelled"
  | "internal"
  | "server-unavailable"
  | "untrusted"
  | "unavailable";

const CODES: ReadonlySet<string> = new Set<Code>([
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
  readonly code: Code;
  readonly data: unknown;
  constructor(code: Code, message: string, data?: unknown) {
    super(`${message} [${code}]`);
    this.name = "StardustError";
    this.code = code;
    this.data = data ?? { code };
  }
}

/** A value from the core that does not match the generated type; `path` names the field. */
export class DecodeError extends StardustError {
  readonly path: string;
  constructor(path: string, message: string) {
    super("type-error", `${path}: ${message}`, { code: "type-error", path });
    this.name = "DecodeError";
    this.path = path;
  }
}

/** A JSON-RPC error as the SDK's error: the error code is in `data.code`. */
export function commandError(error: unknown): StardustError {
  const e = (error ?? {}) as { message?: unknown; code?: unknown; data?: unknown };
  const message = typeof e.message === "string" ? e.message : "the core gave no message";
  const data = e.data as { code?: unknown } | undefined;
  let code: Code = "internal";
  if (data && typeof data.code === "string" && CODES.has(data.code)) code = data.code as Code;
  else if (e.code === -32800) code = "cancelled";
  return new StardustError(code, message, e.data ?? { code });
}

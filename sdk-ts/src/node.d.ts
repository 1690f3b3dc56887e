// The few Node.js APIs this package uses, declared here so that it builds with no
// dependency at all (not even @types/node). Only what the runtime and its tests call.

declare var process: {
  env: Record<string, string | undefined>;
  execPath: string;
  pid: number;
  platform: string;
  exitCode: number | undefined;
  kill(pid: number, signal?: string): void;
};
declare function setTimeout(callback: () => void, ms: number): unknown;
declare function clearTimeout(handle: unknown): void;
declare class TextEncoder {
  encode(text: string): Uint8Array;
}
declare class TextDecoder {
  decode(bytes: Uint8Array): string;
}
declare var performance: { now(): number };
declare var console: { log(...args: unknown[]): void; error(...args: unknown[]): void };

declare module "node:child_process" {
  interface Readable {
    on(event: "data", listener: (chunk: Uint8Array) => void): this;
    on(event: "end" | "close", listener: () => void): this;
    on(event: "error", listener: (err: Error) => void): this;
  }
  interface Writable {
    write(chunk: Uint8Array | string): boolean;
    end(): void;
    on(event: "error", listener: (err: Error) => void): this;
  }
  export interface ChildProcess {
    readonly pid?: number;
    readonly stdin: Writable;
    readonly stdout: Readable;
    readonly stderr: Readable;
    readonly exitCode: number | null;
    kill(signal?: string): boolean;
    on(event: "exit", listener: (code: number | null, signal: string | null) => void): this;
    on(event: "error", listener: (err: Error) => void): this;
    unref(): void;
  }
  export interface SpawnOptions {
    stdio?: Array<"pipe" | "ignore" | "inherit">;
    env?: Record<string, string | undefined>;
    cwd?: string;
    detached?: boolean;
  }
  export function spawn(command: string, args: readonly string[], options?: SpawnOptions): ChildProcess;
  export function spawnSync(
    command: string,
    args: readonly string[],
    options?: SpawnOptions & { encoding?: "utf8"; input?: string },
  ): { status: number | null; stdout: string; stderr: string };
}

declare module "node:fs" {
  export const constants: { X_OK: number };
  export function accessSync(path: string, mode?: number): void;
  export function statSync(path: string): { isFile(): boolean };
  export function cpSync(from: string, to: string, options?: { recursive?: boolean; filter?: (src: string) => boolean }): void;
  export function mkdtempSync(prefix: string): string;
  export function mkdirSync(path: string, options?: { recursive?: boolean }): void;
  export function rmSync(path: string, options?: { recursive?: boolean; force?: boolean }): void;
  export function writeFileSync(path: string, data: string): void;
  export function readFileSync(path: string, encoding: "utf8"): string;
  export function existsSync(path: string): boolean;
}

declare module "node:path" {
  export function join(...parts: string[]): string;
  export function dirname(path: string): string;
  export const delimiter: string;
}

declare module "node:os" {
  export function tmpdir(): string;
}

declare module "node:test" {
  type Fn = (t: unknown) => void | Promise<void>;
  export function test(name: string, fn: Fn): Promise<void>;
  export function test(name: string, options: { timeout?: number }, fn: Fn): Promise<void>;
  export function before(fn: () => void | Promise<void>): void;
  export function after(fn: () => void | Promise<void>): void;
}

declare module "node:assert/strict" {
  function assert(value: unknown, message?: string): asserts value;
  namespace assert {
    function equal(actual: unknown, expected: unknown, message?: string): void;
    function deepEqual(actual: unknown, expected: unknown, message?: string): void;
    function ok(value: unknown, message?: string): asserts value;
    function match(value: string, re: RegExp, message?: string): void;
    function rejects(block: Promise<unknown> | (() => Promise<unknown>), check?: (err: unknown) => boolean): Promise<void>;
    function throws(block: () => unknown, check?: (err: unknown) => boolean): void;
  }
  export default assert;
}

// One LSP connection to a store's core: `stardust lsp --sdk --store STORE` on stdio (which attaches
// to the store's core, starting one when none runs), `initialize` with the change
// notifications wanted, then JSON-RPC requests and notifications in Content-Length frames.
import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { StardustError, commandError } from "./errors.js";
/** The largest frame accepted from the core. */
const MAX_FRAME = 512 * 1024 * 1024;
const METHOD_NOT_FOUND = -32601;
/**
 * The `stardust` executable: `explicit`, else `STARDUST_BIN`, else `stardust` on
 * PATH, else beside the running executable. Throws naming every place tried.
 */
export function findStardust(explicit) {
    if (explicit !== undefined)
        return explicit;
    const tried = [];
    const fromEnv = process.env["STARDUST_BIN"];
    if (fromEnv !== undefined && fromEnv !== "")
        return fromEnv;
    tried.push("STARDUST_BIN (unset)");
    for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
        if (dir === "")
            continue;
        const candidate = join(dir, "stardust");
        if (isExecutable(candidate))
            return candidate;
    }
    tried.push("stardust on PATH");
    const beside = join(dirname(process.execPath), "stardust");
    if (isExecutable(beside))
        return beside;
    tried.push(beside);
    throw new StardustError("unavailable", `cannot find the stardust executable (tried ${tried.join(", ")}); install it on PATH or set STARDUST_BIN`);
}
function isExecutable(path) {
    try {
        accessSync(path, constants.X_OK);
        return statSync(path).isFile();
    }
    catch {
        return false;
    }
}
export class Connection {
    child;
    buffer = new Uint8Array(0);
    nextId = 1;
    pending = new Map();
    queue = [];
    waiter;
    closedError;
    stderr = "";
    constructor(child) {
        this.child = child;
        child.stdout.on("data", (chunk) => this.onData(chunk));
        child.stderr.on("data", (chunk) => {
            // Kept for the error message when the process ends early; bounded.
            this.stderr = (this.stderr + new TextDecoder().decode(chunk)).slice(-4000);
        });
        child.stdin.on("error", () => { });
        child.on("error", (err) => this.close(new StardustError("unavailable", `cannot run ${err.message}`)));
        child.on("exit", () => {
            const detail = this.stderr.trim();
            this.close(new StardustError("unavailable", `the core closed the connection${detail ? `: ${detail.split("\n").slice(-1)[0]}` : ""}; connect again (a subscription reconnects by itself)`));
        });
    }
    /**
     * Start `stardust lsp --sdk --store STORE` and initialize, asking for `wants` notifications. An
     * attempt that fails or is not answered within `timeoutMs` ends its process.
     */
    static async open(store, name, exe, wants, timeoutMs = 60_000) {
        const child = spawn(exe, ["lsp", "--sdk", "--store", store], { stdio: ["pipe", "pipe", "pipe"] });
        const conn = new Connection(child);
        const timer = setTimeout(() => {
            conn.close(new StardustError("unavailable", `stardust lsp --store ${store} did not answer initialize within ${timeoutMs} ms`));
        }, timeoutMs);
        try {
            await conn.request("initialize", {
                processId: process.pid,
                clientInfo: { name, version: "0.1.0" },
                capabilities: { experimental: { stardust: { notifications: wants } } },
            });
        }
        catch (err) {
            conn.dispose();
            throw err;
        }
        finally {
            clearTimeout(timer);
        }
        conn.notify("initialized", {});
        return conn;
    }
    get closed() {
        return this.closedError !== undefined;
    }
    /** Run a registry command (`workspace/executeCommand` with one argument object). */
    execute(command, args) {
        return this.request("workspace/executeCommand", { command, arguments: [args] });
    }
    request(method, params) {
        if (this.closedError)
            return Promise.reject(this.closedError);
        const id = this.nextId++;
        return new Promise((resolve, reject) => {
            this.pending.set(id, { resolve, reject });
            this.send({ jsonrpc: "2.0", id, method, params });
        });
    }
    notify(method, params) {
        this.send({ jsonrpc: "2.0", method, params });
    }
    /** The next notification, waiting for one; rejects when the connection ends. */
    async notification() {
        for (;;) {
            const next = this.queue.shift();
            if (next)
                return next;
            if (this.closedError)
                throw this.closedError;
            await new Promise((resolve) => {
                this.waiter = resolve;
            });
        }
    }
    /** End the connection (the core ends the session and drops its previews). */
    dispose() {
        this.close(new StardustError("unavailable", "the connection was closed by this client"));
        this.child.stdin.end();
        if (this.child.exitCode === null)
            this.child.kill("SIGTERM");
    }
    send(message) {
        const body = new TextEncoder().encode(JSON.stringify(message));
        this.child.stdin.write(new TextEncoder().encode(`Content-Length: ${body.length}\r\n\r\n`));
        this.child.stdin.write(body);
    }
    close(err) {
        if (this.closedError)
            return;
        this.closedError = err;
        for (const p of this.pending.values())
            p.reject(err);
        this.pending.clear();
        this.wake();
    }
    wake() {
        const waiter = this.waiter;
        this.waiter = undefined;
        waiter?.();
    }
    onData(chunk) {
        const joined = new Uint8Array(this.buffer.length + chunk.length);
        joined.set(this.buffer);
        joined.set(chunk, this.buffer.length);
        this.buffer = joined;
        for (;;) {
            const end = headerEnd(this.buffer);
            if (end < 0)
                return;
            const header = new TextDecoder().decode(this.buffer.subarray(0, end));
            const match = /content-length:\s*(\d+)/i.exec(header);
            const length = match ? Number(match[1]) : NaN;
            if (!Number.isFinite(length) || length > MAX_FRAME) {
                this.close(new StardustError("internal", `the core sent a frame header this SDK cannot read: ${JSON.stringify(header)}`));
                this.child.kill("SIGTERM");
                return;
            }
            if (this.buffer.length < end + 4 + length)
                return;
            const body = this.buffer.subarray(end + 4, end + 4 + length);
            this.buffer = this.buffer.slice(end + 4 + length);
            let message;
            try {
                message = JSON.parse(new TextDecoder().decode(body));
            }
            catch (err) {
                this.close(new StardustError("internal", `the core sent a frame that is not JSON: ${String(err)}`));
                return;
            }
            this.dispatch(message);
        }
    }
    dispatch(message) {
        const method = message["method"];
        if (typeof method === "string") {
            if ("id" in message) {
                // A request from the core: this client serves none.
                this.send({
                    jsonrpc: "2.0",
                    id: message["id"],
                    error: { code: METHOD_NOT_FOUND, message: `the stardust SDK does not serve ${method}` },
                });
            }
            else {
                this.queue.push({ method, params: message["params"] });
                this.wake();
            }
            return;
        }
        const id = message["id"];
        if (typeof id !== "number")
            return;
        const pending = this.pending.get(id);
        if (!pending)
            return;
        this.pending.delete(id);
        if (message["error"] !== undefined)
            pending.reject(commandError(message["error"]));
        else
            pending.resolve(message["result"] ?? null);
    }
}
/** The index of the `\r\n\r\n` ending a header block, or -1. */
function headerEnd(buffer) {
    for (let i = 0; i + 3 < buffer.length; i++) {
        if (buffer[i] === 13 && buffer[i + 1] === 10 && buffer[i + 2] === 13 && buffer[i + 3] === 10)
            return i;
    }
    return -1;
}

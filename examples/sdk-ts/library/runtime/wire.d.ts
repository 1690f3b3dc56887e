export type Notification = {
    method: string;
    params: unknown;
};
/**
 * The `stardust` executable: `explicit`, else `STARDUST_BIN`, else `stardust` on
 * PATH, else beside the running executable. Throws naming every place tried.
 */
export declare function findStardust(explicit?: string): string;
export declare class Connection {
    private readonly child;
    private buffer;
    private nextId;
    private readonly pending;
    private readonly queue;
    private waiter;
    private closedError;
    private stderr;
    private constructor();
    /**
     * Start `stardust lsp --sdk --store STORE` and initialize, asking for `wants` notifications. An
     * attempt that fails or is not answered within `timeoutMs` ends its process.
     */
    static open(store: string, name: string, exe: string, wants: readonly string[], timeoutMs?: number): Promise<Connection>;
    get closed(): boolean;
    /** Run a registry command (`workspace/executeCommand` with one argument object). */
    execute(command: string, args: unknown): Promise<unknown>;
    request(method: string, params: unknown): Promise<unknown>;
    notify(method: string, params: unknown): void;
    /** The next notification, waiting for one; rejects when the connection ends. */
    notification(): Promise<Notification>;
    /** End the connection (the core ends the session and drops its previews). */
    dispose(): void;
    private send;
    private close;
    private wake;
    private onData;
    private dispatch;
}

#!/usr/bin/env python3
"""Semantic tokens of a large TypeScript file (2,000 lines written into STORE/web/src/big.ts):
through `stardust lsp` (a UTF-16 and a UTF-8 client) against typescript-language-server
spoken to directly; p50/p95 of N requests after the first full answer. Two rounds.

usage: code_tokens_bench.py STARDUST_BIN STORE N   (STORE: a trusted copy of examples/mixed;
XDG_CONFIG_HOME=/tmp/xdgc holds its trust; the store's core is stopped between systems)
"""
import json, subprocess, sys, time, os, threading, queue, statistics, shutil
binary, store, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
class Lsp:
    def __init__(self, cmd, cwd, env):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        self.q = queue.Queue(); self.nid = 0
        threading.Thread(target=self.reader, daemon=True).start()
    def reader(self):
        f = self.p.stdout
        while True:
            line = f.readline()
            if not line: return
            k = 0
            while line.strip():
                if line.lower().startswith(b"content-length:"): k = int(line.split(b":")[1])
                line = f.readline()
            self.q.put(json.loads(f.read(k)))
    def send(self, m):
        b = json.dumps(m).encode(); self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b); self.p.stdin.flush()
    def req(self, method, params):
        self.nid += 1; i = self.nid
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        while True:
            m = self.q.get(timeout=120)
            if m.get("id") == i and "method" not in m: return m
            if "method" in m and "id" in m: self.send({"jsonrpc": "2.0", "id": m["id"], "result": None})
    def notify(self, method, params): self.send({"jsonrpc": "2.0", "method": method, "params": params})
rel = "web/src/big.ts"
lines = []
for i in range(2000):
    lines.append("export function f%d(a: number, s: string): string { const w = \"é😀\"; return s + w + a.toString(); }" % i)
text = "\n".join(lines) + "\n"
open(os.path.join(store, rel), "w").write(text)
uri = "file://" + os.path.join(store, rel)
def run(name, lsp, caps):
    lsp.req("initialize", {"processId": os.getpid(), "rootUri": "file://" + store, "capabilities": caps})
    lsp.notify("initialized", {})
    lsp.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "typescript", "version": 1, "text": text}})
    end = time.time() + 60
    while True:
        r = lsp.req("textDocument/semanticTokens/full", {"textDocument": {"uri": uri}})
        if (r.get("result") or {}).get("data") or time.time() > end: break
        time.sleep(0.2)
    count = len(r["result"]["data"]) // 5
    ts = []
    for _ in range(n):
        t = time.perf_counter(); lsp.req("textDocument/semanticTokens/full", {"textDocument": {"uri": uri}}); ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    print("%-28s tokens %5d  p50 %7.2f ms  p95 %7.2f ms" % (name, count, ts[len(ts) // 2], ts[int(len(ts) * 0.95)]))
    lsp.req("shutdown", None); lsp.notify("exit", None); lsp.p.wait(timeout=10)
env = dict(os.environ, XDG_CONFIG_HOME="/tmp/xdgc")
tok = {"semanticTokens": {"requests": {"full": True}, "tokenTypes": [], "tokenModifiers": [], "formats": ["relative"]}}
for rnd in range(2):
    run("direct typescript-ls", Lsp(["typescript-language-server", "--stdio"], os.path.join(store, "web"), env), {"textDocument": tok})
    run("stardust lsp, utf-16 client", Lsp([binary, "lsp", "--store", store], store, env), {"textDocument": tok})
    subprocess.run(["pkill", "-f", "stardust serve"])
    time.sleep(0.5)
    run("stardust lsp, utf-8 client", Lsp([binary, "lsp", "--store", store], store, env), {"general": {"positionEncodings": ["utf-8"]}, "textDocument": tok})
    subprocess.run(["pkill", "-f", "stardust serve"])
    time.sleep(0.5)

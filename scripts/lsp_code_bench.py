#!/usr/bin/env python3
"""Code-file LSP latency, side by side (run by hand; no dependencies).

usage: lsp_code_bench.py [--samples K] STORE -- SERVER_CMD...

STORE is a copy of examples/mixed (trusted with `stardust trust STORE` when SERVER_CMD is
`stardust lsp --store STORE`; pyright-langserver --stdio needs nothing). The client opens
py/shop/catalog.py and py/shop/pricing.py, then measures:
  - first_hover_ms: from didOpen to the first hover that answers (cold: the server starts);
  - hover_ms, definition_ms, references_ms: K requests each, alternating between two names;
Prints one JSON object with p50/p95/max of each series (milliseconds)."""
import json, pathlib, statistics, subprocess, sys, threading, time, queue


def frame(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Lsp:
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.q = queue.Queue()
        self.id = 0
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        f = self.p.stdout
        while True:
            hdr = {}
            while True:
                line = f.readline()
                if not line:
                    self.q.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                k, v = line.split(b":", 1)
                hdr[k.lower()] = v.strip()
            self.q.put(json.loads(f.read(int(hdr[b"content-length"]))))

    def send(self, msg):
        self.p.stdin.write(frame(msg))
        self.p.stdin.flush()

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        self.id += 1
        rid = self.id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.q.get(timeout=120)
            if msg is None:
                raise SystemExit("the server closed its output")
            if msg.get("id") == rid and "method" not in msg:
                return msg
            if "id" in msg and "method" in msg:  # a request of the server: answer it
                result = [{} for _ in msg["params"].get("items", [])] \
                    if msg["method"] == "workspace/configuration" else None
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})


def position(text, line_has, needle):
    for n, line in enumerate(text.splitlines()):
        if line_has in line:
            return {"line": n, "character": len(line[:line.index(needle)].encode("utf-16-le")) // 2}
    raise SystemExit(f"no line with {line_has!r}")


def stats(xs):
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 3),
            "p95": round(xs[min(len(xs) - 1, int(len(xs) * 0.95))], 3),
            "max": round(xs[-1], 3), "n": len(xs)}


def main():
    args = sys.argv[1:]
    samples = 200
    if args[:1] == ["--samples"]:
        samples = int(args[1])
        args = args[2:]
    sep = args.index("--")
    store = pathlib.Path(args[0]).resolve()
    cmd = args[sep + 1:]
    root = (store / "py").as_uri()
    lsp = Lsp(cmd)
    lsp.request("initialize", {"processId": None, "rootUri": root,
                               "workspaceFolders": [{"uri": root, "name": "py"}],
                               "capabilities": {}})
    lsp.notify("initialized", {})
    files = {}
    start = time.perf_counter()
    for rel in ["py/shop/catalog.py", "py/shop/pricing.py"]:
        path = store / rel
        files[rel] = (path.as_uri(), path.read_text())
        lsp.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": files[rel][1]}})
    uri, text = files["py/shop/catalog.py"]
    sites = [position(text, 'return f"{self.name}', name) for name in ["with_tax", "format_price"]]
    while True:
        answer = lsp.request("textDocument/hover",
                             {"textDocument": {"uri": uri}, "position": sites[0]})
        if answer.get("result"):
            break
        time.sleep(0.05)
    first = (time.perf_counter() - start) * 1000
    out = {"command": " ".join(cmd), "first_hover_ms": round(first, 1)}
    for method, extra in [("textDocument/hover", {}), ("textDocument/definition", {}),
                          ("textDocument/references", {"context": {"includeDeclaration": True}})]:
        times = []
        for i in range(samples):
            params = {"textDocument": {"uri": uri}, "position": sites[i % 2], **extra}
            t = time.perf_counter()
            answer = lsp.request(method, params)
            times.append((time.perf_counter() - t) * 1000)
            if answer.get("error"):
                raise SystemExit(f"{method}: {answer}")
        out[method.split("/")[1] + "_ms"] = stats(times)
    print(json.dumps(out))
    lsp.request("shutdown", None)
    lsp.notify("exit", None)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Side-by-side LSP latency bench (adapted from shared/bench/lsp_bench.py; no dependencies).

usage: lsp_bench.py [--samples K] [--schema SCHEMA.json] [--field NAME] FILE.json -- SERVER_CMD...

On one open document, pull model (textDocument/diagnostic):
  - open_pull_ms: the first pull after didOpen, then warm_pull_ms: a second one;
  - edit_to_diags_ms: K times, an incremental didChange of ONE value (field NAME of a
    different entity each time, toggled between a valid integer and an invalid string), sent
    immediately followed by a pull; the time from sending the change to the answer. The
    number of diagnostics must alternate, which proves each answer saw its edit;
  - hover_ms / completion_ms: K requests each on field names of different entities,
    both at the second character of the field's name (non_empty_answers counts the answers
    that were not empty).
Prints one JSON object with p50/p95/max of each series.
Settings sent via workspace/didChangeConfiguration are those vscode-json-language-server
expects (json.validate.enable, json.schemas); Stardust ignores them."""
import json, os, pathlib, re, statistics, subprocess, sys, threading, time, queue

def frame(msg):
    b = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(b) + b

class Lsp:
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.q = queue.Queue(); self.id = 0; self.lock = threading.Lock()
        threading.Thread(target=self._reader, daemon=True).start()
    def _reader(self):
        f = self.p.stdout
        while True:
            hdr = {}
            while True:
                line = f.readline()
                if not line: self.q.put(None); return
                line = line.strip()
                if not line: break
                k, v = line.split(b":", 1); hdr[k.lower()] = v.strip()
            body = f.read(int(hdr[b"content-length"]))
            msg = json.loads(body)
            msg["_t"] = time.perf_counter()
            if "method" in msg and "id" in msg:      # server->client request: answer generically
                res = None
                if msg["method"] == "workspace/configuration":
                    res = [None for _ in msg["params"]["items"]]
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": res})
                continue
            self.q.put(msg)
    def send(self, msg):
        with self.lock:
            self.p.stdin.write(frame(msg)); self.p.stdin.flush()
    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})
    def request(self, method, params):
        self.id += 1; rid = self.id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid
    def wait(self, pred, timeout=300):
        end = time.perf_counter() + timeout
        while True:
            m = self.q.get(timeout=max(0.01, end - time.perf_counter()))
            if m is None: raise RuntimeError("server exited")
            if pred(m): return m
    def call(self, method, params):
        t = time.perf_counter()
        rid = self.request(method, params)
        m = self.wait(lambda m: m.get("id") == rid)
        if "error" in m: raise RuntimeError(f"{method}: {m['error']}")
        return m, (m["_t"] - t) * 1000
    def rss_kb(self):
        try:
            for l in open(f"/proc/{self.p.pid}/status"):
                if l.startswith("VmHWM"): return int(l.split()[1])
        except OSError: return None

def stats(xs):
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 2), "p95": round(xs[int(len(xs) * 0.95) - 1 if len(xs) > 1 else 0], 2),
            "max": round(xs[-1], 2), "n": len(xs)}

def utf16_col(line, byte_col):
    return len(line.encode()[:byte_col].decode().encode("utf-16-le")) // 2

def main(argv):
    sep = argv.index("--"); opts, cmd = argv[:sep], argv[sep + 1:]
    samples, schema, path, field = 50, None, None, "year"
    i = 0
    while i < len(opts):
        if opts[i] == "--samples": samples = int(opts[i + 1]); i += 2
        elif opts[i] == "--schema": schema = opts[i + 1]; i += 2
        elif opts[i] == "--field": field = opts[i + 1]; i += 2
        else: path = opts[i]; i += 1
    path = pathlib.Path(path).resolve()
    schema = pathlib.Path(schema).resolve() if schema else None
    text = path.read_text(); uri = path.as_uri()
    lines = text.split("\n")
    # Lines holding `"FIELD": <integer>` spread over the document, one per sample.
    pat = re.compile(r'"%s": (\d+)' % re.escape(field))
    hits = [(n, m) for n, l in enumerate(lines) for m in [pat.search(l)] if m]
    if len(hits) < samples: raise SystemExit(f"only {len(hits)} lines with an integer {field!r}")
    step = len(hits) // samples
    picks = [hits[k * step] for k in range(samples)]
    key_pat = re.compile(r'"([a-z]+)":')

    t0 = time.perf_counter()
    s = Lsp(cmd)
    caps = {"textDocument": {"publishDiagnostics": {"relatedInformation": True},
                             "diagnostic": {"dynamicRegistration": True},
                             "hover": {"contentFormat": ["markdown", "plaintext"]},
                             "completion": {"completionItem": {"snippetSupport": True}}},
            "workspace": {"configuration": False, "didChangeConfiguration": {"dynamicRegistration": False}}}
    m, _ = s.call("initialize", {"processId": os.getpid(), "rootUri": path.parent.as_uri(),
                                 "capabilities": caps, "initializationOptions": {"provideFormatter": False}})
    r = {"server": cmd[0], "file": str(path), "bytes": len(text.encode()),
         "init_ms": round((time.perf_counter() - t0) * 1000, 1)}
    s.notify("initialized", {})
    if schema:
        s.notify("workspace/didChangeConfiguration", {"settings": {"json": {
            "validate": {"enable": True},
            "schemas": [{"fileMatch": [path.name], "url": schema.as_uri()}]}}})
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}})
    m, r["open_pull_ms"] = s.call("textDocument/diagnostic", {"textDocument": {"uri": uri}})
    base = len(m["result"]["items"])
    m, r["warm_pull_ms"] = s.call("textDocument/diagnostic", {"textDocument": {"uri": uri}})
    r["diagnostics_at_open"] = base

    version = 1; edits = []
    for k, (n, match) in enumerate(picks):
        value = match.group(1)
        line = lines[n]
        start = utf16_col(line, match.start(1)); end = utf16_col(line, match.end(1))
        rng = {"start": {"line": n, "character": start}, "end": {"line": n, "character": end}}
        for new, expect in (('"x"', base + 1), (value, base)):
            version += 1
            t = time.perf_counter()
            s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                "contentChanges": [{"range": rng, "text": new}]})
            rid = s.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
            m = s.wait(lambda m: m.get("id") == rid)
            got = len(m["result"]["items"])
            if got != expect: raise SystemExit(f"after edit {version}: {got} diagnostics, expected {expect}")
            edits.append((m["_t"] - t) * 1000)
            end = start + len(new.encode("utf-16-le")) // 2
            rng = {"start": {"line": n, "character": start}, "end": {"line": n, "character": end}}
    r["edit_to_diags_ms"] = stats(edits)

    hovers, completions, answered = [], [], {"hover": 0, "completion": 0}
    for n, match in picks:
        line = lines[n]
        key = key_pat.search(line)
        at = {"line": n, "character": utf16_col(line, key.start(1) + 1)}
        m, ms = s.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": at})
        hovers.append(ms); answered["hover"] += m.get("result") is not None
        m, ms = s.call("textDocument/completion", {"textDocument": {"uri": uri}, "position": at})
        completions.append(ms)
        items = m.get("result") or []
        answered["completion"] += bool(items if isinstance(items, list) else items.get("items"))
    r["hover_ms"] = stats(hovers); r["completion_ms"] = stats(completions)
    r["non_empty_answers"] = answered
    r["server_peak_rss_mb"] = round((s.rss_kb() or 0) / 1024, 1)
    rid = s.request("shutdown", None); s.wait(lambda m: m.get("id") == rid)
    s.notify("exit", None); s.p.wait(timeout=10)
    print(json.dumps(r), flush=True)

if __name__ == "__main__":
    main(sys.argv[1:])

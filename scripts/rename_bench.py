#!/usr/bin/env python3
"""A rename with its speculative diagnostics delta (issue 19, SPEC §18), side by side: on a
generated Python project where one function is used in 20 files, Stardust's `rename_preview`
through `stardust mcp` against the same rename's plain `textDocument/rename` sent to
pyright-langserver directly, and against agent-lsp's simulation tools, in one run.

usage: rename_bench.py [--stardust BIN] [--agent-lsp BIN] [--pyright BIN] [-n 30]
                       [--agent-n 5] [--warmup 3]
                       [--systems direct,direct-delta,direct-settled,stardust,lsp,agent-lsp]
                       [--json OUT.json] [--keep]

The fixture: a copy of examples/mixed with a generated package py/bench/: m00.py defines
`apply_rate` and calls it, m01.py .. m19.py import it and call it (2 references each), so the
rename of `apply_rate` to `apply_rate_2` edits 20 files (39 places). Nothing is ever
committed: every sample renames the same text on disk.

The systems (stdlib only; the transports are code_bench.py's):
  direct     the script speaks LSP to `pyright-langserver --stdio`: `textDocument/rename` at
             the definition, answered with a WorkspaceEdit (the baseline: no diagnostics);
  stardust   `stardust mcp --store STORE`, tool `rename_preview {path, position, newName}`:
             the same rename, its 20 diffs, and the speculative delta (the edited texts given
             to pyright as unsaved versions, the diagnostics of the 20 files collected before
             and after, the texts given back); each preview is discarded after it is timed;
  direct-delta  the same rename, then the script itself gives pyright the 20 edited texts
             (`didChange` of open files) and waits until pyright has published for each at its
             version, then gives the texts back and waits again: the floor of a delta on
             pyright (first publication taken, no quiet period, no "before" collection);
  direct-settled  as direct-delta, but each wait lasts until pyright has also reported its
             work done after the last publication (`$/progress` end; 100 ms of quiet if it
             announced none): pyright's first publication for a version is the diagnostics it
             had, its checker's findings follow; the floor of a complete delta on pyright;
  lsp        `stardust lsp --store STORE`, `textDocument/rename` (the editor's path: the
             server's WorkspaceEdit relayed, no delta), to tell the delta from the hops;
  agent-lsp  `agent-lsp python:pyright-langserver,--stdio` (PyPI agent-lsp): what an agent
             does there for the same answer: `rename_symbol` (dry run) for the WorkspaceEdit,
             then `create_simulation_session`, one `simulate_edit` per place (in each file from
             the last place to the first), `evaluate_session` with scope `workspace`, and
             `discard_session` + `destroy_session`; timed as one sample, `rename_symbol`
             alone also reported. Its samples take a minute (its simulation waits for
             each file's baseline and its evaluation waits its own timeout), hence --agent-n
             and no warm-up past the readiness sample.
Every system gets the same workspace root (py/, the directory of py/pyproject.toml) and the
same pyright binary; each answer is checked (20 files) before and during the timed series.
"""
import argparse, json, os, pathlib, shutil, subprocess, sys, tempfile, time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from code_bench import (Rpc, Stardust as CodeStardust, loadavg, mcp_initialize, pct,  # noqa: E402
                        stop_and_reap, tool_text, uri)

REPO = HERE.parent
FILES = 20
OLD, NEW = "apply_rate", "apply_rate_2"
DEF_LINE = 3  # 0-based line of `def apply_rate` in m00.py
DEF_CHAR = 5  # inside the name


def fixture(tmp):
    store = tmp / "store"
    shutil.copytree(REPO / "examples" / "mixed", store,
                    ignore=shutil.ignore_patterns(".stardust", "__pycache__", "node_modules"))
    py = store / "py"
    bench = py / "bench"
    bench.mkdir()
    (bench / "__init__.py").write_text('"""A generated package: one function used in 20 files."""\n')
    (bench / "m00.py").write_text('''"""The rate every module applies."""


def apply_rate(amount: int, rate: float) -> int:
    """`amount` times `rate`, rounded."""
    return round(amount * rate)


def doubled(amount: int) -> int:
    return apply_rate(amount, 2.0)
''')
    for i in range(1, FILES):
        (bench / ("m%02d.py" % i)).write_text('''"""Step %d: applies the rate."""

from bench.m00 import apply_rate


def step_%02d(amount: int) -> int:
    return apply_rate(amount, %s)
''' % (i, i, 1 + i / 100))
    return store, py


def edit_files(edit):
    """{uri: [TextEdit]} of a WorkspaceEdit (`changes` or `documentChanges`)."""
    if edit.get("documentChanges"):
        return {d["textDocument"]["uri"]: d["edits"] for d in edit["documentChanges"]}
    return edit.get("changes") or {}


class Direct:
    name = "direct"

    def __init__(self, cfg, store, py):
        self.cfg, self.py = cfg, py

    def start(self):
        self.rpc = Rpc([self.cfg.pyright, "--stdio"], "lsp", cwd=self.py)
        self.rpc.request("initialize", {
            "processId": os.getpid(), "rootUri": uri(self.py),
            "workspaceFolders": [{"uri": uri(self.py), "name": "py"}],
            "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                             "workspace": {"configuration": True, "workspaceFolders": True,
                                           "workspaceEdit": {"documentChanges": True}},
                             "textDocument": {"rename": {"prepareSupport": True},
                                              "publishDiagnostics": {}},
                             "window": {"workDoneProgress": True}}})
        self.rpc.notify("initialized", {})
        m00 = self.py / "bench" / "m00.py"
        self.rpc.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(m00), "languageId": "python", "version": 1, "text": m00.read_text()}})

    def sample(self):
        msg, dt = self.rpc.request("textDocument/rename", {
            "textDocument": {"uri": uri(self.py / "bench" / "m00.py")},
            "position": {"line": DEF_LINE, "character": DEF_CHAR}, "newName": NEW})
        self.last = msg.get("result") or {}
        return len(edit_files(self.last)), dt, {}

    def stop(self):
        try:
            self.rpc.request("shutdown", None, timeout=10)
            self.rpc.notify("exit")
        except (TimeoutError, EOFError, OSError):
            pass
        self.rpc.close()

    def roots(self):
        return [self.rpc.p.pid]


class Recording(Rpc):
    """An Rpc that keeps the version of each file's latest `publishDiagnostics`."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.published = {}

    def _next_message(self, deadline):
        msg = super()._next_message(deadline)
        if msg.get("method") == "textDocument/publishDiagnostics":
            self.published[msg["params"]["uri"]] = msg["params"].get("version")
        return msg

    def until(self, done, timeout=60):
        """Read (answering the server's requests) until `done()` holds."""
        deadline = time.perf_counter() + timeout
        while not done():
            msg = self._next_message(deadline)
            if "method" in msg and "id" in msg:
                self._answer_server_request(msg)


def apply_edits(text, edits):
    """`text` with LSP TextEdits (ASCII: UTF-16 = characters) applied."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    spans = sorted((starts[e["range"]["start"]["line"]] + e["range"]["start"]["character"],
                    starts[e["range"]["end"]["line"]] + e["range"]["end"]["character"],
                    e["newText"]) for e in edits)
    out, at = [], 0
    for a, b, new in spans:
        out += [text[at:a], new]
        at = b
    return "".join(out) + text[at:]


class DirectDelta(Direct):
    """The floor of a delta on pyright itself, by the script: the rename, then the 20 edited
    texts as `didChange` of open files and the wait until pyright has published for every one
    at its new version, then the texts given back and the same wait. It takes pyright's first
    publication for a version as its answer (no quiet period), and does not collect the
    diagnostics before the edit: a lower bound for what the speculative delta costs."""
    name = "direct-delta"
    transport = Recording
    window = {}

    def start(self):
        self.rpc = self.transport([self.cfg.pyright, "--stdio"], "lsp", cwd=self.py)
        self.rpc.request("initialize", {
            "processId": os.getpid(), "rootUri": uri(self.py),
            "workspaceFolders": [{"uri": uri(self.py), "name": "py"}],
            "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                             "workspace": {"configuration": True, "workspaceFolders": True,
                                           "workspaceEdit": {"documentChanges": True}},
                             "textDocument": {"publishDiagnostics": {"versionSupport": True}},
                             "window": self.window}})
        self.rpc.notify("initialized", {})
        self.versions, self.texts = {}, {}
        for path in sorted((self.py / "bench").glob("m*.py")):
            u = uri(path)
            self.texts[u] = path.read_text()
            self.versions[u] = 1
            self.rpc.notify("textDocument/didOpen", {"textDocument": {
                "uri": u, "languageId": "python", "version": 1, "text": self.texts[u]}})
        self.rpc.until(lambda: all(self.rpc.published.get(u) == 1 for u in self.versions), 120)

    def give(self, texts):
        for u, text in texts.items():
            self.versions[u] += 1
            self.rpc.notify("textDocument/didChange", {
                "textDocument": {"uri": u, "version": self.versions[u]},
                "contentChanges": [{"text": text}]})
        self.rpc.until(lambda: all(self.rpc.published.get(u) == self.versions[u] for u in texts))

    def sample(self):
        t0 = time.perf_counter()
        files, _, _ = Direct.sample(self)
        msg = self.last
        edited = {u: apply_edits(self.texts[u], e) for u, e in edit_files(msg).items()}
        self.give(edited)
        self.give({u: self.texts[u] for u in edited})
        return files, time.perf_counter() - t0, {}


class Settling(Recording):
    """A Recording that also follows pyright's work-done progress: the clock of each
    publication, progress announced (`window/workDoneProgress/create`) or begun and not
    ended, and the clock of the last end."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.clock, self.at, self.working, self.done_at = 0, {}, set(), 0
        self.heard = time.perf_counter()

    def _next_message(self, deadline):
        msg = super()._next_message(deadline)
        self.clock += 1
        self.heard = time.perf_counter()
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "textDocument/publishDiagnostics":
            self.at[params["uri"]] = self.clock
        elif method == "window/workDoneProgress/create":
            self.working.add(json.dumps(params["token"]))
        elif method == "$/progress":
            kind = (params.get("value") or {}).get("kind")
            token = json.dumps(params["token"])
            if kind == "begin":
                self.working.add(token)
            elif kind == "end":
                self.working.discard(token)
                self.done_at = self.clock
        return msg


class DirectSettled(DirectDelta):
    """pyright's own floor for a complete delta: as direct-delta, but each wait lasts until
    every file has a publication at its version and pyright has reported its work done after
    the last of them (or, if it announced no work, stayed quiet for 100 ms), since its first
    publication for a version is the diagnostics it had (its checker's findings follow, 50-85
    ms apart, between `window/workDoneProgress/create` and `$/progress` end)."""
    name = "direct-settled"
    transport = Settling
    # As Stardust's client: pyright then reports its work with `$/progress`.
    window = {"workDoneProgress": True}

    def give(self, texts):
        for u, text in texts.items():
            self.versions[u] += 1
            self.rpc.notify("textDocument/didChange", {
                "textDocument": {"uri": u, "version": self.versions[u]},
                "contentChanges": [{"text": text}]})
        rpc = self.rpc

        def settled():
            if not all(rpc.published.get(u) == self.versions[u] for u in texts):
                return False
            if rpc.working:
                return False
            if rpc.done_at > max(rpc.at[u] for u in texts):
                return True
            return time.perf_counter() - rpc.heard >= 0.1

        deadline = time.perf_counter() + 60
        while not settled():
            try:
                msg = rpc._next_message(min(deadline, time.perf_counter() + 0.01))
                if "method" in msg and "id" in msg:
                    rpc._answer_server_request(msg)
            except TimeoutError:
                if time.perf_counter() > deadline:
                    raise
                continue


class Stardust(CodeStardust):
    """`rename_preview` through `stardust mcp` (the background core it starts, stopped between
    systems); each preview discarded after its sample."""
    name = "stardust"

    def __init__(self, cfg, store, py):
        super().__init__(cfg, (store, py, {}, {}))

    def sample(self):
        args = {"path": "py/bench/m00.py",
                "position": {"line": DEF_LINE + 1, "column": DEF_CHAR + 1}, "newName": NEW}
        msg, dt = self.rpc.request("tools/call", {"name": "rename_preview", "arguments": args})
        if tool_text(msg) is None:
            return 0, dt, {"error": json.dumps(msg)[:300]}
        preview = msg["result"]["structuredContent"]
        self.rpc.request("tools/call", {"name": "preview_discard",
                                        "arguments": {"previewId": preview["previewId"]}})
        delta = preview.get("diagnostics") or {}
        return len(preview["documents"]), dt, {
            "new": len(delta.get("new", [])), "resolved": len(delta.get("resolved", [])),
            "unknown": bool(preview.get("diagnosticsUnknown"))}


class Lsp(CodeStardust):
    """`textDocument/rename` through `stardust lsp` (the editor's path, no delta)."""
    name = "lsp"

    def __init__(self, cfg, store, py):
        super().__init__(cfg, (store, py, {}, {}))
        self.store, self.py = store, py

    def start(self):
        self.stop_core()
        self.rpc = Rpc([self.cfg.stardust, "lsp", "--store", str(self.store)], "lsp", env=self.env)
        self.rpc.request("initialize", {"processId": os.getpid(), "rootUri": uri(self.store),
                                        "capabilities": {"workspace": {"workspaceEdit": {
                                            "documentChanges": True}}}})
        self.rpc.notify("initialized", {})
        m00 = self.py / "bench" / "m00.py"
        self.rpc.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(m00), "languageId": "python", "version": 1, "text": m00.read_text()}})

    def sample(self):
        msg, dt = self.rpc.request("textDocument/rename", {
            "textDocument": {"uri": uri(self.py / "bench" / "m00.py")},
            "position": {"line": DEF_LINE, "character": DEF_CHAR}, "newName": NEW})
        return len(edit_files(msg.get("result") or {})), dt, {}


class AgentLsp:
    name = "agent-lsp"

    def __init__(self, cfg, store, py):
        self.cfg, self.py = cfg, py

    def tool(self, name, args, timeout=300):
        msg, dt = self.rpc.request("tools/call", {"name": name, "arguments": args}, timeout)
        text = tool_text(msg)
        if text is None:
            raise RuntimeError("agent-lsp %s: %s" % (name, json.dumps(msg)[:400]))
        return text, dt

    def start(self):
        self.rpc = Rpc([self.cfg.agent_lsp, "python:%s,--stdio" % self.cfg.pyright], "ndjson",
                       cwd=self.py, stderr=open(self.cfg.tmp / "agent-lsp.log", "a"))
        self.version = mcp_initialize(self.rpc).get("serverInfo", {}).get("version")
        self.tool("start_lsp", {"root_dir": str(self.py), "language_id": "python",
                                "ready_timeout_seconds": 60})

    def rename(self):
        text, dt = self.tool("rename_symbol", {
            "file_path": str(self.py / "bench" / "m00.py"), "line": DEF_LINE + 1,
            "column": DEF_CHAR + 1, "new_name": NEW, "dry_run": True})
        return edit_files(json.loads(text.split("\n", 1)[0])["workspace_edit"]), dt

    def sample(self):
        t0 = time.perf_counter()
        files, rename_dt = self.rename()
        text, _ = self.tool("create_simulation_session", {"workspace_root": str(self.py),
                                                          "language": "python"})
        sid = text.split("session_id=")[1].split()[0]
        for file_uri, edits in files.items():
            path = pathlib.Path(file_uri[len("file://"):])
            # From the last place to the first, so the places before stay where they were.
            for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"],
                                                  e["range"]["start"]["character"]), reverse=True):
                s, t = e["range"]["start"], e["range"]["end"]
                self.tool("simulate_edit", {
                    "session_id": sid, "file_path": str(path), "start_line": s["line"] + 1,
                    "start_column": s["character"] + 1, "end_line": t["line"] + 1,
                    "end_column": t["character"] + 1, "new_text": e["newText"]})
        verdict, _ = self.tool("evaluate_session", {"session_id": sid, "scope": "workspace"})
        self.tool("discard_session", {"session_id": sid})
        self.tool("destroy_session", {"session_id": sid})
        dt = time.perf_counter() - t0
        fields = dict(l.split("=", 1) for l in verdict.splitlines() if "=" in l)
        return len(files), dt, {"rename_ms": rename_dt * 1000, "net_delta": fields.get("NetDelta"),
                                "confidence": fields.get("Confidence"),
                                "timeout": fields.get("Timeout")}

    def stop(self):
        self.rpc.close()

    def roots(self):
        return [self.rpc.p.pid]


SYSTEMS = {"direct": Direct, "direct-delta": DirectDelta, "direct-settled": DirectSettled,
           "stardust": Stardust, "lsp": Lsp, "agent-lsp": AgentLsp}


def series(system, n, warmup):
    # Ready first: the server has loaded the project once a rename edits all 20 files.
    end = time.perf_counter() + 180
    while True:
        files, _, extra = system.sample()
        if files == FILES:
            break
        if time.perf_counter() > end:
            raise RuntimeError("%s: the rename edits %d files, not %d (%s)"
                               % (system.name, files, FILES, extra))
        time.sleep(0.5)
    for _ in range(warmup):
        system.sample()
    times, extras = [], []
    for _ in range(n):
        files, dt, extra = system.sample()
        if files != FILES:
            raise RuntimeError("%s: a timed rename edited %d files (%s)" % (system.name, files, extra))
        times.append(dt * 1000)
        extras.append(extra)
    out = {"p50": pct(times, 0.5), "p95": pct(times, 0.95), "max": max(times), "n": len(times),
           "extras": extras}
    print("    %s: p50 %.1f p95 %.1f ms (n %d) %s" % (system.name, out["p50"], out["p95"], n,
                                                   extras[0]), file=sys.stderr, flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stardust", default="/work/main/target/release/stardust")
    ap.add_argument("--agent-lsp", dest="agent_lsp", default="/tmp/agentlsp-venv/bin/agent-lsp")
    ap.add_argument("--pyright", default=shutil.which("pyright-langserver") or "/usr/bin/pyright-langserver")
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--agent-n", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--systems", default="direct,direct-delta,direct-settled,stardust,lsp,agent-lsp")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--stardust-log", dest="stardust_log",
                    help="RUST_LOG for Stardust (its stderr kept in the temp dir; see --keep)")
    cfg = ap.parse_args()
    cfg.systems = cfg.systems.split(",")
    cfg.tmp = pathlib.Path(tempfile.mkdtemp(prefix="rename_bench."))
    cfg.xdg = cfg.tmp / "xdg"
    cfg.xdg.mkdir()
    store, py = fixture(cfg.tmp)
    report = {"load_before": loadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "n": cfg.n, "agent_n": cfg.agent_n, "warmup": cfg.warmup, "systems": {}}
    try:
        if "stardust" in cfg.systems or "lsp" in cfg.systems:
            Stardust(cfg, store, py).trust()
        for name in cfg.systems:
            s = SYSTEMS[name](cfg, store, py)
            print("%s (load %s)" % (name, " ".join(loadavg())), file=sys.stderr, flush=True)
            s.start()
            try:
                n = cfg.agent_n if name == "agent-lsp" else cfg.n
                report["systems"][name] = series(s, n, 0 if name == "agent-lsp" else cfg.warmup)
                if name == "agent-lsp":
                    report["agent_lsp_version"] = s.version
            finally:
                stop_and_reap(s)
    finally:
        report["load_after"] = loadavg()
        if not cfg.keep:
            shutil.rmtree(cfg.tmp, ignore_errors=True)
    if cfg.json:
        pathlib.Path(cfg.json).write_text(json.dumps(report, indent=1))
    print(markdown(report))


def markdown(report):
    out = ["load average before %s, after %s; %d warm-up samples, then N timed renames each"
           % (" ".join(report["load_before"]), " ".join(report["load_after"]), report["warmup"]),
           "", "| system | what one sample is | N | p50 (ms) | p95 (ms) | p50 / direct |",
           "|---|---|---|---|---|---|"]
    what = {"direct": "`textDocument/rename` to pyright (no diagnostics)",
            "stardust": "`rename_preview` via `stardust mcp`: 20 diffs + speculative delta",
            "lsp": "`textDocument/rename` via `stardust lsp` (no delta)",
            "direct-delta": "the rename + 20 edited texts to pyright and back, first publication each",
            "direct-settled": "as direct-delta, each wait until pyright reports its work done",
            "agent-lsp": "`rename_symbol` + simulation session (%s places) + `evaluate_session` (workspace)"
                         % "39"}
    base = report["systems"].get("direct", {}).get("p50")
    for name, r in report["systems"].items():
        ratio = "%.1fx" % (r["p50"] / base) if base else "-"
        out.append("| %s | %s | %d | %.1f | %.1f | %s |" % (name, what[name], r["n"], r["p50"],
                                                            r["p95"], ratio))
    sd = report["systems"].get("stardust")
    if sd:
        e = sd["extras"][0]
        out += ["", "Stardust's delta: %d new, %d resolved, unknown %s" % (e["new"], e["resolved"], e["unknown"])]
    al = report["systems"].get("agent-lsp")
    if al:
        rn = sorted(x["rename_ms"] for x in al["extras"])
        out += ["agent-lsp %s: `rename_symbol` alone p50 %.1f ms; its verdict %s"
                % (report.get("agent_lsp_version"), rn[len(rn) // 2],
                   {k: al["extras"][0][k] for k in ("net_delta", "confidence", "timeout")})]
    return "\n".join(out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Code files, side by side (issue 18): hover, definition and references on the same pyright
and the same fixture, through direct LSP, Stardust's MCP tools, mcpls and Deixis, in one run.

usage: code_bench.py [--stardust BIN] [--mcpls BIN] [--deixis BIN] [--pyright BIN]
                     [-n 200] [--warmup 20] [--rounds 2] [--cold 3]
                     [--fixtures small,large] [--systems direct,stardust,mcpls,deixis]
                     [--no-memory] [--json OUT.json] [--keep]
       code_bench.py --complete [--cold 3] [--systems stardust,mcpls,deixis] [--json OUT.json]
                     [--stardust-before OTHER_BIN]

--complete (issue 35, SPEC §25) measures instead, on a generated project of 500 modules
importing each other (the same as tests/code_ready.rs), from a cold start of each system
(no process of it alive, spawned at t = 0, asked at once and again every 50 ms):
  - the time to the first COMPLETE answer of `references` (f0100 at its definition: the
    definition, 4 imports and 4 calls = 9 locations) and of a rename (f0200: its module and the
    4 that import it, 9 edits), counting an incomplete answer as wrong: an answer that lists
    fewer places, or (Stardust) one marked `complete: false` or not committable; an error
    (Stardust's `busy`, a peer's "not ready") is no answer and is asked again;
  - each system's completeness rate: complete answers / all answers it gave;
  - the first hover after a 2 s pause (an agent thinking) from the spawn, on a module no
    request opened before (cold-run median; Stardust warms pyright up when a session attaches);
  - memory: one Stardust core with the warm-up done (one agent, no request) against one
    process tree of each peer with pyright running, and the core again once `idle_stop`
    (5 s here) has stopped its idle pyright.

What it measures (stdlib only, no dependencies):
  - warm latency: after a warm-up, N requests each of hover, definition and references at
    fixed places of the fixture, one after another; p50 / p95 / max of the time from writing
    the request to reading its answer. Rounds alternate the order of the systems. A series
    that passes --budget seconds stops early (at least 10 samples; the table gives its n).
  - cold start: from spawning the process to the first hover that answers with the expected
    text (retried every 10 ms while the answer is empty or an error, for every system alike),
    median of --cold runs; no process of the system is alive before each run.
  - memory: Stardust with one editor (`stardust lsp`: initialize, didOpen, one hover) and three
    agents (`stardust mcp`, one hover each) on one store, against three mcpls and three Deixis
    each with one hover; the pyright processes counted and the RSS (and PSS) of every process
    tree summed from /proc.

Fixtures: `small` is a copy of examples/mixed (py/shop/pricing.py and catalog.py); `large` is
another copy with a generated package py/big/ of 200 modules importing each other.

The systems:
  direct    the script speaks LSP to `pyright-langserver --stdio` itself (the baseline);
  stardust  `stardust mcp --store STORE`, tools `hover` / `definition` / `references` with
            {path, position: {line, column}} (1-based); the store trusted in a private
            XDG_CONFIG_HOME, the background core stopped between runs;
  inproc    (not in the default set) the same on a copy of the store where no core can start,
            so `stardust mcp` serves it from its own process: Stardust without the hop;
  joined    (not in the default set) a new agent's `stardust mcp` on a store whose core already
            serves pyright to another session (an editor's, another agent's): its cold start
            is the join, timed from its spawn like every other system's;
  mcpls     `mcpls --config CFG`, tools `get_hover` / `get_definition` / `get_references`
            with {file_path (absolute), line, character} (1-based);
  deixis    `deixis --root ROOT --config CFG`, tools `hover` / `definition` / `references` with
            {path, position: {line, character}} (0-based, UTF-8).
Neither mcpls 0.6 nor Deixis has a `settings` key: their pyright answers workspace/configuration
with their defaults; the settings direct and Stardust send (typeCheckingMode "standard") are
pyright's default, so all four run pyright the same way.
Every system gets the same workspace root (the directory of py/pyproject.toml, which is the
root Stardust gives pyright from its root_markers) and the same pyright binary.
"""
import argparse, json, os, pathlib, select, shutil, signal, statistics, subprocess, sys, tempfile, time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
MCP_VERSION = "2025-06-18"
MIN_SAMPLES = 10
RETRY = 0.01  # seconds between tries while a system is not ready
SETTINGS = {"python": {"analysis": {"typeCheckingMode": "standard"}}}


# --- transports -------------------------------------------------------------------------

class Rpc:
    """A JSON-RPC peer on a child's stdio, read in the calling thread (no reader thread, so no
    hand-off between threads in the timed path). `framing` is "lsp" (Content-Length headers)
    or "ndjson" (MCP stdio: one message a line)."""

    def __init__(self, cmd, framing, env=None, cwd=None, stderr=None):
        self.framing = framing
        self.t_spawn = time.perf_counter()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=stderr or subprocess.DEVNULL, env=env, cwd=cwd,
                                  bufsize=0)
        self.fd = self.p.stdout.fileno()
        self.buf = b""
        self.next_id = 0
        self.notes = []          # notifications seen (method names), for the curious

    def _write(self, msg):
        body = json.dumps(msg).encode()
        if self.framing == "lsp":
            data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        else:
            data = body + b"\n"
        self.p.stdin.write(data)

    def _fill(self, deadline):
        left = deadline - time.perf_counter()
        if left <= 0:
            raise TimeoutError("no answer in time")
        r, _, _ = select.select([self.fd], [], [], left)
        if not r:
            raise TimeoutError("no answer in time")
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            raise EOFError("the process closed its stdout (exit %s)" % self.p.poll())
        self.buf += chunk

    def _next_message(self, deadline):
        while True:
            if self.framing == "lsp":
                end = self.buf.find(b"\r\n\r\n")
                if end >= 0:
                    length = None
                    for line in self.buf[:end].split(b"\r\n"):
                        k, _, v = line.partition(b":")
                        if k.strip().lower() == b"content-length":
                            length = int(v)
                    if len(self.buf) >= end + 4 + length:
                        body = self.buf[end + 4:end + 4 + length]
                        self.buf = self.buf[end + 4 + length:]
                        return json.loads(body)
            else:
                nl = self.buf.find(b"\n")
                if nl >= 0:
                    line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                    if line.strip():
                        return json.loads(line)
                    continue
            self._fill(deadline)

    def _answer_server_request(self, msg):
        method = msg["method"]
        result = None
        if method == "workspace/configuration":
            result = []
            for item in msg["params"].get("items", []):
                node = SETTINGS
                for part in (item.get("section") or "").split("."):
                    if part:
                        node = node.get(part) if isinstance(node, dict) else None
                result.append(node)
        elif method == "roots/list":
            result = {"roots": []}
        elif method == "ping":
            result = {}
        self._write({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)

    def request(self, method, params, timeout=120):
        """Send one request and read until its answer: (message, seconds)."""
        self.next_id += 1
        rid = self.next_id
        t0 = time.perf_counter()
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = t0 + timeout
        while True:
            msg = self._next_message(deadline)
            if "method" in msg:
                if "id" in msg:
                    self._answer_server_request(msg)
                else:
                    self.notes.append(msg["method"])
                    if len(self.notes) > 1000:
                        del self.notes[:500]
                continue
            if msg.get("id") == rid:
                return msg, time.perf_counter() - t0

    def close(self, grace=5):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(grace)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def uri(path):
    return pathlib.Path(path).resolve().as_uri()


# --- the fixtures -----------------------------------------------------------------------

def place(root, rel, line_has, token, nth=0):
    """The position of `token` (its second character) on the first line containing
    `line_has` in file `rel`: a dict with 0-based `line`/`char` (ASCII: UTF-8 = UTF-16 =
    characters) for LSP and Deixis, the file, and its absolute path."""
    text = (root / rel).read_text()
    for i, line in enumerate(text.split("\n")):
        if line_has in line:
            col = -1
            for _ in range(nth + 1):
                col = line.index(token, col + 1)
            assert line.isascii()
            return {"rel": rel, "line": i, "char": col + 1}
    raise SystemExit("fixture: no line with %r in %s" % (line_has, rel))


def make_large(py):
    """py/big/: 200 modules. Module i defines step_i, calling step_(i-1) and two earlier steps
    it imports; every fourth module also calls core.convert (so `convert` has 50 calls + 50
    imports + its definition = 101 references across 51 files)."""
    big = py / "big"
    big.mkdir()
    (big / "__init__.py").write_text('"""A generated package: 200 modules importing each other."""\n')
    (big / "core.py").write_text('''"""Money and the conversion every fourth step uses."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Money:
    cents: int
    currency: str = "EUR"

    def scaled(self, factor: float) -> "Money":
        """This amount times `factor`, rounded to the cent."""
        return Money(round(self.cents * factor), self.currency)


def convert(amount: Money, rate: float) -> Money:
    """`amount` at exchange `rate`, in the same currency label."""
    return amount.scaled(rate)
''')
    for i in range(200):
        deps = sorted({i - 1, (i * 7) // 11, i // 3} - {i}) if i else []
        deps = [d for d in deps if d >= 0]
        lines = ['"""Step %d of the generated pipeline."""' % i, "",
                 "from big.core import Money" + (", convert" if i % 4 == 0 else "")]
        for d in deps:
            lines.append("from big.m%03d import step_%03d" % (d, d))
        lines += ["", "",
                  "class Stage%03d:" % i,
                  '    """Holds the factor of step %d."""' % i,
                  "",
                  "    factor: float = %s" % (1 + i / 1000),
                  "",
                  "",
                  "def step_%03d(m: Money) -> Money:" % i,
                  '    """Step %d: its dependencies, then its own factor."""' % i]
        expr = "m"
        for d in deps:
            expr = "step_%03d(%s)" % (d, expr)
        if i % 4 == 0:
            expr = "convert(%s, Stage%03d.factor)" % (expr, i)
        else:
            expr = "%s.scaled(Stage%03d.factor)" % (expr, i)
        lines += ["    return " + expr, ""]
        (big / ("m%03d.py" % i)).write_text("\n".join(lines))


def fixture(kind, tmp):
    """Copy examples/mixed to tmp/<kind>/store (plus py/big for `large`); the places asked."""
    store = tmp / kind / "store"
    shutil.copytree(REPO / "examples" / "mixed", store,
                    ignore=shutil.ignore_patterns(".stardust", "__pycache__", "node_modules"))
    py = store / "py"
    if kind == "large":
        make_large(py)
        places = {
            # a call of step_149 in m150: hover its signature, definition in m149.py
            "hover": place(py, "big/m150.py", "return ", "step_149"),
            "definition": place(py, "big/m150.py", "return ", "step_149"),
            # convert at its definition: 101 references across 51 files
            "references": place(py, "big/core.py", "def convert", "convert"),
        }
        expect = {"hover": "step_149", "definition": "m149.py", "references": 101}
    else:
        places = {
            # VAT_PERCENT as with_tax's default: hover says `int`, definition is line 3
            "hover": place(py, "shop/pricing.py", "def with_tax", "VAT_PERCENT"),
            "definition": place(py, "shop/pricing.py", "def with_tax", "VAT_PERCENT"),
            # with_tax at its definition: pricing.py, catalog.py (import, call), __init__.py
            "references": place(py, "shop/pricing.py", "def with_tax", "with_tax"),
        }
        expect = {"hover": "VAT_PERCENT", "definition": "pricing.py", "references": 5}
    return store, py, places, expect


# --- the generated project of --complete (the same as tests/code_ready.rs) ----------------

MODULES = 500


def deps(i):
    return sorted({j for j in (i - 1, i // 2, i - 7) if 0 <= j < i})


def importers(i):
    return [k for k in range(MODULES) if i in deps(k)]


def make_project(tmp):
    """tmp/complete/store with py/: pkg/core.py and 500 modules pkg/mNNNN.py, each defining
    fNNNN that calls those of `deps`, and five classes; the store's pyright table. The store,
    py/, and the 0-based places asked (f0100 and f0200 at their definitions, f0300's call)."""
    store = tmp / "complete" / "store"
    pkg = store / "py" / "pkg"
    pkg.mkdir(parents=True)
    (store / "py" / "pyproject.toml").write_text("[tool.pyright]\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text("def shared_helper(x: int) -> int:\n    return x + 1\n")
    for i in range(MODULES):
        lines = ["from pkg.core import shared_helper"]
        lines += ["from pkg.m%04d import f%04d" % (j, j) for j in deps(i)]
        calls = "".join("f%04d(x) + " % j for j in deps(i))
        lines += ["", "", "def f%04d(x: int) -> int:" % i, "    return %sshared_helper(x)" % calls]
        for k in range(5):
            lines += ["", "", "class C%dx%d:" % (i, k), "    def m(self, y: int) -> int:",
                      "        return y * %d" % k]
        (pkg / ("m%04d.py" % i)).write_text("\n".join(lines) + "\n")
    (store / "stardust.toml").write_text(
        "[store]\n[servers.pyright]\ncommand = \"pyright-langserver\"\nargs = [\"--stdio\"]\n"
        "languages = { py = \"python\" }\nroot_markers = [\"pyproject.toml\"]\n"
        "settings = { python = { analysis = { typeCheckingMode = \"standard\" } } }\nidle_stop = 5\n")
    py = store / "py"
    defline = lambda i: len(deps(i)) + 3
    places = {
        "references": {"rel": "pkg/m0100.py", "line": defline(100), "char": 4},
        "rename": {"rel": "pkg/m0200.py", "line": defline(200), "char": 4},
        # f0299 as m0300 calls it: its return line
        "hover": {"rel": "pkg/m0300.py", "line": defline(300) + 1, "char": 11},
    }
    expect = {"hover": "f%04d" % deps(300)[0], "references": 1 + 2 * len(importers(100)),
              "rename": sorted(["m%04d.py" % k for k in [200] + importers(200)])}
    return store, py, places, expect


# --- the systems ------------------------------------------------------------------------

def mcp_initialize(rpc, timeout=120):
    msg, _ = rpc.request("initialize", {
        "protocolVersion": MCP_VERSION, "capabilities": {},
        "clientInfo": {"name": "code_bench", "version": "1"}}, timeout)
    if "error" in msg:
        raise RuntimeError("initialize: %s" % msg["error"])
    rpc.notify("notifications/initialized")
    return msg["result"]


def tool_text(msg):
    """An MCP tool answer as one string (structured content and text), or None if an error."""
    if "error" in msg:
        return None
    res = msg["result"]
    if res.get("isError"):
        return None
    parts = [json.dumps(res["structuredContent"], separators=(",", ":"))] \
        if res.get("structuredContent") else []
    parts += [c.get("text", "") for c in res.get("content", []) if c.get("type") == "text"]
    return "\n".join(parts)


class Direct:
    name = "direct"

    def __init__(self, cfg, fx):
        self.cfg, self.fx = cfg, fx

    def start(self):
        store, py, places, _ = self.fx
        self.rpc = Rpc([self.cfg.pyright, "--stdio"], "lsp", cwd=py)
        msg, _ = self.rpc.request("initialize", {
            "processId": os.getpid(), "rootUri": uri(py),
            "workspaceFolders": [{"uri": uri(py), "name": "py"}],
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {"configuration": True, "workspaceFolders": True},
                "textDocument": {
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "definition": {"linkSupport": False},
                    "references": {},
                    "synchronization": {"didSave": True},
                    "publishDiagnostics": {}},
                "window": {"workDoneProgress": True}}})
        # pyright asks workspace/configuration itself (answered with SETTINGS); a
        # didChangeConfiguration here would make it rebuild its workspace once more.
        self.rpc.notify("initialized", {})
        self.opened = set()
        for p in places.values():
            if p["rel"] not in self.opened:
                self.opened.add(p["rel"])
                self.rpc.notify("textDocument/didOpen", {"textDocument": {
                    "uri": uri(py / p["rel"]), "languageId": "python", "version": 1,
                    "text": (py / p["rel"]).read_text()}})

    def call(self, kind):
        py, p = self.fx[1], self.fx[2][kind]
        params = {"textDocument": {"uri": uri(py / p["rel"])},
                  "position": {"line": p["line"], "character": p["char"]}}
        method = {"hover": "textDocument/hover", "definition": "textDocument/definition",
                  "references": "textDocument/references"}[kind]
        if kind == "references":
            params["context"] = {"includeDeclaration": True}
        msg, dt = self.rpc.request(method, params)
        if "error" in msg or msg.get("result") is None:
            return None, dt
        return json.dumps(msg["result"]), dt

    def stop(self):
        try:
            self.rpc.request("shutdown", None, timeout=10)
            self.rpc.notify("exit")
        except (TimeoutError, EOFError, OSError):
            pass
        self.rpc.close()

    def roots(self):
        return [self.rpc.p.pid]


class Stardust:
    name = "stardust"

    def __init__(self, cfg, fx):
        self.cfg, self.fx = cfg, fx
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(cfg.xdg), STARDUST_IDLE_EXIT="2")
        self.env.pop("RUST_LOG", None)
        if cfg.stardust_log:
            self.env["RUST_LOG"] = cfg.stardust_log

    def trust(self):
        store = self.fx[0]
        subprocess.run([self.cfg.stardust, "trust", str(store)], env=self.env, check=True,
                       stdout=subprocess.DEVNULL)

    def daemon_pid(self):
        try:
            return json.loads((self.fx[0] / ".stardust/run/daemon.json").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            return None

    def start(self):
        self.stop_core()
        self.log = open(self.cfg.tmp / ("stardust-%d.log" % time.time_ns()), "w") \
            if self.cfg.stardust_log else None
        self.rpc = Rpc([self.cfg.stardust, "mcp", "--store", str(self.fx[0])], "ndjson",
                       env=self.env, stderr=self.log)
        mcp_initialize(self.rpc)

    def args(self, kind):
        p = self.fx[2][kind]
        a = {"path": "py/" + p["rel"], "position": {"line": p["line"] + 1, "column": p["char"] + 1}}
        if kind == "references":
            a["limit"] = 500
        return a

    def call(self, kind):
        msg, dt = self.rpc.request("tools/call", {"name": kind, "arguments": self.args(kind)})
        return tool_text(msg), dt

    def noop(self):
        """A tool call the core answers without the language server (`server_status`): the
        cost of the MCP front, the socket and the core's dispatch alone."""
        msg, dt = self.rpc.request("tools/call", {"name": "server_status", "arguments": {}})
        if tool_text(msg) is None:
            raise RuntimeError("stardust server_status: %s" % msg)
        return dt

    def stop(self):
        self.rpc.close()
        self.stop_core()

    def stop_core(self):
        """Stop the store's background core (SIGTERM by its recorded pid) and wait until it
        and its servers are gone."""
        pid = self.daemon_pid()
        if pid and alive(pid):
            tree = descendants(pid)
            os.kill(pid, signal.SIGTERM)
            wait_gone([pid] + tree, 15)

    def roots(self):
        pid = self.daemon_pid()
        return [self.rpc.p.pid] + ([pid] if pid else [])


class InProcess(Stardust):
    """`stardust mcp` serving the store from its own process, the fallback when no core can run
    (here `.stardust/run` is a file in a copy of the store, so none can start): the same MCP
    front and core with no hop between processes, to tell what the hop costs."""
    name = "inproc"
    copies = {}

    def __init__(self, cfg, fx):
        store = fx[0]
        if store not in InProcess.copies:
            copy = store.parent / "store-inproc"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(store, copy, ignore=shutil.ignore_patterns(".stardust"))
            (copy / ".stardust").mkdir()
            (copy / ".stardust" / "run").write_text("not a folder: no core can start here\n")
            InProcess.copies[store] = (copy, copy / "py", fx[2], fx[3])
            super().__init__(cfg, InProcess.copies[store])
            self.trust()
        super().__init__(cfg, InProcess.copies[store])


class Joined(Stardust):
    """A new agent's `stardust mcp` on a store whose core already serves pyright to another
    session (an editor, or another agent; here an agent that hovered once and stays): the
    cold start of an agent that joins a project already open, where every other bridge starts
    its own language server."""
    name = "joined"

    def start(self):
        self.stop_core()
        self.keeper = Rpc([self.cfg.stardust, "mcp", "--store", str(self.fx[0])], "ndjson",
                          env=self.env)
        mcp_initialize(self.keeper)
        end = time.perf_counter() + 120
        while True:
            msg, _ = self.keeper.request("tools/call", {"name": "hover", "arguments": self.args("hover")})
            if check("hover", tool_text(msg), self.fx[3]):
                break
            if time.perf_counter() > end:
                raise RuntimeError("joined: the first session's hover never answered")
            time.sleep(RETRY)
        self.rpc = Rpc([self.cfg.stardust, "mcp", "--store", str(self.fx[0])], "ndjson", env=self.env)
        mcp_initialize(self.rpc)

    def stop(self):
        self.rpc.close()
        self.keeper.close()
        self.stop_core()

    def roots(self):
        return [self.keeper.p.pid] + super().roots()


class Mcpls:
    name = "mcpls"

    def __init__(self, cfg, fx):
        self.cfg, self.fx = cfg, fx
        py = fx[1]
        self.config = cfg.tmp / ("mcpls-%s.toml" % py.parent.parent.name)
        self.config.write_text(
            "[workspace]\nroots = [%s]\n\n[[lsp_servers]]\nlanguage_id = \"python\"\n"
            "command = %s\nargs = [\"--stdio\"]\nfile_patterns = [\"**/*.py\"]\n"
            % (json.dumps(str(py)), json.dumps(cfg.pyright)))

    def start(self):
        self.rpc = Rpc([self.cfg.mcpls, "--config", str(self.config)], "ndjson", cwd=self.fx[1],
                       stderr=self.cfg.peer_log("mcpls"))
        mcp_initialize(self.rpc)

    def call(self, kind):
        p = self.fx[2][kind]
        a = {"file_path": str(self.fx[1] / p["rel"]), "line": p["line"] + 1,
             "character": p["char"] + 1}
        if kind == "references":
            a["include_declaration"] = True
        name = {"hover": "get_hover", "definition": "get_definition",
                "references": "get_references"}[kind]
        msg, dt = self.rpc.request("tools/call", {"name": name, "arguments": a})
        return tool_text(msg), dt

    def stop(self):
        self.rpc.close()

    def roots(self):
        return [self.rpc.p.pid]


class Deixis:
    name = "deixis"

    def __init__(self, cfg, fx):
        self.cfg, self.fx = cfg, fx
        self.config = cfg.tmp / ("deixis-%s.toml" % fx[1].parent.parent.name)
        self.config.write_text(
            "[servers.pyright]\ncommand = %s\nargs = [\"--stdio\"]\n"
            "file_extensions = { \".py\" = \"python\" }\n"
            % json.dumps(cfg.pyright))

    def start(self):
        self.rpc = Rpc([self.cfg.deixis, "--root", str(self.fx[1]), "--config", str(self.config)],
                       "ndjson", cwd=self.fx[1], stderr=self.cfg.peer_log("deixis"))
        mcp_initialize(self.rpc)

    def call(self, kind):
        p = self.fx[2][kind]
        a = {"path": p["rel"], "position": {"line": p["line"], "character": p["char"]}}
        if kind == "references":
            a["includeDeclaration"] = True
            a["limit"] = 500
        msg, dt = self.rpc.request("tools/call", {"name": kind, "arguments": a})
        return tool_text(msg), dt

    def stop(self):
        self.rpc.close()

    def roots(self):
        return [self.rpc.p.pid]


class StardustBefore(Stardust):
    """Stardust from another build (--stardust-before), beside the one measured: a before and
    after in one run."""
    name = "stardust-before"

    def __init__(self, cfg, fx):
        super().__init__(cfg, fx)
        self.cfg = argparse.Namespace(**dict(vars(cfg), stardust=cfg.stardust_before))


SYSTEMS = {"direct": Direct, "stardust": Stardust, "inproc": InProcess, "joined": Joined,
           "mcpls": Mcpls, "deixis": Deixis, "stardust-before": StardustBefore}


# --- /proc ------------------------------------------------------------------------------

def alive(pid):
    try:
        st = pathlib.Path("/proc/%d/stat" % pid).read_text()
        return st.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def procs():
    """pid -> (ppid, comm, cmdline) of every process."""
    out = {}
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            st = (d / "stat").read_text()
            comm = st[st.index("(") + 1:st.rindex(")")]
            ppid = int(st.rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            out[int(d.name)] = (ppid, comm, cmd)
        except (OSError, ValueError, IndexError):
            pass
    return out


def descendants(pid, table=None):
    table = table or procs()
    kids = {}
    for p, (pp, _, _) in table.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def wait_gone(pids, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    for p in pids:
        if alive(p):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    return False


def stop_and_reap(system):
    """Stop a system and wait until every process it started is gone (SIGKILL after 10 s), so
    the next measurement starts on a machine without it."""
    tree = [p for r in system.roots() for p in [r] + descendants(r)]
    system.stop()
    wait_gone(tree, 10)


def mem_kib(pid):
    """(RSS, PSS) of one process in KiB."""
    rss = pss = 0
    try:
        for line in pathlib.Path("/proc/%d/status" % pid).read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        for line in pathlib.Path("/proc/%d/smaps_rollup" % pid).read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def is_pyright(entry):
    _, comm, cmd = entry
    return comm.startswith("node") and "pyright" in cmd


def tree_report(roots):
    """Every process of the trees under `roots`: count of pyright instances (a pyright process
    whose parent is not one), processes, and summed RSS / PSS in MiB."""
    table = procs()
    members = set()
    for r in roots:
        if r in table:
            members.add(r)
            members.update(descendants(r, table))
    pyrights = [p for p in members if is_pyright(table[p])]
    instances = [p for p in pyrights if not is_pyright(table.get(table[p][0], (0, "", "")))]
    rss = pss = 0
    for p in members:
        a, b = mem_kib(p)
        rss += a
        pss += b
    return {"pyright_instances": len(instances), "pyright_processes": len(pyrights),
            "processes": len(members), "rss_mib": rss / 1024, "pss_mib": pss / 1024,
            "detail": sorted("%d %s %s" % (p, table[p][1], table[p][2][:80]) for p in members)}


# --- measuring --------------------------------------------------------------------------

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def check(kind, text, expect):
    if not text:
        return False
    if kind == "references":
        return ref_count(text) >= expect["references"]
    return expect[kind] in text


def ref_count(text):
    """How many locations a references answer holds: its structured part (the first line, see
    `tool_text`) holds one "range" (LSP, Stardust, Deixis) or one "line" key per location."""
    first = (text or "").split("\n", 1)[0]
    return max(first.count('"range"'), first.count('"start"'))


def warm(system, kinds, n, warmup, expect, budget):
    out = {}
    for kind in kinds:
        # Ready first (a bridge may answer "still initializing"), then the warm-up.
        end = time.perf_counter() + 180
        while True:
            first, _ = system.call(kind)
            if check(kind, first, expect):
                break
            if time.perf_counter() > end:
                raise RuntimeError("%s %s: unexpected answer %r" % (system.name, kind, (first or "")[:300]))
            time.sleep(RETRY)
        t_warm = time.perf_counter()
        for _ in range(warmup):
            system.call(kind)
            if time.perf_counter() - t_warm > budget / 3:
                break
        times = []
        t_series = time.perf_counter()
        for _ in range(n):
            text, dt = system.call(kind)
            if text is None:
                raise RuntimeError("%s %s: an error answer during the timed run" % (system.name, kind))
            times.append(dt * 1000)
            # A system that takes seconds per answer would hold the run for hours: past the
            # budget, its series stops (at least MIN_SAMPLES) and the table says how many.
            if time.perf_counter() - t_series > budget and len(times) >= MIN_SAMPLES:
                break
        print("    %s %s: p50 %.2f p95 %.2f ms (n %d)" % (system.name, kind, pct(times, 0.5),
                                                      pct(times, 0.95), len(times)),
              file=sys.stderr, flush=True)
        out[kind] = {"p50": pct(times, 0.5), "p95": pct(times, 0.95), "max": max(times),
                     "mean": statistics.mean(times), "n": len(times), "answer_bytes": len(first or "")}
        if kind == "references":
            out[kind]["locations"] = ref_count(first)
    if hasattr(system, "noop"):
        times = []
        for i in range(warmup + n):
            dt = system.noop()
            if i >= warmup:
                times.append(dt * 1000)
        out["noop"] = {"p50": pct(times, 0.5), "p95": pct(times, 0.95), "max": max(times), "n": n}
    return out


def cold_once(system, expect, timeout=180):
    """Spawn the system and hover until the expected answer: seconds from the spawn."""
    system.start()
    t0 = system.rpc.t_spawn
    end = time.perf_counter() + timeout
    tries = 0
    while time.perf_counter() < end:
        tries += 1
        text, _ = system.call("hover")
        if check("hover", text, expect):
            dt = time.perf_counter() - t0
            return dt, tries
        time.sleep(RETRY)
    raise RuntimeError("%s: no hover answer within %d s" % (system.name, timeout))


def memory(cfg, fx):
    """Stardust: one editor + three agents on one store; mcpls and Deixis: three instances."""
    store, py, places, expect = fx
    out = {}
    if "stardust" in cfg.systems:
        sd = Stardust(cfg, fx)
        sd.stop_core()
        env = sd.env
        editor = Rpc([cfg.stardust, "lsp", "--store", str(store)], "lsp", env=env)
        editor.request("initialize", {"processId": os.getpid(), "rootUri": uri(store),
                                      "capabilities": {}})
        editor.notify("initialized", {})
        p = places["hover"]
        editor.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(py / p["rel"]), "languageId": "python", "version": 1,
            "text": (py / p["rel"]).read_text()}})
        # The editor's hover: answered by pyright once `stardust lsp` relays code files; until
        # then it is an error, recorded, and the editor is still a session of the core.
        end = time.perf_counter() + 60
        while True:
            msg, _ = editor.request("textDocument/hover", {
                "textDocument": {"uri": uri(py / p["rel"])},
                "position": {"line": p["line"], "character": p["char"]}})
            if msg.get("result") and expect["hover"] in json.dumps(msg["result"]):
                editor_hover = "answered"
                break
            if "error" in msg:
                editor_hover = "error: %s" % msg["error"].get("message")
                break
            if time.perf_counter() > end:
                editor_hover = "empty for 60 s"
                break
            time.sleep(0.1)
        agents = []
        for _ in range(3):
            a = Stardust(cfg, fx)
            a.rpc = Rpc([cfg.stardust, "mcp", "--store", str(store)], "ndjson", env=env)
            mcp_initialize(a.rpc)
            end = time.perf_counter() + 120
            while not check("hover", a.call("hover")[0], expect):
                if time.perf_counter() > end:
                    raise RuntimeError("stardust mcp (memory): no hover")
                time.sleep(RETRY)
            agents.append(a)
        time.sleep(1)
        core = sd.daemon_pid()
        fronts = [editor.p.pid] + [a.rpc.p.pid for a in agents]
        rep = tree_report([core])
        allrep = tree_report([core] + fronts)
        rep["with_fronts_rss_mib"] = allrep["rss_mib"]
        rep["with_fronts_pss_mib"] = allrep["pss_mib"]
        rep["all_pyright_instances"] = allrep["pyright_instances"]
        rep["editor_hover"] = editor_hover
        out["stardust (1 editor + 3 agents)"] = rep
        for a in agents:
            a.rpc.close()
        editor.close()
        sd.stop_core()
    for cls in (Mcpls, Deixis):
        if cls.name not in cfg.systems:
            continue
        inst = []
        for _ in range(3):
            s = cls(cfg, fx)
            s.start()
            end = time.perf_counter() + 120
            while not check("hover", s.call("hover")[0], expect):
                if time.perf_counter() > end:
                    raise RuntimeError("%s: no hover" % cls.name)
                time.sleep(RETRY)
            inst.append(s)
        time.sleep(1)
        out["%s (3 agents)" % cls.name] = tree_report([pid for s in inst for pid in s.roots()])
        for s in inst:
            stop_and_reap(s)
    if "direct" in cfg.systems:
        d = Direct(cfg, fx)
        d.start()
        end = time.perf_counter() + 120
        while not check("hover", d.call("hover")[0], expect):
            if time.perf_counter() > end:
                raise RuntimeError("direct: no hover")
            time.sleep(RETRY)
        time.sleep(1)
        out["pyright alone (1 client)"] = tree_report(d.roots())
        stop_and_reap(d)
    return out


# --- --complete: time to the first complete answer (SPEC §25) ---------------------------

def ask_complete(system, kind, fx):
    """Ask `kind` (references or rename) once: (answered, complete). An error is no answer."""
    store, py, places, expect = fx
    p = places[kind]
    new_name = "renamed0200"
    if system.name.startswith("stardust"):
        args = {"path": "py/" + p["rel"], "position": {"line": p["line"] + 1, "column": p["char"] + 1}}
        if kind == "references":
            args["limit"] = 500
            msg, _ = system.rpc.request("tools/call", {"name": "references", "arguments": args})
        else:
            args["newName"] = new_name
            msg, _ = system.rpc.request("tools/call", {"name": "rename_preview", "arguments": args})
        res = msg.get("result") or {}
        if "error" in msg or res.get("isError"):
            return False, False
        out = res.get("structuredContent") or {}
        if kind == "references":
            return True, out.get("complete") is True and out.get("total") == expect["references"]
        files = sorted(pathlib.Path(d["path"]).name for d in out.get("documents", []))
        return True, out.get("committable") is True and files == expect["rename"]
    if system.name == "mcpls":
        args = {"file_path": str(py / p["rel"]), "line": p["line"] + 1, "character": p["char"] + 1}
        if kind == "references":
            args["include_declaration"] = True
            msg, _ = system.rpc.request("tools/call", {"name": "get_references", "arguments": args})
        else:
            args["new_name"] = new_name
            msg, _ = system.rpc.request("tools/call", {"name": "rename_symbol", "arguments": args})
    else:
        args = {"path": p["rel"], "position": {"line": p["line"], "character": p["char"]}}
        if kind == "references":
            args.update(includeDeclaration=True, limit=500)
            msg, _ = system.rpc.request("tools/call", {"name": "references", "arguments": args})
        else:
            args["newName"] = new_name
            msg, _ = system.rpc.request("tools/call", {"name": "preview_rename", "arguments": args})
    text = tool_text(msg)
    if text is None:
        return False, False
    if kind == "references":
        return True, ref_count(text) >= expect["references"]
    return True, all(name in text for name in expect["rename"])


def first_complete(system, kind, fx, timeout=180):
    """Spawn `system` and ask `kind` until a complete answer: seconds from the spawn to it,
    and the answers given (complete or not) on the way."""
    system.start()
    t0 = system.rpc.t_spawn
    answers = []
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        answered, complete = ask_complete(system, kind, fx)
        if answered:
            answers.append(complete)
        if complete:
            return time.perf_counter() - t0, answers
        time.sleep(0.05)
    return None, answers


def hover_after_pause(system, fx, pause=2.0):
    """Spawn `system`, open the session, think for `pause` seconds, then hover once: the
    hover's milliseconds and whether it answered what was expected."""
    system.start()
    time.sleep(pause)
    text, dt = system.call("hover")
    return dt * 1000, check("hover", text, fx[3])


def complete_bench(cfg):
    fx = make_project(cfg.tmp)
    store, py, places, expect = fx
    systems = [s for s in cfg.systems if s in ("stardust", "stardust-before", "mcpls", "deixis")]
    if "stardust" in systems:
        Stardust(cfg, fx).trust()
    report = {"load_before": loadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "modules": MODULES, "cold_runs": cfg.cold, "first_complete": {}, "hover_after_pause": {},
              "memory": {}}
    for kind in ("references", "rename"):
        res = {s: {"seconds": [], "answers": 0, "complete": 0, "never": 0} for s in systems}
        for i in range(cfg.cold):
            order = systems if i % 2 == 0 else list(reversed(systems))
            for name in order:
                s = SYSTEMS[name](cfg, fx)
                dt, answers = first_complete(s, kind, fx)
                stop_and_reap(s)
                r = res[name]
                r["answers"] += len(answers)
                r["complete"] += sum(answers)
                if dt is None:
                    r["never"] += 1
                else:
                    r["seconds"].append(dt)
                print("[complete] %s %s run %d: %s, %d answers (%d complete) (load %s)"
                      % (kind, name, i + 1, "%.2f s" % dt if dt else "never", len(answers),
                         sum(answers), " ".join(loadavg())), file=sys.stderr, flush=True)
        report["first_complete"][kind] = res
    # Every system's hover a 2 s pause after its session opened.
    res = {s: [] for s in systems}
    for i in range(cfg.cold):
        for name in (systems if i % 2 == 0 else list(reversed(systems))):
            s = SYSTEMS[name](cfg, _hover_fx(fx))
            ms, ok = hover_after_pause(s, _hover_fx(fx))
            stop_and_reap(s)
            res[name].append({"ms": ms, "expected": ok})
            print("[complete] hover after 2 s: %s %.1f ms (%s)" % (name, ms, "ok" if ok else "not the answer"),
                  file=sys.stderr, flush=True)
    report["hover_after_pause"] = res
    # Memory: Stardust's core with the warm-up done, then after idle_stop; each peer's tree.
    if "stardust" in systems:
        sd = Stardust(cfg, _hover_fx(fx))
        sd.start()
        end = time.perf_counter() + 120
        while time.perf_counter() < end:
            msg, _ = sd.rpc.request("tools/call", {"name": "server_status", "arguments": {}})
            status = (msg.get("result") or {}).get("structuredContent") or {}
            if any(x.get("state") == "ready" for x in status.get("servers", [])):
                break
            time.sleep(0.1)
        core = sd.daemon_pid()
        warm_rep = tree_report([core])
        warm_rep["with_front_rss_mib"] = tree_report([core, sd.rpc.p.pid])["rss_mib"]
        time.sleep(7)  # idle_stop = 5 s, looked at every second
        idle_rep = tree_report([core])
        report["memory"]["stardust core, warmed up (1 agent, no request)"] = warm_rep
        report["memory"]["stardust core, after idle_stop"] = idle_rep
        stop_and_reap(sd)
    for name in systems:
        if name.startswith("stardust"):
            continue
        s = SYSTEMS[name](cfg, _hover_fx(fx))
        s.start()
        end = time.perf_counter() + 120
        while not check("hover", s.call("hover")[0], fx[3]):
            if time.perf_counter() > end:
                break
            time.sleep(RETRY)
        time.sleep(1)
        report["memory"]["%s (1 agent, after a hover)" % name] = tree_report(s.roots())
        stop_and_reap(s)
    report["load_after"] = loadavg()
    return report


def _hover_fx(fx):
    """The project as the systems' `call("hover")` takes it (places keyed by kind)."""
    store, py, places, expect = fx
    return store, py, {"hover": places["hover"]}, expect


def complete_markdown(report):
    out = ["Generated project: %d modules; %d cold runs; load before %s, after %s." % (
        report["modules"], report["cold_runs"], " ".join(report["load_before"]),
        " ".join(report["load_after"])), ""]
    out.append("| system | first complete references (median s) | completeness | first complete rename (median s) | completeness | hover 2 s after the session opened (median ms) |")
    out.append("|---|---|---|---|---|---|")
    systems = list(report["hover_after_pause"].keys())
    for name in systems:
        cells = [name]
        for kind in ("references", "rename"):
            r = report["first_complete"][kind][name]
            med = "%.2f" % statistics.median(r["seconds"]) if r["seconds"] else "never"
            if r["never"]:
                med += " (never in %d runs)" % r["never"]
            rate = "%d / %d (%.0f %%)" % (r["complete"], r["answers"], 100 * r["complete"] / r["answers"]) \
                if r["answers"] else "no answer"
            cells += [med, rate]
        hovers = report["hover_after_pause"][name]
        ms = statistics.median(h["ms"] for h in hovers)
        wrong = sum(1 for h in hovers if not h["expected"])
        cells.append("%.1f%s" % (ms, " (%d not the answer)" % wrong if wrong else ""))
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "| memory | pyright instances | processes | RSS MiB |", "|---|---|---|---|"]
    for label, rep in report["memory"].items():
        out.append("| %s | %d | %d | %.0f |" % (label, rep["pyright_instances"], rep["processes"], rep["rss_mib"]))
    return "\n".join(out)


def loadavg():
    return pathlib.Path("/proc/loadavg").read_text().split()[:3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stardust", default=str(pathlib.Path("/work/main/target/release/stardust")))
    ap.add_argument("--mcpls", default="/tmp/peers/bin/mcpls")
    ap.add_argument("--deixis", default="/tmp/peers/bin/deixis")
    ap.add_argument("--pyright", default=shutil.which("pyright-langserver") or "/usr/bin/pyright-langserver")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cold", type=int, default=3)
    ap.add_argument("--budget", type=float, default=30,
                    help="seconds a timed series may take before it stops (at least 10 samples)")
    ap.add_argument("--fixtures", default="small,large")
    ap.add_argument("--systems", default="direct,stardust,mcpls,deixis")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--stardust-log", default=None,
                    help="RUST_LOG for the Stardust core (logs kept in the temp dir)")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--stardust-before", default=None,
                    help="with --complete: another Stardust build measured beside (system stardust-before)")
    ap.add_argument("--complete", action="store_true",
                    help="time to the first complete answer on a generated project (SPEC §25)")
    cfg = ap.parse_args()
    cfg.systems = cfg.systems.split(",")
    cfg.tmp = pathlib.Path(tempfile.mkdtemp(prefix="code_bench."))
    cfg.xdg = cfg.tmp / "xdg"
    cfg.xdg.mkdir()
    logs = {}

    def peer_log(name):
        if name not in logs:
            logs[name] = open(cfg.tmp / ("%s.log" % name), "a")
        return logs[name]
    cfg.peer_log = peer_log

    if cfg.complete:
        if cfg.systems == ["direct", "stardust", "mcpls", "deixis"]:
            cfg.systems = ["stardust", "mcpls", "deixis"]
            if cfg.stardust_before:
                cfg.systems.insert(0, "stardust-before")
        try:
            report = complete_bench(cfg)
        finally:
            if not cfg.keep:
                shutil.rmtree(cfg.tmp, ignore_errors=True)
        if cfg.json:
            pathlib.Path(cfg.json).write_text(json.dumps(report, indent=1))
        print(complete_markdown(report))
        return

    report = {"load_before": loadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "n": cfg.n, "warmup": cfg.warmup, "rounds": cfg.rounds, "cold_runs": cfg.cold,
              "fixtures": {}}
    kinds = ["hover", "definition", "references"]
    try:
        for kind in cfg.fixtures.split(","):
            fx = fixture(kind, cfg.tmp)
            if "stardust" in cfg.systems:
                Stardust(cfg, fx).trust()
            res = {"warm": {s: [] for s in cfg.systems}, "cold": {s: [] for s in cfg.systems}}
            for rnd in range(cfg.rounds):
                order = cfg.systems if rnd % 2 == 0 else list(reversed(cfg.systems))
                for name in order:
                    s = SYSTEMS[name](cfg, fx)
                    print("[%s] round %d: %s warm (load %s)" % (kind, rnd + 1, name, " ".join(loadavg())),
                          file=sys.stderr, flush=True)
                    s.start()
                    try:
                        res["warm"][name].append(warm(s, kinds, cfg.n, cfg.warmup, fx[3], cfg.budget))
                    finally:
                        stop_and_reap(s)
            for i in range(cfg.cold):
                order = cfg.systems if i % 2 == 0 else list(reversed(cfg.systems))
                for name in order:
                    s = SYSTEMS[name](cfg, fx)
                    dt, tries = cold_once(s, fx[3])
                    res["cold"][name].append({"seconds": dt, "hovers": tries})
                    print("[%s] cold %d: %s %.2f s (%d hovers)" % (kind, i + 1, name, dt, tries),
                          file=sys.stderr, flush=True)
                    stop_and_reap(s)
            if not cfg.no_memory and kind == "small":
                res["memory"] = memory(cfg, fx)
            report["fixtures"][kind] = res
    finally:
        report["load_after"] = loadavg()
        if not cfg.keep:
            shutil.rmtree(cfg.tmp, ignore_errors=True)
        else:
            print("kept %s" % cfg.tmp, file=sys.stderr)
    if cfg.json:
        pathlib.Path(cfg.json).write_text(json.dumps(report, indent=1))
    print(markdown(report, cfg.systems, kinds))


def markdown(report, systems, kinds):
    out = ["load average before %s, after %s; N = %d warm requests per kind after %d warm-up, "
           "%d rounds; cold start median of %d" % (" ".join(report["load_before"]),
                                                  " ".join(report["load_after"]), report["n"],
                                                  report["warmup"], report["rounds"],
                                                  report["cold_runs"]), ""]
    for fxname, res in report["fixtures"].items():
        out += ["### %s fixture: warm p50 / p95 (ms), each round" % fxname, "",
                "| system | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
        for s in systems:
            for rnd, r in enumerate(res["warm"][s]):
                out.append("| %s (round %d) | " % (s, rnd + 1) + " | ".join(
                    "%.2f / %.2f" % (r[k]["p50"], r[k]["p95"])
                    + ("" if r[k]["n"] == report["n"] else " (n = %d)" % r[k]["n"]) for k in kinds) + " |")
        out += ["", "p50 over the rounds (median of the rounds' p50), and the difference to direct:", "",
                "| system | " + " | ".join(kinds) + " | cold start to first hover (median, s) |",
                "|---|" + "---|" * (len(kinds) + 1)]
        warmed = report["rounds"] > 0
        base = {k: statistics.median(r[k]["p50"] for r in res["warm"]["direct"]) for k in kinds} \
            if "direct" in systems and warmed else None
        for s in systems:
            cells = []
            for k in kinds:
                if not warmed:
                    cells.append("-")
                    continue
                m = statistics.median(r[k]["p50"] for r in res["warm"][s])
                cells.append("%.2f" % m + (" (%+.2f)" % (m - base[k]) if base and s != "direct" else ""))
            cold = [c["seconds"] for c in res["cold"][s]]
            cells.append("%.2f (%s)" % (statistics.median(cold), ", ".join("%.2f" % c for c in cold)))
            out.append("| %s | " % s + " | ".join(cells) + " |")
        noop = [(s, r["noop"]) for s in systems for r in res["warm"][s] if "noop" in r]
        if noop:
            out += ["", "Stardust `server_status` (answered by the core, no language server): p50 / p95 "
                    + ", ".join("%s %.2f / %.2f ms" % (s, r["p50"], r["p95"]) for s, r in noop)]
        refs = {s: res["warm"][s][0]["references"].get("locations") for s in systems if res["warm"][s]}
        out += ["", "references answer: locations counted per system %s" % json.dumps(refs), ""]
        if "memory" in res:
            out += ["### memory (small fixture)", "",
                    "| setup | pyright instances | processes | RSS (MiB) | PSS (MiB) |", "|---|---|---|---|---|"]
            for name, m in res["memory"].items():
                extra = ""
                if "with_fronts_rss_mib" in m:
                    extra = " (core tree; with the 4 front processes: %.0f RSS / %.0f PSS, pyright instances %d)" % (
                        m["with_fronts_rss_mib"], m["with_fronts_pss_mib"], m["all_pyright_instances"])
                out.append("| %s | %d | %d | %.0f%s | %.0f |" % (name, m["pyright_instances"], m["processes"],
                                                                   m["rss_mib"], extra, m["pss_mib"]))
            for name, m in res["memory"].items():
                if "editor_hover" in m:
                    out.append("The editor's LSP hover on the .py file: %s" % m["editor_hover"])
            out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    main()

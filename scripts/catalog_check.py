#!/usr/bin/env python3
"""Agreement with a public JSON Schema catalog's own verdicts (SchemaStore), run by hand.

SchemaStore keeps each schema in src/schemas/json/<name>.json, files that must validate in
src/test/<name>/ and files that must not in src/negative_test/<name>/. This script lays the
catalog out as a Stardust store, checks it with `stardust check --format json`, and counts the
test files whose verdict agrees with the catalog's (a positive file with no error, a negative
file with at least one). With --peer it runs vscode-json-language-server (npm
vscode-langservers-extracted) on the same files, offline, for the side-by-side figure.

The store:
  schemas/json/<name>.json     every schema of the catalog (under [store] schemas: schemas),
                               laid out as in the catalog so that a test file's relative
                               `$schema` ("../../schemas/json/<name>.json") finds it
  test/<name>/<file>.json      positive test files; negative_test/<name>/... negative ones
  stardust.toml                [[schema]] glob = "test/<name>/*.json" path = "schemas/json/<name>.json"
                               per test folder, and [[schema]] url = ... for each address the
                               catalog publishes a schema at (catalog.json's url,
                               https://www.schemastore.org/<name>.json, and
                               https://json.schemastore.org/<name>.json) that is not already the
                               schema's own $id. Schemas reach each other by $id and by those
                               urls; nothing is fetched.

Only .json test files count (Stardust reads .json and .dust documents). Schemas SchemaStore's
own run skips (schema-validation.jsonc "skiptest") are left out, as are test folders with no
schema.

Usage:
  scripts/catalog_check.py --catalog /path/to/schemastore[.git] [--stardust target/release/stardust]
                           [--work /tmp/catalog] [--peer] [--dialect compatible|strict] [--list]

--catalog is a checkout, or a bare git directory (files are read from HEAD; blobs missing from a
partial copy are skipped and counted).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse


def read_catalog(source):
    """{relative path: bytes} of the catalog files this check needs."""
    wanted = ["src/schemas/json", "src/test", "src/negative_test", "src/api/json/catalog.json",
              "src/schema-validation.jsonc"]
    files, missing = {}, 0
    if os.path.isdir(os.path.join(source, "src")):
        for top in wanted:
            full = os.path.join(source, top)
            if os.path.isfile(full):
                files[top] = open(full, "rb").read()
                continue
            for root, _, names in os.walk(full):
                for n in names:
                    p = os.path.join(root, n)
                    files[os.path.relpath(p, source)] = open(p, "rb").read()
        return files, missing
    ls = subprocess.run(["git", "--git-dir", source, "ls-tree", "-r", "HEAD", "--"] + wanted,
                        capture_output=True, check=True).stdout.decode()
    entries = []
    for line in ls.splitlines():
        meta, path = line.split("\t", 1)
        _, kind, sha = meta.split()
        if kind == "blob":
            entries.append((sha, path))
    proc = subprocess.Popen(["git", "--git-dir", source, "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for sha, path in entries:
        proc.stdin.write((sha + "\n").encode())
        proc.stdin.flush()
        header = proc.stdout.readline().decode()
        if header.endswith("missing\n"):
            missing += 1
            continue
        size = int(header.split()[2])
        files[path] = proc.stdout.read(size)
        proc.stdout.read(1)
    proc.stdin.close()
    proc.wait()
    return files, missing


def strip_jsonc(text):
    """JSON text of a JSONC text (comments and trailing commas removed), for the config file."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        elif text.startswith("/*", i):
            i = text.find("*/", i) + 2
            continue
        else:
            out.append(c)
        i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def toml_str(s):
    return json.dumps(s)


def lay_out(files, work):
    """Write the store; returns (store root, [(kind, name, store path)], skipped names)."""
    store = os.path.join(work, "store")
    if os.path.exists(store):
        shutil.rmtree(store)
    os.makedirs(store)
    validation = json.loads(strip_jsonc(files["src/schema-validation.jsonc"].decode("utf-8-sig")))
    skip = {n[:-5] for n in validation.get("skiptest", [])}
    catalog = json.loads(files["src/api/json/catalog.json"].decode("utf-8-sig"))
    schemas = {}
    for path, data in files.items():
        m = re.fullmatch(r"src/schemas/json/([^/]+)\.json", path)
        if m:
            schemas[m.group(1)] = data
            dest = os.path.join(store, "schemas", "json", m.group(1) + ".json")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            open(dest, "wb").write(data)
    ids = {}
    for name, data in schemas.items():
        try:
            value = json.loads(data.decode("utf-8-sig"))
        except ValueError:
            continue
        if isinstance(value, dict):
            ident = value.get("$id", value.get("id"))
            if isinstance(ident, str):
                ids[name] = ident.rstrip("#")
    urls = {}
    for name in schemas:
        for url in (f"https://www.schemastore.org/{name}.json",
                    f"https://json.schemastore.org/{name}.json"):
            urls.setdefault(url, name)
    for entry in catalog.get("schemas", []):
        for url in [entry.get("url")] + list((entry.get("versions") or {}).values()):
            if not url:
                continue
            m = re.fullmatch(r"https://(?:www|json)\.schemastore\.org/([^/]+?)(?:\.json)?", url)
            if m and m.group(1) in schemas:
                urls.setdefault(url, m.group(1))
    tests = []
    for path, data in sorted(files.items()):
        m = re.fullmatch(r"src/(test|negative_test)/([^/]+)/(.+\.json)", path)
        if not m:
            continue
        kind, name, rest = m.groups()
        if name not in schemas or name in skip:
            continue
        dest = f"{kind}/{name}/{rest}"
        os.makedirs(os.path.dirname(os.path.join(store, dest)), exist_ok=True)
        open(os.path.join(store, dest), "wb").write(data)
        tests.append((kind, name, dest))
    lines = ["# Generated by scripts/catalog_check.py", ""]
    folders = sorted({(kind, name, os.path.dirname(dest)) for kind, name, dest in tests})
    for kind, name, folder in folders:
        lines += ["[[schema]]", f"glob = {toml_str(folder + '/*.json')}",
                  f"path = {toml_str('schemas/json/' + name + '.json')}", ""]
    for url, name in sorted(urls.items()):
        if ids.get(name) == url:
            continue
        lines += ["[[schema]]", f"url = {toml_str(url)}",
                  f"path = {toml_str('schemas/json/' + name + '.json')}", ""]
    open(os.path.join(store, "stardust.toml"), "w").write("\n".join(lines))
    return store, tests, skip, urls


def run_stardust(binary, store, dialect):
    if dialect:
        with open(os.path.join(store, "stardust.toml"), "a") as f:
            f.write(f"\n[validation]\ndialect = {toml_str(dialect)}\n")
    start = time.perf_counter()
    out = subprocess.run([binary, "check", "--format", "json", store], capture_output=True)
    elapsed = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(f"stardust check failed ({out.returncode}): {out.stderr.decode()[-2000:]}")
    found = {}
    for d in json.loads(out.stdout.decode())["diagnostics"]:
        found.setdefault(d["path"], []).append(d)
    return found, elapsed


class Lsp:
    """A minimal LSP client over stdio."""

    def __init__(self, cmd, on_request):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id, self.pending, self.lock = 1, {}, threading.Lock()
        self.diagnostics, self.cond = {}, threading.Condition()
        self.on_request = on_request
        threading.Thread(target=self.read, daemon=True).start()

    def send(self, msg):
        body = json.dumps(msg).encode()
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def request(self, method, params):
        event, slot = threading.Event(), {}
        with self.lock:
            ident = self.next_id
            self.next_id += 1
            self.pending[ident] = (event, slot)
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        event.wait(120)
        return slot.get("result")

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            if "method" in msg and "id" in msg:
                try:
                    result = self.on_request(msg["method"], msg.get("params"))
                    answer = {"result": result}
                except Exception as err:  # the server is told, and the reader goes on
                    answer = {"error": {"code": -32603, "message": str(err)}}
                self.send({"jsonrpc": "2.0", "id": msg["id"], **answer})
            elif "method" in msg:
                if msg["method"] == "textDocument/publishDiagnostics":
                    with self.cond:
                        p = msg["params"]
                        self.diagnostics[p["uri"]] = p["diagnostics"]
                        self.cond.notify_all()
            else:
                event, slot = self.pending.pop(msg["id"], (None, None))
                if event:
                    slot["result"] = msg.get("result")
                    event.set()


def run_peer(server, store, tests, urls):
    """Diagnostics of vscode-json-language-server for each test file, offline: every schema
    address the store vendors is answered from its file; anything else is refused."""
    schemas_dir = os.path.join(store, "schemas", "json")
    by_url = {url: os.path.join(schemas_dir, name + ".json") for url, name in urls.items()}
    for f in os.listdir(schemas_dir):
        try:
            value = json.loads(open(os.path.join(schemas_dir, f), encoding="utf-8-sig").read())
            ident = value.get("$id", value.get("id")) if isinstance(value, dict) else None
            if isinstance(ident, str):
                by_url.setdefault(ident.rstrip("#"), os.path.join(schemas_dir, f))
        except ValueError:
            pass

    def on_request(method, params):
        if method == "vscode/content":
            uri = params[0] if isinstance(params, list) else params
            uri = uri if isinstance(uri, str) else uri.get("uri")
            path = by_url.get(uri.split("#")[0])
            if path:
                return open(path, encoding="utf-8-sig").read()
            raise LookupError(f"{uri} is not vendored (offline)")
        if method == "workspace/configuration":
            return [settings(store, tests) for _ in params.get("items", [])]
        return None

    lsp = Lsp([server, "--stdio"], on_request)
    root = "file://" + store
    lsp.request("initialize", {
        "processId": os.getpid(), "rootUri": root, "capabilities": {
            "workspace": {"configuration": False},
            "textDocument": {"publishDiagnostics": {}}},
        "initializationOptions": {"handledSchemaProtocols": ["file"], "provideFormatter": False},
    })
    lsp.notify("initialized", {})
    lsp.notify("workspace/didChangeConfiguration", {"settings": settings(store, tests)})
    start = time.perf_counter()
    found = {}
    for _, _, rel in tests:
        uri = "file://" + urllib.parse.quote(os.path.join(store, rel))
        text = open(os.path.join(store, rel), encoding="utf-8", errors="replace").read()
        lsp.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "json", "version": 1, "text": text}})
    deadline = time.time() + 600
    with lsp.cond:
        while time.time() < deadline:
            uris = {"file://" + urllib.parse.quote(os.path.join(store, rel)) for _, _, rel in tests}
            if uris <= set(lsp.diagnostics):
                break
            lsp.cond.wait(1)
    elapsed = time.perf_counter() - start
    for _, _, rel in tests:
        uri = "file://" + urllib.parse.quote(os.path.join(store, rel))
        found[rel] = lsp.diagnostics.get(uri)
    lsp.proc.kill()
    return found, elapsed


def settings(store, tests):
    folders = sorted({(name, os.path.dirname(rel)) for _, name, rel in tests})
    schemas = [{"fileMatch": [f"/{folder}/*.json"],
                "url": "file://" + os.path.join(store, "schemas", "json", name + ".json")}
               for name, folder in folders]
    return {"json": {"validate": {"enable": True}, "schemas": schemas,
                     "schemaDownload": {"enable": False}}}


def agreement(tests, invalid):
    """(positive agreeing, positive total, negative agreeing, negative total, disagreeing)."""
    pos = neg = pos_ok = neg_ok = 0
    wrong = []
    for kind, _, rel in tests:
        bad = invalid(rel)
        if bad is None:
            wrong.append((rel, "no answer"))
            bad = False
        if kind == "test":
            pos += 1
            pos_ok += not bad
            if bad:
                wrong.append((rel, "positive with errors"))
        else:
            neg += 1
            neg_ok += bad
            if not bad:
                wrong.append((rel, "negative without errors"))
    return pos_ok, pos, neg_ok, neg, wrong


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--catalog", required=True)
    ap.add_argument("--stardust", default="target/release/stardust")
    ap.add_argument("--work", default="/tmp/stardust-catalog")
    ap.add_argument("--dialect", choices=["compatible", "strict"])
    ap.add_argument("--peer", action="store_true", help="also run vscode-json-language-server")
    ap.add_argument("--server", default=None, help="vscode-json-language-server executable")
    ap.add_argument("--list", action="store_true", help="list every disagreeing file")
    ap.add_argument("--codes", default=None,
                    help="count only errors of these codes (comma-separated), e.g. "
                         "syntax,duplicate-key,schema to leave out entity diagnostics")
    args = ap.parse_args()

    files, missing = read_catalog(args.catalog)
    store, tests, skip, urls = lay_out(files, args.work)
    print(f"catalog: {len(tests)} test files ({sum(k == 'test' for k, _, _ in tests)} positive), "
          f"{len(skip)} schemas skipped as the catalog skips them, {missing} files missing from the copy")

    found, elapsed = run_stardust(args.stardust, store, args.dialect)
    unavailable = sum(1 for ds in found.values() for d in ds if d.get("code") == "schema-unavailable")

    codes = set(args.codes.split(",")) if args.codes else None

    def stardust_invalid(rel):
        return any(d.get("severity") == "error" and (codes is None or d.get("code") in codes)
                   for d in found.get(rel, []))

    pos_ok, pos, neg_ok, neg, wrong = agreement(tests, stardust_invalid)
    print(f"stardust: positive {pos_ok}/{pos} = {100 * pos_ok / pos:.1f}%, negative {neg_ok}/{neg} "
          f"= {100 * neg_ok / neg:.1f}%, check {elapsed:.2f} s, schema-unavailable {unavailable}")
    if args.list:
        for rel, why in wrong:
            print(f"  {why}: {rel}")
            for d in found.get(rel, [])[:3]:
                print(f"      {d.get('severity')}[{d.get('code')}] {d.get('message', '')[:200]}")
    if args.peer:
        server = args.server or shutil.which("vscode-json-language-server")
        if not server:
            sys.exit("vscode-json-language-server not found: npm install vscode-langservers-extracted")
        peer, peer_elapsed = run_peer(server, store, tests, urls)

        def peer_invalid(rel):
            ds = peer.get(rel)
            if ds is None:
                return None
            # Every problem of the document counts (schema validation problems are warnings by
            # default); a deprecation (code 2) or a problem loading a schema (code 0x300 on)
            # says nothing about the document's validity.
            return any(d.get("code", 0) != 2 and d.get("code", 0) < 0x300 for d in ds)

        p_pos_ok, _, p_neg_ok, _, p_wrong = agreement(tests, peer_invalid)
        print(f"vscode-json-language-server: positive {p_pos_ok}/{pos} = {100 * p_pos_ok / pos:.1f}%, "
              f"negative {p_neg_ok}/{neg} = {100 * p_neg_ok / neg:.1f}%, {peer_elapsed:.2f} s")
        if args.list:
            for rel, why in p_wrong:
                print(f"  peer {why}: {rel}")
                for d in (peer.get(rel) or [])[:3]:
                    print(f"      {d.get('severity')} {d.get('code')} {d.get('message', '')[:200]}")


if __name__ == "__main__":
    main()

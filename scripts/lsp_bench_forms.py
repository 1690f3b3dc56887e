#!/usr/bin/env python3
"""Both forms of didChange side by side (SPEC §20): a whole-text change and a range edit of the
same value, each followed by a pull of diagnostics, cold and warm. No dependencies; the client
is scripts/lsp_bench.py's.

usage: lsp_bench_forms.py [--rounds R] [--samples K] [--schema SCHEMA.json] [--field NAME]
                          [--forms range,whole] FILE.json -- SERVER_CMD...

One server process. R rounds; in each, for each form (by default range, then whole):
  didOpen -> pull (open_ms: the first round's is the server's first open, `open_first_ms`,
  the others `open_again_ms`), a second pull (warm_pull_ms), then K changes of ONE value (field
  NAME of a different entity each time, toggled between an invalid string and its integer),
  each immediately followed by a pull; the time from the first byte of the change to the
  answer. The first change after the open is `<form>_cold_ms`, the others `<form>_warm_ms`;
  the very first change of the server process is also `first_change_ms` (with `--forms whole`,
  the first whole-text change after the process's first open).
  Then didClose. The diagnostic count must alternate, which proves each answer saw its change.
A whole-text change is framed before its clock starts: encoding 2 MB of JSON is the client's
cost, not the server's. Prints one JSON object with p50/p95/max of each series."""
import json, os, pathlib, re, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_bench import Lsp, frame, stats  # noqa: E402


def main(argv):
    sep = argv.index("--"); opts, cmd = argv[:sep], argv[sep + 1:]
    rounds, samples, schema, path, field, forms = 3, 10, None, None, "year", ["range", "whole"]
    i = 0
    while i < len(opts):
        if opts[i] == "--rounds": rounds = int(opts[i + 1]); i += 2
        elif opts[i] == "--samples": samples = int(opts[i + 1]); i += 2
        elif opts[i] == "--schema": schema = opts[i + 1]; i += 2
        elif opts[i] == "--field": field = opts[i + 1]; i += 2
        elif opts[i] == "--forms": forms = opts[i + 1].split(","); i += 2
        else: path = opts[i]; i += 1
    path = pathlib.Path(path).resolve()
    schema = pathlib.Path(schema).resolve() if schema else None
    text = path.read_text(); uri = path.as_uri()
    lines = text.split("\n")
    pat = re.compile(r'"%s": (\d+)' % re.escape(field))
    hits = [(n, m) for n, l in enumerate(lines) for m in [pat.search(l)] if m]
    n_picks = rounds * len(forms) * samples
    if len(hits) < n_picks: raise SystemExit(f"only {len(hits)} lines with an integer {field!r}")
    step = len(hits) // n_picks
    picks = iter([hits[k * step] for k in range(n_picks)])
    # Character offsets of line starts: a change puts its value back before the next, so the
    # current text's lines start where the file's do.
    starts = [0]
    for l in lines[:-1]: starts.append(starts[-1] + len(l) + 1)

    t0 = time.perf_counter()
    s = Lsp(cmd)
    caps = {"textDocument": {"publishDiagnostics": {"relatedInformation": True},
                             "diagnostic": {"dynamicRegistration": True}},
            "workspace": {"configuration": False, "didChangeConfiguration": {"dynamicRegistration": False}}}
    s.call("initialize", {"processId": os.getpid(), "rootUri": path.parent.as_uri(),
                          "capabilities": caps, "initializationOptions": {"provideFormatter": False}})
    r = {"server": cmd[0], "file": str(path), "bytes": len(text.encode()),
         "init_ms": round((time.perf_counter() - t0) * 1000, 1)}
    s.notify("initialized", {})
    if schema:
        s.notify("workspace/didChangeConfiguration", {"settings": {"json": {
            "validate": {"enable": True},
            "schemas": [{"fileMatch": [path.name], "url": schema.as_uri()}]}}})

    series = {k: [] for k in ("open_first_ms", "open_again_ms", "warm_pull_ms", "first_change_ms",
                              "range_cold_ms", "range_warm_ms", "whole_cold_ms", "whole_warm_ms")}

    def pull():
        rid = s.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        return s.wait(lambda m: m.get("id") == rid)

    version = 0
    for rnd in range(rounds):
        for form in forms:
            version += 1
            cur = text
            s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": version, "text": cur}})
            t = time.perf_counter(); m = pull()
            series["open_first_ms" if rnd == 0 and form == forms[0] else "open_again_ms"].append((m["_t"] - t) * 1000)
            base = len(m["result"]["items"])
            t = time.perf_counter(); m = pull(); series["warm_pull_ms"].append((m["_t"] - t) * 1000)
            first = True
            for _ in range(samples):
                n, match = next(picks)
                value = match.group(1)
                col = len(lines[n][:match.start(1)].encode("utf-16-le")) // 2
                pos = starts[n] + match.start(1)
                for new, old, expect in (('"x"', value, base + 1), (value, '"x"', base)):
                    version += 1
                    cur = cur[:pos] + new + cur[pos + len(old):]
                    if form == "range":
                        rng = {"start": {"line": n, "character": col}, "end": {"line": n, "character": col + len(old)}}
                        change = {"range": rng, "text": new}
                    else:
                        change = {"text": cur}
                    msg = frame({"jsonrpc": "2.0", "method": "textDocument/didChange",
                                 "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}})
                    t = time.perf_counter()
                    with s.lock:
                        s.p.stdin.write(msg); s.p.stdin.flush()
                    m = pull()
                    got = len(m["result"]["items"])
                    if got != expect: raise SystemExit(f"{form} change {version}: {got} diagnostics, expected {expect}")
                    series[f"{form}_cold_ms" if first else f"{form}_warm_ms"].append((m["_t"] - t) * 1000)
                    if first and rnd == 0 and form == forms[0]:
                        series["first_change_ms"].append((m["_t"] - t) * 1000)
                    first = False
            s.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            assert cur == text, "each value is put back"
    for k, xs in series.items():
        if xs: r[k] = stats(xs)
    r["server_peak_rss_mb"] = round((s.rss_kb() or 0) / 1024, 1)
    rid = s.request("shutdown", None); s.wait(lambda m: m.get("id") == rid)
    s.notify("exit", None); s.p.wait(timeout=10)
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

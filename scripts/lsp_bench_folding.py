#!/usr/bin/env python3
"""Folding ranges of one large document, side by side (issue 21): open, then K
textDocument/foldingRange requests one after another; p50/p95 of each and the number of ranges.
No dependencies; the client is scripts/lsp_bench.py's.

usage: lsp_bench_folding.py [--samples K] FILE.json -- SERVER_CMD...

Each request asks again on an unchanged document (what an editor does when it scrolls or
re-focuses); the first answer after the open is reported apart (`first_ms`)."""
import json, os, pathlib, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_bench import Lsp, stats  # noqa: E402


def main(argv):
    sep = argv.index("--"); opts, cmd = argv[:sep], argv[sep + 1:]
    samples, path = 30, None
    i = 0
    while i < len(opts):
        if opts[i] == "--samples": samples = int(opts[i + 1]); i += 2
        else: path = opts[i]; i += 1
    path = pathlib.Path(path).resolve()
    text = path.read_text(); uri = path.as_uri()
    s = Lsp(cmd)
    caps = {"textDocument": {"foldingRange": {"lineFoldingOnly": True}}}
    s.call("initialize", {"processId": os.getpid(), "rootUri": path.parent.as_uri(), "capabilities": caps})
    s.notify("initialized", {})
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}})
    m, first = s.call("textDocument/foldingRange", {"textDocument": {"uri": uri}})
    ranges = len(m["result"] or [])
    times = []
    for _ in range(samples):
        m, t = s.call("textDocument/foldingRange", {"textDocument": {"uri": uri}})
        assert len(m["result"] or []) == ranges, "the same document folds the same"
        times.append(t)
    print(json.dumps({"server": cmd[0], "bytes": len(text.encode()), "ranges": ranges,
                      "first_ms": round(first, 2), "folding_ms": stats(times)}))
    s.p.kill()


if __name__ == "__main__":
    main(sys.argv[1:])

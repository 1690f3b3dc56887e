#!/usr/bin/env python3
"""One MCP tool called in a loop through `stardust mcp` (issue 18): the core's own part of a
call (`server_status`) or a code file's hover, p50 / p95 of N calls after a warm-up.

usage: mcp_call_bench.py STORE [--stardust BIN] [--xdg DIR] [-n 3000] [--warmup 200]
                         [--tool server_status|hover] [--path py/shop/pricing.py]
                         [--line 6] [--column 48] [--expect VAT]

STORE must have its servers trusted in the XDG_CONFIG_HOME given by --xdg (as
scripts/code_bench.py --keep leaves one: STORE = TMP/small/store, --xdg TMP/xdg). Stop the
store's core between runs of different binaries (`pkill -f 'stardust serve'`): a running
core is attached to, whatever binary started it. Stdlib only.
"""
import argparse, json, os, subprocess, time

ap = argparse.ArgumentParser()
ap.add_argument("store")
ap.add_argument("--stardust", default="target/release/stardust")
ap.add_argument("--xdg", default=os.environ.get("XDG_CONFIG_HOME", ""))
ap.add_argument("-n", type=int, default=3000)
ap.add_argument("--warmup", type=int, default=200)
ap.add_argument("--tool", default="server_status")
ap.add_argument("--path", default="py/shop/pricing.py")
ap.add_argument("--line", type=int, default=6)
ap.add_argument("--column", type=int, default=48)
ap.add_argument("--expect", default="VAT")
cfg = ap.parse_args()

env = dict(os.environ, STARDUST_IDLE_EXIT="2")
if cfg.xdg:
    env["XDG_CONFIG_HOME"] = cfg.xdg
p = subprocess.Popen([cfg.stardust, "mcp", "--store", cfg.store],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
next_id = [0]


def call(method, params):
    next_id[0] += 1
    msg = {"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()
    return json.loads(p.stdout.readline())


call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "mcp_call_bench", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
p.stdin.flush()
if cfg.tool == "hover":
    args = {"path": cfg.path, "position": {"line": cfg.line, "column": cfg.column}}
    end = time.time() + 120
    while cfg.expect not in json.dumps(call("tools/call", {"name": "hover", "arguments": args})):
        if time.time() > end:
            raise SystemExit("no hover answer with %r within 120 s" % cfg.expect)
        time.sleep(0.05)
else:
    args = {}
params = {"name": cfg.tool, "arguments": args}
for _ in range(cfg.warmup):
    call("tools/call", params)
samples = []
for _ in range(cfg.n):
    t = time.perf_counter()
    call("tools/call", params)
    samples.append(time.perf_counter() - t)
samples.sort()
print("%s n=%d p50 %.3f ms p95 %.3f ms" % (cfg.tool, cfg.n, samples[len(samples) // 2] * 1e3,
                                         samples[int(len(samples) * 0.95)] * 1e3))
p.stdin.close()
p.wait()

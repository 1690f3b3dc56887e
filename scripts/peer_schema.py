#!/usr/bin/env python3
"""The schemas of a generated store (gen_store) combined into one for vscode-json-language-server,
the peer of the LSP benches: {"type": "array", "items": {"allOf": [{"if": <type is T>, "then":
<schema of T>}, ...]}}, without "$schema" (the peer would try to fetch the meta-schema offline).

usage: peer_schema.py STORE_DIR OUT.json"""
import json, pathlib, sys
store = pathlib.Path(sys.argv[1]); out = sys.argv[2]
parts = []
for f in sorted((store / "schemas").glob("*.schema.json")):
    s = json.loads(f.read_text()); s.pop("$schema", None); s.pop("$id", None)
    t = s["properties"]["type"]["const"]
    parts.append({"if": {"properties": {"type": {"const": t}}, "required": ["type"]}, "then": s})
json.dump({"type": "array", "items": {"allOf": parts}}, open(out, "w"))
print(len(parts), "schemas")

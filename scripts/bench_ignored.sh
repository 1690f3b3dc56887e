#!/usr/bin/env bash
# The cost of files the project's ignore rules leave out (issue 34): `stardust check` of a
# generated store of 5,000 documents, alone and inside a 50,000-file tree whose other 45,000
# files (package manifests, broken JSON, text) sit in gitignored folders; and of that tree with
# `[store] gitignore = false` (every file scanned, as before the rules). Runs alternate; the
# median wall time of each is printed.
#
#   scripts/bench_ignored.sh STARDUST [RUNS] [WORK_DIR]
set -euo pipefail
bin=$(realpath "$1"); runs=${2:-5}; work=${3:-/tmp/bench-ignored}
cd "$(dirname "$0")/.."
rm -rf "$work"; mkdir -p "$work"
cargo run -q --release -p stardust-core --example gen_store -- "$work/alone" --docs 5000 --entities 20000 --format mixed >/dev/null
cp -r "$work/alone" "$work/tree"
python3 - "$work/tree" <<'PY'
import os, sys
root = sys.argv[1]
n = 0
for pkg in range(1500):
    d = os.path.join(root, "node_modules", f"pkg{pkg}", "lib")
    os.makedirs(d, exist_ok=True)
    for i in range(20):
        ext = ("json", "js", "txt")[i % 3]
        body = '{"name": "@scope/pkg%d", "id": %d, "version": "1.0.%d"' % (pkg, i, i)
        if i % 7 == 0:
            body += ","  # broken JSON: it must not be read
        else:
            body += "}"
        open(os.path.join(d, f"f{i}.{ext}"), "w").write(body + "\n")
        n += 1
for i in range(45000 - n):
    d = os.path.join(root, "build", f"d{i // 500}")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, f"out{i}.json"), "w").write('{"id": %d}\n' % i)
open(os.path.join(root, ".gitignore"), "w").write("node_modules/\nbuild/\n")
PY
cp -r "$work/tree" "$work/unruled"
python3 - "$work/unruled/stardust.toml" <<'PY'
import sys
p = sys.argv[1]
text = open(p).read()
text = text.replace("[store]\n", "[store]\ngitignore = false\n", 1) if "[store]\n" in text else text + "\n[store]\ngitignore = false\n"
open(p, "w").write(text)
PY
echo "files: alone $(find "$work/alone" -type f | wc -l), tree $(find "$work/tree" -type f | wc -l)"
declare -A times
for r in $(seq "$runs"); do
    for s in alone tree unruled; do
        start=$(date +%s%N)
        "$bin" check "$work/$s" --format json >/dev/null 2>&1 || true
        end=$(date +%s%N)
        times[$s]+="$(( (end - start) / 1000000 )) "
    done
done
for s in alone tree unruled; do
    printf '%s: %s median %s ms\n' "$s" "${times[$s]}" "$(printf '%s\n' ${times[$s]} | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
done
echo "load: $(cat /proc/loadavg)"

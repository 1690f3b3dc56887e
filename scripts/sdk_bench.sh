#!/usr/bin/env bash
# The generated SDKs' benchmark (docs/BENCHMARKS.md), run by hand: in one run against one core
# (`stardust serve` on a copy of examples/library), the commit -> event latency through the
# Rust SDK (sdk/examples latency, fanout), the TypeScript SDK and the Python SDK with 1 and 100
# subscribers; then the time `stardust sdk generate` takes for a store with 200 types.
#
#   scripts/sdk_bench.sh [COMMITS]      (default 200; PROFILE=release for release builds)
set -euo pipefail
cd "$(dirname "$0")/.."
commits=${1:-200}
profile=${PROFILE:-debug}
flag=(); [ "$profile" = release ] && flag=(--release)
cargo build -j 2 "${flag[@]}" --bin stardust -p stardust -p stardust-sdk --example latency --example fanout >&2
(cd sdk-ts && tsc -p .)
bin=$PWD/target/$profile/stardust
export STARDUST_BIN=$bin
work=$(mktemp -d)
trap 'kill $serve 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r examples/library "$work/store"
rm -rf "$work/store/.stardust"
"$bin" serve "$work/store" 2>"$work/serve.log" &
serve=$!
for _ in $(seq 100); do [ -f "$work/store/.stardust/run/daemon.json" ] && break; sleep 0.1; done
echo "machine: $(nproc) cores, $(uname -srm); $(date -u +%FT%TZ); uptime:$(uptime)"
echo "profile: $profile; $commits commits per run"
"target/$profile/examples/latency" "$work/store" "$commits" | sed 's/^/rust (1 subscriber): /'
"target/$profile/examples/fanout" "$work/store" 100 "$commits" | grep -E "confirm sent|opened" | sed 's/^/rust (100 subscribers): /'
for subs in 1 100; do
    node sdk-ts/bench/latency.mjs "$work/store" "$subs" "$commits"
    PYTHONPATH=sdk-py python3 sdk-py/bench/latency.py "$work/store" "$subs" "$commits"
done
# Generation time: 200 types (the library's six schemas, each under 33-34 names).
gen=$work/gen
mkdir -p "$gen/schemas"
printf '[store]\nschemas = "schemas"\n' > "$gen/stardust.toml"
i=0
while [ $i -lt 200 ]; do
    for s in examples/library/schemas/*.schema.json; do
        [ $i -lt 200 ] || break
        cp "$s" "$gen/schemas/t$i-$(basename "$s")"
        i=$((i + 1))
    done
done
for lang in typescript python; do
    start=$(date +%s.%N)
    for _ in 1 2 3 4 5; do "$bin" sdk generate "$gen" --lang "$lang" --out "$work/out-$lang" 2>/dev/null; rm -rf "$work/out-$lang"; done
    end=$(date +%s.%N)
    echo "generate 200 types ($lang): $(echo "($end - $start) / 5 * 1000" | bc -l | xargs printf '%.1f') ms per run (5 runs, loading and analysing the store included)"
    "$bin" sdk generate "$gen" --lang "$lang" --out "$work/out-$lang" 2>&1 | sed "s/^/generate ($lang) alone: /"
done

#!/usr/bin/env python3
"""The derived files' benchmark (issue 20): entity files against plain files on one mount.

Run by hand, as root, after a release build:

    cargo build --release
    cargo run --release -p stardust-core --example gen_store -- /tmp/derived-bench --docs 10000 --entities 100000
    python3 scripts/bench_derived.py /tmp/derived-bench [--binary target/release/stardust]

It mounts a copy of the store (`stardust mount`) and measures, on that one mount:
  - `cat` of an entity file against `cat` of a plain 8 KB file in the store (the peer), both
    as a process (`cat F > /dev/null`, what a shell user pays) and in-process (open + read +
    close from Python, the mount's own cost without the process start), alternating the two;
  - `ls -lR` of `.stardust/entities/` (100,000 entity files), cold (the first listing after
    the mount started, page cache dropped) and warm, and of the store's documents (warm).
Each figure is a median. Nothing is asserted: read the table.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CATS = 300
LISTINGS = 5


def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def wait_mounted(path, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open("/proc/self/mounts") as f:
            if any(line.split(" ")[1] == path for line in f):
                return
        if proc.poll() is not None:
            sys.exit(f"the mount exited with {proc.returncode}")
        time.sleep(0.05)
    sys.exit("not mounted in time")


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cat_process(path):
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)


def cat_in_process(path):
    with open(path, "rb") as f:
        while f.read(65536):
            pass


def ls_lr(path):
    subprocess.run(["ls", "-lR", path], stdout=subprocess.DEVNULL, check=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--binary", default="target/release/stardust")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="derived-bench-")
    store = os.path.join(work, "store")
    mnt = os.path.join(work, "mnt")
    shutil.copytree(args.store, store, ignore=shutil.ignore_patterns(".stardust"))
    os.mkdir(mnt)
    # The peer: a plain (non-document) file of 8 KB in the store.
    with open(os.path.join(store, "plain-8k.txt"), "wb") as f:
        f.write(os.urandom(4096).hex().encode()[:8192])
    dropped = drop_caches()
    proc = subprocess.Popen([args.binary, "mount", store, mnt], stderr=subprocess.DEVNULL)
    try:
        started = time.perf_counter()
        wait_mounted(mnt, proc)
        print(f"mounted in {time.perf_counter() - started:.2f} s; caches dropped: {dropped}")
        entities = os.path.join(mnt, ".stardust/entities")
        cold = timed(lambda: ls_lr(entities))
        count = sum(len(files) for _, _, files in os.walk(entities))
        warm = [timed(lambda: ls_lr(entities)) for _ in range(LISTINGS)]
        # The documents (the glob leaves `.stardust/` out).
        docs = lambda: subprocess.run(["bash", "-c", f"ls -lR {mnt}/*"], stdout=subprocess.DEVNULL, check=True)
        docs_warm = [timed(docs) for _ in range(LISTINGS)]
        kind = sorted(os.listdir(entities))[0]
        name = sorted(os.listdir(os.path.join(entities, kind)))[0]
        entity = os.path.join(entities, kind, name)
        plain = os.path.join(mnt, "plain-8k.txt")
        size = os.path.getsize(entity)
        rows = {"entity process": [], "plain process": [], "entity open+read": [], "plain open+read": []}
        for i in range(CATS):
            pair = [("entity", entity), ("plain", plain)]
            if i % 2:
                pair.reverse()
            for label, path in pair:
                rows[f"{label} process"].append(timed(lambda: cat_process(path)))
                rows[f"{label} open+read"].append(timed(lambda: cat_in_process(path)))
        ms = lambda xs: statistics.median(xs) * 1000
        p95 = lambda xs: sorted(xs)[int(len(xs) * 0.95)] * 1000
        print(f"entity file {entity[len(mnt):]} ({size} bytes); plain file 8192 bytes")
        print("| measure | entity file | plain 8 KB file | ratio |")
        print("|---|---|---|---|")
        for how in ["process", "open+read"]:
            e, p = rows[f"entity {how}"], rows[f"plain {how}"]
            print(f"| cat ({how}) p50 | {ms(e):.3f} ms | {ms(p):.3f} ms | {ms(e) / ms(p):.2f}x |")
            print(f"| cat ({how}) p95 | {p95(e):.3f} ms | {p95(p):.3f} ms | {p95(e) / p95(p):.2f}x |")
        print(f"| ls -lR .stardust/entities ({count} files), cold | {cold:.2f} s | | |")
        print(f"| ls -lR .stardust/entities, warm p50 | {statistics.median(warm):.2f} s | | |")
        print(f"| ls -lR of the documents, warm p50 | {statistics.median(docs_warm):.2f} s | | |")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

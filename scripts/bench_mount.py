#!/usr/bin/env python3
"""The mount's benchmark (issue 8), side by side with bindfs over the same store, in one run.

Run by hand, as root, after a release build:

    cargo build --release
    cargo run --release -p stardust-core --example gen_store -- /tmp/mount-bench --docs 10000 --entities 20000
    python3 scripts/bench_mount.py /tmp/mount-bench [--binary target/release/stardust]

It measures, for the stardust mount and for bindfs (apt install bindfs):
  - sequential read of a 100 MB non-document file (dd, page cache dropped before each run);
  - `ls -lR` of the whole store (10,000 documents), cold (caches dropped) and warm;
  - the latency of saving a 10 KB document: write + close through the stardust mount
    (validation and the durable commit included) against write + fsync + close on bindfs.
Each figure is the median of several runs (reads: 10 runs, alternating the two mounts). Nothing is asserted: read the table.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 5
SAVES = 50


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def wait_mounted(path, proc=None, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open("/proc/self/mounts") as f:
            if any(line.split(" ")[1] == path for line in f):
                return
        if proc is not None and proc.poll() is not None:
            sys.exit(f"the mount at {path} exited early")
        time.sleep(0.05)
    sys.exit(f"{path} not mounted after {timeout}s")


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def seq_read(mnt, runs=RUNS):
    times = []
    for _ in range(runs):
        drop_caches()
        times.append(timed(f"dd if={mnt}/big.bin of=/dev/null bs=1M status=none"))
    return 100 / statistics.median(times)  # MB/s


def seq_read_pair(star, bind):
    """Alternate the two mounts run by run, so that the machine's load swings hit both."""
    s, b = [], []
    for _ in range(RUNS * 2):
        s.append(seq_read(star, 1))
        b.append(seq_read(bind, 1))
    return statistics.median(s), statistics.median(b)


def ls_lr(mnt, cold):
    times = []
    if not cold:
        timed(f"ls -lR {mnt}")
    for _ in range(RUNS):
        if cold:
            drop_caches()
        times.append(timed(f"ls -lR {mnt}"))
    return statistics.median(times)


def document(i):
    """A valid 10 KB document of its own type-less entity, different each save."""
    pad = "x" * (10 * 1024 - 80)
    return json.dumps({"id": "bench/save", "n": i, "pad": pad}).encode() + b"\n"


def save_latency(mnt, fsync):
    path = os.path.join(mnt, "bench-save.json")
    times = []
    for i in range(SAVES):
        data = document(i)
        start = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
        os.close(fd)
        times.append(time.perf_counter() - start)
    os.unlink(path)
    return statistics.median(times) * 1000, sorted(times)[int(len(times) * 0.95)] * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--binary", default="target/release/stardust")
    args = parser.parse_args()
    store = os.path.abspath(args.store)
    big = os.path.join(store, "big.bin")
    if not os.path.exists(big):
        subprocess.run(f"head -c 100M /dev/urandom > {big}", shell=True, check=True)

    work = tempfile.mkdtemp(prefix="mount-bench-")
    star, bind = os.path.join(work, "stardust"), os.path.join(work, "bindfs")
    os.makedirs(star)
    os.makedirs(bind)
    log = open(os.path.join(work, "mount.log"), "w")
    started = time.perf_counter()
    proc = subprocess.Popen([args.binary, "mount", store, star], stderr=log)
    wait_mounted(star, proc)
    mount_time = time.perf_counter() - started
    subprocess.run(["bindfs", store, bind], check=True)
    wait_mounted(bind)
    try:
        rows = []
        s, b = seq_read_pair(star, bind)
        rows.append(("sequential read 100 MB (MB/s)", s, b, s / b, ">= 0.8x"))
        s, b = ls_lr(star, cold=True), ls_lr(bind, cold=True)
        rows.append(("ls -lR, cold (s)", s, b, s / b, "<= 1.5x"))
        s, b = ls_lr(star, cold=False), ls_lr(bind, cold=False)
        rows.append(("ls -lR, warm (s)", s, b, s / b, "<= 1.5x"))
        (s, s95), (b, b95) = save_latency(star, fsync=False), save_latency(bind, fsync=True)
        rows.append(("save 10 KB p50 (ms)", s, b, s / b, "<= 3x"))
        rows.append(("save 10 KB p95 (ms)", s95, b95, s95 / b95, ""))
        print(f"mount ready after {mount_time:.2f} s (store opened and indexed)")
        print("| measure | stardust | bindfs | ratio | goal |")
        print("|---|---|---|---|---|")
        for name, s, b, ratio, goal in rows:
            print(f"| {name} | {s:.3f} | {b:.3f} | {ratio:.2f}x | {goal} |")
    finally:
        subprocess.run(["fusermount3", "-u", bind])
        proc.terminate()
        proc.wait(timeout=60)


if __name__ == "__main__":
    main()

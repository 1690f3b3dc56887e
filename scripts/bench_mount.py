#!/usr/bin/env python3
"""The mount's benchmark (issues 8 and 39): the plain folder, the stardust mount and bindfs of
the same tree, side by side in one run.

Run by hand, as root, after a release build:

    cargo build --release
    # the earlier figures need the 10,000-document store (optional):
    cargo run --release -p stardust-core --example gen_store -- /tmp/mount-bench --docs 10000 --entities 20000
    python3 scripts/bench_mount.py [--store /tmp/mount-bench] [--binary target/release/stardust]
        [--baseline OTHER_STARDUST]  # another build mounted beside, for before/after in one run

Whole-tree operations (always): the script generates a git repository of 5,000 files and about
40 MB, like a real one (nested folders, .py/.ts/.md/.json files of various sizes, some larger
binary files, a .gitignore, one commit), makes three identical copies of it, and serves one
with `stardust serve REPO --mount MNT`, shows one through `bindfs` (apt install bindfs) and
leaves one as a plain folder. On each it times, warm (each operation once untimed first):
  - `git status`, `find .`, `grep -r` of a string found in a few files, reading every file
    (`find -type f | xargs cat`; GNU tar skips the reading when writing to /dev/null);
  - `rm -rf` of 5,000 files: a fresh copy of the work tree is copied in (untimed, through the
    same path) before each run, and the mount's core is left to settle first;
  - `npm install --offline` of a small project (express and lodash, about 1,000 files) from a
    local cache filled once from the registry before the runs (skipped, with the reason, when
    that fails).

The earlier figures (with --store, a store made by gen_store): sequential read of a 100 MB
non-document file (page cache dropped before each run), `ls -lR` of the 10,000 documents cold
and warm, and the latency of saving a 10 KB document (write + close through the mount, the
commit included; write + fsync + close in the folder and on bindfs).

Each figure is the median of several runs, the three places taken in turn within each run so
that the machine's load swings hit them alike. Nothing is asserted: read the tables.
"""

import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 5
SAVES = 50
NEEDLE = "needle_7f3a9c"
PLACES = ("folder", "stardust", "bindfs")


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def wait_mounted(path, proc=None, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open("/proc/self/mounts") as f:
            if any(line.split(" ")[1] == path for line in f):
                return
        if proc is not None and proc.poll() is not None:
            sys.exit(f"the mount at {path} exited early")
        time.sleep(0.05)
    sys.exit(f"{path} not mounted after {timeout}s")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_idle(pid, timeout=300):
    """Until the process has used (almost) no CPU for a second: the core took in what it was
    given (commits, the watcher's records, the views)."""
    deadline = time.time() + timeout
    quiet = 0
    last = cpu_ticks(pid)
    while time.time() < deadline and quiet < 2:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        quiet = quiet + 1 if now - last <= 2 else 0
        last = now


def wait_all(pids):
    for pid in pids:
        wait_idle(pid)


def timed(cmd, cwd=None):
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
    return time.perf_counter() - start


# ---------------------------------------------------------------------------------------------
# The generated repository.

WORDS = (
    "value index count items result config state request response handler client server "
    "update create delete render parse format token buffer stream error message record user "
    "project module import export return async await yield class def self this const let "
    "function interface type string number boolean list dict map filter reduce options"
).split()


def text_pool(rnd, size):
    lines, total = [], 0
    while total < size:
        indent = "    " * rnd.randint(0, 3)
        line = indent + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 12)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def sized(rnd, pool, size):
    start = rnd.randint(0, len(pool) - size - 1)
    start = pool.rfind("\n", 0, start) + 1
    return pool[start : start + size]


def json_doc(rnd, size):
    items, total = [], 0
    while total < size:
        item = {"name": rnd.choice(WORDS), "count": rnd.randint(0, 999), "tags": rnd.sample(WORDS, 3)}
        items.append(item)
        total += 70
    return json.dumps({"version": f"1.{rnd.randint(0, 20)}.0", "items": items}, indent=2) + "\n"


def generate_repo(root, files=5000, seed=39):
    """A git repository of `files` files and about 40 MB, with NEEDLE in a dozen of them."""
    rnd = random.Random(seed)
    pool = text_pool(rnd, 2_000_000)
    dirs = [""]
    for top in ["src", "lib", "tests", "docs", "scripts", "config", "assets", "packages"]:
        dirs.append(top)
    while len(dirs) < 450:
        parent = rnd.choice(dirs)
        if parent.count("/") >= 4:
            continue
        dirs.append(f"{parent}/{rnd.choice(WORDS)}{rnd.randint(0, 99)}".lstrip("/"))
    dirs = sorted(set(dirs))
    os.makedirs(root)
    written = set()
    binaries = 40
    needles = set(rnd.sample(range(binaries, files - 1), 12))
    for i in range(files - 1):
        folder = rnd.choice(dirs)
        if i < binaries:
            name, size = f"blob{i}.bin", rnd.randint(150_000, 450_000)
            content = rnd.randbytes(size)
        else:
            ext = rnd.choices([".py", ".ts", ".md", ".json", ".txt"], [30, 30, 12, 20, 8])[0]
            size = min(int(rnd.lognormvariate(8.0, 1.0)), 60_000)
            name = f"{rnd.choice(WORDS)}_{i}{ext}"
            text = json_doc(rnd, size) if ext == ".json" else sized(rnd, pool, max(size, 40))
            if i in needles:
                text = text.replace("\n", f"\n# {NEEDLE}\n", 1)
            content = text.encode()
        path = os.path.join(root, folder, name)
        if path in written:
            continue
        written.add(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("node_modules/\ndist/\n__pycache__/\n*.log\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", "init", "-q", root], check=True)
    subprocess.run(git + ["-C", root, "add", "-A"], check=True)
    subprocess.run(git + ["-C", root, "commit", "-qm", "generated"], check=True)
    # A second commit, so that `git checkout HEAD~1` has work: 5% of the text files changed,
    # 100 removed, 100 added.
    texts = sorted(p for p in written if not p.endswith(".bin"))
    for path in rnd.sample(texts, len(texts) // 20):
        with open(path, "a") as f:
            f.write("changed in the second commit\n")
    for path in rnd.sample(texts, 100):
        if os.path.exists(path):
            os.remove(path)
    for i in range(100):
        path = os.path.join(root, rnd.choice(dirs), f"added_{i}.py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(sized(rnd, pool, 2000))
    subprocess.run(git + ["-C", root, "add", "-A"], check=True)
    subprocess.run(git + ["-C", root, "commit", "-qm", "second"], check=True)


def tree_size(root):
    count = total = 0
    for folder, _, names in os.walk(root):
        if "/.git" in folder:
            continue
        for name in names:
            count += 1
            total += os.lstat(os.path.join(folder, name)).st_size
    return count, total


def prepare_npm(work, packages):
    """A small project and an npm cache holding everything it needs (npm's own cache: filled
    from it, else from the registry); None when that fails (the reason is printed)."""
    project, cache = os.path.join(work, "npm-app"), os.path.expanduser("~/.npm")
    os.makedirs(project)
    with open(os.path.join(project, "package.json"), "w") as f:
        json.dump({"name": "bench-app", "version": "1.0.0", "private": True}, f)
    out = subprocess.run(
        # With the tarballs' addresses in the lock (a user's npmrc may leave them out), an
        # offline install needs nothing but the cache.
        ["npm", "install", "--omit-lockfile-registry-resolved=false", "--cache", cache]
        + ["--prefer-offline", "--no-audit", "--no-fund"]
        + packages,
        cwd=project,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        print(f"npm install skipped: filling the cache from the registry failed:\n{out.stderr}")
        return None
    shutil.rmtree(os.path.join(project, "node_modules"))
    return project, cache


# ---------------------------------------------------------------------------------------------
# The whole-tree operations.


def run_tree(places, star_pids, npm, source, runs, needle, files, repo, rev):
    """Time each operation in each place; returns [(name, {place: median s})]. `source` is
    the work tree without .git (`files` files), `repo` the repository it comes from."""

    def ops():
        yield "git status", lambda p, i: timed("git status --porcelain", cwd=p), None
        checkout = f"git checkout -q {rev} && git checkout -q -"
        yield f"git checkout {rev} and back", lambda p, i: timed(checkout, cwd=p), None
        yield "find .", lambda p, i: timed("find . >/dev/null", cwd=p), None
        yield f"grep -r {needle} .", lambda p, i: timed(f"grep -rl {needle} . >/dev/null", cwd=p), None
        yield "read every file", lambda p, i: timed(
            "find . -type f -print0 | xargs -0 cat >/dev/null", cwd=p
        ), None
        # GNU tar skips reading the files when it writes to /dev/null itself.
        yield "tar -c . (to a pipe)", lambda p, i: timed("tar -cf - . | cat >/dev/null", cwd=p), None

        def fresh(target):
            def prepare(p, i):
                shutil.rmtree(os.path.join(p, f"{target}-{i - 1}"), ignore_errors=True)
                wait_all(star_pids)

            return prepare

        archive = source + ".tar"
        if not os.path.exists(archive):
            subprocess.run(["tar", "-cf", archive, "-C", source, "."], check=True)
        untar = lambda p, i: timed(f"mkdir tarx-{i} && tar -xf {archive} -C tarx-{i}", cwd=p)
        yield f"tar -x ({files:,} files)", untar, fresh("tarx")
        yield f"cp -r ({files:,} files)", lambda p, i: timed(f"cp -r {source} cp-{i}", cwd=p), fresh("cp")
        yield f"rsync -a ({files:,} files)", lambda p, i: timed(f"rsync -a {source}/ rsync-{i}/", cwd=p), fresh("rsync")
        clone = lambda p, i: timed(f"git clone -q --no-local {repo} clone-{i}", cwd=p)
        yield "git clone (--no-local)", clone, fresh("clone")

        def rm_prepare(p, i):
            subprocess.run(["cp", "-r", source, os.path.join(p, f"rm-{i}")], check=True)
            wait_all(star_pids)

        yield f"rm -rf ({files:,} files)", lambda p, i: timed(f"rm -rf rm-{i}", cwd=p), rm_prepare
        if npm is not None:
            project, cache = npm

            def npm_prepare(p, i):
                app = os.path.join(p, "npm-app")
                shutil.rmtree(app, ignore_errors=True)
                os.makedirs(app)
                for name in ("package.json", "package-lock.json"):
                    shutil.copy(os.path.join(project, name), app)
                wait_all(star_pids)

            cmd = f"npm install --offline --cache {cache} --no-audit --no-fund --ignore-scripts --loglevel=error"
            yield "npm install (offline)", lambda p, i: timed(cmd, cwd=os.path.join(p, "npm-app")), npm_prepare

    rows = []
    for name, op, prepare in ops():
        times = {place: [] for place in places}
        for i in range(-1, runs):  # run -1 warms up
            for place, path in places.items():
                if prepare is not None:
                    prepare(path, i)
                t = op(path, i)
                if i >= 0:
                    times[place].append(t)
            wait_all(star_pids)
        # What the writes left is cleared before the next operation walks the tree.
        for path in places.values():
            for left in os.listdir(path):
                if re.fullmatch(r"(tarx|cp|rsync|clone|rm)--?[0-9]+", left):
                    shutil.rmtree(os.path.join(path, left), ignore_errors=True)
        wait_all(star_pids)
        medians = {place: statistics.median(ts) for place, ts in times.items()}
        print(f"  {name}: " + ", ".join(f"{p} {t:.3f}" for p, t in medians.items()), flush=True)
        rows.append((name, medians))
    return rows


# The goals against the folder (every operation: no slower than bindfs).
TREE_GOALS = {
    "git status": 2.0,
    "find .": 2.0,
    "grep -r": 1.5,
    "read every file": 1.5,
    "rm -rf": 3.0,
    "npm install (offline)": 1.3,
}


def goal_of(name):
    return next((g for k, g in TREE_GOALS.items() if name.startswith(k)), None)


def print_tree(rows):
    before = "before" in rows[0][1]
    print(
        "| operation (s, median) | folder | stardust | bindfs |"
        + (" stardust before |" if before else "")
        + " stardust / folder | bindfs / folder |"
        + (" before / folder |" if before else "")
        + " goal |"
    )
    print("|---|---|---|---|---|---|---|" + ("---|---|" if before else ""))
    for name, m in rows:
        f, s, b = m["folder"], m["stardust"], m["bindfs"]
        goal = goal_of(name)
        met = "met" if (goal is None or s <= goal * f) and s <= b else "**not met**"
        row = f"| {name} | {f:.3f} | {s:.3f} | {b:.3f} |"
        row += f" {m['before']:.3f} |" if before else ""
        row += f" {s / f:.2f}x | {b / f:.2f}x |"
        row += f" {m['before'] / f:.2f}x |" if before else ""
        aim = f"<= {goal}x and <= bindfs" if goal else "<= bindfs"
        print(row + f" {aim}: {met} |")


# ---------------------------------------------------------------------------------------------
# The earlier figures, on a gen_store store (issue 8).


def seq_read(path):
    drop_caches()
    return 100 / timed(f"dd if={path}/big.bin of=/dev/null bs=1M status=none")  # MB/s


def ls_lr(path, cold):
    if cold:
        drop_caches()
    return timed(f"ls -lR {path}")


def document(i):
    """A valid 10 KB document of its own type-less entity, different each save."""
    pad = "x" * (10 * 1024 - 80)
    return json.dumps({"id": "bench/save", "n": i, "pad": pad}).encode() + b"\n"


def save_latency(path, fsync):
    path = os.path.join(path, "bench-save.json")
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


def run_store(places, runs):
    """The earlier rows: [(name, {place: figure}, goal against bindfs)]."""
    rows = []
    reads = {p: [] for p in places}
    for _ in range(runs * 2):
        for place, path in places.items():
            reads[place].append(seq_read(path))
    rows.append(("sequential read 100 MB (MB/s)", {p: statistics.median(v) for p, v in reads.items()}, ">= 0.8x"))
    for cold in (True, False):
        times = {p: [] for p in places}
        for place, path in places.items():
            if not cold:
                ls_lr(path, False)
        for _ in range(runs):
            for place, path in places.items():
                times[place].append(ls_lr(path, cold))
        name = f"ls -lR, {'cold' if cold else 'warm'} (s)"
        rows.append((name, {p: statistics.median(v) for p, v in times.items()}, "<= 1.5x"))
    saves = {p: save_latency(path, fsync=p != "stardust") for p, path in places.items()}
    rows.append(("save 10 KB p50 (ms)", {p: v[0] for p, v in saves.items()}, "<= 3x"))
    rows.append(("save 10 KB p95 (ms)", {p: v[1] for p, v in saves.items()}, ""))
    return rows


def print_store(rows):
    print("| measure | folder | stardust | bindfs | stardust / bindfs | goal (against bindfs) |")
    print("|---|---|---|---|---|---|")
    for name, m, goal in rows:
        f, s, b = m["folder"], m["stardust"], m["bindfs"]
        print(f"| {name} | {f:.3f} | {s:.3f} | {b:.3f} | {s / b:.2f}x | {goal} |")


# ---------------------------------------------------------------------------------------------


class Mounts:
    """The stardust and bindfs mounts started by the run, all ended by `close`."""

    def __init__(self, work):
        self.work, self.procs, self.binds = work, [], []

    def stardust(self, binary, args, dir, log_name):
        os.makedirs(dir)
        log = open(os.path.join(self.work, log_name), "w")
        started = time.perf_counter()
        proc = subprocess.Popen([binary] + args, stderr=log, stdout=subprocess.DEVNULL)
        self.procs.append(proc)
        wait_mounted(dir, proc)
        return proc, time.perf_counter() - started

    def bindfs(self, source, dir):
        os.makedirs(dir)
        subprocess.run(["bindfs", source, dir], check=True)
        self.binds.append(dir)
        wait_mounted(dir)

    def close(self):
        for dir in self.binds:
            subprocess.run(["fusermount3", "-u", dir])
        for proc in self.procs:
            proc.terminate()
            proc.wait(timeout=120)


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    load = open("/proc/loadavg").read().split()[:3]
    return f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, load {' '.join(load)}, {time.strftime('%Y-%m-%d %H:%M %Z')}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", help="a gen_store store for the earlier figures")
    parser.add_argument("--binary", default="target/release/stardust")
    parser.add_argument(
        "--baseline", help="another stardust binary, mounted beside (whole-tree figures only)"
    )
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument(
        "--repo", help="a real git repository to clone and use instead of the generated one"
    )
    parser.add_argument("--needle", help="the string grep -r looks for (default: one the generated repository holds)")
    parser.add_argument(
        "--exclude",
        nargs="*",
        default=[],
        help="folders left out of the tree that tar, cp, rsync and rm copy in: a repository "
        "holding stores of its own (Stardust's examples/) would copy their entities into the "
        "same store, where the copies' ids collide and their saves are refused, as they must be",
    )
    parser.add_argument("--checkout", default="HEAD~1", help="the revision git checkout goes to and back from")
    parser.add_argument(
        "--npm", default="is-number@7.0.0", help="the packages npm installs, space separated"
    )
    parser.add_argument("--no-tree", action="store_true", help="only the earlier figures")
    parser.add_argument("--work", help="where to put the repositories and mounts (default: a new temporary folder)")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    work = args.work or tempfile.mkdtemp(prefix="mount-bench-")
    os.makedirs(work, exist_ok=True)
    print(f"before: {machine()}", flush=True)
    mounts = Mounts(work)
    try:
        if not args.no_tree:
            source = os.path.join(work, "source")
            if args.repo:
                subprocess.run(["git", "clone", "-q", "--no-local", args.repo, source], check=True)
                what = f"repository {args.repo}"
            else:
                generate_repo(source)
                what = "generated repository"
            count, size = tree_size(source)
            print(f"{what}: {count} files, {size / 1e6:.1f} MB (without .git)", flush=True)
            npm = prepare_npm(work, args.npm.split())
            names = PLACES + (("before",) if args.baseline else ())
            repos = {p: os.path.join(work, f"repo-{p}") for p in names}
            for path in repos.values():
                subprocess.run(["cp", "-a", source, path], check=True)
            work_tree = os.path.join(work, "work-tree")
            subprocess.run(["cp", "-r", source, work_tree], check=True)
            shutil.rmtree(os.path.join(work_tree, ".git"))
            for left_out in args.exclude:
                shutil.rmtree(os.path.join(work_tree, left_out))
            copied, _ = tree_size(work_tree)
            cloned = source
            if args.exclude:
                # The clone's files too: a repository of the tree without the left-out folders.
                cloned = os.path.join(work, "clone-source")
                subprocess.run(["cp", "-r", work_tree, cloned], check=True)
                git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
                subprocess.run(["git", "init", "-q", cloned], check=True)
                subprocess.run(git + ["-C", cloned, "add", "-A"], check=True)
                subprocess.run(git + ["-C", cloned, "commit", "-qm", "tree"], check=True)
            star_dir, bind_dir = os.path.join(work, "mnt-stardust"), os.path.join(work, "mnt-bindfs")
            star, ready = mounts.stardust(
                binary, ["serve", repos["stardust"], "--mount", star_dir], star_dir, "serve.log"
            )
            started = time.perf_counter()
            wait_idle(star.pid)
            settled = time.perf_counter() - started
            print(f"mount ready after {ready:.2f} s, the core idle {settled:.1f} s later", flush=True)
            mounts.bindfs(repos["bindfs"], bind_dir)
            places = {"folder": repos["folder"], "stardust": star_dir, "bindfs": bind_dir}
            pids = [star.pid]
            if args.baseline:
                before_dir = os.path.join(work, "mnt-before")
                baseline = os.path.abspath(args.baseline)
                serve = ["serve", repos["before"], "--mount", before_dir]
                before, _ = mounts.stardust(baseline, serve, before_dir, "serve-before.log")
                wait_idle(before.pid)
                places["before"] = before_dir
                pids.append(before.pid)
            needle = args.needle or NEEDLE
            rows = run_tree(places, pids, npm, work_tree, args.runs, needle, copied, cloned, args.checkout)
        if args.store:
            store = os.path.abspath(args.store)
            big = os.path.join(store, "big.bin")
            if not os.path.exists(big):
                subprocess.run(f"head -c 100M /dev/urandom > {big}", shell=True, check=True)
            star_dir, bind_dir = os.path.join(work, "store-stardust"), os.path.join(work, "store-bindfs")
            mounts.stardust(binary, ["mount", store, star_dir], star_dir, "mount.log")
            mounts.bindfs(store, bind_dir)
            store_rows = run_store({"folder": store, "stardust": star_dir, "bindfs": bind_dir}, args.runs)
        print(f"after: {machine()}")
        if not args.no_tree:
            print_tree(rows)
        if args.store:
            print_store(store_rows)
    finally:
        mounts.close()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

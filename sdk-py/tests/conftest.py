"""Fixtures: a copy of examples/library (STARDUST_LIBRARY) per test module, and its core
stopped at the end. Needs STARDUST_BIN (tests/run.py and tests/sdk_py.rs set both)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def stop_core(store: Path) -> None:
    """Stop the store's core (SIGTERM) and wait until its process is gone."""
    try:
        pid = int(json.loads((store / ".stardust/run/daemon.json").read_text())["pid"])
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        return
    for _ in range(400):
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.025)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    library = os.environ.get("STARDUST_LIBRARY")
    assert library and os.environ.get("STARDUST_BIN"), "set STARDUST_BIN and STARDUST_LIBRARY"
    copy = tmp_path_factory.mktemp("store") / "library"
    shutil.copytree(library, copy, ignore=shutil.ignore_patterns(".stardust"))
    yield copy
    stop_core(copy)


def apply(store: Path, patch: str) -> int:
    """``stardust apply STORE PATCH --yes``: a commit made by another client; its seq."""
    file = store.parent / "change.patch.dust"
    file.write_text(patch)
    out = subprocess.run(
        [os.environ["STARDUST_BIN"], "apply", str(store), str(file), "--yes", "--format", "json"],
        capture_output=True, text=True, check=False,
    )
    assert out.returncode == 0, out.stderr
    return int(json.loads(out.stdout)["seq"])

"""Runs the SDK's tests against a real core: generates the typed code for STARDUST_LIBRARY
(examples/library) with STARDUST_BIN, checks it, the runtime and the tests with
``mypy --strict``, then runs pytest. Exits non-zero on any failure. Used by tests/sdk_py.rs
(``cargo test``); by hand: ``STARDUST_BIN=... python3 sdk-py/tests/run.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

here = Path(__file__).resolve().parent
package = here.parent
bin_ = os.environ.get("STARDUST_BIN")
library = os.environ.get("STARDUST_LIBRARY", str(package.parent / "examples/library"))
if not bin_:
    sys.exit("set STARDUST_BIN to the stardust executable")

with tempfile.TemporaryDirectory(prefix="stardust-sdk-py-run-") as work:
    env = {**os.environ, "STARDUST_LIBRARY": library,
           "PYTHONPATH": os.pathsep.join([work, str(package), str(here)])}
    def run(*args: str) -> None:
        code = subprocess.run(args, env=env, cwd=work).returncode
        if code != 0:
            sys.exit(f"{' '.join(args)} exited {code}")
    run(bin_, "sdk", "generate", library, "--lang", "python", "--out", str(Path(work) / "library_types"))
    # The generator's snapshot for hostile schemas (core/test-data/sdkgen) checks and imports too.
    hostile = Path(work) / "hostile_types"
    hostile.mkdir()
    for part in (package.parent / "core/test-data/sdkgen/hostile.py.expect").read_text().split("//- ")[1:]:
        name, _, body = part.partition("\n")
        (hostile / name).write_text(body)
    run(sys.executable, "-c", "import hostile_types")
    run(sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.path.join(work, ".mypy"),
        str(Path(work) / "library_types"), str(hostile), str(package / "stardust_sdk"), str(here / "test_sdk.py"),
        str(here / "conftest.py"), str(package.parent / "examples/sdk-py/example.py"))
    run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(here))

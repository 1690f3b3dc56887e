"""Runs the SDK's tests against a real core: generates the package for STARDUST_LIBRARY
(examples/library) with STARDUST_BIN, installs it as a user would (``pip install --no-index``,
into a folder of its own), checks it, the runtime and the tests with ``mypy --strict``, then
runs pytest. Exits non-zero on any failure. Used by tests/sdk_py.rs (``cargo test``); by hand:
``STARDUST_BIN=... python3 sdk-py/tests/run.py``."""

from __future__ import annotations

import os
import shutil
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
    site = Path(work) / "site"
    env = {**os.environ, "STARDUST_LIBRARY": library, "PIP_ROOT_USER_ACTION": "ignore",
           "PYTHONPATH": os.pathsep.join([str(site), str(here)])}
    def run(*args: str) -> None:
        code = subprocess.run(args, env=env, cwd=work).returncode
        if code != 0:
            sys.exit(f"{' '.join(args)} exited {code}")
    generated = Path(work) / "library_types"
    run(bin_, "sdk", "generate", library, "--lang", "python", "--out", str(generated))
    run(sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-cache-dir",
        "--disable-pip-version-check", "--target", str(site), str(generated))
    # The generator's snapshot for hostile schemas (core/test-data/sdkgen) checks and imports
    # too, with the runtime the package carries.
    hostile = site / "hostile_types"
    hostile.mkdir()
    for part in (package.parent / "core/test-data/sdkgen/hostile.py.expect").read_text().split("//- ")[1:]:
        name, _, body = part.partition("\n")
        (hostile / name).write_text(body)
    shutil.copytree(site / "library_types/_runtime", hostile / "_runtime")
    run(sys.executable, "-c", "import hostile_types")
    run(sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.path.join(work, ".mypy"),
        str(site / "library_types"), str(hostile), str(package / "stardust_sdk"), str(package / "stardust_build.py"),
        str(here / "test_sdk.py"), str(here / "conftest.py"), str(package.parent / "examples/sdk-py/example.py"))
    run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(here))

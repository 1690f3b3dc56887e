"""A PEP 517 build backend with no dependencies, for the packages of a Stardust SDK: this one
(sdk-py/) and every package ``stardust sdk generate --lang python`` writes, which carries a copy.

``pip install --no-index ./DIR`` must work with nothing fetched, and pip's isolated build
environment starts empty, so a backend that must be installed first (setuptools, hatchling,
flit) cannot build offline. This file is the backend, found through ``backend-path`` in
pyproject.toml, and uses only the standard library. It reads ``[project]`` (name, version,
description, requires-python, dependencies, optional-dependencies) and ``[tool.stardust-build] packages`` (the import packages to
ship), and writes a pure-Python wheel (``py3-none-any``), a source archive, or an editable
wheel (a ``.pth`` file naming this folder). Archives are reproducible: same files, same bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
]

#: Every archive member's time (zip cannot store earlier): the same bytes on every build.
_EPOCH = (1980, 1, 1, 0, 0, 0)


class _Project:
    """What pyproject.toml (in the working directory, the project's root) says."""

    def __init__(self) -> None:
        self.root = Path.cwd()
        with open(self.root / "pyproject.toml", "rb") as f:
            data: dict[str, Any] = tomllib.load(f)
        project = data.get("project", {})
        self.name: str = project["name"]
        self.version: str = project["version"]
        self.summary: str = project.get("description", "")
        self.requires_python: str | None = project.get("requires-python")
        self.dependencies: list[str] = project.get("dependencies", [])
        self.extras: dict[str, list[str]] = project.get("optional-dependencies", {})
        self.packages: list[str] = data.get("tool", {}).get("stardust-build", {}).get("packages", [])
        if not self.packages:
            raise ValueError("pyproject.toml: list the import packages in [tool.stardust-build] packages")
        # The name as wheel and dist-info file names spell it (PEP 427, PEP 503).
        self.stem = f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version}"

    def metadata(self) -> bytes:
        lines = ["Metadata-Version: 2.1", f"Name: {self.name}", f"Version: {self.version}"]
        if self.summary:
            lines.append(f"Summary: {self.summary}")
        if self.requires_python:
            lines.append(f"Requires-Python: {self.requires_python}")
        lines += [f"Requires-Dist: {dependency}" for dependency in self.dependencies]
        for extra, dependencies in sorted(self.extras.items()):
            lines.append(f"Provides-Extra: {extra}")
            lines += [f'Requires-Dist: {dependency}; extra == "{extra}"' for dependency in dependencies]
        return ("\n".join(lines) + "\n").encode()

    def files(self) -> list[tuple[str, Path]]:
        """Every file of the packages (no bytecode), as (archive path, file), sorted."""
        out: list[tuple[str, Path]] = []
        for package in self.packages:
            top = self.root / package
            if not (top / "__init__.py").is_file():
                raise ValueError(f"pyproject.toml: package {package!r} has no {package}/__init__.py")
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for filename in filenames:
                    if not filename.endswith((".pyc", ".pyo")):
                        path = Path(dirpath) / filename
                        out.append((path.relative_to(self.root).as_posix(), path))
        return sorted(out)


def _wheel(wheel_directory: str, members: list[tuple[str, bytes]], project: _Project) -> str:
    dist_info = f"{project.stem}.dist-info"
    members = members + [
        (f"{dist_info}/METADATA", project.metadata()),
        (
            f"{dist_info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: stardust_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
    ]
    record = io.StringIO()
    for path, data in members:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{path},sha256={digest},{len(data)}\n")
    record.write(f"{dist_info}/RECORD,,\n")
    members.append((f"{dist_info}/RECORD", record.getvalue().encode()))
    name = f"{project.stem}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data in members:
            info = zipfile.ZipInfo(path, _EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    return name


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """A wheel of the packages."""
    project = _Project()
    return _wheel(wheel_directory, [(path, file.read_bytes()) for path, file in project.files()], project)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """A wheel whose ``.pth`` file puts this folder on ``sys.path`` (PEP 660)."""
    project = _Project()
    pth = (str(project.root) + "\n").encode()
    return _wheel(wheel_directory, [(f"{project.stem.split('-')[0]}.pth", pth)], project)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """A source archive: pyproject.toml, this backend, README.md and the packages."""
    project = _Project()
    members = [(path, file.read_bytes()) for path, file in project.files()]
    for extra in ("pyproject.toml", "stardust_build.py", "README.md"):
        if (project.root / extra).is_file():
            members.append((extra, (project.root / extra).read_bytes()))
    members.append(("PKG-INFO", project.metadata()))
    name = f"{project.stem}.tar.gz"
    with (
        open(Path(sdist_directory) / name, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path, data in sorted(members):
            info = tarfile.TarInfo(f"{project.stem}/{path}")
            info.size, info.mode, info.mtime = len(data), 0o644, 315532800
            tar.addfile(info, io.BytesIO(data))
    return name


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []

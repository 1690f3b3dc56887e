"""The generated declarations as data ("shapes") and the one checker that holds every value
from the core to them: a value that does not fit is a DecodeError naming the field."""

from __future__ import annotations

from typing import Any

from ._errors import DecodeError

Shape = dict[str, Any]
Decls = dict[str, Any]


def check(decls: Decls, shape: Shape, value: object, path: str) -> None:
    """Raise DecodeError when ``value`` does not fit ``shape`` (``path`` names where it is)."""
    problem = _mismatch(decls, shape, value, path)
    if problem is not None:
        raise DecodeError(*problem)


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    return f"string {value!r}"


def _mismatch(decls: Decls, shape: Shape, value: object, path: str) -> tuple[str, str] | None:
    def expected(what: str) -> tuple[str, str]:
        return (path, f"expected {what}, found {_describe(value)}")

    kind = shape.get("kind")
    if kind == "unknown":
        return None
    if kind == "null":
        return None if value is None else expected("null")
    if kind == "boolean":
        return None if isinstance(value, bool) else expected("a boolean")
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok or (isinstance(value, float) and value.is_integer())
        return None if ok else expected("an integer")
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else expected("a number")
    if kind == "string":
        return None if isinstance(value, str) else expected("a string")
    if kind == "literal":
        values = shape["values"]
        found = any(v == value and type(v) is type(value) for v in values)
        return None if found else expected("one of " + ", ".join(repr(v) for v in values))
    if kind == "ref":
        t = shape["type"]
        ok = isinstance(value, str) and value.startswith(f"@{t}/")
        return None if ok else expected(f"a reference to a {t} (@{t}/...)")
    if kind == "id":
        t = shape["type"]
        ok = isinstance(value, str) and value.startswith(f"{t}/")
        return None if ok else expected(f"the id of a {t} ({t}/...)")
    if kind == "array":
        if not isinstance(value, list):
            return expected("an array")
        for i, item in enumerate(value):
            p = _mismatch(decls, shape["items"], item, f"{path}[{i}]")
            if p is not None:
                return p
        return None
    if kind == "map":
        if not isinstance(value, dict):
            return expected("an object")
        for k, v in value.items():
            p = _mismatch(decls, shape["values"], v, f"{path}.{k}")
            if p is not None:
                return p
        return None
    if kind == "named":
        name = shape["name"]
        decl = decls.get(name)
        if decl is None:
            return (path, f"the generated code has no declaration {name}; generate it again")
        if not isinstance(value, dict):
            return expected(f"an object ({name})")
        known = set()
        for field in decl["fields"]:
            key = field["key"]
            known.add(key)
            if key not in value:
                if field["required"]:
                    return (f"{path}.{key}", "missing, and the schema requires it")
                continue
            p = _mismatch(decls, field["shape"], value[key], f"{path}.{key}")
            if p is not None:
                return p
        for k, v in value.items():
            if k in known:
                continue
            if decl["extra"] is None:
                return (f"{path}.{k}", f"a field {name} does not have")
            p = _mismatch(decls, decl["extra"], v, f"{path}.{k}")
            if p is not None:
                return p
        return None
    if kind == "union":
        first = None
        for option in shape["of"]:
            p = _mismatch(decls, option, value, path)
            if p is None:
                return None
            first = first or p
        return first or expected("nothing (an empty union)")
    return (path, f"a shape of unknown kind {kind!r}; generate the code again")

"""The SDK's errors: every one carries one of Stardust's error codes, the core's own when it refused."""

from __future__ import annotations

from typing import Literal, get_args

Code = Literal[
    "config-invalid", "invalid-arguments", "not-found", "outside-store", "ambiguous-position",
    "unsupported", "refused", "conflict", "preview-not-found", "preview-expired",
    "preview-stale", "mutation-disabled", "type-error", "busy", "cancelled", "internal",
    "server-unavailable", "untrusted", "unavailable",
]

CODES: frozenset[str] = frozenset(get_args(Code))


class StardustError(Exception):
    """A failure. ``code`` is the error code: the core's for a command it refused,
    ``unavailable`` when no core could be reached or it went away, ``type-error`` for a value
    that does not fit the generated type. ``data`` holds the core's details."""

    def __init__(self, code: str, message: str, data: object = None) -> None:
        super().__init__(f"{message} [{code}]")
        self.code = code
        self.message = message
        self.data = data if data is not None else {"code": code}


class DecodeError(StardustError):
    """A value from the core that does not match the generated type; ``path`` names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__("type-error", f"{path}: {message}", {"code": "type-error", "path": path})
        self.path = path


def command_error(error: object) -> StardustError:
    """A JSON-RPC error as the SDK's error: the error code is in ``data.code``."""
    e = error if isinstance(error, dict) else {}
    message = e.get("message")
    data = e.get("data")
    code = "internal"
    if isinstance(data, dict) and data.get("code") in CODES:
        code = str(data["code"])
    elif e.get("code") == -32800:
        code = "cancelled"
    return StardustError(code, message if isinstance(message, str) else "the core gave no message", data)

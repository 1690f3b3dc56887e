"""One LSP connection to a store's core: ``stardust lsp --sdk --store STORE`` on stdio (attached to
the store's core, which it starts when none runs), ``initialize`` with the change
notifications wanted, then JSON-RPC requests and notifications in Content-Length frames."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from typing import Any

from ._errors import StardustError, command_error

MAX_FRAME = 512 * 1024 * 1024
METHOD_NOT_FOUND = -32601
# One frame's body may be large (a page of pulled entities): the stream's line limit is for
# headers only, bodies are read with readexactly.
STREAM_LIMIT = 1 << 20


def find_stardust(explicit: str | None = None) -> str:
    """The ``stardust`` executable: ``explicit``, else STARDUST_BIN, else ``stardust``
    on PATH, else beside the running executable. Raises naming every place tried."""
    if explicit:
        return explicit
    from_env = os.environ.get("STARDUST_BIN")
    if from_env:
        return from_env
    on_path = shutil.which("stardust")
    if on_path:
        return on_path
    beside = os.path.join(os.path.dirname(os.path.realpath(sys.executable)), "stardust")
    if os.access(beside, os.X_OK) and os.path.isfile(beside):
        return beside
    raise StardustError(
        "unavailable",
        f"cannot find the stardust executable (tried STARDUST_BIN, stardust on PATH, {beside}); "
        "install it on PATH or set STARDUST_BIN",
    )


class Connection:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self._next_id = 1
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._notifications: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()
        self._closed: StardustError | None = None
        self._stderr = b""
        self._reader = asyncio.ensure_future(self._read_loop())
        self._stderr_reader = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def open(cls, store: str, name: str, exe: str, wants: list[str],
                   timeout: float = 60.0) -> Connection:
        """Start ``stardust lsp --sdk --store STORE`` and initialize. An attempt that fails or is not
        answered within ``timeout`` seconds ends its process."""
        try:
            proc = await asyncio.create_subprocess_exec(
                exe, "lsp", "--sdk", "--store", store,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=STREAM_LIMIT,
            )
        except OSError as err:
            raise StardustError("unavailable", f"cannot run {exe}: {err}") from err
        conn = cls(proc)
        try:
            await asyncio.wait_for(conn.request("initialize", {
                "processId": os.getpid(),
                "clientInfo": {"name": name, "version": "0.1.0"},
                "capabilities": {"experimental": {"stardust": {"notifications": wants}}},
            }), timeout)
            await conn.notify("initialized", {})
        except asyncio.TimeoutError:
            await conn.close()
            raise StardustError(
                "unavailable", f"stardust lsp --store {store} did not answer initialize within {timeout} s",
            ) from None
        except BaseException:
            await conn.close()
            raise
        return conn

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def execute(self, command: str, arguments: object) -> Any:
        """Run a registry command (workspace/executeCommand with one argument object)."""
        return await self.request("workspace/executeCommand", {"command": command, "arguments": [arguments]})

    async def request(self, method: str, params: object) -> Any:
        if self._closed is not None:
            raise self._closed
        request_id = self._next_id
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await future

    async def notify(self, method: str, params: object) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def notification(self) -> tuple[str, Any]:
        """The next notification; raises the connection's error when it has ended."""
        item = await self._notifications.get()
        if item is None:
            self._notifications.put_nowait(None)
            assert self._closed is not None
            raise self._closed
        return item

    async def close(self) -> None:
        """End the connection (the core ends the session and drops its previews)."""
        self._close(StardustError("unavailable", "the connection was closed by this client"))
        if self._proc.returncode is None:
            try:
                self._proc.terminate()
            except ProcessLookupError:
                pass
        try:
            await asyncio.wait_for(self._proc.wait(), 5)
        except asyncio.TimeoutError:
            self._proc.kill()
        for task in (self._reader, self._stderr_reader):
            task.cancel()

    async def _send(self, message: object) -> None:
        body = json.dumps(message).encode()
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as err:
            self._close(StardustError("unavailable", f"the core closed the connection: {err}"))
            raise self._closed_error() from err

    def _closed_error(self) -> StardustError:
        assert self._closed is not None
        return self._closed

    def _close(self, err: StardustError) -> None:
        if self._closed is not None:
            return
        self._closed = err
        for future in self._pending.values():
            if not future.done():
                future.set_exception(err)
        self._pending.clear()
        self._notifications.put_nowait(None)

    async def _read_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        while chunk := await stderr.read(4096):
            self._stderr = (self._stderr + chunk)[-4000:]

    async def _read_loop(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            while True:
                length = None
                while True:
                    line = await stdout.readline()
                    if not line:
                        raise EOFError
                    text = line.decode("latin-1").strip()
                    if not text:
                        if length is not None:
                            break
                        continue
                    name, _, value = text.partition(":")
                    if name.lower() == "content-length":
                        length = int(value.strip())
                        if length > MAX_FRAME:
                            raise ValueError(f"a frame of {length} bytes is too large")
                body = await stdout.readexactly(length)
                self._dispatch(json.loads(body))
        except (EOFError, asyncio.IncompleteReadError, ConnectionResetError):
            await self._proc.wait()
            detail = self._stderr.decode(errors="replace").strip().splitlines()
            last = f": {detail[-1]}" if detail else ""
            self._close(StardustError(
                "unavailable",
                f"the core closed the connection{last}; connect again (a subscription reconnects by itself)",
            ))
        except (ValueError, json.JSONDecodeError) as err:
            self._close(StardustError("internal", f"the core's answer does not follow the protocol: {err}"))
            self._proc.kill()

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                # A request from the core: this client serves none.
                asyncio.ensure_future(self._send({
                    "jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": METHOD_NOT_FOUND, "message": f"the stardust SDK does not serve {method}"},
                }))
            else:
                self._notifications.put_nowait((method, message.get("params")))
            return
        request_id = message.get("id")
        future = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if future is None or future.done():
            return
        if "error" in message:
            future.set_exception(command_error(message["error"]))
        else:
            future.set_result(message.get("result"))

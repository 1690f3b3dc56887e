"""An MCP host built on the Python SDK's own client (`mcp` 1.x or 2.x from PyPI; scripts/test
installs each in its own virtual environment): it lists the tools at once, then runs the
requests it reads, one JSON line each, and writes one JSON line per answer, the protocol of
host.mjs beside it. Driven by tests/mcp_hosts.rs. Both SDK versions check a successful
answer's structured content against its tool's outputSchema.

    python host.py CLIENT-NAME -- COMMAND ARGS...
"""
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def write(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def main():
    argv = sys.argv[1:]
    name = argv[0]
    command, *args = argv[argv.index("--") + 1 :]
    server = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(server) as (read, write_stream):
        info = types.Implementation(name=name, version="1.0.0")
        async with ClientSession(read, write_stream, client_info=info) as session:
            init = await session.initialize()
            listed = await session.list_tools()
            tools = [dump(t) for t in listed.tools]
            write({"ready": True, "server": dump(init)["serverInfo"], "tools": tools})
            stdin = anyio.wrap_file(sys.stdin)
            async for line in stdin:
                if not line.strip():
                    continue
                request = json.loads(line)
                try:
                    if request["op"] == "list":
                        listed = await session.list_tools()
                        write({"ok": True, "tools": [dump(t) for t in listed.tools]})
                    elif request["op"] == "call":
                        arguments = request.get("arguments") or {}
                        result = await session.call_tool(request["tool"], arguments)
                        write({"ok": True, "result": dump(result)})
                    else:
                        write({"ok": False, "thrown": f"unknown op {request['op']}"})
                except Exception as error:  # the SDK's own checks raise; report them
                    write({"ok": False, "thrown": f"{type(error).__name__}: {error}"})


anyio.run(main)

"""Drive `stardust mcp` with the official MCP Python SDK (`pip install mcp`), as a real client.

Usage: python examples/mcp/python_sdk_check.py STARDUST_BINARY STORE

STORE is modified (a preview is confirmed): pass a copy of examples/library. Exits non-zero,
naming the step, on the first answer that is not what the MCP front promises.
"""

import asyncio
import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main(binary: str, store: str) -> None:
    updates: list[str] = []

    async def on_message(message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    server = StdioServerParameters(command=binary, args=["mcp", "--store", store, "--allow-mutation"])
    async with stdio_client(server) as (read, write):
        async with ClientSession(
            read,
            write,
            message_handler=on_message,
            client_info=types.Implementation(name="python-sdk-check", version="1"),
        ) as session:
            init = await session.initialize()
            assert init.server_info.name == "stardust", init

            tools = (await session.list_tools()).tools
            names = [t.name for t in tools]
            for expected in ("query_execute", "entity_create", "preview_confirm", "hover", "describe_type"):
                assert expected in names, f"tools/list lacks {expected}: {names}"
            query = next(t for t in tools if t.name == "query_execute")
            assert query.output_schema and query.input_schema["required"] == ["document"], query

            rows = await session.call_tool(
                "query_execute", {"document": "find [?b ?t] where [[?b type book] [?b title ?t]]", "limit": 3}
            )
            assert not rows.is_error, rows
            assert len(rows.structured_content["rows"]) == 3, rows.structured_content
            assert rows.structured_content["nextOffset"] == 3, rows.structured_content

            hover = await session.call_tool("hover", {"entity": "book/dune", "pointer": "/author"})
            assert "Frank Herbert" in hover.structured_content["hover"]["markdown"], hover

            # A tool error: the summary naming the code, then the error object as JSON text,
            # and no structured content (SPEC §13).
            error = await session.call_tool("hover", {"path": "../outside.json", "position": {"line": 1, "column": 1}})
            assert error.is_error and error.structured_content is None, error
            assert error.content[0].text.startswith("error[outside-store]: "), error
            assert json.loads(error.content[1].text)["error"]["code"] == "outside-store", error

            # resources/subscribe: the subscription of every protocol version the server speaks
            # (up to 2025-11-25); the SDK warns that 2026-07-28 replaced it.
            await session.subscribe_resource("stardust://entities/book/dune")
            preview = await session.call_tool(
                "mutation_execute",
                {"document": "find [?b] where [[?b id book/dune]]", "set": {"pages": 413}},
            )
            assert preview.structured_content["committable"] is True, preview
            done = await session.call_tool("preview_confirm", {"previewId": preview.structured_content["previewId"]})
            assert not done.is_error and done.structured_content["seq"] >= 2, done

            with anyio.fail_after(5):
                while "stardust://entities/book/dune" not in updates:
                    await anyio.sleep(0.05)

            read = await session.read_resource("stardust://entities/book/dune")
            assert '"pages": 413' in read.contents[0].text, read
    print("python SDK check: ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

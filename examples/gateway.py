"""A gateway: Python tools and a proxied MCP server, served together as one MCP server.

The toolkit holds two Python functions and every tool of the bundled fixture MCP server
(started over stdio from ``mcp.json``-style config). ``tk.serve`` exposes all of them at
``/mcp``; any MCP client (Claude Desktop, an IDE, another agent) can connect there. Here the
MCP SDK's own client connects, lists the tools and calls one of each kind, then the server
stops. No network or API key needed.

From a shell the same gateway is ``toolnexus serve --mcp --config examples/mcp.json``.
"""

from __future__ import annotations

import asyncio

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

import toolnexus as tn
from toolnexus.testing import mcp_server_command


@tn.tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


@tn.tool
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


async def main() -> None:
    program, *args = mcp_server_command()
    config = {"mcpServers": {"fixture": {"command": program, "args": args}}}
    calls: list[str] = []

    async with await tn.create_toolkit(
        config, extra_tools=[word_count, shout], builtins=False
    ) as tk:
        handle = await tk.serve(
            "127.0.0.1:0",
            mcp={"name": "example-gateway"},
            on_call=lambda info: calls.append(f"{info['name']} ({info['source']})"),
        )
        try:
            async with (
                streamable_http_client(handle.url + "/mcp") as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                counted = await session.call_tool("word_count", {"text": "one two three"})
                added = await session.call_tool("fixture_add", {"a": 2, "b": 3})
        finally:
            await handle.aclose()

    assert "word_count" in names, names
    assert "fixture_echo" in names, names
    assert counted.content[0].text == "3"  # type: ignore[union-attr]
    assert added.content[0].text == "5"  # type: ignore[union-attr]
    print("ok")
    print("served:", ", ".join(names))
    print("calls seen by on_call:", ", ".join(calls))


if __name__ == "__main__":
    asyncio.run(main())

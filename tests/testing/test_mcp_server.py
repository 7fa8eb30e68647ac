"""The bundled MCP fixture server, spoken to directly with the MCP SDK's own client."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from toolnexus.testing import mcp_server_command

FIXTURE_TOOLS = ["echo", "add", "fail", "structured", "sleep", "pid", "ask", "delete"]


def _text(result: Any) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "text", None))


def test_mcp_server_command_runs_the_fixture_with_this_interpreter() -> None:
    assert mcp_server_command("--pages", "2") == [
        sys.executable,
        "-m",
        "toolnexus.testing.mcp_server",
        "--pages",
        "2",
    ]


async def test_stdio_fixture_answers_tools_list_and_calls() -> None:
    program, *args = mcp_server_command("--name", "kit")
    params = StdioServerParameters(command=program, args=args)
    async with asyncio.timeout(30):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "kit"
            listed = await session.list_tools()
            assert [t.name for t in listed.tools] == FIXTURE_TOOLS
            echoed = await session.call_tool("echo", {"text": "hello"})
            assert not echoed.is_error
            assert _text(echoed) == "hello"
            failed = await session.call_tool("fail", {})
            assert failed.is_error


async def test_http_fixture_prints_its_url_and_serves_streamable_http() -> None:
    proc = subprocess.Popen(
        mcp_server_command("--transport", "http", "--port", "0"),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 30)).strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
        async with asyncio.timeout(30):
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                assert [t.name for t in listed.tools] == FIXTURE_TOOLS
                added = await session.call_tool("add", {"a": 2, "b": 3})
                assert _text(added) in {"5", "5.0"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()

"""A toolkit served over stdio (``tk.serve_stdio``), checked with the MCP SDK's stdio client."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from .conftest import text_of

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 30.0


@asynccontextmanager
async def stdio_session(profile: dict[str, object]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tests.serve.kit", json.dumps(profile)], cwd=ROOT
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_stdio_lists_calls_concurrently_and_reports_errors() -> None:
    async with asyncio.timeout(LIMIT), stdio_session({"name": "kit"}) as session:
        listed = await session.list_tools()
        slow = asyncio.create_task(session.call_tool("wait", {"tag": "slow", "seconds": 20}))
        quick = await session.call_tool("wait", {"tag": "quick", "seconds": 0})
        assert not slow.done()  # the second call was answered while the first still runs
        slow.cancel()
        echoed = await session.call_tool("echo", {"text": "over stdio"})
        failed = await session.call_tool("boom", {})
        with pytest.raises(MCPError) as caught:
            await session.call_tool("nope", {})
    assert [t.name for t in listed.tools] == ["echo", "boom", "wait"]
    assert text_of(quick) == "quick"
    assert text_of(echoed) == "over stdio"
    assert not echoed.is_error
    assert failed.is_error
    assert "boom went the tool" in text_of(failed)
    assert caught.value.code == -32602


async def test_stdio_honours_the_tools_filter() -> None:
    async with asyncio.timeout(LIMIT), stdio_session({"tools": ["wait", "zz"]}) as session:
        listed = await session.list_tools()
        with pytest.raises(MCPError) as caught:
            await session.call_tool("echo", {"text": "hidden"})
    assert [t.name for t in listed.tools] == ["wait"]
    assert caught.value.code == -32602

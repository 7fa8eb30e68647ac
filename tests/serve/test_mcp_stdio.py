"""A toolkit served over stdio (``tk.serve_stdio``), checked with the MCP SDK's stdio client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from .conftest import text_of
from .kit import make_tools

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
    assert [(t.name, t.description, t.input_schema) for t in listed.tools] == [
        (t.name, t.description, t.input_schema) for t in make_tools()
    ]
    assert text_of(quick) == "quick"
    assert text_of(echoed) == "over stdio"
    assert not echoed.is_error
    assert echoed.content[0].type == "text"
    assert echoed.structured_content is None
    assert echoed.meta is None
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


def test_stdio_server_returns_when_stdin_closes_even_mid_call() -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "wait", "arguments": {"tag": "t", "seconds": 600}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.serve.kit"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(json.dumps(messages[0]) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        for message in messages[1:]:
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        proc.stdin.close()  # the client goes away while the 600 s call runs
        assert proc.wait(timeout=LIMIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

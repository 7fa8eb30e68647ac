"""Cancelling an MCP call reaches the server: it gets ``notifications/cancelled`` at once.

Three ways a call is abandoned: the run's ``CancelToken``, cancelling the task running
``tk.execute``, and the ``ToolContext`` cancel token of a direct call. Each time the fixture
server's ``sleep`` tool sees its handler cancelled (it writes that to ``--cancel-log``) within a
second, the caller stops waiting at once (not at the call's timeout), and no task is left with
an exception nobody retrieved.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from toolnexus import CancelToken, ToolContext
from toolnexus.testing import StubLLMServer, mcp_server_command, reply

from .helpers import wait_for_file

SLEEP = 60  # far longer than any wait below: only a cancellation can end the call early
"""The call's own length in seconds."""


@pytest.fixture
def cancel_log(tmp_path: Path) -> Path:
    return tmp_path / "cancelled.log"


@pytest.fixture
async def toolkit(cancel_log: Path, request: pytest.FixtureRequest) -> AsyncIterator[tn.Toolkit]:
    transport = request.param
    if transport == "stdio":
        entry: dict[str, Any] = {
            "command": mcp_server_command("--cancel-log", str(cancel_log)),
            # the fixture server imports the same toolnexus sources as this test
            "env": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        }
    else:
        start = request.getfixturevalue("http_server")
        url = start("--transport", "http", "--cancel-log", str(cancel_log))
        entry = {"url": url}
    config = {"mcpServers": {"fx": {**entry, "timeout": 120_000}}}
    async with await tn.create_toolkit(mcp_config=config, builtins=False) as tk:
        assert tk.mcp_status() == {"fx": "connected"}
        yield tk


@contextlib.contextmanager
def nothing_left_unretrieved() -> Iterator[None]:
    """Fail if the loop reports an exception nobody retrieved while the block runs."""
    loop = asyncio.get_running_loop()
    found: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: found.append(context))
    try:
        yield
        gc.collect()  # an abandoned task reports on collection
    finally:
        loop.set_exception_handler(previous)
    assert not [c for c in found if "never retrieved" in str(c.get("message"))]


TRANSPORTS = pytest.mark.parametrize("toolkit", ["stdio", "http"], indirect=True)


async def server_cancelled(cancel_log: Path) -> float:
    """Seconds until the server logged the cancellation (fails after 1 s)."""
    started = time.perf_counter()
    text = await wait_for_file(cancel_log, within=1.0)
    assert text == f"cancelled {SLEEP}\n"
    return time.perf_counter() - started


async def started_sleeping(tk: tn.Toolkit, cancel_log: Path) -> None:
    """Give the server time to enter the call: a second short call round-trips first."""
    result = await tk.execute("fx_echo", {"text": "ping"})
    assert result.output == "ping"
    assert not cancel_log.exists()


@TRANSPORTS
async def test_cancelling_a_run_by_its_token_cancels_the_servers_call(
    toolkit: tn.Toolkit, cancel_log: Path
) -> None:
    token = CancelToken()
    script = [reply.tool_calls(reply.call("fx_sleep", {"seconds": SLEEP})), reply.text("never")]
    with nothing_left_unretrieved(), StubLLMServer(script) as stub:
        client = tn.create_client(stub.url, model="m", api_key="k")
        run = asyncio.create_task(client.run("sleep", toolkit, cancel=token))
        while not stub.requests:
            await asyncio.sleep(0.01)
        await started_sleeping(toolkit, cancel_log)
        token.cancel()
        async with asyncio.timeout(2):
            with pytest.raises(tn.RunCancelled):
                await run
        await server_cancelled(cancel_log)


@TRANSPORTS
async def test_cancelling_the_task_of_tk_execute_cancels_the_servers_call(
    toolkit: tn.Toolkit, cancel_log: Path
) -> None:
    with nothing_left_unretrieved():
        call = asyncio.create_task(toolkit.execute("fx_sleep", {"seconds": SLEEP}))
        await started_sleeping(toolkit, cancel_log)
        call.cancel()
        async with asyncio.timeout(2):
            with pytest.raises(asyncio.CancelledError):
                await call
        await server_cancelled(cancel_log)


@TRANSPORTS
async def test_a_tool_context_cancel_token_ends_the_call_with_an_error_and_tells_the_server(
    toolkit: tn.Toolkit, cancel_log: Path
) -> None:
    token = CancelToken()
    call = asyncio.create_task(
        toolkit.execute("fx_sleep", {"seconds": SLEEP}, ToolContext(cancel=token))
    )
    await started_sleeping(toolkit, cancel_log)
    started = time.perf_counter()
    token.cancel()
    async with asyncio.timeout(2):
        result = await call
    assert time.perf_counter() - started < 2.0  # not the call's 120 s timeout
    assert result.is_error
    assert "cancelled" in result.output
    await server_cancelled(cancel_log)
    # The session is still good for the next call.
    assert (await toolkit.execute("fx_echo", {"text": "after"})).output == "after"

"""Sync tools run in the toolkit's own bounded pool; cancelled ones are reported, not starving."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus import CancelToken, RunCancelled, RunTimeout, Toolkit, create_client, tool
from toolnexus.stores.sqlite import SqliteConversationStore
from toolnexus.testing import StubLLMServer, reply

LIMIT = 10.0


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Blocked sync tools wait on this; it opens when the test ends, so no thread outlives it."""
    event = threading.Event()
    yield event
    event.set()


def blocking_tool(gate: threading.Event, started: threading.Semaphore) -> object:
    @tool
    def stuck() -> str:
        """Blocks until the test opens the gate."""
        started.release()
        gate.wait(30)
        return "late"

    return stuck


@tool
def where() -> str:
    """The name of the thread this runs in."""
    return threading.current_thread().name


async def test_sync_tools_run_in_the_toolkit_pool_not_the_default_executor() -> None:
    async with Toolkit([where]) as toolkit:
        result = await toolkit.execute("where", {})
    assert result.output.startswith("toolnexus-tool")


async def _wait_started(started: threading.Semaphore, n: int) -> None:
    for _ in range(n):
        await asyncio.to_thread(started.acquire, True, LIMIT)


async def test_a_cancelled_runs_sync_tools_are_reported_and_do_not_starve_later_runs(
    gate: threading.Event, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    started = threading.Semaphore(0)
    stuck = blocking_tool(gate, started)
    calls = [reply.call("stuck", id=f"c{i}") for i in range(8)]
    script = [reply.tool_calls(*calls), reply.tool_calls(reply.call("where")), reply.text("ok")]
    store = SqliteConversationStore(tmp_path / "c.db")
    token = CancelToken()
    with StubLLMServer(script) as stub:
        client = create_client(stub.url, model="m", api_key="k", store=store)
        async with client, Toolkit([stuck, where], max_tool_threads=8) as toolkit:
            run = asyncio.create_task(client.run("go", toolkit, cancel=token))
            async with asyncio.timeout(LIMIT):
                await _wait_started(started, 8)
                token.cancel()
                with pytest.raises(RunCancelled):
                    await run
            assert toolkit.running_after_cancel() == ["stuck"] * 8
            # The default executor (the stores' threads) is untouched by the eight stuck tools,
            # and the toolkit's later calls get threads of their own.
            async with asyncio.timeout(LIMIT):
                assert await store.get("none") is None
                result = await client.run("again", toolkit, conversation_id="c")
    await store.aclose()
    assert result.text == "ok"
    assert result.tool_calls[0].output.startswith("toolnexus-tool")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("'stuck' was cancelled" in w and "cannot be killed" in w for w in warnings) == 8


async def test_a_timed_out_runs_sync_tool_is_reported(
    gate: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    started = threading.Semaphore(0)
    stuck = blocking_tool(gate, started)
    with StubLLMServer([reply.tool_calls(reply.call("stuck"))]) as stub:
        client = create_client(stub.url, model="m", api_key="k", timeout_ms=300)
        async with client, Toolkit([stuck]) as toolkit:
            async with asyncio.timeout(LIMIT):
                with pytest.raises(RunTimeout):
                    await client.run("go", toolkit)
    assert any("'stuck' was cancelled" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("bad", [0, -1, 1.5, None])
def test_max_tool_threads_must_be_a_positive_integer(bad: object) -> None:
    from toolnexus import ConfigError

    with pytest.raises(ConfigError, match="max_tool_threads"):
        Toolkit([], max_tool_threads=bad)  # type: ignore[arg-type]

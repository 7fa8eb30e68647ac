"""When a run is over: a finished run stays finished, abandoned streams are still metered,
cancel callbacks all run, and helpers close what they opened."""

from __future__ import annotations

import asyncio
import logging
import sys
from contextlib import aclosing
from pathlib import Path

import pytest

from toolnexus import (
    CancelToken,
    ConfigError,
    DoneEvent,
    Event,
    RunCancelled,
    TextEvent,
    create_toolkit,
)
from toolnexus.testing import StubLLMServer, mcp_server_command, reply
from toolnexus.types import JSONObject

from ..running import MakeClient, drive
from ..tools.mcp.helpers import wait_for_file, wait_gone

DEADLINE_MS = 1500
"""Long enough for a run to finish well before it, even on a loaded machine."""


def runs(metrics: list[JSONObject]) -> list[JSONObject]:
    return [m for m in metrics if m["event"] == "run"]


async def past_the_deadline(started: float) -> None:
    """Wait until a deadline of ``DEADLINE_MS`` from ``started`` (loop time) has passed."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, started + DEADLINE_MS / 1000 - loop.time()) + 0.05)


# --- a run that produced its DoneEvent is finished ------------------------------------------------


async def test_a_cancel_while_the_caller_holds_the_done_event_does_not_raise(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    stub.enqueue(reply.text("All done."))
    metrics: list[JSONObject] = []
    client = make_client(style, on_metric=metrics.append)
    token = CancelToken()

    def cancel_on_done(event: Event) -> None:
        if isinstance(event, DoneEvent):
            token.cancel()

    result, _ = await drive(client, mode, cancel=token, on_event=cancel_on_done)

    assert result.status == "done"
    assert result.text == "All done."
    assert [m.get("status") for m in runs(metrics)] == ["done"]
    assert "error" not in runs(metrics)[0]


async def test_a_deadline_passing_while_the_caller_holds_the_done_event_does_not_raise(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("All done."))
    metrics: list[JSONObject] = []
    client = make_client(style, on_metric=metrics.append, timeout_ms=DEADLINE_MS)
    started = asyncio.get_running_loop().time()
    async with asyncio.timeout(5), aclosing(client.stream("hi", conversation_id="c1")) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                await past_the_deadline(started)  # the caller holds the final event meanwhile

    assert (await client.conversation_store.get("c1")) is not None
    assert [m.get("status") for m in runs(metrics)] == ["done"]
    assert "error" not in runs(metrics)[0]


async def test_run_returns_when_its_on_event_outlasts_the_deadline_on_the_done_event(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("All done."))
    metrics: list[JSONObject] = []
    client = make_client(style, on_metric=metrics.append, timeout_ms=DEADLINE_MS)
    started = asyncio.get_running_loop().time()

    async def slow_on_done(event: Event) -> None:
        if isinstance(event, DoneEvent):
            await past_the_deadline(started)

    async with asyncio.timeout(5):
        result = await client.run("hi", on_event=slow_on_done)

    assert result.text == "All done."
    assert [m.get("status") for m in runs(metrics)] == ["done"]


# --- CancelToken ----------------------------------------------------------------------------------


def test_cancel_runs_every_callback_even_when_one_raises(caplog: pytest.LogCaptureFixture) -> None:
    token = CancelToken()
    seen: list[str] = []

    def broken() -> None:
        seen.append("broken")
        raise RuntimeError("watcher failed")

    token.on_cancel(broken)
    token.on_cancel(lambda: seen.append("second"))
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        token.cancel()

    assert seen == ["broken", "second"]
    assert token.cancelled
    assert "watcher failed" in caplog.text or "RuntimeError" in caplog.text


async def test_a_raising_cancel_callback_does_not_keep_the_run_from_stopping(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("late").with_delay(30))
    token = CancelToken()

    def broken() -> None:
        raise RuntimeError("watcher failed")

    token.on_cancel(broken)  # registered before the run's own scope
    client = make_client(style)
    task = asyncio.create_task(client.run("hi", cancel=token))
    async with asyncio.timeout(5):
        await stub.until_requests(1)
        token.cancel()
        with pytest.raises(RunCancelled):
            await task


# --- abandoned streams ----------------------------------------------------------------------------


async def test_an_abandoned_stream_still_emits_its_llm_and_run_events_marked_abandoned(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("one two three four five"))
    metrics: list[JSONObject] = []
    client = make_client(style, on_metric=metrics.append)
    async with asyncio.timeout(5), aclosing(client.stream("hi")) as events:
        async for event in events:
            if isinstance(event, TextEvent):
                break

    assert [(m["event"], m.get("abandoned")) for m in metrics] == [("llm", True), ("run", True)]
    llm, run = metrics
    assert (llm["status"], llm["prompt_tokens"], llm["completion_tokens"]) == ("error", 0, 0)
    assert run["status"] == "abandoned"
    assert "error" not in run


async def test_a_stream_closed_after_its_done_event_is_not_abandoned(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("done"))
    metrics: list[JSONObject] = []
    client = make_client(style, on_metric=metrics.append)
    async with asyncio.timeout(5), aclosing(client.stream("hi")) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                break

    assert [(m["event"], m.get("status"), m.get("abandoned")) for m in metrics] == [
        ("llm", "ok", None),
        ("run", "done", None),
    ]


# --- call_provider --------------------------------------------------------------------------------


async def test_call_provider_closes_its_generator_before_returning(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("raw"))
    client = make_client(style)
    body: JSONObject = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
    left_open: list[object] = []
    firstiter, finalizer = sys.get_asyncgen_hooks()
    # An async generator dropped without being closed goes to the finalizer hook.
    sys.set_asyncgen_hooks(firstiter, left_open.append)
    try:
        answer = await client.call_provider(body, cancel=CancelToken())
    finally:
        sys.set_asyncgen_hooks(firstiter, finalizer)
    assert isinstance(answer, dict)
    assert left_open == []


# --- create_toolkit -------------------------------------------------------------------------------


async def test_create_toolkit_rejects_a_non_tool_in_extra_tools_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"extra_tools\[1\].*str"):
        await create_toolkit(extra_tools=[_a_tool(), "not a tool"], builtins=False)  # type: ignore[list-item]


async def test_create_toolkit_closes_the_mcp_servers_it_started_when_a_later_step_fails(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "server.pid"
    healthy = mcp_server_command("--pid-file", str(pid_file))
    config = {
        "mcpServers": {
            "healthy": {"command": healthy},
            "missing": {"command": [str(tmp_path / "no-such-program")]},
        }
    }
    with pytest.raises(ConfigError, match='MCP server "missing" failed'):
        await create_toolkit(mcp_config=config, strict=True)  # refuses after the servers loaded
    await wait_gone(int(await wait_for_file(pid_file)))


def _a_tool() -> object:
    from toolnexus import tool

    @tool
    def noop() -> str:
        """Does nothing."""
        return ""

    return noop

"""The run deadline (``timeout_ms``) and the ``CancelToken`` against the real stub.

Every scenario runs in both wire styles and through ``run`` and ``stream``. After each one, no
task of ours is left behind and the test's own task is not left in a cancelling state.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Coroutine
from contextlib import aclosing, asynccontextmanager
from typing import Any

import httpx
import pytest

from toolnexus import (
    CancelToken,
    Client,
    ErrorInfo,
    Event,
    Request,
    RunCancelled,
    RunTimeout,
    ToolContext,
    ToolResult,
    UsageEvent,
    pending,
)
from toolnexus.testing import StubLLMServer, reply

from ..running import drive
from .support import client_for, make_tool, toolkit_of

FOREVER = 3600.0
CANCEL_BOUND = 0.3
"""A cancelled request raises ``RunCancelled`` within 300 ms."""
PROMPTLY = 1.0
"""For the other cancellation points, which need only stop "promptly"."""


@pytest.fixture
def mode(async_mode: str) -> str:
    """``run`` and ``stream``: this file does not cover ``run_sync``."""
    return async_mode


@asynccontextmanager
async def leaves_nothing_behind() -> AsyncIterator[None]:
    """Asserts that the body leaves no task running and the current task not cancelling."""
    before = asyncio.all_tasks()
    yield
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0, "the caller's task was left with a pending cancellation"
    assert asyncio.all_tasks() == before, asyncio.all_tasks() - before


async def cancelled_after(
    run: Coroutine[Any, Any, object], ready: Awaitable[object], token: CancelToken
) -> float:
    """Await ``run`` in this task, firing ``token`` once ``ready`` is done; ``run`` must raise
    ``RunCancelled``. Returns the seconds from ``token.cancel()`` to the exception."""

    async def fire() -> float:
        await ready
        fired = time.perf_counter()
        token.cancel()
        return fired

    canceller = asyncio.create_task(fire())
    try:
        with pytest.raises(RunCancelled):
            await run
        stopped = time.perf_counter()
    finally:
        if not canceller.done():
            canceller.cancel()
        fired_at = await asyncio.gather(canceller, return_exceptions=True)
    assert isinstance(fired_at[0], float), "the token never fired"
    return stopped - fired_at[0]


class SlowTool:
    """A tool that sleeps for an hour; records whether it was cancelled and cleaned up."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.saw_cancel = False
        self.finally_ran = False

    async def __call__(self, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        self.started.set()
        try:
            await asyncio.sleep(FOREVER)
        except asyncio.CancelledError:
            self.saw_cancel = True
            raise
        finally:
            self.finally_ran = True
        return ToolResult("woke up")


class StuckWaitFor:
    """A ``wait_for`` that never answers; records whether it was cancelled and cleaned up."""

    def __init__(self) -> None:
        self.called = asyncio.Event()
        self.finally_ran = False

    async def __call__(self, request: Request) -> None:
        self.called.set()
        try:
            await asyncio.sleep(FOREVER)
        finally:
            self.finally_ran = True


async def suspend(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    return pending(Request.new("approval", "Approve the deploy?"))


# --- the deadline ---------------------------------------------------------------------------------


async def test_timeout_during_a_slow_reply_raises_run_timeout_within_600ms(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    errors: list[ErrorInfo] = []
    stub.enqueue(reply.text("too late").with_delay(5), reply.text("never sent"))
    client = client_for(
        stub, style, timeout_ms=300, on_metric=metrics.append, on_error=errors.append
    )
    async with client, leaves_nothing_behind():
        started = time.perf_counter()
        with pytest.raises(RunTimeout) as caught:
            await drive(client, mode)
        elapsed = time.perf_counter() - started
    assert isinstance(caught.value, TimeoutError)
    assert elapsed < 3.0, elapsed  # far below the 5 s reply or hour-long tool it cut short
    assert len(stub.requests) == 1
    assert errors == [], "a timeout is never passed to on_error"
    runs = [m for m in metrics if m["event"] == "run"]
    assert len(runs) == 1
    assert "status" not in runs[0]
    assert runs[0]["error"] == str(caught.value)
    assert [m["status"] for m in metrics if m["event"] == "llm"] == ["error"]
    await stub.until_disconnects(1)
    assert stub.requests[0].disconnected


async def test_deadline_fires_during_a_long_retry_after_wait(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.error(503, headers={"Retry-After": "30"}), reply.text("never sent"))
    async with client_for(stub, style, timeout_ms=500) as client, leaves_nothing_behind():
        started = time.perf_counter()
        with pytest.raises(RunTimeout):
            await drive(client, mode)
        elapsed = time.perf_counter() - started
    assert elapsed < 5.0, elapsed  # far below the 30 s Retry-After
    assert len(stub.requests) == 1


async def test_tools_see_the_time_left_before_the_deadline_shrink(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    seen: list[float | None] = []

    async def clock(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        assert ctx is not None
        seen.append(ctx.timeout)
        return ToolResult("tick")

    stub.enqueue(
        reply.tool_calls(reply.call("clock")),
        reply.tool_calls(reply.call("clock")).with_delay(0.05),
        reply.text("done"),
    )
    toolkit = await toolkit_of(make_tool("clock", clock))
    async with client_for(stub, style, timeout_ms=5000) as client:
        result, _ = await drive(client, mode, toolkit)
    assert result.status == "done"
    first, second = seen
    assert first is not None
    assert second is not None
    assert 0 < second < first <= 5.0


async def test_without_timeout_ms_tools_see_no_deadline(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    seen: list[ToolContext | None] = []

    async def clock(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        seen.append(ctx)
        return ToolResult("tick")

    stub.enqueue(reply.tool_calls(reply.call("clock")), reply.text("done"))
    toolkit = await toolkit_of(make_tool("clock", clock))
    async with client_for(stub, style) as client:
        await drive(client, mode, toolkit)
    assert len(seen) == 1
    assert seen[0] is not None
    assert seen[0].timeout is None


async def test_deadline_cancels_slow_tools(stub: StubLLMServer, style: str, mode: str) -> None:
    first, second = SlowTool(), SlowTool()
    stub.enqueue(reply.tool_calls(reply.call("first"), reply.call("second")))
    toolkit = await toolkit_of(make_tool("first", first), make_tool("second", second))
    async with client_for(stub, style, timeout_ms=300) as client, leaves_nothing_behind():
        started = time.perf_counter()
        with pytest.raises(RunTimeout):
            await drive(client, mode, toolkit)
        elapsed = time.perf_counter() - started
    assert elapsed < 3.0, elapsed  # far below the 5 s reply or hour-long tool it cut short
    assert first.saw_cancel
    assert first.finally_ran
    assert second.saw_cancel
    assert second.finally_ran


async def test_deadline_bounds_wait_for(stub: StubLLMServer, style: str, mode: str) -> None:
    wait_for = StuckWaitFor()
    stub.enqueue(reply.tool_calls(reply.call("gate")))
    toolkit = await toolkit_of(make_tool("gate", suspend))
    client = client_for(stub, style, timeout_ms=300, wait_for=wait_for)
    async with client, leaves_nothing_behind():
        started = time.perf_counter()
        with pytest.raises(RunTimeout):
            await drive(client, mode, toolkit)
        elapsed = time.perf_counter() - started
    assert elapsed < 3.0, elapsed  # far below the 5 s reply or hour-long tool it cut short
    assert wait_for.called.is_set()
    assert wait_for.finally_ran


# --- cancellation ---------------------------------------------------------------------------------


async def test_cancel_during_a_slow_request_closes_the_connection(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    stub.enqueue(reply.text("too late").with_delay(5))
    token = CancelToken()
    async with client_for(stub, style, on_metric=metrics.append) as client:
        async with leaves_nothing_behind():
            took = await cancelled_after(
                drive(client, mode, cancel=token), stub.until_requests(1), token
            )
        assert took < CANCEL_BOUND, took
        await stub.until_disconnects(1)
    assert len(stub.requests) == 1
    assert stub.requests[0].disconnected
    runs = [m for m in metrics if m["event"] == "run"]
    assert len(runs) == 1
    assert "error" in runs[0]


async def test_cancel_closes_the_connection_of_an_injected_httpx_client(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("too late").with_delay(5))
    token = CancelToken()
    async with httpx.AsyncClient() as http, client_for(stub, style, http_client=http) as client:
        async with leaves_nothing_behind():
            took = await cancelled_after(
                drive(client, mode, cancel=token), stub.until_requests(1), token
            )
        assert took < CANCEL_BOUND, took
        await stub.until_disconnects(1)
    assert stub.requests[0].disconnected


async def test_cancel_during_a_backoff_wait(stub: StubLLMServer, style: str, mode: str) -> None:
    backing_off = asyncio.Event()

    def on_error(info: ErrorInfo) -> str:
        backing_off.set()  # the policy decides, then the loop sleeps for Retry-After
        return "retry"

    stub.enqueue(reply.error(503, headers={"Retry-After": "30"}), reply.text("never sent"))
    token = CancelToken()
    async with client_for(stub, style, on_error=on_error) as client, leaves_nothing_behind():
        took = await cancelled_after(drive(client, mode, cancel=token), backing_off.wait(), token)
    assert took < PROMPTLY, took
    assert len(stub.requests) == 1


async def test_cancel_during_a_slow_tool_cancels_its_task(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    slow = SlowTool()
    stub.enqueue(reply.tool_calls(reply.call("slow")))
    toolkit = await toolkit_of(make_tool("slow", slow))
    token = CancelToken()
    async with client_for(stub, style) as client, leaves_nothing_behind():
        took = await cancelled_after(
            drive(client, mode, toolkit, cancel=token), slow.started.wait(), token
        )
    assert took < PROMPTLY, took
    assert slow.saw_cancel
    assert slow.finally_ran


async def test_cancel_during_concurrent_slow_tools_cancels_every_task(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    tools = [SlowTool() for _ in range(3)]
    stub.enqueue(reply.tool_calls(*[reply.call(f"slow{i}") for i in range(3)]))
    toolkit = await toolkit_of(*[make_tool(f"slow{i}", t) for i, t in enumerate(tools)])
    token = CancelToken()

    async def all_started() -> None:
        for t in tools:
            await t.started.wait()

    async with client_for(stub, style) as client, leaves_nothing_behind():
        took = await cancelled_after(
            drive(client, mode, toolkit, cancel=token), all_started(), token
        )
    assert took < PROMPTLY, took
    assert all(t.saw_cancel and t.finally_ran for t in tools)


async def test_cancel_during_wait_for(stub: StubLLMServer, style: str, mode: str) -> None:
    wait_for = StuckWaitFor()
    stub.enqueue(reply.tool_calls(reply.call("gate")))
    toolkit = await toolkit_of(make_tool("gate", suspend))
    token = CancelToken()
    client = client_for(stub, style, wait_for=wait_for)
    async with client, leaves_nothing_behind():
        took = await cancelled_after(
            drive(client, mode, toolkit, cancel=token), wait_for.called.wait(), token
        )
    assert took < PROMPTLY, took
    assert wait_for.finally_ran


async def test_cancel_from_another_thread_stops_a_slow_request(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("too late").with_delay(5))
    token = CancelToken()
    fired: list[float] = []

    def fire() -> None:
        fired.append(time.perf_counter())
        token.cancel()

    async def start_timer_when_sent() -> None:
        await stub.until_requests(1)
        timer = threading.Timer(0.1, fire)
        timer.start()
        await asyncio.to_thread(timer.join)

    async with client_for(stub, style) as client, leaves_nothing_behind():
        timer_task = asyncio.create_task(start_timer_when_sent())
        try:
            with pytest.raises(RunCancelled):
                await drive(client, mode, cancel=token)
            stopped = time.perf_counter()
        finally:
            await timer_task
    assert len(fired) == 1
    assert stopped - fired[0] < CANCEL_BOUND, stopped - fired[0]
    await stub.until_disconnects(1)
    assert stub.requests[0].disconnected


async def test_pre_cancelled_token_sends_nothing(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    token = CancelToken()
    token.cancel()
    stub.enqueue(reply.text("never sent"))
    async with client_for(stub, style) as client, leaves_nothing_behind():
        with pytest.raises(RunCancelled):
            await drive(client, mode, cancel=token)
    assert stub.requests == []


async def test_a_token_fired_while_the_caller_holds_an_event_starts_no_new_work(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    ran: list[str] = []

    async def side_effect(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        ran.append("side effect")
        return ToolResult("done")

    stub.enqueue(reply.tool_calls(reply.call("side_effect")), reply.text("never sent"))
    toolkit = await toolkit_of(make_tool("side_effect", side_effect))
    token = CancelToken()

    def cancel_on_usage(event: Event) -> None:
        if isinstance(event, UsageEvent):
            token.cancel()  # on the loop's own thread, between two steps of the run

    async def consume(client: Client) -> None:
        if mode == "run":
            await client.run("hi", toolkit, cancel=token, on_event=cancel_on_usage)
            return
        async with aclosing(client.stream("hi", toolkit, cancel=token)) as stream:
            async for event in stream:
                cancel_on_usage(event)

    async with client_for(stub, style) as client, leaves_nothing_behind():
        with pytest.raises(RunCancelled):
            await consume(client)
    assert ran == [], "a tool started after the token was cancelled"
    assert len(stub.requests) == 1


async def test_tools_see_the_run_token_as_ctx_cancel(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    seen: list[CancelToken | None] = []

    async def peek(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        assert ctx is not None
        seen.append(ctx.cancel)
        return ToolResult("ok")

    stub.enqueue(reply.tool_calls(reply.call("peek")), reply.text("done"))
    toolkit = await toolkit_of(make_tool("peek", peek))
    token = CancelToken()
    async with client_for(stub, style) as client:
        result, _ = await drive(client, mode, toolkit, cancel=token)
    assert result.status == "done"
    assert seen == [token]
    assert seen[0] is token


async def test_a_token_cancelled_after_the_run_changes_nothing(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("first"), reply.text("second"))
    token = CancelToken()
    async with client_for(stub, style) as client, leaves_nothing_behind():
        result, _ = await drive(client, mode, cancel=token)
        token.cancel()
        token.cancel()  # idempotent
        other, _ = await drive(client, mode)
    assert (result.text, other.text) == ("first", "second")


async def test_cancelling_the_callers_task_raises_cancelled_error_not_run_cancelled(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("too late").with_delay(5))
    token = CancelToken()
    async with client_for(stub, style) as client:
        task = asyncio.create_task(drive(client, mode, cancel=token))
        await stub.until_requests(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await stub.until_disconnects(1)
    assert not token.cancelled


async def test_a_run_cancelled_inside_the_callers_asyncio_timeout_leaves_it_unexpired(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("too late").with_delay(5))
    token = CancelToken()
    async with client_for(stub, style) as client, leaves_nothing_behind():
        async with asyncio.timeout(30) as outer:
            took = await cancelled_after(
                drive(client, mode, cancel=token), stub.until_requests(1), token
            )
        assert not outer.expired()
    assert took < CANCEL_BOUND, took


async def test_the_callers_own_asyncio_timeout_is_not_turned_into_run_timeout(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("too late").with_delay(5))
    async with client_for(stub, style, timeout_ms=10_000) as client, leaves_nothing_behind():
        with pytest.raises(TimeoutError) as caught:
            async with asyncio.timeout(0.2):
                await drive(client, mode)
    assert not isinstance(caught.value, RunTimeout)
    await stub.until_disconnects(1)


class ThreadWritingStore:
    """A store that writes in a worker thread (as SQLite does): a cancelled ``save`` still
    completes its write. The first save cancels the run's token as it starts, so a stop arrives
    while the transcript is being written."""

    def __init__(self, token: CancelToken) -> None:
        self.token = token
        self.saved: dict[str, list[Any]] = {}
        self.written = threading.Event()

    async def get(self, id: str) -> list[Any] | None:
        return self.saved.get(id)

    async def save(self, id: str, messages: list[Any]) -> None:
        self.token.cancel()  # the stop arrives mid-save

        def write() -> None:
            self.saved[id] = messages
            self.written.set()

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, write)


async def test_a_stop_during_the_save_finishes_the_run_as_saved(
    stub: StubLLMServer, style: str
) -> None:
    token = CancelToken()
    store = ThreadWritingStore(token)
    stub.enqueue(reply.text("stored"))
    async with client_for(stub, style, store=store) as client:
        result = await client.run("hello", conversation_id="c1", cancel=token)
    assert store.written.wait(5)
    assert result.status == "done"
    assert result.text == "stored"
    assert store.saved["c1"][-1] == result.messages[-1]


async def test_a_stop_before_the_save_saves_nothing(stub: StubLLMServer, style: str) -> None:
    token = CancelToken()
    store = ThreadWritingStore(token)

    async def cancel_on_reply(event: Event) -> None:
        if isinstance(event, UsageEvent):
            token.cancel()

    stub.enqueue(reply.text("never stored", usage=(1, 1)))
    async with client_for(stub, style, store=store) as client:
        with pytest.raises(RunCancelled):
            await client.run("hello", conversation_id="c1", cancel=token, on_event=cancel_on_reply)
    assert store.saved == {}

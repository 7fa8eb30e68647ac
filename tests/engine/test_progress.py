"""Progress a running tool reports becomes ``ToolProgressEvent`` s between call and result."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tests.running import ASYNC_MODES, MakeClient, drive
from toolnexus import (
    ToolCallEvent,
    ToolContext,
    ToolProgressEvent,
    ToolResult,
    ToolResultEvent,
    tool,
)
from toolnexus.testing import StubLLMServer, reply

from .support import make_tool, toolkit_of


async def reporting(args: dict[str, object], ctx: ToolContext | None) -> ToolResult:
    assert ctx is not None
    assert ctx.progress is not None
    ctx.progress(1, 2, "half")
    ctx.progress(2, 2, None)
    return ToolResult("done")


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_progress_events_come_between_the_call_and_its_result(
    stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("work", id="c1")), reply.text("ok"))
    toolkit = await toolkit_of(make_tool("work", reporting))
    result, events = await drive(make_client(style), mode, toolkit)
    assert result.text == "ok"
    kinds = [
        e for e in events if isinstance(e, ToolCallEvent | ToolProgressEvent | ToolResultEvent)
    ]
    assert [type(e).__name__ for e in kinds] == [
        "ToolCallEvent",
        "ToolProgressEvent",
        "ToolProgressEvent",
        "ToolResultEvent",
    ]
    first, second = kinds[1], kinds[2]
    assert isinstance(first, ToolProgressEvent)
    assert isinstance(second, ToolProgressEvent)
    assert first.to_dict() == {
        "type": "tool_progress",
        "id": "c1",
        "name": "work",
        "progress": 1,
        "total": 2,
        "message": "half",
    }
    assert second.to_dict() == {
        "type": "tool_progress",
        "id": "c1",
        "name": "work",
        "progress": 2,
        "total": 2,
    }


async def test_a_tool_run_outside_a_loop_has_no_progress_callback() -> None:
    seen: list[ToolContext | None] = []

    async def record(args: dict[str, object], ctx: ToolContext | None) -> ToolResult:
        seen.append(ctx)
        return ToolResult("x")

    toolkit = await toolkit_of(make_tool("t", record))
    await toolkit.execute("t", {}, ToolContext())
    assert seen[0] is not None
    assert seen[0].progress is None


async def test_a_run_nobody_watches_still_gives_tools_a_progress_callback(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    # ``run`` without ``on_event`` wants no event but the last, so reports go nowhere; a tool
    # that reports anyway must work exactly as it does in a watched run.
    stub.enqueue(
        reply.tool_calls(reply.call("work", id="c1"), reply.call("work", id="c2")),
        reply.text("ok"),
    )
    toolkit = await toolkit_of(make_tool("work", reporting))
    result = await make_client("openai").run("hi", toolkit)
    assert result.text == "ok"
    assert [(c.id, c.output, c.is_error) for c in result.tool_calls] == [
        ("c1", "done", False),
        ("c2", "done", False),
    ]


async def test_a_sync_tool_reporting_from_its_thread_is_heard_at_once_in_debug_mode(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    # The tool waits (at most 5 s) until the run has passed its report on: a report put in
    # the loop's queue from the tool's thread without waking the loop is heard only late, and
    # in asyncio's debug mode that put raises instead.
    asyncio.get_running_loop().set_debug(True)
    heard = threading.Event()

    @tool
    def slow(ctx: ToolContext) -> str:
        """Report half-way, then wait until the report was heard."""
        assert ctx.progress is not None
        ctx.progress(1, 2, "half")
        return "heard" if heard.wait(5) else "not heard"

    def on_event(event: object) -> None:
        if isinstance(event, ToolProgressEvent):
            heard.set()

    stub.enqueue(reply.tool_calls(reply.call("slow", id="c1")), reply.text("ok"))
    toolkit = await toolkit_of(slow)
    started = time.perf_counter()
    async with asyncio.timeout(10):
        result = await make_client("openai").run("hi", toolkit, on_event=on_event)
    assert [c.output for c in result.tool_calls] == ["heard"]
    assert result.text == "ok"
    assert time.perf_counter() - started < 3

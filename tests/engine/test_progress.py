"""Progress a running tool reports becomes ``ToolProgressEvent`` s between call and result."""

from __future__ import annotations

import pytest

from tests.running import ASYNC_MODES, MakeClient, drive
from toolnexus import (
    ToolCallEvent,
    ToolContext,
    ToolProgressEvent,
    ToolResult,
    ToolResultEvent,
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

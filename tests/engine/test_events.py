"""Events of a run: ``on_event``, ``stream`` and ``ask(on_text=...)``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import pytest

from toolnexus import (
    DoneEvent,
    Event,
    LLMError,
    PendingEvent,
    Request,
    RunResult,
    TextEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    Toolkit,
    ToolResult,
    UsageEvent,
    create_toolkit,
    pending,
    tool,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from ..running import MakeClient, drive


def one_tool_script() -> list[reply.Reply]:
    return [
        reply.tool_calls(
            reply.call("get_weather", {"city": "Chennai"}, id="call_1"), usage=(10, 6)
        ),
        reply.text("It is sunny in Chennai.", usage=(20, 5)),
    ]


def kinds(events: list[Event], *, text: bool = False) -> list[str]:
    """The event types, without the argument pieces of streamed calls (and without text unless
    asked): their number depends on how the reply was cut."""
    return [
        e.type
        for e in events
        if not isinstance(e, ToolCallDeltaEvent) and (text or not isinstance(e, TextEvent))
    ]


# --- the order of events --------------------------------------------------------------------------


async def test_a_one_tool_run_reports_usage_call_result_usage_done_in_order(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    style: str,
    weather_kit: Toolkit,
) -> None:
    stub.enqueue(*one_tool_script())
    result, events = await drive(make_client(style), mode, weather_kit, prompt="Weather?")

    assert kinds(events) == ["usage", "tool_call", "tool_result", "usage", "done"]
    if mode != "stream":
        assert not any(isinstance(e, TextEvent) for e in events)
    first_usage, last_usage = (e for e in events if isinstance(e, UsageEvent))
    assert first_usage.usage.total_tokens == 16
    assert last_usage.usage.total_tokens == 41
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result == result  # a snapshot: on_event cannot change the returned result


async def test_all_calls_of_a_turn_are_announced_before_any_result(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("get_weather", {"city": "A"}),
            reply.call("get_weather", {"city": "B"}),
            text="Let me check. ",
        ),
        reply.text("Both sunny."),
    )
    _, events = await drive(make_client(style), mode, weather_kit, prompt="Weather?")

    assert kinds(events) == [
        "usage",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "usage",
        "done",
    ]
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [e.args for e in calls] == [{"city": "A"}, {"city": "B"}]


async def test_stream_text_deltas_come_before_the_usage_of_their_turn(
    stub: StubLLMServer, make_client: MakeClient, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"}), text="Let me check. "),
        reply.text("Sunny in A."),
    )
    events = [e async for e in make_client(style).stream("Weather?", weather_kit)]

    assert kinds(events, text=True) == [
        "text",
        "text",
        "text",
        "usage",
        "tool_call",
        "tool_result",
        "text",
        "text",
        "text",
        "usage",
        "done",
    ]


# --- stream ---------------------------------------------------------------------------------------


async def test_stream_yields_each_text_delta_and_ends_with_done(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    pieces = ["Chennai ", "is ", "warm ", "today."]
    stub.enqueue(reply.text("".join(pieces), chunks=pieces, usage=(10, 6)))
    events = [e async for e in make_client(style).stream("Weather?")]

    deltas = [e.delta for e in events if isinstance(e, TextEvent)]
    assert deltas == pieces
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert [e for e in events if isinstance(e, DoneEvent)] == [done]
    assert "".join(deltas) == done.result.text == "Chennai is warm today."
    assert done.result.usage.total_tokens == 16
    body = stub.requests[0].json
    assert body["stream"] is True
    if style == "openai":
        assert body["stream_options"] == {"include_usage": True}
    else:
        assert "stream_options" not in body


async def test_run_and_run_sync_send_no_stream_flag(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    stub.enqueue(reply.text("ok"))
    await drive(make_client(style), mode)

    body = stub.requests[0].json
    assert ("stream" in body) is (mode == "stream")
    assert stub.requests[0].stream is (mode == "stream")


async def test_every_mode_returns_the_same_result_for_the_same_replies(
    stub: StubLLMServer, make_client: MakeClient, style: str, weather_kit: Toolkit
) -> None:
    client = make_client(style, system_prompt="Be brief.")
    blocking = make_client(style, system_prompt="Be brief.")  # run_sync on a loop of its own
    stub.enqueue(*one_tool_script() * 3)
    from_run = await client.run("Weather?", weather_kit)
    streamed = [e async for e in client.stream("Weather?", weather_kit)]
    from_sync = await asyncio.to_thread(blocking.run_sync, "Weather?", weather_kit)

    done = streamed[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.to_dict() == from_run.to_dict()
    assert from_sync.to_dict() == from_run.to_dict()
    assert [r.stream for r in stub.requests] == [False, False, True, True, False, False]


# --- event wire form ------------------------------------------------------------------------------


async def test_events_of_a_real_run_have_camel_case_wire_dicts(
    stub: StubLLMServer, make_client: MakeClient, mode: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(*one_tool_script())
    result, events = await drive(make_client("openai"), mode, weather_kit, prompt="Weather?")

    dicts = [
        json.loads(json.dumps(e.to_dict()))
        for e in events
        if not isinstance(e, TextEvent | ToolCallDeltaEvent)
    ]
    assert dicts[:3] == [
        {"type": "usage", "usage": {"promptTokens": 10, "completionTokens": 6, "totalTokens": 16}},
        {"type": "tool_call", "id": "call_1", "name": "get_weather", "args": {"city": "Chennai"}},
        {
            "type": "tool_result",
            "id": "call_1",
            "name": "get_weather",
            "output": "sunny in Chennai",
            "isError": False,
        },
    ]
    assert dicts[-1] == {"type": "done", "result": result.to_dict()}


async def test_a_suspension_is_announced_with_a_pending_event(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    request = Request("r-1", "approval", "Approve the deploy?", data={"env": "prod"})

    @tool
    def deploy() -> ToolResult:
        """Needs an approval."""
        return pending(request)

    stub.enqueue(reply.tool_calls(reply.call("deploy")))
    async with await create_toolkit(extra_tools=[deploy], builtins=False) as tk:
        result, events = await drive(make_client(style), mode, tk, prompt="Deploy")

    assert kinds(events) == ["usage", "tool_call", "pending", "done"]
    event = next(e for e in events if isinstance(e, PendingEvent))
    wire = event.to_dict()
    assert wire["type"] == "pending"
    assert {k: wire["request"][k] for k in ("id", "kind", "prompt")} == {
        "id": "r-1",
        "kind": "approval",
        "prompt": "Approve the deploy?",
    }
    assert wire["request"]["data"]["env"] == "prod"
    assert result.status == "pending"
    json.dumps(events[-1].to_dict())


# --- callbacks that raise -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_raising_on_event_is_logged_and_does_not_change_the_result(
    stub: StubLLMServer,
    make_client: MakeClient,
    style: str,
    weather_kit: Toolkit,
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    seen: list[str] = []

    def sync_observer(event: Event) -> None:
        seen.append(event.type)
        raise RuntimeError("observer broke")

    async def async_observer(event: Event) -> None:
        sync_observer(event)

    client = make_client(style)
    stub.enqueue(*one_tool_script())
    clean = await client.run("Weather?", weather_kit)
    stub.enqueue(*one_tool_script())
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        noisy = await client.run(
            "Weather?", weather_kit, on_event=sync_observer if kind == "sync" else async_observer
        )

    assert noisy.to_dict() == clean.to_dict()
    assert seen == ["usage", "tool_call", "tool_result", "usage", "done"]
    warnings = [r for r in caplog.records if r.name == "toolnexus" and "on_event" in r.message]
    assert len(warnings) == len(seen)


# --- failures: no done ----------------------------------------------------------------------------


async def test_a_failing_run_emits_no_done_event(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"})),
        reply.error(400, {"error": "bad request"}),
    )
    client = make_client(style)
    events: list[Event] = []

    async def consume() -> None:
        if mode == "stream":
            async for event in client.stream("Weather?", weather_kit):
                events.append(event)
        else:
            await client.run("Weather?", weather_kit, on_event=events.append)

    with pytest.raises(LLMError):
        await consume()

    assert kinds(events) == ["usage", "tool_call", "tool_result"]


# --- leaving a stream early -----------------------------------------------------------------------


def endless_text(style: str) -> reply.Reply:
    """A streamed answer far larger than the socket buffers (about 64 MB of text deltas)."""
    piece = "x" * (256 * 1024)
    if style == "openai":
        chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
        return reply.raw_sse([chunk] * 256 + ["data: [DONE]"])
    start: list[JSONObject] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": piece},
    }
    return reply.raw_sse([*start, *[delta] * 256, {"type": "message_stop"}])


async def test_leaving_a_stream_early_aborts_the_request_and_saves_nothing(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(endless_text(style))
    client = make_client(style)
    seen: list[Event] = []
    async with contextlib.aclosing(client.stream("Tell me everything", conversation_id="c1")) as it:
        async for event in it:
            seen.append(event)
            break

    assert isinstance(seen[0], TextEvent)
    await stub.until_disconnects(1, timeout=5)
    assert stub.requests[0].disconnected
    assert await client.conversation_store.get("c1") is None


# --- ask with on_text -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_ask_with_on_text_streams_each_delta_and_returns_the_result(
    stub: StubLLMServer, make_client: MakeClient, style: str, weather_kit: Toolkit, kind: str
) -> None:
    deltas: list[str] = []

    async def async_collect(delta: str) -> None:
        deltas.append(delta)

    pieces = ["It ", "is ", "sunny."]
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"})),
        reply.text("".join(pieces), chunks=pieces),
    )
    on_text = deltas.append if kind == "sync" else async_collect
    result = await make_client(style).ask("Weather?", weather_kit, on_text=on_text)

    assert isinstance(result, RunResult)
    assert deltas == pieces
    assert result.text == "It is sunny."
    assert (result.status, result.turns, result.tool_call_count) == ("done", 2, 1)
    assert all(r.stream for r in stub.requests)


async def test_ask_without_on_text_does_not_stream(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("plain"))
    result = await make_client(style).ask("hi")

    assert result.text == "plain"
    assert not stub.requests[0].stream


async def test_a_raising_on_text_is_ignored(
    stub: StubLLMServer, make_client: MakeClient, style: str, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(delta: str) -> None:
        raise ValueError("display gone")

    stub.enqueue(reply.text("one two", chunks=["one ", "two"]))
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = await make_client(style).ask("hi", on_text=broken)

    assert (result.status, result.text) == ("done", "one two")
    assert len([r for r in caplog.records if "on_text" in r.message]) == 2

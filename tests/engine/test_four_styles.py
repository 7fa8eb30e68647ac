"""The loop's scenarios in every wire style: openai, anthropic, responses and gemini.

The same scripted replies drive a client of each style against ``StubLLMServer``, which
renders them in the style's own JSON and SSE formats. What is checked does not depend on the
wire format: results, events (tool-call argument deltas included, §11.3), hooks, interceptors,
metrics, OTel spans, stores, suspension and resume, ``call_provider`` and retries.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import pytest

from toolnexus import (
    Answer,
    DoneEvent,
    Event,
    Interceptor,
    Request,
    RunResult,
    TextEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolContext,
    Toolkit,
    ToolResult,
    create_toolkit,
    pending,
)
from toolnexus.engine.interceptors import CallModel, ModelCall
from toolnexus.testing import StubLLMServer, reply

from ..running import MODES, drive
from .support import client_for, get_weather, make_tool, toolkit_of

ALL_STYLES = ("openai", "anthropic", "responses", "gemini")
ENDPOINT = {
    "openai": "/chat/completions",
    "anthropic": "/v1/messages",
    "responses": "/responses",
    "gemini": "/models/test-model:generateContent",
}
STREAM_ENDPOINT = {**ENDPOINT, "gemini": "/models/test-model:streamGenerateContent"}


@pytest.fixture(params=ALL_STYLES)
def any_style(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
async def weather() -> Any:
    async with await create_toolkit(extra_tools=[get_weather], builtins=False) as tk:
        yield tk


def two_calls_then_text() -> list[reply.Reply]:
    return [
        reply.tool_calls(
            reply.call("get_weather", {"city": "Chennai"}),
            reply.call("get_weather", {"city": "Pune, \u00eeles"}),
            text="Let me check.",
            usage=(10, 6),
        ),
        reply.text("Sunny in both.", usage=(20, 5)),
    ]


def transcript_text(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False)


# --- the loop, in every mode --------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_two_turn_tool_run_reads_alike_in_every_style(
    stub: StubLLMServer, any_style: str, mode: str, weather: Toolkit
) -> None:
    stub.enqueue(*two_calls_then_text())
    client = client_for(stub, any_style, system_prompt="Be brief.")
    async with client:
        result, events = await drive(client, mode, weather, prompt="Weather?")

    assert (result.status, result.text, result.turns) == ("done", "Sunny in both.", 2)
    assert [(c.name, c.args, c.output) for c in result.tool_calls] == [
        ("get_weather", {"city": "Chennai"}, "sunny in Chennai"),
        ("get_weather", {"city": "Pune, \u00eeles"}, "sunny in Pune, \u00eeles"),
    ]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (30, 11)
    assert result.stop_reason == "stop"
    paths = [r.path for r in stub.requests]
    assert paths == [(STREAM_ENDPOINT if mode == "stream" else ENDPOINT)[any_style]] * 2
    second = transcript_text(stub.requests[1].json[_transcript_key(any_style)])
    assert "sunny in Chennai" in second
    assert second.index("sunny in Chennai") < second.index("sunny in Pune")
    kinds = [e.type for e in events if not isinstance(e, TextEvent | ToolCallDeltaEvent)]
    turn = ["usage", "tool_call", "tool_call", "tool_result", "tool_result"]
    assert kinds == [*turn, "usage", "done"]


def _transcript_key(style: str) -> str:
    return {"responses": "input", "gemini": "contents"}.get(style, "messages")


async def test_streamed_and_json_runs_end_with_equal_results(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    """A133/A135: the same replies read as JSON and as a stream give the same result (and the
    same second request)."""
    stub.enqueue(*two_calls_then_text())
    async with client_for(stub, any_style) as client:
        plain = await client.run("Weather?", weather)
    with StubLLMServer(two_calls_then_text()) as other:
        async with client_for(other, any_style) as client:
            streamed = await _streamed(client, weather)
        sent = [_without_stream(r.json) for r in other.requests]

    assert streamed.to_dict() == plain.to_dict()
    assert sent == [r.json for r in stub.requests]


def _without_stream(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("stream", "stream_options")}


async def _streamed(client: Any, toolkit: Toolkit) -> RunResult:
    async with aclosing(client.stream("Weather?", toolkit)) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                return event.result
    raise AssertionError("no done event")


# --- §11.3: tool-call argument deltas ------------------------------------------------------------


async def test_argument_deltas_come_before_their_call_and_join_to_its_arguments(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    """A137: in every style, a call's argument pieces precede its ``tool_call`` event, carry
    its id, name and position, and join to its arguments text."""
    stub.enqueue(*two_calls_then_text())
    async with client_for(stub, any_style) as client:
        events: list[Event] = [e async for e in client.stream("Weather?", weather)]

    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    first_call = events.index(calls[0])
    deltas = [e for e in events if isinstance(e, ToolCallDeltaEvent)]
    assert deltas
    assert all(events.index(d) < first_call for d in deltas)
    for position, call in enumerate(calls):
        pieces = [d for d in deltas if d.index == position]
        assert {(d.id, d.name) for d in pieces} == {(call.id, call.name)}
        assert json.loads("".join(d.delta for d in pieces)) == call.args
    if any_style != "gemini":  # gemini sends each call whole: one piece
        assert len(deltas) > len(calls)
    assert deltas[0].to_dict()["type"] == "tool_call_delta"


async def test_a_run_without_streaming_has_no_argument_deltas(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    stub.enqueue(*two_calls_then_text())
    seen: list[Event] = []
    async with client_for(stub, any_style) as client:
        await client.run("Weather?", weather, on_event=seen.append)
    assert not any(isinstance(e, ToolCallDeltaEvent) for e in seen)


# --- hooks, interceptors, metrics, spans ---------------------------------------------------------


async def test_hooks_see_the_style_and_the_rebuilt_response(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    stub.enqueue(*two_calls_then_text())
    seen: list[tuple[str, str, object]] = []

    def before_llm(payload: dict[str, Any]) -> None:
        seen.append(("before_llm", payload["style"], len(payload["tools"])))

    def after_llm(payload: dict[str, Any]) -> None:
        seen.append(("after_llm", payload["style"], payload["response"].get("streamed")))

    def before_tool(payload: dict[str, Any]) -> dict[str, Any] | None:
        if payload["args"]["city"] == "Chennai":
            return {"args": {"city": "Madras"}}
        return None

    hooks = {"before_llm": before_llm, "after_llm": after_llm, "before_tool": before_tool}
    async with client_for(stub, any_style, hooks=hooks) as client:
        result = await _streamed(client, weather)

    assert seen == [
        ("before_llm", any_style, 1),
        ("after_llm", any_style, True),
        ("before_llm", any_style, 1),
        ("after_llm", any_style, True),
    ]
    assert result.tool_calls[0].output == "sunny in Madras"
    assert "sunny in Madras" in transcript_text(stub.requests[1].json[_transcript_key(any_style)])


class _Recorder(Interceptor):
    """Keeps each model reply; replays them instead of calling once ``replay`` is set."""

    def __init__(self) -> None:
        self.replies: dict[str, dict[str, Any]] = {}
        self.replay = False

    async def around_llm(self, call_next: CallModel, call: ModelCall) -> dict[str, Any]:
        if self.replay:
            return self.replies[call.key]
        answer = await call_next(call)
        self.replies[call.key] = answer
        return answer


@pytest.mark.parametrize("stream", [False, True])
async def test_an_interceptor_can_replay_the_replies_of_a_run(
    stub: StubLLMServer, any_style: str, weather: Toolkit, stream: bool
) -> None:
    stub.enqueue(*two_calls_then_text())
    recorder = _Recorder()
    async with client_for(stub, any_style) as client:
        client.add_interceptor(recorder)
        first = await (_streamed(client, weather) if stream else client.run("Weather?", weather))
        recorder.replay = True
        again = await (_streamed(client, weather) if stream else client.run("Weather?", weather))

    assert len(stub.requests) == 2
    assert again.to_dict() == first.to_dict()


async def test_metric_events_count_calls_tools_and_tokens(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    stub.enqueue(*two_calls_then_text())
    metrics: list[dict[str, Any]] = []
    async with client_for(stub, any_style, on_metric=metrics.append) as client:
        await client.run("Weather?", weather)
        text = client.metrics()

    kinds = [m["event"] for m in metrics]
    assert kinds.count("llm") == 2
    assert kinds.count("tool") == 2
    assert kinds[-1] == "run"
    assert metrics[-1]["total_tokens"] == 41
    assert "toolnexus_llm_requests_total" in text


async def test_otel_spans_name_the_provider(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolnexus.otel import instrument

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stub.enqueue(*two_calls_then_text())
    client = instrument(client_for(stub, any_style), tracer_provider=provider, capture_content=True)
    async with client:
        await client.run("Weather?", weather)
    spans = exporter.get_finished_spans()
    names = sorted(s.name.split(" ")[0] for s in spans)
    assert names == ["chat", "chat", "execute_tool", "execute_tool", "invoke_agent"]
    expected = {"responses": "openai", "gemini": "gcp.gemini"}.get(any_style, any_style)
    chats = [s for s in spans if s.name.startswith("chat")]
    assert {(s.attributes or {}).get("gen_ai.provider.name") for s in chats} == {expected}
    assert "Weather?" in str((chats[0].attributes or {}).get("gen_ai.input.messages"))
    provider.shutdown()


# --- stores, suspension, resume ------------------------------------------------------------------


async def test_a_conversation_id_carries_the_transcript_to_the_next_run(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    stub.enqueue(*two_calls_then_text(), reply.text("Still sunny."))
    async with client_for(stub, any_style) as client:
        await client.run("Weather?", weather, conversation_id="c1")
        second = await client.run("And now?", weather, conversation_id="c1")
        saved = await client.conversation_store.get("c1")

    body = transcript_text(stub.requests[2].json[_transcript_key(any_style)])
    for seen in ("Weather?", "sunny in Chennai", "And now?"):
        assert seen in body
    assert second.text == "Still sunny."
    assert saved == second.messages


async def test_a_halted_run_resumes_from_the_store(stub: StubLLMServer, any_style: str) -> None:
    request = Request("r-1", "approval", "Deploy to prod?")

    async def deploy(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            return pending(request)
        return ToolResult(f"deployed to {args['env']}: {(answer.data or {}).get('by')}")

    stub.enqueue(
        reply.tool_calls(reply.call("deploy", {"env": "prod"}, id="c-1")),
        reply.text("Deployed."),
    )
    async with await toolkit_of(make_tool("deploy", deploy)) as kit:
        async with client_for(stub, any_style) as client:
            halted = await client.run("Ship it", kit, conversation_id="conv")
            assert halted.status == "pending"
            assert halted.pending is not None
            assert halted.pending.data is not None
            assert halted.pending.data["toolCallId"] == "c-1"
            resumed = await client.resume("conv", Answer("r-1", True, {"by": "yes"}), kit)

    assert (resumed.status, resumed.text) == ("done", "Deployed.")
    assert resumed.tool_calls[-1].output == "deployed to prod: yes"
    last = transcript_text(stub.requests[-1].json[_transcript_key(any_style)])
    assert "deployed to prod: yes" in last


# --- call_provider and retries -------------------------------------------------------------------


async def test_call_provider_posts_the_body_verbatim_and_retries_a_503(
    stub: StubLLMServer, any_style: str
) -> None:
    stub.enqueue(reply.error(503, "busy"), reply.text("pong", usage=(3, 1)))
    metrics: list[dict[str, Any]] = []
    body = {"anything": ["as", "is"], "model": "x"}
    async with client_for(stub, any_style, on_metric=metrics.append) as client:
        raw = await client.call_provider(body)

    assert [r.path for r in stub.requests] == [ENDPOINT[any_style]] * 2
    assert stub.requests[1].json == body
    assert "pong" in json.dumps(raw)
    assert [m["event"] for m in metrics] == ["llm"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_503_then_a_reply_succeeds(
    stub: StubLLMServer, any_style: str, stream: bool
) -> None:
    stub.enqueue(reply.error(503, "busy"), reply.text("ok"))
    async with client_for(stub, any_style, retries=1) as client:
        result = await (_streamed_prompt(client) if stream else client.run("hi"))
    assert result.text == "ok"
    assert len(stub.requests) == 2


async def _streamed_prompt(client: Any) -> RunResult:
    async with aclosing(client.stream("hi")) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                return event.result
    raise AssertionError("no done event")


async def test_max_turns_ends_incomplete_with_the_last_text(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    stub.enqueue(two_calls_then_text()[0])
    async with client_for(stub, any_style, max_turns=1) as client:
        result = await client.run("Weather?", weather)
    assert (result.status, result.limit, result.text) == ("incomplete", "maxTurns", "Let me check.")


async def test_ask_with_on_text_shows_argument_deltas_to_on_event(
    stub: StubLLMServer, any_style: str, weather: Toolkit
) -> None:
    stub.enqueue(*two_calls_then_text())
    texts: list[str] = []
    seen: list[Event] = []
    async with client_for(stub, any_style) as client:
        result = await client.ask("Weather?", weather, on_text=texts.append, on_event=seen.append)
    deltas = [e for e in seen if isinstance(e, ToolCallDeltaEvent)]
    assert {d.index for d in deltas} == {0, 1}
    assert not any(isinstance(e, TextEvent) for e in seen)
    assert "".join(texts) == "Let me check.Sunny in both."
    assert result.text == "Sunny in both."


async def test_a_call_without_an_id_halted_on_a_later_turn_resumes(stub: StubLLMServer) -> None:
    """Gemini calls come without ids: the halted one is found again by its made-up id."""
    request = Request("r-2", "approval", "Deploy?")

    async def deploy(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        if ctx is None or ctx.answer is None:
            return pending(request)
        return ToolResult(f"deployed {args['env']}")

    async def note(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return ToolResult("noted")

    stub.enqueue(
        reply.tool_calls(reply.call("note")),
        reply.tool_calls(reply.call("note"), reply.call("deploy", {"env": "prod"})),
        reply.text("Deployed."),
    )
    async with await toolkit_of(make_tool("note", note), make_tool("deploy", deploy)) as kit:
        async with client_for(stub, "gemini") as client:
            halted = await client.run("Ship it", kit, conversation_id="g")
            assert halted.pending is not None
            assert halted.pending.data is not None
            assert halted.pending.data["toolCallId"] == "call_1_1"
            resumed = await client.resume("g", Answer("r-2", True), kit)

    assert (resumed.status, resumed.text) == ("done", "Deployed.")
    last = stub.requests[-1].json["contents"][-1]
    assert last["role"] == "user"
    assert [p["functionResponse"]["response"] for p in last["parts"]] == [
        {"result": "noted"},
        {"result": "deployed prod"},
    ]

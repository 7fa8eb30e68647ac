"""The agent loop end to end against the stub: turns, tools, limits, usage.

Every scenario runs in both wire styles and through ``run``, ``stream`` and ``run_sync``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from toolnexus import (
    CancelToken,
    DoneEvent,
    SkillDef,
    ToolCallEvent,
    Toolkit,
    ToolResultEvent,
    create_toolkit,
    tool,
)
from toolnexus.dialects.base import MAX_ARGUMENT_CHARS
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from ..running import MakeClient, drive
from .support import first_id

QUESTION = "What's the weather in Chennai?"


def results_sent(style: str, messages: list[JSONObject]) -> list[tuple[str, str, bool | None]]:
    """The tool results at the end of a transcript: ``(call id, output, is_error)``.

    ``is_error`` is ``None`` for openai, whose tool messages do not carry it.
    """
    if style == "anthropic":
        blocks = messages[-1]["content"]
        return [(b["tool_use_id"], b["content"], b["is_error"]) for b in blocks]
    out: list[tuple[str, str, bool | None]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        out.insert(0, (message["tool_call_id"], message["content"], None))
    return out


def tool_call_message(style: str, calls: list[tuple[str, str, JSONObject]]) -> JSONObject:
    """The assistant message of a tool turn, as the stub sends it: ``(id, name, args)``."""
    if style == "anthropic":
        blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
        return {"role": "assistant", "content": blocks}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": i,
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a, separators=(",", ":"))},
            }
            for i, n, a in calls
        ],
    }


# --- the seed scenarios ---------------------------------------------------------------------------


async def test_one_prompt_without_tools_returns_the_text_in_one_turn(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    stub.enqueue(reply.text("Chennai is warm today.", usage=(10, 6)))
    result, _ = await drive(make_client(style), mode, prompt=QUESTION)

    assert result.status == "done"
    assert result.text == "Chennai is warm today."
    assert result.turns == 1
    assert result.usage.total_tokens == 16
    assert result.tool_call_count == 0
    assert result.tool_calls == []
    assert result.model == "test-model"
    assert result.limit is None
    assert result.pending is None
    assert len(stub.requests) == 1


async def test_a_tool_call_is_executed_and_its_result_fed_back(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"})),
        reply.text("It is sunny in Chennai."),
    )
    result, _ = await drive(make_client(style), mode, weather_kit, prompt=QUESTION)

    assert result.status == "done"
    assert result.text == "It is sunny in Chennai."
    assert result.turns == 2
    assert result.tool_call_count == 1
    call = result.tool_calls[0]
    assert (call.id, call.name, call.args) == (
        first_id(style),
        "get_weather",
        {"city": "Chennai"},
    )
    assert (call.output, call.is_error) == ("sunny in Chennai", False)

    second = stub.requests[1].json["messages"]
    expected_call = tool_call_message(
        style, [(first_id(style), "get_weather", {"city": "Chennai"})]
    )
    assert second[-2] == expected_call
    if style == "openai":
        assert second[-1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "sunny in Chennai",
        }
    else:
        assert results_sent(style, second) == [("toolu_1", "sunny in Chennai", False)]


@pytest.mark.parametrize("with_token", [True, False])
async def test_history_continues_a_transcript_with_or_without_a_cancel_token(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, with_token: bool
) -> None:
    stub.enqueue(
        reply.text("First answer.", usage=(5, 3)),
        reply.text("Second answer, remembering the first.", usage=(5, 3)),
    )
    client = make_client(style, system_prompt="Be brief.", max_turns=5)
    first, _ = await drive(client, mode, prompt="What's 2+2?")
    token = CancelToken() if with_token else None
    second, _ = await drive(
        client, mode, prompt="And double it?", history=first.messages, cancel=token
    )

    assert first.text == "First answer."
    assert second.text == "Second answer, remembering the first."
    assert len(second.messages) > len(first.messages)
    assert second.messages[: len(first.messages)] == first.messages
    assert second.model == "test-model"
    assert len(stub.requests) == 2
    sent = stub.requests[1].json
    if style == "openai":
        assert [m["role"] for m in sent["messages"]].count("system") == 1
        assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    else:
        assert sent["system"] == "Be brief."
        assert all(m["role"] != "system" for m in sent["messages"])
    assert sent["messages"][-1] == {"role": "user", "content": "And double it?"}


# --- the system prompt ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("system_prompt", "with_skills"),
    [("Be brief.", True), ("Be brief.", False), (None, True), (None, False), ("", False)],
)
async def test_system_prompt_joins_the_client_prompt_and_the_skills_prompt(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    style: str,
    system_prompt: str | None,
    with_skills: bool,
) -> None:
    skills = [SkillDef(name="deploy", content="Run make deploy.", description="Deploy things")]
    async with await create_toolkit(skills=skills if with_skills else None, builtins=False) as tk:
        skills_prompt = tk.skills_prompt()
        stub.enqueue(reply.text("ok"))
        await drive(make_client(style, system_prompt=system_prompt), mode, tk)

    assert (skills_prompt != "") is with_skills
    expected = "\n\n".join(p for p in (system_prompt or "", skills_prompt) if p)
    body = stub.requests[0].json
    if style == "openai":
        system = [m for m in body["messages"] if m["role"] == "system"]
        if expected:
            assert body["messages"][0] == {"role": "system", "content": expected}
            assert len(system) == 1
        else:
            assert system == []
    elif expected:
        assert body["system"] == expected
    else:
        assert "system" not in body


# --- parallel tools, results in call order --------------------------------------------------------


async def test_tools_of_one_turn_run_concurrently(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    spans: dict[str, tuple[float, float]] = {}

    @tool
    async def slow_a() -> str:
        """Sleeps."""
        started = time.perf_counter()
        await asyncio.sleep(0.3)
        spans["a"] = (started, time.perf_counter())
        return "a done"

    @tool
    async def slow_b() -> str:
        """Sleeps."""
        started = time.perf_counter()
        await asyncio.sleep(0.3)
        spans["b"] = (started, time.perf_counter())
        return "b done"

    stub.enqueue(
        reply.tool_calls(reply.call("slow_a"), reply.call("slow_b")),
        reply.text("both done"),
    )
    async with await create_toolkit(extra_tools=[slow_a, slow_b], builtins=False) as tk:
        result, _ = await drive(make_client(style), mode, tk, prompt="go")

    assert result.status == "done"
    latest_start = max(s for s, _ in spans.values())
    earliest_end = min(e for _, e in spans.values())
    assert latest_start < earliest_end, "the second tool started only after the first ended"


class Gate:
    """An ``asyncio.Event`` created on first use, so it belongs to the loop running the tools."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None

    @property
    def event(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
        return self._event


async def test_results_keep_call_order_when_a_later_call_finishes_first(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    gate = Gate()
    finished: list[str] = []

    @tool
    async def first(x: str) -> str:
        """Waits for ``second``."""
        async with asyncio.timeout(5):
            await gate.event.wait()
        finished.append("first")
        return f"first:{x}"

    @tool
    async def second(x: str) -> str:
        """Finishes at once."""
        finished.append("second")
        gate.event.set()
        return f"second:{x}"

    stub.enqueue(
        reply.tool_calls(reply.call("first", {"x": "1"}), reply.call("second", {"x": "2"})),
        reply.text("done"),
    )
    async with await create_toolkit(extra_tools=[first, second], builtins=False) as tk:
        result, events = await drive(make_client(style), mode, tk, prompt="go")

    id1, id2 = first_id(style, 1), first_id(style, 2)
    assert finished == ["second", "first"]
    assert [(c.id, c.name, c.output) for c in result.tool_calls] == [
        (id1, "first", "first:1"),
        (id2, "second", "second:2"),
    ]
    sent = results_sent(style, stub.requests[1].json["messages"])
    assert [(i, out) for i, out, _ in sent] == [(id1, "first:1"), (id2, "second:2")]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [(e.id, e.output) for e in results] == [(id1, "first:1"), (id2, "second:2")]


# --- a failing tool does not end the run ----------------------------------------------------------


async def test_a_raising_tool_becomes_an_error_result_the_model_sees(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    stub.enqueue(reply.tool_calls(reply.call("explode")), reply.text("It failed, sorry."))
    async with await create_toolkit(extra_tools=[explode], builtins=False) as tk:
        result, _ = await drive(make_client(style), mode, tk, prompt="go")

    assert result.status == "done"
    assert result.text == "It failed, sorry."
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == ("boom", True)
    sent = results_sent(style, stub.requests[1].json["messages"])
    assert sent == [(first_id(style), "boom", True if style == "anthropic" else None)]


async def test_a_call_to_an_unknown_tool_is_an_error_result(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("nope", {})), reply.text("ok"))
    result, _ = await drive(make_client(style), mode, prompt="go")

    assert result.status == "done"
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == (
        "Unknown tool: nope",
        True,
    )


# --- invalid arguments from the model -------------------------------------------------------------


async def test_invalid_tool_arguments_are_reported_to_the_model_without_executing(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    executed: list[JSONObject] = []
    metrics: list[JSONObject] = []

    @tool
    def t(**kwargs: Any) -> str:
        """Records its calls."""
        executed.append(kwargs)
        return "ran"

    stub.enqueue(reply.tool_calls(reply.call("t", "{not json")), reply.text("I will fix it."))
    async with await create_toolkit(extra_tools=[t], builtins=False) as tk:
        client = make_client(style, on_metric=metrics.append)
        result, events = await drive(client, mode, tk, prompt="go")

    assert executed == []
    assert result.status == "done"
    assert result.text == "I will fix it."
    call = result.tool_calls[0]
    assert (call.name, call.args, call.is_error) == ("t", {}, True)
    assert call.output.startswith("invalid arguments for t: ")
    assert len(call.output) > len("invalid arguments for t: ")
    sent = results_sent(style, stub.requests[1].json["messages"])
    assert sent == [(call.id, call.output, True if style == "anthropic" else None)]
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [(e.id, e.name, e.args) for e in calls] == [(call.id, "t", {})]
    assert [(e.id, e.output, e.is_error) for e in results] == [(call.id, call.output, True)]
    tool_metrics = [m for m in metrics if m["event"] == "tool"]
    assert [(m["tool"], m["is_error"]) for m in tool_metrics] == [("t", True)]


async def test_tool_arguments_longer_than_the_cap_are_refused_unrun(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    executed: list[int] = []

    @tool
    def store_text(text: str) -> str:
        """Keeps a text."""
        executed.append(len(text))
        return "kept"

    big = {"text": "x" * (MAX_ARGUMENT_CHARS + 1)}
    small = {"text": "x" * 1000}
    stub.enqueue(
        reply.tool_calls(
            reply.call("store_text", big, id="c1"), reply.call("store_text", small, id="c2")
        ),
        reply.text("I will send less."),
    )
    async with await create_toolkit(extra_tools=[store_text], builtins=False) as tk:
        result, _ = await drive(make_client(style), mode, tk, prompt="go")

    assert executed == [1000]
    refused, kept = result.tool_calls
    assert (refused.args, refused.is_error) == ({}, True)
    assert refused.output.startswith(
        f"invalid arguments for store_text: {MAX_ARGUMENT_CHARS + 12} characters of JSON, more than"
    )
    assert (kept.output, kept.is_error) == ("kept", False)
    assert result.text == "I will send less."


# --- calls without ids (openai) -------------------------------------------------------------------


def idless_calls_reply(mode: str) -> reply.Reply:
    """Two openai calls without ``id``: JSON, or SSE chunks for a streamed request."""
    if mode != "stream":
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": a}}
                for a in ('{"city":"Pune"}', '{"city":"Goa"}')
            ],
        }
        return reply.raw_json({"choices": [{"message": message, "finish_reason": "tool_calls"}]})
    pieces: list[JSONObject | str] = []
    for index, city in enumerate(("Pune", "Goa")):
        start = {"index": index, "type": "function", "function": {"name": "get_weather"}}
        args = {"index": index, "function": {"arguments": f'{{"city":"{city}"}}'}}
        pieces += [
            {"choices": [{"index": 0, "delta": {"tool_calls": [start]}}]},
            {"choices": [{"index": 0, "delta": {"tool_calls": [args]}}]},
        ]
    return reply.raw_sse([*pieces, "data: [DONE]"])


async def test_openai_calls_without_ids_get_turn_and_index_ids(
    stub: StubLLMServer, make_client: MakeClient, mode: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"})),
        idless_calls_reply(mode),
        reply.text("Sunny everywhere."),
    )
    result, _ = await drive(make_client("openai"), mode, weather_kit, prompt="go")

    assert result.status == "done"
    assert [c.id for c in result.tool_calls] == ["call_1", "call_1_0", "call_1_1"]
    third = stub.requests[2].json["messages"]
    assistant = third[-3]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1_0", "call_1_1"]
    assert third[-2:] == [
        {"role": "tool", "tool_call_id": "call_1_0", "content": "sunny in Pune"},
        {"role": "tool", "tool_call_id": "call_1_1", "content": "sunny in Goa"},
    ]


# --- the turn limit -------------------------------------------------------------------------------


async def test_max_turns_ends_the_run_incomplete_after_executing_the_last_calls(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    runs: list[int] = []

    @tool
    def tick() -> str:
        """Counts."""
        runs.append(1)
        return f"tick {len(runs)}"

    stub.enqueue(*[reply.tool_calls(reply.call("tick"), text="still working")] * 2)
    async with await create_toolkit(extra_tools=[tick], builtins=False) as tk:
        result, events = await drive(make_client(style, max_turns=2), mode, tk, prompt="go")

    assert result.status == "incomplete"
    assert result.limit == "maxTurns"
    assert result.turns == 2
    assert len(runs) == 2
    assert result.tool_call_count == 2
    assert [c.output for c in result.tool_calls] == ["tick 1", "tick 2"]
    assert len(stub.requests) == 2
    assert result.text == "still working"
    assert isinstance(events[-1], DoneEvent)
    assert results_sent(style, result.messages)[0][1] == "tick 2"


async def test_incomplete_openai_text_is_empty_when_the_last_content_is_null(
    stub: StubLLMServer, make_client: MakeClient, mode: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("get_weather", {"city": "X"})))
    result, _ = await drive(make_client("openai", max_turns=1), mode, weather_kit, prompt="go")

    assert (result.status, result.text, result.turns) == ("incomplete", "", 1)


# --- usage ----------------------------------------------------------------------------------------


async def test_usage_is_summed_over_every_turn(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"}), usage=(10, 6)),
        reply.tool_calls(reply.call("get_weather", {"city": "B"}), usage=(20, 7)),
        reply.text("done", usage=(30, 8)),
    )
    result, _ = await drive(make_client(style), mode, weather_kit, prompt="go")

    assert result.turns == 3
    usage = result.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (60, 21, 81)


async def test_missing_usage_counts_as_zero(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    stub.enqueue(reply.text("no usage here"))
    result, _ = await drive(make_client(style), mode, prompt="go")

    assert (result.usage.prompt_tokens, result.usage.total_tokens) == (0, 0)

"""The chat parts of a run's events: argument deltas when the run streams them, else one piece."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from toolnexus import RunResult, Usage
from toolnexus.events import (
    DoneEvent,
    Event,
    TextEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from toolnexus.ui.flow import (
    CallArgs,
    CallEnd,
    CallResult,
    CallStart,
    Failed,
    Finished,
    Part,
    StepEnd,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    chat_parts,
)


def result() -> RunResult:
    return RunResult(
        text="Warm.",
        messages=[],
        tool_calls=[],
        tool_call_count=2,
        turns=2,
        usage=Usage(),
        model="m",
        status="done",
    )


async def parts_of(events: list[Event], fail: Exception | None = None) -> list[Part]:
    async def gen() -> AsyncGenerator[Event, None]:
        for event in events:
            yield event
        if fail is not None:
            raise fail

    return [p async for p in chat_parts(gen())]


def kinds(parts: list[Part]) -> list[str]:
    return [type(p).__name__ for p in parts]


async def test_streamed_argument_deltas_become_the_calls_argument_pieces() -> None:
    done = result()
    parts = await parts_of(
        [
            TextEvent("Let me "),
            TextEvent("check."),
            ToolCallDeltaEvent("c1", "get_weather", 0, '{"ci'),
            ToolCallDeltaEvent("c1", "get_weather", 0, 'ty": "Pune"}'),
            ToolCallDeltaEvent("c2", "add", 1, '{"a":1}'),
            UsageEvent(Usage()),
            ToolCallEvent("c1", "get_weather", {"city": "Pune"}),
            ToolCallEvent("c2", "add", {"a": 1}),
            ToolResultEvent("c1", "get_weather", "sunny", False),
            ToolResultEvent("c2", "add", "boom", True),
            TextEvent("Warm."),
            UsageEvent(Usage()),
            DoneEvent(done),
        ]
    )
    assert kinds(parts) == [
        "StepStart",
        "TextStart",
        "TextDelta",
        "TextDelta",
        "TextEnd",
        "CallStart",
        "CallArgs",
        "CallArgs",
        "CallEnd",  # the first call's text is complete when the second one starts
        "CallStart",
        "CallArgs",
        "CallEnd",
        "CallResult",
        "CallResult",
        "StepEnd",
        "StepStart",
        "TextStart",
        "TextDelta",
        "TextEnd",
        "StepEnd",
        "Finished",
    ]
    first_text = parts[1]
    assert isinstance(first_text, TextStart)
    starts = [p for p in parts if isinstance(p, CallStart)]
    assert [(s.id, s.name, s.parent) for s in starts] == [
        ("c1", "get_weather", first_text.id),
        ("c2", "add", first_text.id),
    ]
    joined = "".join(p.delta for p in parts if isinstance(p, CallArgs) and p.id == "c1")
    assert joined == '{"city": "Pune"}'  # the model's own text, as it came
    ends = [p for p in parts if isinstance(p, CallEnd)]
    assert ends == [CallEnd("c1", "get_weather", {"city": "Pune"}), CallEnd("c2", "add", {"a": 1})]
    assert json.loads(joined) == ends[0].args
    assert CallResult("c2", "add", "boom", True) in parts
    second_text = [p for p in parts if isinstance(p, TextStart)][1]
    assert second_text.id != first_text.id
    assert parts[-1] == Finished(done)


async def test_without_deltas_the_whole_compact_arguments_are_one_piece() -> None:
    parts = await parts_of(
        [
            UsageEvent(Usage()),
            ToolCallEvent("c1", "get_weather", {"city": "Pune", "days": 2}),
            ToolResultEvent("c1", "get_weather", "sunny", False),
            DoneEvent(result()),
        ]
    )
    assert kinds(parts) == [
        "StepStart",
        "CallStart",
        "CallArgs",
        "CallEnd",
        "CallResult",
        "StepEnd",
        "Finished",
    ]
    assert parts[2] == CallArgs("c1", '{"city":"Pune","days":2}')


async def test_a_resumed_result_opens_a_step_and_an_error_ends_the_parts() -> None:
    parts = await parts_of(
        [ToolResultEvent("c9", "deploy", "deployed", False), TextEvent("Do")],
        fail=RuntimeError("model went away"),
    )
    assert parts == [
        StepStart(),
        CallResult("c9", "deploy", "deployed", False),
        StepEnd(),
        StepStart(),
        TextStart(parts[4].id),  # type: ignore[union-attr]
        TextDelta(parts[4].id, "Do"),  # type: ignore[union-attr]
        Failed("model went away"),
    ]


async def test_empty_text_deltas_are_dropped() -> None:
    parts = await parts_of([TextEvent(""), TextEvent("a"), UsageEvent(Usage())])
    assert [type(p) for p in parts] == [StepStart, TextStart, TextDelta, TextEnd]
    assert isinstance(parts[-1], TextEnd)


async def test_a_call_whose_text_does_not_parse_ends_at_its_tool_call_event() -> None:
    parts = await parts_of(
        [
            ToolCallDeltaEvent("c1", "f", 0, "{not json"),
            ToolCallDeltaEvent("c2", "g", 1, "{}"),
            UsageEvent(Usage()),
            ToolCallEvent("c1", "f", {}),
            ToolCallEvent("c2", "g", {}),
        ]
    )
    assert [(type(p).__name__, getattr(p, "id", None)) for p in parts] == [
        ("StepStart", None),
        ("CallStart", "c1"),
        ("CallArgs", "c1"),
        ("CallStart", "c2"),
        ("CallArgs", "c2"),
        ("CallEnd", "c1"),
        ("CallEnd", "c2"),
    ]


async def test_an_id_used_again_in_a_later_reply_is_a_new_call() -> None:
    parts = await parts_of(
        [
            UsageEvent(Usage()),
            ToolCallEvent("call_1", "f", {"n": 1}),
            ToolResultEvent("call_1", "f", "one", False),
            UsageEvent(Usage()),
            ToolCallEvent("call_1", "f", {"n": 2}),
            ToolResultEvent("call_1", "f", "two", False),
        ]
    )
    starts = [p for p in parts if isinstance(p, CallStart)]
    args = [p.delta for p in parts if isinstance(p, CallArgs)]
    assert len(starts) == 2
    assert args == ['{"n":1}', '{"n":2}']

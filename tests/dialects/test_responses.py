"""The ``responses`` style: OpenAI's Responses API (SPEC §11.1, A133, A134)."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import pytest

from toolnexus import (
    ConfigError,
    DoneEvent,
    LLMError,
    RunResult,
    TextEvent,
    ToolCallDeltaEvent,
    Toolkit,
    create_client,
    create_toolkit,
)
from toolnexus.dialects import ArgumentsDelta, ResponsesDialect, dialect_for
from toolnexus.testing import StubLLMServer, reply

from ..engine.support import get_weather

DIALECT = ResponsesDialect()
REASONING_SEALED = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
REASONING_BARE = {"id": "rs_2", "type": "reasoning", "summary": []}


@pytest.fixture
async def weather() -> Any:
    async with await create_toolkit(extra_tools=[get_weather], builtins=False) as tk:
        yield tk


def client(stub: StubLLMServer, **options: Any) -> Any:
    options.setdefault("api_key", "test-key")
    return create_client(stub.url, "responses", model="gpt-test", retries=0, **options)


def response(output: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    body = {"id": "resp_1", "object": "response", "status": "completed", "output": output}
    body.update(fields)
    return body


def call_item(call_id: str, city: str) -> dict[str, Any]:
    arguments = f'{{"city":"{city}"}}'
    return {
        "id": f"fc_{call_id}",
        "type": "function_call",
        "call_id": call_id,
        "name": "get_weather",
        "arguments": arguments,
        "status": "completed",
    }


async def streamed(c: Any, toolkit: Toolkit | None = None) -> RunResult:
    async with aclosing(c.stream("Weather?", toolkit)) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                return event.result
    raise AssertionError("no done event")


# --- A133 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_two_turn_tool_run_sends_input_items_as_specified(
    stub: StubLLMServer, weather: Toolkit, stream: bool
) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("get_weather", {"city": "Oslo"}, id="call_a"),
            reply.call("get_weather", {"city": "Lima"}, id="call_b"),
            text="Checking.",
            usage=(10, 4),
        ),
        reply.text("Cold and warm.", usage=(30, 5)),
    )
    async with client(stub, system_prompt="Be brief.") as c:
        result = await (streamed(c, weather) if stream else c.run("Weather?", weather))

    first, second = (r.json for r in stub.requests)
    assert [r.path for r in stub.requests] == ["/responses", "/responses"]
    assert stub.requests[0].headers["Authorization"] == "Bearer test-key"
    for body in (first, second):
        assert body["instructions"] == "Be brief."
        assert body["store"] is False
        assert body["model"] == "gpt-test"
        assert body["tools"] == [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": get_weather.input_schema,
                "strict": False,
            }
        ]
        assert "tool_choice" not in body
        assert body.get("stream") is (True if stream else None)
    assert first["input"] == [{"role": "user", "content": "Weather?"}]
    kept = result.messages
    assert [m.get("type") for m in kept[1:]] == [
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
    ]
    sent = second["input"]
    assert sent[0] == {"role": "user", "content": "Weather?"}
    assert sent[1:4] == [{k: v for k, v in m.items() if k != "id"} for m in kept[1:4]]
    assert all("id" in m for m in kept[1:4])  # the transcript keeps them whole
    assert sent[2]["call_id"] == "call_a"
    assert sent[4:] == [
        {"type": "function_call_output", "call_id": "call_a", "output": "sunny in Oslo"},
        {"type": "function_call_output", "call_id": "call_b", "output": "sunny in Lima"},
    ]
    assert (result.text, result.stop_reason, result.usage.total_tokens) == (
        "Cold and warm.",
        "stop",
        49,
    )


# --- A134 -------------------------------------------------------------------------------------


async def test_reasoning_items_go_back_only_with_encrypted_content(
    stub: StubLLMServer, weather: Toolkit
) -> None:
    output = [REASONING_SEALED, REASONING_BARE, call_item("call_1", "Oslo")]
    stub.enqueue(
        reply.raw_json(response(output, usage={"input_tokens": 5, "output_tokens": 9})),
        reply.raw_json(response([{"type": "message", "role": "assistant", "content": []}])),
    )
    async with client(stub) as c:
        result = await c.run("Weather?", weather)

    sent = stub.requests[1].json["input"]
    assert {k: v for k, v in REASONING_SEALED.items() if k != "id"} in sent
    assert not any(item.get("summary") == [] and "encrypted_content" not in item for item in sent)
    assert REASONING_BARE in result.messages
    assert REASONING_SEALED in result.messages


def test_sendable_items_leave_out_ids_and_unsealed_reasoning() -> None:
    prompt = {"role": "user", "content": "hi"}
    body = DIALECT.build_body(
        [prompt, REASONING_SEALED, REASONING_BARE], [], model="m", system="", stream=False
    )
    assert body == {
        "model": "m",
        "input": [prompt, {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}],
        "store": False,
    }


@pytest.mark.parametrize(
    ("details", "stop"),
    [
        ({"reason": "max_output_tokens"}, "length"),
        ({"reason": "content_filter"}, "content_filter"),
        ({"reason": "something_new"}, "something_new"),
    ],
)
def test_an_incomplete_reply_maps_its_reason(details: dict[str, str], stop: str) -> None:
    body = response(
        [{"type": "message", "content": [{"type": "output_text", "text": "Once"}]}],
        status="incomplete",
        incomplete_details=details,
    )
    turn = DIALECT.parse_response(body, turn=0)
    assert (turn.text, turn.stop_reason) == ("Once", stop)


async def test_a_failed_response_raises_with_its_message(stub: StubLLMServer) -> None:
    failed = response([], status="failed", error={"code": "server_error", "message": "boom"})
    stub.enqueue(reply.raw_json(failed))
    async with client(stub) as c:
        with pytest.raises(LLMError, match="boom"):
            await c.run("hi")


async def test_a_failed_stream_and_an_early_end_raise(stub: StubLLMServer) -> None:
    failed = response([], status="failed", error={"code": "server_error", "message": "kaput"})
    stub.enqueue(
        reply.raw_sse(
            [
                {"type": "response.created", "response": {}},
                {"type": "response.failed", "response": failed},
            ]
        ),
        reply.raw_sse(
            [
                {"type": "response.created", "response": {}},
                {"type": "response.output_text.delta", "item_id": "m", "delta": "half"},
            ]
        ),
        reply.raw_sse([{"type": "error", "code": "x", "message": "overloaded"}]),
    )
    async with client(stub) as c:
        with pytest.raises(LLMError, match="kaput"):
            await streamed(c)
        with pytest.raises(LLMError, match="stream ended early"):
            await streamed(c)
        with pytest.raises(LLMError, match="overloaded"):
            await streamed(c)


def test_a_refusal_part_is_the_text_and_the_stop_reason() -> None:
    part = {"type": "refusal", "refusal": "I can't help with that."}
    turn = DIALECT.parse_response(response([{"type": "message", "content": [part]}]), turn=0)
    assert (turn.text, turn.stop_reason) == ("I can't help with that.", "refusal")


# --- the stream parser ------------------------------------------------------------------------


def test_argument_deltas_are_named_through_their_added_item() -> None:
    parser = DIALECT.stream_parser(turn=3)
    item = {"id": "fc_9", "type": "function_call", "call_id": "call_9", "name": "f"}
    assert (
        parser.feed({"type": "response.output_item.added", "output_index": 1, "item": item}) == []
    )
    pieces = [
        parser.feed(
            {"type": "response.function_call_arguments.delta", "item_id": "fc_9", "delta": d}
        )
        for d in ('{"a"', ":1}")
    ]
    assert pieces == [
        [ArgumentsDelta("call_9", "f", 0, '{"a"')],
        [ArgumentsDelta("call_9", "f", 0, ":1}")],
    ]
    done = {**item, "arguments": '{"a":1}', "status": "completed"}
    parser.feed({"type": "response.output_item.done", "output_index": 1, "item": done})
    parser.feed({"type": "response.completed", "response": response([])})
    turn = parser.finish()
    assert [(u.id, u.args) for u in turn.tool_uses] == [("call_9", {"a": 1})]
    assert turn.items == [done]


async def test_text_deltas_stream_and_join_to_the_text(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("Hello there, friend."))
    async with client(stub) as c:
        events = [e async for e in c.stream("hi")]
    deltas = [e.delta for e in events if isinstance(e, TextEvent)]
    assert len(deltas) == 3
    assert "".join(deltas) == "Hello there, friend."
    assert not any(isinstance(e, ToolCallDeltaEvent) for e in events)


# --- keys -------------------------------------------------------------------------------------


async def test_the_key_comes_from_openai_api_key(
    stub: StubLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    stub.enqueue(reply.text("ok"))
    async with create_client(stub.url, "responses", model="m") as c:
        await c.run("hi")
    assert stub.requests[0].headers["Authorization"] == "Bearer sk-from-env"


def test_an_unknown_style_names_all_four() -> None:
    with pytest.raises(ConfigError, match="anthropic, gemini, openai, responses"):
        create_client("http://h", "bedrock", model="m")  # type: ignore[arg-type]
    assert dialect_for("responses").name == "responses"

"""What the client sends and how it reads replies: request shapes per style, tools in the
body, streamed tool calls and malformed replies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolnexus import (
    ToolCallEvent,
    Toolkit,
    UsageEvent,
    create_toolkit,
    tool,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from .running import MakeClient, drive


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@pytest.fixture
async def weather_kit() -> AsyncIterator[Toolkit]:
    async with await create_toolkit(extra_tools=[get_weather, explode], builtins=False) as tk:
        yield tk


# --- the openai request ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_openai_requests_post_to_chat_completions(
    stub: StubLLMServer, make_client: MakeClient, mode: str, suffix: str
) -> None:
    stub.enqueue(reply.text("ok"))
    await drive(make_client("openai", base_url=stub.url + suffix), mode)

    [request] = stub.requests
    assert request.method == "POST"
    assert request.path == ("/v1" if "v1" in suffix else "") + "/chat/completions"


async def test_openai_request_has_the_bearer_key_and_the_full_body_on_every_turn(
    stub: StubLLMServer, make_client: MakeClient, mode: str, weather_kit: Toolkit
) -> None:
    model = "org/Model-X:v1.5"
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"})),
        reply.text("Sunny."),
    )
    client = make_client("openai", model=model, system_prompt="Be brief.")
    question = "Weather in Chennai?"
    await drive(client, mode, weather_kit, prompt=question)

    first, second = stub.requests
    for request in (first, second):
        assert request.headers["Authorization"] == "Bearer test-key"
        assert request.headers["Content-Type"].startswith("application/json")
        assert request.json["model"] == model
    expected: JSONObject = {
        "model": model,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": question},
        ],
        "tools": weather_kit.to_openai(),
        "tool_choice": "auto",
    }
    if mode == "stream":
        expected |= {"stream": True, "stream_options": {"include_usage": True}}
    assert first.json == expected
    assert second.json["messages"][:2] == expected["messages"]
    assert len(second.json["messages"]) == 4


# --- the anthropic request ------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_anthropic_requests_post_to_v1_messages(
    stub: StubLLMServer, make_client: MakeClient, mode: str, suffix: str
) -> None:
    stub.enqueue(reply.text("ok"))
    await drive(make_client("anthropic", base_url=stub.url + suffix), mode)

    assert [r.path for r in stub.requests] == ["/v1/messages"]


async def test_anthropic_request_has_its_headers_body_and_one_result_message_per_turn(
    stub: StubLLMServer, make_client: MakeClient, mode: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}), reply.call("explode")),
        reply.text("Half of it worked."),
    )
    client = make_client("anthropic", system_prompt="Be brief.")
    result, _ = await drive(client, mode, weather_kit, prompt="Weather?")

    first, second = stub.requests
    for request in (first, second):
        assert request.headers["x-api-key"] == "test-key"
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert request.headers["content-type"].startswith("application/json")
        assert "Authorization" not in request.headers
    expected: JSONObject = {
        "model": "test-model",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": weather_kit.to_anthropic(),
    }
    if mode == "stream":
        expected["stream"] = True
    assert first.json == expected
    assert second.json["system"] == "Be brief."
    assert second.json["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "sunny in Chennai",
                "is_error": False,
            },
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": True},
        ],
    }
    assert len(second.json["messages"]) == 3
    assert result.status == "done"


# --- no tools, no tools key -----------------------------------------------------------------------


@pytest.mark.parametrize("kit", ["none", "empty"])
async def test_without_tools_the_body_has_no_tools_key(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: str
) -> None:
    stub.enqueue(reply.text("ok"))
    async with await create_toolkit(builtins=False) as empty:
        await drive(make_client(style), mode, empty if kit == "empty" else None)

    body = stub.requests[0].json
    assert "tools" not in body
    assert "tool_choice" not in body


async def test_tools_emptied_by_before_llm_are_omitted_from_the_body(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(reply.text("ok"))
    hooks: dict[str, Any] = {"before_llm": lambda info: {"tools": []}}
    await drive(make_client(style, hooks=hooks), mode, weather_kit)

    body = stub.requests[0].json
    assert "tools" not in body
    assert "tool_choice" not in body


# --- streamed tool calls --------------------------------------------------------------------------


def openai_chunk(delta: JSONObject) -> JSONObject:
    return {"choices": [{"index": 0, "delta": delta}]}


async def test_openai_stream_assembles_arguments_split_across_chunks(
    stub: StubLLMServer, make_client: MakeClient, weather_kit: Toolkit
) -> None:
    first_call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    stub.enqueue(
        reply.raw_sse(
            [
                openai_chunk({"content": "Hel"}),
                openai_chunk({"tool_calls": [first_call]}),
                openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
                openai_chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '"Chennai"}'}}]}
                ),
                {
                    "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16},
                },
                "data: [DONE]",
            ]
        ),
        reply.text("Sunny."),
    )
    events = [e async for e in make_client("openai").stream("hi", weather_kit)]

    usage = next(e for e in events if isinstance(e, UsageEvent)).usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (10, 6, 16)
    result = events[-1].result  # type: ignore[union-attr]
    assert result.tool_calls[0].args == {"city": "Chennai"}
    assert result.tool_calls[0].output == "sunny in Chennai"
    assert stub.requests[1].json["messages"][-2] == {
        "role": "assistant",
        "content": "Hel",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Chennai"}'},
            }
        ],
    }


async def test_openai_stream_orders_calls_by_index_not_arrival(
    stub: StubLLMServer, make_client: MakeClient, weather_kit: Toolkit
) -> None:
    def start(index: int, call_id: str) -> JSONObject:
        function = {"name": "get_weather", "arguments": ""}
        return openai_chunk(
            {
                "tool_calls": [
                    {"index": index, "id": call_id, "type": "function", "function": function}
                ]
            }
        )

    def args(index: int, city: str) -> JSONObject:
        piece = {"index": index, "function": {"arguments": f'{{"city":"{city}"}}'}}
        return openai_chunk({"tool_calls": [piece]})

    stub.enqueue(
        reply.raw_sse(
            [start(1, "call_b"), args(1, "B"), start(0, "call_a"), args(0, "A"), "data: [DONE]"]
        ),
        reply.text("ok"),
    )
    events = [e async for e in make_client("openai").stream("hi", weather_kit)]

    calls = [(e.id, e.args) for e in events if isinstance(e, ToolCallEvent)]
    assert calls == [("call_a", {"city": "A"}), ("call_b", {"city": "B"})]
    result = events[-1].result  # type: ignore[union-attr]
    assert [(c.id, c.output) for c in result.tool_calls] == [
        ("call_a", "sunny in A"),
        ("call_b", "sunny in B"),
    ]
    sent = stub.requests[1].json["messages"]
    assert [c["id"] for c in sent[-3]["tool_calls"]] == ["call_a", "call_b"]
    assert [m["tool_call_id"] for m in sent[-2:]] == ["call_a", "call_b"]


ANTHROPIC_STREAM = [
    "event: message_start\n"
    'data: {"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}',
    "event: content_block_start\n"
    'data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use",'
    '"id":"toolu_1","name":"get_weather","input":{}}}',
    "event: content_block_delta\n"
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
    '"partial_json":"{\\"city\\": \\"Chen"}}',
    "event: content_block_delta\n"
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
    '"partial_json":"nai\\"}"}}',
    "event: message_delta\n"
    'data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},'
    '"usage":{"output_tokens":6}}',
    'event: message_stop\ndata: {"type":"message_stop"}',
]


async def test_anthropic_stream_assembles_input_json_and_takes_the_last_usage(
    stub: StubLLMServer, make_client: MakeClient, weather_kit: Toolkit
) -> None:
    stub.enqueue(reply.raw_sse(ANTHROPIC_STREAM), reply.text("Sunny."))
    events = [e async for e in make_client("anthropic").stream("hi", weather_kit)]

    usage = next(e for e in events if isinstance(e, UsageEvent)).usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (10, 6, 16)
    result = events[-1].result  # type: ignore[union-attr]
    assert result.tool_calls[0].args == {"city": "Chennai"}
    assert stub.requests[1].json["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Chennai"},
            }
        ],
    }

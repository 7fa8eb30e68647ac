"""Streamed OpenAI-style replies keep every field the JSON path keeps (SPEC §2.2).

Each case is one reply as a provider sends it both ways: a ``chat.completion`` JSON body and
the same reply as a chunk stream, written out as the provider's bytes and served unchanged by
``StubLLMServer``. ``run`` reads the JSON, ``stream`` the SSE; the assistant message kept (and
the whole result) must be the same, and must hold the field in question: unknown keys on a tool
call (Gemini's ``extra_content`` thought signature), ``reasoning`` / ``reasoning_details`` /
``reasoning_content``, a legacy ``function_call``, and ``content`` given as a list of parts.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import pytest

from toolnexus import DoneEvent, RunResult, TextEvent, create_client, create_toolkit, tool
from toolnexus.dialects import OpenAIDialect
from toolnexus.testing import StubLLMServer, reply

USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
SIGNATURE = "CiQBVKhc7mN0b3VnaHQtc2lnbmF0dXJlLWJ5dGVz+/=="


def completion(message: dict[str, Any], finish: str) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }
    return json.dumps(body).encode()


def chunks(*deltas: dict[str, Any], finish: str) -> bytes:
    """The stream: one chunk per delta, the finish reason, the usage, ``[DONE]``."""
    events = [{"index": 0, "delta": delta, "finish_reason": None} for delta in deltas]
    events[-1]["finish_reason"] = finish
    out = b""
    for choice in events:
        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    tail = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": USAGE}
    return out + b"data: " + json.dumps(tail).encode() + b"\n\ndata: [DONE]\n\n"


GEMINI_CALL = {
    "extra_content": {"google": {"thought_signature": SIGNATURE}},
    "function": {"arguments": '{"city":"Paris"}', "name": "get_weather"},
    "id": "function-call-7311",
    "type": "function",
}
REASONING_DETAILS = [
    {
        "type": "reasoning.text",
        "text": "The user wants the capital.",
        "signature": "c2lnbmVk",
        "format": "anthropic-claude-v1",
        "index": 0,
    },
    {"type": "reasoning.encrypted", "data": "ZW5j", "format": "anthropic-claude-v1", "index": 1},
]
PARTS = [
    {"type": "thinking", "thinking": [{"type": "text", "text": "Greet them back."}]},
    {"type": "text", "text": "Hello there."},
]

# name -> (JSON body, SSE body, the field that must be kept)
CASES: dict[str, tuple[bytes, bytes, str]] = {
    "tool call with extra_content (Gemini thought signature)": (
        completion(
            {"role": "assistant", "content": None, "tool_calls": [GEMINI_CALL]}, "tool_calls"
        ),
        chunks(
            {"role": "assistant", "tool_calls": [{**GEMINI_CALL, "index": 0}]},
            finish="tool_calls",
        ),
        "tool_calls",
    ),
    "tool call with unknown keys in pieces": (
        completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        "extra_content": {"google": {"thought_signature": SIGNATURE}},
                        "cache_hint": {"ttl": 30},
                    }
                ],
            },
            "tool_calls",
        ),
        chunks(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                        "extra_content": {"google": {"thought_signature": SIGNATURE[:20]}},
                    }
                ],
            },
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "function": {"arguments": '{"city":'},
                        "extra_content": {"google": {"thought_signature": SIGNATURE[20:]}},
                    }
                ]
            },
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": '"Oslo"}'}, "cache_hint": {"ttl": 30}}
                ]
            },
            finish="tool_calls",
        ),
        "tool_calls",
    ),
    "reasoning, reasoning_details and reasoning_content": (
        completion(
            {
                "role": "assistant",
                "content": "Paris.",
                "reasoning": "The user wants the capital.",
                "reasoning_details": REASONING_DETAILS,
                "reasoning_content": "Capital of France: Paris.",
            },
            "stop",
        ),
        chunks(
            {
                "role": "assistant",
                "content": "",
                "reasoning": "The user ",
                "reasoning_content": "Capital of ",
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": "The user ",
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    }
                ],
            },
            {
                "reasoning": "wants the capital.",
                "reasoning_content": "France: Paris.",
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": "wants the capital.",
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    }
                ],
            },
            {
                "reasoning": None,
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "signature": "c2lnbmVk",
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    },
                    REASONING_DETAILS[1],
                ],
            },
            {"content": "Par"},
            {"content": "is."},
            finish="stop",
        ),
        "reasoning_details",
    ),
    "legacy function_call": (
        completion(
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            },
            "function_call",
        ),
        chunks(
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "get_weather", "arguments": ""},
            },
            {"function_call": {"arguments": '{"city":'}},
            {"function_call": {"arguments": '"Oslo"}'}},
            finish="function_call",
        ),
        "function_call",
    ),
    "content as a list of parts": (
        completion({"role": "assistant", "content": PARTS}, "stop"),
        chunks(
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Greet "}]}],
            },
            {
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "them back."}]}
                ]
            },
            {"content": [{"type": "text", "text": "Hello "}]},
            {"content": "there."},
            finish="stop",
        ),
        "content",
    ),
}


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def _result(stub: StubLLMServer, data: bytes, mode: str) -> RunResult:
    content_type = "application/json" if mode == "run" else "text/event-stream"
    stub.enqueue(reply.raw_bytes(data, content_type=content_type))
    client = create_client(stub.url, "openai", model="m", api_key="k", max_turns=1, retries=0)
    try:
        if mode == "run":
            return await client.run("hi")
        async with aclosing(client.stream("hi")) as events:
            async for event in events:
                if isinstance(event, DoneEvent):
                    return event.result
    finally:
        await client.aclose()
    raise AssertionError("no done event")


def assistant(result: RunResult) -> dict[str, Any]:
    return [m for m in result.messages if m.get("role") == "assistant"][-1]


@pytest.mark.parametrize("case", list(CASES))
async def test_the_streamed_message_keeps_what_the_json_message_keeps(
    stub: StubLLMServer, case: str
) -> None:
    as_json, as_sse, kept = CASES[case]
    plain = await _result(stub, as_json, "run")
    streamed = await _result(stub, as_sse, "stream")

    sent = json.loads(as_json)["choices"][0]["message"]
    assert assistant(plain) == sent  # the JSON path keeps the message as received
    assert assistant(streamed)[kept] == sent[kept]
    assert streamed.messages == plain.messages
    assert streamed.to_dict() == plain.to_dict()


async def test_content_parts_give_their_text_on_both_paths(stub: StubLLMServer) -> None:
    as_json, as_sse, _ = CASES["content as a list of parts"]
    plain = await _result(stub, as_json, "run")
    stub.enqueue(reply.raw_bytes(as_sse, content_type="text/event-stream"))
    async with create_client(stub.url, model="m", api_key="k", max_turns=1) as client:
        deltas = [e.delta async for e in client.stream("hi") if isinstance(e, TextEvent)]
    assert plain.text == "Hello there."
    assert "".join(deltas) == "Hello there."


async def test_a_streamed_thought_signature_goes_back_to_the_model_on_the_next_turn(
    stub: StubLLMServer,
) -> None:
    _, as_sse, _ = CASES["tool call with extra_content (Gemini thought signature)"]
    stub.enqueue(reply.raw_bytes(as_sse, content_type="text/event-stream"))
    stub.enqueue(reply.text("Sunny."))
    toolkit = await create_toolkit(extra_tools=[get_weather])
    async with create_client(stub.url, model="m", api_key="k") as client:
        async with aclosing(client.stream("weather?", toolkit)) as events:
            results = [e.result async for e in events if isinstance(e, DoneEvent)]
    assert results[0].text == "Sunny."
    sent_back = stub.requests[1].json["messages"][-2]
    assert sent_back["tool_calls"] == [GEMINI_CALL]


def test_a_repeated_label_is_kept_once_and_a_null_adds_nothing() -> None:
    parser = OpenAIDialect().stream_parser(turn=0)
    piece = {"type": "reasoning.text", "text": "a", "format": "f", "signature": None, "index": 0}
    for text in ("a", "b"):
        parser.feed(
            {"choices": [{"index": 0, "delta": {"reasoning_details": [{**piece, "text": text}]}}]}
        )
    parser.feed({"choices": [{"index": 0, "delta": {"refusal": None}, "finish_reason": "stop"}]})
    message = parser.finish().message
    assert message == {
        "role": "assistant",
        "content": "",
        "reasoning_details": [{**piece, "text": "ab"}],
    }

"""How the reply builders render on the wire, per style and mode, read with plain clients."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from toolnexus.testing import reply

from .wire import ANTHROPIC, OPENAI, exchange, parse_sse

# --- OpenAI rendering -----------------------------------------------------------------------------


async def test_openai_json_text_reply_is_a_chat_completion_with_usage(stub, session):
    status, headers, body = await exchange(
        session, stub, reply.text("Hello there", usage=(3, 4)), OPENAI, False
    )
    assert (status, headers["Content-Type"]) == (200, "application/json")
    assert json.loads(body) == {
        "id": "chatcmpl-stub-0",
        "object": "chat.completion",
        "model": "m-1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello there"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }


async def test_openai_json_tool_calls_number_default_ids_and_omit_usage(stub, session):
    made = reply.tool_calls(
        reply.call("get_weather", {"city": "Chennai"}), reply.call("noop", id="mine")
    )
    _, _, body = await exchange(session, stub, made, OPENAI, False)
    parsed = json.loads(body)
    assert "usage" not in parsed
    assert parsed["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Chennai"}'},
                    },
                    {
                        "id": "mine",
                        "type": "function",
                        "function": {"name": "noop", "arguments": "{}"},
                    },
                ],
            },
            "finish_reason": "tool_calls",
        }
    ]


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub-0",
        "object": "chat.completion.chunk",
        "model": "m-1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def test_openai_sse_text_splits_words_and_ends_with_usage_and_done(stub, session):
    status, headers, body = await exchange(
        session, stub, reply.text("Hello there", usage=(3, 4)), OPENAI, True
    )
    assert (status, headers["Content-Type"]) == (200, "text/event-stream")
    assert [data for _, data in parse_sse(body)] == [
        openai_chunk({"content": "Hello "}),
        openai_chunk({"content": "there"}),
        openai_chunk({}, "stop"),
        {
            "id": "chatcmpl-stub-0",
            "object": "chat.completion.chunk",
            "model": "m-1",
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
        },
        "[DONE]",
    ]


async def test_openai_sse_tool_calls_split_arguments_across_chunks(stub, session):
    made = reply.tool_calls(
        reply.call("get_weather", {"city": "Chennai"}), reply.call("noop"), text="On it."
    )
    _, _, body = await exchange(session, stub, made, OPENAI, True)

    def args(index: int, piece: str) -> dict[str, Any]:
        return openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})

    def opening(index: int, call_id: str, name: str) -> dict[str, Any]:
        function = {"name": name, "arguments": ""}
        entry = {"index": index, "id": call_id, "type": "function", "function": function}
        return openai_chunk({"tool_calls": [entry]})

    assert [data for _, data in parse_sse(body)] == [
        openai_chunk({"content": "On "}),
        openai_chunk({"content": "it."}),
        opening(0, "call_1", "get_weather"),
        args(0, '{"city":"'),
        args(0, 'Chennai"}'),
        opening(1, "call_2", "noop"),
        args(1, "{"),
        args(1, "}"),
        openai_chunk({}, "tool_calls"),
        "[DONE]",
    ]


async def test_text_chunks_set_the_streamed_pieces(stub, session):
    made = reply.text("abcdef", chunks=["a", "bcd", "ef"])
    _, _, body = await exchange(session, stub, made, OPENAI, True)
    deltas = [d["choices"][0]["delta"].get("content") for _, d in parse_sse(body)[:-1]]
    assert deltas == ["a", "bcd", "ef", None]


async def test_long_arguments_stream_in_pieces_that_join_back(stub, session):
    args = {"text": "x" * 100, "n": 1}
    _, _, body = await exchange(
        session, stub, reply.tool_calls(reply.call("f", args)), OPENAI, True
    )
    pieces = [
        d["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for _, d in parse_sse(body)[:-2]
    ]
    assert pieces[0] == ""
    assert len(pieces) > 3
    assert json.loads("".join(pieces)) == args


async def test_string_args_are_sent_verbatim(stub, session):
    made = reply.tool_calls(reply.call("f", "{not json"))
    _, _, body = await exchange(session, stub, made, OPENAI, False)
    call = json.loads(body)["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["arguments"] == "{not json"

    _, _, body = await exchange(session, stub, made, ANTHROPIC, False)
    assert json.loads(body)["content"][0]["input"] == "{not json"


# --- Anthropic rendering --------------------------------------------------------------------------


async def test_anthropic_json_text_reply_is_a_message_with_usage(stub, session):
    status, headers, body = await exchange(
        session, stub, reply.text("Hello there", usage=(3, 4)), ANTHROPIC, False
    )
    assert (status, headers["Content-Type"]) == (200, "application/json")
    assert json.loads(body) == {
        "id": "msg_stub_0",
        "type": "message",
        "role": "assistant",
        "model": "m-1",
        "content": [{"type": "text", "text": "Hello there"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }


async def test_anthropic_json_tool_calls_follow_the_text_block_and_omit_usage(stub, session):
    made = reply.tool_calls(
        reply.call("get_weather", {"city": "Chennai"}), reply.call("noop", id="mine"), text="Hm."
    )
    _, _, body = await exchange(session, stub, made, ANTHROPIC, False)
    assert json.loads(body) == {
        "id": "msg_stub_0",
        "type": "message",
        "role": "assistant",
        "model": "m-1",
        "content": [
            {"type": "text", "text": "Hm."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Chennai"},
            },
            {"type": "tool_use", "id": "mine", "name": "noop", "input": {}},
        ],
        "stop_reason": "tool_use",
    }


def anthropic_start(input_tokens: int) -> tuple[str, dict[str, Any]]:
    message = {
        "id": "msg_stub_0",
        "type": "message",
        "role": "assistant",
        "model": "m-1",
        "content": [],
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return ("message_start", {"type": "message_start", "message": message})


def anthropic_end(stop_reason: str, output_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason},
        "usage": {"output_tokens": output_tokens},
    }
    return [("message_delta", delta), ("message_stop", {"type": "message_stop"})]


def block_event(kind: str, index: int, **extra: Any) -> tuple[str, dict[str, Any]]:
    return (kind, {"type": kind, "index": index, **extra})


async def test_anthropic_sse_text_streams_text_deltas_between_block_events(stub, session):
    status, headers, body = await exchange(
        session, stub, reply.text("Hello there", usage=(3, 4)), ANTHROPIC, True
    )
    assert (status, headers["Content-Type"]) == (200, "text/event-stream")
    text_delta = "content_block_delta"
    assert parse_sse(body) == [
        anthropic_start(3),
        block_event("content_block_start", 0, content_block={"type": "text", "text": ""}),
        block_event(text_delta, 0, delta={"type": "text_delta", "text": "Hello "}),
        block_event(text_delta, 0, delta={"type": "text_delta", "text": "there"}),
        block_event("content_block_stop", 0),
        *anthropic_end("end_turn", 4),
    ]


async def test_anthropic_sse_tool_calls_with_zero_usage_when_none_given(stub, session):
    made = reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}), text="Hm.")
    _, _, body = await exchange(session, stub, made, ANTHROPIC, True)

    def partial(piece: str) -> tuple[str, dict[str, Any]]:
        delta = {"type": "input_json_delta", "partial_json": piece}
        return block_event("content_block_delta", 1, delta=delta)

    tool_block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    assert parse_sse(body) == [
        anthropic_start(0),
        block_event("content_block_start", 0, content_block={"type": "text", "text": ""}),
        block_event("content_block_delta", 0, delta={"type": "text_delta", "text": "Hm."}),
        block_event("content_block_stop", 0),
        block_event("content_block_start", 1, content_block=tool_block),
        partial('{"city":"'),
        partial('Chennai"}'),
        block_event("content_block_stop", 1),
        *anthropic_end("tool_use", 0),
    ]


async def test_plain_httpx_client_reads_a_streamed_reply(stub):
    stub.enqueue(reply.text("Hello there world"))
    pieces = []
    async with (
        httpx.AsyncClient() as client,
        client.stream("POST", stub.url + OPENAI, json={"model": "m", "stream": True}) as response,
    ):
        assert response.headers["content-type"] == "text/event-stream"
        async for line in response.aiter_lines():
            if line.startswith("data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"]
                pieces.append(delta.get("content", ""))
            elif line:
                assert line == "data: [DONE]"
    assert "".join(pieces) == "Hello there world"
    assert len([p for p in pieces if p]) == 3


async def test_default_tool_call_ids_never_repeat_across_replies_of_one_server(stub, session):
    ids: list[str] = []
    for style, stream in [(OPENAI, False), (OPENAI, True), (ANTHROPIC, False), (ANTHROPIC, True)]:
        made = reply.tool_calls(reply.call("a"), reply.call("b"))
        _, _, body = await exchange(session, stub, made, style, stream)
        ids += [m.group(1) for m in re.finditer(r'"id":"((?:call|toolu)_\d+)"', body.decode())]
    assert ids == [
        "call_1", "call_2", "call_3", "call_4", "toolu_5", "toolu_6", "toolu_7", "toolu_8"
    ]  # fmt: skip
    stub.reset()
    _, _, body = await exchange(session, stub, reply.tool_calls(reply.call("a")), OPENAI, False)
    assert '"id":"call_1"' in body.decode()  # a reset server starts again

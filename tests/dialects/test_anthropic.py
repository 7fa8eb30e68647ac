"""The Anthropic messages dialect on plain dicts and recorded streams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolnexus import LLMError, Tool, ToolContext, ToolResult, Usage
from toolnexus.dialects import AnthropicDialect, MalformedResponse, ToolUse, Turn
from toolnexus.dialects.sse import SSEDecoder
from toolnexus.types import JSONObject

FIXTURES = Path(__file__).parent / "fixtures"
DIALECT = AnthropicDialect()
MESSAGES: list[JSONObject] = [{"role": "user", "content": "What's the weather in Chennai?"}]
WEATHER_TOOL: JSONObject = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
SPEC_CONTENT: list[JSONObject] = [
    {"type": "text", "text": "Let me check."},
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Chennai"}},
]


def events_of(name: str, size: int | None = None) -> list[JSONObject]:
    data = (FIXTURES / name).read_bytes()
    step = size or len(data)
    decoder = SSEDecoder()
    events: list[JSONObject] = []
    for start in range(0, len(data), step):
        events.extend(decoder.feed(data[start : start + step]))
    return events + decoder.close()


STOP: JSONObject = {"type": "message_stop"}


def stream(events: list[JSONObject]) -> tuple[list[str], Turn]:
    parser = DIALECT.stream_parser(turn=0)
    items = [item for event in events for item in parser.feed(event)]
    deltas = [item for item in items if isinstance(item, str)]  # text; argument pieces aside
    return deltas, parser.finish()


# --- request --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("http://h", "http://h/v1/messages"),
        ("http://h/", "http://h/v1/messages"),
        ("http://h/v1", "http://h/v1/messages"),
        ("http://h/v1/", "http://h/v1/messages"),
        ("http://127.0.0.1:9/proxy", "http://127.0.0.1:9/proxy/v1/messages"),
        ("http://127.0.0.1:9/proxy/v1//", "http://127.0.0.1:9/proxy/v1/messages"),
    ],
)
def test_url_always_ends_in_v1_messages(base: str, expected: str) -> None:
    assert DIALECT.url(base) == expected


def test_headers_carry_the_key_version_and_content_type() -> None:
    assert DIALECT.headers("test-key") == {
        "x-api-key": "test-key",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }


def test_body_has_max_tokens_top_level_system_and_tools() -> None:
    body = DIALECT.build_body(
        MESSAGES, [WEATHER_TOOL], model="test-model", system="Be brief.", stream=False
    )
    assert body == {
        "model": "test-model",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": MESSAGES,
        "tools": [WEATHER_TOOL],
    }
    assert DIALECT.system_in_messages is False


def test_body_omits_an_empty_system_and_empty_tools() -> None:
    body = DIALECT.build_body(MESSAGES, [], model="test-model", system="", stream=False)
    assert body == {"model": "test-model", "max_tokens": 4096, "messages": MESSAGES}


def test_streaming_body_only_adds_stream_true() -> None:
    body = DIALECT.build_body(MESSAGES, [], model="claude-x", system="S", stream=True)
    assert body == {
        "model": "claude-x",
        "max_tokens": 4096,
        "system": "S",
        "messages": MESSAGES,
        "stream": True,
    }


def test_tool_schemas_use_the_anthropic_shape() -> None:
    async def execute(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        return ToolResult("unused")

    weather = Tool(
        name="get_weather",
        description="Weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        source="native",
        execute=execute,
    )
    assert DIALECT.tool_schemas([weather]) == [WEATHER_TOOL]


# --- JSON replies ---------------------------------------------------------------------------------


def test_a_text_and_tool_use_reply_gives_text_tool_use_usage_and_message_as_received() -> None:
    body = {
        "content": SPEC_CONTENT,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 6},
    }
    turn = DIALECT.parse_response(body, turn=0)
    assert turn.text == "Let me check."
    assert turn.tool_uses == [ToolUse("toolu_1", "get_weather", {"city": "Chennai"})]
    assert turn.usage == Usage(10, 6, 16)
    assert turn.message == {"role": "assistant", "content": SPEC_CONTENT}
    assert turn.response == body


def test_text_blocks_are_concatenated_and_other_blocks_skipped() -> None:
    content = [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "Chennai "},
        {"type": "text", "text": "is warm."},
    ]
    turn = DIALECT.parse_response({"content": content}, turn=0)
    assert turn.text == "Chennai is warm."
    assert turn.tool_uses == []
    assert turn.message == {"role": "assistant", "content": content}


def test_several_tool_use_blocks_keep_their_order_and_ids() -> None:
    content = [
        {"type": "tool_use", "id": "toolu_b", "name": "second", "input": {}},
        {"type": "tool_use", "id": "toolu_a", "name": "first", "input": {"n": 1}},
    ]
    turn = DIALECT.parse_response({"content": content}, turn=0)
    assert turn.tool_uses == [
        ToolUse("toolu_b", "second", {}),
        ToolUse("toolu_a", "first", {"n": 1}),
    ]
    assert turn.text == ""


def test_tool_use_without_input_gets_empty_args() -> None:
    content = [{"type": "tool_use", "id": "toolu_1", "name": "ping"}]
    assert DIALECT.parse_response({"content": content}, turn=0).tool_uses == [
        ToolUse("toolu_1", "ping", {})
    ]


@pytest.mark.parametrize("value", [[1, 2], 3, "[1]"])
def test_tool_use_input_that_is_not_an_object_becomes_an_error(value: object) -> None:
    content = [{"type": "tool_use", "id": "toolu_1", "name": "ping", "input": value}]
    [use] = DIALECT.parse_response({"content": content}, turn=0).tool_uses
    assert use.args == {}
    assert use.error is not None
    assert use.error.startswith("invalid arguments for ping: ")


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"input_tokens": 10, "output_tokens": 6}, Usage(10, 6, 16)),
        ({"input_tokens": 3}, Usage(3, 0, 3)),
        ({}, Usage(0, 0, 0)),
        (None, Usage(0, 0, 0)),
    ],
)
def test_usage_maps_input_to_prompt_and_output_to_completion(
    usage: JSONObject | None, expected: Usage
) -> None:
    body: JSONObject = {"content": [{"type": "text", "text": "x"}]}
    if usage is not None:
        body["usage"] = usage
    assert DIALECT.parse_response(body, turn=0).usage == expected


@pytest.mark.parametrize(
    "body", [{}, {"content": None}, {"content": "text"}, {"type": "error"}, "nope", None]
)
def test_reply_without_a_content_list_is_malformed(body: object) -> None:
    with pytest.raises(MalformedResponse, match="content"):
        DIALECT.parse_response(body, turn=0)


# --- streams --------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 13, None])
def test_a_streamed_tool_use_assembles_input_json_and_takes_the_last_output_count(
    size: int | None,
) -> None:
    deltas, turn = stream(events_of("anthropic_spec_example.sse", size))
    assert deltas == []
    assert turn.text == ""
    assert turn.tool_uses == [ToolUse("toolu_1", "get_weather", {"city": "Chennai"})]
    assert turn.usage == Usage(10, 6, 16)  # completion 6, not 1 + 6
    content = [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Chennai"}}
    ]
    assert turn.message == {"role": "assistant", "content": content}
    assert turn.stop_reason == "tool_calls"
    assert turn.response == {
        "content": content,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 6},
        "streamed": True,
    }


@pytest.mark.parametrize("size", [1, None])
def test_text_and_tool_blocks_are_rebuilt_in_index_order(size: int | None) -> None:
    deltas, turn = stream(events_of("anthropic_text_and_tools.sse", size))
    assert deltas == ["Let me ", "check — ☀"]
    assert turn.text == "Let me check — ☀"
    assert turn.tool_uses == [
        ToolUse("toolu_a", "get_weather", {"city": "Chennai"}),
        ToolUse("toolu_b", "get_time", {}),
    ]
    assert turn.usage == Usage(25, 42, 67)
    content = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "Let me check — ☀"},
        {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Chennai"}},
        {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}},
    ]
    assert turn.message == {"role": "assistant", "content": content}
    assert turn.response == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 42},
        "streamed": True,
    }


def test_blocks_started_out_of_order_come_out_by_index() -> None:
    events: list[JSONObject] = [
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "b", "input": {}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        STOP,
    ]
    _, turn = stream(events)
    assert turn.message["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "t1", "name": "b", "input": {}},
    ]


def test_the_last_input_and_output_counts_seen_are_the_turn_usage() -> None:
    events: list[JSONObject] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 1}}},
        {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 3}},
        {"type": "message_delta", "delta": {}, "usage": {"input_tokens": 9, "output_tokens": 5}},
        {"type": "message_delta", "delta": {}, "usage": {"input_tokens": None}},
        STOP,
    ]
    _, turn = stream(events)
    assert turn.usage == Usage(9, 5, 14)


def test_stream_without_usage_counts_zero_and_has_no_stop_reason() -> None:
    _, turn = stream([STOP])
    assert turn.usage == Usage(0, 0, 0)
    assert turn.stop_reason is None
    assert turn.message is None
    assert turn.response == {"content": [], "streamed": True}


def test_streamed_invalid_input_json_becomes_an_error() -> None:
    events: list[JSONObject] = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":'},
        },
        STOP,
    ]
    [use] = stream(events)[1].tool_uses
    assert (use.id, use.name, use.args) == ("t1", "f", {})
    assert use.error is not None
    assert use.error.startswith("invalid arguments for f: ")


def test_error_event_raises_llm_error_without_status_carrying_the_event() -> None:
    events = events_of("anthropic_error_event.sse")
    parser = DIALECT.stream_parser(turn=0)
    assert parser.feed(events[0]) == []
    with pytest.raises(LLMError) as caught:
        parser.feed(events[1])
    assert caught.value.status is None
    assert caught.value.body is not None
    assert json.loads(caught.value.body) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert "overloaded_error" in str(caught.value)


# --- transcript helpers ---------------------------------------------------------------------------


def test_tool_results_of_a_turn_go_into_one_user_message_with_is_error() -> None:
    results = [
        ("toolu_2", ToolResult("sunny in Chennai")),
        ("toolu_1", ToolResult("boom", is_error=True)),
    ]
    assert DIALECT.tool_results(results) == [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "sunny in Chennai",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "boom",
                    "is_error": True,
                },
            ],
        }
    ]
    assert DIALECT.tool_results([]) == []


def test_tool_uses_in_reads_an_assistant_message_of_a_transcript() -> None:
    message = {"role": "assistant", "content": SPEC_CONTENT}
    assert DIALECT.tool_uses_in(message) == [ToolUse("toolu_1", "get_weather", {"city": "Chennai"})]
    assert DIALECT.tool_uses_in({"role": "assistant", "content": "plain text"}) == []
    assert DIALECT.tool_uses_in({"role": "user", "content": SPEC_CONTENT}) == []


def test_results_in_reads_the_tool_result_blocks_of_a_user_message() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": False},
            {"type": "text", "text": "not a result"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad", "is_error": True},
            {"type": "tool_result", "tool_use_id": "toolu_3", "content": [{"type": "text"}]},
        ],
    }
    assert DIALECT.results_in(message) == [
        ("toolu_1", ToolResult("ok")),
        ("toolu_2", ToolResult("bad", is_error=True)),
        ("toolu_3", ToolResult('[{"type":"text"}]')),
    ]
    assert DIALECT.results_in({"role": "user", "content": "hi"}) == []
    assert DIALECT.results_in({"role": "assistant", "content": message["content"]}) == []


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"role": "assistant", "content": [{"type": "text", "text": "partial"}]}, "partial"),
        (
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me "},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                    {"type": "text", "text": "check."},
                ],
            },
            "Let me check.",
        ),
        ({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}, ""),
        ({"role": "assistant", "content": "plain"}, "plain"),
        (None, ""),
    ],
)
def test_incomplete_text_joins_the_text_blocks_of_the_last_message(
    message: JSONObject | None, expected: str
) -> None:
    assert DIALECT.incomplete_text(message) == expected


def test_image_parts_kept_by_a_tool_travel_as_image_blocks_in_its_result() -> None:
    metadata = {
        "server": "s",
        "content": [
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "image", "data": "aGk=", "mimeType": "image/x-unknown"},
        ],
    }
    result = ToolResult("[image image/png, 2 bytes]", metadata=metadata)
    (message,) = AnthropicDialect().tool_results([("toolu_1", result)])
    assert message == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {"type": "text", "text": "[image image/png, 2 bytes]"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
                    },
                ],
                "is_error": False,
            }
        ],
    }
    ((call_id, read_back),) = AnthropicDialect().results_in(message)
    assert (call_id, read_back.output) == ("toolu_1", "[image image/png, 2 bytes]")

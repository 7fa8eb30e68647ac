"""The OpenAI chat-completions dialect on plain dicts and recorded streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Tool, ToolContext, ToolResult, Usage
from toolnexus.dialects import MalformedResponse, OpenAIDialect, ToolUse, Turn
from toolnexus.dialects.sse import SSEDecoder
from toolnexus.types import JSONObject

FIXTURES = Path(__file__).parent / "fixtures"
DIALECT = OpenAIDialect()
MESSAGES: list[JSONObject] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What's the weather in Chennai?"},
]
WEATHER_TOOL: JSONObject = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def events_of(name: str, size: int | None = None) -> list[JSONObject]:
    data = (FIXTURES / name).read_bytes()
    step = size or len(data)
    decoder = SSEDecoder()
    events: list[JSONObject] = []
    for start in range(0, len(data), step):
        events.extend(decoder.feed(data[start : start + step]))
    return events + decoder.close()


def stream(events: list[JSONObject], *, turn: int = 0, done: bool = True) -> tuple[list[str], Turn]:
    """Feed ``events``; ``done`` says whether a ``[DONE]`` sentinel ended the body."""
    parser = DIALECT.stream_parser(turn=turn)
    items = [item for event in events for item in parser.feed(event)]
    deltas = [item for item in items if isinstance(item, str)]  # text; argument pieces aside
    return deltas, parser.finish(done=done)


def reply(message: JSONObject, usage: JSONObject | None = None) -> JSONObject:
    body: JSONObject = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    if usage is not None:
        body["usage"] = usage
    return body


def call(call_id: str | None, name: str, arguments: object) -> JSONObject:
    entry: JSONObject = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        entry["id"] = call_id
    return entry


def assistant(*calls: JSONObject, content: str | None = None) -> JSONObject:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def json_error(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return str(exc)
    raise AssertionError(f"{text!r} is valid JSON")


# --- request --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("http://h/v1", "http://h/v1/chat/completions"),
        ("http://h/v1/", "http://h/v1/chat/completions"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/chat/completions"),
        ("https://openrouter.ai/api/v1//", "https://openrouter.ai/api/v1/chat/completions"),
    ],
)
def test_url_appends_chat_completions_after_stripping_trailing_slashes(
    base: str, expected: str
) -> None:
    assert DIALECT.url(base) == expected


def test_headers_carry_a_bearer_key_and_json_content_type() -> None:
    assert DIALECT.headers("test-key") == {
        "Authorization": "Bearer test-key",
        "Content-Type": "application/json",
    }


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tools", [[], [WEATHER_TOOL]])
def test_body_has_tools_only_when_there_are_some_and_stream_fields_only_when_streaming(
    tools: list[JSONObject], stream: bool
) -> None:
    body = DIALECT.build_body(MESSAGES, tools, model="test-model", system="", stream=stream)
    expected: JSONObject = {"model": "test-model", "messages": MESSAGES}
    if tools:
        expected |= {"tools": [WEATHER_TOOL], "tool_choice": "auto"}
    if stream:
        expected |= {"stream": True, "stream_options": {"include_usage": True}}
    assert body == expected


def test_streaming_body_with_tools_in_full() -> None:
    body = DIALECT.build_body(MESSAGES, [WEATHER_TOOL], model="m", system="", stream=True)
    assert body == {
        "model": "m",
        "messages": MESSAGES,
        "tools": [WEATHER_TOOL],
        "tool_choice": "auto",
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_body_sends_the_model_id_verbatim_and_no_separate_system_field() -> None:
    model = "Org/Model-X:free@2024 "
    body = DIALECT.build_body(MESSAGES, [], model=model, system="Be brief.", stream=False)
    assert body == {"model": model, "messages": MESSAGES}
    assert DIALECT.system_in_messages is True


def test_tool_schemas_use_the_openai_function_shape() -> None:
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
    assert DIALECT.tool_schemas([]) == []


# --- JSON replies ---------------------------------------------------------------------------------


def test_text_reply_gives_its_content_and_message_as_received() -> None:
    message = {"role": "assistant", "content": "Chennai is warm today."}
    body = reply(message, {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16})
    turn = DIALECT.parse_response(body, turn=0)
    assert turn.text == "Chennai is warm today."
    assert turn.tool_uses == []
    assert turn.usage == Usage(10, 6, 16)
    assert turn.message == message
    assert turn.response == body


@pytest.mark.parametrize("message", [{"role": "assistant", "content": None}, {"role": "assistant"}])
def test_text_reply_without_content_gives_empty_text(message: JSONObject) -> None:
    assert DIALECT.parse_response(reply(message), turn=0).text == ""


def test_empty_tool_calls_list_is_a_text_turn() -> None:
    message = {"role": "assistant", "content": "done", "tool_calls": []}
    turn = DIALECT.parse_response(reply(message), turn=0)
    assert (turn.text, turn.tool_uses, turn.message) == ("done", [], message)


def test_a_tool_call_reply_parses_the_call_and_keeps_the_message() -> None:
    message = assistant(call("call_1", "get_weather", '{"city":"Chennai"}'))
    body = {
        "choices": [{"message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16},
    }
    turn = DIALECT.parse_response(body, turn=0)
    assert turn.tool_uses == [ToolUse("call_1", "get_weather", {"city": "Chennai"})]
    assert turn.text == ""
    assert turn.message == message
    assert turn.usage == Usage(10, 6, 16)


def test_tool_turn_text_is_the_content_that_came_with_the_calls() -> None:
    message = assistant(call("c", "f", "{}"), content="Let me check.")
    assert DIALECT.parse_response(reply(message), turn=0).text == "Let me check."


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city":"Chennai","days":[1,2]}', {"city": "Chennai", "days": [1, 2]}),
        ({"city": "Chennai"}, {"city": "Chennai"}),
        ("", {}),
        ("{}", {}),
    ],
)
def test_arguments_parse_from_a_string_or_an_object(
    arguments: object, expected: JSONObject
) -> None:
    message = assistant(call("c1", "f", arguments))
    [use] = DIALECT.parse_response(reply(message), turn=0).tool_uses
    assert use == ToolUse("c1", "f", expected)


def test_calls_without_id_get_turn_and_index_ids_also_in_the_message() -> None:
    message = assistant(call("call_x", "a", "{}"), call(None, "b", "{}"), call("", "c", "{}"))
    body = reply(message)
    original = json.loads(json.dumps(body))
    turn = DIALECT.parse_response(body, turn=3)
    assert [use.id for use in turn.tool_uses] == ["call_x", "call_3_1", "call_3_2"]
    assert [entry["id"] for entry in turn.message["tool_calls"]] == [
        use.id for use in turn.tool_uses
    ]
    assert turn.message["tool_calls"][1] == call("call_3_1", "b", "{}")
    assert body == original  # the provider reply itself is left as received


def test_invalid_json_arguments_become_an_error_with_the_parser_message() -> None:
    broken = '{"city": "Chen'
    message = assistant(call("c1", "get_weather", broken), call("c2", "ok", '{"a":1}'))
    first, second = DIALECT.parse_response(reply(message), turn=0).tool_uses
    error = f"invalid arguments for get_weather: {json_error(broken)}"
    assert first == ToolUse("c1", "get_weather", {}, error)
    assert second == ToolUse("c2", "ok", {"a": 1})


@pytest.mark.parametrize("arguments", ["[1,2]", "42", '"text"', "null", "true", [1, 2], 7])
def test_arguments_that_are_not_an_object_become_an_error(arguments: object) -> None:
    message = assistant(call("c1", "f", arguments))
    [use] = DIALECT.parse_response(reply(message), turn=0).tool_uses
    assert use.args == {}
    assert use.error is not None
    assert use.error.startswith("invalid arguments for f: ")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"choices": []},
        {"choices": None},
        {"choices": "nope"},
        {"choices": [{}]},
        {"choices": [{"message": None}]},
        {"choices": [{"message": "text"}]},
        {"error": {"message": "quota"}},
        "not an object",
        None,
    ],
)
def test_reply_without_choices_0_message_is_malformed(body: object) -> None:
    with pytest.raises(MalformedResponse, match=r"choices\[0\]"):
        DIALECT.parse_response(body, turn=0)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16}, Usage(10, 6, 16)),
        ({"prompt_tokens": 10, "completion_tokens": 6}, Usage(10, 6, 16)),
        ({"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 20}, Usage(10, 6, 20)),
        ({"prompt_tokens": 4}, Usage(4, 0, 4)),
        ({}, Usage(0, 0, 0)),
        (None, Usage(0, 0, 0)),
    ],
)
def test_usage_reads_the_three_counts_and_sums_a_missing_total(
    usage: JSONObject | None, expected: Usage
) -> None:
    body = reply({"role": "assistant", "content": "x"})
    if usage is not None:
        body["usage"] = usage
    assert DIALECT.parse_response(body, turn=0).usage == expected


# --- streams --------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 9, None])
def test_a_streamed_tool_call_assembles_split_arguments_into_one_call(size: int | None) -> None:
    deltas, turn = stream(events_of("openai_spec_example.sse", size))
    assert deltas == ["Hel"]
    assert turn.text == "Hel"
    assert turn.tool_uses == [ToolUse("call_1", "get_weather", {"city": "Chennai"})]
    assert turn.usage == Usage(10, 6, 16)
    message = assistant(call("call_1", "get_weather", '{"city":"Chennai"}'), content="Hel")
    assert turn.message == message
    assert turn.stop_reason is None  # no chunk carried a finish_reason
    assert turn.response == {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16},
        "streamed": True,
    }


def test_crlf_stream_assembles_like_the_lf_one() -> None:
    lf = stream(events_of("openai_spec_example.sse"))[1]
    crlf = stream(events_of("openai_spec_example_crlf.sse", 1))[1]
    assert crlf == lf


@pytest.mark.parametrize("size", [1, None])
def test_calls_arriving_with_index_1_then_0_come_out_in_index_order(size: int | None) -> None:
    deltas, turn = stream(events_of("openai_two_calls_index_1_then_0.sse", size))
    assert deltas == []
    assert turn.text == ""
    assert turn.tool_uses == [
        ToolUse("call_a", "get_weather", {"city": "Chennai"}),
        ToolUse("call_b", "get_time", {"tz": "IST"}),
    ]
    message = assistant(
        call("call_a", "get_weather", '{"city":"Chennai"}'),
        call("call_b", "get_time", '{"tz":"IST"}'),
    )
    assert turn.message == message
    assert turn.stop_reason == "tool_calls"
    assert turn.response == {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
        "streamed": True,
    }


def test_text_stream_with_comments_gives_deltas_and_a_plain_message() -> None:
    deltas, turn = stream(events_of("openai_comments_and_fields.sse", 1))
    assert deltas == ["Chennai is ", "warm — 32°C, வணக்கம்"]
    assert turn.text == "Chennai is warm — 32°C, வணக்கம்"
    assert turn.tool_uses == []
    assert turn.usage == Usage(12, 7, 19)
    assert turn.message == {"role": "assistant", "content": turn.text}
    assert turn.stop_reason == "stop"
    assert turn.response == {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": turn.message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        "streamed": True,
    }


def test_multiline_data_stream_sums_a_missing_total() -> None:
    deltas, turn = stream(events_of("openai_multiline_data.sse"))
    assert deltas == ["multi", "-line"]
    assert turn.text == "multi-line"
    assert turn.usage == Usage(3, 2, 5)


def test_stream_ended_without_finish_reason_or_done_is_cut_short() -> None:
    parser = DIALECT.stream_parser(turn=0)
    deltas = [
        d for event in events_of("openai_no_trailing_blank_line.sse") for d in parser.feed(event)
    ]
    assert deltas == ["no ", "trailer"]
    with pytest.raises(MalformedResponse, match=r"^stream ended early: "):
        parser.finish(done=False)


def test_stream_with_a_finish_reason_but_no_done_is_complete() -> None:
    events = [*events_of("openai_no_trailing_blank_line.sse"), _finish("stop")]
    _, turn = stream(events, done=False)
    assert turn.message == {"role": "assistant", "content": "no trailer"}
    assert turn.stop_reason == "stop"


def _finish(reason: str) -> JSONObject:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def _piece(index: int, **fields: Any) -> JSONObject:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, **fields}]}}]}


def test_streamed_call_without_id_gets_turn_and_index_id() -> None:
    events = [
        _piece(0, function={"name": "get_", "arguments": '{"a"'}),
        _piece(0, function={"name": "time", "arguments": ":1}"}),
    ]
    _, turn = stream(events, turn=4)
    assert turn.tool_uses == [ToolUse("call_4_0", "get_time", {"a": 1})]
    assert turn.message["tool_calls"] == [call("call_4_0", "get_time", '{"a":1}')]


def test_streamed_invalid_arguments_become_an_error() -> None:
    _, turn = stream([_piece(0, id="c1", function={"name": "f", "arguments": "{oops"})])
    assert turn.tool_uses == [
        ToolUse("c1", "f", {}, f"invalid arguments for f: {json_error('{oops')}")
    ]


def test_the_last_usage_chunk_counts_and_null_usage_is_ignored() -> None:
    events: list[JSONObject] = [
        {"choices": [{"index": 0, "delta": {"content": "a"}}], "usage": None},
        {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
        {"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 3, "total_tokens": 11}},
        {"choices": [{"index": 0, "delta": {}}], "usage": None},
    ]
    _, turn = stream(events)
    assert turn.usage == Usage(8, 3, 11)
    assert turn.response["usage"] == events[2]["usage"]


def test_stream_without_usage_counts_zero() -> None:
    _, turn = stream([{"choices": [{"index": 0, "delta": {"content": "hi"}}]}])
    assert turn.usage == Usage(0, 0, 0)
    assert "usage" not in turn.response


# --- transcript helpers ---------------------------------------------------------------------------


def test_tool_results_are_one_tool_message_per_result_in_the_given_order() -> None:
    results = [
        ("call_2", ToolResult("later call, first here")),
        ("call_1", ToolResult("boom", is_error=True)),
    ]
    assert DIALECT.tool_results(results) == [
        {"role": "tool", "tool_call_id": "call_2", "content": "later call, first here"},
        {"role": "tool", "tool_call_id": "call_1", "content": "boom"},
    ]
    assert DIALECT.tool_results([]) == []


def test_tool_uses_in_reads_an_assistant_message_of_a_transcript() -> None:
    message = assistant(call("call_1", "get_weather", '{"city":"Chennai"}'), call("c2", "f", ""))
    assert DIALECT.tool_uses_in(message) == [
        ToolUse("call_1", "get_weather", {"city": "Chennai"}),
        ToolUse("c2", "f", {}),
    ]
    assert DIALECT.tool_uses_in({"role": "assistant", "content": "hi"}) == []
    assert DIALECT.tool_uses_in({"role": "user", "tool_calls": message["tool_calls"]}) == []


def test_results_in_reads_tool_messages_only() -> None:
    assert DIALECT.results_in({"role": "tool", "tool_call_id": "call_1", "content": "ok"}) == [
        ("call_1", ToolResult("ok"))
    ]
    structured = {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "é"}]}
    assert DIALECT.results_in(structured) == [("c", ToolResult('[{"type":"text","text":"é"}]'))]
    assert DIALECT.results_in({"role": "user", "content": "hi"}) == []
    assert DIALECT.results_in({"role": "assistant", "content": "hi"}) == []
    assert DIALECT.results_in({"role": "tool", "content": "no id"}) == []


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"role": "assistant", "content": "partial answer", "tool_calls": []}, "partial answer"),
        ({"role": "assistant", "content": None, "tool_calls": []}, ""),
        ({"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "y"}]}, "x"),
        (None, ""),
    ],
)
def test_incomplete_text_is_the_last_assistant_content_or_its_text_parts(
    message: JSONObject | None, expected: str
) -> None:
    assert DIALECT.incomplete_text(message) == expected


def test_null_tool_calls_are_no_tool_calls() -> None:
    parser = DIALECT.stream_parser(turn=0)
    assert parser.feed({"choices": [{"delta": {"content": "hi", "tool_calls": None}}]}) == ["hi"]
    turn = parser.finish(done=True)
    assert (turn.text, turn.tool_uses) == ("hi", [])
    reply = {"choices": [{"message": {"role": "assistant", "content": "hi", "tool_calls": None}}]}
    assert DIALECT.parse_response(reply, turn=0).tool_uses == []


@pytest.mark.parametrize(("pieces", "kind"), [(7, "int"), ("x", "str"), ({"index": 0}, "dict")])
def test_tool_calls_that_are_not_a_list_are_a_malformed_reply_naming_the_field(
    pieces: object, kind: str
) -> None:
    parser = DIALECT.stream_parser(turn=0)
    with pytest.raises(MalformedResponse, match=rf"delta\.tool_calls is {kind}, not a list"):
        parser.feed({"choices": [{"delta": {"content": "hi", "tool_calls": pieces}}]})
    reply = {"choices": [{"message": {"role": "assistant", "content": "", "tool_calls": pieces}}]}
    with pytest.raises(MalformedResponse, match=rf"message\.tool_calls is {kind}, not a list"):
        DIALECT.parse_response(reply, turn=0)

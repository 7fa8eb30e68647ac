"""Structured output through the loop (SPEC §10, A127-A132), in both wire styles, against the
stub: native, tool and prompted modes, retries, non-object roots, validators, memory, resume."""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from toolnexus import (
    Answer,
    ConfigError,
    DoneEvent,
    Event,
    ModelRetry,
    RunResult,
    TextEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    create_client,
)
from toolnexus.agents import agent
from toolnexus.testing import StubLLMServer, reply
from toolnexus.testing.recorded import RecordedRequest

from ..running import MakeClient, drive
from .support import Counter, assert_balanced, get_weather, make_tool, toolkit_of
from .suspension_support import Gate

PROMPT = "Answer with only a JSON value matching this JSON Schema:\n"
RETRY_START = "Your answer did not match the required output:\n"
RETRY_END = "\nAnswer again."
MODES = ("native", "tool", "prompted")


class Weather(BaseModel):
    city: str
    temp_c: int


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp_c": {"type": "integer"}},
    "required": ["city", "temp_c"],
    "additionalProperties": False,
}
PARIS = {"city": "Paris", "temp_c": 21}
PARIS_JSON = '{"city":"Paris","temp_c":21}'


def answer(mode: str, payload: object, *, usage: tuple[int, int] | None = None) -> reply.Reply:
    """The model's answer carrying ``payload`` as ``mode`` asks for it."""
    if mode == "tool":
        assert isinstance(payload, dict)
        return reply.tool_calls(reply.call("final_result", payload), usage=usage)
    return reply.text(json.dumps(payload, separators=(",", ":")), usage=usage)


def sent_schema(request: RecordedRequest, style: str, mode: str) -> Any:
    """The output schema a request carried, read from where ``mode`` puts it."""
    body = request.json
    if mode == "native":
        if style == "openai":
            form = body["response_format"]
            assert form["type"] == "json_schema"
            assert form["json_schema"]["strict"] is False
            return form["json_schema"]["schema"]
        assert body["output_format"]["type"] == "json_schema"
        return body["output_format"]["schema"]
    if mode == "tool":
        final = body["tools"][-1]
        if style == "openai":
            assert final["function"]["name"] == "final_result"
            assert final["function"]["description"] == "Call this with the final answer."
            return final["function"]["parameters"]
        assert final["name"] == "final_result"
        assert final["description"] == "Call this with the final answer."
        return final["input_schema"]
    system = body["messages"][0]["content"] if style == "openai" else body["system"]
    schema = system.rpartition(PROMPT)[2]
    assert schema, system
    return json.loads(schema)


def retry_text(request: RecordedRequest, style: str, mode: str) -> str:
    """The retry message a request ends with (a tool result in the tool mode)."""
    last = request.json["messages"][-1]
    if mode == "tool" and style == "anthropic":
        block = last["content"][-1]
        assert block["type"] == "tool_result"
        assert block["is_error"] is True
        return str(block["content"])
    if mode == "tool":
        assert last["role"] == "tool"
    else:
        assert last["role"] == "user"
    return str(last["content"])


def client_modes(style: str, mode: str) -> dict[str, Any]:
    return {"output_mode": mode}


# --- A127: native ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["run", "stream", "run_sync"])
async def test_openai_native_sends_the_cleaned_schema_and_gives_the_model(
    stub: StubLLMServer, make_client: MakeClient, mode: str
) -> None:
    stub.enqueue(reply.text(PARIS_JSON, usage=(10, 6)))
    client = make_client("openai")

    res, events = await drive(client, mode, output_type=Weather)

    assert stub.requests[0].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather", "schema": WEATHER_SCHEMA, "strict": False},
    }
    assert res.output == Weather(city="Paris", temp_c=21)
    assert (res.status, res.turns, res.text, res.stop_reason) == ("done", 1, PARIS_JSON, "stop")
    assert res.to_dict()["output"] == PARIS
    assert json.loads(json.dumps(res.to_dict()))["output"] == PARIS
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.output == res.output
    if mode == "stream":
        assert "".join(e.delta for e in events if isinstance(e, TextEvent)) == PARIS_JSON


async def test_anthropic_native_sends_output_format_and_the_beta_header(
    stub: StubLLMServer, make_client: MakeClient, async_mode: str
) -> None:
    stub.enqueue(reply.text(PARIS_JSON))
    client = make_client("anthropic", headers={"anthropic-beta": "other-beta"})

    res, _ = await drive(client, async_mode, output_type=Weather, output_mode="native")

    request = stub.requests[0]
    assert request.json["output_format"] == {"type": "json_schema", "schema": WEATHER_SCHEMA}
    assert request.headers["anthropic-beta"] == "other-beta,structured-outputs-2025-11-13"
    assert "tools" not in request.json
    assert res.output == Weather(city="Paris", temp_c=21)


async def test_without_output_type_nothing_changes_and_output_is_null(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text(PARIS_JSON))
    res = await make_client(style).run("hi")
    body = stub.requests[0].json
    assert not {"response_format", "output_format"} & set(body)
    assert "anthropic-beta" not in stub.requests[0].headers
    assert res.output is None
    assert res.to_dict()["output"] is None


# --- A128: tool mode ------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
async def test_tool_mode_runs_the_other_calls_ends_done_and_the_next_ask_continues(
    stub: StubLLMServer, make_client: MakeClient, style: str, streamed: bool
) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("get_weather", {"city": "Paris"}),
            reply.call("final_result", PARIS),
        ),
        reply.text("You are welcome."),
    )
    client = make_client(style, output_mode="tool" if style == "openai" else None)
    tk = await toolkit_of(get_weather)
    events: list[Event] = []
    deltas: list[str] = []
    on_text = deltas.append if streamed else None

    res = await client.ask(
        "Weather in Paris?",
        tk,
        id="c1",
        on_text=on_text,
        on_event=events.append,
        output_type=Weather,
    )

    first = stub.requests[0].json
    names = [t["function"]["name"] if style == "openai" else t["name"] for t in first["tools"]]
    assert names == ["get_weather", "final_result"]
    assert sent_schema(stub.requests[0], style, "tool") == WEATHER_SCHEMA
    assert (res.status, res.turns, res.output) == ("done", 1, Weather(city="Paris", temp_c=21))
    assert [c.name for c in res.tool_calls] == ["get_weather"]
    assert res.tool_call_count == 1
    assert res.tool_calls[0].output == "sunny in Paris"
    assert res.text == PARIS_JSON
    assert res.stop_reason == "tool_calls"
    assert [e.name for e in events if isinstance(e, ToolCallEvent | ToolResultEvent)] == [
        "get_weather",
        "get_weather",
    ]
    assert_balanced(res.messages, style)
    results = res.messages[-2:] if style == "openai" else res.messages[-1]["content"]
    accepted = results[-1]
    assert accepted["content"] == "Final answer accepted."

    again = await client.ask("Thanks!", tk, id="c1")

    assert again.status == "done"
    assert again.text == "You are welcome."
    sent = stub.requests[1].json["messages"]
    assert sent[: len(res.messages)] == res.messages
    assert sent[-1] == {"role": "user", "content": "Thanks!"}
    assert_balanced(sent, style)


async def test_a_text_answer_in_tool_mode_is_asked_again(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("Paris, 21 degrees."), answer("tool", PARIS))
    client = make_client(style)

    res = await client.run("hi", output_type=Weather, output_mode="tool")

    assert retry_text(stub.requests[1], style, "native") == (
        RETRY_START + "Answer by calling final_result." + RETRY_END
    )
    assert (res.status, res.turns, res.output) == ("done", 2, Weather(city="Paris", temp_c=21))
    assert_balanced(res.messages, style)


async def test_the_first_valid_final_result_of_a_turn_is_the_answer(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("final_result", {"city": "Paris"}),
            reply.call("final_result", PARIS),
            reply.call("final_result", {"city": "Rome", "temp_c": 25}),
        )
    )
    res = await make_client(style).run("hi", output_type=Weather, output_mode="tool")

    assert res.output == Weather(city="Paris", temp_c=21)
    assert res.tool_call_count == 0
    assert_balanced(res.messages, style)


async def test_a_toolkit_tool_named_final_result_is_refused_in_tool_mode(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    tk = await toolkit_of(make_tool("final_result", Counter()))
    with pytest.raises(ConfigError, match="final_result"):
        await make_client(style).run("hi", tk, output_type=Weather, output_mode="tool")
    assert stub.requests == []


# --- A129: retries --------------------------------------------------------------------------------


@pytest.mark.parametrize("output_mode", MODES)
async def test_an_invalid_answer_is_retried_once_naming_the_field(
    stub: StubLLMServer,
    make_client: MakeClient,
    style: str,
    output_mode: str,
    async_mode: str,
) -> None:
    stub.enqueue(
        answer(output_mode, {"city": "Paris", "temp_c": "warm"}, usage=(10, 5)),
        answer(output_mode, PARIS, usage=(20, 5)),
    )
    metrics: list[dict[str, Any]] = []
    client = make_client(style, on_metric=metrics.append)

    res, _ = await drive(client, async_mode, output_type=Weather, output_mode=output_mode)

    assert len(stub.requests) == 2
    message = retry_text(stub.requests[1], style, output_mode)
    assert message.startswith(RETRY_START)
    assert message.endswith(RETRY_END)
    assert "temp_c: Input should be a valid integer" in message
    sent = json.dumps(stub.requests[1].json["messages"])
    assert sent.count("did not match the required output") == 1
    assert (res.status, res.turns) == ("done", 2)
    assert res.output == Weather(city="Paris", temp_c=21)
    assert res.usage.total_tokens == 40
    assert [m["event"] for m in metrics] == ["llm", "llm", "run"]
    assert sent_schema(stub.requests[1], style, output_mode) == WEATHER_SCHEMA
    assert_balanced(res.messages, style)


@pytest.mark.parametrize("output_mode", MODES)
async def test_no_retry_left_ends_incomplete_with_the_output_retries_limit(
    stub: StubLLMServer, make_client: MakeClient, style: str, output_mode: str
) -> None:
    stub.enqueue(answer(output_mode, {"city": "Paris", "temp_c": "warm"}))

    res = await make_client(style).run(
        "hi", output_type=Weather, output_mode=output_mode, output_retries=0
    )

    assert (res.status, res.limit, res.output, res.turns) == (
        "incomplete",
        "outputRetries",
        None,
        1,
    )
    assert res.text == '{"city":"Paris","temp_c":"warm"}'
    assert res.to_dict()["limit"] == "outputRetries"
    assert res.to_dict()["output"] is None
    assert len(stub.requests) == 1
    assert_balanced(res.messages, style)


async def test_retries_run_out_after_output_retries_failed_retries(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(*[reply.text("not json")] * 3)
    res = await make_client(style).run(
        "hi", output_type=Weather, output_retries=2, output_mode="native"
    )
    assert (res.status, res.limit, res.turns, res.text) == (
        "incomplete",
        "outputRetries",
        3,
        "not json",
    )
    assert "not valid JSON" in retry_text(stub.requests[1], style, "native")


async def test_each_retry_is_a_turn_counted_against_max_turns(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(*[reply.text("nope")] * 2)
    client = make_client(style, max_turns=2, output_mode="prompted")
    res = await client.run("hi", output_type=Weather, output_retries=5)
    assert (res.status, res.limit, res.turns) == ("incomplete", "maxTurns", 2)
    assert res.output is None


# --- A130: non-object roots -----------------------------------------------------------------------


class Color(Enum):
    RED = "red"
    BLUE = "blue"


ROOTS = [
    (int, {"type": "integer"}, 42, 42),
    (list[str], {"type": "array", "items": {"type": "string"}}, ["a", "b"], ["a", "b"]),
    (Literal["a", "b"], {"enum": ["a", "b"], "type": "string"}, "b", "b"),
    (Color, {"enum": ["red", "blue"], "type": "string"}, "blue", Color.BLUE),
]


@pytest.mark.parametrize("output_mode", MODES)
@pytest.mark.parametrize(
    ("output_type", "inner", "sent", "expected"), ROOTS, ids=["int", "list", "literal", "enum"]
)
async def test_non_object_roots_are_wrapped_on_the_wire_and_unwrapped(
    stub: StubLLMServer,
    make_client: MakeClient,
    style: str,
    output_mode: str,
    output_type: Any,
    inner: dict[str, Any],
    sent: object,
    expected: object,
) -> None:
    stub.enqueue(answer(output_mode, {"result": sent}))

    res = await make_client(style).run("hi", output_type=output_type, output_mode=output_mode)

    assert sent_schema(stub.requests[0], style, output_mode) == {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
        "additionalProperties": False,
    }
    assert res.output == expected
    assert res.to_dict()["output"] == sent
    if output_mode == "tool":
        assert res.text == json.dumps(sent, separators=(",", ":"))


async def test_a_wrapped_answer_without_result_is_retried(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("42"), reply.text('{"result":42}'))
    res = await make_client(style).run("hi", output_type=int, output_mode="native")
    assert "result: Field required" in retry_text(stub.requests[1], style, "native")
    assert res.output == 42


def test_schema_names_are_reduced_to_the_allowed_characters() -> None:
    from toolnexus.engine.output import output_spec

    assert output_spec(Weather).schema.name == "Weather"
    assert output_spec(list[str]).schema.name == "list"
    assert output_spec(int | str).schema.name == "output"


@dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


class Trip(BaseModel):
    start: Point
    stops: list[Point]


async def test_dataclasses_typed_dicts_and_nested_models_validate(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(
        reply.text('{"x":1,"y":2}'),
        reply.text('{"title":"Up","year":2009}'),
        reply.text('{"start":{"x":0,"y":0},"stops":[{"x":1,"y":1}]}'),
    )
    client = make_client("openai")

    point = await client.run("hi", output_type=Point)
    movie = await client.run("hi", output_type=Movie)
    trip = await client.run("hi", output_type=Trip)

    assert point.output == Point(1, 2)
    assert movie.output == {"title": "Up", "year": 2009}
    assert trip.output == Trip(start=Point(0, 0), stops=[Point(1, 1)])
    schema = stub.requests[2].json["response_format"]["json_schema"]["schema"]
    assert "$defs" not in json.dumps(schema)
    assert "$ref" not in json.dumps(schema)
    assert "title" not in schema["properties"]["start"]
    assert schema["properties"]["start"]["properties"] == {
        "x": {"type": "integer"},
        "y": {"type": "integer"},
    }


# --- A131: validators -----------------------------------------------------------------------------


@pytest.mark.parametrize("output_mode", MODES)
async def test_a_validator_raising_model_retry_sends_its_message(
    stub: StubLLMServer, make_client: MakeClient, style: str, output_mode: str
) -> None:
    stub.enqueue(
        answer(output_mode, {"city": "Oslo", "temp_c": -3}),
        answer(output_mode, PARIS),
    )
    seen: list[Weather] = []

    def warm_enough(value: Weather) -> Weather:
        seen.append(value)
        if value.temp_c < 10:
            raise ModelRetry("too cold")
        return value

    res = await make_client(style).run(
        "hi", output_type=Weather, output_mode=output_mode, output_validator=warm_enough
    )

    assert retry_text(stub.requests[1], style, output_mode) == RETRY_START + "too cold" + RETRY_END
    assert seen == [Weather(city="Oslo", temp_c=-3), Weather(city="Paris", temp_c=21)]
    assert res.output == Weather(city="Paris", temp_c=21)


async def test_an_async_validators_return_value_becomes_the_output(
    stub: StubLLMServer, make_client: MakeClient, style: str, async_mode: str
) -> None:
    stub.enqueue(reply.text(PARIS_JSON))

    async def in_fahrenheit(value: Weather) -> dict[str, object]:
        await asyncio.sleep(0)
        return {"city": value.city, "temp_f": value.temp_c * 9 / 5 + 32}

    res, _ = await drive(
        make_client(style),
        async_mode,
        output_type=Weather,
        output_mode="native",
        output_validator=in_fahrenheit,
    )
    assert res.output == {"city": "Paris", "temp_f": 69.8}


async def test_a_validator_raising_another_error_fails_the_run(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(reply.text(PARIS_JSON))

    def broken(value: Weather) -> Weather:
        raise RuntimeError("validator bug")

    with pytest.raises(RuntimeError, match="validator bug"):
        await make_client("openai").run("hi", output_type=Weather, output_validator=broken)


# --- A132: prompted -------------------------------------------------------------------------------


async def test_prompted_puts_the_schema_in_the_system_prompt_and_reads_a_fenced_block(
    stub: StubLLMServer, make_client: MakeClient, style: str, async_mode: str
) -> None:
    stub.enqueue(reply.text('Here it is:\n```json\n{"city": "Paris", "temp_c": 21}\n```\nBye.'))
    client = make_client(style, system_prompt="Be brief.", output_mode="prompted")

    res, _ = await drive(client, async_mode, output_type=Weather)

    body = stub.requests[0].json
    system = body["messages"][0]["content"] if style == "openai" else body["system"]
    assert system.startswith("Be brief.\n\n" + PROMPT)
    assert json.loads(system.removeprefix("Be brief.\n\n" + PROMPT)) == WEATHER_SCHEMA
    assert res.output == Weather(city="Paris", temp_c=21)
    assert PROMPT not in json.dumps(res.messages)  # the stored transcript is unchanged
    assert not {"response_format", "output_format"} & set(body)


async def test_prompted_openai_adds_a_system_message_for_the_request_only(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(reply.text(PARIS_JSON))
    res = await make_client("openai").run("hi", output_type=Weather, output_mode="prompted")
    sent = stub.requests[0].json["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[0]["content"].startswith(PROMPT)
    assert [m["role"] for m in res.messages] == ["user", "assistant"]


@pytest.mark.parametrize("how", ["run", "stream", "ask", "run_sync"])
async def test_an_unsupported_type_is_a_config_error_before_any_request(
    stub: StubLLMServer, make_client: MakeClient, how: str
) -> None:
    client = make_client("openai")
    bad = object()

    async def start() -> None:
        if how == "run":
            await client.run("hi", output_type=bad)
        elif how == "stream":
            client.stream("hi", output_type=bad)  # checked when called, before iteration
        elif how == "ask":
            await client.ask("hi", id="c1", output_type=bad)
        else:
            await asyncio.to_thread(lambda: client.run_sync("hi", output_type=bad))

    with pytest.raises(ConfigError, match=r"^output_type must be .*, not "):
        await start()
    assert stub.requests == []


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"output_mode": "json"}, "output_mode"),
        ({"output_retries": -1}, "output_retries"),
        ({"output_retries": True}, "output_retries"),
        ({"output_validator": "no"}, "output_validator"),
    ],
)
async def test_bad_output_options_are_config_errors_naming_them(
    stub: StubLLMServer, make_client: MakeClient, options: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        await make_client("openai").run("hi", output_type=Weather, **options)
    with pytest.raises(ConfigError, match="output_mode"):
        create_client(stub.url, model="m", api_key="k", output_mode="json")  # type: ignore[arg-type]
    assert stub.requests == []


async def test_the_client_default_mode_applies_unless_a_run_names_one(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(reply.text(PARIS_JSON), reply.text(PARIS_JSON))
    client = make_client("openai", output_mode="prompted")
    await client.run("hi", output_type=Weather)
    await client.run("hi", output_type=Weather, output_mode="native")
    assert "response_format" not in stub.requests[0].json
    assert stub.requests[1].json["response_format"]["type"] == "json_schema"


async def test_the_output_form_wins_over_request_params_and_body_transform_sees_it(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(reply.text(PARIS_JSON))
    seen: list[dict[str, Any]] = []

    def look(body: dict[str, Any]) -> None:
        seen.append(body)

    client = make_client(
        "openai", request_params={"response_format": {"type": "text"}}, body_transform=look
    )
    res = await client.run("hi", output_type=Weather)
    assert seen[0]["response_format"]["type"] == "json_schema"
    assert stub.requests[0].json["response_format"]["type"] == "json_schema"
    assert res.output == Weather(city="Paris", temp_c=21)


# --- memory, streaming, resume, agents --------------------------------------------------------


async def test_stream_shows_the_json_as_text_and_ends_with_the_output(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text(PARIS_JSON, chunks=['{"city":', '"Paris",', '"temp_c":21}']))
    client = make_client(style, output_mode="native")
    events: list[Event] = []
    async with aclosing(client.stream("hi", output_type=Weather)) as stream:
        async for event in stream:
            events.append(event)
    assert [e.delta for e in events if isinstance(e, TextEvent)] == [
        '{"city":',
        '"Paris",',
        '"temp_c":21}',
    ]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.output == Weather(city="Paris", temp_c=21)
    assert done.to_dict()["result"]["output"] == PARIS


async def test_a_streamed_final_result_shows_no_tool_call_events_not_even_argument_deltas(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Paris"})),
        answer("tool", PARIS),
    )
    client = make_client(style, output_mode="tool")
    tk = await toolkit_of(get_weather)
    events: list[Event] = []
    async with aclosing(client.stream("hi", tk, output_type=Weather)) as stream:
        async for event in stream:
            events.append(event)
    deltas = [e for e in events if isinstance(e, ToolCallDeltaEvent)]
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert {e.name for e in deltas} == {"get_weather"}
    assert "".join(e.delta for e in deltas) == '{"city":"Paris"}'
    assert [e.name for e in calls] == ["get_weather"]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.output == Weather(city="Paris", temp_c=21)


@pytest.mark.parametrize("output_mode", MODES)
async def test_ask_with_memory_keeps_a_retried_transcript_usable(
    stub: StubLLMServer, make_client: MakeClient, style: str, output_mode: str
) -> None:
    stub.enqueue(
        answer(output_mode, {"city": "Paris"}),
        answer(output_mode, PARIS),
        reply.text("Anything else?"),
    )
    client = make_client(style)
    deltas: list[str] = []

    first = await client.ask(
        "hi", id="u1", on_text=deltas.append, output_type=Weather, output_mode=output_mode
    )
    second = await client.ask("and now?", id="u1")

    assert first.output == Weather(city="Paris", temp_c=21)
    assert second.text == "Anything else?"
    assert second.output is None
    sent = stub.requests[2].json["messages"]
    assert sent[: len(first.messages)] == first.messages
    assert_balanced(sent, style)
    assert await client.conversation_store.get("u1") == second.messages


async def test_run_with_answer_resumes_with_the_output_type(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    gate = Gate()
    tk = await toolkit_of(make_tool("deploy", gate))
    stub.enqueue(reply.tool_calls(reply.call("deploy")), answer("tool", PARIS))
    client = make_client(style)

    halted = await client.run("deploy", tk, output_type=Weather, output_mode="tool")
    assert halted.status == "pending"
    assert halted.pending is not None
    res = await client.run_with_answer(
        halted.pending,
        Answer(halted.pending.id, ok=True),
        tk,
        history=halted.messages,
        output_type=Weather,
        output_mode="tool",
    )

    assert (res.status, res.output) == ("done", Weather(city="Paris", temp_c=21))
    assert_balanced(res.messages, style)


async def test_resume_by_id_takes_the_output_options(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    gate = Gate()
    tk = await toolkit_of(make_tool("deploy", gate))
    stub.enqueue(
        reply.tool_calls(reply.call("deploy")),
        reply.text('{"city":"Oslo","temp_c":-3}'),
        reply.text(PARIS_JSON),
    )
    client = make_client(style, output_mode="native")
    halted = await client.ask("deploy", tk, id="d1", output_type=Weather)
    assert halted.pending is not None

    def warm(value: Weather) -> Weather:
        if value.temp_c < 0:
            raise ModelRetry("too cold")
        return value

    res = await client.resume(
        "d1",
        Answer(halted.pending.id, ok=True),
        tk,
        output_type=Weather,
        output_validator=warm,
    )
    assert res.output == Weather(city="Paris", temp_c=21)
    assert "too cold" in retry_text(stub.requests[2], style, "native")


async def test_ask_with_answer_takes_the_output_options(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    tk = await toolkit_of(make_tool("deploy", Gate()))
    stub.enqueue(reply.tool_calls(reply.call("deploy")), reply.text('{"result":7}'))
    client = make_client("openai")
    halted = await client.ask("deploy", tk, id="d2")
    assert halted.pending is not None
    res = await client.ask_with_answer(
        halted.pending, Answer(halted.pending.id, ok=True), tk, id="d2", output_type=int
    )
    assert res.output == 7


async def test_agent_run_gives_the_output(stub: StubLLMServer, style: str) -> None:
    stub.enqueue(answer("tool" if style == "anthropic" else "native", PARIS))
    weather = agent("weather", does="Reports the weather.")
    llm = {"base_url": stub.url, "style": style, "model": "m", "api_key": "k"}

    res = await weather.run("Paris?", llm=llm, output_type=Weather)

    assert (res.status, res.output) == ("done", Weather(city="Paris", temp_c=21))
    with pytest.raises(ConfigError, match="output_type"):
        await weather.run("Paris?", llm=llm, output_type=object())


def test_run_result_to_dict_dumps_any_output_as_json() -> None:
    from toolnexus import Usage

    result = RunResult("", [], [], 0, 1, Usage(), "m", "done", output=Point(1, 2))
    assert result.to_dict()["output"] == {"x": 1, "y": 2}


async def test_malformed_final_result_arguments_are_sent_back_as_a_failure(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("final_result", '{"city": "Par')), answer("tool", PARIS)
    )
    res = await make_client(style).run("hi", output_type=Weather, output_mode="tool")
    message = retry_text(stub.requests[1], style, "tool")
    assert message.startswith(RETRY_START + "invalid arguments for final_result:")
    assert res.output == Weather(city="Paris", temp_c=21)
    assert_balanced(res.messages, style)


async def test_final_result_never_reaches_tool_hooks_or_tool_metrics(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("get_weather", {"city": "Paris"}), reply.call("final_result", PARIS)
        )
    )
    hooked: list[str] = []
    metrics: list[dict[str, Any]] = []
    seen_tools: list[list[str]] = []

    def before_tool(payload: dict[str, Any]) -> None:
        hooked.append(payload["name"])

    def before_llm(payload: dict[str, Any]) -> None:
        tools = payload["tools"]
        seen_tools.append(
            [t["function"]["name"] if style == "openai" else t["name"] for t in tools]
        )

    client = make_client(
        style,
        output_mode="tool",
        on_metric=metrics.append,
        hooks={"before_tool": before_tool, "before_llm": before_llm},
    )
    res = await client.run("hi", await toolkit_of(get_weather), output_type=Weather)

    assert hooked == ["get_weather"]
    assert [m.get("tool") for m in metrics if m["event"] == "tool"] == ["get_weather"]
    assert seen_tools == [["get_weather", "final_result"]]  # the LLM hooks see every attempt
    assert res.output == Weather(city="Paris", temp_c=21)


async def test_an_interceptor_editing_the_body_cannot_change_the_type_schema(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    from toolnexus import Interceptor

    class Scribble(Interceptor):
        async def around_llm(self, call_next: Any, call: Any) -> Any:
            call.body["response_format"]["json_schema"]["schema"]["properties"].clear()
            return await call_next(call)

    stub.enqueue(reply.text(PARIS_JSON), reply.text(PARIS_JSON))
    scribbled = make_client("openai")
    scribbled.add_interceptor(Scribble())
    await scribbled.run("hi", output_type=Weather)
    res = await make_client("openai").run("hi", output_type=Weather)

    assert stub.requests[1].json["response_format"]["json_schema"]["schema"] == WEATHER_SCHEMA
    assert res.output == Weather(city="Paris", temp_c=21)


async def test_agent_resume_keeps_the_output_options_of_the_halted_run(
    stub: StubLLMServer,
) -> None:
    gate = Gate()
    deployer = agent("deployer", does="Deploys.", uses={"tools": [make_tool("deploy", gate)]})
    llm = {"base_url": stub.url, "style": "openai", "model": "m", "api_key": "k"}
    stub.enqueue(reply.tool_calls(reply.call("deploy")), reply.text('{"result":3}'))

    halted = await deployer.run("deploy", llm=llm, output_type=int)
    assert halted.status == "pending"
    assert halted.pending is not None
    res = await deployer.resume(halted.pending, Answer(halted.pending.id, ok=True), llm=llm)

    assert (res.status, res.output) == ("done", 3)


async def test_an_in_process_model_gets_the_native_form_and_the_client_default_mode() -> None:
    bodies: list[dict[str, Any]] = []

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        bodies.append(request["body"])
        return {"content": "```json\n" + PARIS_JSON + "\n```"}

    local = tn_in_process(generate, output_mode="prompted")
    res = await local.run("hi", output_type=Weather)
    native = await tn_in_process(generate).run("hi", output_type=Weather, output_retries=0)

    assert bodies[0]["messages"][0]["content"].startswith(PROMPT)
    assert res.output == Weather(city="Paris", temp_c=21)
    assert bodies[1]["response_format"]["json_schema"]["name"] == "Weather"
    assert (native.status, native.limit) == ("incomplete", "outputRetries")  # fenced: not JSON


def tn_in_process(generate: Any, **options: Any) -> Any:
    from toolnexus import create_in_process_client

    return create_in_process_client(model="local", generate=generate, **options)

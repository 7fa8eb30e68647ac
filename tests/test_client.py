"""The client: construction, API keys, headers and request shapes on the wire (SPEC §2.1-§2.3)."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from toolnexus import (
    Client,
    ConfigError,
    Event,
    LLMError,
    RunResult,
    ToolCallEvent,
    Toolkit,
    UsageEvent,
    create_client,
    create_toolkit,
    tool,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

MakeClient = Callable[..., Client]
Drive = Callable[..., Awaitable[tuple[RunResult, list[Event]]]]

KEY_VARIABLES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY")
SECRET = "sk-live-SECRET-0123456789abcdef"


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


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No API key variable in the environment; set the ones a test needs."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


class LoopbackResolver(AbstractResolver):
    """Resolves every host name to 127.0.0.1, so a client can talk to the stub by any name."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


@pytest.fixture
async def loopback_session() -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.TCPConnector(resolver=LoopbackResolver())
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


def port_of(stub: StubLLMServer) -> int:
    return int(stub.url.rsplit(":", 1)[1])


# --- construction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "mentions"),
    [
        ({"style": "gemini"}, "gemini"),
        ({"style": ""}, "style"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_turns": -3}, "max_turns"),
        ({"retries": -1}, "retries"),
        ({"model": ""}, "model"),
        ({"base_url": ""}, "base_url"),
    ],
)
def test_bad_options_raise_config_error_at_construction(
    options: dict[str, Any], mentions: str
) -> None:
    arguments: dict[str, Any] = {
        "base_url": "http://127.0.0.1:9",
        "style": "openai",
        "model": "m",
        "api_key": "test-key",
    }
    arguments.update(options)
    with pytest.raises(ValueError, match=mentions) as info:
        create_client(arguments.pop("base_url"), arguments.pop("style"), **arguments)
    assert isinstance(info.value, ConfigError)


def test_a_valid_client_keeps_its_settings() -> None:
    client = create_client("http://127.0.0.1:9/v1", "anthropic", model="m", api_key=SECRET)

    assert (client.base_url, client.style, client.model) == (
        "http://127.0.0.1:9/v1",
        "anthropic",
        "m",
    )
    assert SECRET not in repr(client)


# --- API keys -------------------------------------------------------------------------------------


def auth_value(style: str, headers: Any) -> str:
    if style == "openai":
        value: str = headers["Authorization"]
        assert value.startswith("Bearer ")
        return value.removeprefix("Bearer ")
    anthropic_key: str = headers["x-api-key"]
    return anthropic_key


@pytest.mark.parametrize(
    ("style", "env", "expected"),
    [
        ("openai", {"OPENAI_API_KEY": "k-openai", "OPENROUTER_API_KEY": "k-router"}, "k-openai"),
        ("openai", {"OPENROUTER_API_KEY": "k-router"}, "k-router"),
        (
            "anthropic",
            {"ANTHROPIC_API_KEY": "k-anthropic", "OPENROUTER_API_KEY": "k-router"},
            "k-anthropic",
        ),
        ("anthropic", {"OPENROUTER_API_KEY": "k-router", "OPENAI_API_KEY": "k-openai"}, "k-router"),
    ],
)
async def test_api_key_comes_from_the_environment_in_precedence_order(
    stub: StubLLMServer,
    make_client: MakeClient,
    drive: Drive,
    no_keys: pytest.MonkeyPatch,
    style: str,
    env: dict[str, str],
    expected: str,
) -> None:
    for name, value in env.items():
        no_keys.setenv(name, value)
    stub.enqueue(reply.text("ok"))
    await drive(make_client(style, api_key=None), "hi")

    assert auth_value(style, stub.requests[0].headers) == expected


async def test_an_explicit_api_key_wins_over_the_environment(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, style: str, no_keys: Any
) -> None:
    for name in KEY_VARIABLES:
        no_keys.setenv(name, f"env-{name}")
    stub.enqueue(reply.text("ok"))
    await drive(make_client(style, api_key="explicit-key"), "hi")

    assert auth_value(style, stub.requests[0].headers) == "explicit-key"


@pytest.mark.parametrize("mode", ["run", "stream"])  # an injected session is bound to this loop
@pytest.mark.parametrize("host", ["openrouter.ai", "api.openrouter.ai"])
@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OPENROUTER_API_KEY": "k-router", "OPENAI_API_KEY": "k-openai"}, "k-router"),
        ({"OPENAI_API_KEY": "k-openai"}, "k-openai"),
    ],
)
async def test_openrouter_hosts_prefer_the_openrouter_key(
    stub: StubLLMServer,
    drive: Drive,
    no_keys: pytest.MonkeyPatch,
    loopback_session: aiohttp.ClientSession,
    host: str,
    env: dict[str, str],
    expected: str,
) -> None:
    for name, value in env.items():
        no_keys.setenv(name, value)
    stub.enqueue(reply.text("ok"))
    base_url = f"http://{host}:{port_of(stub)}/api/v1"
    async with create_client(base_url, "openai", model="m", http_client=loopback_session) as client:
        await drive(client, "hi")

    [request] = stub.requests
    assert request.path == "/api/v1/chat/completions"
    assert request.headers["Host"].startswith(host)
    assert request.headers["Authorization"] == f"Bearer {expected}"


@pytest.mark.parametrize(
    ("style", "base", "names"),
    [
        ("openai", "stub", ("OPENAI_API_KEY", "OPENROUTER_API_KEY")),
        ("anthropic", "stub", ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")),
        ("openai", "openrouter", ("OPENROUTER_API_KEY", "OPENAI_API_KEY")),
    ],
)
async def test_no_api_key_raises_config_error_naming_the_variables_before_any_request(
    stub: StubLLMServer,
    make_client: MakeClient,
    drive: Drive,
    no_keys: pytest.MonkeyPatch,
    style: str,
    base: str,
    names: tuple[str, ...],
) -> None:
    stub.enqueue(reply.text("never sent"))
    base_url = stub.url if base == "stub" else "http://openrouter.ai/api/v1"
    client = make_client(style, api_key=None, base_url=base_url)
    with pytest.raises(ValueError, match="API key") as info:
        await drive(client, "hi")

    assert isinstance(info.value, ConfigError)
    message = str(info.value)
    for name in names:
        assert name in message
    assert message.index(names[0]) < message.index(names[1])
    assert stub.requests == []


@pytest.mark.parametrize("status", [401, 403])
async def test_the_api_key_never_appears_in_errors_logs_or_metrics_even_when_echoed(
    stub: StubLLMServer,
    make_client: MakeClient,
    drive: Drive,
    style: str,
    no_keys: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    status: int,
) -> None:
    no_keys.setenv("OPENAI_API_KEY" if style == "openai" else "ANTHROPIC_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    metrics: list[JSONObject] = []
    echoed = {"error": {"message": f"Incorrect API key provided: {SECRET}.", "key": SECRET}}
    stub.enqueue(reply.error(status, echoed))
    client = make_client(style, api_key=None, on_metric=metrics.append)
    with pytest.raises(LLMError) as info:
        await drive(client, "hi")

    assert auth_value(style, stub.requests[0].headers) == SECRET  # it was sent...
    error = info.value
    assert error.status == status
    shown = [str(error), repr(error), error.body or "", *map(str, error.args)]
    assert "Incorrect API key provided" in (error.body or "")
    for text in shown:
        assert SECRET not in text
    logged = [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    assert all(SECRET not in text for text in logged)
    assert SECRET not in json.dumps(metrics)


# --- headers --------------------------------------------------------------------------------------


async def test_client_headers_override_the_library_headers_case_insensitively(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, style: str
) -> None:
    if style == "openai":
        extra = {"authorization": "Bearer from-headers", "X-Trace": "t-1"}
    else:
        extra = {"X-API-KEY": "from-headers", "Anthropic-Version": "2099-01-01", "X-Trace": "t-1"}
    stub.enqueue(reply.text("ok"))
    await drive(make_client(style, headers=extra), "hi")

    headers = stub.requests[0].headers
    for name, value in extra.items():
        assert headers.getall(name) == [value]


# --- A54: the openai request ----------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_openai_requests_post_to_chat_completions(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, suffix: str
) -> None:
    stub.enqueue(reply.text("ok"))
    await drive(make_client("openai", base_url=stub.url + suffix), "hi")

    [request] = stub.requests
    assert request.method == "POST"
    assert request.path == ("/v1" if "v1" in suffix else "") + "/chat/completions"


async def test_openai_request_has_the_bearer_key_and_the_specified_body_on_every_turn(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, mode: str, weather_kit: Toolkit
) -> None:
    model = "org/Model-X:v1.5"
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"})),
        reply.text("Sunny."),
    )
    client = make_client("openai", model=model, system_prompt="Be brief.")
    question = "Weather in Chennai?"
    await drive(client, question, weather_kit)

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


# --- A55: the anthropic request -------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_anthropic_requests_post_to_v1_messages(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, suffix: str
) -> None:
    stub.enqueue(reply.text("ok"))
    await drive(make_client("anthropic", base_url=stub.url + suffix), "hi")

    assert [r.path for r in stub.requests] == ["/v1/messages"]


async def test_anthropic_request_has_its_headers_body_and_one_result_message_per_turn(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, mode: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}), reply.call("explode")),
        reply.text("Half of it worked."),
    )
    client = make_client("anthropic", system_prompt="Be brief.")
    result, _ = await drive(client, "Weather?", weather_kit)

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


# --- A56: no tools, no tools key ------------------------------------------------------------------


@pytest.mark.parametrize("kit", ["none", "empty"])
async def test_without_tools_the_body_has_no_tools_key(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, style: str, kit: str
) -> None:
    stub.enqueue(reply.text("ok"))
    async with await create_toolkit(builtins=False) as empty:
        await drive(make_client(style), "hi", empty if kit == "empty" else None)

    body = stub.requests[0].json
    assert "tools" not in body
    assert "tool_choice" not in body


async def test_tools_emptied_by_before_llm_are_omitted_from_the_body(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(reply.text("ok"))
    hooks: dict[str, Any] = {"before_llm": lambda info: {"tools": []}}
    await drive(make_client(style, hooks=hooks), "hi", weather_kit)

    body = stub.requests[0].json
    assert "tools" not in body
    assert "tool_choice" not in body


# --- A57/A58: streamed tool calls -----------------------------------------------------------------


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
        reply.raw_sse([start(1, "call_b"), args(1, "B"), start(0, "call_a"), args(0, "A")]),
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


# --- A59: malformed success responses -------------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "body"),
    [
        ("openai", {"id": "x", "object": "chat.completion"}),
        ("openai", {"choices": []}),
        ("openai", {"choices": [{"finish_reason": "stop"}]}),
        ("anthropic", {"id": "msg", "type": "message"}),
    ],
)
async def test_a_2xx_reply_without_the_expected_message_raises_llm_error(
    stub: StubLLMServer, make_client: MakeClient, drive: Drive, style: str, body: JSONObject
) -> None:
    stub.enqueue(reply.raw_json(body))
    with pytest.raises(LLMError) as info:
        await drive(make_client(style, retries=0), "hi")

    assert info.value.status == 200
    assert info.value.body == json.dumps(body, separators=(",", ":"))
    assert len(stub.requests) == 1


async def test_a_2xx_reply_that_is_not_json_raises_llm_error(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.raw_bytes(b"<html>gateway</html>", content_type="text/html"))
    with pytest.raises(LLMError) as info:
        await make_client(style).run("hi")

    assert (info.value.status, info.value.body) == (200, "<html>gateway</html>")


def test_run_sync_refuses_an_injected_http_client_bound_to_another_loop() -> None:
    async def make() -> tuple[Client, httpx.AsyncClient]:
        injected = httpx.AsyncClient()
        return create_client(
            "http://127.0.0.1:9", model="m", api_key="k", http_client=injected
        ), injected

    client, injected = asyncio.run(make())
    with pytest.raises(ConfigError, match="injected http_client"):
        client.run_sync("hi")
    asyncio.run(injected.aclose())

"""The client: construction, API keys, headers and request shapes on the wire."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from toolnexus import (
    Client,
    ConfigError,
    LLMError,
    create_client,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from .running import MakeClient, drive

KEY_VARIABLES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY")
SECRET = "sk-live-SECRET-0123456789abcdef"


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
        ({"style": "bedrock"}, "bedrock"),
        ({"style": ""}, "style"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_turns": -3}, "max_turns"),
        ({"retries": -1}, "retries"),
        ({"model": ""}, "model"),
        ({"base_url": ""}, "base_url"),
        ({"retry_base_ms": "500"}, "retry_base_ms"),
        ({"timeout_ms": "1000"}, "timeout_ms"),
        ({"max_turns": 2.5}, "max_turns"),
        ({"on_metric": "print"}, "on_metric"),
        ({"wait_for": 3}, "wait_for"),
        ({"on_error": "retry"}, "on_error"),
        ({"body_transform": {}}, "body_transform"),
        ({"request_params": [("a", 1)]}, "request_params"),
        ({"system_prompt": ["Be brief."]}, "system_prompt"),
        ({"max_retry_after_s": "60"}, "max_retry_after_s"),
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
        (
            "anthropic",
            {"ANTHROPIC_API_KEY": "k-anthropic", "OPENROUTER_API_KEY": "k-router"},
            "k-anthropic",
        ),
    ],
)
async def test_api_key_comes_from_the_environment_in_precedence_order(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    no_keys: pytest.MonkeyPatch,
    style: str,
    env: dict[str, str],
    expected: str,
) -> None:
    for name, value in env.items():
        no_keys.setenv(name, value)
    stub.enqueue(reply.text("ok"))
    await drive(make_client(style, api_key=None), mode)

    assert auth_value(style, stub.requests[0].headers) == expected


async def test_an_explicit_api_key_wins_over_the_environment(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, no_keys: Any
) -> None:
    for name in KEY_VARIABLES:
        no_keys.setenv(name, f"env-{name}")
    stub.enqueue(reply.text("ok"))
    await drive(make_client(style, api_key="explicit-key"), mode)

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
    mode: str,
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
        await drive(client, mode)

    [request] = stub.requests
    assert request.path == "/api/v1/chat/completions"
    assert request.headers["Host"].startswith(host)
    assert request.headers["Authorization"] == f"Bearer {expected}"


async def test_the_openrouter_key_never_goes_to_another_host(
    stub: StubLLMServer, make_client: MakeClient, mode: str, no_keys: pytest.MonkeyPatch, style: str
) -> None:
    no_keys.setenv("OPENROUTER_API_KEY", "sk-or-only-for-openrouter")
    stub.enqueue(reply.text("never sent"))
    with pytest.raises(ConfigError, match="API key") as info:
        await drive(make_client(style, api_key=None), mode)

    assert "OPENROUTER_API_KEY" not in str(info.value)
    assert stub.requests == []


@pytest.mark.parametrize("mode", ["run", "stream"])  # an injected session is bound to this loop
@pytest.mark.parametrize("host", ["openrouter.ai", "api.openrouter.ai"])
async def test_anthropic_style_on_an_openrouter_host_falls_back_to_the_openrouter_key(
    stub: StubLLMServer,
    mode: str,
    no_keys: pytest.MonkeyPatch,
    loopback_session: aiohttp.ClientSession,
    host: str,
) -> None:
    no_keys.setenv("OPENROUTER_API_KEY", "k-router")
    stub.enqueue(reply.text("ok"))
    base_url = f"http://{host}:{port_of(stub)}/api/v1"
    async with create_client(
        base_url, "anthropic", model="m", http_client=loopback_session
    ) as client:
        await drive(client, mode)

    assert stub.requests[0].headers["x-api-key"] == "k-router"


@pytest.mark.parametrize(
    ("style", "base", "names"),
    [
        ("openai", "stub", ("OPENAI_API_KEY",)),
        ("anthropic", "stub", ("ANTHROPIC_API_KEY",)),
        ("openai", "openrouter", ("OPENROUTER_API_KEY", "OPENAI_API_KEY")),
        ("anthropic", "openrouter", ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")),
    ],
)
async def test_no_api_key_raises_config_error_naming_the_variables_before_any_request(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    no_keys: pytest.MonkeyPatch,
    style: str,
    base: str,
    names: tuple[str, ...],
) -> None:
    stub.enqueue(reply.text("never sent"))
    base_url = stub.url if base == "stub" else "http://openrouter.ai/api/v1"
    client = make_client(style, api_key=None, base_url=base_url)
    with pytest.raises(ValueError, match="API key") as info:
        await drive(client, mode)

    assert isinstance(info.value, ConfigError)
    message = str(info.value)
    for name in names:
        assert name in message
    if len(names) > 1:
        assert message.index(names[0]) < message.index(names[1])
    else:
        assert "OPENROUTER_API_KEY" not in message
    assert stub.requests == []


@pytest.mark.parametrize("status", [401, 403])
async def test_the_api_key_never_appears_in_errors_logs_or_metrics_even_when_echoed(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
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
        await drive(client, mode)

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
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    if style == "openai":
        extra = {"authorization": "Bearer from-headers", "X-Trace": "t-1"}
    else:
        extra = {"X-API-KEY": "from-headers", "Anthropic-Version": "2099-01-01", "X-Trace": "t-1"}
    stub.enqueue(reply.text("ok"))
    await drive(make_client(style, headers=extra), mode)

    headers = stub.requests[0].headers
    for name, value in extra.items():
        assert headers.getall(name) == [value]


# --- malformed success responses ------------------------------------------------------------------


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
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, body: JSONObject
) -> None:
    stub.enqueue(reply.raw_json(body))
    with pytest.raises(LLMError) as info:
        await drive(make_client(style, retries=0), mode)

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

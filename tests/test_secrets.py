"""No secret leaves the library: every failure path, every place text comes out.

Distinctive secrets (an API key, ``${ENV}`` header values of an HTTP tool and of an MCP server)
are set, then every failure we can provoke is driven in both wire styles and both modes. Every
log record, raised exception (with its chain and body), event, metric event, ``on_error``
argument, stored transcript and request body sent to the model is collected and searched.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import traceback
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from toolnexus import (
    ConfigError,
    ErrorInfo,
    Event,
    JSONObject,
    LLMError,
    Toolkit,
    create_client,
    create_toolkit,
    http_tool,
    tool,
)
from toolnexus.stores.sqlite import SqliteConversationStore
from toolnexus.testing import StubLLMServer, reply

from .http_server import serving
from .running import ASYNC_MODES, drive

API_KEY = "sk-tn-SECRETKEY-4f9a1c77"
TOOL_TOKEN = "tooltok-SECRET-77b2e1d0"
MCP_TOKEN = "mcptok-SECRET-91cd0e44"
SECRETS = (API_KEY, TOOL_TOKEN, MCP_TOKEN)

OBJECT = {"type": "object", "properties": {}}


@dataclass
class Collected:
    """Every text the library handed out during one test."""

    texts: list[str] = field(default_factory=list)

    def add(self, *items: object) -> None:
        self.texts.extend(repr(item) for item in items)

    def exception(self, exc: BaseException) -> None:
        seen: set[int] = set()
        stack: list[BaseException | None] = [exc]
        while stack:
            current = stack.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            self.texts.append("".join(traceback.format_exception(current)))
            self.texts.append(repr(current.args))
            self.texts.append(str(getattr(current, "body", "")))
            stack += [current.__cause__, current.__context__]

    def assert_clean(self, records: Iterable[logging.LogRecord]) -> None:
        for record in records:
            self.texts.append(record.getMessage())
            if record.exc_info:
                self.texts.append("".join(traceback.format_exception(*record.exc_info)))
            if record.exc_text:
                self.texts.append(record.exc_text)
        assert self.texts, "nothing was collected"
        for text in self.texts:
            for secret in SECRETS:
                assert secret not in text, f"secret {secret!r} leaked in: {text[:300]}"
                assert secret.encode("unicode_escape").decode() not in text


@pytest.fixture
def collected(caplog: pytest.LogCaptureFixture) -> Collected:
    caplog.set_level(logging.DEBUG)
    return Collected()


@pytest.fixture
async def echo_server() -> AsyncIterator[str]:
    """Answers every request with the request's headers as text (``/fail``: with HTTP 403)."""

    async def handle(request: web.Request) -> web.Response:
        echoed = "\n".join(f"{k}: {v}" for k, v in request.headers.items())
        status = 403 if request.path.endswith("/fail") else 200
        return web.Response(status=status, text=f"you sent:\n{echoed}")

    async with serving(handle) as url:
        yield url


# The replies a provider might send that break the run, each echoing the API key.
_FAILURES = {
    "error-status": reply.error(401, f"invalid key {API_KEY}"),
    "error-json": reply.error(400, {"error": {"message": f"bad key Bearer {API_KEY}"}}),
    "not-json-200": reply.raw_bytes(f"oops {API_KEY}".encode(), content_type="application/json"),
    "not-sse-json": reply.raw_bytes(
        f"data: {{{API_KEY}\n\n".encode(), content_type="text/event-stream"
    ),
    "wrong-shape": reply.raw_json({"choices": API_KEY, "content": API_KEY}),
    "stream-error-event": reply.raw_sse(
        [{"type": "error", "error": {"type": "overloaded", "message": API_KEY}}]
    ),
    "openai-error-chunk": reply.raw_sse([{"error": {"message": API_KEY}}]),
    "server-error-retried": reply.error(503, API_KEY),
}


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
@pytest.mark.parametrize("failure", sorted(_FAILURES))
async def test_provider_failures_never_show_the_api_key(
    failure: str, style: str, mode: str, collected: Collected, caplog: pytest.LogCaptureFixture
) -> None:
    infos: list[ErrorInfo] = []
    metrics: list[JSONObject] = []
    events: list[Event] = []

    def on_error(info: ErrorInfo) -> str:
        infos.append(info)
        return "retry" if info.attempt == 0 else "fail"

    scripted = [_FAILURES[failure]] * 2
    with StubLLMServer(scripted) as stub:
        client = create_client(
            stub.url,
            style,
            model="m",
            api_key=API_KEY,
            on_metric=metrics.append,
            on_error=on_error,
            retry_base_ms=0,
        )
        async with client:
            try:
                result, events = await drive(client, mode, on_event=events.append)
            except Exception as exc:
                collected.exception(exc)
            else:
                collected.add(result.to_dict())
    for info in infos:
        assert info.error is not None
        collected.exception(info.error)
    collected.add(*metrics, *events)
    collected.assert_clean(caplog.records)


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_tool_results_echoing_header_values_are_masked_everywhere(
    style: str,
    mode: str,
    echo_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    collected: Collected,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("TN_SECRET_TOOL_TOKEN", TOOL_TOKEN)
    headers = {"Authorization": "Bearer ${TN_SECRET_TOOL_TOKEN}"}

    @tool
    def leaky() -> str:
        """Fails with the token in its message."""
        raise RuntimeError(f"cannot use {os.environ['TN_SECRET_TOOL_TOKEN']}")

    tools = [
        http_tool(
            name="echo", description="e", url=echo_server, input_schema=OBJECT, headers=headers
        ),
        http_tool(
            name="echo_fail",
            description="f",
            url=echo_server + "/fail",
            input_schema=OBJECT,
            headers=headers,
            result_mode="status+text",
        ),
        leaky,
    ]
    script = [
        reply.tool_calls(reply.call("echo"), reply.call("echo_fail")),
        reply.tool_calls(reply.call("leaky")),
        reply.text("done"),
    ]
    store = SqliteConversationStore(tmp_path / "memory.db")
    metrics: list[JSONObject] = []
    with StubLLMServer(script) as stub:
        client = create_client(
            stub.url, style, model="m", api_key=API_KEY, store=store, on_metric=metrics.append
        )
        async with client, Toolkit(tools) as toolkit:
            result, events = await drive(client, mode, toolkit, conversation_id="c1")
        bodies = [r.body.decode() for r in stub.requests]
    assert result.status == "done"
    outputs = [call.output for call in result.tool_calls]
    assert "Authorization: ***" in outputs[0], outputs
    assert "Authorization: ***" in outputs[1], outputs
    assert "***" in outputs[2]
    collected.texts.extend(bodies)
    collected.add(result.to_dict(), await store.get("c1"), *events, *metrics)
    await store.aclose()
    collected.assert_clean(caplog.records)


async def test_an_mcp_header_value_with_a_newline_stays_masked_in_warnings(
    echo_server: str,
    monkeypatch: pytest.MonkeyPatch,
    collected: Collected,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("TN_SECRET_MCP", MCP_TOKEN + "\n")
    config = {
        "mcpServers": {
            "web": {
                "url": echo_server + "/mcp",
                "timeout": 5000,
                "headers": {"X-Api-Key": "key ${TN_SECRET_MCP}"},
            }
        }
    }
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        assert tk.mcp_status() == {"web": "failed"}
        collected.add(tk.mcp_status())
    assert any("web" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    collected.assert_clean(caplog.records)


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_an_api_key_with_a_trailing_newline_is_a_config_error_without_the_key(
    style: str, collected: Collected, caplog: pytest.LogCaptureFixture
) -> None:
    metrics: list[JSONObject] = []
    with StubLLMServer([reply.text("never")]) as stub:
        client = create_client(
            stub.url, style, model="m", api_key=API_KEY + "\n", on_metric=metrics.append
        )
        async with client:
            with pytest.raises(ConfigError, match="line break") as raised:
                await client.run("hi")
        assert stub.requests == []
    collected.exception(raised.value)
    collected.add(*metrics)
    collected.assert_clean(caplog.records)


async def test_a_key_from_the_environment_with_a_newline_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, collected: Collected, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY + "\r\n")
    with StubLLMServer([reply.text("never")]) as stub:
        async with create_client(stub.url, model="m") as client:
            with pytest.raises(ConfigError, match="OPENAI_API_KEY") as raised:
                await client.run("hi")
    collected.exception(raised.value)
    collected.assert_clean(caplog.records)


def test_a_header_with_a_line_break_is_refused_when_the_client_is_made() -> None:
    with pytest.raises(ConfigError, match="X-Team") as raised:
        create_client("http://127.0.0.1:9", model="m", api_key="k", headers={"X-Team": "a\nb"})
    assert "a\nb" not in str(raised.value)


async def test_call_provider_errors_are_masked(
    collected: Collected, caplog: pytest.LogCaptureFixture
) -> None:
    with StubLLMServer([reply.raw_bytes(f"<html>{API_KEY}".encode())]) as stub:
        async with create_client(stub.url, model="m", api_key=API_KEY, retries=0) as client:
            with pytest.raises(LLMError) as raised:
                await client.call_provider({"model": "m", "messages": []})
    collected.exception(raised.value)
    assert "***" in str(raised.value)
    collected.assert_clean(caplog.records)


async def test_a_run_sync_failure_is_masked(
    collected: Collected, caplog: pytest.LogCaptureFixture
) -> None:
    with StubLLMServer([reply.error(401, {"echo": API_KEY})]) as stub:
        client = create_client(stub.url, "anthropic", model="m", api_key=API_KEY, retries=0)
        with pytest.raises(LLMError) as raised:
            await asyncio.to_thread(client.run_sync, "hi")
    collected.exception(raised.value)
    assert json.loads(raised.value.body or "{}") == {"echo": "***"}
    collected.assert_clean(caplog.records)


async def test_an_http_tool_header_with_a_line_break_is_an_error_result_unsent(
    echo_server: str,
    monkeypatch: pytest.MonkeyPatch,
    collected: Collected,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("TN_SECRET_TOOL_TOKEN", TOOL_TOKEN + "\n")
    echo = http_tool(
        name="echo",
        description="e",
        url=echo_server,
        input_schema=OBJECT,
        headers={"X-Token": "${TN_SECRET_TOOL_TOKEN}"},
    )
    result = await Toolkit([echo]).execute("echo", {})
    assert result.is_error
    assert "'X-Token'" in result.output
    assert "not sent" in result.output
    collected.add(result)
    collected.assert_clean(caplog.records)

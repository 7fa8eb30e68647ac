"""Request shaping (``request_params``, ``body_transform``) and ``call_provider``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest

from toolnexus import ConfigError, LLMError, Toolkit, tool
from toolnexus.testing import StubLLMServer, reply

from .running import MakeClient, drive

LIMIT = 10.0
SHAPING_MODES = ("run", "stream")


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


def tool_then_text(stub: StubLLMServer) -> None:
    stub.enqueue(reply.tool_calls(reply.call("echo", {"text": "hi"})), reply.text("done"))


@pytest.mark.parametrize("mode", SHAPING_MODES)
async def test_request_params_are_merged_into_every_request_and_win(
    stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    tool_then_text(stub)
    client = make_client(style, request_params={"temperature": 0, "max_tokens": 8192})
    result, _ = await drive(client, mode, Toolkit([echo]), prompt="go")
    assert result.text == "done"
    bodies = [r.json for r in stub.requests]
    assert len(bodies) == 2
    for body in bodies:
        assert body["temperature"] == 0
        assert body["max_tokens"] == 8192  # replaces anthropic's default of 4096
        assert body["model"] == "test-model"
        assert body["tools"][0]["name" if style == "anthropic" else "function"]
        assert bool(body.get("stream")) is (mode == "stream")


def test_reserved_request_params_are_stripped_at_construction_with_a_warning(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        make_client("openai", request_params={"messages": [], "stream": True, "top_p": 1})
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "'messages'" in warned
    assert "'stream'" in warned
    assert "top_p" not in warned


@pytest.mark.parametrize(("style", "key"), [("responses", "input"), ("gemini", "contents")])
async def test_the_transcript_key_of_the_newer_styles_is_reserved_too(
    stub: StubLLMServer, make_client: MakeClient, style: str, key: str
) -> None:
    stub.enqueue(reply.text("ok"))
    client = make_client(style, request_params={key: [], "seed": 3})
    await client.run("hello")
    body = stub.requests[0].json
    assert body["seed"] == 3
    assert "hello" in str(body[key])


@pytest.mark.parametrize("mode", SHAPING_MODES)
async def test_reserved_keys_never_reach_the_wire(
    stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("ok"))
    client = make_client(style, request_params={"messages": [], "tools": [], "seed": 3})
    await drive(client, mode, prompt="hello")
    body = stub.requests[0].json
    assert body["seed"] == 3
    assert body["messages"][-1]["content"] == "hello"
    assert "tools" not in body


@pytest.mark.parametrize("mode", SHAPING_MODES)
async def test_body_transform_sees_the_merged_body_and_its_return_is_sent(
    stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("ok"))
    seen: list[dict[str, Any]] = []

    async def transform(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        return {**body, "model": "rewritten", "metadata": {"user": "u1"}}

    client = make_client(style, request_params={"temperature": 0.5}, body_transform=transform)
    await drive(client, mode, prompt="hello")
    assert seen[0]["temperature"] == 0.5
    assert seen[0]["model"] == "test-model"
    sent = stub.requests[0].json
    assert sent["model"] == "rewritten"
    assert sent["metadata"] == {"user": "u1"}
    assert sent["temperature"] == 0.5


async def test_body_transform_returning_none_keeps_the_body(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("ok"))
    client = make_client(style, body_transform=lambda body: None)
    await client.run("hello")
    assert stub.requests[0].json["model"] == "test-model"


async def test_body_transform_editing_in_place_and_returning_none_sends_its_edits(
    stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    stub.enqueue(reply.text("ok"))

    def transform(body: dict[str, Any]) -> None:
        body["metadata"] = {"user": "u1"}
        body["messages"][-1]["content"] = "edited"

    client = make_client(style, body_transform=transform)
    await drive(client, mode, prompt="hello")
    sent = stub.requests[0].json
    assert sent["metadata"] == {"user": "u1"}
    assert sent["messages"][-1]["content"] == "edited"
    assert sent["model"] == "test-model"


async def test_body_transform_returning_something_else_is_a_config_error(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    client = make_client(style, body_transform=lambda body: "nope")
    with pytest.raises(ConfigError, match="body_transform must return a dict or None, got str"):
        await client.run("hello")
    assert stub.requests == []


async def test_empty_tools_are_omitted_after_before_llm_removes_them(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("ok"))
    client = make_client(style, hooks={"before_llm": lambda payload: {"tools": []}})
    await client.run("hello", Toolkit([echo]))
    assert "tools" not in stub.requests[0].json


async def test_call_provider_posts_the_body_verbatim_with_the_style_headers(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.error(503, "busy"), reply.text("raw answer", usage=(4, 2)))
    metrics: list[dict[str, Any]] = []
    hooks_called: list[str] = []
    client = make_client(
        style,
        retry_base_ms=0,
        on_metric=metrics.append,
        request_params={"temperature": 1},
        body_transform=lambda body: {**body, "changed": True},
        hooks={"before_llm": lambda payload: hooks_called.append("before_llm")},
    )
    body = {"model": "custom", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    async with asyncio.timeout(LIMIT):
        raw = await client.call_provider(body)
    assert len(stub.requests) == 2  # the 503 was retried
    sent = stub.requests[-1]
    assert sent.json == body
    assert sent.style == style
    if style == "anthropic":
        assert sent.headers["x-api-key"] == "test-key"
        assert "anthropic-version" in sent.headers
        assert raw["content"][0]["text"] == "raw answer"
    else:
        assert sent.headers["Authorization"] == "Bearer test-key"
        assert raw["choices"][0]["message"]["content"] == "raw answer"
    assert hooks_called == []
    assert [(m["event"], m["status"], m["model"]) for m in metrics] == [("llm", "ok", "custom")]
    assert metrics[0]["prompt_tokens"] == 4


async def test_call_provider_failure_raises_and_emits_an_error_metric(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.error(400, "bad request"))
    metrics: list[dict[str, Any]] = []
    client = make_client(style, on_metric=metrics.append)
    with pytest.raises(LLMError) as caught:
        await client.call_provider({"model": "m", "messages": []})
    assert caught.value.status == 400
    assert [(m["event"], m["status"]) for m in metrics] == [("llm", "error")]


async def test_an_injected_http_client_performs_the_requests(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("via injected"))
    sent: list[str] = []

    async def on_request_start(
        session: aiohttp.ClientSession, ctx: Any, params: aiohttp.TraceRequestStartParams
    ) -> None:
        sent.append(str(params.url))

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_request_start)
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        client = make_client(style, http_client=session)
        result = await client.run("hello")
        await client.aclose()
        assert not session.closed  # the caller keeps ownership
    assert result.text == "via injected"
    assert len(sent) == 1
    assert sent[0].startswith(stub.url)

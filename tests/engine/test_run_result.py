"""Runs end to end: ``run_sync``, the tool context, statuses and the wire form of the result."""

from __future__ import annotations

import asyncio
import gc
import json
import warnings

import pytest

from toolnexus import (
    CancelToken,
    Request,
    RunResult,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
    pending,
    tool,
)
from toolnexus.testing import StubLLMServer, reply

from ..running import MakeClient, drive
from .support import first_id, get_weather

QUESTION = "What's the weather in Chennai?"


# --- run_sync -------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_run_sync_returns_what_run_returns(style: str) -> None:
    script = [
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}, id="c1"), usage=(10, 6)),
        reply.text("It is sunny in Chennai.", usage=(12, 4)),
    ]
    tk = Toolkit([get_weather])
    with StubLLMServer(script * 2) as stub:
        client = create_client(stub.url, style, model="test-model", api_key="test-key")

        async def run_and_close() -> RunResult:
            async with client:
                return await client.run(QUESTION, tk)

        from_run = asyncio.run(run_and_close())
        from_sync = client.run_sync(QUESTION, tk)

        assert from_sync.to_dict() == from_run.to_dict()
        assert from_sync.status == "done"
        assert len(stub.requests) == 4
        assert stub.requests[3].json == stub.requests[1].json


async def test_run_sync_inside_a_running_loop_raises_runtime_error_and_sends_nothing(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("never sent"))
    client = make_client(style)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="running event loop"):
            client.run_sync("hi")
        gc.collect()

    assert stub.requests == []
    assert [str(w.message) for w in caught] == [], "a coroutine was left un-awaited"


# --- the tool context -----------------------------------------------------------------------------


@pytest.mark.parametrize("timeout_ms", [None, 20_000])
async def test_tools_receive_the_run_cancel_token_and_the_time_left(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, timeout_ms: int | None
) -> None:
    seen: list[ToolContext | None] = []

    @tool
    def probe(ctx: ToolContext | None = None) -> str:
        """Records its context."""
        seen.append(ctx)
        return "probed"

    token = CancelToken()
    stub.enqueue(reply.tool_calls(reply.call("probe")), reply.text("ok"))
    async with await create_toolkit(extra_tools=[probe], builtins=False) as tk:
        await drive(make_client(style, timeout_ms=timeout_ms), mode, tk, prompt="go", cancel=token)

    [ctx] = seen
    assert ctx is not None
    assert ctx.cancel is token
    assert ctx.answer is None
    if timeout_ms is None:
        assert ctx.timeout is None
    else:
        assert ctx.timeout is not None
        assert 0 < ctx.timeout <= timeout_ms / 1000


# --- statuses and the wire form of the result -----------------------------------------------------


async def test_a_tool_suspension_without_wait_for_ends_the_run_pending(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    @tool
    def deploy(env: str) -> ToolResult:
        """Deploys after a login."""
        return pending(Request.new("authorization", "Log in to deploy", url="https://auth.test/"))

    history = [
        {"role": "user", "content": "The branch is release/1.4"},
        {"role": "assistant", "content": "Noted."},
    ]
    stub.enqueue(reply.tool_calls(reply.call("deploy", {"env": "staging"})))
    async with await create_toolkit(extra_tools=[deploy], builtins=False) as tk:
        client = make_client(style, max_turns=6)
        result, _ = await drive(client, mode, tk, prompt="Deploy to staging", history=history)

    assert result.status == "pending"
    assert result.pending is not None
    assert (result.pending.kind, result.pending.prompt, result.pending.url) == (
        "authorization",
        "Log in to deploy",
        "https://auth.test/",
    )
    assert result.text == "Log in to deploy"
    assert result.limit is None
    assert result.messages[:2] == history
    assert stub.requests[0].json["messages"][:2] == history
    data = result.to_dict()
    assert data["pending"]["kind"] == "authorization"
    json.dumps(data)


async def test_result_to_dict_is_json_with_camel_case_keys(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}), usage=(10, 6)),
        reply.text("Sunny.", usage=(12, 4)),
    )
    result, _ = await drive(make_client(style), mode, weather_kit, prompt=QUESTION)
    data = json.loads(json.dumps(result.to_dict()))

    assert set(data) == {
        "text",
        "messages",
        "toolCalls",
        "toolCallCount",
        "turns",
        "usage",
        "model",
        "status",
        "stopReason",
        "output",
    }
    assert data["output"] is None  # null without output_type (SPEC §10)
    assert data["toolCalls"] == [
        {
            "id": first_id(style),
            "name": "get_weather",
            "args": {"city": "Chennai"},
            "output": "sunny in Chennai",
            "isError": False,
            "metadata": None,
        }
    ]
    assert data["usage"] == {"promptTokens": 22, "completionTokens": 10, "totalTokens": 32}
    assert (data["toolCallCount"], data["turns"], data["status"]) == (1, 2, "done")
    assert data["messages"] == result.messages
    assert data["model"] == "test-model"


async def test_incomplete_result_to_dict_carries_the_limit(
    stub: StubLLMServer, make_client: MakeClient, mode: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("get_weather", {"city": "X"})))
    result, _ = await drive(make_client("anthropic", max_turns=1), mode, weather_kit, prompt="go")

    data = json.loads(json.dumps(result.to_dict()))
    assert (data["status"], data["limit"], data["text"]) == ("incomplete", "maxTurns", "")
    assert "pending" not in data


async def test_one_client_serves_run_and_run_sync_without_leaking_a_session(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.text("one"), reply.text("two"), reply.text("three"))
    client = make_client(style)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert (await client.run("1")).text == "one"
        assert (await asyncio.to_thread(client.run_sync, "2")).text == "two"
        assert (await client.run("3")).text == "three"
        gc.collect()

    assert [str(w.message) for w in caught] == []

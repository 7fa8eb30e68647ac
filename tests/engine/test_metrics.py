"""``on_metric`` events: one per LLM call, per tool execution and per run."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from toolnexus import LLMError, Request, Toolkit, ToolResult, create_toolkit, pending, tool
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from ..running import MakeClient, drive
from .support import get_weather

LLM_KEYS = {"event", "model", "status", "ms", "prompt_tokens", "completion_tokens"}
TOOL_KEYS = {"event", "tool", "source", "is_error", "ms"}
RUN_KEYS = {"event", "model", "turns", "tool_calls", "total_tokens", "ms", "status"}


@tool
def needs_login() -> ToolResult:
    """Suspends."""
    return pending(Request.new("authorization", "Log in", url="https://auth.test/"))


@pytest.fixture
async def kit() -> AsyncIterator[Toolkit]:
    async with await create_toolkit(extra_tools=[get_weather, needs_login], builtins=False) as tk:
        yield tk


def without_ms(events: list[JSONObject]) -> list[JSONObject]:
    """The events with their ``ms`` checked (a non-negative float) and removed."""
    out = []
    for event in events:
        ms = event["ms"]
        assert isinstance(ms, float)
        assert ms >= 0
        out.append({k: v for k, v in event.items() if k != "ms"})
    return out


# --- one event per call, per tool and per run -----------------------------------------------------


async def test_a_tool_run_emits_llm_tool_llm_and_run_events(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    metrics: list[JSONObject] = []
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"}), usage=(10, 6)),
        reply.text("Sunny.", usage=(20, 4)),
    )
    await drive(make_client(style, on_metric=metrics.append), mode, kit, prompt="go")

    assert [set(m) for m in metrics] == [LLM_KEYS, TOOL_KEYS, LLM_KEYS, RUN_KEYS]
    assert without_ms(metrics) == [
        {
            "event": "llm",
            "model": "test-model",
            "status": "ok",
            "prompt_tokens": 10,
            "completion_tokens": 6,
        },
        {"event": "tool", "tool": "get_weather", "source": "native", "is_error": False},
        {
            "event": "llm",
            "model": "test-model",
            "status": "ok",
            "prompt_tokens": 20,
            "completion_tokens": 4,
        },
        {
            "event": "run",
            "model": "test-model",
            "turns": 2,
            "tool_calls": 1,
            "total_tokens": 40,
            "status": "done",
        },
    ]


async def test_an_unknown_tool_is_metered_with_source_custom(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    metrics: list[JSONObject] = []
    stub.enqueue(reply.tool_calls(reply.call("missing")), reply.text("ok"))
    await drive(make_client(style, on_metric=metrics.append), mode, kit, prompt="go")

    [event] = [m for m in metrics if m["event"] == "tool"]
    assert (event["tool"], event["source"], event["is_error"]) == ("missing", "custom", True)


async def test_retries_of_one_call_make_one_llm_event(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    metrics: list[JSONObject] = []
    stub.enqueue(reply.error(503, "busy"), reply.text("ok", usage=(3, 2)))
    client = make_client(style, on_metric=metrics.append, retries=1, retry_base_ms=0)
    await drive(client, mode, prompt="go")

    assert len(stub.requests) == 2
    llm = [m for m in metrics if m["event"] == "llm"]
    assert [(m["status"], m["prompt_tokens"], m["completion_tokens"]) for m in llm] == [
        ("ok", 3, 2)
    ]


async def test_a_failed_run_reports_an_llm_error_and_a_run_error(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    metrics: list[JSONObject] = []
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"}), usage=(10, 6)),
        reply.error(400, {"error": "bad request"}),
    )
    with pytest.raises(LLMError) as info:
        await drive(make_client(style, on_metric=metrics.append), mode, kit, prompt="go")

    assert [m["event"] for m in metrics] == ["llm", "tool", "llm", "run"]
    failed_llm, run = metrics[2], metrics[3]
    assert (failed_llm["status"], failed_llm["prompt_tokens"], failed_llm["completion_tokens"]) == (
        "error",
        0,
        0,
    )
    assert set(run) == (RUN_KEYS - {"status"}) | {"error"}
    assert run["error"] == str(info.value)
    assert "400" in run["error"]
    assert (run["turns"], run["tool_calls"], run["total_tokens"]) == (1, 1, 16)


async def test_run_events_carry_the_incomplete_and_pending_statuses(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    metrics: list[JSONObject] = []
    client = make_client(style, on_metric=metrics.append, max_turns=1)
    stub.enqueue(reply.tool_calls(reply.call("get_weather", {"city": "A"})))
    await drive(client, mode, kit, prompt="go")
    stub.enqueue(reply.tool_calls(reply.call("needs_login")))
    await drive(client, mode, kit, prompt="go")

    runs = [m["status"] for m in metrics if m["event"] == "run"]
    assert runs == ["incomplete", "pending"]
    suspended = [m for m in metrics if m["event"] == "tool"][-1]
    assert (suspended["tool"], suspended["is_error"], suspended.get("pending")) == (
        "needs_login",
        False,
        True,
    )


async def test_an_async_on_metric_is_awaited(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    metrics: list[JSONObject] = []

    async def sink(event: JSONObject) -> None:
        metrics.append(event)

    stub.enqueue(reply.text("ok"))
    await make_client(style, on_metric=sink).run("go")

    assert [m["event"] for m in metrics] == ["llm", "run"]


# --- a raising on_metric --------------------------------------------------------------------------


async def test_a_raising_on_metric_is_logged_and_ignored(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    style: str,
    kit: Toolkit,
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    def broken(event: JSONObject) -> None:
        calls.append(event["event"])
        raise RuntimeError("metrics backend down")

    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"})),
        reply.text("Sunny."),
    )
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result, _ = await drive(make_client(style, on_metric=broken), mode, kit, prompt="go")

    assert (result.status, result.text, result.tool_call_count) == ("done", "Sunny.", 1)
    assert calls == ["llm", "tool", "llm", "run"]
    assert len([r for r in caplog.records if "on_metric" in r.message]) == 4

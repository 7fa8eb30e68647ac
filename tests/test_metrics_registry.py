"""``MetricsRegistry``: exact Prometheus text fed by metric events; ``client.metrics()``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from toolnexus import (
    ConfigError,
    LLMError,
    MetricsRegistry,
    Request,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    pending,
)
from toolnexus.testing import StubLLMServer, reply

from .engine.support import get_weather, make_tool, toolkit_of

HEADERS = """\
# HELP toolnexus_llm_requests_total Total LLM requests.
# TYPE toolnexus_llm_requests_total counter
# HELP toolnexus_llm_tokens_total Total tokens, by type.
# TYPE toolnexus_llm_tokens_total counter
# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.
# TYPE toolnexus_llm_request_duration_seconds histogram
# HELP toolnexus_tool_calls_total Total tool calls.
# TYPE toolnexus_tool_calls_total counter
# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.
# TYPE toolnexus_tool_duration_seconds histogram
# HELP toolnexus_run_errors_total Total run errors.
# TYPE toolnexus_run_errors_total counter
"""

ONE_LLM_CALL = """\
# HELP toolnexus_llm_requests_total Total LLM requests.
# TYPE toolnexus_llm_requests_total counter
toolnexus_llm_requests_total{model="m",status="ok"} 1
# HELP toolnexus_llm_tokens_total Total tokens, by type.
# TYPE toolnexus_llm_tokens_total counter
toolnexus_llm_tokens_total{type="completion"} 6
toolnexus_llm_tokens_total{type="prompt"} 10
# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.
# TYPE toolnexus_llm_request_duration_seconds histogram
toolnexus_llm_request_duration_seconds_bucket{model="m",le="0.05"} 0
toolnexus_llm_request_duration_seconds_bucket{model="m",le="0.1"} 0
toolnexus_llm_request_duration_seconds_bucket{model="m",le="0.25"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="0.5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="1"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="2.5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="10"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="30"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="60"} 1
toolnexus_llm_request_duration_seconds_bucket{model="m",le="+Inf"} 1
toolnexus_llm_request_duration_seconds_sum{model="m"} 0.12
toolnexus_llm_request_duration_seconds_count{model="m"} 1
# HELP toolnexus_tool_calls_total Total tool calls.
# TYPE toolnexus_tool_calls_total counter
# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.
# TYPE toolnexus_tool_duration_seconds histogram
# HELP toolnexus_run_errors_total Total run errors.
# TYPE toolnexus_run_errors_total counter
"""

LLM_OK = {
    "event": "llm",
    "model": "m",
    "status": "ok",
    "ms": 120,
    "prompt_tokens": 10,
    "completion_tokens": 6,
}


def tool_event(tool: str, *, is_error: bool = False, ms: float = 5.0, **extra: object) -> dict:
    return {
        "event": "tool",
        "tool": tool,
        "source": "native",
        "is_error": is_error,
        "ms": ms,
        **extra,
    }


def lines_of(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_an_empty_registry_renders_only_the_help_and_type_lines() -> None:
    assert MetricsRegistry().render() == HEADERS


def test_one_llm_event_renders_byte_for_byte() -> None:
    registry = MetricsRegistry()
    registry.record(LLM_OK)
    assert registry.render() == ONE_LLM_CALL


def test_label_values_are_escaped_and_series_sorted_by_their_label_text() -> None:
    registry = MetricsRegistry()
    registry.record(tool_event('a"b\\c\n'))
    registry.record(tool_event("zeta", is_error=True))
    registry.record(tool_event("alpha"))
    registry.record(tool_event("ask", ms=0.0, is_error=False, pending=True))
    registry.record(tool_event("alpha"))

    assert lines_of(registry.render(), "toolnexus_tool_calls_total{") == [
        'toolnexus_tool_calls_total{tool="a\\"b\\\\c\\n",source="native",is_error="false",'
        'pending="false"} 1',
        'toolnexus_tool_calls_total{tool="alpha",source="native",is_error="false",'
        'pending="false"} 2',
        'toolnexus_tool_calls_total{tool="ask",source="native",is_error="false",pending="true"} 1',
        'toolnexus_tool_calls_total{tool="zeta",source="native",is_error="true",pending="false"} 1',
    ]
    counts = lines_of(registry.render(), "toolnexus_tool_duration_seconds_count")
    assert counts == [
        'toolnexus_tool_duration_seconds_count{tool="a\\"b\\\\c\\n"} 1',
        'toolnexus_tool_duration_seconds_count{tool="alpha"} 2',
        'toolnexus_tool_duration_seconds_count{tool="ask"} 1',
        'toolnexus_tool_duration_seconds_count{tool="zeta"} 1',
    ]


def test_an_observation_on_a_bound_falls_in_that_bucket_and_sums_format_as_numbers() -> None:
    registry = MetricsRegistry()
    registry.record(tool_event("t", ms=50))
    registry.record(tool_event("t", ms=950))
    text = registry.render()

    buckets = lines_of(text, "toolnexus_tool_duration_seconds_bucket")
    assert buckets[:3] == [
        'toolnexus_tool_duration_seconds_bucket{tool="t",le="0.05"} 1',
        'toolnexus_tool_duration_seconds_bucket{tool="t",le="0.1"} 1',
        'toolnexus_tool_duration_seconds_bucket{tool="t",le="0.25"} 1',
    ]
    assert buckets[4] == 'toolnexus_tool_duration_seconds_bucket{tool="t",le="1"} 2'
    assert lines_of(text, "toolnexus_tool_duration_seconds_sum") == [
        'toolnexus_tool_duration_seconds_sum{tool="t"} 1'
    ]
    registry.record(tool_event("t", ms=0.1))
    assert lines_of(registry.render(), "toolnexus_tool_duration_seconds_sum") == [
        f'toolnexus_tool_duration_seconds_sum{{tool="t"}} {0.05 + 0.95 + 0.0001!r}'
    ]


def test_failed_calls_count_requests_but_no_tokens_and_run_errors_count_by_model() -> None:
    registry = MetricsRegistry()
    registry.record({**LLM_OK, "status": "error", "prompt_tokens": 0, "completion_tokens": 0})
    registry.record({"event": "run", "model": "m", "turns": 1, "tool_calls": 0,
                     "total_tokens": 0, "ms": 3.5, "error": "boom"})  # fmt: skip
    registry.record({"event": "run", "model": "m", "turns": 1, "tool_calls": 0,
                     "total_tokens": 0, "ms": 3.5, "status": "done"})  # fmt: skip
    text = registry.render()

    assert lines_of(text, "toolnexus_llm_requests_total{") == [
        'toolnexus_llm_requests_total{model="m",status="error"} 1'
    ]
    assert lines_of(text, "toolnexus_llm_tokens_total{") == []
    assert lines_of(text, "toolnexus_llm_request_duration_seconds_count") == [
        'toolnexus_llm_request_duration_seconds_count{model="m"} 1'
    ]
    assert lines_of(text, "toolnexus_run_errors_total{") == [
        'toolnexus_run_errors_total{model="m"} 1'
    ]


def test_an_event_without_a_needed_field_is_refused_naming_it_and_other_kinds_ignored() -> None:
    registry = MetricsRegistry()
    with pytest.raises(ValueError, match="tool metric event has no 'source'"):
        registry.record({"event": "tool", "tool": "t", "is_error": False, "ms": 1})
    registry.record({"event": "custom", "anything": 1})
    assert registry.render() == HEADERS


def test_rendering_from_another_thread_while_recording_loses_nothing() -> None:
    registry = MetricsRegistry()
    stop = threading.Event()
    renders: list[str] = []

    def scrape() -> None:
        while not stop.is_set():
            renders.append(registry.render())

    def work(n: int) -> None:
        for i in range(2000):
            registry.record(tool_event(f"tool{n}-{i % 50}"))
            registry.record(LLM_OK)

    scraper = threading.Thread(target=scrape)
    scraper.start()
    workers = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
    stop.set()
    scraper.join(timeout=30)

    text = registry.render()
    assert 'toolnexus_llm_requests_total{model="m",status="ok"} 8000' in text
    assert len(lines_of(text, "toolnexus_tool_calls_total{")) == 200
    assert renders
    assert all(r.endswith("\n") for r in renders)


async def test_client_metrics_count_a_one_tool_run() -> None:
    stub = StubLLMServer(
        [
            reply.tool_calls(reply.call("get_weather", {"city": "Pune"}), usage=(10, 6)),
            reply.text("Sunny.", usage=(20, 4)),
        ]
    )
    with stub:
        client = create_client(stub.url, model="test-model", api_key="test-key")
        async with await create_toolkit(extra_tools=[get_weather], builtins=False) as tk:
            await client.run("Weather?", tk)
        await client.aclose()
    text = client.metrics()

    assert lines_of(text, "toolnexus_llm_requests_total{") == [
        'toolnexus_llm_requests_total{model="test-model",status="ok"} 2'
    ]
    assert lines_of(text, "toolnexus_llm_tokens_total{") == [
        'toolnexus_llm_tokens_total{type="completion"} 10',
        'toolnexus_llm_tokens_total{type="prompt"} 30',
    ]
    assert lines_of(text, "toolnexus_tool_calls_total{") == [
        'toolnexus_tool_calls_total{tool="get_weather",source="native",is_error="false",'
        'pending="false"} 1'
    ]
    assert client.metrics_registry.render() == text


async def test_clients_given_one_registry_count_together() -> None:
    registry = MetricsRegistry()
    with StubLLMServer([reply.text("a"), reply.text("b")]) as stub:
        first = create_client(stub.url, model="one", api_key="k", metrics_registry=registry)
        second = create_client(stub.url, model="two", api_key="k", metrics_registry=registry)
        await first.run("hi")
        await second.run("hi")
        await first.aclose()
        await second.aclose()

    assert first.metrics() == second.metrics() == registry.render()
    assert lines_of(registry.render(), "toolnexus_llm_requests_total{") == [
        'toolnexus_llm_requests_total{model="one",status="ok"} 1',
        'toolnexus_llm_requests_total{model="two",status="ok"} 1',
    ]
    with pytest.raises(ConfigError, match="metrics_registry"):
        create_client("http://127.0.0.1:9", model="m", api_key="k", metrics_registry={})  # type: ignore[arg-type]


async def test_a_suspended_call_and_a_failed_run_show_in_client_metrics() -> None:
    async def approve(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return pending(Request.new("approval", "May I?"))

    stub = StubLLMServer([reply.tool_calls(reply.call("approve")), reply.error(400, "bad")])
    with stub:
        client = create_client(stub.url, "anthropic", model="test-model", api_key="test-key")
        async with await toolkit_of(make_tool("approve", approve)) as tk:
            result = await client.run("go", tk)
            with pytest.raises(LLMError):
                await client.run("again", tk)
        await client.aclose()
    text = client.metrics()

    assert result.status == "pending"
    assert lines_of(text, "toolnexus_tool_calls_total{") == [
        'toolnexus_tool_calls_total{tool="approve",source="native",is_error="false",'
        'pending="true"} 1'
    ]
    assert lines_of(text, "toolnexus_run_errors_total{") == [
        'toolnexus_run_errors_total{model="test-model"} 1'
    ]
    assert lines_of(text, "toolnexus_llm_requests_total{") == [
        'toolnexus_llm_requests_total{model="test-model",status="error"} 1',
        'toolnexus_llm_requests_total{model="test-model",status="ok"} 1',
    ]

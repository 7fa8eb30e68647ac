"""Prometheus interop: the documented ``/metrics`` server scraped over HTTP and parsed by
``prometheus_client``'s own parser, and the collector read from a ``prometheus_client`` registry.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from toolnexus import Client, ConfigError, LLMError, MetricsRegistry, Toolkit, create_toolkit, tool
from toolnexus.prometheus import PrometheusCollector, register
from toolnexus.testing import StubLLMServer, reply

from .engine.support import client_for, get_weather

PAGE = Path(__file__).resolve().parent.parent / "docs" / "observability.md"


def docs_block(heading: str) -> str:
    """The first python code block after ``heading`` in the observability page."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(heading)
    match = re.search(r"```python\n(.*?)```", text[start:], re.DOTALL)
    assert match is not None, f"no python block after {heading!r}"
    return match.group(1)


@tool
def fail_always() -> str:
    """Always fails."""
    raise RuntimeError("no")


async def busy_client(stub: StubLLMServer, tk: Toolkit) -> Client:
    """A client after a one-tool run, a failing-tool run and a failed run."""
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Pune"}), usage=(10, 6)),
        reply.text("Sunny.", usage=(20, 4)),
        reply.tool_calls(reply.call("fail_always")),
        reply.text("It failed."),
        reply.error(400, "bad"),
    )
    client = client_for(stub, "openai")
    await client.run("Weather?", tk)
    await client.run("Try it", tk)
    with pytest.raises(LLMError, match="400"):
        await client.run("Again")
    return client


@pytest.fixture
async def kit() -> Any:
    async with await create_toolkit(extra_tools=[get_weather, fail_always], builtins=False) as tk:
        yield tk


def scrape(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


async def test_the_readme_metrics_server_serves_valid_exposition_text(
    stub: StubLLMServer, kit: Toolkit
) -> None:
    client = await busy_client(stub, kit)
    namespace: dict[str, Any] = {}
    exec(docs_block("## Serving `/metrics`"), namespace)
    server = namespace["serve_metrics"](client, port=0)
    try:
        port = server.server_address[1]
        content_type, text = await asyncio.to_thread(scrape, f"http://127.0.0.1:{port}/metrics")
    finally:
        server.shutdown()
        server.server_close()
        await client.aclose()

    assert content_type.startswith("text/plain; version=0.0.4")
    assert text == client.metrics()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    assert families["toolnexus_llm_requests"].type == "counter"
    assert families["toolnexus_llm_request_duration_seconds"].type == "histogram"
    assert (
        samples[("toolnexus_llm_requests_total", (("model", "test-model"), ("status", "ok")))] == 4
    )
    assert (
        samples[("toolnexus_llm_requests_total", (("model", "test-model"), ("status", "error")))]
        == 1
    )
    assert samples[("toolnexus_llm_tokens_total", (("type", "prompt"),))] == 30
    failing = (
        ("is_error", "true"),
        ("pending", "false"),
        ("source", "native"),
        ("tool", "fail_always"),
    )
    assert samples[("toolnexus_tool_calls_total", failing)] == 1
    assert samples[("toolnexus_run_errors_total", (("model", "test-model"),))] == 1
    count = ("toolnexus_tool_duration_seconds_count", (("tool", "get_weather"),))
    assert samples[count] == 1


async def test_the_collector_shows_toolnexus_series_in_a_prometheus_client_registry(
    stub: StubLLMServer, kit: Toolkit
) -> None:
    client = await busy_client(stub, kit)
    await client.aclose()
    registry = CollectorRegistry()
    collector = register(client, registry)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("toolnexus_llm_requests_total", model="test-model", status="ok") == 4
    assert value("toolnexus_llm_tokens_total", type="completion") == 10
    assert value("toolnexus_llm_request_duration_seconds_count", model="test-model") == 5
    assert (
        value("toolnexus_llm_request_duration_seconds_bucket", model="test-model", le="+Inf") == 5
    )
    assert (
        value(
            "toolnexus_tool_calls_total",
            tool="get_weather",
            source="native",
            is_error="false",
            pending="false",
        )
        == 1
    )
    assert value("toolnexus_run_errors_total", model="test-model") == 1
    parsed = {f.name for f in text_string_to_metric_families(generate_latest(registry).decode())}
    assert {"toolnexus_llm_requests", "toolnexus_tool_duration_seconds"} <= parsed

    with pytest.raises(ValueError, match="Duplicated"):
        register(MetricsRegistry(), registry)  # the same names twice: share one registry
    registry.unregister(collector)
    assert value("toolnexus_run_errors_total", model="test-model") is None


def test_the_collector_reads_the_registry_at_each_scrape() -> None:
    shared = MetricsRegistry()
    registry = CollectorRegistry()
    register(shared, registry)
    assert registry.get_sample_value("toolnexus_run_errors_total", {"model": "m"}) is None
    shared.record({"event": "run", "model": "m", "error": "boom"})
    assert registry.get_sample_value("toolnexus_run_errors_total", {"model": "m"}) == 1
    with pytest.raises(ConfigError, match="MetricsRegistry or a Client"):
        PrometheusCollector("not a registry")  # type: ignore[arg-type]


def test_metrics_without_the_collector_import_no_prometheus_client() -> None:
    script = textwrap.dedent(
        """
        import sys
        import toolnexus as tn
        client = tn.create_client("http://127.0.0.1:9", model="m", api_key="test-key")
        assert client.metrics().startswith("# HELP toolnexus_llm_requests_total")
        print(sorted(m for m in sys.modules if m.startswith("prometheus_client")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

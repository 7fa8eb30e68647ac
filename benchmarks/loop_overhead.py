"""Per-turn overhead of the agent loop, as ratios against baselines measured in the same run.

A stub provider runs in a separate process (so its CPU does not share our GIL) and always
answers immediately. We time, for the same number of round trips:

- ``raw aiohttp``: the baseline, one pooled aiohttp session posting a prebuilt body;
- ``run (json)``: ``client.run`` with a one-tool toolkit, one LLM round trip per run;
- ``raw sse``: the streaming baseline, the same session reading an SSE reply to its end;
- ``stream (sse)``: ``client.stream`` for the same;
- ``run, 3 turns``: two tool turns then an answer, per round trip;
- ``run via httpx``: ``client.run`` with an injected ``httpx.AsyncClient``;
- ``in-process``: ``client.run`` on ``create_in_process_client`` whose async ``generate``
  answers at once: the loop's own cost per turn with no HTTP at all.
- ``run + seam``: ``client.run`` through one pass-through ``Interceptor``;
- ``run + tracing``, ``stream + tracing``: a client under ``toolnexus.otel.instrument`` with an
  OpenTelemetry SDK ``TracerProvider`` (spans built and ended; no exporter, so what is measured
  is toolnexus plus the SDK, not a network).

Every client also counts its events in its ``MetricsRegistry``; the cost of one ``record`` is
printed at the end, measured on its own.

Usage: ``python benchmarks/loop_overhead.py [--requests 2000] [--concurrency 1]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

import toolnexus as tn

_SERVER = r"""
import sys, threading
from toolnexus.testing import StubLLMServer, reply

def handler(request):
    messages = (request.json or {}).get("messages") or []
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    wants_tools = "three turns" in str(messages[0].get("content", "")) if messages else False
    if wants_tools and turns < 2:
        return reply.tool_calls(reply.call("echo", {"text": "hi"}), usage=(10, 2))
    return reply.text("The answer is 42.", usage=(10, 5))

with StubLLMServer(handler=handler) as stub:
    print(stub.url, flush=True)
    sys.stdin.read()
"""


@tn.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


async def _timed(
    n: int, concurrency: int, one: Callable[[], Awaitable[object]]
) -> tuple[float, float]:
    """Wall seconds and client CPU seconds per call for ``n`` calls, ``concurrency`` at a time."""
    sem = asyncio.Semaphore(concurrency)

    async def guarded() -> None:
        async with sem:
            await one()

    for _ in range(20):  # warm up connections and caches
        await one()
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(guarded() for _ in range(n)))
    return (time.perf_counter() - started) / n, (time.process_time() - cpu) / n


async def measure(
    url: str, n: int, concurrency: int, rounds: int
) -> dict[str, tuple[float, float]]:
    import httpx

    tk = await tn.create_toolkit(extra_tools=[echo], builtins=False)
    client = tn.create_client(url, model="bench", api_key="bench-key")
    httpx_client = httpx.AsyncClient(limits=httpx.Limits(max_connections=None))
    via_httpx = tn.create_client(url, model="bench", api_key="bench-key", http_client=httpx_client)
    seamed = tn.create_client(url, model="bench", api_key="bench-key")
    seamed.add_interceptor(tn.Interceptor())
    seamed.add_interceptor(_PassThrough())
    traced = _traced(url)
    body = json.dumps(
        {
            "model": "bench",
            "messages": [{"role": "user", "content": "hello"}],
            "tools": tk.to_openai(),
            "tool_choice": "auto",
        }
    ).encode()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    headers = {"Authorization": "Bearer bench-key", "Content-Type": "application/json"}

    async def raw() -> None:
        async with session.post(url + "/chat/completions", data=body, headers=headers) as resp:
            json.loads(await resp.read())

    stream_body = json.dumps({**json.loads(body), "stream": True}).encode()

    async def raw_sse() -> None:
        async with session.post(
            url + "/chat/completions", data=stream_body, headers=headers
        ) as resp:
            async for _ in resp.content.iter_any():
                pass

    async def run_json() -> None:
        await client.run("hello", tk)

    async def run_stream() -> None:
        async for _ in client.stream("hello", tk):
            pass

    async def run_three() -> None:
        await client.run("three turns please", tk)

    async def run_httpx() -> None:
        await via_httpx.run("hello", tk)

    async def answer_at_once(request: dict[str, object]) -> dict[str, object]:
        return {
            "content": "The answer is 42.",
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }

    local = tn.create_in_process_client(model="bench", generate=answer_at_once)

    async def run_in_process() -> None:
        await local.run("hello", tk)

    async def run_seam() -> None:
        await seamed.run("hello", tk)

    async def run_traced() -> None:
        assert traced is not None
        await traced.run("hello", tk)

    async def stream_traced() -> None:
        assert traced is not None
        async for _ in traced.stream("hello", tk):
            pass

    cases: dict[str, tuple[Callable[[], Awaitable[object]], int]] = {
        "raw aiohttp": (raw, 1),
        "run (json)": (run_json, 1),
        "raw sse": (raw_sse, 1),
        "stream (sse)": (run_stream, 1),
        "run, 3 turns": (run_three, 3),
        "run via httpx": (run_httpx, 1),
        "in-process": (run_in_process, 1),
        "run + seam": (run_seam, 1),
    }
    if traced is not None:
        cases["run + tracing"] = (run_traced, 1)
        cases["stream + tracing"] = (stream_traced, 1)
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):  # interleave cases so machine noise hits them all alike
        for name, (fn, trips) in cases.items():
            seconds, cpu_seconds = await _timed(n // trips, concurrency, fn)
            wall[name].append(seconds / trips)
            cpu[name].append(cpu_seconds / trips)
    await session.close()
    await client.aclose()
    await via_httpx.aclose()
    await seamed.aclose()
    if traced is not None:
        await traced.aclose()
    await httpx_client.aclose()
    await tk.aclose()
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in cases}


class _PassThrough(tn.Interceptor):
    """Overrides every method and only passes through: the cost of the seam itself."""

    async def around_llm(self, call_next: Any, call: Any) -> Any:
        return await call_next(call)

    async def around_tool(self, call_next: Any, call: Any) -> Any:
        return await call_next(call)


def _traced(url: str) -> tn.Client | None:
    try:
        from opentelemetry.sdk.trace import TracerProvider

        from toolnexus.otel import instrument
    except ImportError:  # pragma: no cover - the otel extra and the SDK are optional
        print("opentelemetry-sdk not installed: no tracing cases")
        return None
    client = tn.create_client(url, model="bench", api_key="bench-key")
    return instrument(client, tracer_provider=TracerProvider())


def _record_cost() -> tuple[float, float]:
    """Seconds per ``MetricsRegistry`` record: of an ``llm`` event, of a ``tool`` event."""
    registry = tn.MetricsRegistry()
    n = 200_000
    started = time.perf_counter()
    for _ in range(n):
        registry.llm("bench", "ok", 12.5, 10, 5)
    llm = (time.perf_counter() - started) / n
    started = time.perf_counter()
    for _ in range(n):
        registry.tool("echo", "native", False, False, 0.3)
    return llm, (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        results = asyncio.run(measure(url, args.requests, args.concurrency, args.rounds))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
    base_wall, base_cpu = results["raw aiohttp"]
    print(f"requests={args.requests} concurrency={args.concurrency} rounds={args.rounds}")
    print("per LLM round trip; client CPU excludes the stub, which runs in another process")
    print(f"{'case':<16}{'wall':>10}{'ratio':>8}{'client CPU':>13}{'ratio':>8}")
    for name, (seconds, cpu_seconds) in results.items():
        print(
            f"{name:<16}{seconds * 1e6:>7.0f} us{seconds / base_wall:>7.2f}x"
            f"{cpu_seconds * 1e6:>10.0f} us{cpu_seconds / base_cpu:>7.2f}x"
        )
    llm, tool = _record_cost()
    print(f"MetricsRegistry record: llm event {llm * 1e9:.0f} ns, tool event {tool * 1e9:.0f} ns")


if __name__ == "__main__":
    main()

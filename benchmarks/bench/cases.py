"""The per-request cases: the fixed scenario, streaming, growth, MCP start-up, import time.

Each returns a dict of figures; ``ratio`` fields are the library's cost over the floor's, both
measured in the same rounds (interleaved, so machine noise hits both alike), medians over rounds.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import toolnexus as tn

from .common import (
    MCP_ANSWER,
    MCP_SERVER,
    PROMPT,
    PYTHON_ANSWER,
    Stub,
    add,
    checked,
    client,
    echo,
    mcp_config,
    med,
    pct,
    raw_http,
    timed,
)
from .floor import (
    AiohttpHTTP,
    RawHTTP,
    RawMCP,
    fixture_command,
    mcp_tools,
    python_tools,
    scenario,
    styled_scenario,
)


async def fixed_scenario(stub: Stub, kind: str, runs: int, rounds: int) -> dict[str, Any]:
    """Two round trips around two concurrent tool calls, one run at a time."""
    await stub.set(0)
    if kind == "mcp":
        tk = await tn.create_toolkit(mcp_config=mcp_config(), builtins=False, strict=True)
        mcp = RawMCP(fixture_command())
        await mcp.start()
        floor_tools, expected = mcp_tools(mcp, MCP_SERVER), MCP_ANSWER
    else:
        tk = await tn.create_toolkit(extra_tools=[echo, add], builtins=False)
        mcp = None
        floor_tools, expected = python_tools(), PYTHON_ANSWER
    schemas = tk.to_openai()
    ours, http, check = client(stub.url), raw_http(stub.url), checked(expected)
    via_aiohttp = AiohttpHTTP(stub.url)

    async def floor_run() -> None:
        check(await scenario(http, floor_tools, schemas, PROMPT))

    async def aiohttp_run() -> None:
        check(await scenario(via_aiohttp, floor_tools, schemas, PROMPT))

    async def our_run() -> None:
        check((await ours.run(PROMPT, tk)).text)

    try:
        result = await _versus(floor_run, our_run, runs, rounds, aiohttp_run)
        result["answers"] = sorted(check.seen)
    finally:
        http.close()
        await via_aiohttp.aclose()
        await ours.aclose()
        await tk.aclose()
        if mcp is not None:
            await mcp.close()
    return result


STYLES = ("openai", "anthropic", "responses", "gemini")


async def styles(stub: Stub, which: list[str], runs: int, rounds: int) -> dict[str, Any]:
    """The Python-tools scenario in each wire style: the floor speaks the same style in raw
    HTTP (and on aiohttp), with the same two round trips."""
    await stub.set(0)
    tk = await tn.create_toolkit(extra_tools=[echo, add], builtins=False)
    out: dict[str, Any] = {}
    try:
        for style in which:
            schemas = tn.dialects.dialect_for(style).tool_schemas(tk.tools())
            ours, check = client(stub.url, style), checked(PYTHON_ANSWER)
            http = RawHTTP(stub.url, style=style)
            via_aiohttp = AiohttpHTTP(stub.url, style=style)

            async def floor_run(
                http: RawHTTP = http,
                schemas: list[Any] = schemas,
                check: Any = check,
                style: str = style,
            ) -> None:
                check(await styled_scenario(http, style, python_tools(), schemas, PROMPT))

            async def aiohttp_run(
                via: AiohttpHTTP = via_aiohttp,
                schemas: list[Any] = schemas,
                check: Any = check,
                style: str = style,
            ) -> None:
                check(await styled_scenario(via, style, python_tools(), schemas, PROMPT))

            async def our_run(ours: tn.Client = ours, check: Any = check) -> None:
                check((await ours.run(PROMPT, tk)).text)

            try:
                result = await _versus(floor_run, our_run, runs, rounds, aiohttp_run)
                result["answers"] = sorted(check.seen)
                out[style] = result
            finally:
                http.close()
                await via_aiohttp.aclose()
                await ours.aclose()
    finally:
        await tk.aclose()
    return out


async def streaming(stub: Stub, runs: int, rounds: int) -> dict[str, Any]:
    """The scenario streamed (Python tools): every event read, against a raw SSE read."""
    await stub.set(0)
    tk = await tn.create_toolkit(extra_tools=[echo, add], builtins=False)
    schemas = tk.to_openai()
    ours, http, check = client(stub.url), raw_http(stub.url), checked(PYTHON_ANSWER)
    via_aiohttp = AiohttpHTTP(stub.url)

    async def floor_run() -> None:
        check(await scenario(http, python_tools(), schemas, PROMPT, stream=True))

    async def aiohttp_run() -> None:
        check(await scenario(via_aiohttp, python_tools(), schemas, PROMPT, stream=True))

    async def our_run() -> None:
        done = None
        async for event in ours.stream(PROMPT, tk):
            if isinstance(event, tn.DoneEvent):
                done = event.result.text
        check(str(done))

    try:
        result = await _versus(floor_run, our_run, runs, rounds, aiohttp_run)
        result["answers"] = sorted(check.seen)
        return result
    finally:
        http.close()
        await via_aiohttp.aclose()
        await ours.aclose()
        await tk.aclose()


async def _versus(
    floor_run: Any, our_run: Any, runs: int, rounds: int, aiohttp_run: Any
) -> dict[str, Any]:
    """The floor, the floor on aiohttp and ours, in interleaved rounds of ``runs`` each."""
    impls = (("floor", floor_run), ("floor_aiohttp", aiohttp_run), ("ours", our_run))
    for _ in range(max(3, runs // 10)):  # warm up: connections, caches, bytecode
        for _, fn in impls:
            await fn()
    rows: dict[str, dict[str, list[float]]] = {
        name: {"p50": [], "p95": [], "cpu": []} for name, _ in impls
    }
    for _ in range(rounds):
        for name, fn in impls:
            sample = await timed(runs, 1, fn)
            rows[name]["p50"].append(pct(sample.walls, 0.5))
            rows[name]["p95"].append(pct(sample.walls, 0.95))
            rows[name]["cpu"].append(sample.cpu / sample.n)
    out: dict[str, Any] = {name: {k: med(v) for k, v in row.items()} for name, row in rows.items()}
    out["ratio"] = {k: out["ours"][k] / out["floor"][k] for k in ("p50", "p95", "cpu")}
    out["vs_aiohttp"] = {k: out["ours"][k] / out["floor_aiohttp"][k] for k in ("p50", "p95", "cpu")}
    return out


def history_of(n: int) -> list[dict[str, Any]]:
    """A transcript of ``n`` messages, user and assistant in turn, each a paragraph long."""
    words = "the quick brown fox jumps over the lazy dog while the model thinks about it ".split()
    text = " ".join(words * 4)
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": f"{i}: {text}"} for i in range(n)]


def tools_of(n: int) -> list[tn.Tool]:
    """``n`` distinct Python tools of three typed arguments each."""

    def make(i: int) -> tn.Tool:
        async def lookup(city: str, days: int = 1, units: str = "metric") -> str:
            return city

        return tn.define_tool(
            lookup, name=f"lookup_{i}", description=f"Look up item {i} for a city over days."
        )

    return [make(i) for i in range(n)]


async def growth(stub: Stub, sizes: list[int], runs: int, rounds: int) -> dict[str, Any]:
    """CPU per one-turn run as the history and the toolkit grow, against ``json.dumps`` of the
    same body, and against the floor (``json.dumps`` + a raw POST + ``json.loads``)."""
    await stub.set(0)
    ours, http = client(stub.url), raw_http(stub.url)
    out: dict[str, Any] = {"history": {}, "tools": {}}
    try:
        for size in sizes:
            history = history_of(size)
            body = {"model": "bench", "messages": [*history, {"role": "user", "content": "next"}]}
            out["history"][str(size)] = await _turns(
                body, lambda h=history: ours.run("next", None, history=h), http, runs, rounds
            )
            tk = tn.Toolkit(tools_of(size))
            body = {
                "model": "bench",
                "messages": [{"role": "user", "content": "next"}],
                "tools": tk.to_openai(),
                "tool_choice": "auto",
            }
            out["tools"][str(size)] = await _turns(
                body, lambda t=tk: ours.run("next", t), http, runs, rounds
            )
    finally:
        http.close()
        await ours.aclose()
    return out


async def _turns(body: dict[str, Any], our_run: Any, http: Any, runs: int, rounds: int) -> Any:
    async def floor_run() -> None:
        reply = json.loads(await http.post(json.dumps(body).encode()))
        assert reply["choices"][0]["message"]["content"] == "ok"

    async def checked_run() -> None:
        result = await our_run()
        assert result.text == "ok", result.text

    dumps: list[float] = []
    floor: list[float] = []
    ours: list[float] = []
    await floor_run()
    await checked_run()
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(runs):
            json.dumps(body)
        dumps.append((time.process_time() - started) / runs)
        floor.append((await timed(runs, 1, floor_run)).cpu / runs)
        ours.append((await timed(runs, 1, checked_run)).cpu / runs)
    d, f, o = med(dumps), med(floor), med(ours)
    size = len(json.dumps(body))
    return {
        "body_bytes": size,
        "dumps": d,
        "floor": f,
        "ours": o,
        "ratio": o / d,
        "vs_floor": o / f,
    }


async def mcp_startup(rounds: int) -> dict[str, Any]:
    """Wall time to a listed toolkit: ours against the SDK's connect + initialize + list."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command = fixture_command()

    async def sdk() -> float:
        started = time.perf_counter()
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            elapsed = time.perf_counter() - started
        assert any(t.name == "echo" for t in listed.tools)
        return elapsed

    async def ours() -> float:
        started = time.perf_counter()
        tk = await tn.create_toolkit(mcp_config=mcp_config(), builtins=False, strict=True)
        elapsed = time.perf_counter() - started
        assert f"{MCP_SERVER}_echo" in {t.name for t in tk.tools()}
        await tk.aclose()
        return elapsed

    await sdk()
    await ours()
    floor: list[float] = []
    mine: list[float] = []
    for _ in range(rounds):
        floor.append(await sdk())
        mine.append(await ours())
    return {"sdk": med(floor), "ours": med(mine), "ratio": med(mine) / med(floor)}


def import_time(rounds: int) -> dict[str, Any]:
    """Seconds ``import toolnexus`` takes in a fresh interpreter (the interpreter's own start-up
    is not counted)."""
    code = "import time; t = time.perf_counter(); import toolnexus; print(time.perf_counter() - t)"
    seconds = []
    for _ in range(rounds + 1):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        seconds.append(float(out.stdout))
    return {"seconds": med(seconds[1:])}  # the first warms the file cache


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)

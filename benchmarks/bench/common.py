"""What every case shares: the stub process, the scenario's tools, timing helpers."""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import toolnexus as tn

from .floor import RawHTTP, fixture_command

PROMPT = "Echo hi and add 2 and 3, then tell me both results."
PYTHON_ANSWER = "echo said hi; add said 5."
MCP_ANSWER = PYTHON_ANSWER
MCP_SERVER = "fx"


@tn.tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@tn.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def mcp_config() -> dict[str, Any]:
    return {"mcpServers": {MCP_SERVER: {"command": fixture_command()}}}


class Stub:
    """The stub model process: its URL, and its control and stats endpoints."""

    def __init__(self) -> None:
        script = Path(__file__).with_name("stub.py")
        self.proc = subprocess.Popen(
            [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url:
            raise SystemExit("the stub model server did not start")
        self._root = self.url.removesuffix("/v1")

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        import aiohttp

        async with aiohttp.ClientSession() as session:
            async with session.request(method, self._root + path, json=body) as resp:
                return await resp.json()

    async def set(self, delay_ms: float = 0, gate: int = 0) -> None:
        await self._call("POST", "/control", {"delay_ms": delay_ms, "gate": gate})

    async def stats(self) -> dict[str, int]:
        result: dict[str, int] = await self._call("GET", "/stats")
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@dataclass
class Sample:
    """One round of ``n`` runs: wall seconds of each, and the totals."""

    walls: list[float]
    wall: float
    cpu: float

    @property
    def n(self) -> int:
        return len(self.walls)


async def timed(n: int, concurrency: int, one: Callable[[], Awaitable[object]]) -> Sample:
    """``n`` calls of ``one``, at most ``concurrency`` at a time."""
    sem = asyncio.Semaphore(concurrency)
    walls: list[float] = []

    async def guarded() -> None:
        async with sem:
            started = time.perf_counter()
            await one()
            walls.append(time.perf_counter() - started)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(guarded() for _ in range(n)))
    return Sample(walls, time.perf_counter() - started, time.process_time() - cpu)


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def med(values: list[float]) -> float:
    return statistics.median(values)


class Checked:
    """Raises when a scenario's answer is not ``expected``; keeps every answer it saw."""

    def __init__(self, expected: str) -> None:
        self.expected = expected
        self.seen: set[str] = set()

    def __call__(self, answer: str) -> None:
        self.seen.add(answer)
        if answer != self.expected:
            raise SystemExit(f"wrong final answer: {answer!r}, expected {self.expected!r}")


def checked(expected: str) -> Checked:
    return Checked(expected)


def body_bytes(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def client(url: str, style: str = "openai") -> tn.Client:
    return tn.create_client(url, style, model="bench", api_key="bench-key")  # type: ignore[arg-type]


def raw_http(url: str) -> RawHTTP:
    return RawHTTP(url)

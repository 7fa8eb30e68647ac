"""Many conversations at once: the fixed scenario (Python tools) with C runs in flight.

For each C and model delay, in interleaved rounds, the floor and the library each complete
``runs`` scenarios with at most C in flight: runs/s, p50/p95 per run, CPU per run, and the most
requests the stub held at once. Then a probe: the stub holds every run's first request until C
are in flight at once (or its gate times out), which shows whether anything of ours caps the
requests in flight, and, under ``tracemalloc``, what memory each run in flight holds.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from typing import Any

import toolnexus as tn

from .common import (
    PROMPT,
    PYTHON_ANSWER,
    Stub,
    add,
    checked,
    client,
    echo,
    med,
    pct,
    raw_http,
    timed,
)
from .floor import python_tools, scenario


async def concurrency(
    stub: Stub, levels: list[int], delays: list[int], rounds: int, smoke: bool
) -> dict[str, Any]:
    tk = await tn.create_toolkit(extra_tools=[echo, add], builtins=False)
    schemas = tk.to_openai()
    ours, http, check = client(stub.url), raw_http(stub.url), checked(PYTHON_ANSWER)

    async def floor_run() -> None:
        check(await scenario(http, python_tools(), schemas, PROMPT))

    async def our_run() -> None:
        check((await ours.run(PROMPT, tk)).text)

    impls = (("floor", floor_run), ("ours", our_run))
    out: dict[str, Any] = {}
    try:
        await stub.set(0)
        for _, fn in impls:  # warm up
            await asyncio.gather(*(fn() for _ in range(min(20, max(levels)))))
        for delay in delays:
            for level in levels:
                runs = 2 * level if smoke else max(2 * level, 100 if delay == 0 else 20)
                out[f"{delay}ms/C={level}"] = await _level(stub, impls, level, delay, runs, rounds)
        out["answers"] = sorted(check.seen)
    finally:
        http.close()
        await ours.aclose()
        await tk.aclose()
    return out


async def _level(
    stub: Stub, impls: Any, level: int, delay: int, runs: int, rounds: int
) -> dict[str, Any]:
    await stub.set(delay)
    rows: dict[str, dict[str, list[float]]] = {
        name: {"runs_per_s": [], "p50": [], "p95": [], "cpu": [], "max_in_flight": [], "gc_cpu": []}
        for name, _ in impls
    }
    for _ in range(rounds):
        for name, fn in impls:
            await stub.stats()  # resets the counters
            with _GcClock() as in_gc:
                sample = await timed(runs, level, fn)
            seen = await stub.stats()
            row = rows[name]
            row["runs_per_s"].append(sample.n / sample.wall)
            row["p50"].append(pct(sample.walls, 0.5))
            row["p95"].append(pct(sample.walls, 0.95))
            row["cpu"].append(sample.cpu / sample.n)
            row["max_in_flight"].append(seen["max_in_flight"])
            row["gc_cpu"].append(in_gc.seconds / sample.n)
    out: dict[str, Any] = {name: {k: med(v) for k, v in row.items()} for name, row in rows.items()}
    for name, fn in impls:
        out[name].update(await _probe(stub, fn, level, delay))
    out["share_of_floor_rate"] = out["ours"]["runs_per_s"] / out["floor"]["runs_per_s"]
    out["cpu_ratio"] = out["ours"]["cpu"] / out["floor"]["cpu"]
    await stub.set(0)
    return out


async def _probe(stub: Stub, fn: Any, level: int, delay: int) -> dict[str, Any]:
    """Start ``level`` runs at once with the stub's gate at ``level``: the most first requests
    in flight together, and the traced memory per run at that peak."""
    await stub.set(delay, gate=level)
    await stub.stats()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await asyncio.gather(*(fn() for _ in range(level)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    seen = await stub.stats()
    await stub.set(delay)
    return {"first_in_flight": seen["max_in_flight"], "bytes_per_run": (peak - before) / level}


class _GcClock:
    """CPU seconds the cyclic garbage collector spends while the block runs."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def _track(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started

    def __enter__(self) -> _GcClock:
        gc.callbacks.append(self._track)
        return self

    def __exit__(self, *exc_info: object) -> None:
        gc.callbacks.remove(self._track)

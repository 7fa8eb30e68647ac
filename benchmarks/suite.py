"""The performance suite: every cost of the library as a ratio to a floor measured in the same run.

Usage: ``python benchmarks/suite.py [--smoke] [--out DIR] [--only CASE,...]``

The floor is the least code that makes the same round trips: HTTP/1.1 on plain asyncio streams
and MCP as raw JSON-RPC over the server's pipes (``bench/floor.py``). The model is a stub in its
own process (``bench/stub.py``), so its CPU is never counted as ours. Cases (medians over
``--rounds`` interleaved rounds):

- ``scenario_mcp``, ``scenario_python``: two round trips around two concurrent tool calls,
  on the bundled MCP fixture server or on Python tools; p50/p95 wall and CPU per run;
- ``styles``: the Python scenario in each wire style (``--styles``, default all four), the floor
  speaking the same style;
- ``streaming``: the Python scenario streamed, CPU per run, against a raw SSE read;
- ``concurrency``: C = 1, 50, 200, 1000 runs in flight with a 0 ms and a 50 ms model;
- ``growth``: CPU per turn with 10/100/1000 messages of history, and 10/100/1000 tools,
  against ``json.dumps`` of the same body;
- ``mcp_startup``: a toolkit on the fixture server against the ``mcp`` SDK's own client;
- ``import``: ``import toolnexus`` in a fresh interpreter.

Writes ``results.json``, ``results.md`` and ``results.png`` (with the ``bench`` extra's
matplotlib) to ``--out`` (default ``benchmarks/results``). ``--smoke`` runs every case tiny and
checks the answers, for CI: its figures mean nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench import cases
from bench.common import Stub
from bench.concurrency import concurrency
from bench.report import chart, table

CASES = (
    "import",  # first, while nothing else has run on the machine
    "scenario_mcp",
    "scenario_python",
    "styles",
    "streaming",
    "concurrency",
    "growth",
    "mcp_startup",
)


async def measure(args: argparse.Namespace, stub: Stub) -> dict[str, Any]:
    smoke, rounds = args.smoke, args.rounds
    runs = 3 if smoke else args.runs
    results: dict[str, Any] = {}
    only = set(args.only.split(",")) if args.only else set(CASES)
    for name in CASES:
        if name not in only:
            continue
        started = time.perf_counter()
        if name == "scenario_mcp":
            results[name] = await cases.fixed_scenario(stub, "mcp", runs, rounds)
        elif name == "scenario_python":
            results[name] = await cases.fixed_scenario(stub, "python", runs, rounds)
        elif name == "styles":
            which = args.styles.split(",") if args.styles else list(cases.STYLES)
            results[name] = await cases.styles(stub, which, runs, rounds)
        elif name == "streaming":
            results[name] = await cases.streaming(stub, runs, rounds)
        elif name == "concurrency":
            levels = [1, 8] if smoke else [1, 50, 200, 1000]
            results[name] = await concurrency(stub, levels, [0, 50], rounds, smoke)
        elif name == "growth":
            sizes = [10, 100] if smoke else [10, 100, 1000]
            results[name] = await cases.growth(stub, sizes, 2 if smoke else 50, rounds)
        elif name == "mcp_startup":
            results[name] = await cases.mcp_startup(rounds)
        else:
            results[name] = await asyncio.to_thread(cases.import_time, 1 if smoke else 7)
        print(f"{name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="every case tiny; checks answers")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results"))
    parser.add_argument("--rounds", type=int, default=None, help="default 5 (smoke: 1)")
    parser.add_argument("--runs", type=int, default=200, help="scenario runs per round")
    parser.add_argument(
        "--styles", default="", help="comma-separated wire styles of the styles case (default all)"
    )
    parser.add_argument("--only", default="", help=f"comma-separated subset of {', '.join(CASES)}")
    args = parser.parse_args()
    if args.rounds is None:
        args.rounds = 1 if args.smoke else 5
    load = os.getloadavg()
    stub = Stub()
    try:
        results = asyncio.run(measure(args, stub))
    finally:
        stub.close()
    results["machine"] = {
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load_before": load,
        "load_after": os.getloadavg(),
        "smoke": args.smoke,
        "rounds": args.rounds,
        "runs": args.runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    text = table(results)
    (args.out / "results.md").write_text(text)
    drawn = chart(results, args.out / "results.png")
    print(text)
    print(f"written to {args.out}" + ("" if drawn else " (no chart: matplotlib not installed)"))


if __name__ == "__main__":
    main()

"""A served toolkit under load: 50 MCP clients at once, 20 tool calls each, over HTTP.

Run: ``python benchmarks/mcp_serve_load.py [--clients N] [--calls N] [--rounds N]
[--before-src DIR]``. The toolkit (one ``echo`` tool) is served by ``tk.serve`` in a child
process; every client is the MCP SDK's own streamable HTTP client with its own session, and
all clients call at the same time. Reports whether every call was answered correctly, the
per-call latency (p50, p99, max) and the throughput, for each server:

- ``auth``: ``auth=[token]`` on, every client sending its bearer token, the default limits;
- ``no auth``: the same server without ``auth`` (the limits and Host checks still on);
- ``before`` (with ``--before-src DIR``): the server from another source tree, e.g. a checkout
  from before the safety gate (``git worktree add /tmp/before <commit>``, then
  ``--before-src /tmp/before/src``).

Servers take turns for ``--rounds`` rounds; the figures are medians over rounds, and the cost
of auth and the limits is the ratio of ``auth`` to ``before`` (else to ``no auth``). The
server's own CPU time per call (measured in the server process) is the steady figure on a
busy machine; latency and throughput move with whatever else runs there. Latency
includes the client's side of each request (the SDK client is not free), and on a small
machine both processes share the same cores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SERVER = """
import asyncio, sys, time
import toolnexus as tn

@tn.tool
async def echo(text: str) -> str:
    "Return the text unchanged."
    return text

async def main():
    options = {"auth": [sys.argv[1]]} if len(sys.argv) > 1 else {}
    handle = await tn.Toolkit([echo]).serve("127.0.0.1:0", mcp={}, **options)
    print(handle.url, flush=True)
    started = time.process_time()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    print(time.process_time() - started, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await handle.aclose()

asyncio.run(main())
"""


TOKEN = "bench-token-5f2c"


async def _client(url: str, n: int, calls: int, latencies: list[float], token: str | None) -> int:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    answered = 0
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for i in range(calls):
            text = f"client {n} call {i}"
            started = time.perf_counter()
            result = await session.call_tool("echo", {"text": text})
            latencies.append((time.perf_counter() - started) * 1000.0)
            if not result.is_error and result.content[0].text == text:  # type: ignore[union-attr]
                answered += 1
    return answered


async def _load(url: str, clients: int, calls: int, token: str | None) -> dict[str, float]:
    latencies: list[float] = []
    started = time.perf_counter()
    answered = await asyncio.gather(
        *(_client(url, n, calls, latencies, token) for n in range(clients))
    )
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "answered": sum(answered),
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)],
        "max": ordered[-1],
        "throughput": clients * calls / elapsed,
    }


def _run_server(src: str | None, token: str | None, clients: int, calls: int) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    argv = [sys.executable, "-c", SERVER, *([token] if token else [])]
    server = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert server.stdout is not None
        assert server.stdin is not None
        url = server.stdout.readline().strip() + "/mcp"
        figures = asyncio.run(_load(url, clients, calls, token))
        server.stdin.write("done\n")
        server.stdin.flush()
        cpu_s = float(server.stdout.readline())
        figures["server_cpu_ms"] = cpu_s * 1000.0 / (clients * calls)
        return figures
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before-src", help="source tree of the server to compare against")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    servers: dict[str, tuple[str | None, str | None]] = {
        "auth": (here, TOKEN),
        "no auth": (here, None),
    }
    if args.before_src:
        servers["before"] = (args.before_src, None)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    for _ in range(args.rounds):
        for name, (src, token) in servers.items():
            runs[name].append(_run_server(src, token, args.clients, args.calls))
    total = args.clients * args.calls
    summary: dict[str, dict[str, Any]] = {}
    print(f"clients {args.clients} x calls {args.calls}, medians over {args.rounds} rounds")
    for name, results in runs.items():
        median = {k: statistics.median(r[k] for r in results) for k in results[0]}
        summary[name] = median
        answered = min(int(r["answered"]) for r in results)
        print(
            f"{name:>8}: {answered}/{total} answered (worst round); latency ms p50 "
            f"{median['p50']:.1f} p99 {median['p99']:.1f} max {median['max']:.1f}; "
            f"{median['throughput']:.0f} calls/s; server CPU {median['server_cpu_ms']:.2f} ms/call"
        )
    base = "before" if "before" in summary else "no auth"
    ratio_p50 = summary["auth"]["p50"] / summary[base]["p50"]
    ratio_tp = summary[base]["throughput"] / summary["auth"]["throughput"]
    ratio_cpu = summary["auth"]["server_cpu_ms"] / summary[base]["server_cpu_ms"]
    print(
        f"auth + limits vs {base}: server CPU per call {ratio_cpu:.2f}x, p50 latency "
        f"{ratio_p50:.2f}x, time per call (1/throughput) {ratio_tp:.2f}x"
    )


if __name__ == "__main__":
    main()

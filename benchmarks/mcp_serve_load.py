"""A served toolkit under load: 50 MCP clients at once, 20 tool calls each, over HTTP.

Run: ``python benchmarks/mcp_serve_load.py [--clients N] [--calls N]``. The toolkit (one
``echo`` tool) is served by ``tk.serve`` in a child process; every client is the MCP SDK's own
streamable HTTP client with its own session, and all clients call at the same time. Reports
whether every call was answered correctly, the per-call latency (p50, p99, max) and the
throughput. Latency includes the client's side of each request (the SDK client is not free),
and on a small machine both processes share the same cores.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

SERVER = """
import asyncio, sys
import toolnexus as tn

@tn.tool
async def echo(text: str) -> str:
    "Return the text unchanged."
    return text

async def main():
    handle = await tn.Toolkit([echo]).serve("127.0.0.1:0", mcp={})
    print(handle.url, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await handle.aclose()

asyncio.run(main())
"""


async def _client(url: str, n: int, calls: int, latencies: list[float]) -> int:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    answered = 0
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for i in range(calls):
            text = f"client {n} call {i}"
            started = time.perf_counter()
            result = await session.call_tool("echo", {"text": text})
            latencies.append((time.perf_counter() - started) * 1000.0)
            if not result.is_error and result.content[0].text == text:  # type: ignore[union-attr]
                answered += 1
    return answered


async def _load(url: str, clients: int, calls: int) -> None:
    latencies: list[float] = []
    started = time.perf_counter()
    answered = await asyncio.gather(*(_client(url, n, calls, latencies) for n in range(clients)))
    elapsed = time.perf_counter() - started
    total = clients * calls
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]
    print(f"clients {clients} x calls {calls}: {sum(answered)}/{total} answered correctly")
    print(f"latency ms: p50 {statistics.median(ordered):.1f}  p99 {p99:.1f}  max {ordered[-1]:.1f}")
    print(f"throughput: {total / elapsed:.0f} calls/s ({elapsed:.2f} s in all)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        assert server.stdin is not None
        url = server.stdout.readline().strip() + "/mcp"
        asyncio.run(_load(url, args.clients, args.calls))
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()

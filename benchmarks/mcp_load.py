"""How long building a toolkit takes with 1 and with 5 stdio MCP servers.

Run: ``python benchmarks/mcp_load.py [--rounds N]``. Two kinds of server, each measured three
ways in the same run (median over the rounds of ``create_toolkit`` alone):

- ``1 server``: one server;
- ``5 together``: five servers in one config (connected concurrently);
- ``5 in a row``: the baseline, five toolkits of one server built one after another.

``fixture`` is the bundled SDK-based server, whose start-up is mostly CPU (importing the MCP
SDK): on a machine with fewer cores than servers that CPU is shared, which sets the floor of
the ratio. ``slow-start`` is a minimal server that waits 1 s before answering, which isolates
what concurrency buys when start-up is waiting (a package download, a remote handshake).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolnexus import create_toolkit
from toolnexus.testing import mcp_server_command

SLOW_START = """
import json, sys, time
time.sleep(1.0)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "slow", "version": "1"},
        }
    else:
        result = {"tools": [{"name": "noop", "inputSchema": {"type": "object"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


async def build(command: list[str], servers: int) -> float:
    config: dict[str, Any] = {"mcpServers": {f"s{i}": {"command": command} for i in range(servers)}}
    started = time.perf_counter()
    toolkit = await create_toolkit(mcp_config=config, builtins=False)
    elapsed = time.perf_counter() - started
    statuses = set(toolkit.mcp_status().values())
    await toolkit.aclose()
    if statuses != {"connected"}:
        raise SystemExit(f"a server failed to connect: {toolkit.mcp_status()}")
    return elapsed


async def in_a_row(command: list[str], servers: int) -> float:
    return sum([await build(command, 1) for _ in range(servers)])


async def measure(name: str, command: list[str], rounds: int) -> None:
    await build(command, 1)  # warm-up: bytecode caches, first spawn
    one, together, sequential = [], [], []
    for _ in range(rounds):  # interleaved, so machine noise hits all three alike
        one.append(await build(command, 1))
        together.append(await build(command, 5))
        sequential.append(await in_a_row(command, 5))
    o, t, s = (statistics.median(v) * 1000 for v in (one, together, sequential))
    print(f"{name:<11}{o:>9.0f} ms{t:>11.0f} ms{s:>11.0f} ms{t / o:>11.2f}x{t / s:>11.2f}x")


async def main(rounds: int) -> None:
    import mcp.client.session
    import mcp.client.stdio  # noqa: F401  # load the SDK before timing

    print(f"cores: {os.cpu_count()}, rounds: {rounds}, median build time")
    print(
        f"{'server':<11}{'1 server':>12}{'5 together':>14}{'5 in a row':>14}"
        f"{'5tog/1':>12}{'5tog/row':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "slow_start.py"
        script.write_text(SLOW_START)
        await measure("slow-start", [sys.executable, str(script)], rounds)
    await measure("fixture", mcp_server_command(), rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args().rounds))

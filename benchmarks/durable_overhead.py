"""What a durable run costs over a plain one, and how long a killed run takes to recover.

Same scenario for both: three tool turns then an answer (four model calls, three tool
executions) against a ``StubLLMServer`` in this process that answers at once. We time ``runs``
plain ``client.run`` calls, then as many ``DBOSAgent.run`` calls on a SQLite system database in
a temporary directory (DBOS's embedded default), and print the mean per run and the difference.

Recovery: a worker process starts the same run and is SIGKILLed while its second model call
hangs; we time a fresh process from its start until it prints the recovered result (Python
start, DBOS launch and recovery, and the three remaining model calls), and, separately, the same
fresh-process path for a run that is already finished (the fixed cost of a process + launch).

Usage: ``python benchmarks/durable_overhead.py [--runs 50]`` (from the repository root)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from dbos import DBOS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.durable.crash import kill, result_of, script, start
from tests.durable.worker import side_effect_tool

from toolnexus import Toolkit, create_client
from toolnexus.durable import DBOSAgent
from toolnexus.testing import StubLLMServer, reply


def replies(runs: int) -> list[reply.Reply]:
    one = [r for i, r in enumerate(script()) if i != 1]
    return one * runs


async def per_run(runs: int, work: Path) -> tuple[float, float]:
    with StubLLMServer(replies(2 * runs)) as stub:
        tools = Toolkit([side_effect_tool(work, n) for n in ("one", "two", "three")])
        async with create_client(stub.url, "openai", model="m", api_key="k") as client:
            started = time.perf_counter()
            for _ in range(runs):
                await client.run("go", tools)
            plain = (time.perf_counter() - started) / runs
        async with create_client(stub.url, "openai", model="m", api_key="k") as client:
            agent = DBOSAgent(client, tools, name="bench")
            DBOS(
                config={
                    "name": "bench",
                    "system_database_url": f"sqlite:///{work}/b.sqlite",
                    "log_level": "WARNING",
                }
            )
            DBOS.launch()
            try:
                started = time.perf_counter()
                for i in range(runs):
                    await agent.run("go", workflow_id=f"bench-{i}")
                durable = (time.perf_counter() - started) / runs
            finally:
                DBOS.destroy(destroy_registry=True)
    return plain, durable


async def recovery(work: Path) -> tuple[float, float]:
    db = f"sqlite:///{work}/r.sqlite"
    with StubLLMServer(script() + script()[:1] + script()[2:]) as stub:
        first = await start(db, stub.url, str(work), "r-1", "run")
        await stub.until_requests(2, 60)
        await kill(first)
        started = time.perf_counter()
        await result_of(await start(db, stub.url, str(work), "r-1", "recover"))
        recovered = time.perf_counter() - started
        await result_of(await start(db, stub.url, str(work), "r-2", "run"))
        started = time.perf_counter()
        await result_of(await start(db, stub.url, str(work), "r-2", "recover"))
        finished = time.perf_counter() - started
    return recovered, finished


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain, durable = await per_run(args.runs, Path(tmp))
        recovered, finished = await recovery(Path(tmp))
    print(f"plain run   : {plain * 1000:8.2f} ms/run (4 model calls, 3 tools)")
    print(f"durable run : {durable * 1000:8.2f} ms/run (SQLite system database)")
    print(f"overhead    : {(durable - plain) * 1000:8.2f} ms/run, x{durable / plain:.2f}")
    print(f"recovery    : {recovered:8.2f} s (new process until the killed run's result)")
    print(f"  of which a finished run's fixed cost (process + DBOS launch): {finished:.2f} s")


if __name__ == "__main__":
    asyncio.run(main())

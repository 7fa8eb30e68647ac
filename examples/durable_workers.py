"""Many workers, one queue: a run started on one worker finishes on another after the first dies.

``python examples/durable_workers.py [POSTGRES_URL]`` (else ``$POSTGRES_URL``, else
``postgresql://postgres@127.0.0.1:5432/postgres``; the demo makes a database of its own on that
server and drops it at the end).

Every worker is this script in ``worker`` mode: it creates the same ``DBOSAgent`` (before
``DBOS.launch()``), launches DBOS with PostgreSQL as the system database and an executor id of
its own, registers the ``agent-runs`` queue, and takes runs from it. The demo starts worker A,
which puts a refund on the queue and takes it; once the refund's ``charge`` tool has run (its
side effect is a line in ``ledger.txt``), worker B starts and A is SIGKILLed while it waits for
the model. B finishes the run: the recorded model replies and the recorded ``charge`` result are
replayed, so the card is charged once and the model is not asked again what it already answered.

How a run of a dead worker reaches a live one, with DBOS as a plain library (no control plane):

- All workers share the system database, the application name and the same code. DBOS derives
  an application version from the source of the registered workflows and a worker only takes
  runs of its own version, so workers of one deploy share runs and an older deploy's runs wait
  for a worker of that deploy.
- Each worker has a stable executor id (``"executor_id"`` in the DBOS config, or the
  ``DBOS__VMID`` variable), e.g. its host or pod name. A worker that takes a run from the queue
  marks it ``PENDING`` under its id. Queue workers only take ``ENQUEUED`` runs, and
  ``DBOS.launch()`` recovers only the runs of its own executor id, so when a worker dies nothing
  picks its runs up by itself.
- A worker restarted under the same executor id puts its unfinished runs back on their queue
  at launch, and whichever worker is free takes them. A worker that will not come back (scaled
  down, machine gone) is taken over: whatever knows that it is dead (your supervisor, a health
  check, an operator) calls ``take_over`` below, which puts that executor's ``PENDING`` runs back
  on the queue with ``resume_workflow``; a ``DBOSClient`` does it from outside any worker.
- Only take over a worker that is really gone: a run of a live worker put back on the queue
  runs twice at once. DBOS notices at the next recorded step and stops the second copy, but a
  tool in flight may run twice; so may the tool that was running when a worker died (at least
  once, never lost). Make such tools idempotent, e.g. a refund keyed by its order.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from dbos import DBOS, DBOSClient
from psycopg import sql

from toolnexus import Toolkit, create_client, tool
from toolnexus.durable import DBOSAgent
from toolnexus.testing import StubLLMServer, reply

APP = "refunds"
QUEUE = "agent-runs"
RUN = "refund-42"
LIMIT = 60.0
"""Seconds any one wait of the demo may take."""


def make_tools(work: Path) -> Toolkit:
    """The agent's tools; their side effects are lines appended to files in ``work``."""

    @tool
    def charge(order: str, cents: int) -> str:
        """Refund an order to the customer's card."""
        with (work / "ledger.txt").open("a") as ledger:
            ledger.write(f"refund {order} {cents}\n")
        return f"refunded {cents} cents for {order}"

    @tool
    def send_receipt(order: str) -> str:
        """Email the customer a receipt for a refund."""
        with (work / "outbox.txt").open("a") as outbox:
            outbox.write(f"receipt {order}\n")
        return "receipt sent"

    return Toolkit([charge, send_receipt])


async def worker(executor_id: str, system_db: str, llm_url: str, work: str, submit: bool) -> None:
    """One worker. A real one serves until it is stopped; this one until the demo's run ends."""
    client = create_client(llm_url, model="test-model", api_key="test-key")
    agent = DBOSAgent(client, make_tools(Path(work)), name="refunds")
    DBOS(
        config={
            "name": APP,
            "system_database_url": system_db,
            "executor_id": executor_id,
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    try:
        queue = await DBOS.register_queue_async(QUEUE, worker_concurrency=4)
        print("ready", flush=True)
        if submit:  # any process may enqueue; here the first worker takes the request in
            await agent.enqueue(queue, "Refund order 42 (1999 cents).", workflow_id=RUN)
        async with asyncio.timeout(LIMIT):
            handle = await DBOS.retrieve_workflow_async(RUN)
            result = await handle.get_result()
            status = await handle.get_status()
        print(json.dumps({"executor": status.executor_id, "text": result["text"]}), flush=True)
    finally:
        await client.aclose()
        DBOS.destroy()


async def take_over(client: DBOSClient, dead_executor: str) -> list[str]:
    """Put the unfinished runs of a worker that is gone back on the queue; returns their ids."""
    runs = await client.list_workflows_async(
        status="PENDING", executor_id=dead_executor, load_input=False, load_output=False
    )
    for run in runs:
        await client.resume_workflow_async(run.workflow_id, queue_name=QUEUE)
    return [run.workflow_id for run in runs]


async def start(
    name: str, system_db: str, llm_url: str, work: str, *flags: str
) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "worker",
        name,
        system_db,
        llm_url,
        work,
        *flags,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    async with asyncio.timeout(LIMIT):
        line = await process.stdout.readline()
    assert line.strip() == b"ready", f"{name} did not start"
    return process


async def demo(system_db: str) -> None:
    script = [
        reply.tool_calls(reply.call("charge", {"order": "42", "cents": 1999})),
        # worker A dies while waiting for this reply; worker B asks again and gets the next one
        reply.tool_calls(reply.call("send_receipt", {"order": "42"})).with_delay(LIMIT),
        reply.tool_calls(reply.call("send_receipt", {"order": "42"})),
        reply.text("Order 42 is refunded and the receipt is on its way."),
    ]
    client = DBOSClient(system_database_url=system_db)
    workers: list[asyncio.subprocess.Process] = []
    with tempfile.TemporaryDirectory() as work, StubLLMServer(script) as stub:
        try:
            workers.append(await start("worker-a", system_db, stub.url, work, "submit"))
            await stub.until_requests(2, LIMIT)  # A has charged the card and waits for the model
            workers.append(await start("worker-b", system_db, stub.url, work))
            workers[0].send_signal(signal.SIGKILL)
            async with asyncio.timeout(LIMIT):
                await workers[0].wait()

            taken = await take_over(client, "worker-a")

            async with asyncio.timeout(LIMIT):
                out, _ = await workers[1].communicate()
            finished = json.loads(out.decode().splitlines()[-1])
            ledger = (Path(work) / "ledger.txt").read_text().splitlines()
            outbox = (Path(work) / "outbox.txt").read_text().splitlines()
        finally:
            for process in workers:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            client.destroy()
    assert taken == [RUN]
    assert finished["executor"] == "worker-b"
    assert ledger == ["refund 42 1999"], ledger  # charged once, by worker A
    assert outbox == ["receipt 42"], outbox
    assert len(stub.requests) == 4  # A's two, then only the one A never got an answer to
    print(f"ok: {RUN} started on worker-a, finished on {finished['executor']}: {finished['text']}")


def main(dsn: str) -> None:
    name = f"toolnexus_example_{secrets.token_hex(4)}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        asyncio.run(demo(urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))))
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            admin.execute(drop.format(sql.Identifier(name)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        executor, db, url, work_dir = sys.argv[2:6]
        asyncio.run(worker(executor, db, url, work_dir, sys.argv[6:7] == ["submit"]))
    else:
        main(
            sys.argv[1]
            if len(sys.argv) > 1
            else os.environ.get("POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
        )

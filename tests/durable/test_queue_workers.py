"""Worker processes share runs through a DBOS queue on PostgreSQL: a run started on one
finishes on another after the first is killed, or on the first's replacement under the same
executor id, repeating no finished tool or model call."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from toolnexus.testing import StubLLMServer

from ..stores.services import POSTGRES_DSN, need
from .crash import LIMIT, kill, marks, result_of, script, start, until_requests

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowHandleAsync

dbos = pytest.importorskip("dbos")
psycopg = pytest.importorskip("psycopg")

QUEUE = "agent-runs"
WORKER = "tests.durable.queue_worker"


@pytest.fixture
def system_db() -> Iterator[str]:
    """A PostgreSQL database of its own for DBOS's system tables, dropped afterwards."""
    need(POSTGRES_DSN, 5432, "PostgreSQL")
    name = f"toolnexus_dbos_{secrets.token_hex(6)}"
    ident = psycopg.sql.Identifier(name)
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(ident))
    try:
        yield urlunsplit(urlsplit(POSTGRES_DSN)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as admin:
            admin.execute(psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


@pytest.fixture
def dbos_client(system_db: str) -> Iterator[DBOSClient]:
    """A DBOS client of the system database, destroyed after the test."""
    client = dbos.DBOSClient(system_database_url=system_db)
    try:
        yield client
    finally:
        client.destroy()


async def ready(worker: asyncio.subprocess.Process) -> None:
    """Wait until the worker has launched DBOS and registered the queue."""
    assert worker.stdout is not None
    async with asyncio.timeout(LIMIT):
        line = await worker.stdout.readline()
    if line.strip() != b"ready":
        assert worker.stderr is not None
        err = await worker.stderr.read()
        raise AssertionError(f"worker did not start: {line!r}\n{err.decode()[-3000:]}")


class Workers:
    """The queue workers a test starts, all on one system database."""

    def __init__(self, system_db: str) -> None:
        self.system_db = system_db
        self.started: list[asyncio.subprocess.Process] = []

    async def start(
        self, stub: StubLLMServer, marks: Path, executor: str, run: str, *, submit: bool = False
    ) -> asyncio.subprocess.Process:
        """A ready worker serving ``QUEUE`` as ``executor`` and awaiting ``run`` (which, with
        ``submit``, it puts on the queue); its tools mark ``marks``, its model is ``stub``."""
        options = ["submit"] if submit else []
        args = (self.system_db, stub.url, str(marks), executor, QUEUE, run, *options)
        worker = await start(*args, module=WORKER)
        self.started.append(worker)
        await ready(worker)
        return worker


@pytest.fixture
async def workers(system_db: str) -> AsyncIterator[Workers]:
    """Starts queue workers; any still running is killed after the test."""
    made = Workers(system_db)
    try:
        yield made
    finally:
        for worker in made.started:
            if worker.returncode is None:
                await kill(worker)


async def test_a_run_of_a_killed_worker_finishes_on_the_other_exactly_once(
    dbos_client: DBOSClient, workers: Workers, tmp_path: Path
) -> None:
    with StubLLMServer(script()) as stub:
        first = await workers.start(stub, tmp_path, "worker-a", "run-q", submit=True)
        await until_requests(stub, 2)  # worker A ran tool one; its second model call hangs
        assert marks(tmp_path) == {"one": ["0"], "two": [], "three": []}
        [taken] = await dbos_client.list_workflows_async(workflow_ids=["run-q"])
        assert (taken.status, taken.executor_id, taken.queue_name) == (
            "PENDING",
            "worker-a",
            QUEUE,
        )

        second = await workers.start(stub, tmp_path, "worker-b", "run-q")
        await kill(first)

        # what a supervisor does once it knows worker A is gone: its unfinished runs go
        # back on the queue, where the live worker takes them
        dead = await dbos_client.list_workflows_async(status="PENDING", executor_id="worker-a")
        assert [run.workflow_id for run in dead] == ["run-q"]
        await dbos_client.resume_workflow_async("run-q", queue_name=QUEUE)

        finished = await result_of(second)

        assert finished["executor"] == "worker-b"
        result = finished["result"]
        assert result["status"] == "done"
        assert result["text"] == "all done"
        assert [call["name"] for call in result["toolCalls"]] == ["one", "two", "three"]
        assert marks(tmp_path) == {"one": ["0"], "two": ["1"], "three": ["2"]}
        # A's two requests (the second never answered), then B resends only that one
        assert [len(r.json["messages"]) for r in stub.requests] == [1, 3, 3, 5, 7]
        stub.assert_consumed()

    handle: WorkflowHandleAsync[Any] = await dbos_client.retrieve_workflow_async("run-q")
    async with asyncio.timeout(LIMIT):
        assert await handle.get_result() == result
    assert (await handle.get_status()).executor_id == "worker-b"


async def test_a_worker_restarted_under_its_executor_id_finishes_its_own_killed_run(
    dbos_client: DBOSClient, workers: Workers, tmp_path: Path
) -> None:
    with StubLLMServer(script()) as stub:
        first = await workers.start(stub, tmp_path, "worker-a", "run-r", submit=True)
        await until_requests(stub, 2)
        await kill(first)
        [left] = await dbos_client.list_workflows_async(workflow_ids=["run-r"])
        assert (left.status, left.executor_id) == ("PENDING", "worker-a")

        # the same executor id again: its launch puts the run back on its queue
        again = await workers.start(stub, tmp_path, "worker-a", "run-r")
        finished = await result_of(again)

        assert finished["executor"] == "worker-a"
        assert finished["result"]["text"] == "all done"
        assert marks(tmp_path) == {"one": ["0"], "two": ["1"], "three": ["2"]}
        assert [len(r.json["messages"]) for r in stub.requests] == [1, 3, 3, 5, 7]

"""Pending requests kept beside transcripts: the in-memory and SQLite stores.

``get_pending``/``save_pending`` round-trip a request; ``claim_pending`` takes it atomically
(exactly one of many concurrent claims, from threads or processes, gets it); ``delete`` clears it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from toolnexus import InMemoryConversationStore, Request, SqliteConversationStore

REQUEST = Request("req-1", "approval", "Deploy to prod?", data={"toolCallId": "c2", "env": "prod"})


@pytest.fixture(params=["memory", "sqlite"])
async def make_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[[], Any]]:
    made: list[Any] = []
    shared = InMemoryConversationStore()

    def make() -> Any:
        store = shared if request.param == "memory" else SqliteConversationStore(tmp_path / "p.db")
        made.append(store)
        return store

    yield make
    for store in made:
        if hasattr(store, "aclose"):
            await store.aclose()


async def test_a_saved_request_reads_back_equal_and_none_clears_it(make_store: Any) -> None:
    store = make_store()
    assert await store.get_pending("c") is None
    await store.save_pending("c", REQUEST)
    assert await make_store().get_pending("c") == REQUEST
    await store.save_pending("c", None)
    assert await store.get_pending("c") is None
    await store.save_pending("c", None)  # clearing twice is harmless


async def test_a_stored_request_is_a_copy(make_store: Any) -> None:
    store = make_store()
    given = Request("r", "approval", "ok?", data={"n": 1})
    await store.save_pending("c", given)
    assert given.data is not None
    given.data["n"] = 2
    got = await store.get_pending("c")
    assert got.data == {"n": 1}
    got.data["n"] = 3
    assert (await store.get_pending("c")).data == {"n": 1}


async def test_claim_takes_only_the_named_request_once(make_store: Any) -> None:
    store = make_store()
    await store.save_pending("c", REQUEST)
    assert await store.claim_pending("c", "another") is None
    assert await store.claim_pending("missing", REQUEST.id) is None
    assert await store.claim_pending("c", REQUEST.id) == REQUEST
    assert await store.claim_pending("c", REQUEST.id) is None
    assert await store.get_pending("c") is None


async def test_of_many_concurrent_claims_exactly_one_gets_the_request(make_store: Any) -> None:
    store = make_store()
    await store.save_pending("c", REQUEST)
    claims = await asyncio.gather(*(make_store().claim_pending("c", REQUEST.id) for _ in range(8)))
    assert [c for c in claims if c is not None] == [REQUEST]


async def test_delete_forgets_the_pending_request_too(make_store: Any) -> None:
    store = make_store()
    await store.save("c", [{"role": "user", "content": "hi"}])
    await store.save_pending("c", REQUEST)
    await store.delete("c")
    assert await store.get("c") is None
    assert await store.get_pending("c") is None


def _claim_in_process(path: str, barrier: Any, results: Any) -> None:
    async def claim() -> Request | None:
        store = SqliteConversationStore(path)
        try:
            barrier.wait(30)
            return await store.claim_pending("c", REQUEST.id)
        finally:
            await store.aclose()

    results.put(None if (got := asyncio.run(claim())) is None else got.to_dict())


def test_of_four_processes_claiming_at_once_exactly_one_gets_the_request(tmp_path: Path) -> None:
    path = str(tmp_path / "p.db")

    async def prepare() -> None:
        store = SqliteConversationStore(path)
        await store.save_pending("c", REQUEST)
        await store.aclose()

    asyncio.run(prepare())
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_claim_in_process, args=(path, barrier, results)) for _ in range(4)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    assert [o for o in outcomes if o is not None] == [REQUEST.to_dict()]


async def test_a_database_from_before_pending_requests_gains_the_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);"
        "CREATE TABLE conversations (id TEXT PRIMARY KEY, messages TEXT NOT NULL, "
        "updated_at TEXT NOT NULL);"
        "INSERT INTO schema_migrations VALUES ('0001_create_conversations', 'then');"
        "INSERT INTO conversations VALUES ('old', '[]', 'then');"
    )
    conn.commit()
    conn.close()
    store = SqliteConversationStore(path)
    try:
        assert await store.get("old") == []
        await store.save_pending("old", REQUEST)
        assert await store.get_pending("old") == REQUEST
    finally:
        await store.aclose()

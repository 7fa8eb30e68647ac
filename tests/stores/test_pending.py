"""Pending requests in the SQLite store: claims from several processes, older files.

What every store does with pending requests is in the conformance suite (``conformance.py``).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

from toolnexus import Request, SqliteConversationStore

REQUEST = Request("req-1", "approval", "Deploy to prod?", data={"toolCallId": "c2", "env": "prod"})


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

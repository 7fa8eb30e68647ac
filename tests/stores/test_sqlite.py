"""The SQLite store: the conformance suite, the file format, and concurrency."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from toolnexus import ConfigError, ToolnexusError
from toolnexus.stores import SqliteConversationStore
from toolnexus.stores.sqlite import MIGRATIONS

from .conformance import TRANSCRIPT, UNICODE_TRANSCRIPT, DurableStoreConformance, StoreFactory


class TestSqliteStore(DurableStoreConformance):
    @pytest.fixture
    def make_store(self, tmp_path: Path) -> StoreFactory:
        path = tmp_path / "conversations.db"
        return lambda: SqliteConversationStore(path)


def _query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


def _insert_raw(path: Path, conversation_id: str, text: str) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "INSERT INTO conversations (id, messages, updated_at) VALUES (?, ?, ?)",
            (conversation_id, text, "2025-01-01T00:00:00.000Z"),
        )


async def test_database_reports_wal_journal_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    await SqliteConversationStore(path).save("c1", TRANSCRIPT)
    assert _query(path, "PRAGMA journal_mode") == [("wal",)]


async def test_parent_directories_are_created_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c" / "conversations.db"
    store = SqliteConversationStore(path)
    assert not path.parent.exists()
    await store.save("c1", TRANSCRIPT)
    assert path.is_file()
    assert await SqliteConversationStore(path).get("c1") == TRANSCRIPT


async def test_a_relative_path_is_fixed_when_the_store_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    store = SqliteConversationStore("data/conversations.db")
    assert store.path == tmp_path / "data" / "conversations.db"
    monkeypatch.chdir(tmp_path / "elsewhere")
    await store.save("c1", TRANSCRIPT)
    assert (tmp_path / "data" / "conversations.db").is_file()
    assert await store.get("c1") == TRANSCRIPT


async def test_get_on_a_new_file_creates_the_schema_and_reads_none(tmp_path: Path) -> None:
    path = tmp_path / "new" / "c.db"
    assert await SqliteConversationStore(path).get("c1") is None
    assert _query(path, "SELECT count(*) FROM conversations") == [(0,)]


async def test_conversations_table_has_id_messages_and_updated_at_columns(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    await SqliteConversationStore(path).save("c1", TRANSCRIPT)
    columns = _query(path, "PRAGMA table_info(conversations)")
    # (cid, name, type, notnull, default, pk)
    assert [(c[1], c[2], c[3], c[5]) for c in columns] == [
        ("id", "TEXT", 0, 1),
        ("messages", "TEXT", 1, 0),
        ("updated_at", "TEXT", 1, 0),
    ]


async def test_messages_are_compact_json_text_with_raw_unicode(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    await SqliteConversationStore(path).save("u", UNICODE_TRANSCRIPT)
    [(text,)] = _query(path, "SELECT messages FROM conversations WHERE id = 'u'")
    assert text == json.dumps(UNICODE_TRANSCRIPT, separators=(",", ":"), ensure_ascii=False)
    assert "👋🏽" in str(text)


async def test_updated_at_is_an_rfc3339_utc_timestamp_of_the_last_save(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    before = datetime.now(UTC)
    await SqliteConversationStore(path).save("c1", TRANSCRIPT)
    [(stamp,)] = _query(path, "SELECT updated_at FROM conversations WHERE id = 'c1'")
    assert isinstance(stamp, str)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", stamp)
    saved_at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert saved_at.tzinfo is not None
    assert before - timedelta(seconds=1) <= saved_at <= datetime.now(UTC) + timedelta(seconds=1)


async def test_migrations_are_recorded_by_name_once(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    await SqliteConversationStore(path).save("c1", TRANSCRIPT)
    await SqliteConversationStore(path).save("c2", TRANSCRIPT)
    names = _query(path, "SELECT name FROM schema_migrations ORDER BY name")
    assert names == [(name,) for name, _ in MIGRATIONS]


async def test_a_file_made_before_migrations_were_recorded_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "CREATE TABLE conversations "
            "(id TEXT PRIMARY KEY, messages TEXT NOT NULL, updated_at TEXT NOT NULL)"
        )
    _insert_raw(path, "old", json.dumps(TRANSCRIPT))
    store = SqliteConversationStore(path)
    assert await store.get("old") == TRANSCRIPT
    assert _query(path, "SELECT count(*) FROM schema_migrations") == [(len(MIGRATIONS),)]


@pytest.mark.parametrize(
    ("stored", "problem"),
    [("not json at all", "not valid JSON"), ('{"role":"user"}', "not a JSON array")],
)
async def test_a_corrupt_row_raises_naming_the_id_and_the_file(
    tmp_path: Path, stored: str, problem: str
) -> None:
    path = tmp_path / "c.db"
    store = SqliteConversationStore(path)
    await store.save("fine", TRANSCRIPT)
    _insert_raw(path, "broken", stored)
    with pytest.raises(ToolnexusError) as info:
        await store.get("broken")
    message = str(info.value)
    assert "'broken'" in message
    assert str(path) in message
    assert problem in message
    assert await store.get("fine") == TRANSCRIPT


async def test_a_lone_surrogate_round_trips(tmp_path: Path) -> None:
    store = SqliteConversationStore(tmp_path / "c.db")
    messages = [{"role": "assistant", "content": "half an emoji: \ud83d"}]
    await store.save("c1", messages)
    assert await store.get("c1") == messages


async def test_unserialisable_messages_raise_type_error_and_save_nothing(tmp_path: Path) -> None:
    store = SqliteConversationStore(tmp_path / "c.db")
    with pytest.raises(TypeError, match="'c1'"):
        await store.save("c1", [{"role": "user", "content": object()}])
    assert await store.get("c1") is None


def test_memory_path_is_rejected_with_config_error() -> None:
    with pytest.raises(ConfigError, match="InMemoryConversationStore"):
        SqliteConversationStore(":memory:")


async def test_a_closed_store_refuses_calls_and_closes_twice_harmlessly(tmp_path: Path) -> None:
    store = SqliteConversationStore(tmp_path / "c.db")
    await store.save("c1", TRANSCRIPT)
    await store.aclose()
    await store.aclose()
    with pytest.raises(ToolnexusError, match="closed"):
        await store.get("c1")
    with pytest.raises(ToolnexusError, match="closed"):
        await store.save("c1", TRANSCRIPT)


async def test_save_waits_for_another_writer_without_blocking_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = SqliteConversationStore(path)
    await store.save("c1", [{"role": "user", "content": "old"}])
    new = [{"role": "user", "content": "new"}]
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # hold the write lock
        task = asyncio.create_task(store.save("c1", new))
        # The loop keeps running while the save waits in its worker thread for the lock
        # (instead of failing at once with "database is locked").
        done, _ = await asyncio.wait({task}, timeout=0.3)
        assert not done
    finally:
        holder.execute("COMMIT")
        holder.close()
    async with asyncio.timeout(5):
        await task
    assert await store.get("c1") == new


_WRITER = """
import asyncio, sys
from toolnexus.stores import SqliteConversationStore

async def main(path, worker):
    store = SqliteConversationStore(path)
    print("ready", flush=True)
    sys.stdin.readline()
    await asyncio.gather(*(
        store.save(f"w{worker}-{n}", [{"role": "user", "content": f"worker {worker} #{n}"}])
        for n in range(50)
    ))
    await store.aclose()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_four_processes_saving_50_ids_each_concurrently_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "conversations.db"  # a new file: the schema is made in a race
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(worker)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(4)
    ]
    try:
        for writer in writers:  # every process is up before any of them writes
            assert writer.stdout is not None
            assert writer.stdout.readline() == "ready\n"
        outcomes = [writer.communicate("go\n", timeout=90) for writer in writers]
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    for writer, (_, stderr) in zip(writers, outcomes, strict=True):
        assert writer.returncode == 0, stderr
        assert stderr == ""

    async def read_all() -> dict[str, list[dict[str, object]] | None]:
        store = SqliteConversationStore(path)
        ids = [f"w{worker}-{n}" for worker in range(4) for n in range(50)]
        return {i: await store.get(i) for i in ids}

    saved = asyncio.run(read_all())
    assert len(saved) == 200
    for worker in range(4):
        for n in range(50):
            expected = [{"role": "user", "content": f"worker {worker} #{n}"}]
            assert saved[f"w{worker}-{n}"] == expected
    assert _query(path, "SELECT count(*) FROM conversations") == [(200,)]


async def test_a_new_store_reads_an_existing_file_while_another_connection_writes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.db"
    first = SqliteConversationStore(path)
    await first.save("a", [{"role": "user", "content": "hi"}])
    await first.aclose()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # holds the write lock, as a busy writer process would
    try:
        writer.execute("UPDATE conversations SET updated_at = updated_at")
        second = SqliteConversationStore(path)
        async with asyncio.timeout(3):  # far below the 5 s busy timeout a write lock would need
            assert await second.get("a") == [{"role": "user", "content": "hi"}]
        await second.aclose()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


async def test_a_failure_is_a_toolnexus_error_naming_the_file_and_the_id(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    store = SqliteConversationStore(tmp_path / "file" / "c.db")
    with pytest.raises(ToolnexusError) as caught:
        await store.save("c1", TRANSCRIPT)
    assert str(tmp_path / "file" / "c.db") in str(caught.value)
    assert "'c1'" in str(caught.value)
    (tmp_path / "bad.db").write_bytes(b"not a database, but long enough to be read " * 100)
    with pytest.raises(ToolnexusError, match=r"bad\.db"):
        await SqliteConversationStore(tmp_path / "bad.db").get("c1")

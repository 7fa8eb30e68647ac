"""The PostgreSQL store against a real server: conformance, table layout, many processes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from toolnexus import ConfigError, ToolnexusError
from toolnexus.stores import PostgresConversationStore

from .concurrency import save_from_processes
from .conformance import TRANSCRIPT, DurableStoreConformance, StoreFactory
from .services import POSTGRES_DSN, need

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
async def table() -> AsyncIterator[str]:
    """A fresh table name, dropped after the test."""
    need(POSTGRES_DSN, 5432, "PostgreSQL")
    name = f"toolnexus test {uuid.uuid4().hex[:12]}"  # a space: the name must be quoted
    yield name
    async with await psycopg.AsyncConnection.connect(POSTGRES_DSN, autocommit=True) as conn:
        await conn.execute(
            psycopg.sql.SQL("DROP TABLE IF EXISTS {}").format(psycopg.sql.Identifier(name))
        )


async def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(POSTGRES_DSN) as conn:
        cursor = await conn.execute(sql, params)
        return await cursor.fetchall() if cursor.description is not None else []


class TestPostgresStore(DurableStoreConformance):
    @pytest.fixture
    def make_store(self, table: str) -> StoreFactory:
        return lambda: PostgresConversationStore(POSTGRES_DSN, table=table)


async def test_the_table_is_created_as_specified_with_one_row_per_id(table: str) -> None:
    store = PostgresConversationStore(POSTGRES_DSN, table=table)
    await store.save("c1", TRANSCRIPT)
    await store.save("c1", TRANSCRIPT[:2])
    await store.save("c2", TRANSCRIPT)
    columns = await query(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = %s ORDER BY ordinal_position",
        table,
    )
    assert columns == [
        ("id", "text", "NO"),
        ("messages", "jsonb", "NO"),
        ("updated_at", "timestamp with time zone", "NO"),
    ]
    keys = await query(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary",
        f'"{table}"',
    )
    assert keys == [("id",)]
    rows = await query(f'SELECT id, jsonb_array_length(messages) FROM "{table}" ORDER BY id')
    assert rows == [("c1", 2), ("c2", len(TRANSCRIPT))]
    await store.aclose()


async def test_an_existing_table_is_used_as_is(table: str) -> None:
    await query(
        f'CREATE TABLE "{table}" (id TEXT PRIMARY KEY, messages JSONB NOT NULL, '
        "updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), owner TEXT)"
    )
    store = PostgresConversationStore(POSTGRES_DSN, table=table)
    await store.save("c1", TRANSCRIPT)
    assert await store.get("c1") == TRANSCRIPT
    await store.aclose()


async def test_eight_processes_saving_two_hundred_ids_each_lose_nothing(table: str) -> None:
    save_from_processes("postgres", POSTGRES_DSN, table, processes=8, ids=200)
    rows = await query(f'SELECT count(*) FROM "{table}" WHERE id LIKE %s', "w%")
    assert rows == [(1600,)]
    store = PostgresConversationStore(POSTGRES_DSN, table=table)
    for worker in range(8):
        assert await store.get(f"w{worker}-199") == [{"role": "user", "content": f"{worker}/199"}]
    await store.aclose()


async def test_many_stores_creating_one_new_table_at_once_all_succeed(table: str) -> None:
    # Unguarded, concurrent CREATE TABLE IF NOT EXISTS of one name fails now and then on the
    # table's row type ("already exists"); each store here opens its own pool at once.
    for attempt in range(5):
        name = f"{table} {attempt}"
        stores = [PostgresConversationStore(POSTGRES_DSN, table=name) for _ in range(12)]
        try:
            await asyncio.gather(*(s.save(f"c{i}", TRANSCRIPT) for i, s in enumerate(stores)))
            assert [await s.get(f"c{i}") for i, s in enumerate(stores)] == [TRANSCRIPT] * 12
        finally:
            await asyncio.gather(*(s.aclose() for s in stores))
            await query(f'DROP TABLE IF EXISTS "{name}"')


def test_a_bad_connection_string_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="bad connection string"):
        PostgresConversationStore("no-equals-sign here")
    with pytest.raises(ConfigError, match="table"):
        PostgresConversationStore(POSTGRES_DSN, table="")


# --- a connection that breaks mid-run, as when the server restarts ---------------------------


class Proxy:
    """A TCP relay in front of the server; ``stop`` drops every connection, like a restart."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.server: asyncio.Server | None = None
        self.port = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()
        await self.server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_a_dropped_server_gives_a_clear_error_then_the_next_save_works(table: str) -> None:
    target = urlsplit(POSTGRES_DSN)
    proxy = Proxy(target.hostname or "127.0.0.1", target.port or 5432)
    await proxy.start()
    dsn = f"postgresql://{target.username}:pw-not-needed@127.0.0.1:{proxy.port}{target.path}"
    store = PostgresConversationStore(dsn, table=table, timeout=2.0)
    async with asyncio.timeout(30):
        await store.save("c1", TRANSCRIPT)
        await proxy.stop()
        with pytest.raises(ToolnexusError) as caught:
            await store.save("c1", TRANSCRIPT[:1])
        message = str(caught.value)
        assert f"127.0.0.1:{proxy.port}" in message
        assert "save failed" in message
        assert "pw-not-needed" not in message
        await proxy.start()
        await store.save("c1", TRANSCRIPT[:1])
        assert await store.get("c1") == TRANSCRIPT[:1]
        await store.aclose()
    await proxy.stop()

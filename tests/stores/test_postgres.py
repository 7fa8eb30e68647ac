"""The PostgreSQL store against a real server: conformance, table layout, many processes."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from toolnexus import ConfigError, ToolnexusError, create_in_process_client
from toolnexus.stores import PostgresConversationStore

from .concurrency import resume_from_processes, save_from_processes
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
        for made in (name, f"{name}_pending"):
            await conn.execute(
                psycopg.sql.SQL("DROP TABLE IF EXISTS {}").format(psycopg.sql.Identifier(made))
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
            await query(f'DROP TABLE IF EXISTS "{name}", "{name}_pending"')


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
        self.frozen = False
        """While set, open connections stay open but pass nothing (a frozen server)."""

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
                    if self.frozen:
                        continue
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


# --- pending requests across processes ----------------------------------------------------


async def test_of_four_processes_resuming_one_approval_exactly_one_runs_the_action(
    table: str, tmp_path: Path
) -> None:
    calls = tmp_path / "calls"
    outcomes = resume_from_processes("postgres", POSTGRES_DSN, table, calls, processes=4)
    done = [o for o in outcomes if "status" in o]
    assert done == [{"status": "done", "text": "done: deployed prod"}]
    assert sorted(o.get("error", "") for o in outcomes if "error" in o) == ["ConfigError"] * 3
    assert calls.read_text() == "deploy answered\n"


def test_two_run_sync_calls_on_one_store_each_use_a_pool_of_their_own_loop(table: str) -> None:
    store = PostgresConversationStore(POSTGRES_DSN, table=table)
    client = create_in_process_client(
        model="local", generate=lambda r: {"content": f"{len(r['messages'])} seen"}, store=store
    )
    first = client.run_sync("one", conversation_id="c1")  # each on a fresh event loop
    second = client.run_sync("two", conversation_id="c1")
    assert (first.text, second.text) == ("1 seen", "3 seen")


# --- bounded waits, and the reason a call failed --------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _dsn(**parts: str) -> str:
    target = urlsplit(POSTGRES_DSN)
    user = parts.get("user", target.username or "postgres")
    password = parts.get("password")
    auth = f"{user}:{password}" if password else user
    host = parts.get("host", f"{target.hostname or '127.0.0.1'}:{target.port or 5432}")
    database = parts.get("database", target.path.lstrip("/"))
    query = parts.get("query", "")
    return f"postgresql://{auth}@{host}/{database}{query}"


async def _failure(store: PostgresConversationStore, *, within: float) -> str:
    started = time.monotonic()
    with pytest.raises(ToolnexusError) as caught:
        async with asyncio.timeout(within + 5):
            await store.get("c1")
    assert time.monotonic() - started < within
    await store.aclose()
    return str(caught.value)


async def test_a_server_that_is_not_there_is_named_connection_refused_at_once() -> None:
    port = _free_port()
    store = PostgresConversationStore(_dsn(host=f"127.0.0.1:{port}", password="pw-123"))
    message = await _failure(store, within=3)
    assert f"127.0.0.1:{port}" in message
    assert "connection refused" in message
    assert "pw-123" not in message


async def test_an_unknown_role_is_named_authentication_failed_without_the_password() -> None:
    need(POSTGRES_DSN, 5432, "PostgreSQL")
    store = PostgresConversationStore(_dsn(user="no_such_role_tn", password="s3cret-pw"))
    message = await _failure(store, within=3)
    assert "authentication failed" in message
    assert 'role "no_such_role_tn" does not exist' in message
    assert "s3cret-pw" not in message


async def test_an_unknown_database_is_named() -> None:
    need(POSTGRES_DSN, 5432, "PostgreSQL")
    store = PostgresConversationStore(_dsn(database="no_such_db_tn"))
    message = await _failure(store, within=3)
    assert "no such database" in message
    assert "no_such_db_tn" in message


async def test_a_server_that_accepts_and_never_answers_fails_within_connect_timeout() -> None:
    silent = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    loop = asyncio.get_running_loop()
    silent.setblocking(False)
    loop.add_reader(silent.fileno(), lambda: accepted.append(silent.accept()[0]))
    port = silent.getsockname()[1]
    try:
        store = PostgresConversationStore(
            _dsn(host=f"127.0.0.1:{port}", password="pw-456"), connect_timeout=0.5
        )
        message = await _failure(store, within=3)
        assert "no answer within 0.5 s (connect_timeout)" in message
        assert "pw-456" not in message
        assert accepted  # it did reach the silent server
    finally:
        loop.remove_reader(silent.fileno())
        for conn in accepted:
            conn.close()
        silent.close()


async def test_a_server_that_stops_answering_mid_call_fails_within_statement_timeout(
    table: str,
) -> None:
    target = urlsplit(POSTGRES_DSN)
    proxy = Proxy(target.hostname or "127.0.0.1", target.port or 5432)
    await proxy.start()
    store = PostgresConversationStore(
        _dsn(host=f"127.0.0.1:{proxy.port}"), table=table, statement_timeout=0.3
    )
    try:
        async with asyncio.timeout(20):
            await store.save("c1", TRANSCRIPT)
            proxy.frozen = True  # connections stay open; nothing passes any more
            started = time.monotonic()
            with pytest.raises(ToolnexusError, match=r"no answer within 0\.3 s"):
                await store.get("c1")
            assert time.monotonic() - started < 3
            proxy.frozen = False
            await proxy.stop()
            await proxy.start()
            assert await store.get("c1") == TRANSCRIPT
    finally:
        await store.aclose()
        await proxy.stop()


async def test_connections_the_server_ended_are_replaced_and_the_call_retried_once(
    table: str,
) -> None:
    name = f"tn-{uuid.uuid4().hex[:12]}"
    store = PostgresConversationStore(
        _dsn(query=f"?application_name={name}"), table=table, max_size=4
    )
    async with asyncio.timeout(20):
        await asyncio.gather(*(store.save(f"c{n}", TRANSCRIPT) for n in range(8)))
        for round in range(3):
            ended = await query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                name,
            )
            assert ended
            assert all(row == (True,) for row in ended)
            await store.save("c1", [{"role": "user", "content": str(round)}])
            assert await store.get("c1") == [{"role": "user", "content": str(round)}]
    await store.aclose()


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": 0},
        {"connect_timeout": -1},
        {"statement_timeout": float("inf")},
        {"statement_timeout": "30"},
        {"table": "t" * 60},
    ],
)
def test_bad_store_options_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        PostgresConversationStore(POSTGRES_DSN, **options)

"""The PostgreSQL conversation store: transcripts in one table shared by every worker.

Layout (created on first use when missing; an existing table is used as is)::

    <table>(id TEXT PRIMARY KEY, messages JSONB NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now())
    <pending_table>(id TEXT PRIMARY KEY, request_id TEXT NOT NULL, request JSONB NOT NULL,
                    updated_at TIMESTAMPTZ NOT NULL DEFAULT now())

``save`` is one upsert, so concurrent saves of one id from many processes leave the last one.
A claim of a pending request is one ``DELETE … RETURNING``, so of concurrent claims from any
process exactly one gets it. A transcript holding text JSONB refuses (NUL, a lone surrogate) is
kept as a JSONB string of its escaped JSON (see ``_codec``) and reads back exactly.

Connections come from a small pool per event loop: opened on demand, kept while they work,
with no background task (nothing is left running when a loop ends, as with ``run_sync``).
Every wait is bounded (``connect_timeout``, ``statement_timeout``, ``timeout``). Needs
``psycopg`` 3 (``pip install 'toolnexus[postgres]'``), imported when the store is made.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._deprecated import renamed
from .._redact import add_secret
from ..errors import ConfigError, ToolnexusError
from ..messages import Message
from ..suspension import Request
from ..transport.per_loop import PerLoop
from ._codec import from_jsonb, storable_id, to_jsonb

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresConversationStore"]

_T = TypeVar("_T")
_CREATE_LOCK = "SELECT pg_advisory_xact_lock(hashtext(%s))"
_MAX_IDENTIFIER = 63
"""PostgreSQL cuts longer identifiers (in bytes) short."""


class _Failure(Exception):
    """Why a call failed, in words fit for the message (never a password)."""


class PostgresConversationStore:
    """Conversation transcripts in a PostgreSQL table (JSONB), through a connection pool.

    ``dsn`` is a libpq connection string or URL. ``table`` is quoted as one identifier, so any
    name works; pending requests live in ``pending_table`` (default ``table + "_pending"``).

    Every wait is bounded: ``connect_timeout`` (seconds) for a new connection,
    ``statement_timeout`` for each statement (set on the server, and enforced here too, so a
    frozen server cannot hang a call), ``timeout`` for a free pooled connection. Failures raise
    ``ToolnexusError`` naming the server and the reason (connection refused, authentication
    failed, no answer within …), never a password. A pooled connection found dead (the server
    restarted, or ended it) is dropped with the other idle ones and the call retried once.
    ``max_size`` bounds the connections of each event loop (``min_size`` is accepted for
    compatibility: connections open on demand).
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "toolnexus_conversations",
        pending_table: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        statement_timeout: float = 30.0,
    ) -> None:
        try:
            import psycopg
            from psycopg import sql
        except ImportError:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "PostgresConversationStore needs psycopg: pip install 'toolnexus[postgres]'"
            ) from None
        if not isinstance(dsn, str) or not dsn:
            raise ConfigError("PostgresConversationStore needs a connection string")
        for name, value in (("table", table), ("pending_table", pending_table)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"{name} must be a non-empty string")
        pending_table = pending_table if pending_table is not None else f"{table}_pending"
        if len(pending_table.encode("utf-8", "surrogatepass")) > _MAX_IDENTIFIER:
            raise ConfigError(
                f"pending_table {pending_table!r} is longer than PostgreSQL's "
                f"{_MAX_IDENTIFIER}-byte names; give a shorter one with pending_table=..."
            )
        for option, seconds in (
            ("timeout", timeout),
            ("connect_timeout", connect_timeout),
            ("statement_timeout", statement_timeout),
        ):
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
                raise ConfigError(f"{option} must be a number of seconds > 0, got {seconds!r}")
            if not math.isfinite(seconds):
                raise ConfigError(f"{option} must be finite, got {seconds!r}")
        self.table = table
        self.pending_table = pending_table
        try:
            info = psycopg.conninfo.conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise ConfigError(f"PostgresConversationStore: bad connection string: {exc}") from None
        if info.get("password"):
            add_secret(str(info["password"]))
        host, port = info.get("host", "localhost"), info.get("port", 5432)
        self._where = f"postgresql://{host}:{port}/{info.get('dbname', '')}"
        self._dsn = dsn
        self._connect_timeout = float(connect_timeout)
        self._statement_timeout = float(statement_timeout)
        self._timeout = float(timeout)
        limit_ms = math.ceil(statement_timeout * 1000)
        options = f"{info.get('options') or ''} -c statement_timeout={limit_ms}"
        self._kwargs: dict[str, Any] = {
            "autocommit": True,  # each statement its own transaction; no idle transactions
            "connect_timeout": max(2, math.ceil(connect_timeout)),  # libpq: whole s, ≥ 2
            "options": options.strip(),
        }
        self._psycopg = psycopg
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ConfigError(f"max_size must be a whole number ≥ 1, got {max_size!r}")
        del min_size  # connections open on demand
        self._pools: PerLoop[_Pool] = PerLoop(lambda: _Pool(max_size), _Pool.close, _Pool.drop)
        self._created = False
        self._creating: PerLoop[asyncio.Lock] = PerLoop(asyncio.Lock, _nothing, _forget)
        conversations, waiting = sql.Identifier(table), sql.Identifier(pending_table)
        self._create = [
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id TEXT PRIMARY KEY, messages JSONB NOT NULL, "
                "updated_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            ).format(conversations),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (id TEXT PRIMARY KEY, request_id TEXT NOT NULL, "
                "request JSONB NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            ).format(waiting),
        ]
        self._select = sql.SQL("SELECT messages FROM {} WHERE id = %s").format(conversations)
        self._upsert = sql.SQL(
            "INSERT INTO {} (id, messages, updated_at) VALUES (%s, %s::jsonb, now()) "
            "ON CONFLICT (id) DO UPDATE SET messages = EXCLUDED.messages, updated_at = now()"
        ).format(conversations)
        self._delete = sql.SQL(
            "WITH waiting AS (DELETE FROM {} WHERE id = %s) DELETE FROM {} WHERE id = %s"
        ).format(waiting, conversations)
        self._select_pending = sql.SQL("SELECT request FROM {} WHERE id = %s").format(waiting)
        self._upsert_pending = sql.SQL(
            "INSERT INTO {} (id, request_id, request, updated_at) "
            "VALUES (%s, %s, %s::jsonb, now()) ON CONFLICT (id) DO UPDATE SET "
            "request_id = EXCLUDED.request_id, request = EXCLUDED.request, updated_at = now()"
        ).format(waiting)
        self._clear_pending = sql.SQL("DELETE FROM {} WHERE id = %s").format(waiting)
        self._claim_pending = sql.SQL(
            "DELETE FROM {} WHERE id = %s AND request_id = %s RETURNING request"
        ).format(waiting)

    async def get(self, id: str) -> list[Message] | None:
        """The transcript saved under ``id``, or ``None``."""
        row = await self._fetch("get", self._select, (storable_id(id, nul=False),))
        if row is None:
            return None
        try:
            value = from_jsonb(row[0])
        except ValueError:
            value = None
        if not isinstance(value, list):
            raise ToolnexusError(f"{self._where} {self.table}[{id!r}] is not a JSON array")
        return value

    async def save(self, id: str, messages: Sequence[Message]) -> None:
        """Replace the transcript under ``id`` (one upsert)."""
        params = (storable_id(id, nul=False), to_jsonb(messages))
        await self._fetch("save", self._upsert, params, rows=False)

    async def delete(self, id: str) -> None:
        """Forget ``id`` and its pending request (one statement; harmless when absent)."""
        key = storable_id(id, nul=False)
        await self._fetch("delete", self._delete, (key, key), rows=False)

    async def get_pending(self, id: str) -> Request | None:
        """The request conversation ``id`` waits for, or ``None``."""
        key = storable_id(id, nul=False)
        row = await self._fetch("read the pending request", self._select_pending, (key,))
        return None if row is None else self._decode_request(id, row[0])

    async def save_pending(self, id: str, request: Request | None) -> None:
        """Record the request conversation ``id`` waits for; ``None`` clears it."""
        key = storable_id(id, nul=False)
        if request is None:
            await self._fetch("clear the pending request", self._clear_pending, (key,), rows=False)
            return
        params = (key, storable_id(request.id, nul=False), to_jsonb(request.to_dict()))
        await self._fetch("save the pending request", self._upsert_pending, params, rows=False)

    async def claim_pending(self, id: str, request_id: str) -> Request | None:
        """Take (and clear) the pending request of ``id`` if its id is ``request_id``: one
        ``DELETE … RETURNING``, so of concurrent claims, from any process, exactly one gets it."""
        params = (storable_id(id, nul=False), storable_id(request_id, nul=False))
        row = await self._fetch("claim the pending request", self._claim_pending, params)
        return None if row is None else self._decode_request(id, row[0])

    async def aclose(self) -> None:
        """Close this event loop's pool (the store opened it)."""
        await self._pools.aclose()

    async def close(self) -> None:
        """Deprecated alias of ``aclose``."""
        renamed("PostgresConversationStore.close()", "PostgresConversationStore.aclose()")
        await self.aclose()

    async def _fetch(
        self, what: str, query: Any, params: tuple[Any, ...], *, rows: bool = True
    ) -> Any:
        """Run one statement; its first row (or ``None``) when ``rows``."""

        async def statement(conn: AsyncConnection[Any]) -> Any:
            cursor = await conn.execute(query, params)
            return await cursor.fetchone() if rows else None

        try:
            try:
                return await self._run(statement)
            except self._psycopg.Error as exc:  # from the pool (closed, too many waiting)
                raise _Failure(_reason(exc, self._connect_timeout)) from None
        except _Failure as failure:
            raise ToolnexusError(
                f"PostgreSQL store at {self._where}: {what} failed: {failure}"
            ) from None

    async def _run(self, op: Callable[[AsyncConnection[Any]], Awaitable[_T]]) -> _T:
        if not self._created:
            async with await self._creating.get():  # one attempt at a time per event loop
                if not self._created:
                    await self._create_tables()
        pool = await self._pools.get()
        for attempt in (1, 2):
            await pool.acquire(self._timeout)
            conn: AsyncConnection[Any] | None = None
            try:
                conn = pool.idle.pop() if pool.idle else await self._connect()
                return await self._bounded(conn, op)
            except self._psycopg.Error as exc:
                assert conn is not None  # _connect raises _Failure, not a driver error
                if not (conn.closed or conn.broken) or attempt == 2:
                    raise _Failure(_reason(exc, self._connect_timeout)) from None
                # The server ended this connection (a restart, pg_terminate_backend): the idle
                # ones are most likely dead too. Drop them and try once more, on a new one.
                await pool.discard_idle()
            finally:
                await pool.release(conn)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connect(self) -> AsyncConnection[Any]:
        """A connection of its own, made within ``connect_timeout``; ``_Failure`` says why not."""
        try:
            async with asyncio.timeout(self._connect_timeout):
                return await self._psycopg.AsyncConnection.connect(self._dsn, **self._kwargs)
        except TimeoutError:
            raise _Failure(
                f"no answer within {self._connect_timeout:g} s (connect_timeout)"
            ) from None
        except self._psycopg.Error as exc:
            raise _Failure(_reason(exc, self._connect_timeout)) from None

    async def _create_tables(self) -> None:
        """Make sure both tables exist (once per store; a failed attempt is retried later)."""
        conn = await self._connect()
        try:

            async def create(conn: AsyncConnection[Any]) -> None:
                async with conn.transaction():
                    # CREATE TABLE IF NOT EXISTS is not safe against itself: two processes
                    # creating the same table at once can fail on its row type. A lock per
                    # table name, held to the end of this transaction, puts them in a line.
                    await conn.execute(_CREATE_LOCK, (f"toolnexus:{self.table}",))
                    for statement in self._create:
                        await conn.execute(statement)

            try:
                await self._bounded(conn, create)
            except self._psycopg.Error as exc:
                raise _Failure(_reason(exc, self._connect_timeout)) from None
        finally:
            await conn.close()
        self._created = True

    async def _bounded(
        self, conn: AsyncConnection[Any], op: Callable[[AsyncConnection[Any]], Awaitable[_T]]
    ) -> _T:
        """``op(conn)``, cut off when the server has not answered a while after
        ``statement_timeout`` (which the server enforces itself when it is alive): the socket
        is shut down, so the call fails at once and the connection is dropped."""
        fired = False

        def abort() -> None:
            nonlocal fired
            fired = True
            _shut_down(conn)

        limit = self._statement_timeout + min(1.0, self._statement_timeout)
        handle = asyncio.get_running_loop().call_later(limit, abort)
        try:
            return await op(conn)
        except self._psycopg.Error:
            if fired:
                raise _Failure(
                    f"no answer within {self._statement_timeout:g} s (statement_timeout)"
                ) from None
            raise
        finally:
            handle.cancel()

    def _decode_request(self, id: str, stored: Any) -> Request:
        try:
            return Request.from_dict(from_jsonb(stored))
        except (TypeError, ValueError) as exc:
            raise ToolnexusError(
                f"PostgreSQL store at {self._where}: the pending request of conversation "
                f"{id!r} is corrupt ({exc})"
            ) from None

    def __repr__(self) -> str:
        return f"PostgresConversationStore({self._where}, table={self.table!r})"


def _reason(exc: BaseException, connect_timeout: float) -> str:
    """A driver error in words: its kind first (refused, authentication…), then libpq's text
    (which never holds a password)."""
    import psycopg

    text = " ".join(str(exc).split())
    detail = text.split(" failed: ", 1)[-1] if text.startswith("connection failed") else text
    lowered = text.lower()
    if isinstance(exc, psycopg.errors.QueryCanceled):
        kind = "the server cancelled the statement (statement_timeout)"
    elif "connection refused" in lowered:
        kind = "connection refused"
    elif any(
        sign in lowered
        for sign in ("authentication failed", "role", "no pg_hba.conf entry", "password")
    ):
        kind = "authentication failed"
    elif "database" in lowered and "does not exist" in lowered:
        kind = "no such database"
    elif "timeout expired" in lowered:
        kind = f"no answer within {connect_timeout:g} s (connect_timeout)"
    elif isinstance(exc, psycopg.OperationalError):
        kind = "connection lost"
    else:
        kind = type(exc).__name__
    return f"{kind}: {detail}" if detail else kind


def _shut_down(conn: AsyncConnection[Any]) -> None:
    """Shut the connection's socket down (without closing its descriptor, which asyncio still
    watches): whatever waits on it fails at once."""
    try:
        fd = conn.pgconn.socket
    except Exception:  # already closed
        return
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


async def _nothing(lock: asyncio.Lock) -> None:
    """A lock needs no closing."""


def _forget(lock: asyncio.Lock) -> None:
    """A lock needs no closing."""


class _Pool:
    """One event loop's connections: at most ``max_size`` in use, the idle ones kept.

    No background task: a connection is made when a call needs one and none is idle, and one
    that fails or is found dead is closed instead of kept.
    """

    def __init__(self, max_size: int) -> None:
        self.idle: list[AsyncConnection[Any]] = []
        self._slots = asyncio.Semaphore(max_size)
        self._max_size = max_size
        self._closed = False

    async def acquire(self, within: float) -> None:
        """Wait (up to ``within`` s) until fewer than ``max_size`` connections are in use."""
        try:
            async with asyncio.timeout(within):
                await self._slots.acquire()
        except TimeoutError:
            raise _Failure(
                f"no free connection within {within:g} s (timeout; all {self._max_size} in use)"
            ) from None

    async def release(self, conn: AsyncConnection[Any] | None) -> None:
        """Give back the slot, and keep ``conn`` if it is fit for the next call."""
        from psycopg.pq import TransactionStatus

        self._slots.release()
        if conn is None:
            return
        if (
            not self._closed
            and not conn.closed
            and not conn.broken
            and conn.pgconn.transaction_status == TransactionStatus.IDLE
        ):
            self.idle.append(conn)
        else:
            await conn.close()

    async def discard_idle(self) -> None:
        idle, self.idle = self.idle, []
        for conn in idle:
            await conn.close()

    async def close(self) -> None:
        self._closed = True
        await self.discard_idle()

    def drop(self) -> None:
        """Its event loop closed without shutting it down: close the sockets directly."""
        self._closed = True
        idle, self.idle = self.idle, []
        for conn in idle:
            conn.pgconn.finish()

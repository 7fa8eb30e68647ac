"""The SQLite conversation store: durable transcripts in one file that processes may share.

Layout (created on first use, evolved by named migrations recorded in ``schema_migrations``)::

    conversations(id TEXT PRIMARY KEY, messages TEXT NOT NULL, updated_at TEXT NOT NULL)
    pending_requests(id TEXT PRIMARY KEY, request_id TEXT NOT NULL, request TEXT NOT NULL,
                     updated_at TEXT NOT NULL)

``messages`` is the transcript as compact JSON text and ``updated_at`` an RFC 3339 UTC time;
``pending_requests`` holds the request a conversation waits for (its wire form as JSON).
The database runs in WAL mode with a 5000 ms busy timeout, so readers never block the writer
and concurrent writers (coroutines, threads or processes) wait for each other instead of
failing. Every blocking call runs in a worker thread, on a connection borrowed from a small
pool (a connection is used by one thread at a time; opening one per call would cost a WAL
checkpoint each time the last connection closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from .._deprecated import renamed
from ..errors import ConfigError, ToolnexusError
from ..messages import Message
from ..suspension import Request
from ._codec import decode, storable_id, storable_json

__all__ = ["BUSY_TIMEOUT_MS", "MIGRATIONS", "SqliteConversationStore"]

logger = logging.getLogger("toolnexus")

_T = TypeVar("_T")

BUSY_TIMEOUT_MS = 5000
"""How long a connection waits for another writer's lock before giving up."""
_POOL_SIZE = 4

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_create_conversations",
        "CREATE TABLE IF NOT EXISTS conversations ("
        "id TEXT PRIMARY KEY, messages TEXT NOT NULL, updated_at TEXT NOT NULL)",
    ),
    (
        "0002_create_pending_requests",
        "CREATE TABLE IF NOT EXISTS pending_requests (id TEXT PRIMARY KEY, "
        "request_id TEXT NOT NULL, request TEXT NOT NULL, updated_at TEXT NOT NULL)",
    ),
)
"""Schema changes in the order they apply, each under a name that is never reused."""

_CREATE_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
)
_SELECT = "SELECT messages FROM conversations WHERE id = ?"
_UPSERT = (
    "INSERT INTO conversations (id, messages, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET messages = excluded.messages, updated_at = excluded.updated_at"
)
_DELETE = "DELETE FROM conversations WHERE id = ?"
_SELECT_PENDING = "SELECT request FROM pending_requests WHERE id = ?"
_UPSERT_PENDING = (
    "INSERT INTO pending_requests (id, request_id, request, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET request_id = excluded.request_id, "
    "request = excluded.request, updated_at = excluded.updated_at"
)
_DELETE_PENDING = "DELETE FROM pending_requests WHERE id = ?"
_CLAIM_PENDING = "DELETE FROM pending_requests WHERE id = ? AND request_id = ?"


class SqliteConversationStore:
    """Transcripts in a SQLite file (stdlib ``sqlite3``), one row per conversation id.

    The file and its parent directories are created on first use. Many coroutines of one event
    loop and several processes may use the same file at once; the last ``save`` of an id wins.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if str(path) in ("", ":memory:"):
            raise ConfigError(
                "SqliteConversationStore needs a file path; use InMemoryConversationStore "
                "for a store that lives in memory"
            )
        self._path = Path(path).expanduser().absolute()  # immune to later chdir()
        self._ready = False
        self._ready_lock = threading.Lock()
        self._closed = False
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._pool_pid = os.getpid()

    @property
    def path(self) -> Path:
        """The database file, as an absolute path."""
        return self._path

    async def get(self, id: str) -> list[Message] | None:
        """The transcript saved under ``id``, or ``None`` when the id is unknown.

        Raises ``ToolnexusError`` naming the id and the file when the stored text is not a
        JSON array of message objects.
        """
        key = storable_id(id)

        def read(conn: sqlite3.Connection) -> list[Message] | None:
            row = conn.execute(_SELECT, (key,)).fetchone()
            return None if row is None else self._decode(id, row[0])

        return await self._call("read", id, read)

    async def save(self, id: str, messages: Sequence[Message]) -> None:
        """Replace the transcript stored under ``id`` (one upsert in its own transaction)."""
        key = storable_id(id)
        text = _encode(id, messages)
        stamp = _utc_now()
        await self._call("save", id, lambda conn: conn.execute(_UPSERT, (key, text, stamp)))

    async def delete(self, id: str) -> None:
        """Remove the transcript (and pending request) of ``id``; an unknown id is not an error."""
        key = storable_id(id)

        def delete(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.execute(_DELETE, (key,))
                conn.execute(_DELETE_PENDING, (key,))

        await self._call("delete", id, delete)

    async def get_pending(self, id: str) -> Request | None:
        """The request conversation ``id`` waits for, or ``None``."""
        key = storable_id(id)

        def read(conn: sqlite3.Connection) -> Request | None:
            row = conn.execute(_SELECT_PENDING, (key,)).fetchone()
            return None if row is None else self._decode_request(id, row[0])

        return await self._call("read the pending request of", id, read)

    async def save_pending(self, id: str, request: Request | None) -> None:
        """Record the request conversation ``id`` waits for; ``None`` clears it."""
        key = storable_id(id)
        if request is None:
            clear = "clear the pending request of"
            await self._call(clear, id, lambda conn: conn.execute(_DELETE_PENDING, (key,)))
            return
        text, stamp = storable_json(request.to_dict()), _utc_now()
        values = (key, request.id, text, stamp)
        what = "save the pending request of"
        await self._call(what, id, lambda conn: conn.execute(_UPSERT_PENDING, values))

    async def claim_pending(self, id: str, request_id: str) -> Request | None:
        """Take (and clear) the pending request of ``id`` if its id is ``request_id``, in one
        write transaction: of concurrent claims, from any process, exactly one gets it."""
        key = storable_id(id)

        def claim(conn: sqlite3.Connection) -> Request | None:
            with _transaction(conn):
                row = conn.execute(_SELECT_PENDING, (key,)).fetchone()
                if row is None or conn.execute(_CLAIM_PENDING, (key, request_id)).rowcount != 1:
                    return None
            return self._decode_request(id, row[0])

        return await self._call("claim the pending request of", id, claim)

    async def aclose(self) -> None:
        """Stop accepting calls and close the pooled connections. Harmless to repeat."""
        self._closed = True
        with self._pool_lock:
            pool, self._pool = self._pool, []
        if pool:
            await asyncio.to_thread(_close_all, pool)

    async def close(self) -> None:
        """Deprecated alias of ``aclose``."""
        renamed("SqliteConversationStore.close()", "SqliteConversationStore.aclose()")
        await self.aclose()

    async def _call(self, what: str, id: str, op: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise ToolnexusError(f"{self!r} is closed")
        try:
            return await asyncio.to_thread(self._run, op)
        except (sqlite3.Error, OSError) as exc:  # OSError: the folder cannot be made
            raise ToolnexusError(
                f"SQLite store {self._path}: could not {what} conversation {id!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def _run(self, op: Callable[[sqlite3.Connection], _T]) -> _T:
        """In a worker thread: prepare the file once, then run ``op`` on a pooled connection.

        The connection is in autocommit mode, so each statement is its own transaction.
        """
        if not self._ready:
            self._prepare()
        conn = self._borrow()
        try:
            result = op(conn)
        except BaseException:
            conn.close()  # its state is unknown: never hand it out again
            raise
        self._give_back(conn)
        return result

    def _borrow(self) -> sqlite3.Connection:
        with self._pool_lock:
            if self._pool_pid != os.getpid():  # a forked child must not use its parent's
                self._pool, self._pool_pid = [], os.getpid()
            if self._pool:
                return self._pool.pop()
        return self._connect()

    def _give_back(self, conn: sqlite3.Connection) -> None:
        with self._pool_lock:
            if not self._closed and len(self._pool) < _POOL_SIZE:
                self._pool.append(conn)
                return
        conn.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,  # pooled: used by one worker thread at a time
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self) -> None:
        """Create the directory, switch to WAL and apply missing migrations (once per store)."""
        with self._ready_lock:
            if self._ready:
                return
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._connect()
            try:
                if not _is_current(conn):  # a file in use needs no lock to be read
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if str(mode).lower() != "wal":
                        logger.warning("SQLite store %s runs in %s mode, not WAL", self._path, mode)
                    _migrate(conn)
            finally:
                conn.close()
            self._ready = True

    def _decode(self, id: str, text: str) -> list[Message]:
        where = f"conversation {id!r} in {self._path}"
        try:
            messages = decode(json.loads(text))
        except (TypeError, ValueError) as exc:
            raise ToolnexusError(f"{where} is corrupt: not valid JSON ({exc})") from None
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ToolnexusError(f"{where} is corrupt: not a JSON array of message objects")
        return messages

    def _decode_request(self, id: str, text: str) -> Request:
        try:
            return Request.from_dict(decode(json.loads(text)))
        except (TypeError, ValueError) as exc:
            raise ToolnexusError(
                f"the pending request of conversation {id!r} in {self._path} is corrupt ({exc})"
            ) from None

    def __repr__(self) -> str:
        return f"SqliteConversationStore({str(self._path)!r})"


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (``BEGIN IMMEDIATE`` takes the write lock first)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _close_all(connections: list[sqlite3.Connection]) -> None:
    for conn in connections:
        conn.close()


def _is_current(conn: sqlite3.Connection) -> bool:
    """Whether the file is already in WAL mode with every migration applied (read-only check).

    Then a store's first call needs no write lock, so it is not held up by another process
    that is writing.
    """
    try:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        applied = {name for (name,) in conn.execute("SELECT name FROM schema_migrations")}
    except sqlite3.OperationalError:  # no such table yet (a new file)
        return False
    return str(mode).lower() == "wal" and all(name in applied for name, _ in MIGRATIONS)


def _migrate(conn: sqlite3.Connection) -> None:
    """Apply every migration not yet recorded, in one write transaction.

    ``BEGIN IMMEDIATE`` takes the write lock first, so when several processes open a new file
    at once exactly one applies each migration and the others find it recorded.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_CREATE_MIGRATIONS)
        applied = {name for (name,) in conn.execute("SELECT name FROM schema_migrations")}
        for name, sql in MIGRATIONS:
            if name not in applied:
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (name, _utc_now()),
                )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _encode(id: str, messages: Sequence[Message]) -> str:
    """Compact JSON text of a transcript, taken on the caller's thread (a snapshot).

    Text SQLite cannot keep as UTF-8 (a lone surrogate) is written with ``\\u`` escapes, which
    read back identically.
    """
    try:
        return storable_json(messages)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"conversation {id!r}: messages are not JSON-serialisable ({exc})"
        ) from None


def _utc_now() -> str:
    """The current time as RFC 3339 UTC with milliseconds, e.g. ``2025-01-31T12:00:00.000Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

"""The PostgreSQL conversation store: transcripts in one table shared by every worker.

Layout (created on first use when missing; an existing table is used as is)::

    <table>(id TEXT PRIMARY KEY, messages JSONB NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now())

``save`` is one upsert, so concurrent saves of one id from many processes leave the last one.
Connections come from a psycopg 3 async pool opened on first use. Needs ``psycopg`` with its
pool (``pip install 'toolnexus[postgres]'``), imported when the store is made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._deprecated import renamed
from .._redact import add_secret
from ..errors import ConfigError, ToolnexusError
from ..messages import Message

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresConversationStore"]

_CREATE_LOCK = "SELECT pg_advisory_xact_lock(hashtext(%s))"


class PostgresConversationStore:
    """Conversation transcripts in a PostgreSQL table (JSONB), through a connection pool.

    ``dsn`` is a libpq connection string or URL. ``table`` is quoted as one identifier, so any
    name works. Server failures raise ``ToolnexusError`` naming the server (never a password);
    broken pooled connections are dropped, so the next call after the server is back works.
    ``min_size``/``max_size`` size the pool; ``timeout`` bounds the wait for a connection.
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "toolnexus_conversations",
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
    ) -> None:
        try:
            import psycopg
            from psycopg import sql
            from psycopg_pool import AsyncConnectionPool
        except ImportError:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "PostgresConversationStore needs psycopg with its pool: "
                "pip install 'toolnexus[postgres]'"
            ) from None
        if not isinstance(dsn, str) or not dsn:
            raise ConfigError("PostgresConversationStore needs a connection string")
        if not isinstance(table, str) or not table:
            raise ConfigError("table must be a non-empty string")
        self.table = table
        try:
            info = psycopg.conninfo.conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise ConfigError(f"PostgresConversationStore: bad connection string: {exc}") from None
        if info.get("password"):
            add_secret(str(info["password"]))
        host, port = info.get("host", "localhost"), info.get("port", 5432)
        self._where = f"postgresql://{host}:{port}/{info.get('dbname', '')}"
        self._dsn = dsn
        self._sizes = (min_size, max_size)
        self._timeout = timeout
        self._pool_class = AsyncConnectionPool
        self._pool: AsyncConnectionPool | None = None
        self._opening = asyncio.Lock()
        self._errors: tuple[type[BaseException], ...] = (psycopg.OperationalError, OSError)
        self._psycopg = psycopg
        name = sql.Identifier(table)
        self._create = sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id TEXT PRIMARY KEY, messages JSONB NOT NULL, "
            "updated_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ).format(name)
        self._select = sql.SQL("SELECT messages FROM {} WHERE id = %s").format(name)
        self._upsert = sql.SQL(
            "INSERT INTO {} (id, messages, updated_at) VALUES (%s, %s, now()) "
            "ON CONFLICT (id) DO UPDATE SET messages = EXCLUDED.messages, updated_at = now()"
        ).format(name)
        self._delete = sql.SQL("DELETE FROM {} WHERE id = %s").format(name)

    async def get(self, id: str) -> list[Message] | None:
        """The transcript saved under ``id``, or ``None``."""
        row = await self._run("get", self._select, (_id(id),), fetch=True)
        if row is None:
            return None
        value = row[0]
        if not isinstance(value, list):
            raise ToolnexusError(f"{self._where} {self.table}[{id!r}] is not a JSON array")
        return value

    async def save(self, id: str, messages: Sequence[Message]) -> None:
        """Replace the transcript under ``id`` (one upsert)."""
        from psycopg.types.json import Jsonb

        await self._run("save", self._upsert, (_id(id), Jsonb(messages)))

    async def delete(self, id: str) -> None:
        """Forget ``id`` (harmless when it is not there)."""
        await self._run("delete", self._delete, (_id(id),))

    async def aclose(self) -> None:
        """Close the pool (the store opened it)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def close(self) -> None:
        """Deprecated alias of ``aclose``."""
        renamed("PostgresConversationStore.close()", "PostgresConversationStore.aclose()")
        await self.aclose()

    async def _ready(self) -> AsyncConnectionPool:
        """The open pool, the table made sure of (once; a failed attempt is retried later)."""
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is not None:
                return self._pool
            min_size, max_size = self._sizes
            pool = self._pool_class(
                self._dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=self._timeout,
                open=False,
                name="toolnexus-store",
            )
            try:
                await pool.open(wait=True, timeout=self._timeout)
                async with pool.connection() as conn, conn.transaction():
                    # CREATE TABLE IF NOT EXISTS is not safe against itself: two processes
                    # creating the same table at once can fail on its row type. A lock per
                    # table name, held to the end of this transaction, puts them in a line.
                    await conn.execute(_CREATE_LOCK, (f"toolnexus:{self.table}",))
                    await conn.execute(self._create)
            except BaseException:
                await pool.close()
                raise
            self._pool = pool
            return pool

    async def _run(
        self, what: str, query: Any, params: tuple[Any, ...], *, fetch: bool = False
    ) -> Any:
        try:
            pool = await self._ready()
            async with pool.connection() as conn:
                cursor = await conn.execute(query, params)
                return await cursor.fetchone() if fetch else None
        except self._errors as exc:  # PoolTimeout is an OperationalError too
            if self._pool is not None:
                await self._pool.check()  # drop the connections the failure broke
            raise ToolnexusError(
                f"PostgreSQL store at {self._where}: {what} failed: "
                f"{type(exc).__name__}: {str(exc).strip()}"
            ) from None

    def __repr__(self) -> str:
        return f"PostgresConversationStore({self._where}, table={self.table!r})"


def _id(id: str) -> str:
    if not isinstance(id, str):
        raise ConfigError(f"conversation ids are strings, got {type(id).__name__}")
    return id

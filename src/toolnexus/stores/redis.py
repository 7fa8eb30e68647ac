"""The Redis conversation store: transcripts shared by every worker that reaches one server.

Each transcript is one Redis string under ``prefix + id`` holding its compact JSON; ``save`` is
one ``SET`` (with ``EX ttl_seconds`` when a TTL is given, renewed by every save), ``delete`` one
``DEL``. Redis makes each command atomic, so concurrent saves of one id from many processes
leave exactly one of them, the last to arrive. Needs the ``redis`` package
(``pip install 'toolnexus[redis]'``), imported when the store is made.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .._deprecated import renamed
from .._json import compact_json
from .._redact import add_secret
from ..errors import ConfigError, ToolnexusError
from ..messages import Message

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisConversationStore"]


class RedisConversationStore:
    """Conversation transcripts in Redis, keyed ``prefix + id``.

    ``url_or_client`` is a ``redis://`` URL (the store opens and owns a client, closed by
    ``close()``) or a ``redis.asyncio.Redis`` you own (used as is, never closed here; with or
    without ``decode_responses``). Any string is a valid id. Connection failures raise
    ``ToolnexusError`` naming the server (never its password); the next call reconnects.
    """

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        prefix: str = "toolnexus:conv:",
        ttl_seconds: int | None = None,
    ) -> None:
        try:
            import redis.asyncio as aioredis
        except ImportError:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "RedisConversationStore needs the redis package: pip install 'toolnexus[redis]'"
            ) from None
        if not isinstance(prefix, str):
            raise ConfigError(f"prefix must be a string, got {type(prefix).__name__}")
        if ttl_seconds is not None and (
            isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1
        ):
            raise ConfigError(f"ttl_seconds must be a whole number ≥ 1, got {ttl_seconds!r}")
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        if isinstance(url_or_client, str):
            self._where = _describe_url(url_or_client)
            try:
                self._client: Redis = aioredis.Redis.from_url(url_or_client)
            except ValueError as exc:
                raise ConfigError(f"RedisConversationStore: bad URL {self._where}: {exc}") from None
            self._owned = True
        elif isinstance(url_or_client, aioredis.Redis):
            self._client = url_or_client
            kwargs = url_or_client.connection_pool.connection_kwargs
            self._where = f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
            self._owned = False
        else:
            raise ConfigError(
                "RedisConversationStore needs a redis:// URL or a redis.asyncio.Redis client, "
                f"got {type(url_or_client).__name__}"
            )
        self._errors: tuple[type[BaseException], ...] = (aioredis.RedisError, OSError)

    async def get(self, id: str) -> list[Message] | None:
        """The transcript saved under ``id``, or ``None``."""
        raw = await self._call("get", self._client.get, self._key(id))
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise ToolnexusError(
                f"{self._where} key {self._key(id)!r} is not JSON: {exc}"
            ) from None
        if not isinstance(value, list):
            raise ToolnexusError(f"{self._where} key {self._key(id)!r} is not a JSON array")
        return value

    async def save(self, id: str, messages: Sequence[Message]) -> None:
        """Replace the transcript under ``id`` (one ``SET``; the TTL renews)."""
        text = compact_json(messages)
        await self._call("save", self._client.set, self._key(id), text, ex=self.ttl_seconds)

    async def delete(self, id: str) -> None:
        """Forget ``id`` (harmless when it is not there)."""
        await self._call("delete", self._client.delete, self._key(id))

    async def aclose(self) -> None:
        """Close the client if the store opened it."""
        if self._owned:
            await self._client.aclose()

    async def close(self) -> None:
        """Deprecated alias of ``aclose``."""
        renamed("RedisConversationStore.close()", "RedisConversationStore.aclose()")
        await self.aclose()

    def _key(self, id: str) -> str:
        if not isinstance(id, str):
            raise ConfigError(f"conversation ids are strings, got {type(id).__name__}")
        return self.prefix + id

    async def _call(self, what: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except self._errors as exc:
            raise ToolnexusError(
                f"Redis store at {self._where}: {what} failed: {type(exc).__name__}: {exc}"
            ) from None

    def __repr__(self) -> str:
        return f"RedisConversationStore({self._where}, prefix={self.prefix!r})"


def _describe_url(url: str) -> str:
    """The URL without its credentials (the password is also registered as a secret)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "redis://?"
    if parts.password:
        add_secret(parts.password)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

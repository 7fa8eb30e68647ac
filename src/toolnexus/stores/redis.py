"""The Redis conversation store: transcripts shared by every worker that reaches one server.

Each transcript is one Redis string under ``prefix + id`` holding its compact JSON; ``save`` is
one ``SET`` (with ``EX ttl_seconds`` when a TTL is given, renewed by every save), ``delete`` one
``DEL``. Redis makes each command atomic, so concurrent saves of one id from many processes
leave exactly one of them, the last to arrive. The request a conversation waits for is a hash
(``request_id``, ``request``) under ``pending_prefix + id``; a claim is one Lua script that
checks the id and deletes the hash, so of concurrent claims from any process exactly one gets
it. Needs the ``redis`` package (``pip install 'toolnexus[redis]'``), imported when the store is
made.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit, urlunsplit

from .._deprecated import renamed
from .._redact import add_secret
from ..errors import ConfigError, ToolnexusError
from ..messages import Message
from ..suspension import Request
from ..transport.per_loop import PerLoop
from ._codec import decode, storable_json

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisConversationStore"]

_T = TypeVar("_T")

_CLAIM = """
if redis.call('HGET', KEYS[1], 'request_id') == ARGV[1] then
  local request = redis.call('HGET', KEYS[1], 'request')
  redis.call('DEL', KEYS[1])
  return request
end
return false
"""
"""Take the pending request if its id is ARGV[1]: one script, so atomic on the server."""


class RedisConversationStore:
    """Conversation transcripts in Redis, keyed ``prefix + id``.

    ``url_or_client`` is a ``redis://`` URL (the store opens and owns one client per event
    loop it is used on, each closed with its loop or by ``close()`` there) or a
    ``redis.asyncio.Redis`` you own (used as is, on the event loop it is first used on, never
    closed here; with or without ``decode_responses``). Any string is a valid id. Pending
    requests live under ``pending_prefix + id`` (default ``"toolnexus:pending:" + prefix``).
    ``timeout`` (seconds) bounds connecting and each reply of a client the store opens.
    Failures raise ``ToolnexusError`` naming the server (never its password); a connection
    found dead (the server restarted, or dropped it) is replaced and the call retried once.
    """

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        prefix: str = "toolnexus:conv:",
        ttl_seconds: int | None = None,
        pending_prefix: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        try:
            import redis.asyncio as aioredis
            from redis.asyncio.connection import parse_url
        except ImportError:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "RedisConversationStore needs the redis package: pip install 'toolnexus[redis]'"
            ) from None
        if not isinstance(prefix, str):
            raise ConfigError(f"prefix must be a string, got {type(prefix).__name__}")
        if pending_prefix is not None and not isinstance(pending_prefix, str):
            raise ConfigError(
                f"pending_prefix must be a string, got {type(pending_prefix).__name__}"
            )
        if ttl_seconds is not None and (
            isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1
        ):
            raise ConfigError(f"ttl_seconds must be a whole number ≥ 1, got {ttl_seconds!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if not math.isfinite(timeout):
            raise ConfigError(f"timeout must be finite, got {timeout!r}")
        self.prefix = prefix
        self.pending_prefix = (
            pending_prefix if pending_prefix is not None else "toolnexus:pending:" + prefix
        )
        self.ttl_seconds = ttl_seconds
        self._injected: Redis | None = None
        self._clients: PerLoop[Redis] | None = None
        if isinstance(url_or_client, str):
            self._where = _describe_url(url_or_client)
            url = url_or_client
            try:
                parse_url(url)  # a bad URL (a port out of range…) is refused now, not on use
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"RedisConversationStore: bad URL {self._where}: {exc}") from None
            bound = float(timeout)  # a ?socket_timeout=… in the URL wins

            def make_client() -> Redis:
                return aioredis.Redis.from_url(
                    url, socket_timeout=bound, socket_connect_timeout=bound
                )

            self._clients = PerLoop(make_client, _close_client, _forget_client)
        elif isinstance(url_or_client, aioredis.Redis):
            self._injected = url_or_client
            kwargs = url_or_client.connection_pool.connection_kwargs
            self._where = f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
        else:
            raise ConfigError(
                "RedisConversationStore needs a redis:// URL or a redis.asyncio.Redis client, "
                f"got {type(url_or_client).__name__}"
            )
        self._bound: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._bound_lock = threading.Lock()
        self._errors: tuple[type[BaseException], ...] = (aioredis.RedisError, OSError)
        self._dead: tuple[type[BaseException], ...] = (aioredis.ConnectionError,)

    async def get(self, id: str) -> list[Message] | None:
        """The transcript saved under ``id``, or ``None``."""
        key = self._key(id)
        raw = await self._call("get", lambda client: client.get(key))
        if raw is None:
            return None
        try:
            value = decode(json.loads(raw))
        except ValueError as exc:
            raise ToolnexusError(
                f"{self._where} key {self._shown(id)!r} is not JSON: {exc}"
            ) from None
        if not isinstance(value, list):
            raise ToolnexusError(f"{self._where} key {self._shown(id)!r} is not a JSON array")
        return value

    async def save(self, id: str, messages: Sequence[Message]) -> None:
        """Replace the transcript under ``id`` (one ``SET``; the TTL renews)."""
        key, text = self._key(id), storable_json(messages)
        await self._call("save", lambda client: client.set(key, text, ex=self.ttl_seconds))

    async def delete(self, id: str) -> None:
        """Forget ``id`` and its pending request (harmless when they are not there)."""
        keys = (self._key(id), self._pending_key(id))
        await self._call("delete", lambda client: client.delete(*keys))

    async def get_pending(self, id: str) -> Request | None:
        """The request conversation ``id`` waits for, or ``None``."""
        key = self._pending_key(id)
        raw = await self._call(
            "read the pending request", lambda client: client.hget(key, "request")
        )
        return None if raw is None else self._decode_request(id, raw)

    async def save_pending(self, id: str, request: Request | None) -> None:
        """Record the request conversation ``id`` waits for; ``None`` clears it."""
        key = self._pending_key(id)
        if request is None:
            await self._call("clear the pending request", lambda client: client.delete(key))
            return
        fields = {"request_id": request.id, "request": storable_json(request.to_dict())}

        async def write(client: Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:  # MULTI … EXEC: all or none
                pipe.delete(key)
                pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
                if self.ttl_seconds is not None:
                    pipe.expire(key, self.ttl_seconds)
                await pipe.execute()

        await self._call("save the pending request", write)

    async def claim_pending(self, id: str, request_id: str) -> Request | None:
        """Take (and clear) the pending request of ``id`` if its id is ``request_id``, in one
        server-side script: of concurrent claims, from any process, exactly one gets it."""
        key = self._pending_key(id)
        raw = await self._call(
            "claim the pending request",
            lambda client: client.eval(_CLAIM, 1, key, request_id),
        )
        return None if raw is None else self._decode_request(id, raw)

    async def aclose(self) -> None:
        """Close this event loop's client if the store opened it (never a given client)."""
        if self._clients is not None:
            await self._clients.aclose()

    async def close(self) -> None:
        """Deprecated alias of ``aclose``."""
        renamed("RedisConversationStore.close()", "RedisConversationStore.aclose()")
        await self.aclose()

    def _key(self, id: str) -> bytes:
        return _as_key(self.prefix, id)

    def _pending_key(self, id: str) -> bytes:
        return _as_key(self.pending_prefix, id)

    def _shown(self, id: str) -> str:
        return self.prefix + id

    async def _client(self) -> Redis:
        if self._clients is not None:
            return await self._clients.get()
        assert self._injected is not None
        current = asyncio.get_running_loop()
        with self._bound_lock:
            bound = self._bound() if self._bound is not None else None
            if bound is None:
                self._bound = weakref.ref(current)
                bound = current
        if bound is not current:
            raise ConfigError(
                "the redis client given to RedisConversationStore belongs to the event loop it "
                "was first used on and cannot be used from another one; give the store a "
                "redis:// URL to let it keep one client per event loop"
            )
        return self._injected

    async def _call(self, what: str, op: Callable[[Redis], Awaitable[_T]]) -> _T:
        client = await self._client()
        try:
            try:
                return await op(client)
            except self._dead:
                # A pooled connection the server closed (a restart, a CLIENT KILL, an idle
                # timeout): drop the idle ones, which are likely dead too, and try once more.
                await client.connection_pool.disconnect(inuse_connections=False)
                return await op(client)
        except self._errors as exc:
            raise ToolnexusError(
                f"Redis store at {self._where}: {what} failed: {type(exc).__name__}: {exc}"
            ) from None

    def _decode_request(self, id: str, raw: str | bytes) -> Request:
        try:
            return Request.from_dict(decode(json.loads(raw)))
        except (TypeError, ValueError) as exc:
            raise ToolnexusError(
                f"Redis store at {self._where}: the pending request of conversation {id!r} is "
                f"corrupt ({exc})"
            ) from None

    def __repr__(self) -> str:
        return f"RedisConversationStore({self._where}, prefix={self.prefix!r})"


def _as_key(prefix: str, id: str) -> bytes:
    """The key bytes of ``prefix + id``: UTF-8, with any lone surrogate kept (so every distinct
    string is a distinct key, and an id holding half an emoji is as valid as any)."""
    if not isinstance(id, str):
        raise ConfigError(f"conversation ids are strings, got {type(id).__name__}")
    return (prefix + id).encode("utf-8", "surrogatepass")


async def _close_client(client: Redis) -> None:
    await client.aclose()


def _forget_client(client: Redis) -> None:
    """A client of an event loop that closed without shutting it down: nothing can be awaited
    there any more; its sockets close as it is collected."""


def _describe_url(url: str) -> str:
    """The URL without its credentials (the password is also registered as a secret)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a bad IPv6 address
        return "redis://?"
    if password:
        add_secret(password)
    netloc = parts.netloc.rpartition("@")[2]  # as written: the port is checked elsewhere
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

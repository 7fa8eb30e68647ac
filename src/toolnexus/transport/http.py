"""The HTTP seam: send a request, or stream a response body.

``AiohttpTransport`` is what ``transport_for`` gives without a client (one pooled
``aiohttp.ClientSession`` per event loop, with keep-alive and no cap on connections in flight);
model calls and tools' own requests use ``streams.StreamTransport`` (responses framed by
``httptools``) instead. ``HttpxTransport`` adapts a caller's
``httpx.AsyncClient``. Both translate their library's failures into ``NetworkError`` here, at the
edge, so nothing above this module knows which one is in use.

A client may be used from several event loops (``asyncio.run`` called again and again, or
``run_sync`` from many threads at once). The default transport keeps one session per loop and
closes it when that loop shuts down, so a finished loop leaves neither a session nor a reference
behind. An injected client belongs to the loop it was first used on; using it from another one
is a ``ConfigError`` rather than an obscure failure deep inside the HTTP library.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError
from .per_loop import PerLoop

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = [
    "AiohttpTransport",
    "BodyTooLarge",
    "HttpResponse",
    "HttpxTransport",
    "NetworkError",
    "StreamResponse",
    "Transport",
    "check_http_client",
    "read_capped",
    "tool_transport",
    "transport_for",
]


class NetworkError(Exception):
    """The request failed without an HTTP status: refused, reset, dropped, or timed out."""


class BodyTooLarge(Exception):
    """A response body went past the byte limit given to ``request``; reading stopped there."""

    def __init__(self, status: int, limit: int, head: bytes) -> None:
        super().__init__(f"the response body is larger than {limit} bytes")
        self.status = status
        self.limit = limit
        self.head = head
        """The first ``limit`` bytes."""


async def read_capped(chunks: AsyncIterator[bytes], limit: int | None, *, status: int = 0) -> bytes:
    """Join ``chunks``; past ``limit`` bytes raise ``BodyTooLarge`` (with the first ``limit``).

    A body whose ``Content-Length`` is over the limit is read up to the limit too, so its head
    is kept as for a chunked one.
    """
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if limit is not None and size > limit:
            parts.append(chunk[: len(chunk) - (size - limit)])
            raise BodyTooLarge(status, limit, b"".join(parts))
        parts.append(chunk)
    return b"".join(parts)


@dataclass(slots=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    """Case-insensitive."""
    body: bytes

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class StreamResponse(Protocol):
    status: int
    headers: Mapping[str, str]

    async def read(self) -> bytes:
        """The whole remaining body (used for error statuses)."""
        ...

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives."""
        ...


class Transport(Protocol):
    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        time_limit: float | None = None,
        max_bytes: int | None = None,
    ) -> HttpResponse:
        """Send one request and read the whole response within ``time_limit`` seconds.

        A body longer than ``max_bytes`` raises ``BodyTooLarge`` once that much was read.
        """
        ...

    def stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        read_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[StreamResponse]:
        """Open a streamed response; ``read_timeout`` bounds each wait for data."""
        ...

    async def aclose(self) -> None:
        """Release what the transport owns (an injected client stays open)."""
        ...

    @property
    def injected(self) -> bool:
        """``True`` when the HTTP client belongs to the caller."""
        ...


def transport_for(http_client: object | None) -> Transport:
    """The transport for a caller's client: aiohttp session, httpx client, or our own."""
    kind = check_http_client(http_client)
    if kind is None:
        return AiohttpTransport()
    if kind == "aiohttp":
        return AiohttpTransport(http_client)  # type: ignore[arg-type]
    return HttpxTransport(http_client)  # type: ignore[arg-type]


_TOOL_TRANSPORT: Transport | None = None
_TOOL_TRANSPORT_LOCK = threading.Lock()


def tool_transport(http_client: object | None) -> Transport:
    """The transport for a tool's own requests: the caller's client when one is given, else
    one ``StreamTransport`` shared by every tool (one pool of kept-alive connections per event
    loop, closed when that loop shuts down; up to 10 redirects followed), so repeated calls to
    one host skip the connect and TLS handshake, and responses are framed as strictly as the
    model's."""
    global _TOOL_TRANSPORT
    if http_client is not None:
        return transport_for(http_client)
    with _TOOL_TRANSPORT_LOCK:
        if _TOOL_TRANSPORT is None:
            from .streams import StreamTransport  # (streams imports this module)

            _TOOL_TRANSPORT = StreamTransport(follow_redirects=10)
        return _TOOL_TRANSPORT


def check_http_client(http_client: object | None) -> str | None:
    """``"aiohttp"`` or ``"httpx"`` for a usable client (``None`` for none given).

    Anything but an open ``aiohttp.ClientSession`` or ``httpx.AsyncClient`` is a
    ``ConfigError`` naming ``http_client``.
    """
    if http_client is None:
        return None
    import aiohttp

    if isinstance(http_client, aiohttp.ClientSession):
        if http_client.closed:
            raise ConfigError("http_client is an aiohttp.ClientSession that is already closed")
        return "aiohttp"
    httpx = sys.modules.get("httpx")  # an httpx client means httpx is imported already
    if httpx is not None and isinstance(http_client, httpx.AsyncClient):
        if http_client.is_closed:
            raise ConfigError("http_client is an httpx.AsyncClient that is already closed")
        return "httpx"
    hint = " (a sync httpx.Client cannot be used; pass an httpx.AsyncClient)"
    is_sync_httpx = httpx is not None and isinstance(http_client, httpx.Client)
    raise ConfigError(
        "http_client must be an aiohttp.ClientSession or an httpx.AsyncClient, not "
        f"{type(http_client).__module__}.{type(http_client).__qualname__}"
        + (hint if is_sync_httpx else "")
    )


class _LoopBinding:
    """The event loop an injected client was first used on; other loops are refused."""

    def __init__(self) -> None:
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        current = asyncio.get_running_loop()
        with self._lock:
            bound = self._loop() if self._loop is not None else None
            if bound is None:
                self._loop = weakref.ref(current)
                return
        if bound is not current:
            raise ConfigError(
                "the injected http_client is bound to the event loop it was first used on and "
                "cannot be used from another one; create the client (and its http_client) on "
                "this loop, or leave http_client out to let the library pool per loop"
            )


class AiohttpTransport:
    """The default transport. Owns one session per event loop unless one is injected.

    A session belongs to the loop that created it, so a client used from several loops (say
    ``run`` on the main loop and ``run_sync`` in worker threads) keeps one pool per loop. Each
    pool is closed on its own loop when that loop shuts down its async generators (as
    ``asyncio.run`` does), or by ``aclose()`` on that loop; pools of loops closed some other
    way are dropped the next time a pool is made. Safe to use from many threads at once.
    """

    def __init__(self, session: aiohttp.ClientSession | None = None) -> None:
        self._injected = session
        self._binding = _LoopBinding()
        self._sessions: PerLoop[aiohttp.ClientSession] = PerLoop(
            _new_session, _close_session, _detach_session
        )

    @property
    def injected(self) -> bool:
        """``True`` when the session belongs to the caller."""
        return self._injected is not None

    async def _client(self) -> aiohttp.ClientSession:
        if self._injected is not None:
            self._binding.check()
            return self._injected
        return await self._sessions.get()

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        time_limit: float | None = None,
        max_bytes: int | None = None,
    ) -> HttpResponse:
        import aiohttp

        session = await self._client()
        try:
            async with session.request(
                method,
                _yarl_url(url),
                headers=dict(headers),
                data=body,
                timeout=aiohttp.ClientTimeout(total=time_limit),
            ) as resp:
                if max_bytes is None:
                    data = await resp.read()
                else:
                    chunks = resp.content.iter_any()
                    data = await read_capped(chunks, max_bytes, status=resp.status)
                return HttpResponse(resp.status, resp.headers, data)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NetworkError(_describe(exc)) from exc

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        read_timeout: float | None = None,
    ) -> AsyncIterator[StreamResponse]:
        import aiohttp

        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=read_timeout, sock_read=read_timeout
        )
        session = await self._client()
        try:
            resp = await session.request(
                method, _yarl_url(url), headers=dict(headers), data=body, timeout=timeout
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NetworkError(_describe(exc)) from exc
        try:
            yield _AiohttpStream(resp)
        except BaseException:
            resp.close()  # abandon the connection: the body was not read to the end
            raise
        finally:
            resp.release()

    async def aclose(self) -> None:
        """Close this loop's pool (pools of running loops close when those loops shut down)."""
        await self._sessions.aclose()


def _new_session() -> aiohttp.ClientSession:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))


async def _close_session(session: aiohttp.ClientSession) -> None:
    await session.close()


def _detach_session(session: aiohttp.ClientSession) -> None:
    session.detach()  # its loop is closed: nothing left to await


class _AiohttpStream:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.headers: Mapping[str, str] = resp.headers

    async def read(self) -> bytes:
        import aiohttp

        try:
            return await self._resp.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NetworkError(_describe(exc)) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        import aiohttp

        try:
            async for chunk in self._resp.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NetworkError(_describe(exc)) from exc


class HttpxTransport:
    """Adapts a caller's ``httpx.AsyncClient`` (the caller keeps ownership)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client
        self._binding = _LoopBinding()

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        time_limit: float | None = None,
        max_bytes: int | None = None,
    ) -> HttpResponse:
        import httpx

        self._binding.check()
        try:
            async with (
                asyncio.timeout(time_limit),
                self._client.stream(method, url, headers=dict(headers), content=body) as resp,
            ):
                data = await read_capped(resp.aiter_bytes(), max_bytes, status=resp.status_code)
        except (httpx.TransportError, TimeoutError) as exc:
            raise NetworkError(_describe(exc)) from exc
        return HttpResponse(resp.status_code, resp.headers, data)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        read_timeout: float | None = None,
    ) -> AsyncIterator[StreamResponse]:
        import httpx

        self._binding.check()
        request = self._client.build_request(
            method, url, headers=dict(headers), content=body, timeout=read_timeout
        )
        try:
            resp = await self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise NetworkError(_describe(exc)) from exc
        try:
            yield _HttpxStream(resp)
        finally:
            await resp.aclose()

    @property
    def injected(self) -> bool:
        return True

    async def aclose(self) -> None:
        return None


class _HttpxStream:
    def __init__(self, resp: httpx.Response) -> None:
        self._resp = resp
        self.status = resp.status_code
        self.headers: Mapping[str, str] = resp.headers

    async def read(self) -> bytes:
        import httpx

        try:
            return await self._resp.aread()
        except httpx.TransportError as exc:
            raise NetworkError(_describe(exc)) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        import httpx

        try:
            async for chunk in self._resp.aiter_bytes():  # decoded (gzip, br, ...)
                yield chunk
        except httpx.TransportError as exc:
            raise NetworkError(_describe(exc)) from exc


@functools.lru_cache(maxsize=256)
def _yarl_url(url: str) -> Any:
    """An aiohttp URL that keeps our percent-encoding as is (``%26`` stays ``%26``)."""
    from yarl import URL

    return URL(url, encoded=url.isascii())


def _describe(exc: BaseException) -> str:
    """A short message for a network failure (never carries request headers)."""
    if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
        return "request timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

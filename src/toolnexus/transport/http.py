"""The HTTP seam: send a request, or stream a response body.

``AiohttpTransport`` is the default (one pooled ``aiohttp.ClientSession`` per event loop, with
keep-alive and no cap on connections in flight). ``HttpxTransport`` adapts a caller's
``httpx.AsyncClient``. Both translate their library's failures into ``NetworkError`` here, at the
edge, so nothing above this module knows which one is in use.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

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
    "read_capped",
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


async def read_capped(
    chunks: AsyncIterator[bytes], limit: int | None, *, status: int = 0, length: str | None = None
) -> bytes:
    """Join ``chunks``; past ``limit`` bytes raise ``BodyTooLarge`` (with the first ``limit``).

    A ``Content-Length`` above the limit fails before anything is read.
    """
    if limit is not None and length is not None and length.isdigit() and int(length) > limit:
        raise BodyTooLarge(status, limit, b"")
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
    if http_client is None:
        return AiohttpTransport()
    module = type(http_client).__module__.split(".")[0]
    if module == "aiohttp":
        return AiohttpTransport(http_client)  # type: ignore[arg-type]
    if module == "httpx":
        return HttpxTransport(http_client)  # type: ignore[arg-type]
    raise TypeError(
        f"http_client must be an aiohttp.ClientSession or an httpx.AsyncClient, "
        f"not {type(http_client).__name__}"
    )


class AiohttpTransport:
    """The default transport. Owns one session per event loop unless one is injected.

    A session belongs to the loop that created it, so a client used from several loops (say
    ``run`` on the main loop and ``run_sync`` in a worker thread) keeps one pool per loop;
    ``aclose()`` closes the current loop's pool and those of loops that have stopped.
    """

    def __init__(self, session: aiohttp.ClientSession | None = None) -> None:
        self._injected = session
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}

    @property
    def injected(self) -> bool:
        """``True`` when the session belongs to the caller."""
        return self._injected is not None

    def _client(self) -> aiohttp.ClientSession:
        if self._injected is not None:
            return self._injected
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None)
            )
            self._sessions[loop] = session
        return session

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

        try:
            async with self._client().request(
                method,
                _yarl_url(url),
                headers=dict(headers),
                data=body,
                timeout=aiohttp.ClientTimeout(total=time_limit),
            ) as resp:
                if max_bytes is None:
                    data = await resp.read()
                else:
                    length = resp.headers.get("Content-Length")
                    chunks = resp.content.iter_any()
                    data = await read_capped(chunks, max_bytes, status=resp.status, length=length)
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
        try:
            resp = await self._client().request(
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
        current = asyncio.get_running_loop()
        for loop, session in list(self._sessions.items()):
            if loop is current:
                del self._sessions[loop]
                await session.close()
            elif loop.is_closed():  # its sockets went with it; nothing left to await
                del self._sessions[loop]
                session.detach()


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

        try:
            async with (
                asyncio.timeout(time_limit),
                self._client.stream(method, url, headers=dict(headers), content=body) as resp,
            ):
                length = resp.headers.get("Content-Length")
                data = await read_capped(
                    resp.aiter_bytes(), max_bytes, status=resp.status_code, length=length
                )
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
            async for chunk in self._resp.aiter_raw():
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

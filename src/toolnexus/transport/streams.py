"""HTTP/1.1 on asyncio streams: the default transport for the model endpoint.

A model call is one POST to one endpoint, over and over, so the transport needs little: a pool
of kept-alive connections per host, ``Content-Length`` and chunked bodies, gzip/deflate, TLS
with the system's trust store, and timeouts. Doing only that costs about half of what a
general HTTP client does per request (``benchmarks/suite.py``: the floor on aiohttp against
the raw floor), which is most of what stands between a run and the cost of its round trips.
Anything else (proxies, redirects, cookies) is out of scope here; pass ``http_client`` for it.

Pools follow the rules of ``AiohttpTransport``: one per event loop, closed when that loop shuts
down its async generators (as ``asyncio.run`` does) or by ``aclose()``; safe from many threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlsplit

from .chunked import Dechunker
from .http import HttpResponse, NetworkError, read_capped
from .per_loop import PerLoop

__all__ = ["StreamTransport"]

IDLE_SECONDS = 15.0
"""A connection idle for longer is not reused (servers close theirs after a while)."""
_LIMIT = 1 << 20
"""Longest response head (status line and headers) read."""
_READ = 1 << 16
_NO_BODY = frozenset({204, 304})
_FINISH_SECONDS = 0.05
"""How long ``finish`` waits for the rest of a body its reader no longer wanted."""
_SAFE = "!#$%&'()*+,/:;=?@[]~"
"""Characters left as they are when a request target with non-ASCII text is percent-encoded."""


class StreamTransport:
    """The default transport of a client's model calls (``http_client`` replaces it)."""

    def __init__(self) -> None:
        self._pools: PerLoop[_Pool] = PerLoop(_Pool, _close_pool, _Pool.close)
        self._tls: ssl.SSLContext | None = None
        self._target: _Target | None = None
        """The last URL sent to, parsed."""

    @property
    def injected(self) -> bool:
        """Always ``False``: the connections belong to the transport."""
        return False

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def _send(
        self,
        pool: _Pool,
        url: str,
        method: str,
        headers: Mapping[str, str],
        body: bytes | None,
        read_timeout: float | None = None,
    ) -> tuple[_Connection, _Response]:
        """The request sent and the response head read, on a pooled connection if one is idle.

        Nothing is sent twice: a failure is the caller's to retry (its retry policy decides).
        """
        target = self._target
        if target is None or target.url != url:
            # A client posts to one URL: parsed once, not per request (about a tenth of a
            # request's CPU in the transport's own micro-benchmark).
            target = self._target = _Target(url)
        conn = pool.take(target.key)
        if conn is None:
            tls = self._tls_context() if target.tls else None
            try:
                reader, writer = await asyncio.open_connection(
                    target.host,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                    limit=_LIMIT,
                )
            except (OSError, ssl.SSLError) as exc:
                raise NetworkError(_describe(exc)) from exc
            conn = _Connection(target.key, reader, writer)
        try:
            return conn, await conn.exchange(method, target, headers, body, read_timeout)
        except BaseException:
            conn.close()
            raise

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
        """One request, its whole response read within ``time_limit`` seconds."""
        pool = await self._pools.get()
        conn: _Connection | None = None
        try:
            async with asyncio.timeout(time_limit):
                conn, resp = await self._send(pool, url, method, headers, body)
                data = await resp.read_whole(max_bytes)
        except TimeoutError as exc:
            raise NetworkError("request timed out") from exc
        finally:
            if conn is not None:
                pool.give_back(conn)
        return HttpResponse(resp.status, resp.headers, data)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        read_timeout: float | None = None,
    ) -> AsyncIterator[_Response]:
        """A response whose body is read as it arrives; ``read_timeout`` bounds each wait."""
        pool = await self._pools.get()
        conn: _Connection | None = None
        try:
            try:
                async with asyncio.timeout(read_timeout):
                    conn, resp = await self._send(pool, url, method, headers, body, read_timeout)
            except TimeoutError as exc:
                raise NetworkError("request timed out") from exc
            yield resp
            await resp.finish()
        finally:
            if conn is not None:
                pool.give_back(conn)

    async def aclose(self) -> None:
        """Close this loop's pool (pools of running loops close when those loops shut down)."""
        await self._pools.aclose()


async def _close_pool(pool: _Pool) -> None:
    pool.close()


class _Target:
    """Where a URL points, and the fixed part of every request to it."""

    __slots__ = ("head", "host", "key", "port", "tls", "url")

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise NetworkError(f"cannot send to {url.split('?')[0][:200]!r}: not an HTTP URL")
        self.host = parts.hostname
        self.port = parts.port or (443 if scheme == "https" else 80)
        self.key = (scheme, self.host, self.port)
        self.tls = scheme == "https"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if not path.isascii():
            path = quote(path, safe=_SAFE)
        host = parts.netloc.rpartition("@")[2]
        self.head = f" {path} HTTP/1.1\r\nHost: {host}\r\n".encode("ascii", "replace")
        """``<path> HTTP/1.1`` and the ``Host`` line, after the method."""


class _Pool:
    """Idle connections by ``(scheme, host, port)``, the most recently used first."""

    __slots__ = ("idle",)

    def __init__(self) -> None:
        self.idle: dict[tuple[str, str, int], list[_Connection]] = {}

    def take(self, key: tuple[str, str, int]) -> _Connection | None:
        conns = self.idle.get(key)
        now = time.monotonic()
        while conns:
            conn = conns.pop()
            if conn.usable(now):
                return conn
            conn.close()
        return None

    def give_back(self, conn: _Connection) -> None:
        if conn.reusable:
            conn.reusable = False
            conn.idle_since = time.monotonic()
            self.idle.setdefault(conn.key, []).append(conn)
        else:
            conn.close()

    def close(self) -> None:
        for conns in self.idle.values():
            for conn in conns:
                with contextlib.suppress(RuntimeError):  # its loop closed without shutting down
                    conn.close()
        self.idle.clear()


class _Connection:
    __slots__ = ("idle_since", "key", "reader", "reusable", "writer")

    def __init__(
        self, key: tuple[str, str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.key = key
        self.reader = reader
        self.writer = writer
        self.reusable = False
        """Set once a response was read to its end on a connection the server keeps open."""
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        return (
            now - self.idle_since < IDLE_SECONDS
            and not self.reader.at_eof()
            and not self.writer.is_closing()
        )

    def close(self) -> None:
        self.reusable = False
        self.writer.close()

    async def exchange(
        self,
        method: str,
        target: _Target,
        headers: Mapping[str, str],
        body: bytes | None,
        read_timeout: float | None = None,
    ) -> _Response:
        """Send the request; read the response head. Network failures are ``NetworkError``."""
        fields = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
        if fields.count("\n") != len(headers) or fields.count("\r") != len(headers):
            raise ValueError("a request header contains a line break")
        given = {name.lower() for name in headers}
        fields += "".join([line for name, line in _DEFAULTS if name not in given])
        if body is not None or method in ("POST", "PUT", "PATCH"):
            fields += f"Content-Length: {len(body or b'')}\r\n"
        head = method.encode("ascii") + target.head + fields.encode() + b"\r\n"
        try:
            self.writer.write(head + body if body else head)
            head = await self.reader.readuntil(b"\r\n\r\n")
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
            raise NetworkError(_describe(exc)) from exc
        except asyncio.LimitOverrunError as exc:
            raise NetworkError(f"malformed response head: {exc}") from exc
        try:
            while True:
                status, resp_headers = _parse_head(head)
                if not 100 <= status < 200:
                    break
                head = await self.reader.readuntil(b"\r\n\r\n")  # after an interim answer
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
            raise NetworkError(_describe(exc)) from exc
        except (asyncio.LimitOverrunError, ValueError) as exc:
            raise NetworkError(f"malformed response head: {exc}") from exc
        return _Response(self, method, status, resp_headers, read_timeout)


_DEFAULTS = (
    ("user-agent", "User-Agent: toolnexus\r\n"),
    ("accept", "Accept: */*\r\n"),
    ("accept-encoding", "Accept-Encoding: gzip, deflate\r\n"),
)
"""Sent unless the caller gives the header (by lower-case name)."""


def _parse_head(head: bytes) -> tuple[int, Any]:
    from multidict import CIMultiDict, CIMultiDictProxy

    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    status = int(rest[:3])
    fields = [line.split(":", 1) for line in lines[1:] if line]
    headers = CIMultiDict([(field[0].strip(), field[-1].strip()) for field in fields])
    return status, CIMultiDictProxy(headers)


class _Response:
    """A response whose body is read by ``chunks()`` (decoded) or ``read()``."""

    def __init__(
        self,
        conn: _Connection,
        method: str,
        status: int,
        headers: Any,
        read_timeout: float | None,
    ) -> None:
        self._conn = conn
        self.status = status
        self.headers: Mapping[str, str] = headers
        self._timeout = read_timeout
        self._consumed = False
        chunked = "chunked" in headers.get("Transfer-Encoding", "").lower()
        self._dechunker = Dechunker() if chunked else None
        self._left: int | None = None
        """Bytes of a ``Content-Length`` body still to read (``None``: chunked, or to the end)."""
        length = headers.get("Content-Length")
        if method == "HEAD" or status in _NO_BODY:
            self._dechunker, self._left = None, 0
        elif not chunked and length is not None:
            if not length.strip().isdigit():
                raise NetworkError(f"malformed Content-Length: {length[:40]!r}")
            self._left = int(length)
        keep = "close" not in headers.get("Connection", "").lower()
        self._keep_alive = keep and (self._dechunker is not None or self._left is not None)
        coding = headers.get("Content-Encoding", "").lower().strip()
        self._decoder: Any = None
        if coding in ("gzip", "x-gzip", "deflate"):
            self._decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
        elif coding not in ("", "identity"):
            raise NetworkError(f"unsupported Content-Encoding {coding!r}")

    async def read(self) -> bytes:
        """The whole remaining body."""
        return b"".join([chunk async for chunk in self.chunks()])

    async def read_whole(self, limit: int | None) -> bytes:
        """The whole body, within ``limit`` bytes (else ``BodyTooLarge``)."""
        size = self._left
        if size is None or self._decoder is not None or (limit is not None and size > limit):
            return await read_capped(self.chunks(), limit, status=self.status)
        # The usual answer, a plain body of known length: one read, no generators.
        self._consumed = True
        try:
            data = await self._conn.reader.readexactly(size)
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
            raise NetworkError(_describe(exc)) from exc
        self._left = 0
        self._ended()
        return data

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, decoded; a failure is a ``NetworkError``. Only the first
        call reads: a later one yields nothing."""
        if self._consumed:
            return _Nothing()
        self._consumed = True
        return self

    def __aiter__(self) -> _Response:
        return self

    async def __anext__(self) -> bytes:
        # An iterator object rather than generators: nothing to finalize when a reader stops
        # early, and one coroutine per piece instead of two generator layers (an SSE reader
        # stops at its last event: each dropped generator cost a task and a loop wake-up,
        # benchmarks/suite.py streaming).
        try:
            while True:
                raw = await self._next_raw()
                if raw is None:
                    break
                if self._decoder is None:
                    return raw
                data: bytes = self._decoder.decompress(raw)
                if data:
                    return data
            if self._decoder is not None:
                tail: bytes = self._decoder.flush()
                self._decoder = None
                if tail:
                    return tail
        except TimeoutError as exc:  # (an OSError: caught first)
            raise NetworkError("request timed out") from exc
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, zlib.error) as exc:
            raise NetworkError(_describe(exc)) from exc
        except (asyncio.LimitOverrunError, ValueError) as exc:
            raise NetworkError(f"malformed response body: {exc}") from exc
        raise StopAsyncIteration

    def _ended(self) -> None:
        """Every byte of the body has been read: the connection may serve the next request."""
        self._conn.reusable = self._keep_alive

    async def finish(self) -> None:
        """After a reader stopped early (an SSE stream stops at its last event): read what is
        left of the body if it arrives at once, so the connection can be used again."""
        if self._consumed and not self._conn.reusable and self._keep_alive:
            with contextlib.suppress(OSError, ValueError, asyncio.IncompleteReadError):
                async with asyncio.timeout(_FINISH_SECONDS):
                    while await self._next_raw() is not None:
                        pass

    async def _next_raw(self) -> bytes | None:
        """The next piece of the body's bytes as they arrive, before any content decoding
        (``None`` at its end). The framing state lives on the response, so ``finish`` can go
        on where an abandoned reader stopped."""
        reader, timeout = self._conn.reader, self._timeout
        if self._dechunker is not None:
            chunks = self._dechunker
            while not chunks.done:
                data = await _read(reader, _READ, timeout)
                if not data:
                    raise asyncio.IncompleteReadError(b"", None)
                pieces = chunks.feed(data)
                if chunks.done:
                    if chunks.rest:
                        raise ValueError("data after the last chunk")
                    self._ended()
                if pieces:
                    # What one read brought, as one piece: a server that writes an SSE event
                    # per chunk would otherwise cost a pass through every reader per event.
                    return pieces[0] if len(pieces) == 1 else b"".join(pieces)
            return None
        if self._left is not None:
            if self._left == 0:
                self._ended()
                return None
            data = await _read(reader, min(self._left, _READ), timeout)
            if not data:
                raise asyncio.IncompleteReadError(b"", self._left)
            self._left -= len(data)
            if self._left == 0:
                self._ended()
            return data
        # the body ends when the server closes the connection
        return await _read(reader, _READ, timeout) or None


class _Nothing:
    """An empty body iterator (the body was read already)."""

    def __aiter__(self) -> _Nothing:
        return self

    async def __anext__(self) -> bytes:
        raise StopAsyncIteration


async def _read(reader: asyncio.StreamReader, size: int, limit: float | None) -> bytes:
    """What has arrived, up to ``size`` bytes (empty at the end of the stream)."""
    if limit is None:
        return await reader.read(size)
    async with asyncio.timeout(limit):
        return await reader.read(size)


def _describe(exc: BaseException) -> str:
    """A short message for a network failure (never carries request headers)."""
    if isinstance(exc, asyncio.IncompleteReadError):
        return "the server closed the connection before the response was complete"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

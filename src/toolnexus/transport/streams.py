"""HTTP/1.1 on asyncio: the default transport for the model endpoint (and for tools' requests).

A model call is one POST to one endpoint, over and over, so the transport needs little: a pool
of kept-alive connections per host, ``Content-Length`` and chunked bodies, gzip/deflate, TLS
with the system's trust store, and timeouts. Doing only that costs about half of what a
general HTTP client does per request (``benchmarks/suite.py``: the floor on aiohttp against
the raw floor), which is most of what stands between a run and the cost of its round trips.
Redirects are followed when asked (``follow_redirects``, as the tools' shared transport does);
anything else (proxies, cookies) is out of scope here: pass ``http_client`` for it.

Responses are framed by ``httptools`` (llhttp) in ``framing.ResponseFrame``, never by hand: a
response llhttp refuses is a ``NetworkError`` and its connection is closed. A connection goes
back to the pool only when its response was read to its exact end and the server keeps it
open; a byte that arrives after that end, or while the connection is idle, closes it, so no
request ever reads what was sent after (or instead of) another one's response.

Pools follow the rules of ``AiohttpTransport``: one per event loop, closed when that loop shuts
down its async generators (as ``asyncio.run`` does) or by ``aclose()``; safe from many threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
import zlib
from base64 import b64encode
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, unquote, urljoin, urlsplit

from .framing import FramingError, ResponseFrame
from .http import HttpResponse, NetworkError, read_capped
from .per_loop import PerLoop

__all__ = ["StreamTransport"]

IDLE_SECONDS = 15.0
"""A connection idle for longer is not reused (servers close theirs after a while)."""
_HIGH_WATER = 1 << 20
"""Body bytes held unread before the connection stops reading from the socket."""
_FINISH_SECONDS = 0.05
"""How long ``finish`` waits for the rest of a body its reader no longer wanted."""
_SAFE = "!#$%&'()*+,/:;=?@[]~"
"""Characters left as they are when a request target with non-ASCII text is percent-encoded."""


class StreamTransport:
    """The default transport of a client's model calls (``http_client`` replaces it), and of
    tools' requests (with ``follow_redirects``: at most that many redirects are followed, as a
    browser does; the last redirect is the answer past that)."""

    def __init__(self, *, follow_redirects: int = 0) -> None:
        self._redirects = follow_redirects
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
            conn = _Connection(target.key)
            try:
                await asyncio.get_running_loop().create_connection(
                    lambda: conn,
                    target.host,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                )
            except (OSError, ssl.SSLError) as exc:
                raise NetworkError(_describe(exc)) from exc
        try:
            return conn, await conn.exchange(method, target, headers, body, read_timeout)
        except BaseException:
            conn.close()
            raise

    async def _open(
        self,
        pool: _Pool,
        url: str,
        method: str,
        headers: Mapping[str, str],
        body: bytes | None,
        read_timeout: float | None = None,
    ) -> tuple[_Connection, _Response]:
        """``_send``, following redirects as far as ``follow_redirects`` allows."""
        hops = 0
        while True:
            conn, resp = await self._send(pool, url, method, headers, body, read_timeout)
            hop = _redirect(resp, url, method, headers, body) if hops < self._redirects else None
            if hop is None:
                return conn, resp
            hops += 1
            try:
                await resp.finish()  # a short body, read so the connection can serve the next
            finally:
                pool.give_back(conn)
            url, method, headers, body = hop

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
                conn, resp = await self._open(pool, url, method, headers, body)
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
                    conn, resp = await self._open(pool, url, method, headers, body, read_timeout)
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


_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PRIVATE = frozenset({"authorization", "cookie", "proxy-authorization"})
"""Headers not carried to another origin by a redirect."""


def _redirect(
    resp: _Response, url: str, method: str, headers: Mapping[str, str], body: bytes | None
) -> tuple[str, str, Mapping[str, str], bytes | None] | None:
    """Where a redirect sends the request (``(url, method, headers, body)``), else ``None``.

    ``303`` (and ``301``/``302`` after a ``POST``) turn the request into a ``GET`` without a
    body, as browsers do; ``307``/``308`` repeat it as it was. Credentials stay with their
    origin.
    """
    location = resp.headers.get("Location") if resp.status in _REDIRECTS else None
    if not location:
        return None
    target = urljoin(url, location.strip())
    if urlsplit(target).scheme.lower() not in ("http", "https"):
        return None
    status = resp.status
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, body = "GET", None
        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
    if _origin(target) != _origin(url):
        headers = {k: v for k, v in headers.items() if k.lower() not in _PRIVATE}
    return target, method, headers, body


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname, parts.port or (443 if scheme == "https" else 80)


class _Target:
    """Where a URL points, and the fixed part of every request to it."""

    __slots__ = ("auth", "head", "host", "key", "port", "tls", "url")

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
        if not host.isascii():
            with contextlib.suppress(UnicodeError):
                host = host.encode("idna").decode("ascii")
        self.head = f" {path} HTTP/1.1\r\nHost: {host}\r\n".encode("ascii", "replace")
        """``<path> HTTP/1.1`` and the ``Host`` line, after the method."""
        self.auth = ""
        """An ``Authorization`` line for credentials in the URL (``user:password@``)."""
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self.auth = f"Authorization: Basic {b64encode(pair.encode()).decode()}\r\n"


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
        frame = conn.frame
        conn.frame = None  # idle from here: a byte that arrives now closes the connection
        if frame is not None and frame.complete and frame.keep_alive and not conn.broken:
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


class _Connection(asyncio.Protocol):
    """One connection: what arrives is fed to the current response's ``ResponseFrame``."""

    def __init__(self, key: tuple[str, str, int]) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.frame: ResponseFrame | None = None
        """The response being read (``None`` while the connection is idle)."""
        self.broken = False
        """Closed, or not to be reused: the server closed it, or sent what nobody asked for."""
        self.failure: BaseException | None = None
        """Why reading stopped early: a ``FramingError``, or the socket's error."""
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        frame = self.frame
        if frame is None or frame.complete:
            # Bytes after a response's end, or while idle: never let a later request read them.
            if frame is not None:
                frame.trailing = True
                frame.keep_alive = False
            self.close()
            return
        try:
            frame.feed(data)
        except FramingError as exc:
            self.failure = exc
            self.close()
        else:
            if frame.buffered > _HIGH_WATER and not self._paused and self.transport is not None:
                self._paused = True
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._input_ended(None)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._input_ended(exc)

    def _input_ended(self, exc: BaseException | None) -> None:
        self.broken = True
        frame = self.frame
        if frame is not None and not frame.complete and self.failure is None:
            if exc is not None:
                self.failure = exc
            else:
                try:
                    frame.end_of_input()
                except FramingError as error:
                    self.failure = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- used by the transport -------------------------------------------------------------

    def usable(self, now: float) -> bool:
        return (
            now - self.idle_since < IDLE_SECONDS
            and not self.broken
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def close(self) -> None:
        self.broken = True
        if self.transport is not None:
            self.transport.close()

    async def wait(self, limit: float | None) -> None:
        """Until more arrives (or the input ends); ``TimeoutError`` after ``limit`` seconds."""
        if self.failure is not None or self.broken:
            return
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            if limit is None:
                await waiter
            else:
                async with asyncio.timeout(limit):
                    await waiter
        finally:
            self._waiter = None

    def check(self) -> None:
        """Raise what stopped the reading, as a ``NetworkError``."""
        failure = self.failure
        if failure is not None:
            if isinstance(failure, FramingError):
                raise NetworkError(str(failure)) from failure
            raise NetworkError(_describe(failure)) from failure
        if self.broken:
            raise NetworkError("the server closed the connection before the response was complete")

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
        if target.auth and "authorization" not in given:
            fields += target.auth
        if body is not None or method in ("POST", "PUT", "PATCH"):
            fields += f"Content-Length: {len(body or b'')}\r\n"
        head = method.encode("ascii") + target.head + fields.encode() + b"\r\n"
        frame = self.frame = ResponseFrame(method)
        self.failure = None
        if self.broken or self.transport is None:
            raise NetworkError("the server closed the connection before the response was complete")
        self.transport.write(head + body if body else head)
        while not frame.head_done:
            self.check()
            await self.wait(None)  # the caller bounds the whole exchange
        return _Response(self, frame, read_timeout)


_DEFAULTS = (
    ("user-agent", "User-Agent: toolnexus\r\n"),
    ("accept", "Accept: */*\r\n"),
    ("accept-encoding", "Accept-Encoding: gzip, deflate\r\n"),
)
"""Sent unless the caller gives the header (by lower-case name)."""


class _Response:
    """A response whose body is read by ``chunks()`` (decoded) or ``read()``."""

    def __init__(self, conn: _Connection, frame: ResponseFrame, read_timeout: float | None) -> None:
        self._conn = conn
        self._frame = frame
        self.status = frame.status
        self.headers: Mapping[str, str] = frame.headers
        self._timeout = read_timeout
        self._consumed = False
        coding = frame.headers.get("Content-Encoding", "").lower().strip()
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
        frame, conn = self._frame, self._conn
        if self._decoder is None and not self._consumed:
            # The usual answer, a plain body: wait for its end, then one join; no generators.
            while not frame.complete and (limit is None or frame.buffered <= limit):
                conn.check()
                await self._wait()
            if frame.complete and (limit is None or frame.buffered <= limit):
                self._consumed = True
                return frame.take()
        return await read_capped(self.chunks(), limit, status=self.status)

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
        frame, conn = self._frame, self._conn
        while True:
            if frame.buffered:
                raw = frame.take()
                if self._decoder is None:
                    return raw
                try:
                    data: bytes = self._decoder.decompress(raw)
                except zlib.error as exc:
                    conn.close()
                    raise NetworkError(_describe(exc)) from exc
                if data:
                    return data
                continue
            if frame.complete:
                break
            conn.check()
            await self._wait()
        if self._decoder is not None:
            tail: bytes = self._decoder.flush()
            self._decoder = None
            if tail:
                return tail
        raise StopAsyncIteration

    async def _wait(self) -> None:
        try:
            await self._conn.wait(self._timeout)
        except TimeoutError as exc:
            self._conn.close()
            raise NetworkError("request timed out") from exc

    async def finish(self) -> None:
        """After a reader stopped early (an SSE stream stops at its last event): read what is
        left of the body if it arrives at once, so the connection can be used again."""
        frame, conn = self._frame, self._conn
        if not self._consumed or frame.complete or conn.broken:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_FINISH_SECONDS):
                while not frame.complete and conn.failure is None and not conn.broken:
                    frame.take()
                    await conn.wait(None)
        frame.take()


class _Nothing:
    """An empty body iterator (the body was read already)."""

    def __aiter__(self) -> _Nothing:
        return self

    async def __anext__(self) -> bytes:
        raise StopAsyncIteration


def _describe(exc: BaseException) -> str:
    """A short message for a network failure (never carries request headers)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

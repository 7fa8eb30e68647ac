"""The HTTP listener behind ``Toolkit.serve``: routes on one uvicorn server.

Each protocol contributes a ``Route`` (a path, an ASGI app, and the async context that must be
open while the app serves), so MCP at ``/mcp`` and other protocols can share one listener; any
other path answers 404 (a known path asked with a method no route takes, 405). A route matches
its exact path, or every path under it when it is a ``prefix``; two routes may share a path
when they take different ``methods`` (the chat page's ``GET /`` beside A2A's ``POST /``).

The server runs as a task on the caller's event loop; it installs no signal
handlers (stopping is the host's decision, through ``ServeHandle.aclose``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..types import ServeHandle

__all__ = ["LOOPBACK_HOSTS", "Route", "ServeHandle", "loopback_only", "parse_addr", "start_http"]

logger = logging.getLogger("toolnexus")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body read into memory; a larger one is answered 413."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Bind addresses on which only loopback ``Host`` and ``Origin`` values are accepted."""
_SHUTDOWN_GRACE_S = 2
_TOO_LARGE = b"<too large>"


@dataclass(frozen=True, slots=True)
class Route:
    """One exact path served by an ASGI app, with the context it needs while serving."""

    path: str
    app: ASGIApp
    lifespan: Callable[[], AbstractAsyncContextManager[Any]] | None = None
    public: bool = False
    """Served without a token when the server requires one (the chat page and its files)."""
    prefix: bool = False
    """``path`` ends with ``/`` and every path under it goes to ``app`` (``/static/...``)."""
    methods: frozenset[str] | None = None
    """The request methods this route takes (``None``: every method)."""


def parse_addr(addr: str) -> tuple[str, int]:
    """``"HOST:PORT"`` (``"[::1]:PORT"`` for IPv6) → ``(host, port)``, else ``ConfigError``."""
    if not isinstance(addr, str):
        raise ConfigError(f"addr must be a string HOST:PORT, got {type(addr).__name__}")
    host, sep, port_text = addr.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"addr {addr!r} must be HOST:PORT with a port from 0 to 65535")
    return host, int(port_text)


async def start_http(
    addr: str, routes: Sequence[Route] | Callable[[str], Sequence[Route]]
) -> ServeHandle:
    """Bind ``addr``, open every route's lifespan, serve until ``stop``; returns once listening.

    ``routes`` may be a function of the server's URL (``http://HOST:PORT``, the bound port),
    called once the socket is bound, for routes that announce where they are served.
    """
    host, port = parse_addr(addr)
    sock = _listen(host, port)
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound_port}"
    if callable(routes):
        try:
            routes = routes(url)
        except BaseException:
            sock.close()
            raise
    server = _make_server(_Router(routes))
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(_serve(server, sock, routes, ready), name=f"toolnexus serve {addr}")
    try:
        await asyncio.shield(ready)
    except BaseException:
        server.should_exit = True
        with contextlib.suppress(BaseException):
            await task
        sock.close()
        raise

    async def stop() -> None:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)

    return ServeHandle(url, stop)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(511)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


async def _serve(
    server: Any, sock: socket.socket, routes: Sequence[Route], ready: asyncio.Future[None]
) -> None:
    try:
        async with AsyncExitStack() as stack:
            for route in routes:
                if route.lifespan is not None:
                    await stack.enter_async_context(route.lifespan())

            def started() -> None:
                if not ready.done():
                    ready.set_result(None)

            server.on_started = started
            await server.serve(sockets=[sock])
    except BaseException as exc:
        if not ready.done():
            ready.set_exception(
                exc if isinstance(exc, Exception) else RuntimeError("server stopped")
            )
            return
        raise
    finally:
        sock.close()
        if not ready.done():
            ready.set_exception(RuntimeError("the server stopped before it was listening"))


def _make_server(app: ASGIApp) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn without signal capture, reporting when it listens."""

        on_started: Callable[[], object] = staticmethod(lambda: None)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                self.on_started()

    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=_SHUTDOWN_GRACE_S,
    )
    return _Server(config)


class _Router:
    """Dispatch by path (exact routes before prefixes) and method; else 404 (or 405)."""

    def __init__(self, routes: Sequence[Route]) -> None:
        ordered = sorted(routes, key=lambda r: r.prefix)  # exact paths first, stable otherwise
        self._routes = [(r, _CancelOnDisconnect(r.app)) for r in ordered]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path, method = scope.get("path", ""), scope.get("method", "GET")
        known = False
        for route, app in self._routes:
            if path.startswith(route.path) if route.prefix else path == route.path:
                known = True
                if route.methods is None or method in route.methods:
                    await app(scope, receive, send)
                    return
        await _respond(
            send, 405 if known else 404, b"method not allowed" if known else b"not found"
        )


class _CancelOnDisconnect:
    """Reads the request body, then runs the app while watching the connection.

    When the client goes away before the answer is sent, the app (and the tool call it is
    running) is cancelled instead of running on for nobody.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        if body is None:
            return
        if body is _TOO_LARGE:
            await _respond(send, 413, b"request body too large")
            return
        gone = asyncio.Event()
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        app_task = asyncio.ensure_future(self._app(scope, replay, send))
        watcher = asyncio.ensure_future(_watch(receive, gone, app_task))
        try:
            await app_task
        except asyncio.CancelledError:
            if not gone.is_set():
                raise
        finally:
            watcher.cancel()
            app_task.cancel()


async def _watch(receive: Receive, gone: asyncio.Event, app_task: asyncio.Future[None]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            if not app_task.done():
                app_task.cancel()
            return


def loopback_only(app: ASGIApp, also: frozenset[str] = frozenset()) -> ASGIApp:
    """``app`` behind a DNS-rebinding guard: a request whose ``Host`` is not a loopback name
    (or one of the host names ``also``) is answered 421, one whose ``Origin`` (when sent) is
    not such a host 403."""
    allowed = LOOPBACK_HOSTS | also

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        if _hostname(headers.get("host", "")) not in allowed:
            await _respond(send, 421, b"Invalid Host header")
            return
        origin = headers.get("origin")
        if origin is not None and not _origin_in(origin, allowed):
            await _respond(send, 403, b"Invalid Origin header")
            return
        await app(scope, receive, send)

    return guarded


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _origin_in(origin: str, allowed: frozenset[str]) -> bool:
    scheme, sep, rest = origin.partition("://")
    return bool(sep) and scheme in ("http", "https") and _hostname(rest) in allowed


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body (stopping early past the limit), or ``None`` if the client left."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return _TOO_LARGE
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(send: Send, status: int, text: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(text)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": text})

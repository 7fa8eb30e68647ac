"""The HTTP listener behind ``Toolkit.serve``: routes on one uvicorn server.

Each protocol contributes a ``Route`` (a path, an ASGI app, the async context that must be
open while the app serves, and whether the route is public), so MCP at ``/mcp``, A2A, the chat
UI and any other protocol share one listener. A route matches its exact path, or every path
under it when it is a ``prefix``; two routes may share a path when they take different
``methods`` (the chat page's ``GET /`` beside A2A's ``POST /``); any other path answers 404 (a
known path asked with a method no route takes, 405). Every route sits behind one gate
(``_Gate``): the Host/Origin allow-list (421/403), bearer auth on every route that is not
public (401 with ``WWW-Authenticate: Bearer``), the body limits (413, 408, 415, and a JSON-RPC
parse error for a body that is not UTF-8 or nests too deep), then the route's app, cancelled
when the client goes away. Below the gate, the connection itself is bounded: a request whose
headers do not arrive within ``read_timeout_s`` is dropped, as is a connection beyond
``max_connections``. The server runs as a task on the caller's event loop; it installs no
signal handlers (stopping is the host's decision, through ``ServeHandle.aclose``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..types import ServeHandle
from .access import Authenticator, HostRules
from .listener import make_server

__all__ = [
    "CALLER_KEY",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_READ_TIMEOUT_S",
    "MAX_JSON_DEPTH",
    "Access",
    "Route",
    "ServeHandle",
    "ServeLimits",
    "parse_addr",
    "start_http",
]

logger = logging.getLogger("toolnexus")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Largest request body read into memory; a larger one is answered 413."""
DEFAULT_READ_TIMEOUT_S = 30.0
"""Longest wait for a request's headers, or for its whole body; then the client is dropped."""
DEFAULT_MAX_CONNECTIONS = 1000
"""Most connections open at once; one beyond it is closed as soon as it is accepted."""
MAX_JSON_DEPTH = 512
"""Deepest JSON nesting of a request body; deeper is a JSON-RPC parse error."""
CALLER_KEY = "toolnexus.caller"
"""ASGI scope key holding the authenticated caller's identity (``None`` without auth)."""


@dataclass(frozen=True, slots=True)
class Route:
    """One exact path served by an ASGI app, with the context it needs while serving.

    A ``public`` route is answered without a token and whatever the ``Origin`` (its ``Host``
    is still checked): the A2A agent card, a UI page and its static files.
    """

    path: str
    app: ASGIApp
    lifespan: Callable[[], AbstractAsyncContextManager[Any]] | None = None
    public: bool = False
    """Served without a token when the server requires one (the chat page and its files)."""
    prefix: bool = False
    """``path`` ends with ``/`` and every path under it goes to ``app`` (``/static/...``)."""
    methods: frozenset[str] | None = None
    """The request methods this route takes (``None``: every method)."""


@dataclass(frozen=True, slots=True)
class ServeLimits:
    """What one server accepts from its clients (see ``Toolkit.serve``)."""

    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def __post_init__(self) -> None:
        for name in ("max_request_bytes", "max_connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        timeout = self.read_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigError(
                f"read_timeout_s must be a positive number of seconds, got {timeout!r}"
            )


@dataclass(frozen=True, slots=True)
class Access:
    """Who may reach the routes: the token check (``None``: no auth) and the Host rules."""

    auth: Authenticator | None
    hosts: HostRules


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
    addr: str,
    routes: Sequence[Route] | Callable[[str], Sequence[Route]],
    *,
    access: Access | None = None,
    limits: ServeLimits | None = None,
) -> ServeHandle:
    """Bind ``addr``, open every route's lifespan, serve until ``stop``; returns once listening.

    ``routes`` may be a function of the server's URL (``http://HOST:PORT``, the bound port),
    called once the socket is bound, for routes that announce where they are served.
    ``access`` defaults to no auth and the bind's Host rules; ``limits`` to ``ServeLimits()``.
    """
    host, port = parse_addr(addr)
    access = access if access is not None else Access(None, HostRules.build(host))
    limits = limits if limits is not None else ServeLimits()
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
    server = make_server(
        _Gate(routes, access, limits), limits.read_timeout_s, limits.max_connections
    )
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


class _Gate:
    """Every route behind the same checks, then exact-path dispatch; everything else is 404."""

    def __init__(self, routes: Sequence[Route], access: Access, limits: ServeLimits) -> None:
        self._routes = sorted(routes, key=lambda r: r.prefix)  # exact paths first, stable otherwise
        self._access = access
        self._limits = limits

    def _match(self, path: str, method: str) -> tuple[Route | None, bool]:
        """The route for ``path`` and ``method``, and whether any route has that path."""
        known = False
        for route in self._routes:
            if path.startswith(route.path) if route.prefix else path == route.path:
                known = True
                if route.methods is None or method in route.methods:
                    return route, True
        return None, known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers: dict[str, str] = {}
        for key, value in scope.get("headers", []):
            name = key.decode("latin-1").lower()
            if name in headers and name in ("host", "origin", "authorization", "content-type"):
                await _respond(send, 400, f"duplicate {name} header".encode())
                return
            headers[name] = value.decode("latin-1")
        if not self._access.hosts.host_ok(headers.get("host", "")):
            await _respond(send, 421, b"Invalid Host header")
            return
        route, known = self._match(scope.get("path", ""), scope.get("method", "GET"))
        if route is None:
            await _respond(
                send, 405 if known else 404, b"method not allowed" if known else b"not found"
            )
            return
        scope[CALLER_KEY] = None
        if not route.public:
            origin = headers.get("origin")
            if origin is not None and not self._access.hosts.origin_ok(origin):
                await _respond(send, 403, b"Invalid Origin header")
                return
            if self._access.auth is not None:
                caller = await self._caller(headers.get("authorization", ""))
                if caller is None:
                    await _respond(send, 401, b"unauthorized", [(b"www-authenticate", b"Bearer")])
                    return
                scope[CALLER_KEY] = caller
        await self._dispatch(route.app, scope, headers, receive, send)

    async def _caller(self, authorization: str) -> str | None:
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or self._access.auth is None:
            return None
        try:
            return await self._access.auth.check(token)
        except Exception:
            logger.warning("serve: the auth check raised; the request is refused", exc_info=True)
            return None

    async def _dispatch(
        self, app: ASGIApp, scope: Scope, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        limit = self._limits.max_request_bytes
        length = headers.get("content-length", "")
        post = scope.get("method") == "POST"
        if post and not _is_json(headers.get("content-type", "")):
            await _respond(send, 415, b"the request body must be application/json", close=True)
            return
        reading = _Body(limit)
        if length.isdigit() and int(length) > limit + _DRAIN_BYTES:
            reading.too_large = True  # not worth draining: answered at once
        else:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._limits.read_timeout_s):
                    await reading.read(receive)
        if reading.too_large:
            await _respond(send, 413, b"request body too large", close=True)
            return
        if reading.gone:
            return
        if not reading.done:
            await _respond(send, 408, b"the request body did not arrive in time", close=True)
            return
        body = reading.body
        if post and body:
            problem = _json_problem(body)
            if problem is not None:
                await _parse_error(send, problem)
                return
        await _run_watched(app, scope, body, receive, send)


_DRAIN_BYTES = 16 * 1024 * 1024
"""Of a body over the limit, this much more is read and dropped before the 413 (so a client that
sends its whole body first still reads the answer); a longer declared body is refused at once."""


class _Body:
    """A request body read within ``limit`` bytes; past it, ``_DRAIN_BYTES`` more drained."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.done = self.gone = self.too_large = False

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    async def read(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                return
            chunk = message.get("body", b"")
            self.size += len(chunk)
            if self.size > self.limit:
                self.too_large = True
                self.chunks.clear()
            elif not self.too_large:
                self.chunks.append(chunk)
            if not message.get("more_body", False) or self.size > self.limit + _DRAIN_BYTES:
                self.done = True
                return


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _json_problem(body: bytes) -> str | None:
    """Why a JSON body is refused before the protocol parses it (not UTF-8, nested deeper
    than ``MAX_JSON_DEPTH``), or ``None``. Only a body with that many brackets is parsed
    here (with ``json``), then measured level by level."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not valid UTF-8"
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return None
    try:
        parsed = json.loads(body)
    except RecursionError:
        return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    except ValueError:
        return None  # not JSON at all: the protocol's own parser answers that
    level: list[Any] = [parsed] if isinstance(parsed, list | dict) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_JSON_DEPTH:
            return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
        inner: list[Any] = []
        for value in level:
            if value:
                items = value.values() if type(value) is dict else value
                inner += [v for v in items if type(v) is list or type(v) is dict]
        level = inner
    return None


async def _run_watched(
    app: ASGIApp, scope: Scope, body: bytes, receive: Receive, send: Send
) -> None:
    """Run the app on the read body while watching the connection.

    When the client goes away before the answer is sent, the app (and the tool call it is
    running) is cancelled instead of running on for nobody.
    """
    gone = asyncio.Event()
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    app_task = asyncio.ensure_future(app(scope, replay, send))
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


async def _parse_error(send: Send, why: str) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {why}"}}
    ).encode()
    await _respond(send, 400, body, content_type=b"application/json")


async def _respond(
    send: Send,
    status: int,
    text: bytes,
    extra: Sequence[tuple[bytes, bytes]] = (),
    *,
    close: bool = False,
    content_type: bytes = b"text/plain; charset=utf-8",
) -> None:
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(text)).encode()),
        *extra,
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text})

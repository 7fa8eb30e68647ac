"""The uvicorn server under ``http``'s gate, bounded at the connection level.

A request whose start line and headers do not all arrive within ``read_timeout_s`` of the
connection opening (or of the previous answer) is dropped, so idle and slow clients cannot
hold connections; so is one whose headers grow past ``MAX_HEADER_BYTES``. A connection beyond
``max_connections`` is closed as soon as it is accepted; the cap never exceeds what the
process's file-descriptor limit leaves room for (``_FD_RESERVE`` kept for files, tool
processes and MCP servers), so held connections cannot starve the process of descriptors.
uvicorn's own keep-alive timeout closes idle connections between requests. No signal
handlers are installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["MAX_HEADER_BYTES", "connection_cap", "make_server"]

logger = logging.getLogger("toolnexus")

MAX_HEADER_BYTES = 64 * 1024
"""Most bytes a request's start line and headers may take; more closes the connection."""
_FD_RESERVE = 64
_SHUTDOWN_GRACE_S = 2
_IDLE_S = 5.0


def make_server(app: Any, read_timeout_s: float, max_connections: int) -> Any:
    """A uvicorn server for ``app`` that installs no signal handlers and reports (``on_started``)
    once it listens, on the bounded protocol below."""
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
        http=_bounded_protocol(read_timeout_s, connection_cap(max_connections)),
        timeout_keep_alive=max(1, round(min(_IDLE_S, read_timeout_s))),
        timeout_graceful_shutdown=_SHUTDOWN_GRACE_S,
    )
    return _Server(config)


def connection_cap(max_connections: int) -> int:
    """``max_connections``, lowered to what the file-descriptor limit leaves room for."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # not on this platform
        return max_connections
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return max_connections
    room = max(1, soft - _FD_RESERVE)
    if room < max_connections:
        logger.debug("serve: at most %d connections (file-descriptor limit %d)", room, soft)
    return min(max_connections, room)


def _bounded_protocol(read_timeout_s: float, max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with a deadline for each request's headers (idle or slow
    clients are dropped after ``read_timeout_s``), a cap on header bytes, and a cap on open
    connections (one beyond ``max_connections`` is closed as soon as it is accepted)."""
    base: Any
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:  # httptools missing: the h11 protocol has the same shape
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class Bounded(base):  # type: ignore[misc]
        _deadline: asyncio.TimerHandle | None = None
        _header_bytes = 0

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            if len(self.connections) >= max_connections:
                self.transport = transport
                logger.warning(
                    "serve: %d connections open; one more refused", len(self.connections)
                )
                transport.abort()  # type: ignore[attr-defined]
                return
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and self._deadline is None:
                self._arm()
            before = self.cycle
            super().data_received(data)
            if self.cycle is not before:  # a request's headers are in: the app reads the body
                self._disarm()
            elif waiting:
                self._header_bytes += len(data)
                if self._header_bytes > MAX_HEADER_BYTES:
                    self._drop("request headers too large")

        def _arm(self) -> None:
            self._header_bytes = 0
            self._deadline = self.loop.call_later(
                read_timeout_s, self._drop, "no complete request in time"
            )

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _drop(self, why: str) -> None:
            self._deadline = None
            if self.transport is not None and not self.transport.is_closing():
                logger.debug("serve: connection dropped (%s)", why)
                self.transport.close()

    return Bounded

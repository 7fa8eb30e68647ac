"""The MCP SDK's transports, opened for one server: stdio, streamable HTTP and SSE.

Each function returns an async context manager yielding the SDK's ``(read, write)`` stream
pair. The SDK is imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TextIO

from .config import McpServerConfig

__all__ = ["HttpStatusError", "SessionFlags", "sse", "stdio", "streamable_http"]

Streams = contextlib.AbstractAsyncContextManager[tuple[Any, Any]]


@dataclass(slots=True)
class SessionFlags:
    """What a transport learnt about its session while it was in use."""

    gone: bool = False
    """The server answered 404 to a request carrying the session id: the session is over."""


class HttpStatusError(Exception):
    """A streamable-HTTP connection failed after the server answered with an error status."""

    def __init__(self, status: int, cause: BaseException) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.cause = cause


def stdio(config: McpServerConfig) -> Streams:
    """Start the server's command with ``os.environ`` plus its ``env``, in its ``cwd``."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    program, *args = config.command
    params = StdioServerParameters(
        command=program, args=args, env={**os.environ, **config.env}, cwd=config.cwd
    )
    return stdio_client(params, errlog=_child_stderr())


@contextlib.asynccontextmanager
async def streamable_http(
    url: str, headers: dict[str, str], flags: SessionFlags
) -> AsyncIterator[tuple[Any, Any]]:
    """Streamable HTTP with ``headers`` on every request; notes error statuses in ``flags``."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            statuses.append(response.status_code)
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            flags.gone = True

    client = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [record]},
    )
    try:
        async with client, streamable_http_client(url, http_client=client) as streams:
            yield streams
    except Exception as exc:
        if statuses:
            raise HttpStatusError(statuses[-1], exc) from exc
        raise


def sse(url: str, headers: dict[str, str], timeout: float) -> Streams:
    """The older HTTP+SSE transport (the fallback when streamable HTTP fails)."""
    from mcp.client.sse import sse_client

    return sse_client(url, headers=headers, timeout=timeout)


def _child_stderr() -> TextIO:
    """Where a stdio server's stderr goes: ours when it is a real file, else nowhere."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return subprocess.DEVNULL  # type: ignore[return-value]  # the SDK hands it to the spawn

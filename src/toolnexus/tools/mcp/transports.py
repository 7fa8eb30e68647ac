"""The MCP SDK's transports, opened for one server: stdio, streamable HTTP and SSE.

Each function returns an async context manager yielding the SDK's ``(read, write)`` stream
pair. The SDK is imported inside the functions only.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from .config import McpServerConfig
from .stdio_child import StderrTail, child_command, child_env

__all__ = [
    "HttpStatusError",
    "SessionFlags",
    "offers_oauth",
    "sse",
    "stdio",
    "streamable_http",
]

Streams = contextlib.AbstractAsyncContextManager[tuple[Any, Any]]


@dataclass(slots=True)
class SessionFlags:
    """What a transport learnt about its session while it was in use."""

    gone: bool = False
    """The server answered 404 to a request carrying the session id: the session is over."""
    stale: bool = False
    """The server answered 400 to a request carrying the session id, naming the session in
    its body (what a server that restarted answers to the old id): the session is over."""
    offers_oauth: bool = False
    """The server answered 401 with a ``WWW-Authenticate`` challenge that points to OAuth
    metadata (``resource_metadata``) or names the Bearer scheme."""


class HttpStatusError(Exception):
    """A streamable-HTTP connection failed after the server answered with an error status."""

    def __init__(self, status: int, cause: BaseException) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.cause = cause


@contextlib.asynccontextmanager
async def stdio(config: McpServerConfig, tail: StderrTail) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server's command in its ``cwd`` with the SDK's safe environment plus ``env``.

    Its stderr goes to ``tail``, which learns the exit code when the process ends.
    """
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = child_env(config)
    program, *args = child_command(config, env)
    params = StdioServerParameters(command=program, args=args, env=env, cwd=config.cwd)
    await tail.start()
    try:
        async with stdio_client(params, errlog=tail.writer) as streams:
            tail.spawned()
            yield streams
    finally:
        tail.spawned()


@contextlib.asynccontextmanager
async def streamable_http(
    url: str, headers: dict[str, str], flags: SessionFlags, auth: Any = None
) -> AsyncIterator[tuple[Any, Any]]:
    """Streamable HTTP with ``headers`` on every request; notes error statuses in ``flags``.

    ``auth`` is an ``httpx2.Auth`` (the OAuth provider) or ``None``.
    """
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        if "text/event-stream" not in response.request.headers.get("accept", ""):
            return  # an OAuth discovery, registration or token request, not the MCP endpoint
        if response.status_code >= 400:
            statuses.append(response.status_code)
        if response.status_code == 401:
            flags.offers_oauth = offers_oauth(response.headers.get("www-authenticate", ""))
        if "mcp-session-id" in response.request.headers:
            if response.status_code == 404:
                flags.gone = True
            elif response.status_code == 400:
                body = await response.aread()  # small; kept for the SDK to read again
                flags.stale = b"session" in body[:4096].lower()

    client = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [record]},
        auth=auth,
    )
    try:
        async with client, streamable_http_client(url, http_client=client) as streams:
            yield streams
    except Exception as exc:
        if statuses:
            raise HttpStatusError(statuses[-1], exc) from exc
        raise


def offers_oauth(challenge: str) -> bool:
    """Whether a 401's ``WWW-Authenticate`` value invites an OAuth sign-in."""
    lowered = challenge.lower()
    return "resource_metadata" in lowered or lowered.lstrip().startswith("bearer")


def sse(url: str, headers: dict[str, str], timeout: float, auth: Any = None) -> Streams:
    """The older HTTP+SSE transport (the fallback when streamable HTTP fails)."""
    from mcp.client.sse import sse_client

    return sse_client(url, headers=headers, timeout=timeout, auth=auth)

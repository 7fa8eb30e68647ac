"""A local aiohttp server for tests that need a real HTTP peer, and what it saw of a request.

``serving(handle)`` runs one handler for every path on a free port of 127.0.0.1 and yields the
base URL (``http://127.0.0.1:<port>``); leaving the block stops the server. ``Seen.of(request)``
keeps what a test asserts about a request once the handler has returned.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serving(handle: Handler, *, method: str = "*") -> AsyncIterator[str]:
    """Serve ``handle`` for ``method`` requests to any path; yields the base URL."""
    app = web.Application()
    app.router.add_route(method, "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    raw_path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @classmethod
    async def of(cls, request: web.Request) -> Seen:
        """What ``request`` carried, its body read whole."""
        return cls(
            method=request.method,
            raw_path=request.raw_path,
            query=dict(request.query),
            headers=dict(request.headers),
            body=await request.read(),
        )

    def json(self) -> Any:
        """The body, parsed as JSON."""
        return json.loads(self.body)

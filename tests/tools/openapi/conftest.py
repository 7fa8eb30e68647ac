"""The ``api`` fixture of the OpenAPI tests: a real local server that records API calls."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from ...http_server import Seen, serving
from .support import Api


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    state = Api()

    async def handle(request: web.Request) -> web.Response:
        if request.path in state.documents:
            text, content_type, status = state.documents[request.path]
            return web.Response(text=text, content_type=content_type, status=status)
        state.seen.append(await Seen.of(request))
        return web.json_response({"ok": True, "path": request.path})

    async with serving(handle) as base:
        state.base = base
        yield state

"""HTTP tools and webfetch reuse kept-alive connections when no ``http_client`` is given."""

from __future__ import annotations

from aiohttp import web

from toolnexus import http_tool
from toolnexus.tools.builtin import builtin_tools

from ..http_server import serving


async def test_calls_to_one_host_share_one_connection() -> None:
    peers: list[object] = []

    async def handle(request: web.Request) -> web.Response:
        peers.append(request.transport.get_extra_info("peername") if request.transport else None)
        return web.Response(text="<p>ok</p>", content_type="text/html")

    async with serving(handle) as base:
        made = http_tool(
            name="ping", description="Ping.", url=base + "/ping", input_schema={"type": "object"}
        )
        (webfetch,) = [t for t in builtin_tools() if t.name == "webfetch"]
        results = [
            await made.execute({}, None),
            await made.execute({}, None),
            await webfetch.execute({"url": base + "/page"}, None),
            await made.execute({}, None),
        ]
    assert [r.is_error for r in results] == [False] * 4
    assert len(peers) == 4
    assert None not in peers
    assert len(set(map(str, peers))) == 1, "each call opened a connection of its own"

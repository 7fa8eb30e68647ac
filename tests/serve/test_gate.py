"""The listener's gate in front of every ``Route``: any route a protocol adds (a UI page, an
API) gets Host checks, and unless it is ``public`` the Origin check and bearer auth too."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from toolnexus.serve.access import HostRules, bearer_auth
from toolnexus.serve.http import CALLER_KEY, Access, Route, ServeHandle, ServeLimits, start_http

LIMIT = 20.0


async def whoami(scope: Any, receive: Any, send: Any) -> None:
    """Answers the caller identity the gate put in the scope (or ``-``)."""
    await receive()
    body = str(scope.get(CALLER_KEY) or "-").encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
async def gated() -> AsyncIterator[ServeHandle]:
    access = Access(bearer_auth(["t0k"]), HostRules.build("127.0.0.1"))
    routes = [Route("/page", whoami, public=True), Route("/api/chat", whoami)]
    handle = await start_http(
        "127.0.0.1:0", routes, access=access, limits=ServeLimits(read_timeout_s=5)
    )
    yield handle
    await handle.aclose()


async def test_a_private_route_needs_the_token_and_learns_the_caller(
    gated: ServeHandle,
) -> None:
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        anonymous = await http.post(gated.url + "/api/chat", json={})
        known = await http.post(
            gated.url + "/api/chat", json={}, headers={"Authorization": "Bearer t0k"}
        )
        from_page = await http.post(
            gated.url + "/api/chat",
            json={},
            headers={"Authorization": "Bearer t0k", "Origin": "https://evil.example"},
        )
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert known.status_code == 200
    assert len(known.text) == 64  # the token's SHA-256 digest, never the token
    assert from_page.status_code == 403


async def test_a_public_route_needs_no_token_and_no_origin_but_a_known_host(
    gated: ServeHandle,
) -> None:
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        page = await http.get(gated.url + "/page", headers={"Origin": "https://x.example"})
        rebound = await http.get(gated.url + "/page", headers={"Host": "evil.example"})
        missing = await http.get(gated.url + "/nothing")
    assert (page.status_code, page.text) == (200, "-")
    assert rebound.status_code == 421
    assert missing.status_code == 404


async def test_headers_that_never_end_close_the_connection(gated: ServeHandle) -> None:
    host, port = gated.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=LIMIT)
    started = time.monotonic()

    def flood() -> bytes:
        sock.sendall(b"GET /page HTTP/1.1\r\nHost: localhost\r\n")
        try:
            for _ in range(200):
                sock.sendall(b"X-Filler: " + b"a" * 1000 + b"\r\n")
        except OSError:
            pass
        try:
            return sock.recv(100)
        except OSError:
            return b""

    try:
        assert await asyncio.wait_for(asyncio.to_thread(flood), LIMIT) == b""
    finally:
        sock.close()
    assert time.monotonic() - started < 5  # closed for size, long before the read timeout


def test_the_connection_cap_leaves_room_under_the_descriptor_limit() -> None:
    import subprocess
    import sys

    code = (
        "import resource\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "from toolnexus.serve.listener import connection_cap\n"
        "print(connection_cap(1000), connection_cap(10))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT, check=True
    )
    assert done.stdout.split() == ["192", "10"]

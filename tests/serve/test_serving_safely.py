"""Serving safely (SPEC §13) over MCP: auth, binds, what a served call goes through, limits.

Spoken to with the official ``mcp`` SDK client (with and without the token) and, for what a
client library would never send (foreign hosts, huge or slow bodies), plain HTTP and raw
sockets.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from aiohttp import web
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

import toolnexus as tn
from toolnexus.errors import ConfigError
from toolnexus.serve import ServeHandle

from ..http_server import serving
from .conftest import MCP_HEADERS, http_session, text_of

LIMIT = 20.0
TOKEN = "t0k-serving-safely"


@tn.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@pytest.fixture
async def served() -> Any:
    """``await served(tk, addr="127.0.0.1:0", **options)``; every server stops afterwards."""
    handles: list[ServeHandle] = []

    async def start(tk: tn.Toolkit, addr: str = "127.0.0.1:0", **options: Any) -> ServeHandle:
        handle = await tk.serve(addr, **options)
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        await handle.aclose()


@asynccontextmanager
async def token_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """The SDK's client sending ``Authorization: Bearer <token>``."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=LIMIT) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def post(url: str, body: bytes, **headers: str) -> httpx.Response:
    sent = {**MCP_HEADERS, "Content-Type": "application/json", **headers}
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        return await http.post(url, content=body, headers=sent)


LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'


# A141 (MCP) ---------------------------------------------------------------------------------


async def test_with_auth_mcp_needs_the_bearer_token(served: Any) -> None:
    handle = await served(tn.Toolkit([echo]), mcp={}, auth=[TOKEN, "another"])
    url = handle.url + "/mcp"
    missing = await post(url, LIST)
    wrong = await post(url, LIST, Authorization="Bearer nope")
    basic = await post(url, LIST, Authorization=f"Basic {TOKEN}")
    right = await post(url, LIST, Authorization=f"bearer {TOKEN}")  # scheme: any case
    for refused in (missing, wrong, basic):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200
    assert [t["name"] for t in right.json()["result"]["tools"]] == ["echo"]
    async with asyncio.timeout(LIMIT), token_session(url, TOKEN) as session:
        called = await session.call_tool("echo", {"text": "hi"})
    assert text_of(called) == "hi"
    with pytest.raises(Exception):  # noqa: B017, PT011  the SDK reports the 401 its own way
        async with asyncio.timeout(LIMIT), http_session(url) as session:
            await session.list_tools()


async def test_a_callable_auth_decides_sync_or_async(served: Any) -> None:
    seen: list[str] = []

    def sync_check(token: str) -> bool:
        seen.append(token)
        return token == "good"

    async def async_check(token: str) -> bool | str:
        return "alice" if token == "alice-key" else False

    sync = await served(tn.Toolkit([echo]), mcp={}, auth=sync_check)
    asynchronous = await served(tn.Toolkit([echo]), mcp={}, auth=async_check)
    assert (await post(sync.url + "/mcp", LIST, Authorization="Bearer good")).status_code == 200
    assert (await post(sync.url + "/mcp", LIST, Authorization="Bearer bad")).status_code == 401
    assert seen == ["good", "bad"]
    ok = await post(asynchronous.url + "/mcp", LIST, Authorization="Bearer alice-key")
    no = await post(asynchronous.url + "/mcp", LIST, Authorization="Bearer mallory")
    assert (ok.status_code, no.status_code) == (200, 401)


@pytest.mark.parametrize("auth", [[], [""], [" padded "], 42, [b"bytes"]])
async def test_a_bad_auth_value_is_a_config_error(served: Any, auth: Any) -> None:
    with pytest.raises(ConfigError, match="auth"):
        await served(tn.Toolkit([echo]), mcp={}, auth=auth)


# A142 ---------------------------------------------------------------------------------------


async def test_a_wildcard_bind_without_auth_refuses_to_start(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ConfigError, match=r"0\.0\.0\.0:0"):
        await served(tn.Toolkit([echo]), "0.0.0.0:0", mcp={})
    caplog.set_level(logging.WARNING, logger="toolnexus")
    handle = await served(tn.Toolkit([echo]), "0.0.0.0:0", mcp={}, allow_unauthenticated=True)
    assert any("without authentication" in r.getMessage() for r in caplog.records)
    port = handle.url.rsplit(":", 1)[1]
    async with asyncio.timeout(LIMIT), http_session(f"http://127.0.0.1:{port}/mcp") as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["echo"]


async def test_serving_bash_without_auth_warns(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    @tn.tool
    def bash(command: str) -> str:
        """Pretend to run a command."""
        return command

    caplog.set_level(logging.WARNING, logger="toolnexus")
    await served(tn.Toolkit([bash]), mcp={}, auth=[TOKEN])
    assert not any("bash" in r.getMessage() for r in caplog.records)
    await served(tn.Toolkit([bash]), mcp={})
    assert any("bash" in r.getMessage() for r in caplog.records)


# A143 ---------------------------------------------------------------------------------------


async def test_a_served_call_is_masked_and_cut_as_in_a_local_run(
    served: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-served-secret-7f3a9c2e"
    monkeypatch.setenv("TN_SERVE_ECHOED", secret)

    async def echo_header(request: web.Request) -> web.Response:
        return web.Response(text=f"you sent {request.headers.get('X-Token', '')}")

    @tn.tool
    def long() -> str:
        """A long output."""
        return "x" * 5000

    async with serving(echo_header) as base:
        leak = tn.http_tool(
            name="leak",
            description="Echo the token header back.",
            url=base + "/echo",
            input_schema={"type": "object", "properties": {}},
            headers={"X-Token": "${TN_SERVE_ECHOED}"},
        )
        tk = tn.Toolkit([leak, long], max_output_chars=100)
        local_leak = await tk.execute("leak", {})
        local_long = await tk.execute("long", {})
        handle = await served(tk, mcp={})
        async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
            remote_leak = await session.call_tool("leak", {})
            remote_long = await session.call_tool("long", {})
    assert secret not in text_of(remote_leak)
    assert text_of(remote_leak) == local_leak.output
    assert "***" in text_of(remote_leak)
    assert text_of(remote_long) == local_long.output
    assert text_of(remote_long).startswith("x" * 100 + "\n[output truncated: 4900")


async def test_bad_arguments_are_validated_as_in_a_local_run(served: Any) -> None:
    handle = await served(tn.Toolkit([echo]), mcp={})
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        result = await session.call_tool("echo", {"text": {"not": "a string"}})
    assert result.is_error
    local = await tn.Toolkit([echo]).execute("echo", {"text": {"not": "a string"}})
    assert text_of(result) == local.output


# A144 and the limits ------------------------------------------------------------------------


async def test_a_body_over_max_request_bytes_is_413(served: Any) -> None:
    handle = await served(tn.Toolkit([echo]), mcp={})
    url = handle.url + "/mcp"
    huge = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"'
        + b"a" * (10 * 1024 * 1024)
        + b'"}}'
    )
    assert (await post(url, huge)).status_code == 413

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(11):
            yield b" " * (1024 * 1024)

    async with httpx.AsyncClient(timeout=LIMIT) as http:
        streamed = await http.post(
            url, content=chunks(), headers={**MCP_HEADERS, "Content-Type": "application/json"}
        )
    assert streamed.status_code == 413
    small = await served(tn.Toolkit([echo]), mcp={}, max_request_bytes=64)
    assert (await post(small.url + "/mcp", LIST + b" " * 64)).status_code == 413
    assert (await post(small.url + "/mcp", LIST)).status_code == 200


async def test_content_type_method_nesting_and_encoding(served: Any) -> None:
    handle = await served(tn.Toolkit([echo]), mcp={})
    url = handle.url + "/mcp"
    plain = await post(url, LIST, **{"Content-Type": "text/plain"})
    form = await post(url, LIST, **{"Content-Type": "application/x-www-form-urlencoded"})
    charset = await post(url, LIST, **{"Content-Type": "application/json; charset=utf-8"})
    deep = await post(
        url, b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + b"[" * 600 + b"]" * 600 + b"}"
    )
    fine = await post(
        url,
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"a":'
        + b"[" * 100
        + b"]" * 100
        + b"}}}",
    )
    brackets_in_strings = await post(
        url,
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"s":"'
        + b"[" * 600
        + b'"}}}',
    )
    bad_utf8 = await post(
        url, b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"s":"\xff\xfe"}}}'
    )
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        get = await http.get(url, headers={"Accept": "text/event-stream"})
    assert (plain.status_code, form.status_code, charset.status_code) == (415, 415, 200)
    assert deep.json()["error"]["code"] == -32700
    assert bad_utf8.json()["error"]["code"] == -32700
    assert fine.status_code == 200
    assert brackets_in_strings.status_code == 200
    assert get.status_code == 405
    assert get.headers["allow"] == "POST"


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "localhost:1@evil.example",
        "localhost.evil.example",
        "127.0.0.1.evil.example",
        "localhost:99999",
        "[::1",
        "",
    ],
)
async def test_a_foreign_or_malformed_host_is_421_on_loopback(served: Any, host: str) -> None:
    handle = await served(tn.Toolkit([echo]), mcp={})
    assert (await post(handle.url + "/mcp", LIST, Host=host)).status_code == 421


async def test_loopback_aliases_and_allowed_names_pass_foreign_origins_do_not(
    served: Any,
) -> None:
    handle = await served(
        tn.Toolkit([echo]),
        mcp={},
        allowed_hosts=["tools.example", "other.example:8443"],
        allowed_origins=["https://app.example"],
    )
    url = handle.url + "/mcp"
    for host in ("localhost", "127.0.0.2:80", "[::1]:9", "tools.example:1", "other.example:8443"):
        assert (await post(url, LIST, Host=host)).status_code == 200, host
    assert (await post(url, LIST, Host="other.example:8444")).status_code == 421
    assert (await post(url, LIST, Origin="http://localhost:5173")).status_code == 200
    assert (await post(url, LIST, Origin="https://app.example")).status_code == 200
    assert (await post(url, LIST, Origin="https://tools.example")).status_code == 200
    for origin in ("http://evil.example", "null", "http://localhost:1@evil.example"):
        assert (await post(url, LIST, Origin=origin)).status_code == 403, origin


async def test_a_wildcard_bind_answers_loopback_and_allowed_hosts_only(served: Any) -> None:
    handle = await served(
        tn.Toolkit([echo]), "0.0.0.0:0", mcp={}, auth=[TOKEN], allowed_hosts=["tools.example"]
    )
    port = handle.url.rsplit(":", 1)[1]
    url = f"http://127.0.0.1:{port}/mcp"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert (await post(url, LIST, **auth)).status_code == 200
    assert (await post(url, LIST, Host="tools.example", **auth)).status_code == 200
    for host in (f"0.0.0.0:{port}", "evil.example", "10.1.2.3"):
        assert (await post(url, LIST, Host=host, **auth)).status_code == 421, host


@pytest.mark.parametrize(
    "option",
    [
        {"max_request_bytes": 0},
        {"read_timeout_s": -1},
        {"max_connections": True},
        {"allowed_hosts": "tools.example"},
        {"allowed_hosts": ["0.0.0.0"]},
        {"allowed_origins": ["tools.example"]},
        {"allow_unauthenticated": "yes"},
    ],
)
async def test_bad_limits_and_lists_are_config_errors(served: Any, option: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=next(iter(option)).split("_")[0]):
        await served(tn.Toolkit([echo]), mcp={}, **option)


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=LIMIT)
    return sock


async def _closed_after(sock: socket.socket, started: float) -> float:
    """Seconds from ``started`` until the server closed ``sock`` (reading whatever it sent)."""

    def wait() -> float:
        try:
            while sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        return time.monotonic() - started

    return await asyncio.wait_for(asyncio.to_thread(wait), LIMIT)


async def test_idle_and_slow_clients_are_dropped_while_others_are_served(served: Any) -> None:
    timeout = 0.6
    handle = await served(tn.Toolkit([echo]), mcp={}, read_timeout_s=timeout)
    started = time.monotonic()
    idle = _connect(handle.url)
    slow_headers = _connect(handle.url)
    slow_body = _connect(handle.url)
    slow_body.sendall(
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n{"
    )
    dripping = True

    async def drip() -> None:  # one header byte every 0.1 s: never a complete request in time
        for byte in b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 100:
            if not dripping:
                return
            try:
                await asyncio.to_thread(slow_headers.send, bytes([byte]))
            except OSError:
                return
            await asyncio.sleep(0.1)

    dripper = asyncio.ensure_future(drip())
    try:
        async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
            served_meanwhile = await session.call_tool("echo", {"text": "still here"})
        closed = await asyncio.gather(
            _closed_after(idle, started),
            _closed_after(slow_headers, started),
            _closed_after(slow_body, started),
        )
    finally:
        dripping = False
        dripper.cancel()
        for sock in (idle, slow_headers, slow_body):
            sock.close()
    assert text_of(served_meanwhile) == "still here"
    for seconds in closed:
        assert timeout * 0.8 <= seconds < timeout + 2.0, closed
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        assert text_of(await session.call_tool("echo", {"text": "after"})) == "after"


async def test_a_connection_beyond_max_connections_is_closed_at_once(served: Any) -> None:
    handle = await served(tn.Toolkit([echo]), mcp={}, max_connections=3)
    held = [_connect(handle.url) for _ in range(3)]
    try:
        extra = _connect(handle.url)
        started = time.monotonic()
        try:
            extra.sendall(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")
        except OSError:
            pass
        assert await _closed_after(extra, started) < 2.0
        extra.close()
    finally:
        for sock in held:
            sock.close()

    async def answered() -> int:
        async with httpx.AsyncClient(timeout=LIMIT) as http:
            response = await http.post(
                handle.url + "/mcp",
                content=LIST,
                headers={**MCP_HEADERS, "Content-Type": "application/json"},
            )
            return response.status_code

    async with asyncio.timeout(LIMIT):  # the held ones are gone: room again
        while True:
            try:
                if await answered() == 200:
                    break
            except httpx.HTTPError:
                await asyncio.sleep(0.05)


async def test_the_token_never_reaches_the_log(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    handle = await served(tn.Toolkit([echo]), mcp={}, auth=[TOKEN])
    await post(handle.url + "/mcp", LIST, Authorization=f"Bearer {TOKEN}")
    await post(handle.url + "/mcp", LIST, Authorization="Bearer wrong-token-value")
    assert TOKEN not in caplog.text
    assert "wrong-token-value" not in caplog.text

"""HTTP tools against a real local aiohttp server."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp import web

from toolnexus import Tool, ToolContext, ToolResult, http_tool

from ..http_server import Seen, serving

ANY_OBJECT = {"type": "object"}


@dataclass
class Reply:
    status: int = 200
    body: str = "ok"
    content_type: str = "text/plain"
    hang: bool = False


@dataclass
class StubServer:
    """Records every request and answers with ``reply``; ``hang`` waits until teardown."""

    base: str = ""
    seen: list[Seen] = field(default_factory=list)
    reply: Reply = field(default_factory=Reply)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def last(self) -> Seen:
        assert self.seen, "the server received no request"
        return self.seen[-1]


@pytest.fixture
async def server() -> AsyncIterator[StubServer]:
    stub = StubServer()

    async def handle(request: web.Request) -> web.Response:
        stub.seen.append(await Seen.of(request))
        if stub.reply.hang:
            await stub.release.wait()
        return web.Response(
            status=stub.reply.status, text=stub.reply.body, content_type=stub.reply.content_type
        )

    async with serving(handle) as base:
        stub.base = base
        yield stub
        stub.release.set()


def _tool(server: StubServer, path: str, **options: Any) -> Tool:
    return http_tool(
        name="call",
        description="Call the stub.",
        url=server.base + path,
        input_schema=ANY_OBJECT,
        **options,
    )


async def _call(server: StubServer, path: str, args: dict[str, Any], **options: Any) -> ToolResult:
    return await _tool(server, path, **options).execute(args, None)


async def test_http_tool_is_a_tool_with_source_http(server: StubServer) -> None:
    made = http_tool(name="fetch", description="d", url=server.base, input_schema=ANY_OBJECT)
    assert (made.name, made.description, made.source) == ("fetch", "d", "http")
    assert made.input_schema == ANY_OBJECT


# GET: path placeholders and query -----------------------------------------------------------------


async def test_get_percent_encodes_placeholders_and_sends_other_args_as_query(
    server: StubServer,
) -> None:
    await _call(server, "/users/{id}", {"id": "a b", "x": 1})
    assert server.last.method == "GET"
    assert server.last.raw_path == "/users/a%20b?x=1"
    assert server.last.body == b""


@pytest.mark.parametrize(
    "client",
    [
        "default",
        "httpx",
    ],
)
async def test_placeholder_values_encode_every_reserved_character(
    server: StubServer, client: str
) -> None:
    async with httpx.AsyncClient() as injected:
        http_client = injected if client == "httpx" else None
        args = {"name": "a/b?c&d=é"}
        await _call(server, "/files/{name}/raw", args, http_client=http_client)
    assert server.last.raw_path == "/files/a%2Fb%3Fc%26d%3D%C3%A9/raw"


async def test_a_missing_placeholder_argument_becomes_empty(server: StubServer) -> None:
    await _call(server, "/users/{id}/posts", {})
    assert server.last.raw_path == "/users//posts"


async def test_query_is_appended_with_ampersand_when_url_has_one(server: StubServer) -> None:
    await _call(server, "/search?fixed=1", {"q": "two words", "n": 2})
    assert server.last.raw_path == "/search?fixed=1&q=two+words&n=2"


async def test_head_sends_every_arg_as_query(server: StubServer) -> None:
    await _call(server, "/h", {"a": "1"}, method="HEAD")
    assert (server.last.method, server.last.raw_path) == ("HEAD", "/h?a=1")


# POST: query and JSON body ------------------------------------------------------------------------


async def test_post_sends_named_query_args_in_url_and_the_rest_as_json(
    server: StubServer,
) -> None:
    await _call(server, "/items", {"page": 2, "title": "t"}, method="POST", query=["page"])
    assert server.last.method == "POST"
    assert server.last.raw_path == "/items?page=2"
    assert json.loads(server.last.body) == {"title": "t"}
    assert server.last.headers["Content-Type"] == "application/json"


async def test_json_body_is_compact_utf8(server: StubServer) -> None:
    await _call(server, "/items", {"title": "ü", "n": [1, 2]}, method="PUT")
    assert server.last.body == '{"title":"ü","n":[1,2]}'.encode()


async def test_form_body_is_urlencoded(server: StubServer) -> None:
    await _call(server, "/form", {"title": "a b", "n": 1}, method="POST", body="form")
    assert server.last.body == b"title=a+b&n=1"
    assert server.last.headers["Content-Type"] == "application/x-www-form-urlencoded"


async def test_raw_body_sends_the_body_argument_as_text(server: StubServer) -> None:
    await _call(server, "/raw", {"body": "hello ✓"}, method="POST", body="raw")
    assert server.last.body == "hello ✓".encode()
    assert server.last.headers["Content-Type"] == "text/plain; charset=utf-8"


async def test_a_caller_supplied_content_type_wins(server: StubServer) -> None:
    headers = {"content-type": "application/vnd.stub+json"}
    await _call(server, "/x", {"a": 1}, method="PATCH", headers=headers)
    assert server.last.headers["Content-Type"] == "application/vnd.stub+json"
    assert json.loads(server.last.body) == {"a": 1}


async def test_post_with_only_query_args_sends_no_body(server: StubServer) -> None:
    await _call(server, "/x", {"page": 1}, method="POST", query=["page"])
    assert server.last.raw_path == "/x?page=1"
    assert server.last.body == b""


async def test_arguments_dict_is_not_modified(server: StubServer) -> None:
    args: dict[str, Any] = {"id": "7", "title": "t"}
    await _call(server, "/items/{id}", args, method="POST")
    assert args == {"id": "7", "title": "t"}


# non-2xx replies ----------------------------------------------------------------------------------


async def test_non_2xx_is_an_error_result_with_status_and_body(server: StubServer) -> None:
    server.reply = Reply(status=404, body="nope")
    result = await _call(server, "/missing", {})
    assert result == ToolResult("HTTP 404: nope", is_error=True, metadata={"status": 404})


async def test_2xx_text_mode_returns_the_body_with_status_metadata(server: StubServer) -> None:
    server.reply = Reply(status=200, body="hello")
    assert await _call(server, "/", {}) == ToolResult("hello", metadata={"status": 200})


async def test_json_mode_reserialises_compactly(server: StubServer) -> None:
    server.reply = Reply(body='{ "a" : 1, "b": ["ü"] }', content_type="application/json")
    result = await _call(server, "/", {}, result_mode="json")
    assert result == ToolResult('{"a":1,"b":["ü"]}', metadata={"status": 200})


async def test_json_mode_emits_a_non_json_body_as_a_json_string(server: StubServer) -> None:
    server.reply = Reply(body='not "json"')
    result = await _call(server, "/", {}, result_mode="json")
    assert result.output == '"not \\"json\\""'
    assert result.is_error is False


async def test_status_text_mode_prefixes_the_status(server: StubServer) -> None:
    server.reply = Reply(status=201, body="created")
    result = await _call(server, "/", {}, result_mode="status+text")
    assert result == ToolResult("201\ncreated", metadata={"status": 201})


async def test_error_statuses_ignore_the_result_mode(server: StubServer) -> None:
    server.reply = Reply(status=500, body="{}")
    result = await _call(server, "/", {}, result_mode="json")
    assert result == ToolResult("HTTP 500: {}", is_error=True, metadata={"status": 500})


async def test_a_refused_connection_is_an_error_result_not_an_exception() -> None:
    with socket.socket() as sock:  # find a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    made = http_tool(
        name="down", description="d", url=f"http://127.0.0.1:{port}/", input_schema=ANY_OBJECT
    )
    result = await made.execute({}, None)
    assert result.is_error is True
    assert result.output


def test_unknown_body_or_result_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="body"):
        http_tool(name="t", description="d", url="http://x", input_schema={}, body="xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="result_mode"):
        http_tool(name="t", description="d", url="http://x", input_schema={}, result_mode="b")  # type: ignore[arg-type]


# headers and secrets ------------------------------------------------------------------------------

TOKEN = "tn-secret-7f3a9c"


async def test_env_header_is_expanded_and_never_logged(
    server: StubServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TN_TEST_TOKEN", TOKEN)
    caplog.set_level(logging.DEBUG)
    headers = {"Authorization": "Bearer ${TN_TEST_TOKEN}", "X-Trace": "id-${TN_TEST_TOKEN}-end"}
    server.reply = Reply(status=401, body="unauthorised")
    result = await _call(server, "/secure", {"q": 1}, headers=headers)
    assert server.last.headers["Authorization"] == f"Bearer {TOKEN}"
    assert server.last.headers["X-Trace"] == f"id-{TOKEN}-end"
    assert TOKEN not in result.output
    assert caplog.records, "DEBUG capture should see the server's and client's records"
    for record in caplog.records:
        assert TOKEN not in record.getMessage()
        assert TOKEN not in str(record.args)
        assert TOKEN not in (record.exc_text or "")
    assert TOKEN not in caplog.text


async def test_env_header_is_kept_out_of_a_transport_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TN_TEST_TOKEN", TOKEN)
    caplog.set_level(logging.DEBUG)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    made = http_tool(
        name="down",
        description="d",
        url=f"http://127.0.0.1:{port}/",
        input_schema=ANY_OBJECT,
        headers={"Authorization": "Bearer ${TN_TEST_TOKEN}"},
    )
    result = await made.execute({}, None)
    assert result.is_error is True
    assert TOKEN not in result.output
    assert TOKEN not in caplog.text


async def test_an_unset_env_variable_expands_to_empty(
    server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TN_TEST_TOKEN", raising=False)
    await _call(server, "/", {}, headers={"X-Token": "<${TN_TEST_TOKEN}>"})
    assert server.last.headers["X-Token"] == "<>"


async def test_env_is_read_at_call_time(
    server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _tool(server, "/", headers={"X-Token": "${TN_TEST_TOKEN}"})
    monkeypatch.setenv("TN_TEST_TOKEN", "first")
    await made.execute({}, None)
    monkeypatch.setenv("TN_TEST_TOKEN", "second")
    await made.execute({}, None)
    assert [s.headers["X-Token"] for s in server.seen] == ["first", "second"]


# timeouts -----------------------------------------------------------------------------------------


async def test_a_server_slower_than_the_timeout_gives_an_error_result(
    server: StubServer,
) -> None:
    server.reply = Reply(hang=True)
    started = time.monotonic()
    async with asyncio.timeout(5):
        result = await _call(server, "/slow", {}, timeout=0.2)
    assert time.monotonic() - started < 2
    assert result.is_error is True
    assert "timed out" in result.output


async def test_the_run_deadline_shortens_the_tool_timeout(server: StubServer) -> None:
    server.reply = Reply(hang=True)
    made = _tool(server, "/slow", timeout=30.0)
    started = time.monotonic()
    async with asyncio.timeout(5):
        result = await made.execute({}, ToolContext(timeout=0.2))
    assert time.monotonic() - started < 2
    assert result.is_error is True


# Injected clients ---------------------------------------------------------------------------------


async def test_an_injected_aiohttp_session_is_used_and_left_open(server: StubServer) -> None:
    async with aiohttp.ClientSession(headers={"X-Client": "injected-aiohttp"}) as session:
        result = await _call(server, "/c", {"a": 1}, http_client=session)
        assert not session.closed
        assert result == ToolResult("ok", metadata={"status": 200})
        assert server.last.headers["X-Client"] == "injected-aiohttp"
        assert server.last.raw_path == "/c?a=1"


async def test_an_injected_httpx_client_is_used_and_left_open(server: StubServer) -> None:
    async with httpx.AsyncClient(headers={"X-Client": "injected-httpx"}) as client:
        server.reply = Reply(status=404, body="nope")
        result = await _call(server, "/c", {"a": 1}, method="POST", http_client=client)
        assert not client.is_closed
        assert result == ToolResult("HTTP 404: nope", is_error=True, metadata={"status": 404})
        assert server.last.headers["X-Client"] == "injected-httpx"
        assert json.loads(server.last.body) == {"a": 1}


async def test_an_injected_httpx_client_times_out_as_an_error_result(
    server: StubServer,
) -> None:
    server.reply = Reply(hang=True)
    async with httpx.AsyncClient() as client:
        async with asyncio.timeout(5):
            result = await _call(server, "/slow", {}, timeout=0.2, http_client=client)
    assert result.is_error is True


# Read cap -----------------------------------------------------------------------------------------

_CAP = 1000
_HUGE = 64 * 1024 * 1024
"""Far more than the sockets between client and server can buffer: writing it all takes a
reader, so a server that finishes proves the client read past its cap."""


@asynccontextmanager
async def _oversize_server(*, chunked: bool) -> AsyncIterator[tuple[str, asyncio.Future[str]]]:
    """Serves ``_HUGE`` bytes of ``x``; the future says whether the write ``finished`` or the
    client ``closed`` the connection first."""
    outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        if chunked:
            response.enable_chunked_encoding()
        else:
            response.content_length = _HUGE
        await response.prepare(request)
        piece = b"x" * 65536
        try:
            for _ in range(_HUGE // len(piece)):
                await response.write(piece)
            await response.write_eof()
        except ConnectionError:
            outcome.set_result("closed")
        else:
            outcome.set_result("finished")
        return response

    async with serving(handle) as base:
        yield base, outcome


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_reply_over_max_response_bytes_is_cut_and_the_rest_is_never_read(
    chunked: bool,
) -> None:
    async with _oversize_server(chunked=chunked) as (base, outcome), asyncio.timeout(10):
        made = http_tool(
            name="big",
            description="A huge reply.",
            url=base + "/big",
            input_schema=ANY_OBJECT,
            max_response_bytes=_CAP,
        )
        result = await made.execute({}, None)
        assert await outcome == "closed"
    assert result == ToolResult(
        "x" * _CAP + f"\n[response truncated at {_CAP} bytes]",
        metadata={"status": 200, "truncated": True},
    )


async def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown() -> None:
    seen: list[Seen] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(await Seen.of(request))
        return web.Response(text="in")

    async with serving(handle) as base:
        url = base.replace("http://", "http://ann:p%40ss@") + "/x"
        tool = http_tool(name="t", description="T.", url=url, input_schema={"type": "object"})
        result = await tool.execute({}, None)
    assert result.output == "in"
    assert seen[0].headers["Authorization"] == "Basic YW5uOnBAc3M="  # ann:p@ss
    assert "ann" not in seen[0].headers["Host"]

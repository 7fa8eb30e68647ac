"""RFC 9112 response framing attacks against every user of the library's HTTP/1.1 transport.

A raw asyncio socket server on 127.0.0.1 answers the first request with hostile bytes and every
later one with a good reply. Each case must fail the first call with a clear error naming the
fault (``LLMError`` for the model client, an error result for an HTTP tool and ``webfetch``),
and the connection it came on must be closed: the second call arrives on a new connection and
gets the good reply. Separately, bytes a server sends after a complete response (a smuggled
second response) never reach the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TypeVar

import pytest

from toolnexus import LLMError, TextEvent, create_client, http_tool
from toolnexus.tools.builtin import builtin_tools
from toolnexus.types import Tool

ANSWER = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1},
}
BODY = json.dumps(ANSWER).encode()
GOOD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)
SMUGGLED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY.replace(b"fine", b"evil")),
    BODY.replace(b"fine", b"evil"),
)
OK = b"HTTP/1.1 200 OK\r\n"
JSON = b"Content-Type: application/json\r\n"

# (case, response bytes, what the error must say)
CASES = [
    (
        "two different Content-Length values",
        OK + b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
        "Duplicate Content-Length",
    ),
    (
        "one Content-Length value twice",
        OK + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        "Duplicate Content-Length",
    ),
    ("a Content-Length list", OK + b"Content-Length: 2, 2\r\n\r\n{}", "Content-Length"),
    ("a signed Content-Length", OK + b"Content-Length: +2\r\n\r\n{}", "Content-Length"),
    ("a negative Content-Length", OK + b"Content-Length: -2\r\n\r\n{}", "Content-Length"),
    ("a hex Content-Length", OK + b"Content-Length: 0x2\r\n\r\n{}", "Content-Length"),
    (
        "an overflowing Content-Length",
        OK + b"Content-Length: 99999999999999999999999\r\n\r\n",
        "overflow",
    ),
    (
        "Transfer-Encoding with Content-Length",
        OK + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "Transfer-Encoding",
    ),
    (
        "Content-Length with Transfer-Encoding",
        OK + b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "Transfer-Encoding",
    ),
    (
        "chunked not the final transfer coding",
        OK + b"Transfer-Encoding: chunked, gzip\r\n\r\n{}",
        "unsupported Transfer-Encoding",
    ),
    (
        "an unknown transfer coding",
        OK + b"Transfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "unsupported Transfer-Encoding",
    ),
    (
        "chunked applied twice",
        OK
        + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "unsupported Transfer-Encoding",
    ),
    (
        "whitespace before a header's colon",
        OK + b"Transfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "Invalid header field char",
    ),
    (
        "a chunk size that is not hex",
        OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        "chunk size",
    ),
    (
        "a negative chunk size",
        OK + b"Transfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n",
        "chunk size",
    ),
    (
        "an overflowing chunk size",
        OK + b"Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
        "Chunk size overflow",
    ),
    (
        "a space after a chunk size",
        OK + b"Transfer-Encoding: chunked\r\n\r\n2 \r\n{}\r\n0\r\n\r\n",
        "chunk size",
    ),
    (
        "chunk data longer than its size",
        OK + b"Transfer-Encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n",
        "after chunk data",
    ),
    (
        "a chunk size line ended by a bare LF",
        OK + b"Transfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n",
        "Missing expected CR",
    ),
    (
        "a header line without a colon",
        OK + b"BadHeader\r\nContent-Length: 2\r\n\r\n{}",
        "Invalid header token",
    ),
    ("head lines ended by bare LF", b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", "expected CR"),
    (
        "a header ended by a bare LF",
        OK + b"X-A: 1\nContent-Length: 2\r\n\r\n{}",
        "expected CR",
    ),
    (
        "a bare CR inside the head",
        OK + b"X-A: 1\rContent-Length: 2\r\n\r\n{}",
        "expected LF",
    ),
    (
        "an obsolete folded header line",
        OK + b"X-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\n{}",
        "whitespace after header value",
    ),
    (
        "whitespace before the first header",
        OK + b" Content-Length: 2\r\n\r\n{}",
        "Unexpected space after start line",
    ),
    ("a NUL in a header value", OK + b"X-A: a\x00b\r\nContent-Length: 2\r\n\r\n{}", "header value"),
    (
        "an oversized head",
        OK + b"X-Big: " + b"a" * 70_000 + b"\r\nContent-Length: 2\r\n\r\n{}",
        "head is longer than 65536 bytes",
    ),
    ("a bad status code", b"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\n{}", "status"),
    ("not HTTP at all", b"SSH-2.0-OpenSSH\r\n\r\n", "malformed response head"),
    (
        "an unasked protocol switch",
        b"HTTP/1.1 101 Switching\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n",
        "switched protocols",
    ),
    (
        "a body cut short by the server",
        OK + JSON + b"Content-Length: 400\r\n\r\n{}",
        "closed the connection before the response was complete",
    ),
    (
        "a last chunk cut short by the server",
        OK + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n",
        "closed the connection before the response was complete",
    ),
]


@dataclass
class Hostile:
    """Answers the first request with ``first`` (then closes), every later one with ``GOOD``."""

    first: bytes
    then: bytes = GOOD
    connections: int = 0
    requests: int = 0
    closed: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode().split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":")[1])
                await reader.readexactly(length)
                self.requests += 1
                writer.write(self.first if self.requests == 1 else self.then)
                await writer.drain()
                if self.requests == 1:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self.closed += 1
            self.changed.set()


@contextlib.asynccontextmanager
async def hostile(server: S) -> AsyncIterator[S]:
    listening = await asyncio.start_server(server.serve, "127.0.0.1", 0)
    server.url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        listening.close()
        for writer in server.writers:  # connections still kept alive by a pool
            writer.close()
        async with asyncio.timeout(5):
            while server.closed < server.connections:
                server.changed.clear()
                await server.changed.wait()
        await listening.wait_closed()


S = TypeVar("S", "Hostile", "Trailing")


def webfetch() -> Tool:
    (tool,) = [t for t in builtin_tools() if t.name == "webfetch"]
    return tool


def ids(cases: list[tuple[str, bytes, str]]) -> list[str]:
    return [name for name, _, _ in cases]


@pytest.mark.parametrize(("case", "answer", "says"), CASES, ids=ids(CASES))
async def test_the_model_client_refuses_a_badly_framed_response(
    case: str, answer: bytes, says: str
) -> None:
    async with (
        hostile(Hostile(answer)) as server,
        create_client(server.url, model="m", api_key="k", retries=0) as client,
    ):
        with pytest.raises(LLMError, match=says) as caught:
            await client.run("hi")
        assert caught.value.status is None, case
        assert (await client.run("hi")).text == "fine"
    assert server.connections == 2, "the connection of a refused response was used again"


@pytest.mark.parametrize(("case", "answer", "says"), CASES, ids=ids(CASES))
async def test_an_http_tool_refuses_a_badly_framed_response(
    case: str, answer: bytes, says: str
) -> None:
    async with hostile(Hostile(answer)) as server:
        tool = http_tool(
            name="ping", description="Ping.", url=server.url + "/p", input_schema={"type": "object"}
        )
        first = await tool.execute({}, None)
        second = await tool.execute({}, None)
    assert first.is_error, case
    assert says in first.output
    assert (second.is_error, json.loads(second.output)) == (False, ANSWER)
    assert server.connections == 2


@pytest.mark.parametrize(("case", "answer", "says"), CASES, ids=ids(CASES))
async def test_webfetch_refuses_a_badly_framed_response(
    case: str, answer: bytes, says: str
) -> None:
    async with hostile(Hostile(answer)) as server:
        first = await webfetch().execute({"url": server.url + "/page"}, None)
        second = await webfetch().execute({"url": server.url + "/page"}, None)
    assert first.is_error, case
    assert says in first.output
    assert server.url in first.output
    assert (second.is_error, json.loads(second.output)) == (False, ANSWER)
    assert server.connections == 2


# --- bytes after the end of a response ----------------------------------------------------------


@dataclass
class Trailing:
    """Answers each request with ``GOOD`` followed by ``extra`` (in one write, or in a second
    write after the answer went out), and records when the client closes a connection."""

    extra: bytes
    separate: bool = False
    answer: bytes = GOOD
    connections: int = 0
    closed: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                for line in head.decode().split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        await reader.readexactly(int(line.split(":")[1]))
                if self.separate:
                    writer.write(self.answer)
                    await writer.drain()
                    writer.write(self.extra)
                else:
                    writer.write(self.answer + self.extra)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self.closed += 1
            self.changed.set()

    async def until_closed(self, n: int) -> None:
        async with asyncio.timeout(5):
            while self.closed < n:
                self.changed.clear()
                await self.changed.wait()


EXTRAS = [
    ("a whole smuggled response", SMUGGLED, False),
    ("a whole smuggled response sent after the answer", SMUGGLED, True),
    ("a few stray bytes", b"XYZ", False),
    ("a few stray bytes sent after the answer", b"XYZ", True),
]


@pytest.mark.parametrize(("case", "extra", "separate"), EXTRAS, ids=[c for c, _, _ in EXTRAS])
async def test_bytes_after_a_response_never_reach_the_next_request(
    case: str, extra: bytes, separate: bool
) -> None:
    async with hostile(Trailing(extra, separate)) as server:
        async with create_client(server.url, model="m", api_key="k", retries=0) as client:
            assert (await client.run("hi")).text == "fine"
            await server.until_closed(1)  # the client closed the connection, not the server
            assert (await client.run("hi")).text == "fine", case
            await server.until_closed(2)
            tool = http_tool(
                name="t", description="T.", url=server.url + "/t", input_schema={"type": "object"}
            )
            outputs = [(await tool.execute({}, None)).output for _ in range(2)]
            assert [json.loads(out) for out in outputs] == [ANSWER, ANSWER]
    assert server.connections == 4


async def test_bytes_after_the_end_of_a_stream_never_reach_the_next_request() -> None:
    event = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}
    data = f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n".encode()
    stream = OK + b"Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    stream += b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
    server = Trailing(SMUGGLED, separate=True, answer=stream)
    async with hostile(server) as server:
        async with create_client(server.url, model="m", api_key="k", retries=0) as client:
            for n in (1, 2):
                texts = [e.delta async for e in client.stream("hi") if isinstance(e, TextEvent)]
                assert texts == ["Hi"]
                await server.until_closed(n)
    assert server.connections == 2


async def test_a_response_read_to_its_exact_end_keeps_its_connection() -> None:
    async with hostile(Trailing(b"")) as server:
        async with create_client(server.url, model="m", api_key="k", retries=0) as client:
            assert [(await client.run("hi")).text for _ in range(3)] == ["fine"] * 3
    assert server.connections == 1

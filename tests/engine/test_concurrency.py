"""Many runs on one client and one event loop; connection reuse across turns."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from toolnexus import DoneEvent, RunResult, Toolkit, create_client, create_toolkit, tool
from toolnexus.testing import RecordedRequest, StubLLMServer, reply
from toolnexus.types import JSONObject

from ..running import MakeClient

RUNS = 200
LIMIT = 30.0
"""Seconds within which all the concurrent runs must be done."""


def barrier(stub: StubLLMServer) -> Callable[[RecordedRequest], Awaitable[reply.Reply]]:
    """A handler that holds every reply until ``RUNS`` requests are in, then 50 ms more."""

    async def handler(request: RecordedRequest) -> reply.Reply:
        await stub.until_requests(RUNS, timeout=10)
        await asyncio.sleep(0.05)
        return reply.text(f"ok {request.index}", usage=(1, 1))

    return handler


async def test_two_hundred_runs_on_one_client_are_all_in_flight_at_once(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.handler = barrier(stub)
    client = make_client(style)
    async with asyncio.timeout(LIMIT):
        results = await asyncio.gather(*(client.run(f"prompt {i}") for i in range(RUNS)))

    assert all(r.status == "done" and r.text.startswith("ok ") for r in results)
    assert len({r.text for r in results}) == RUNS
    assert len(stub.requests) == RUNS
    assert stub.max_in_flight == RUNS


async def test_two_hundred_streams_on_one_client_are_all_in_flight_at_once(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.handler = barrier(stub)
    client = make_client(style)

    async def consume(i: int) -> RunResult:
        last = None
        async for event in client.stream(f"prompt {i}"):
            last = event
        assert isinstance(last, DoneEvent)
        return last.result

    async with asyncio.timeout(LIMIT):
        results = await asyncio.gather(*(consume(i) for i in range(RUNS)))

    assert all(r.status == "done" for r in results)
    assert len({r.text for r in results}) == RUNS
    assert all(r.stream for r in stub.requests)
    assert stub.max_in_flight == RUNS


# --- keep-alive -----------------------------------------------------------------------------------


@tool
def step(n: int) -> str:
    """One step."""
    return f"step {n} done"


@dataclass
class PeerRecordingServer:
    """A tiny openai-style endpoint that notes the client port of every request.

    ``StubLLMServer`` does not expose the peer address of a request, so this test serves
    the three turns itself: two tool turns, then a text answer (JSON, or SSE when asked).
    """

    url: str = ""
    peers: list[tuple[str, int]] = field(default_factory=list)
    replies: list[JSONObject] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.peers.append(request.transport.get_extra_info("peername")[:2])  # type: ignore[union-attr]
        body = await request.json()
        message = self.replies[len(self.peers) - 1]
        if not body.get("stream"):
            return web.json_response({"choices": [{"message": message}]})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        delta: JSONObject = {"role": "assistant"}
        if message.get("content"):
            delta["content"] = message["content"]
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
        await response.write(f"data: {json.dumps({'choices': [{'delta': delta}]})}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@pytest.fixture
async def peer_server() -> AsyncIterator[PeerRecordingServer]:
    server = PeerRecordingServer()
    app = web.Application()
    app.router.add_post("/chat/completions", server.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


def tool_call(n: int) -> JSONObject:
    function = {"name": "step", "arguments": json.dumps({"n": n})}
    return {"id": f"call_{n}", "type": "function", "function": function}


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_run_reuses_one_connection_across_its_turns(
    peer_server: PeerRecordingServer, streamed: bool
) -> None:
    peer_server.replies = [
        {"role": "assistant", "content": None, "tool_calls": [tool_call(1)]},
        {"role": "assistant", "content": None, "tool_calls": [tool_call(2)]},
        {"role": "assistant", "content": "All steps done."},
    ]
    tk = Toolkit([step])
    async with create_client(peer_server.url, model="m", api_key="test-key") as client:
        async with asyncio.timeout(LIMIT):
            if streamed:
                events = [e async for e in client.stream("go", tk)]
                result = events[-1].result  # type: ignore[union-attr]
            else:
                result = await client.run("go", tk)

    assert (result.status, result.turns, result.text) == ("done", 3, "All steps done.")
    assert len(peer_server.peers) == 3
    assert len(set(peer_server.peers)) == 1, f"turns used several connections: {peer_server.peers}"


async def test_concurrent_toolkit_runs_share_the_client(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    """Twenty two-turn runs interleaved on one client each get their own results."""
    async with await create_toolkit(extra_tools=[step], builtins=False) as tk:
        client = make_client(style)

        def answer(request: RecordedRequest) -> reply.Reply:
            messages = request.json["messages"]
            prompt = next(m["content"] for m in messages if m["role"] == "user")
            n = int(prompt.split()[-1])
            if len(messages) == 1:
                return reply.tool_calls(reply.call("step", {"n": n}))
            return reply.text(f"finished {n}")

        stub.handler = answer
        async with asyncio.timeout(LIMIT):
            results = await asyncio.gather(*(client.run(f"run {i}", tk) for i in range(20)))

    assert [r.text for r in results] == [f"finished {i}" for i in range(20)]
    assert [r.tool_calls[0].output for r in results] == [f"step {i} done" for i in range(20)]

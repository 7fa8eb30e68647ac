"""Two toolnexus processes: one serves an agent over A2A, the other uses it as a tool."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus.testing import StubLLMServer, reply

from .served import LIMIT

ROOT = Path(__file__).resolve().parents[2]
PAINT = "Paint_Shop_paint"


@pytest.fixture
def remote_llm() -> Iterator[StubLLMServer]:
    """The model of the serving process."""
    with StubLLMServer() as server:
        yield server


@pytest.fixture
async def agent_url(remote_llm: StubLLMServer) -> AsyncIterator[str]:
    """The URL of the agent served by another process (stopped by closing its stdin)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.a2a.agent_process",
        remote_llm.url,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), LIMIT)
        assert line.startswith(b"http://"), line
        yield line.decode().strip()
    finally:
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), LIMIT)
        except TimeoutError:
            process.kill()
            await process.wait()


async def test_a_run_delegates_to_the_agent_in_the_other_process(
    agent_url: str, remote_llm: StubLLMServer, stub: StubLLMServer
) -> None:
    remote_llm.enqueue(reply.text("The fence is now green."))
    stub.enqueue(
        reply.tool_calls(reply.call(PAINT, {"task": "paint the fence green"})),
        reply.text("Done: the shop painted the fence green."),
    )
    card = agent_url + "/.well-known/agent-card.json"
    async with (
        await tn.create_toolkit(builtins=False, agents=[tn.agent(card, poll_every=0.02)]) as tk,
        tn.create_client(stub.url, model="local-model", api_key="local-key") as client,
    ):
        assert [t.name for t in tk.tools()] == [PAINT]
        result = await asyncio.wait_for(client.run("Get the fence painted.", tk), LIMIT)
    assert result.status == "done"
    assert result.text == "Done: the shop painted the fence green."
    assert result.tool_calls[0].output == "The fence is now green."
    remote_sent = remote_llm.requests[0].json["messages"]
    assert remote_sent[-1] == {"role": "user", "content": "paint the fence green"}
    stub.assert_consumed()
    remote_llm.assert_consumed()


async def test_a_question_of_the_remote_run_is_answered_by_the_local_host(
    agent_url: str, remote_llm: StubLLMServer, stub: StubLLMServer
) -> None:
    remote_llm.enqueue(
        reply.tool_calls(reply.call("pick_colour", {})), reply.text("Painted it blue.")
    )
    stub.enqueue(
        reply.tool_calls(reply.call(PAINT, {"task": "paint the door"})),
        reply.text("The door is blue."),
    )
    asked: list[tn.Request] = []

    def wait_for(request: tn.Request) -> tn.Answer:
        asked.append(request)
        return tn.Answer(request.id, ok=True, data={"answers": ["blue"]})

    card = agent_url + "/.well-known/agent-card.json"
    async with (
        await tn.create_toolkit(builtins=False, agents=[tn.agent(card, poll_every=0.02)]) as tk,
        tn.create_client(
            stub.url, model="local-model", api_key="local-key", wait_for=wait_for
        ) as client,
    ):
        result = await asyncio.wait_for(client.run("Paint the door.", tk), LIMIT)
    assert [r.prompt for r in asked] == ["Which colour?"]
    assert result.status == "done"
    assert result.tool_calls[-1].output == "Painted it blue."
    remote_tool_results = [
        m["content"] for m in remote_llm.requests[1].json["messages"] if m["role"] == "tool"
    ]
    assert remote_tool_results == ["colour: ['blue']"]

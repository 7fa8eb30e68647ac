"""A model using a remote A2A agent in a run: results, questions the host answers, cancel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from toolnexus import (
    Answer,
    CancelToken,
    PendingEvent,
    Request,
    RunCancelled,
    Toolkit,
    agent,
    create_toolkit,
)
from toolnexus.testing import StubLLMServer, reply

from ..running import MakeClient, drive
from .peer import Peer

PAINT = "Paint_Shop_paint"


def tool_output(stub: StubLLMServer, index: int) -> str:
    """The tool result the model got in request ``index`` (openai style)."""
    messages = stub.requests[index].json["messages"]
    return str(next(m for m in reversed(messages) if m["role"] == "tool")["content"])


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_the_model_calls_the_agent_and_gets_its_artifacts(
    peer: Peer, shop: Toolkit, stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call(PAINT, {"task": "a blue door"})),
        reply.text("The shop painted it."),
    )
    result, _ = await drive(make_client(style), "run", shop)
    assert result.status == "done"
    assert result.text == "The shop painted it."
    assert result.tool_calls[0].output == "echo: a blue door\nbytes: 11"
    assert "echo: a blue door" in stub.requests[1].body.decode()
    assert [m[2] for m in peer.seen.messages] == ["a blue door"]


async def test_a_question_from_the_agent_is_answered_through_wait_for(
    peer: Peer, shop: Toolkit, stub: StubLLMServer, make_client: MakeClient
) -> None:
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(request.id, ok=True, data={"answers": ["teal"]})

    stub.enqueue(
        reply.tool_calls(reply.call(PAINT, {"task": "ask for a colour"})), reply.text("ok")
    )
    events: list[object] = []
    result, _ = await drive(
        make_client("openai", wait_for=wait_for), "run", shop, on_event=events.append
    )
    assert result.status == "done"
    assert [r.prompt for r in asked] == ["Which colour?"]
    assert any(isinstance(e, PendingEvent) for e in events)
    assert tool_output(stub, 1) == "painted teal"
    (task_id, context_id, _), answered = peer.seen.messages
    assert answered == (task_id, context_id, "teal")


async def test_without_wait_for_the_run_halts_pending_and_resumes_with_the_answer(
    peer: Peer, shop: Toolkit, stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(reply.tool_calls(reply.call(PAINT, {"task": "ask for a colour"})))
    client = make_client("openai")
    halted, _ = await drive(client, "run", shop)
    assert halted.status == "pending"
    assert halted.pending is not None
    assert halted.text == "Which colour?"
    assert halted.pending.kind == "input"
    task_id, context_id, _ = peer.seen.messages[0]
    assert (halted.pending.data or {})["taskId"] == task_id
    assert (halted.pending.data or {})["contextId"] == context_id

    stub.enqueue(reply.text("painted, thanks"))
    answer = Answer(halted.pending.id, ok=True, data={"answers": ["ochre"]})
    resumed = await client.run_with_answer(halted.pending, answer, shop, history=halted.messages)
    assert resumed.text == "painted, thanks"
    assert tool_output(stub, 1) == "painted ochre"
    assert peer.seen.messages[-1] == (task_id, context_id, "ochre")


async def test_cancelling_the_run_cancels_the_remote_task(
    peer: Peer, stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(reply.tool_calls(reply.call(PAINT, {"task": "hang forever"})))
    token = CancelToken()
    async with await create_toolkit(
        builtins=False, agents=[agent(peer.card_url, poll_every=0.01)]
    ) as tk:
        run = asyncio.ensure_future(make_client("openai").run("go", tk, cancel=token))
        async with asyncio.timeout(5):
            await peer.seen.arrived.wait()
            token.cancel()
            with pytest.raises(RunCancelled):
                await run
            await peer.seen.cancel_seen.wait()
    assert peer.seen.cancelled == [peer.seen.messages[0][0]]


async def test_add_agent_appends_tools_that_stop_working_once_the_toolkit_closes(
    peer: Peer,
) -> None:
    tk = Toolkit()
    added = await tk.add_agent(peer.card_url, name="shop", poll_every=0.01)
    assert [t.name for t in added] == ["shop_paint", "shop_frame_it"]
    assert [t.name for t in tk.tools()] == ["shop_paint", "shop_frame_it"]
    assert (await tk.execute("shop_paint", {"task": "x"})).output == "echo: x\nbytes: 1"
    assert await tk.add_agent(agent(peer.card_url, name="shop")) == []  # names taken
    await tk.aclose()
    after = await tk.execute("shop_paint", {"task": "y"})
    assert after.is_error
    assert 'A2A agent "Paint Shop"' in after.output


async def test_add_agent_rejects_an_unknown_option(peer: Peer) -> None:
    from toolnexus import ConfigError

    with pytest.raises(ConfigError, match="unknown options: colour"):
        await Toolkit().add_agent(peer.card_url, colour="red")


def test_without_the_sdk_agents_are_a_config_error_saying_what_to_install() -> None:
    code = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["a2a"] = None  # as if a2a-sdk were not installed
        from toolnexus import ConfigError, create_toolkit
        try:
            asyncio.run(create_toolkit(builtins=False, agents=["http://127.0.0.1:9/card"]))
        except ConfigError as exc:
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "toolnexus[a2a]" in out.stdout

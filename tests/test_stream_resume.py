"""``Client.stream_resume``: ``resume`` as a stream of events, text deltas included."""

from __future__ import annotations

from contextlib import aclosing

import pytest

from toolnexus import Answer, ConfigError
from toolnexus.events import DoneEvent, TextEvent, ToolResultEvent
from toolnexus.testing import StubLLMServer, reply

from .running import MakeClient
from .ui.support import build_toolkit


async def test_stream_resume_streams_the_rest_of_the_run(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("delete_file", {"name": "x"})), reply.text("It is gone now.")
    )
    client = make_client(style)
    async with await build_toolkit() as tk:
        halted = await client.run("delete x", tk, conversation_id="c")
        assert halted.pending is not None
        events = [e async for e in client.stream_resume("c", Answer(halted.pending.id, True), tk)]
    assert isinstance(events[0], ToolResultEvent)
    assert events[0].output == "deleted x"
    texts = [e.delta for e in events if isinstance(e, TextEvent)]
    assert len(texts) > 1
    assert "".join(texts) == "It is gone now."
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.status == "done"
    assert stub.requests[-1].json["stream"] is True
    assert await client.pending("c") is None


async def test_leaving_early_or_failing_keeps_the_request_pending(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("delete_file", {"name": "x"})),
        reply.error(400, "bad request"),
    )
    client = make_client("openai", retries=0)
    async with await build_toolkit() as tk:
        halted = await client.run("delete x", tk, conversation_id="c")
        assert halted.pending is not None
        answer = Answer(halted.pending.id, True)
        async with aclosing(client.stream_resume("c", answer, tk)) as events:
            async for _ in events:
                break  # left after the first event
        assert await client.pending("c") == halted.pending
        assert [m["role"] for m in await client.conversation_store.get("c") or []][-1] == "tool"
        with pytest.raises(Exception, match="400"):
            async for _ in client.stream_resume("c", answer, tk):
                pass
        assert await client.pending("c") == halted.pending
        with pytest.raises(ConfigError, match="r-other"):
            async for _ in client.stream_resume("c", Answer("r-other", True), tk):
                pass


async def test_stream_resume_of_a_conversation_that_waits_for_nothing_is_a_config_error(
    make_client: MakeClient,
) -> None:
    client = make_client("openai")
    with pytest.raises(ConfigError, match="nothing to resume"):
        async for _ in client.stream_resume("none", Answer("r", True)):
            pass

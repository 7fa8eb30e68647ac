"""The same reply gives the same turn whichever wire mode carried it.

Each scripted reply is rendered by ``StubLLMServer`` as a JSON body (for ``run``) and as an SSE
stream (for ``stream``) in both styles; the two runs must keep the same assistant message and
report the same text, calls, usage and stop reason. The recorded provider fixtures get the same
check in ``test_differential.py``.
"""

from __future__ import annotations

from contextlib import aclosing

import pytest

from toolnexus import DoneEvent, RunResult, create_client
from toolnexus.testing import StubLLMServer, reply

REPLIES = {
    "text": reply.text("Chennai is warm today.", usage=(10, 6)),
    "unicode text in chunks": reply.text(
        "வணக்கம் — ☀ 32°C", chunks=["வண", "க்கம் — ", "☀ 32°C"], usage=(3, 4)
    ),
    "empty text": reply.text(""),
    # explicit ids: the stub numbers default ids across its replies, and each reply is sent twice
    "one call": reply.tool_calls(
        reply.call("get_weather", {"city": "Chennai"}, id="c1"), usage=(9, 2)
    ),
    "text and two calls": reply.tool_calls(
        reply.call("a", {"x": 1}, id="c1"), reply.call("b", id="c2"), text="Checking both."
    ),
    "invalid arguments": reply.tool_calls(reply.call("f", "{not json", id="c1")),
    "nested arguments, own id": reply.tool_calls(
        reply.call("f", {"nested": {"a": [1, 2], "s": "é"}}, id="custom_id")
    ),
}


async def _run(stub: StubLLMServer, style: str, item: reply.Reply, mode: str) -> RunResult:
    stub.enqueue(item)
    client = create_client(stub.url, style, model="m", api_key="test-key", max_turns=1)
    try:
        if mode == "run":
            return await client.run("hi")
        async with aclosing(client.stream("hi")) as events:
            async for event in events:
                if isinstance(event, DoneEvent):
                    return event.result
    finally:
        await client.aclose()
    raise AssertionError("no done event")


@pytest.mark.parametrize("name", list(REPLIES))
@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_json_and_stream_give_the_same_message(
    stub: StubLLMServer, style: str, name: str
) -> None:
    plain = await _run(stub, style, REPLIES[name], "run")
    streamed = await _run(stub, style, REPLIES[name], "stream")

    assert [r.stream for r in stub.requests] == [False, True]
    assert streamed.messages == plain.messages
    assert streamed.to_dict() == plain.to_dict()

"""What the provider sent survives both wire modes, and a run says why it stopped.

The replies are the hand-written fixtures of ``tests/dialects/fixtures/differential/``: the
JSON body for ``run``, the same reply streamed for ``stream``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolnexus import LLMError, TextEvent, Toolkit, ToolResult
from toolnexus.testing import StubLLMServer, reply

from ..running import drive
from .support import Counter, client_for, make_tool, toolkit_of

FIXTURES = Path(__file__).parent.parent / "dialects" / "fixtures" / "differential"


def recorded(case: str, mode: str) -> reply.Reply:
    """The fixture ``case`` as ``mode`` would receive it: JSON for ``run``, SSE for ``stream``."""
    if mode == "run":
        return reply.raw_bytes(
            (FIXTURES / f"{case}.json").read_bytes(), content_type="application/json"
        )
    return reply.raw_bytes(
        (FIXTURES / f"{case}.sse").read_bytes(), content_type="text/event-stream"
    )


def fixture_json(case: str) -> Any:
    return json.loads((FIXTURES / f"{case}.json").read_text())


async def test_thinking_blocks_go_back_with_the_tool_results(
    stub: StubLLMServer, async_mode: str, weather_kit: Toolkit
) -> None:
    stub.enqueue(recorded("anthropic_thinking_tool_use", async_mode), reply.text("Cold."))
    client = client_for(stub, "anthropic")
    result, _ = await drive(client, async_mode, weather_kit)

    assert (result.status, result.text, result.stop_reason) == ("done", "Cold.", "stop")
    sent = stub.requests[1].json["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": fixture_json("anthropic_thinking_tool_use")["content"],
    }
    assert sent[1]["content"][0]["type"] == "thinking"
    assert sent[1]["content"][0]["signature"].startswith("EqQB")
    await client.aclose()


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_truncated_stream_runs_no_tool(stub: StubLLMServer, style: str) -> None:
    deleted = Counter("deleted")
    toolkit = await toolkit_of(make_tool("delete_file", deleted))
    stub.enqueue(recorded(f"{style}_early_end", "stream"))
    client = client_for(stub, style)

    with pytest.raises(LLMError, match="stream ended early") as caught:
        await drive(client, "stream", toolkit)
    assert caught.value.status == 200
    assert deleted.runs == 0
    assert len(stub.requests) == 1
    await client.aclose()


async def test_error_chunk_in_an_openai_stream_raises_and_ask_stores_nothing(
    stub: StubLLMServer,
) -> None:
    stub.enqueue(recorded("openai_error_chunk", "stream"))
    client = client_for(stub, "openai")
    deltas: list[str] = []

    with pytest.raises(LLMError, match="Upstream provider returned an error") as caught:
        await client.ask("hi", id="c1", on_text=deltas.append)
    assert caught.value.status is None
    assert caught.value.body is not None
    assert json.loads(caught.value.body)["error"]["code"] == 502
    assert deltas == ["Partial ans"]
    assert await client.conversation_store.get("c1") is None
    await client.aclose()


async def test_an_empty_anthropic_reply_is_not_stored(stub: StubLLMServer, async_mode: str) -> None:
    stub.enqueue(recorded("anthropic_empty", async_mode), reply.text("Second answer."))
    client = client_for(stub, "anthropic")
    first, _ = await drive(client, async_mode, prompt="first")
    second, _ = await drive(client, async_mode, prompt="second", history=first.messages)

    assert (first.status, first.text, first.stop_reason) == ("done", "", "stop")
    assert first.messages == [{"role": "user", "content": "first"}]
    assert stub.requests[1].json["messages"] == [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
    ]
    assert second.text == "Second answer."
    await client.aclose()


async def test_pause_turn_sends_the_transcript_again(stub: StubLLMServer, async_mode: str) -> None:
    stub.enqueue(recorded("anthropic_pause_turn", async_mode), reply.text("Found it."))
    client = client_for(stub, "anthropic")
    result, _ = await drive(client, async_mode, prompt="research")

    assert (result.status, result.text, result.turns) == ("done", "Found it.", 2)
    paused = {"role": "assistant", "content": fixture_json("anthropic_pause_turn")["content"]}
    assert stub.requests[1].json["messages"] == [{"role": "user", "content": "research"}, paused]
    assert result.messages[:2] == [{"role": "user", "content": "research"}, paused]
    await client.aclose()


async def test_pause_turn_on_the_last_permitted_turn_ends_incomplete(
    stub: StubLLMServer, async_mode: str
) -> None:
    stub.enqueue(recorded("anthropic_pause_turn", async_mode))
    client = client_for(stub, "anthropic", max_turns=1)
    result, _ = await drive(client, async_mode, prompt="research")

    assert (result.status, result.limit, result.turns) == ("incomplete", "maxTurns", 1)
    assert (result.text, result.stop_reason) == ("", "pause_turn")
    assert result.to_dict()["stopReason"] == "pause_turn"
    await client.aclose()


@pytest.mark.parametrize(
    ("case", "style", "stop"),
    [
        ("openai_length", "openai", "length"),
        ("anthropic_max_tokens", "anthropic", "length"),
        ("openai_content_filter", "openai", "content_filter"),
        ("anthropic_refusal", "anthropic", "refusal"),
        ("anthropic_stop_sequence", "anthropic", "stop"),
        ("openai_parallel_tools", "openai", "tool_calls"),
    ],
)
async def test_the_stop_reason_is_named_alike_in_both_styles(
    stub: StubLLMServer, async_mode: str, case: str, style: str, stop: str
) -> None:
    stub.enqueue(recorded(case, async_mode))
    client = client_for(stub, style, max_turns=1)
    result, _ = await drive(client, async_mode)

    assert result.stop_reason == stop
    assert result.to_dict()["stopReason"] == stop
    await client.aclose()


async def test_a_refusal_without_content_is_the_text(stub: StubLLMServer, async_mode: str) -> None:
    stub.enqueue(recorded("openai_refusal", async_mode))
    client = client_for(stub, "openai")
    result, events = await drive(client, async_mode)

    refusal = "I'm sorry, but I can't help with that."
    assert (result.status, result.text, result.stop_reason) == ("done", refusal, "refusal")
    assert result.messages[-1]["refusal"] == refusal
    assert result.messages[-1]["content"] is None
    if async_mode == "stream":
        assert "".join(e.delta for e in events if isinstance(e, TextEvent)) == refusal
    await client.aclose()


async def test_object_arguments_run_and_go_back_as_a_string(
    stub: StubLLMServer, async_mode: str
) -> None:
    seen: list[dict[str, Any]] = []

    async def weather(args: dict[str, Any], ctx: object) -> ToolResult:
        seen.append(args)
        return ToolResult("mild")

    toolkit = await toolkit_of(make_tool("get_weather", weather))
    stub.enqueue(recorded("openai_object_arguments", async_mode), reply.text("Mild."))
    client = client_for(stub, "openai")
    result, _ = await drive(client, async_mode, toolkit)

    assert seen == [{"city": "Lima", "days": 2}]
    assert result.tool_calls[0].is_error is False
    sent = stub.requests[1].json["messages"][1]["tool_calls"][0]["function"]
    assert sent == {"name": "get_weather", "arguments": '{"city":"Lima","days":2}'}
    await client.aclose()


async def test_only_the_first_choice_is_read(stub: StubLLMServer, async_mode: str) -> None:
    stub.enqueue(recorded("openai_n2", async_mode))
    client = client_for(stub, "openai")
    result, _ = await drive(client, async_mode)

    assert result.text == "Red is warm."
    assert result.messages[-1]["content"] == "Red is warm."
    await client.aclose()


async def test_tool_calls_that_are_not_a_list_end_the_run_with_an_error_naming_them(
    stub: StubLLMServer, async_mode: str
) -> None:
    if async_mode == "run":
        message = {"role": "assistant", "content": None, "tool_calls": 7}
        stub.enqueue(reply.raw_json({"choices": [{"index": 0, "message": message}]}))
        where = r"choices\[0\]\.message\.tool_calls is int, not a list"
    else:
        delta = {"role": "assistant", "tool_calls": 7}
        stub.enqueue(reply.raw_sse([{"choices": [{"index": 0, "delta": delta}]}, "[DONE]"]))
        where = r"choices\[0\]\.delta\.tool_calls is int, not a list"
    client = client_for(stub, "openai")

    with pytest.raises(LLMError, match=where) as caught:
        await drive(client, async_mode)
    assert caught.value.status == 200
    assert len(stub.requests) == 1  # a malformed reply is not retried
    await client.aclose()

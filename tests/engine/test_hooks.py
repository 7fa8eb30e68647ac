"""Hooks around model calls and tool calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolnexus import (
    ConfigError,
    Hooks,
    Toolkit,
    ToolResult,
    ToolResultEvent,
    create_client,
    create_toolkit,
    tool,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from ..running import MakeClient, drive


class Veto(Exception):
    """Raised by a hook to stop the run."""


class Spy:
    """A tool that records the arguments it was called with."""

    def __init__(self) -> None:
        self.calls: list[JSONObject] = []

        @tool
        def lookup(city: str) -> str:
            """Looks a city up."""
            self.calls.append({"city": city})
            return f"found {city}"

        self.tool = lookup


@pytest.fixture
def spy() -> Spy:
    return Spy()


@pytest.fixture
async def kit(spy: Spy) -> AsyncIterator[Toolkit]:
    async with await create_toolkit(extra_tools=[spy.tool], builtins=False) as tk:
        yield tk


def lookup_then_text(city: str = "Pune") -> list[reply.Reply]:
    return [reply.tool_calls(reply.call("lookup", {"city": city})), reply.text("Done.")]


def last_result_sent(style: str, body: JSONObject) -> str:
    last = body["messages"][-1]
    if style == "openai":
        content: str = last["content"]
        return content
    block: str = last["content"][0]["content"]
    return block


# --- before_llm -----------------------------------------------------------------------------------


async def test_before_llm_can_replace_the_transcript_for_the_rest_of_the_run(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    replaced = [{"role": "user", "content": "Look up Goa instead."}]

    def before_llm(info: JSONObject) -> JSONObject | None:
        return {"messages": replaced} if info["turn"] == 0 else None

    stub.enqueue(*lookup_then_text("Goa"))
    client = make_client(style, hooks={"before_llm": before_llm}, system_prompt="Be brief.")
    result, _ = await drive(client, mode, kit, prompt="Look up Pune.", conversation_id="c1")

    first, second = (r.json for r in stub.requests)
    assert first["messages"] == replaced
    assert second["messages"][0] == replaced[0]
    assert len(second["messages"]) == 3
    assert result.messages[0] == replaced[0]
    assert all(m.get("content") != "Look up Pune." for m in result.messages)
    assert await client.conversation_store.get("c1") == result.messages


async def test_before_llm_sees_messages_tools_model_turn_and_style(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    seen: list[JSONObject] = []

    async def before_llm(info: JSONObject) -> None:
        seen.append({**info, "messages": list(info["messages"])})

    stub.enqueue(*lookup_then_text())
    await drive(
        make_client(style, hooks=Hooks(before_llm=before_llm)), mode, kit, prompt="Look up Pune."
    )

    assert [set(s) for s in seen] == [{"messages", "tools", "model", "turn", "style"}] * 2
    assert [(s["turn"], s["model"], s["style"]) for s in seen] == [
        (0, "test-model", style),
        (1, "test-model", style),
    ]
    expected_tools = kit.to_openai() if style == "openai" else kit.to_anthropic()
    assert seen[0]["tools"] == expected_tools
    assert seen[0]["messages"] == stub.requests[0].json["messages"]
    assert seen[1]["messages"] == stub.requests[1].json["messages"]


async def test_tools_removed_by_before_llm_stay_removed(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    def before_llm(info: JSONObject) -> JSONObject | None:
        return {"tools": []} if info["turn"] == 0 else None

    stub.enqueue(*lookup_then_text())
    await drive(make_client(style, hooks={"before_llm": before_llm}), mode, kit, prompt="go")

    assert ["tools" in r.json for r in stub.requests] == [False, False]
    assert ["tool_choice" in r.json for r in stub.requests] == [False, False]


async def test_a_raising_before_llm_aborts_the_run_before_any_request(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    def before_llm(info: JSONObject) -> None:
        raise Veto("not today")

    stub.enqueue(reply.text("never sent"))
    client = make_client(style, hooks={"before_llm": before_llm})
    with pytest.raises(Veto, match="not today"):
        await drive(client, mode, conversation_id="c1")

    assert stub.requests == []
    assert await client.conversation_store.get("c1") is None


# --- after_llm ------------------------------------------------------------------------------------


async def test_after_llm_sees_each_raw_response_once(
    stub: StubLLMServer,
    make_client: MakeClient,
    style: str,
    mode: str,
    kit: Toolkit,
) -> None:
    seen: list[JSONObject] = []
    stub.enqueue(
        reply.tool_calls(reply.call("lookup", {"city": "Pune"}), usage=(10, 6)),
        reply.text("Done.", usage=(12, 3)),
    )
    client = make_client(style, hooks={"after_llm": seen.append})
    result, _ = await drive(client, mode, kit, prompt="go")

    assert [(s["turn"], s["model"], s["style"]) for s in seen] == [
        (0, "test-model", style),
        (1, "test-model", style),
    ]
    assistant = [m for m in result.messages if m["role"] == "assistant"]
    responses = [s["response"] for s in seen]
    streamed = mode == "stream"
    for response, message in zip(responses, assistant, strict=True):
        assert response.get("streamed", False) is streamed
        if style == "openai":
            assert response["choices"][0]["message"] == message
            assert "finish_reason" in response["choices"][0]
        else:
            assert response["content"] == message["content"]
            assert "stop_reason" in response
    if style == "openai":
        assert responses[0]["choices"][0]["finish_reason"] == "tool_calls"
        assert responses[1]["usage"]["total_tokens"] == 15
    else:
        assert responses[0]["stop_reason"] == "tool_use"
        assert responses[1]["usage"] == {"input_tokens": 12, "output_tokens": 3}
    if not streamed:
        assert responses[0]["id"] == ("chatcmpl-stub-0" if style == "openai" else "msg_stub_0")


# --- before_tool ----------------------------------------------------------------------------------


async def test_before_tool_result_short_circuits_execution_and_after_tool(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    style: str,
    spy: Spy,
    kit: Toolkit,
) -> None:
    after: list[JSONObject] = []
    metrics: list[JSONObject] = []
    hooks = {
        "before_tool": lambda info: {"result": ToolResult("from cache")},
        "after_tool": after.append,
    }
    stub.enqueue(*lookup_then_text())
    client = make_client(style, hooks=hooks, on_metric=metrics.append)
    result, events = await drive(client, mode, kit, prompt="go")

    assert spy.calls == []
    assert after == []
    [call] = result.tool_calls
    assert (call.name, call.args, call.output, call.is_error) == (
        "lookup",
        {"city": "Pune"},
        "from cache",
        False,
    )
    assert last_result_sent(style, stub.requests[1].json) == "from cache"
    assert [e.output for e in events if isinstance(e, ToolResultEvent)] == ["from cache"]
    tool_metrics = [m for m in metrics if m["event"] == "tool"]
    assert [(m["tool"], m["source"], m["is_error"]) for m in tool_metrics] == [
        ("lookup", "native", False)
    ]


async def test_before_tool_can_rewrite_the_arguments(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    style: str,
    spy: Spy,
    kit: Toolkit,
) -> None:
    seen: list[JSONObject] = []

    async def before_tool(info: JSONObject) -> JSONObject:
        seen.append(dict(info))
        return {"args": {"city": info["args"]["city"].upper()}}

    stub.enqueue(*lookup_then_text("Pune"))
    result, _ = await drive(
        make_client(style, hooks={"before_tool": before_tool}), mode, kit, prompt="go"
    )

    assert spy.calls == [{"city": "PUNE"}]
    call_id = "call_1" if style == "openai" else "toolu_1"
    assert seen == [{"name": "lookup", "args": {"city": "Pune"}, "id": call_id, "turn": 0}]
    assert result.tool_calls[0].args == {"city": "PUNE"}
    assert result.tool_calls[0].output == "found PUNE"


# --- after_tool -----------------------------------------------------------------------------------


async def test_after_tool_can_replace_what_the_model_receives(
    stub: StubLLMServer,
    make_client: MakeClient,
    mode: str,
    style: str,
    spy: Spy,
    kit: Toolkit,
) -> None:
    seen: list[JSONObject] = []

    def after_tool(info: JSONObject) -> JSONObject:
        seen.append(dict(info))
        return {"result": ToolResult("redacted")}

    stub.enqueue(*lookup_then_text())
    result, events = await drive(
        make_client(style, hooks={"after_tool": after_tool}), mode, kit, prompt="go"
    )

    assert spy.calls == [{"city": "Pune"}]
    [info] = seen
    assert (info["name"], info["args"], info["turn"]) == ("lookup", {"city": "Pune"}, 0)
    assert info["result"] == ToolResult("found Pune")
    assert last_result_sent(style, stub.requests[1].json) == "redacted"
    assert result.tool_calls[0].output == "redacted"
    assert [e.output for e in events if isinstance(e, ToolResultEvent)] == ["redacted"]


@pytest.mark.parametrize("hook", ["before_tool", "after_tool"])
async def test_a_raising_tool_hook_propagates_out_of_the_run(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit, hook: str
) -> None:
    def veto(info: JSONObject) -> None:
        raise Veto(hook)

    stub.enqueue(*lookup_then_text())
    client = make_client(style, hooks={hook: veto})
    with pytest.raises(Veto, match=hook):
        await drive(client, mode, kit, prompt="go", conversation_id="c1")

    assert len(stub.requests) == 1
    assert await client.conversation_store.get("c1") is None


# --- configuration --------------------------------------------------------------------------------


def test_unknown_hook_names_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="before_lm"):
        create_client("http://127.0.0.1:9", model="m", api_key="k", hooks={"before_lm": print})


def test_hooks_must_be_a_hooks_or_a_dict() -> None:
    bad: Any = [print]
    with pytest.raises(ConfigError, match="hooks"):
        create_client("http://127.0.0.1:9", model="m", api_key="k", hooks=bad)

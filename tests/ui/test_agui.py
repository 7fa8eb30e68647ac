"""A138/A139: a run as AG-UI events, validated by the ``ag_ui.core`` models."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui.core import Event, EventType, RunAgentInput
from pydantic import TypeAdapter

from toolnexus import ConfigError
from toolnexus.testing import StubLLMServer, reply
from toolnexus.toolkit import Toolkit
from toolnexus.ui import agui_events, agui_input, encode_agui

from ..running import MakeClient
from .support import APPROVAL, build_toolkit

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


@pytest.fixture
async def toolkit() -> AsyncIterator[Toolkit]:
    async with await build_toolkit() as tk:
        yield tk


def run_input(thread: str, text: str = "", **extra: Any) -> dict[str, Any]:
    messages = [{"id": "u1", "role": "user", "content": text}] if text else []
    return {"threadId": thread, "runId": "r1", "messages": messages, **extra}


async def collect(events: AsyncIterator[Any]) -> list[dict[str, Any]]:
    """Each event through the SSE encoder and back, validated by the AG-UI event union."""
    out = []
    async for event in events:
        frame = encode_agui(event)
        assert frame.startswith("data: ")
        assert frame.endswith("\n\n")
        data = json.loads(frame[len("data: ") :])
        EVENTS.validate_python(data)  # the protocol's own models accept it
        out.append(data)
    return out


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


async def test_a_tool_run_yields_the_agui_events_in_order(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}), usage=(5, 3)),
        reply.text("It is sunny in Chennai today.", usage=(9, 6)),
    )
    client = make_client(style)
    events = await collect(agui_events(client, toolkit, run_input("t1", "Weather?")))
    assert types(events) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        *["TOOL_CALL_ARGS"] * (types(events).count("TOOL_CALL_ARGS")),
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * 6,
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    started, finished = events[0], events[-1]
    assert (started["threadId"], started["runId"]) == ("t1", "r1")
    assert started["protocolVersion"] == "1.0"
    start = events[1]
    assert start["toolCallName"] == "get_weather"
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"city": "Chennai"}
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (start["toolCallId"], "sunny in Chennai")
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "It is sunny in Chennai today."
    assert finished["result"] == {"status": "done", "stopReason": "stop"}
    assert "outcome" not in finished
    stored = await client.conversation_store.get("t1")
    assert stored is not None
    assert stored[-1]["role"] == "assistant"


async def test_a_second_input_on_the_thread_continues_the_stored_transcript(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit
) -> None:
    stub.enqueue(reply.text("First."), reply.text("Second."))
    client = make_client("openai")
    await collect(agui_events(client, toolkit, run_input("t2", "one")))
    # the front end's copy of the earlier messages is ignored: the store has the thread
    given = run_input("t2", "two")
    given["messages"] = [
        {"id": "x", "role": "user", "content": "something else entirely"},
        {"id": "u2", "role": "user", "content": "two"},
    ]
    await collect(agui_events(client, toolkit, given))
    sent = stub.requests[1].json["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["one", "two"]


async def test_a_new_thread_is_seeded_from_the_clients_earlier_messages(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit, style: str
) -> None:
    stub.enqueue(reply.text("Yes."))
    client = make_client(style)
    given = run_input("t3")
    given["messages"] = [
        {"id": "a", "role": "user", "content": "Weather?"},
        {
            "id": "b",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Pune"}'},
                }
            ],
        },
        {"id": "c", "role": "tool", "toolCallId": "c1", "content": "sunny in Pune"},
        {"id": "d", "role": "assistant", "content": "Sunny."},
        {"id": "e", "role": "user", "content": "Sure?"},
    ]
    await collect(agui_events(client, toolkit, given))
    body = stub.requests[0].json
    dumped = json.dumps(body["messages"])
    assert "sunny in Pune" in dumped
    assert "Sure?" in dumped
    if style == "anthropic":
        assert body["messages"][1]["content"][0]["type"] == "tool_use"
    else:
        assert body["messages"][1]["tool_calls"][0]["id"] == "c1"


async def test_a_pending_run_is_an_interrupt_and_resume_continues_the_thread(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("delete_file", {"name": "notes.txt"}, id="call_9")),
        reply.text("Done, notes.txt is gone."),
    )
    client = make_client("openai")
    first = await collect(agui_events(client, toolkit, run_input("t4", "Delete notes.txt")))
    assert types(first)[-2:] == ["CUSTOM", "RUN_FINISHED"]
    custom, finished = first[-2], first[-1]
    request = custom["value"]
    assert custom["name"] == "toolnexus.pending"
    assert (request["kind"], request["prompt"]) == ("approval", APPROVAL)
    assert finished["result"] == {"status": "pending"}
    assert finished["outcome"] == {
        "type": "interrupt",
        "interrupts": [
            {"id": request["id"], "reason": "approval", "message": APPROVAL, "toolCallId": "call_9"}
        ],
    }
    assert "TOOL_CALL_RESULT" not in types(first)
    assert (await client.pending("t4")) is not None

    resume = {"interruptId": request["id"], "status": "resolved", "payload": {"note": "ok"}}
    second = await collect(agui_events(client, toolkit, run_input("t4", resume=[resume])))
    assert types(second)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert second[1]["toolCallId"] == "call_9"
    assert second[1]["content"] == "deleted notes.txt ok"
    assert second[-1]["result"] == {"status": "done", "stopReason": "stop"}
    assert await client.pending("t4") is None
    assert len(stub.requests) == 2
    assert stub.requests[1].json["messages"][-1]["content"] == "deleted notes.txt ok"


@pytest.mark.parametrize("status", ["resolved", "cancelled"])
async def test_forwarded_props_answer_resumes_as_well(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit, status: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("delete_file", {"name": "a"}, id="c1")), reply.text("ok")
    )
    client = make_client("anthropic")
    first = await collect(agui_events(client, toolkit, run_input("t5", "Delete a")))
    request_id = first[-2]["value"]["id"]
    answer = {"id": request_id, "ok": status == "resolved"}
    if status == "cancelled":
        answer["reason"] = "not today"
    props = {"toolnexus": {"answer": answer}}
    second = await collect(agui_events(client, toolkit, run_input("t5", forwardedProps=props)))
    expected = "deleted a" if status == "resolved" else f"declined/expired: {APPROVAL}"
    assert second[1]["content"].startswith(expected)
    assert second[-1]["result"]["status"] == "done"


async def test_a_new_prompt_on_a_waiting_thread_is_one_run_error(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("delete_file", {"name": "a"})))
    client = make_client("openai")
    await collect(agui_events(client, toolkit, run_input("t6", "Delete a")))
    events = await collect(agui_events(client, toolkit, run_input("t6", "Something else")))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "waiting for an answer" in events[1]["message"]


async def test_a_model_failure_is_one_run_error_without_the_api_key(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit
) -> None:
    key = "sk-secret-ui-key-0042"
    stub.enqueue(reply.error(401, {"error": {"message": f"bad key {key}"}}))
    client = make_client("openai", api_key=key, retries=0)
    events = await collect(agui_events(client, toolkit, run_input("t7", "hi")))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert key not in json.dumps(events)
    assert "401" in events[1]["message"]


def test_a_bad_input_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"threadId|thread_id"):
        agui_input({"runId": "r", "messages": []})
    with pytest.raises(ConfigError, match="no user message"):
        agui_events(None, None, run_input("t"))  # type: ignore[arg-type]
    assert isinstance(agui_input(run_input("t", "x")), RunAgentInput)
    assert EventType.RUN_ERROR.value == "RUN_ERROR"

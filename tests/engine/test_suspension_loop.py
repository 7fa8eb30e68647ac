"""Suspensions inside the loop: ``wait_for``, durable halts, metrics and hooks.

Every scenario runs in both wire styles and through ``run`` and ``stream``, with a ``wait_for``
on the client and without one where both apply.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from toolnexus import (
    Answer,
    PendingEvent,
    Request,
    ToolResultEvent,
    auth_required,
)
from toolnexus.testing import StubLLMServer, reply

from .support import (
    Counter,
    assert_balanced,
    client_for,
    make_tool,
    results_of,
    toolkit_of,
)
from .suspension_support import PROMPT, Gate, Host, approve, results_in, run_deploy


@pytest.fixture
def mode(async_mode: str) -> str:
    """``run`` and ``stream``: this file does not cover ``run_sync``."""
    return async_mode


# --- transcripts ----------------------------------------------------------------------------------


def flag(style: str, is_error: bool) -> bool | None:
    """The ``is_error`` a tool result carries on the wire (openai tool messages have none)."""
    return None if style == "openai" else is_error


def kinds(log: list[object]) -> list[str]:
    return [
        item[0] if isinstance(item, tuple) else str(getattr(item, "type", item)) for item in log
    ]


# --- durable halt ---------------------------------------------------------------------------------


async def test_durable_halt_returns_pending_with_placeholder_and_saves(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    gate = Gate("Log in", make=lambda p: auth_required("https://auth.example/login", p))
    stub.enqueue(reply.tool_calls(reply.call("login", {"who": "me"}, id="c1")))
    toolkit = await toolkit_of(make_tool("login", gate))
    async with client_for(stub, style) as client:
        result, log = await run_deploy(client, mode, toolkit, conversation_id="conv")
        saved = await client.conversation_store.get("conv")
    request = gate.requests[0]
    assert result.status == "pending"
    assert result.text == "Log in"
    assert result.pending is not None
    assert (result.pending.id, result.pending.kind) == (request.id, "authorization")
    assert result.pending.url == "https://auth.example/login"
    assert result.pending.data == {"toolCallId": "c1"}
    assert result.to_dict()["pending"] == {
        "id": request.id,
        "kind": "authorization",
        "prompt": "Log in",
        "url": "https://auth.example/login",
        "data": {"toolCallId": "c1"},
    }
    placeholder = "Log in\nhttps://auth.example/login"
    assert results_of(result.messages[-1], style) == [("c1", placeholder, flag(style, True))]
    assert [(c.id, c.output, c.is_error) for c in result.tool_calls] == [("c1", placeholder, True)]
    assert kinds(log) == ["usage", "tool_call", "pending", "done"]
    assert isinstance(log[2], PendingEvent)
    assert log[2].request == result.pending
    assert saved == result.messages
    json.dumps(result.to_dict())  # the halted result is wire data
    assert len(stub.requests) == 1


async def test_durable_halt_keeps_the_data_the_tool_set(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    gate = Gate()
    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c9")))
    async with client_for(stub, style) as client:
        result, _ = await run_deploy(client, mode, await toolkit_of(make_tool("deploy", gate)))
    assert result.pending is not None
    assert result.pending.data == {"env": "prod", "toolCallId": "c9"}
    assert result.text == PROMPT


# --- wait_for -------------------------------------------------------------------------------------


async def test_wait_for_ok_runs_the_tool_again_with_the_answer(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    log: list[object] = []
    host = Host(log, approve({"v": 1}))
    gate = Gate()
    stub.enqueue(reply.tool_calls(reply.call("deploy", {"env": "prod"}, id="c1")), reply.text("ok"))
    toolkit = await toolkit_of(make_tool("deploy", gate))
    async with client_for(stub, style, wait_for=host) as client:
        result, _ = await run_deploy(client, mode, toolkit, log)
    request = gate.requests[0]
    assert kinds(log) == [
        "usage",
        "tool_call",
        "pending",
        "wait_for",
        "tool_result",
        "usage",
        "done",
    ]
    assert isinstance(log[2], PendingEvent)
    assert log[2].request.id == request.id
    assert host.requests == [request]
    assert gate.runs == 2
    first, second = gate.contexts
    assert first is not None
    assert second is not None
    assert first.answer is None
    assert second.answer == Answer(request.id, ok=True, data={"v": 1})
    resolved = 'approved: {"v": 1}'
    assert results_in(stub.requests[1].json["messages"], style) == [("c1", resolved)]
    assert log[4] == ToolResultEvent("c1", "deploy", resolved, False)
    assert result.status == "done"
    assert [(c.id, c.args, c.output, c.is_error) for c in result.tool_calls] == [
        ("c1", {"env": "prod"}, resolved, False)
    ]


@pytest.mark.parametrize(
    "answer",
    [
        lambda r: Answer(r.id, ok=False, reason="declined"),
        lambda r: Answer(r.id, ok=False, reason="expired"),
        lambda r: None,
    ],
    ids=["declined", "expired", "none"],
)
async def test_wait_for_not_ok_feeds_declined_expired_to_the_model(
    stub: StubLLMServer, style: str, mode: str, answer: Callable[[Request], Answer | None]
) -> None:
    gate = Gate()
    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c1")), reply.text("understood"))
    toolkit = await toolkit_of(make_tool("deploy", gate))
    async with client_for(stub, style, wait_for=Host([], answer)) as client:
        result, log = await run_deploy(client, mode, toolkit)
    expected = f"declined/expired: {PROMPT}"
    assert gate.runs == 1
    assert [r for m in stub.requests[1].json["messages"] for r in results_of(m, style)] == [
        ("c1", expected, flag(style, True))
    ]
    assert ToolResultEvent("c1", "deploy", expected, True) in log
    assert result.status == "done"
    assert result.text == "understood"


async def test_a_reason_in_a_persons_own_words_reaches_the_model_on_a_reason_line(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    gate = Gate()
    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c1")), reply.text("understood"))
    toolkit = await toolkit_of(make_tool("deploy", gate))
    refuse = Host([], lambda r: Answer(r.id, ok=False, reason="not on a Friday"))
    async with client_for(stub, style, wait_for=refuse) as client:
        await run_deploy(client, mode, toolkit)
    expected = f"declined/expired: {PROMPT}\nreason: not on a Friday"
    assert [r for m in stub.requests[1].json["messages"] for r in results_of(m, style)] == [
        ("c1", expected, flag(style, True))
    ]


async def test_a_tool_suspending_again_after_the_answer_is_unresolved(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    gate = Gate(again=True)
    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c1")), reply.text("giving up"))
    toolkit = await toolkit_of(make_tool("deploy", gate))
    async with client_for(stub, style, wait_for=Host([], approve())) as client:
        result, _ = await run_deploy(client, mode, toolkit)
    assert gate.runs == 2
    assert results_in(stub.requests[1].json["messages"], style) == [("c1", f"unresolved: {PROMPT}")]
    assert result.tool_calls[0].is_error
    assert result.status == "done"


async def test_sync_wait_for_is_supported(stub: StubLLMServer, style: str, mode: str) -> None:
    seen: list[str] = []

    def wait_for(request: Request) -> Answer:
        seen.append(request.prompt)
        return Answer(request.id, ok=True, data={"sync": True})

    gate = Gate()
    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c1")), reply.text("ok"))
    async with client_for(stub, style, wait_for=wait_for) as client:
        result, _ = await run_deploy(client, mode, await toolkit_of(make_tool("deploy", gate)))
    assert seen == [PROMPT]
    assert result.tool_calls[0].output == 'approved: {"sync": true}'


async def test_an_exception_from_wait_for_propagates(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    log: list[object] = []

    def wait_for(request: Request) -> Answer:
        raise RuntimeError("the host went away")

    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c1")), reply.text("never sent"))
    toolkit = await toolkit_of(make_tool("deploy", Gate()))
    async with client_for(stub, style, wait_for=wait_for) as client:
        with pytest.raises(RuntimeError, match="the host went away"):
            await run_deploy(client, mode, toolkit, log)
    assert "done" not in kinds(log)
    assert len(stub.requests) == 1


# --- several suspensions in one turn --------------------------------------------------------------


def racing_gates() -> tuple[Gate, Gate]:
    """Two gates; the first waits until the second has returned, so the second finishes first."""
    second = Gate("Second approval?")
    first = Gate("First approval?", before=second.done)
    return first, second


async def test_halt_is_on_the_first_suspension_in_call_order(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    first, second = racing_gates()
    note = Counter("noted")
    stub.enqueue(
        reply.tool_calls(
            reply.call("first", id="a"), reply.call("second", id="b"), reply.call("note", id="c")
        ),
        reply.text("all done"),
    )
    toolkit = await toolkit_of(
        make_tool("first", first), make_tool("second", second), make_tool("note", note)
    )
    async with client_for(stub, style) as client:
        halted, log = await run_deploy(client, mode, toolkit)
        assert halted.pending is not None
        assert halted.pending.id == first.requests[0].id
        assert halted.pending.data == {"env": "prod", "toolCallId": "a"}
        assert [c.id for c in halted.tool_calls] == ["a", "c"]
        assert results_in(halted.messages, style) == [("a", "First approval?"), ("c", "noted")]
        turn_events = ["usage", "tool_call", "tool_call", "tool_call", "pending", "tool_result"]
        assert kinds(log) == [*turn_events, "done"]
        assert log[-2] == ToolResultEvent("c", "note", "noted", False)

        # Resuming runs the second call again (it suspends again), never the finished third.
        answer = Answer(halted.pending.id, ok=True, data={"first": True})
        again = await client.run_with_answer(
            halted.pending, answer, toolkit, history=halted.messages
        )
        assert again.status == "pending"
        assert again.pending is not None
        assert again.pending.id == second.requests[1].id
        assert again.pending.data == {"env": "prod", "toolCallId": "b"}
        assert results_in(again.messages, style) == [
            ("a", 'approved: {"first": true}'),
            ("b", "Second approval?"),
            ("c", "noted"),
        ]

        answer = Answer(again.pending.id, ok=True, data={"second": True})
        final = await client.run_with_answer(again.pending, answer, toolkit, history=again.messages)
    assert final.status == "done"
    assert final.text == "all done"
    assert (first.runs, second.runs, note.runs) == (2, 3, 1)
    assert len(stub.requests) == 2
    sent = stub.requests[1].json["messages"]
    assert_balanced(sent, style)
    assert results_in(sent, style) == [
        ("a", 'approved: {"first": true}'),
        ("b", 'approved: {"second": true}'),
        ("c", "noted"),
    ]


async def test_wait_for_resolves_every_suspension_in_call_order(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    log: list[object] = []
    host = Host(log, lambda r: Answer(r.id, ok=True, data={"for": r.prompt}))
    first, second = racing_gates()
    stub.enqueue(
        reply.tool_calls(reply.call("first", id="a"), reply.call("second", id="b")),
        reply.text("both approved"),
    )
    toolkit = await toolkit_of(make_tool("first", first), make_tool("second", second))
    async with client_for(stub, style, wait_for=host) as client:
        result, _ = await run_deploy(client, mode, toolkit, log)
    assert [r.id for r in host.requests] == [first.requests[0].id, second.requests[0].id]
    assert kinds(log) == [
        "usage",
        "tool_call",
        "tool_call",
        "pending",
        "wait_for",
        "tool_result",
        "pending",
        "wait_for",
        "tool_result",
        "usage",
        "done",
    ]
    expected = [
        ("a", 'approved: {"for": "First approval?"}'),
        ("b", 'approved: {"for": "Second approval?"}'),
    ]
    assert results_in(stub.requests[1].json["messages"], style) == expected
    assert [(c.id, c.output) for c in result.tool_calls] == expected
    assert (first.runs, second.runs) == (2, 2)

"""Suspensions seen by metrics and hooks: a suspension is not a tool error, ``before_tool``
may suspend, and the events of a turn with a pending call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolnexus import (
    Answer,
    DoneEvent,
    Hooks,
    PendingEvent,
    Request,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
    create_toolkit,
    pending,
)
from toolnexus.testing import StubLLMServer, reply

from .support import (
    Counter,
    client_for,
    make_tool,
    toolkit_of,
)
from .suspension_support import Gate, Host, approve, results_in, run_deploy


@pytest.fixture
def mode(async_mode: str) -> str:
    """``run`` and ``stream``: this file does not cover ``run_sync``."""
    return async_mode


# --- not a tool error -----------------------------------------------------------------------------


class AfterToolSpy:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, info: dict[str, Any]) -> None:
        self.seen.append((info["id"], info["result"].output))


def tool_metrics(metrics: list[dict[str, Any]]) -> list[tuple[str, bool, bool]]:
    return [
        (m["tool"], m["is_error"], m.get("pending", False)) for m in metrics if m["event"] == "tool"
    ]


async def test_resolved_suspension_metrics_and_after_tool(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    after = AfterToolSpy()
    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c1")), reply.text("ok"))
    client = client_for(
        stub,
        style,
        wait_for=Host([], approve({"ok": 1})),
        on_metric=metrics.append,
        hooks=Hooks(after_tool=after),
    )
    async with client:
        await run_deploy(client, mode, await toolkit_of(make_tool("deploy", Gate())))
    assert tool_metrics(metrics) == [("deploy", False, True), ("deploy", False, False)]
    assert after.seen == [("c1", 'approved: {"ok": 1}')]


async def test_halted_suspension_metric_is_pending_and_skips_after_tool(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    after = AfterToolSpy()
    stub.enqueue(reply.tool_calls(reply.call("deploy", id="c1")))
    client = client_for(stub, style, on_metric=metrics.append, hooks=Hooks(after_tool=after))
    async with client:
        result, _ = await run_deploy(client, mode, await toolkit_of(make_tool("deploy", Gate())))
    assert result.status == "pending"
    assert tool_metrics(metrics) == [("deploy", False, True)]
    assert after.seen == []
    runs = [m for m in metrics if m["event"] == "run"]
    assert [r["status"] for r in runs] == ["pending"]


class ApprovalGate:
    """A ``before_tool`` hook that suspends every ``deploy`` call until a human approves."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def __call__(self, info: dict[str, Any]) -> dict[str, Any] | None:
        if info["name"] != "deploy":
            return None
        request = Request.new("approval", f"Run deploy with {json.dumps(info['args'])}?")
        self.requests.append(request)
        return {"result": pending(request)}


async def test_before_tool_suspension_with_wait_for_runs_the_tool_after_approval(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    after = AfterToolSpy()
    deploy = Gate()  # answers "approved: ..." when run with an answer
    gate = ApprovalGate()
    stub.enqueue(reply.tool_calls(reply.call("deploy", {"env": "prod"}, id="c1")), reply.text("ok"))
    client = client_for(
        stub,
        style,
        wait_for=Host([], approve({"by": "ops"})),
        on_metric=metrics.append,
        hooks=Hooks(before_tool=gate, after_tool=after),
    )
    async with client:
        result, log = await run_deploy(client, mode, await toolkit_of(make_tool("deploy", deploy)))
    assert deploy.runs == 1, "the tool runs once, after the approval"
    assert deploy.contexts[0] is not None
    assert deploy.contexts[0].answer == Answer(gate.requests[0].id, ok=True, data={"by": "ops"})
    assert [e.request.prompt for e in log if isinstance(e, PendingEvent)] == [
        'Run deploy with {"env": "prod"}?'
    ]
    assert tool_metrics(metrics) == [("deploy", False, True), ("deploy", False, False)]
    assert after.seen == [("c1", 'approved: {"by": "ops"}')]
    assert result.tool_calls[0].output == 'approved: {"by": "ops"}'


async def test_before_tool_suspension_without_wait_for_halts_and_resume_runs_the_tool(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    after = AfterToolSpy()
    deploy = Gate()
    gate = ApprovalGate()
    stub.enqueue(reply.tool_calls(reply.call("deploy", {"env": "prod"}, id="c1")), reply.text("ok"))
    client = client_for(
        stub, style, on_metric=metrics.append, hooks=Hooks(before_tool=gate, after_tool=after)
    )
    toolkit = await toolkit_of(make_tool("deploy", deploy))
    async with client:
        halted, _ = await run_deploy(client, mode, toolkit)
        assert halted.status == "pending"
        assert deploy.runs == 0
        assert tool_metrics(metrics) == [("deploy", False, True)]
        assert after.seen == []
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True, data={"by": "ops"})
        result = await client.run_with_answer(
            halted.pending, answer, toolkit, history=halted.messages
        )
    assert result.status == "done"
    assert deploy.runs == 1
    assert deploy.contexts[0] is not None
    assert deploy.contexts[0].answer == answer
    assert after.seen == [("c1", 'approved: {"by": "ops"}')]
    assert len(gate.requests) == 1, "before_tool is not consulted again on the resume"
    assert tool_metrics(metrics)[1:] == [("deploy", False, False)]


async def test_event_order_within_a_turn_with_a_pending_call(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    log: list[object] = []
    stub.enqueue(
        reply.tool_calls(reply.call("note", id="a"), reply.call("deploy", id="b")),
        reply.text("ok"),
    )
    toolkit = await toolkit_of(make_tool("note", Counter()), make_tool("deploy", Gate()))
    async with client_for(stub, style, wait_for=Host(log, approve())) as client:
        await run_deploy(client, mode, toolkit, log)
    assert [type(e) for e in log if not isinstance(e, tuple)] == [
        UsageEvent,
        ToolCallEvent,
        ToolCallEvent,
        ToolResultEvent,
        PendingEvent,
        ToolResultEvent,
        UsageEvent,
        DoneEvent,
    ]
    assert [e.id for e in log if isinstance(e, ToolResultEvent)] == ["a", "b"]


# --- the `question` built-in ----------------------------------------------------------------------


async def test_question_builtin_renders_its_prompt_and_returns_the_answer_as_json(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    questions = [
        {"question": "Which env?", "header": "Env", "options": ["dev", "prod"]},
        {"question": "Why?"},
    ]
    log: list[object] = []
    host = Host(log, lambda r: Answer(r.id, ok=True, data={"answers": ["dev", "test"]}))
    stub.enqueue(
        reply.tool_calls(reply.call("question", {"questions": questions}, id="q1")),
        reply.text("thanks"),
    )
    toolkit = await create_toolkit(builtins=True)
    assert "question" in toolkit
    async with client_for(stub, style, wait_for=host) as client:
        result, _ = await run_deploy(client, mode, toolkit, log)
    assert [r.prompt for r in host.requests] == ["Which env? (options: dev, prod)\nWhy?"]
    assert host.requests[0].kind == "question"
    assert host.requests[0].data == {"questions": questions}
    assert results_in(stub.requests[1].json["messages"], style) == [
        ("q1", '{"answers":["dev","test"]}')
    ]
    assert result.status == "done"

"""Durable resume: ``run_with_answer`` and ``ask_with_answer``.

A run halts with ``status="pending"`` (through ``run`` or ``stream``, in both wire styles); the
host answers later, in the same process or in another one.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolnexus import (
    Answer,
    CancelToken,
    Client,
    DoneEvent,
    Event,
    InMemoryConversationStore,
    PendingEvent,
    Request,
    RunCancelled,
    RunResult,
    SqliteConversationStore,
    ToolContext,
    Toolkit,
    ToolResult,
    ToolResultEvent,
    pending,
)
from toolnexus.testing import StubLLMServer, reply

from ..running import drive
from .support import (
    Counter,
    Message,
    assert_balanced,
    call_ids,
    client_for,
    make_tool,
    results_of,
    toolkit_of,
)

PROMPT = "Approve the deploy?"
WORKER = Path(__file__).with_name("resume_worker.py")


@pytest.fixture
def mode(async_mode: str) -> str:
    """``run`` and ``stream``: this file does not cover ``run_sync``."""
    return async_mode


async def halt(client: Client, mode: str, toolkit: Toolkit, **options: Any) -> RunResult:
    """Run until the durable halt, through ``run`` or ``stream``."""
    result, _ = await drive(client, mode, toolkit, prompt="Ship it.", **options)
    assert result.status == "pending", result.status
    assert result.pending is not None
    return result


class Gate:
    """Suspends until run with an answer (``again=True``: always). ``until`` sets how many
    executions suspend even without an answer being needed (``None``: all of them)."""

    def __init__(self, *, again: bool = False, until: int | None = None) -> None:
        self.again = again
        self.until = until
        self.contexts: list[ToolContext | None] = []
        self.requests: list[Request] = []

    async def __call__(self, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        self.contexts.append(ctx)
        answer = ctx.answer if ctx is not None else None
        if answer is not None and not self.again:
            return ToolResult(f"approved: {json.dumps(answer.data)}")
        if self.until is not None and self.runs > self.until:
            return ToolResult("went through")
        request = Request.new("approval", PROMPT)
        self.requests.append(request)
        return pending(request)

    @property
    def runs(self) -> int:
        return len(self.contexts)


class SpyStore(InMemoryConversationStore):
    """The in-memory store, recording every ``get`` and ``save``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    async def get(self, id: str) -> list[Message] | None:
        self.calls.append(("get", id))
        return await super().get(id)

    async def save(self, id: str, messages: list[Message]) -> None:
        self.calls.append(("save", id))
        await super().save(id, messages)


class Scenario:
    """One turn calling ``note`` (completes), ``deploy`` (halts) and ``later`` (suspends on its
    first execution only, so the halt leaves it unanswered), then a final text."""

    def __init__(self, stub: StubLLMServer, *, deploy: Gate | None = None) -> None:
        self.note = Counter()
        self.deploy = deploy or Gate()
        self.later = Gate(until=1)
        stub.enqueue(
            reply.tool_calls(
                reply.call("note", id="b"),
                reply.call("deploy", {"env": "prod"}, id="a"),
                reply.call("later", id="c"),
            ),
            reply.text("shipped"),
        )

    async def toolkit(self) -> Toolkit:
        return await toolkit_of(
            make_tool("note", self.note),
            make_tool("deploy", self.deploy),
            make_tool("later", self.later),
        )


# --- transcripts ----------------------------------------------------------------------------------


def results_in(messages: list[Message], style: str) -> list[tuple[str, str, bool | None]]:
    return [r for m in messages for r in results_of(m, style)]


def last_call_turn(messages: list[Message], style: str) -> int:
    return max(i for i, m in enumerate(messages) if call_ids(m, style))


def ok(error: bool, style: str) -> bool | None:
    return None if style == "openai" else error


# --- run_with_answer ------------------------------------------------------------------------------


async def test_ok_answer_replaces_the_placeholder_and_fills_unanswered_calls(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    events: list[Event] = []
    async with client_for(stub, style) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.pending is not None
        turn = last_call_turn(halted.messages, style)
        assert results_in(halted.messages, style) == [
            ("b", "noted", ok(False, style)),
            ("a", PROMPT, ok(True, style)),
        ]
        answer = Answer(halted.pending.id, ok=True, data={"by": "ops"})
        result = await client.run_with_answer(
            halted.pending, answer, toolkit, history=halted.messages, on_event=events.append
        )
    sent: list[Message] = stub.requests[1].json["messages"]
    assert sent[: turn + 1] == halted.messages[: turn + 1], "no message added before the turn"
    assert_balanced(sent, style)
    assert all(results_of(m, style) for m in sent[turn + 1 :]), "only results after the turn"
    assert results_in(sent, style) == [
        ("b", "noted", ok(False, style)),
        ("a", 'approved: {"by": "ops"}', ok(False, style)),
        ("c", "went through", ok(False, style)),
    ]
    assert result.status == "done"
    assert result.text == "shipped"
    assert result.turns == 1
    assert result.messages[:-1] == sent
    assert [c.id for c in result.tool_calls] == ["a", "c"]
    assert (scenario.note.runs, scenario.deploy.runs, scenario.later.runs) == (1, 2, 2)
    rerun = scenario.deploy.contexts[1]
    assert rerun is not None
    assert rerun.answer == answer
    assert [e.id for e in events if isinstance(e, ToolResultEvent)] == ["a", "c"]
    assert not any(isinstance(e, PendingEvent) for e in events)
    assert isinstance(events[-1], DoneEvent)


async def test_a_resumed_denial_carries_its_reason_to_the_model(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    async with client_for(stub, style) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=False, reason="not on a Friday")
        await client.run_with_answer(halted.pending, answer, toolkit, history=halted.messages)
    sent: list[Message] = stub.requests[1].json["messages"]
    expected = f"declined/expired: {PROMPT}\nreason: not on a Friday"
    assert results_in(sent, style)[1] == ("a", expected, ok(True, style))
    assert scenario.deploy.runs == 1


async def test_not_ok_answer_gives_declined_expired_without_running_the_tool(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    async with client_for(stub, style) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=False, reason="declined")
        result = await client.run_with_answer(
            halted.pending, answer, toolkit, history=halted.messages
        )
    sent: list[Message] = stub.requests[1].json["messages"]
    assert_balanced(sent, style)
    assert results_in(sent, style)[1] == ("a", f"declined/expired: {PROMPT}", ok(True, style))
    assert scenario.deploy.runs == 1
    assert scenario.note.runs == 1
    assert result.status == "done"


async def test_a_repeated_suspension_on_resume_is_unresolved(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub, deploy=Gate(again=True))
    toolkit = await scenario.toolkit()
    async with client_for(stub, style) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        result = await client.run_with_answer(
            halted.pending, answer, toolkit, history=halted.messages
        )
    assert results_in(stub.requests[1].json["messages"], style)[1] == (
        "a",
        f"unresolved: {PROMPT}",
        ok(True, style),
    )
    assert scenario.deploy.runs == 2
    assert result.status == "done"


async def test_resume_gets_a_fresh_max_turns_budget(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    async with client_for(stub, style, max_turns=1) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.turns == 1
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        result = await client.run_with_answer(
            halted.pending, answer, toolkit, history=halted.messages
        )
    assert result.status == "done"
    assert result.turns == 1


async def test_mismatched_answer_id_raises_value_error_before_any_request(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    store = SpyStore()
    async with client_for(stub, style, store=store) as client:
        halted = await halt(client, mode, toolkit, conversation_id="c1")
        assert halted.pending is not None
        wrong = Answer("not-" + halted.pending.id, ok=True)
        store.calls.clear()
        with pytest.raises(ValueError, match="does not match"):
            await client.run_with_answer(halted.pending, wrong, toolkit, history=halted.messages)
        with pytest.raises(ValueError, match="does not match"):
            await client.ask_with_answer(halted.pending, wrong, toolkit, id="c1")
    assert len(stub.requests) == 1
    assert store.calls == []
    assert scenario.deploy.runs == 1


async def test_history_that_cannot_be_resumed_raises_value_error(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    async with client_for(stub, style) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        later = [*halted.messages, {"role": "user", "content": "and another thing"}]
        with pytest.raises(ValueError, match="must end with the results"):
            await client.run_with_answer(halted.pending, answer, toolkit, history=later)
        unstamped = Request(halted.pending.id, "approval", PROMPT)
        with pytest.raises(ValueError, match="toolCallId"):
            await client.run_with_answer(unstamped, answer, toolkit, history=halted.messages)
        turn = last_call_turn(halted.messages, style)
        with pytest.raises(ValueError, match="placeholder"):
            await client.run_with_answer(
                halted.pending, answer, toolkit, history=halted.messages[: turn + 1]
            )
    assert len(stub.requests) == 1
    assert scenario.deploy.runs == 1


async def test_a_pre_cancelled_resume_runs_nothing_and_sends_nothing(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    token = CancelToken()
    token.cancel()
    async with client_for(stub, style) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        with pytest.raises(RunCancelled):
            await client.run_with_answer(
                halted.pending, answer, toolkit, history=halted.messages, cancel=token
            )
    assert (scenario.deploy.runs, scenario.later.runs) == (1, 1)
    assert len(stub.requests) == 1


# --- ask_with_answer ------------------------------------------------------------------------------


async def test_ask_with_answer_loads_from_and_saves_to_the_store(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    store = SpyStore()
    async with client_for(stub, style, store=store) as client:
        halted = await halt(client, mode, toolkit, conversation_id="c1")
        assert halted.pending is not None
        assert await store.get("c1") == halted.messages
        store.calls.clear()
        answer = Answer(halted.pending.id, ok=True, data={"by": "ops"})
        result = await client.ask_with_answer(halted.pending, answer, toolkit, id="c1")
    assert store.calls == [("get", "c1"), ("save", "c1")]
    assert result.status == "done"
    assert await store.get("c1") == result.messages
    turn = last_call_turn(halted.messages, style)
    sent: list[Message] = stub.requests[1].json["messages"]
    assert sent[: turn + 1] == halted.messages[: turn + 1], "the history came from the store"
    assert_balanced(result.messages, style)
    assert scenario.note.runs == 1


async def test_ask_with_answer_saves_when_the_resume_halts_again(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    scenario.later.until = None  # the unanswered call suspends again on the resume
    toolkit = await scenario.toolkit()
    store = SpyStore()
    async with client_for(stub, style, store=store) as client:
        halted = await halt(client, mode, toolkit, conversation_id="c1")
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        again = await client.ask_with_answer(halted.pending, answer, toolkit, id="c1")
    assert again.status == "pending"
    assert again.pending is not None
    assert again.pending.data == {"toolCallId": "c"}
    assert await store.get("c1") == again.messages
    assert_balanced(again.messages, style)
    assert len(stub.requests) == 1


async def test_ask_with_answer_for_an_unknown_id_raises_value_error(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    scenario = Scenario(stub)
    toolkit = await scenario.toolkit()
    async with client_for(stub, style) as client:
        halted = await halt(client, mode, toolkit)
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        with pytest.raises(ValueError, match="missing"):
            await client.ask_with_answer(halted.pending, answer, toolkit, id="missing")
    assert len(stub.requests) == 1


# --- across processes -----------------------------------------------------------------------------


async def run_worker(*args: str) -> str:
    """Run ``resume_worker.py`` with ``args``; its stdout (it must exit 0)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(60):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, f"resume_worker.py {args[0]} failed:\n{err.decode()}"
    return out.decode()


async def test_a_run_halted_in_one_process_resumes_in_another(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "state" / "conversations.db")
    stub.enqueue(
        reply.tool_calls(
            reply.call("record", id="c1"), reply.call("deploy", {"env": "prod"}, id="c2")
        ),
        reply.text("Released and deployed."),
    )
    printed = await run_worker("halt", db, stub.url, style)
    request = Request.from_dict(json.loads(printed))
    assert (request.kind, request.prompt) == ("approval", "Approve the production deploy?")
    assert request.data == {"env": "prod", "toolCallId": "c2"}
    assert len(stub.requests) == 1

    finished = json.loads(await run_worker("resume", db, stub.url, style, printed))
    assert finished == {"status": "done", "text": "Released and deployed."}

    calls = Path(f"{db}.calls").read_text(encoding="utf-8").splitlines()
    assert calls == ["record", "deploy", "deploy answered"], "a completed call ran twice"
    assert len(stub.requests) == 2
    sent: list[Message] = stub.requests[1].json["messages"]
    assert_balanced(sent, style)
    assert [(i, c) for i, c, _ in results_in(sent, style)] == [
        ("c1", "recorded"),
        ("c2", "deployed to prod (approved by release-manager)"),
    ]
    assert sum(1 for m in sent if m.get("content") == "Record the release, then deploy it.") == 1
    saved = await SqliteConversationStore(db).get("deploy-42")
    assert saved is not None
    assert saved[:-1] == sent
    assert_balanced(saved, style)

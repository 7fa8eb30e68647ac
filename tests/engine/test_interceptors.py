"""The interceptor seam: every model call and tool execution of a run passes through it.

Covers the order and identity of what interceptors see, stacking, replaying stored values
instead of calling (what a durable layer does), the streaming path, the run's edges on every
exit (done, error, cancel, abandoned stream), and clients without interceptors.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from contextlib import aclosing
from typing import Any

import pytest

from toolnexus import (
    Answer,
    CancelToken,
    ConfigError,
    DoneEvent,
    Interceptor,
    LLMError,
    ModelCall,
    Request,
    RunCancelled,
    RunInfo,
    RunResult,
    TextEvent,
    ToolContext,
    ToolExecution,
    ToolResult,
    pending,
)
from toolnexus.engine.interceptors import CallModel, ExecuteTool
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from ..running import ASYNC_MODES, drive
from .support import Counter, client_for, make_tool, toolkit_of

CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="")


class Recorder(Interceptor):
    """Logs what it sees as ``(label, ...)`` tuples into a shared list."""

    def __init__(self, log: list[tuple[Any, ...]], label: str = "r") -> None:
        self.log = log
        self.label = label

    async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
        self.log.append((self.label, "llm>", call.key))
        reply_ = await call_next(call)
        self.log.append((self.label, "llm<", call.key, call.usage_of(reply_).total_tokens))
        return reply_

    async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
        self.log.append((self.label, "tool>", call.key, call.name, call.args, call.call_id))
        result = await call_next(call)
        self.log.append((self.label, "tool<", call.key, result.output))
        return result

    def run_started(self, run: RunInfo) -> None:
        self.log.append((self.label, "start", run.model, run.style, run.stream))

    def run_finished(
        self, run: RunInfo, result: RunResult | None, error: BaseException | None
    ) -> None:
        outcome = result.status if result is not None else type(error).__name__
        self.log.append((self.label, "finish", outcome))


def two_turns() -> list[reply.Reply]:
    return [
        reply.tool_calls(reply.call("note", {"n": 1}, id="c1"), usage=(10, 6)),
        reply.text("All noted.", usage=(20, 5), chunks=["All ", "noted."]),
    ]


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_each_model_call_and_tool_execution_passes_through_in_order(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(*two_turns())
    log: list[tuple[Any, ...]] = []
    client = client_for(stub, style)
    client.add_interceptor(Recorder(log))
    async with await toolkit_of(make_tool("note", Counter())) as tk:
        result, _ = await drive(client, mode, tk)
    await client.aclose()

    assert result.text == "All noted."
    assert [entry[1:] for entry in log] == [
        ("start", "test-model", style, mode == "stream"),
        ("llm>", "llm/0"),
        ("llm<", "llm/0", 16),
        ("tool>", "tool/0", "note", {"n": 1}, "c1"),
        ("tool<", "tool/0", "noted"),
        ("llm>", "llm/1"),
        ("llm<", "llm/1", 25),
        ("finish", "done"),
    ]


async def test_the_first_interceptor_installed_is_the_outermost(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("hi"))
    log: list[tuple[Any, ...]] = []
    client = client_for(stub, "openai")
    outer, inner = Recorder(log, "outer"), Recorder(log, "inner")
    client.add_interceptor(outer)
    client.add_interceptor(inner)
    assert client.interceptors == (outer, inner)
    await client.run("hi")
    await client.aclose()

    assert [entry[:2] for entry in log] == [
        ("outer", "start"),
        ("inner", "start"),
        ("outer", "llm>"),
        ("inner", "llm>"),
        ("inner", "llm<"),
        ("outer", "llm<"),
        ("inner", "finish"),
        ("outer", "finish"),
    ]


class Journal(Interceptor):
    """Stores every reply and tool result as JSON text; replays them instead of calling."""

    def __init__(self) -> None:
        self.saved: dict[str, str] = {}
        self.replayed: list[str] = []

    async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
        if call.key in self.saved:
            self.replayed.append(call.key)
            stored: JSONObject = json.loads(self.saved[call.key])
            return stored
        value = await call_next(call)
        self.saved[call.key] = json.dumps(value)
        return value

    async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
        if call.key in self.saved:
            self.replayed.append(call.key)
            return ToolResult.from_dict(json.loads(self.saved[call.key]))
        result = await call_next(call)
        self.saved[call.key] = json.dumps(result.to_dict())
        return result


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_stored_replies_and_results_replay_the_run_without_calling_again(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(*two_turns())
    journal = Journal()
    counter = Counter()
    async with await toolkit_of(make_tool("note", counter)) as tk:
        first_client = client_for(stub, style)
        first_client.add_interceptor(journal)
        first, _ = await drive(first_client, mode, tk)
        await first_client.aclose()
        assert journal.replayed == []

        second_client = client_for(stub, style)  # as a new process would, from the journal
        second_client.add_interceptor(journal)
        second, events = await drive(second_client, mode, tk)
        await second_client.aclose()

    assert journal.replayed == ["llm/0", "tool/0", "llm/1"]
    assert len(stub.requests) == 2
    assert counter.runs == 1
    assert second.to_dict() == first.to_dict()
    if mode == "stream":  # a replayed reply is streamed as one delta
        assert [e.delta for e in events if isinstance(e, TextEvent)] == ["All noted."]


async def test_deltas_stream_through_an_interceptor_as_they_arrive(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(reply.text("one two three", chunks=["one ", "two ", "three"]))
    client = client_for(stub, style)
    client.add_interceptor(Recorder([]))
    _, events = await drive(client, "stream")
    await client.aclose()

    assert [e.delta for e in events if isinstance(e, TextEvent)] == ["one ", "two ", "three"]


async def test_a_tool_runs_inside_its_around_tool_with_the_run_context(
    stub: StubLLMServer,
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("peek", id="a"), reply.call("peek", id="b")),
        reply.text("ok"),
    )
    seen: list[tuple[str, float | None]] = []

    async def peek(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        assert ctx is not None
        seen.append((CURRENT.get(), ctx.timeout))
        return ToolResult("seen")

    class Marks(Interceptor):
        async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
            token = CURRENT.set(f"{call.key}:{call.call_id}:{call.index}")
            try:
                assert call.context.timeout is not None
                return await call_next(call)
            finally:
                CURRENT.reset(token)

    client = client_for(stub, "openai", timeout_ms=60_000)
    client.add_interceptor(Marks())
    async with await toolkit_of(make_tool("peek", peek)) as tk:
        await client.run("go", tk)
    await client.aclose()

    assert sorted(mark for mark, _ in seen) == ["tool/0:a:0", "tool/1:b:1"]
    assert all(timeout is not None and timeout > 0 for _, timeout in seen)


async def test_an_answered_suspension_runs_again_as_a_second_attempt(
    stub: StubLLMServer,
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("approve", id="c1")), reply.text("done"))
    request = Request.new("approval", "May I?")

    async def approve(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        assert ctx is not None
        return ToolResult("approved") if ctx.answer is not None else pending(request)

    attempts: list[tuple[str, int]] = []

    class Attempts(Interceptor):
        async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
            attempts.append((call.key, call.attempt))
            return await call_next(call)

    client = client_for(stub, "anthropic", wait_for=lambda r: Answer(r.id, True))
    client.add_interceptor(Attempts())
    async with await toolkit_of(make_tool("approve", approve)) as tk:
        result = await client.run("go", tk)
    await client.aclose()

    assert result.tool_calls[0].output == "approved"
    assert attempts == [("tool/0", 0), ("tool/1", 1)]


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_a_failed_model_call_finishes_the_run_with_its_error(
    stub: StubLLMServer, mode: str
) -> None:
    stub.enqueue(reply.error(400, "bad request"))
    log: list[tuple[Any, ...]] = []
    client = client_for(stub, "openai")
    client.add_interceptor(Recorder(log))
    with pytest.raises(LLMError):
        await drive(client, mode)
    await client.aclose()

    assert [entry[1:] for entry in log] == [
        ("start", "test-model", "openai", mode == "stream"),
        ("llm>", "llm/0"),
        ("finish", "LLMError"),
    ]


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_a_cancelled_run_tells_the_call_in_flight_why(stub: StubLLMServer, mode: str) -> None:
    stub.enqueue(reply.text("late").with_delay(3600))
    token = CancelToken()
    stopped: list[tuple[str, str]] = []
    finished: list[BaseException | None] = []

    class Watch(Interceptor):
        async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
            try:
                return await call_next(call)
            except asyncio.CancelledError:
                stopped.append(("CancelledError", type(call.run.stop_reason).__name__))
                raise

        def run_finished(
            self, run: RunInfo, result: RunResult | None, error: BaseException | None
        ) -> None:
            finished.append(error)

    client = client_for(stub, "openai")
    client.add_interceptor(Watch())
    running = asyncio.create_task(drive(client, mode, cancel=token))
    async with asyncio.timeout(5):
        await stub.until_requests(1)
    token.cancel()
    async with asyncio.timeout(5):
        with pytest.raises(RunCancelled):
            await running
    await client.aclose()

    assert stopped == [("CancelledError", "RunCancelled")]
    assert len(finished) == 1
    assert isinstance(finished[0], RunCancelled)


async def test_an_abandoned_stream_finishes_the_run_without_result_or_error(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(reply.text("a b c", chunks=["a ", "b ", "c"]))
    log: list[tuple[Any, ...]] = []
    client = client_for(stub, style)
    client.add_interceptor(Recorder(log))
    async with asyncio.timeout(5), aclosing(client.stream("hi")) as events:
        async for event in events:
            assert isinstance(event, TextEvent)
            break
    await client.aclose()

    assert log[-1][1:] == ("finish", "NoneType")
    assert [entry[1] for entry in log].count("finish") == 1


async def test_a_stream_closed_after_done_finishes_once_with_the_result(
    stub: StubLLMServer,
) -> None:
    stub.enqueue(reply.text("hi"))
    log: list[tuple[Any, ...]] = []
    client = client_for(stub, "openai")
    client.add_interceptor(Recorder(log))
    async with aclosing(client.stream("hi")) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                break
    await client.aclose()

    assert [entry[1:] for entry in log if entry[1] == "finish"] == [("finish", "done")]


async def test_an_interceptor_error_ends_the_run_and_a_run_finished_error_is_logged(
    stub: StubLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    class Veto(Interceptor):
        async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
            raise PermissionError("no model calls today")

    class Broken(Interceptor):
        def run_finished(
            self, run: RunInfo, result: RunResult | None, error: BaseException | None
        ) -> None:
            raise RuntimeError("broken observer")

    client = client_for(stub, "openai")
    client.add_interceptor(Broken())
    client.add_interceptor(Veto())
    with caplog.at_level(logging.ERROR, logger="toolnexus"), pytest.raises(PermissionError):
        await client.run("hi")
    await client.aclose()

    assert stub.requests == []
    assert "broken observer" in caplog.text


async def test_interceptors_can_be_removed_and_must_be_interceptors(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("one"), reply.text("two"))
    log: list[tuple[Any, ...]] = []
    client = client_for(stub, "openai")
    assert client.interceptors == ()
    recorder = Recorder(log)
    client.add_interceptor(recorder)
    await client.run("hi")
    client.remove_interceptor(recorder)
    await client.run("hi")
    await client.aclose()

    assert client.interceptors == ()
    assert [entry[1] for entry in log].count("start") == 1
    with pytest.raises(ConfigError, match="Interceptor"):
        client.add_interceptor(object())  # type: ignore[arg-type]


def test_tool_results_round_trip_through_json_with_a_pending_request() -> None:
    request = Request.new("approval", "May I?", data={"amount": 3})
    for result in (ToolResult("plain"), ToolResult("boom", True, {"k": 1}), pending(request)):
        again = ToolResult.from_dict(json.loads(json.dumps(result.to_dict())))
        assert (again.output, again.is_error) == (result.output, result.is_error)
        if result.metadata and "pending" in result.metadata:
            assert again.metadata == {"pending": request.to_dict()}
        else:
            assert again.metadata == result.metadata

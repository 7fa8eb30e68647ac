"""Executing one turn's tool calls: concurrently, through the hooks, results in call order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._callbacks import snapshot
from ..dialects import ToolUse
from ..events import ToolProgressEvent
from ..metrics import Metrics
from ..suspension import Answer, Request, pending_of
from ..toolkit import Toolkit, bounded_result
from ..types import JSONObject, ProgressFn, ToolContext, ToolResult, ToolSource
from .hooks import Hooks, call_hook
from .interceptors import Interceptor, RunInfo, ToolExecution, chain
from .scope import RunScope

__all__ = ["Finished", "Outcome", "ToolRunner", "gather_in_order"]

T = TypeVar("T")


@dataclass(slots=True)
class Finished(Generic[T]):
    """The value of the work ``ToolRunner.with_progress`` ran."""

    value: T


@dataclass(slots=True)
class Outcome:
    """A call's arguments as actually used, and its result (possibly a suspension)."""

    args: JSONObject
    result: ToolResult


class ToolRunner:
    """Runs tool calls for one run: hooks, execution, metric events."""

    def __init__(
        self,
        toolkit: Toolkit | None,
        hooks: Hooks,
        metrics: Metrics,
        scope: RunScope,
        interceptors: Sequence[Interceptor] = (),
        info: RunInfo | None = None,
        *,
        quiet: bool = False,
    ) -> None:
        self._toolkit = toolkit
        self._quiet = quiet
        """No event but the last is wanted: progress reports go nowhere, and the work runs in
        the caller's task (a task and a queue less per tool turn: benchmarks/suite.py, the
        fixed scenario with Python tools)."""
        self._hooks = hooks
        self._metrics = metrics
        self._scope = scope
        self._info = info
        self._chain = chain(interceptors, "around_tool", self._innermost) if info else None
        self._executions = 0
        self._queue: asyncio.Queue[Any] | None = None
        """Progress events, and a ``_WorkDone`` when the work ``with_progress`` runs ends."""

    @property
    def _progress(self) -> asyncio.Queue[Any]:
        # Made when first needed: a run waiting on its model holds no queue (six objects
        # the collector walks per run in flight: benchmarks/suite.py, concurrency).
        if self._queue is None:
            self._queue = asyncio.Queue()
        return self._queue

    async def run_all(self, uses: Sequence[ToolUse], turn: int) -> list[Outcome]:
        """Run every call concurrently; outcomes come back in call order."""
        return await gather_in_order(
            [self.run_one(use, turn, index) for index, use in enumerate(uses)]
        )

    async def run_one(self, use: ToolUse, turn: int, index: int = 0) -> Outcome:
        """``before_tool`` → execute → ``after_tool`` (not on a suspension), metered."""
        started = time.perf_counter()
        seq = self._next_seq()
        if use.error is not None:
            result = ToolResult(use.error, is_error=True)
            await self._meter(use.name, result, started)
            return Outcome({}, result)
        args = use.args
        override = None
        if self._hooks.before_tool is not None:  # the payload's copies only when a hook sees them
            override = await call_hook(
                self._hooks.before_tool,
                {"name": use.name, "args": snapshot(args), "id": use.id, "turn": turn},
                name="before_tool",
            )
        if override and isinstance(override.get("result"), ToolResult):
            result = bounded_result(override["result"])
            await self._meter(use.name, result, started)
            return Outcome(args, result)
        if override and isinstance(override.get("args"), dict):
            args = snapshot(override["args"])
        result = await self._execute(use, args, self.context(use=use), (turn, index, 0, seq))
        if pending_of(result) is None:
            result = await self._after_tool(use, args, result, turn)
        await self._meter(use.name, result, started)
        return Outcome(args, result)

    async def run_again(
        self,
        use: ToolUse,
        args: JSONObject,
        answer: Answer,
        request: Request,
        turn: int,
        index: int = 0,
    ) -> ToolResult:
        """Execute a suspended call once more with the host's answer (no ``before_tool``)."""
        started = time.perf_counter()
        where = (turn, index, 1, self._next_seq())
        result = await self._execute(use, args, self.context(answer, use=use), where)
        if pending_of(result) is not None:
            await self._meter(use.name, result, started)
            return ToolResult(f"unresolved: {request.prompt}", is_error=True)
        result = await self._after_tool(use, args, result, turn)
        await self._meter(use.name, result, started)
        return result

    def context(self, answer: Answer | None = None, *, use: ToolUse | None = None) -> ToolContext:
        """The context of one call; its progress reports become ``ToolProgressEvent`` s."""
        progress: ProgressFn | None = None
        if use is not None:
            progress = _unheard if self._quiet else _Progress(self._progress, use.id, use.name)
        return ToolContext(
            cancel=self._scope.cancel,
            timeout=self._scope.remaining(),
            answer=answer,
            progress=progress,
        )

    async def with_progress(
        self, work: Coroutine[Any, Any, T]
    ) -> AsyncIterator[ToolProgressEvent | Finished[T]]:
        """Run ``work``, yielding the progress its calls report and finally its result."""
        if self._quiet:
            yield Finished(await work)
            return
        queue = self._progress
        end = _WorkDone()
        task = asyncio.ensure_future(work)
        # The work's end is one more item in the queue, so one ``get`` waits for either.
        task.add_done_callback(lambda _: queue.put_nowait(end))
        try:
            while (item := await queue.get()) is not end:
                if not isinstance(item, _WorkDone):  # else left by an earlier, abandoned call
                    yield item
            while not queue.empty():  # reported after the work ended
                item = queue.get_nowait()
                if not isinstance(item, _WorkDone):
                    yield item
            yield Finished(task.result())
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait([task])

    def _next_seq(self) -> int:
        """Executions are numbered in the (deterministic) order the loop starts them."""
        self._executions += 1
        return self._executions - 1

    async def _execute(
        self,
        use: ToolUse,
        args: JSONObject,
        ctx: ToolContext,
        where: tuple[int, int, int, int],
    ) -> ToolResult:
        args = snapshot(args)  # the tool's own copy: the transcript keeps what the model sent
        if self._chain is None or self._info is None:
            return await self._innermost_of(use.name, args, ctx)
        turn, index, attempt, seq = where
        execution = ToolExecution(
            self._info, use.name, args, use.id, turn, index, attempt, seq, ctx
        )
        result: ToolResult = await self._chain(execution)
        return bounded_result(result)  # an interceptor may answer without the toolkit

    async def _innermost(self, execution: ToolExecution) -> ToolResult:
        return await self._innermost_of(execution.name, execution.args, execution.context)

    async def _innermost_of(self, name: str, args: JSONObject, ctx: ToolContext) -> ToolResult:
        if self._toolkit is None:
            return ToolResult(f"Unknown tool: {name}", is_error=True)
        return await self._toolkit.execute(name, args, ctx)

    async def _after_tool(
        self, use: ToolUse, args: JSONObject, result: ToolResult, turn: int
    ) -> ToolResult:
        if self._hooks.after_tool is None:
            return result
        override = await call_hook(
            self._hooks.after_tool,
            {
                "name": use.name,
                "args": snapshot(args),
                "result": snapshot(result),
                "id": use.id,
                "turn": turn,
            },
            name="after_tool",
        )
        if override and isinstance(override.get("result"), ToolResult):
            return bounded_result(override["result"])
        return result

    async def _meter(self, name: str, result: ToolResult, started: float) -> None:
        if not self._metrics.enabled:
            return
        suspended = pending_of(result) is not None
        await self._metrics.tool(
            tool=name,
            source=self._source(name),
            is_error=result.is_error and not suspended,
            ms=(time.perf_counter() - started) * 1000.0,
            pending=suspended,
        )

    def _source(self, name: str) -> ToolSource:
        found = self._toolkit.get(name) if self._toolkit is not None else None
        return found.source if found is not None else "custom"


class _Progress:
    """A call's ``ToolContext.progress``: each report becomes a ``ToolProgressEvent``. (One
    object per call where a closure made five, for the collector to walk.)

    A sync tool reports from its worker thread, where an ``asyncio.Queue`` must not be
    touched: a report from any thread but the run's loop is handed over with
    ``call_soon_threadsafe`` (which also wakes the loop at once). A report that arrives after
    the loop has closed is dropped."""

    __slots__ = ("call_id", "loop", "name", "queue")

    def __init__(self, queue: asyncio.Queue[Any], call_id: str, name: str) -> None:
        self.queue = queue
        self.call_id = call_id
        self.name = name
        self.loop = asyncio.get_running_loop()

    def __call__(self, done: float, total: float | None, message: str | None) -> None:
        event = ToolProgressEvent(self.call_id, self.name, done, total, message)
        if _running_loop() is self.loop:
            self.queue.put_nowait(event)
            return
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)
        except RuntimeError:  # the loop has closed: nobody is left to hear it
            pass


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _unheard(done: float, total: float | None, message: str | None) -> None:
    """The progress callback of a quiet run's calls: nobody reads their reports."""


class _WorkDone:
    """Put in the progress queue when the work of one ``with_progress`` call has ended."""


async def gather_in_order(coros: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Await coroutines concurrently; results in the given order.

    The first exception cancels the others (after they are cancelled and awaited, it is
    raised as itself, not as a group); cancelling the caller cancels them all.
    """
    if len(coros) <= 1:
        return [await c for c in coros]
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = next((t for t in tasks if t in done and not t.cancelled() and t.exception()), None)
        if failed is not None:
            raise failed.exception()  # type: ignore[misc]
        return [t.result() for t in tasks]
    finally:
        pending = [t for t in tasks if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.wait(pending)
        for t in tasks:  # mark every failure as seen; only the first is raised
            if not t.cancelled():
                t.exception()

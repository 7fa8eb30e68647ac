"""One call of an A2A tool: send the task, follow it to its end, turn the end into a result.

The task is followed under the effective timeout (the agent's, capped by the run's time left)
and the run's cancel token; on either, the remote task is cancelled, best effort, waiting at
most one second. ``input-required`` becomes a suspension the host can answer; the answer goes
to the same task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from ..._json import compact_json
from ...cancel import set_on_cancel
from ...suspension import Answer, Request, pending
from ...types import JSONObject, ToolContext, ToolResult
from .wire import AgentLink, TaskView, WireError

__all__ = ["RemoteCalls"]

logger = logging.getLogger("toolnexus")

_STOPS = frozenset(
    {"completed", "failed", "canceled", "rejected", "input-required", "auth-required"}
)
_ERRORS = frozenset({"failed", "canceled", "rejected", "auth-required"})
_CANCEL_BUDGET = 1.0
_REMEMBERED_CONTEXTS = 1024


@dataclass(slots=True)
class _Progress:
    """What one call has seen so far (shared between the follower and its supervisor)."""

    task_id: str = ""
    context_id: str = ""
    state: str = ""
    polls: int = 0
    known: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the task id is known."""


class RemoteCalls:
    """The calls of one agent's tools: a task per call, followed to its end."""

    def __init__(self, link: AgentLink) -> None:
        self._link = link
        self._contexts: OrderedDict[str, str] = OrderedDict()
        """Task id -> context id of the tasks waiting for input (to answer them)."""

    async def call(self, args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        """Run one task for the model (or answer a suspended one) and return its result."""
        started = time.perf_counter()
        progress = _Progress()
        answer = ctx.answer if ctx is not None else None
        task = args.get("task") if isinstance(args, dict) else None
        if answer is None and not isinstance(task, str):
            return self._fail('invalid arguments: "task" must be a string', progress, started)
        if ctx is not None and ctx.cancel is not None and ctx.cancel.cancelled:
            return self._fail("the run was cancelled before the task was sent", progress, started)
        if answer is not None:
            progress.task_id = answer.id
            progress.known.set()
            work = self._answer(answer, progress)
        else:
            work = self._follow(progress, str(task))
        return await self._supervise(work, progress, ctx, started)

    async def _answer(self, answer: Answer, progress: _Progress) -> TaskView:
        context_id = self._contexts.pop(answer.id, "")
        if not context_id:  # answered by another process, or after a restart: ask the agent
            progress.polls += 1
            context_id = (await self._link.get(answer.id)).context_id
        return await self._follow(
            progress, _answer_text(answer), task_id=answer.id, context_id=context_id
        )

    async def _follow(
        self, progress: _Progress, text: str, *, task_id: str = "", context_id: str = ""
    ) -> TaskView:
        view = await self._link.send(text, task_id=task_id, context_id=context_id)
        _note(progress, view)
        while not view.direct and view.state not in _STOPS:
            await asyncio.sleep(self._link.spec.poll_every)
            progress.polls += 1
            view = await self._link.get(view.id)
            _note(progress, view)
        return view

    async def _supervise(
        self,
        work: Coroutine[Any, Any, TaskView],
        progress: _Progress,
        ctx: ToolContext | None,
        started: float,
    ) -> ToolResult:
        limit = self._link.spec.timeout
        if ctx is not None and ctx.timeout is not None:
            limit = max(0.0, min(limit, ctx.timeout))
        follower = asyncio.ensure_future(work)
        fired = asyncio.Event()
        unregister = set_on_cancel(ctx.cancel if ctx is not None else None, fired)
        watcher = asyncio.ensure_future(fired.wait())
        try:
            await asyncio.wait({follower, watcher}, timeout=limit, return_when="FIRST_COMPLETED")
        except asyncio.CancelledError:
            await self._stop(follower, progress)
            raise
        finally:
            unregister()
            watcher.cancel()
        if follower.done():
            return self._finish(follower, progress, started)
        seen = progress.state  # the last state seen before our own CancelTask changes it
        await self._stop(follower, progress)
        if fired.is_set():
            if progress.task_id:
                return self._result(
                    f"A2A task {progress.task_id} canceled", True, progress, started
                )
            return self._fail("canceled before the agent answered", progress, started)
        ms = round(limit * 1000)
        if progress.task_id:
            state = seen or "submitted"
            text = f"A2A task {progress.task_id} timed out after {ms}ms (state={state})"
            return self._result(text, True, progress, started)
        return self._fail(f"no answer to SendMessage within {ms}ms", progress, started)

    async def _stop(self, follower: asyncio.Future[TaskView], progress: _Progress) -> None:
        """Stop following and cancel the remote task, waiting at most one second for it.

        When the task id is not known yet (``SendMessage`` still on its way), that second is
        also spent waiting for it, so that the task the agent created can still be cancelled.
        """
        try:
            async with asyncio.timeout(_CANCEL_BUDGET):
                if not progress.task_id and not follower.done():
                    known = asyncio.ensure_future(progress.known.wait())
                    either: set[asyncio.Future[Any]] = {follower, known}
                    try:
                        await asyncio.wait(either, return_when="FIRST_COMPLETED")
                    finally:
                        known.cancel()
                follower.cancel()
                await asyncio.wait({follower})
                if progress.task_id and progress.state not in _STOPS - {"input-required"}:
                    _note(progress, await self._link.cancel(progress.task_id))
        except (TimeoutError, WireError) as exc:
            logger.info(
                'A2A agent "%s": task %s could not be cancelled: %s',
                self._link.card_name,
                progress.task_id or "(id unknown)",
                exc or "no answer within 1s",
            )
        finally:
            follower.cancel()
            await asyncio.wait({follower})

    def _finish(
        self, follower: asyncio.Future[TaskView], progress: _Progress, started: float
    ) -> ToolResult:
        try:
            view = follower.result()
        except WireError as exc:
            where = f" (task {progress.task_id})" if progress.task_id else ""
            return self._fail(f"{exc}{where}", progress, started)
        if view.direct:
            return self._result(view.status_text, False, progress, started)
        if view.state == "completed":
            texts = view.artifact_texts or [view.status_text or view.last_agent_text]
            return self._result("\n".join(texts), False, progress, started)
        if view.state == "input-required":
            return self._suspend(view, progress, started)
        detail = f": {view.status_text}" if view.status_text else ""
        return self._result(f"A2A task {view.id} {view.state}{detail}", True, progress, started)

    def _suspend(self, view: TaskView, progress: _Progress, started: float) -> ToolResult:
        self._contexts[view.id] = view.context_id
        while len(self._contexts) > _REMEMBERED_CONTEXTS:
            self._contexts.popitem(last=False)
        prompt = (
            view.status_text
            or view.last_agent_text
            or (f"The agent {self._link.card_name} needs more input")
        )
        request = Request(
            id=view.id,
            kind="input",
            prompt=prompt,
            data={"agent": self._link.card_name, "taskId": view.id, "contextId": view.context_id},
        )
        suspended = pending(request)
        suspended.metadata = {**self._metadata(progress, started), **(suspended.metadata or {})}
        return suspended

    def _fail(self, why: str, progress: _Progress, started: float) -> ToolResult:
        return self._result(f'A2A agent "{self._link.card_name}": {why}', True, progress, started)

    def _result(self, text: str, is_error: bool, progress: _Progress, started: float) -> ToolResult:
        return ToolResult(text, is_error, self._metadata(progress, started))

    def _metadata(self, progress: _Progress, started: float) -> JSONObject:
        return {
            "agent": self._link.card_name,
            "taskId": progress.task_id or None,
            "state": progress.state or None,
            "polls": progress.polls,
            "ms": (time.perf_counter() - started) * 1000.0,
        }


def _note(progress: _Progress, view: TaskView) -> None:
    if view.id:
        progress.task_id = view.id
        progress.known.set()
    if view.context_id:
        progress.context_id = view.context_id
    progress.state = view.state


def _answer_text(answer: Answer) -> str:
    data = answer.data or {}
    answers = data.get("answers")
    if isinstance(answers, list):
        return "\n".join(a if isinstance(a, str) else compact_json(a) for a in answers)
    return compact_json(data)

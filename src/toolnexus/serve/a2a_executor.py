"""The ``a2a-sdk`` ``AgentExecutor`` that runs A2A tasks through a toolnexus client.

A new task runs ``client.ask(text, toolkit, id=contextId)`` when the message carried a
``contextId`` (so every task of that context shares one conversation), else a stateless
``client.run``. A run that halts ``pending`` parks the task in ``input-required`` with the
request's prompt; the next message on that task is the answer, and the run resumes (by the
conversation id; a stateless task keeps its transcript in this process). ``CancelTask`` fires
the run's ``CancelToken``. With auth, a caller's ``contextId`` names a conversation of that
caller only (the conversation id is ``<caller>/<contextId>``), so no caller can continue
another's conversation by guessing its context.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.agent_execution.simple_request_context_builder import (
    SimpleRequestContextBuilder,
)
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part, SendMessageRequest, Task, TaskState, TaskStatus

from .._redact import redact
from ..cancel import CancelToken
from ..client import Client
from ..engine.waiting import keeps_pending, save_pending
from ..errors import ConfigError, RunCancelled
from ..messages import Message
from ..suspension import Answer, Request
from ..toolkit import Toolkit
from ..types import RunResult

__all__ = ["CALLER", "FRESH_CONTEXT", "INTERNAL", "ContextBuilder", "ToolkitExecutor"]

logger = logging.getLogger("toolnexus")

FRESH_CONTEXT = "toolnexus.fresh_context"
"""Call-context flag: the message named no ``contextId`` (the task runs statelessly)."""
CALLER = "toolnexus.caller"
"""Call-context key: the authenticated caller's identity (``None`` without auth)."""
INTERNAL = "toolnexus.internal"
"""Call-context flag: the server itself reads the store (every caller's tasks are visible)."""
_MAX_PARKED = 1000


class ContextBuilder(SimpleRequestContextBuilder):
    """Notes whether the message named a context, and gives a follow-up its task's context."""

    def __init__(self, task_context: Any) -> None:
        super().__init__()
        self._task_context = task_context

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        """The SDK's context, with the flag set and a follow-up's ``contextId`` filled in."""
        context.state[FRESH_CONTEXT] = params is not None and not params.message.context_id
        if task_id and not context_id:
            context_id = await self._task_context(task_id, context)
        return await super().build(context, params, task_id, context_id, task)


class ToolkitExecutor(AgentExecutor):
    """Runs each task's messages through ``client`` with ``toolkit``.

    ``results`` receives each task's ``RunResult`` (``None`` after an exception or a cancel)
    just before the task's final state is published, for the ``on_task`` callback.
    """

    def __init__(
        self,
        toolkit: Toolkit,
        client: Client,
        results: MutableMapping[str, RunResult | None],
        *,
        private_errors: bool = False,
    ) -> None:
        self._private_errors = private_errors
        self._toolkit = toolkit
        self._client = client
        self._results = results
        self._tokens: dict[str, CancelToken] = {}
        self._parked: dict[str, tuple[Request, list[Message]]] = {}
        """Stateless tasks waiting for input: the pending request and the run's transcript."""

    def running(self) -> list[str]:
        """Ids of the tasks whose run is under way."""
        return list(self._tokens)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run the message: a new task, or the answer to a task that waits for input."""
        task_id = str(context.task_id)
        current = context.current_task
        if current is None:
            context_id = str(context.context_id)
            await event_queue.enqueue_event(_new_task(task_id, context_id, context))
        elif current.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            # a message queued behind the task's run, which has finished meanwhile: the sender
            # gets the task as it is, and the message is not run
            logger.warning(
                "A2A task %s is %s: a message sent to it was not run",
                task_id,
                TaskState.Name(current.status.state),
            )
            return
        else:
            context_id = current.context_id
        updater = TaskUpdater(event_queue, task_id, context_id)
        conversation = _conversation(context_id, context.call_context)
        answering = current is not None
        stateless = bool(context.call_context.state.get(FRESH_CONTEXT)) and not answering
        was_parked = task_id in self._parked
        token = CancelToken()
        self._tokens[task_id] = token
        await updater.start_work()
        try:
            text = context.get_user_input()
            if answering:
                result = await self._answer(task_id, conversation, text, token)
            elif stateless:
                result = await self._client.run(text, self._toolkit, cancel=token)
            else:
                result = await self._client.ask(text, self._toolkit, id=conversation, cancel=token)
        except (RunCancelled, asyncio.CancelledError):
            if answering:
                await self._forget_pending(conversation)
            if token.cancelled:  # CancelTask: cancel() publishes the state
                return
            raise
        except Exception as exc:
            self._results[task_id] = None
            message = redact(str(exc) or type(exc).__name__)
            if self._private_errors:
                error_id = uuid.uuid4().hex[:12]
                logger.warning("A2A task %s failed (error %s): %s", task_id, error_id, message)
                message = f"the agent failed (error {error_id})"
            await updater.failed(updater.new_agent_message([Part(text=message)]))
            return
        finally:
            self._tokens.pop(task_id, None)
        await self._publish(updater, result, stateless=stateless or was_parked)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Fire the running task's token (or drop a parked one) and publish ``canceled``."""
        task_id = str(context.task_id)
        current = context.current_task
        context_id = current.context_id if current is not None else str(context.context_id)
        token = self._tokens.get(task_id)
        if token is not None:
            token.cancel()
        parked = self._parked.pop(task_id, None)
        if (
            parked is None
            and current is not None
            and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        ):
            await self._forget_pending(_conversation(context_id, context.call_context))
        self._results[task_id] = None
        await TaskUpdater(event_queue, task_id, context_id).cancel()

    async def _answer(
        self, task_id: str, context_id: str, text: str, token: CancelToken
    ) -> RunResult:
        parked = self._parked.pop(task_id, None)
        if parked is not None:
            request, history = parked
            return await self._client.run_with_answer(
                request, _answer(request, text), self._toolkit, history=history, cancel=token
            )
        waiting = await self._client.pending(context_id)
        if waiting is None:
            raise ConfigError(
                f"task {task_id} waits for input, but its run can no longer be resumed "
                f"(conversation {context_id!r} waits for nothing)"
            )
        return await self._client.resume(
            context_id, _answer(waiting, text), self._toolkit, cancel=token
        )

    async def _publish(self, updater: TaskUpdater, result: RunResult, *, stateless: bool) -> None:
        task_id = updater.task_id
        self._results[task_id] = result
        if result.status == "pending" and result.pending is not None:
            request = result.pending
            if stateless:
                self._park(task_id, request, result.messages)
            prompt = request.prompt + (f"\n{request.url}" if request.url else "")
            await updater.requires_input(updater.new_agent_message([Part(text=prompt)]))
        elif result.status == "done":
            await updater.add_artifact([Part(text=result.text)])
            await updater.complete()
        else:
            why = f"the run stopped before an answer ({result.limit or result.status})"
            await updater.failed(updater.new_agent_message([Part(text=why)]))

    def _park(self, task_id: str, request: Request, messages: list[Message]) -> None:
        if len(self._parked) >= _MAX_PARKED:  # the oldest stateless wait is given up
            oldest = next(iter(self._parked))
            logger.warning(
                "A2A task %s: too many tasks wait for input; it can no longer resume", oldest
            )
            del self._parked[oldest]
        self._parked[task_id] = (request, messages)

    async def _forget_pending(self, context_id: str) -> None:
        """The conversation no longer waits for the cancelled task's answer."""
        store = self._client.conversation_store
        if keeps_pending(store):
            try:
                await save_pending(store, context_id, None)
            except Exception:
                logger.warning("could not clear the pending request of a cancelled A2A task")


def _conversation(context_id: str, call: ServerCallContext | None) -> str:
    """The conversation id of a context: the caller's own when there is a caller."""
    caller = call.state.get(CALLER) if call is not None else None
    return f"{caller}/{context_id}" if isinstance(caller, str) else context_id


def _answer(request: Request, text: str) -> Answer:
    return Answer(id=request.id, ok=True, data={"answers": [text]})


def _new_task(task_id: str, context_id: str, context: RequestContext) -> Task:
    status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
    status.timestamp.FromDatetime(datetime.now(UTC))
    history = [context.message] if context.message is not None else []
    return Task(id=task_id, context_id=context_id, status=status, history=history)

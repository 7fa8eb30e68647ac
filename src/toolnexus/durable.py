"""Durable agent runs on DBOS: a run that survives the death of its process.

``DBOSAgent(client, toolkit=None, *, name)`` registers a DBOS workflow named after ``name``;
create it before ``DBOS.launch()``, with the same ``name`` in every process that may recover
its runs. ``await agent.run(prompt, ...)`` runs the client's loop as that workflow, and every
model call and every tool execution of the run becomes a DBOS step (through an ``Interceptor``
the agent installs on the client). When the process dies mid-run, the next process that creates
the same agent and launches DBOS resumes the workflow: the steps that completed hand back their
recorded values, so a finished tool call is not executed again and a finished model call is not
sent again; ``DBOS.retrieve_workflow(workflow_id).get_result()`` gives the run's
``RunResult.to_dict()`` (``result_from_dict`` turns it back into a ``RunResult``).

A run that halts on a suspension (no ``wait_for``) finishes its workflow with status
``"pending"``; it is resumed through the client's ``resume``/``run_with_answer``. To wait
durably instead, give the client ``wait_for=wait_for_answer()``: the workflow then sleeps in
``DBOS.recv`` until the host, having read the request with ``waiting_for(workflow_id)``, calls
``send_answer(workflow_id, answer)``, and that wait survives
a restart like any other step. Streaming runs (``client.stream``) stay outside DBOS.

DBOS is imported here only, when an agent is created.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .engine.interceptors import CallModel, ExecuteTool, Interceptor, ModelCall, ToolExecution
from .errors import ConfigError
from .messages import Message
from .suspension import Answer, Request
from .types import JSONObject, RunResult, ToolCall, ToolResult, Usage

if TYPE_CHECKING:
    from .client import Client
    from .toolkit import Toolkit

__all__ = [
    "PENDING_EVENT",
    "DBOSAgent",
    "result_from_dict",
    "send_answer",
    "wait_for_answer",
    "waiting_for",
]

PENDING_EVENT = "toolnexus.pending"
"""The DBOS event a run waiting in ``wait_for_answer`` publishes its request under."""

_inside: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "toolnexus_durable_agent", default=None
)
"""The agent whose workflow body is running in this context (steps apply only there)."""


def _dbos() -> Any:
    try:
        import dbos
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "durable runs need the 'dbos' package: pip install 'toolnexus[dbos]'"
        ) from exc
    return dbos


class _Steps(Interceptor):
    """Turns each model call and tool execution of the agent's workflow into a DBOS step."""

    def __init__(self, owner: object, name: str) -> None:
        self._owner = owner
        self._name = name

    async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
        if _inside.get() is not self._owner:
            return await call_next(call)
        reply: JSONObject = await _dbos().DBOS.run_step_async(
            {"name": f"{self._name}:{call.key}"}, call_next, call
        )
        return reply

    async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
        if _inside.get() is not self._owner:
            return await call_next(call)

        async def execute() -> JSONObject:
            return (await call_next(call)).to_dict()

        data = await _dbos().DBOS.run_step_async(
            {"name": f"{self._name}:{call.key}:{call.name}"}, execute
        )
        return ToolResult.from_dict(data)


class DBOSAgent:
    """A client (and toolkit) whose runs are DBOS workflows with one step per model call and
    per tool execution. Create it before ``DBOS.launch()``."""

    def __init__(self, client: Client, toolkit: Toolkit | None = None, *, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("DBOSAgent needs a non-empty name (it names the DBOS workflow)")
        DBOS = _dbos().DBOS
        self.client = client
        self.toolkit = toolkit
        self.name = name
        client.add_interceptor(_Steps(self, name))

        async def body(
            prompt: str, conversation_id: str | None, history: list[Message] | None
        ) -> JSONObject:
            return await self._body(prompt, conversation_id, history)

        body.__qualname__ = body.__name__ = f"toolnexus_agent_{name}"
        self.workflow: Callable[..., Awaitable[JSONObject]] = DBOS.workflow(
            name=f"toolnexus.agent.{name}"
        )(body)
        """The registered workflow: ``(prompt, conversation_id, history) -> result dict``; give
        it to ``Queue.enqueue_async`` to run it on whichever worker takes it."""

    async def _body(
        self, prompt: str, conversation_id: str | None, history: list[Message] | None
    ) -> JSONObject:
        token = _inside.set(self)
        try:
            if history is None and conversation_id is not None:
                history = await self._load(conversation_id)
            result = await self.client.run(
                prompt, self.toolkit, history=history, conversation_id=conversation_id
            )
        finally:
            _inside.reset(token)
        return result.to_dict()

    async def _load(self, conversation_id: str) -> list[Message] | None:
        """The stored transcript, read once as a step so a replay starts from the same one."""
        store = self.client.conversation_store

        async def load() -> list[Message] | None:
            return await store.get(conversation_id)

        loaded: list[Message] | None = await _dbos().DBOS.run_step_async(
            {"name": f"{self.name}:history"}, load
        )
        return loaded

    async def run(
        self,
        prompt: str,
        *,
        workflow_id: str | None = None,
        conversation_id: str | None = None,
        history: list[Message] | None = None,
    ) -> RunResult:
        """Run ``prompt`` as this agent's workflow (``workflow_id`` names it, else DBOS does).

        Running an id that already finished returns its recorded result without new work.
        """
        dbos = _dbos()
        if workflow_id is None:
            data = await self.workflow(prompt, conversation_id, history)
        else:
            with dbos.SetWorkflowID(workflow_id):
                data = await self.workflow(prompt, conversation_id, history)
        return result_from_dict(data)

    async def enqueue(
        self,
        queue: Any,
        prompt: str,
        *,
        workflow_id: str | None = None,
        conversation_id: str | None = None,
        history: list[JSONObject] | None = None,
    ) -> Any:
        """Put a run on a DBOS ``Queue``; returns the workflow handle (``get_result()`` gives
        the result dict). Any process that declared the queue and launched DBOS may run it."""
        dbos = _dbos()
        if workflow_id is None:
            return await queue.enqueue_async(self.workflow, prompt, conversation_id, history)
        with dbos.SetWorkflowID(workflow_id):
            return await queue.enqueue_async(self.workflow, prompt, conversation_id, history)


def result_from_dict(data: JSONObject | RunResult) -> RunResult:
    """A ``RunResult`` from its ``to_dict()`` form (a ``RunResult`` is returned as it is)."""
    if isinstance(data, RunResult):
        return data
    usage = data.get("usage") or {}
    pending = data.get("pending")
    return RunResult(
        text=data["text"],
        messages=list(data["messages"]),
        tool_calls=[
            ToolCall(
                id=call["id"],
                name=call["name"],
                args=call["args"],
                output=call["output"],
                is_error=call["isError"],
                metadata=call.get("metadata"),
            )
            for call in data["toolCalls"]
        ],
        tool_call_count=data["toolCallCount"],
        turns=data["turns"],
        usage=Usage(
            usage.get("promptTokens", 0),
            usage.get("completionTokens", 0),
            usage.get("totalTokens", 0),
        ),
        model=data["model"],
        status=data["status"],
        limit=data.get("limit"),
        pending=Request.from_dict(pending) if pending is not None else None,
        stop_reason=data.get("stopReason"),
    )


def wait_for_answer(
    timeout_seconds: float = 24 * 3600,
) -> Callable[[Request], Awaitable[Answer | None]]:
    """A client ``wait_for`` that waits durably for the host's ``send_answer`` inside a
    workflow (a restart keeps waiting); no answer within ``timeout_seconds`` declines."""

    async def wait_for(request: Request) -> Answer | None:
        DBOS = _dbos().DBOS
        await DBOS.set_event_async(PENDING_EVENT, request.to_dict())
        data = await DBOS.recv_async(topic=request.id, timeout_seconds=timeout_seconds)
        return Answer.from_dict(data) if data is not None else None

    return wait_for


async def waiting_for(workflow_id: str, timeout_seconds: float = 60) -> Request | None:
    """The request the durable run ``workflow_id`` last waited on in ``wait_for_answer``
    (``None`` when it has not waited within ``timeout_seconds``)."""
    data = await _dbos().DBOS.get_event_async(workflow_id, PENDING_EVENT, timeout_seconds)
    return Request.from_dict(data) if data is not None else None


async def send_answer(workflow_id: str, answer: Answer) -> None:
    """Deliver ``answer`` to the durable run ``workflow_id`` waiting in ``wait_for_answer``."""
    await _dbos().DBOS.send_async(workflow_id, answer.to_dict(), topic=answer.id)

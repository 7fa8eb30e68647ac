"""A toolkit as an Agent2Agent (A2A 1.0) agent, on ``a2a-sdk``'s own server classes.

``a2a_routes`` builds the agent card (from the toolkit's skills), the SDK's request handler
around ``ToolkitExecutor``, and a Starlette app answering ``GET
/.well-known/agent-card.json`` and JSON-RPC at ``POST /``. The SDK speaks the wire
(``A2A-Version`` checks, ``SendMessage``/``GetTask``/``CancelTask``/``ListTasks``, JSON-RPC
errors); tasks are kept through ``ObservedStore``, which also reports final states to
``on_task``. Only this module and ``a2a_executor`` import ``a2a``, and only when A2A is served.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf.json_format import MessageToDict, ParseDict
from starlette.applications import Starlette

from .._callbacks import call_quietly, maybe_await
from .._json import JSONDepthError, compact_json, loads
from .._redact import redact
from ..types import JSONObject, RunResult
from .a2a_executor import ContextBuilder, ToolkitExecutor
from .a2a_profile import A2aProfile
from .a2a_store import open_task_store
from .http import _TOO_LARGE, LOOPBACK_HOSTS, Route, _read_body, _respond, loopback_only

if TYPE_CHECKING:
    from ..client import Client
    from ..toolkit import Toolkit

logger = logging.getLogger("toolnexus")
_UNDER_WAY = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)

__all__ = [
    "DEFAULT_DESCRIPTION",
    "FALLBACK_SKILL",
    "STOPPED",
    "ObservedStore",
    "OnTask",
    "a2a_routes",
    "build_card",
    "state_name",
]

DEFAULT_DESCRIPTION = "An agent with tools: send it a task in plain text."
"""The card's description when the profile gives none."""
STOPPED = "the agent stopped before the task finished"
"""The status message of a task whose run was under way when the server stopped."""
FALLBACK_SKILL = "ask"
"""The one skill of a card whose toolkit has no skill to list: the agent as a whole."""

OnTask = Callable[[JSONObject], Any]
"""Called with ``{"id", "task", "result", "state"}`` when a task reaches a reported state."""


def state_name(state: int) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` → ``"input-required"`` (the library's vocabulary)."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def build_card(toolkit: Toolkit, profile: A2aProfile, base_url: str) -> AgentCard:
    """The 1.0 agent card: the profile's fields and the toolkit's skills, in toolkit order.

    The protocol wants a description and at least one skill: an empty description becomes
    ``DEFAULT_DESCRIPTION``, and a card with no skill to list gets the single skill
    ``FALLBACK_SKILL`` (the agent as a whole).
    """
    description = redact(profile.description) or DEFAULT_DESCRIPTION
    skills = [
        AgentSkill(id=s.name, name=s.name, description=redact(s.description or ""), tags=[s.name])
        for s in toolkit.skills()
        if profile.skills is None or s.name in profile.skills
    ] or [
        AgentSkill(
            id=FALLBACK_SKILL, name=FALLBACK_SKILL, description=description, tags=[FALLBACK_SKILL]
        )
    ]
    card = AgentCard(
        name=profile.name,
        description=description,
        version=profile.version,
        supported_interfaces=[
            AgentInterface(
                url=profile.url or f"{base_url}/",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=profile.streaming, push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=skills,
    )
    if profile.provider is not None:
        card.provider.CopyFrom(AgentProvider(**profile.provider))
    return card


def a2a_routes(
    toolkit: Toolkit,
    client: Client,
    profile: A2aProfile,
    on_task: OnTask | None,
    base_url: str,
    host: str,
) -> list[Route]:
    """``/.well-known/agent-card.json`` and ``/``, served by one SDK-built Starlette app.

    Bound to a loopback ``host``, the app answers only loopback ``Host`` and ``Origin`` values
    and the host of the profile's ``url`` (a web page cannot reach the agent through DNS
    rebinding or a cross-site form post).
    """
    card = build_card(toolkit, profile, base_url)
    results: dict[str, RunResult | None] = {}
    store = ObservedStore(open_task_store(profile.store), on_task, results)
    executor = ToolkitExecutor(toolkit, client, results)
    handler = DefaultRequestHandler(
        agent_executor=executor,
        task_store=store,
        agent_card=card,
        request_context_builder=ContextBuilder(store.context_of),
    )
    app: Any = Starlette(
        routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
    )
    app = depth_guarded(app)
    if host in LOOPBACK_HOSTS:
        public = urlsplit(profile.url).hostname if profile.url else None
        app = loopback_only(app, frozenset({public}) if public else frozenset())

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        try:
            yield
        finally:
            unfinished = executor.running()
            await handler.aclose()
            await store.abandon(unfinished)

    return [Route(AGENT_CARD_WELL_KNOWN_PATH, app), Route("/", app, running)]


MAX_JSON_DEPTH = 100
"""Nesting a JSON-RPC request may have; deeper is a parse error (-32700), as with MCP."""


def depth_guarded(app: Any) -> Any:
    """``app`` behind a check of each POST body's nesting: JSON deeper than ``MAX_JSON_DEPTH``
    (which would exhaust the SDK's recursion and come back as an internal error, -32603) is
    answered as the parse error it is (-32700). Other bodies reach ``app`` unchanged."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        body = await _read_body(receive)
        if body is None:  # the client left
            return
        if body is _TOO_LARGE:
            await _respond(send, 413, b"Request body too large")
            return
        try:
            loads(body, max_depth=MAX_JSON_DEPTH)
        except JSONDepthError:
            error = {
                "code": -32700,
                "message": f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels",
            }
            answer = compact_json({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            await _respond(send, 200, answer, b"application/json")
            return
        except ValueError:  # not JSON at all: the SDK answers that itself
            pass
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, send)

    return guarded


class ObservedStore(TaskStore):
    """The SDK's ``TaskStore`` over a dict store (or an SDK store), reporting final states.

    A save that moves a task into ``completed``, ``failed``, ``canceled``, ``rejected`` or
    ``input-required`` calls ``on_task`` once the save is done, with the run's result.
    """

    def __init__(
        self,
        inner: object,
        on_task: OnTask | None,
        results: MutableMapping[str, RunResult | None],
    ) -> None:
        self._sdk: TaskStore | None = inner if isinstance(inner, TaskStore) else None
        self._inner: Any = inner
        self._on_task = on_task
        self._results = results

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The stored task, as the SDK's ``Task``."""
        if self._sdk is not None:
            return await self._sdk.get(task_id, context)
        found = await maybe_await(self._inner.get, task_id)
        return _task_of(found) if found is not None else None

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Store the task; report it when this save moved it into a reported state."""
        reported = task.status.state in (
            TaskState.TASK_STATE_COMPLETED,
            TaskState.TASK_STATE_FAILED,
            TaskState.TASK_STATE_CANCELED,
            TaskState.TASK_STATE_REJECTED,
            TaskState.TASK_STATE_INPUT_REQUIRED,
        )
        before = await self.get(task.id, context) if reported else None
        if self._sdk is not None:
            await self._sdk.save(task, context)
        else:
            await maybe_await(self._inner.save, _dict_of(task))
        if reported and (before is None or before.status.state != task.status.state):
            result = self._results.pop(task.id, None)
            info: JSONObject = {
                "id": task.id,
                "task": _dict_of(task),
                "result": result,
                "state": state_name(task.status.state),
            }
            await call_quietly(self._on_task, info, what="on_task")

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """``ListTasks``: the SDK's own paging over every stored task."""
        if self._sdk is not None:
            return await self._sdk.list(params, context)
        every = getattr(self._inner, "all", None)
        if every is None:
            raise UnsupportedOperationError(message="this agent's task store cannot list tasks")
        page = InMemoryTaskStore()
        for found in await maybe_await(every):
            await page.save(_task_of(found), context)
        return await page.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Delete where the store can (the built-in stores keep every task)."""
        if self._sdk is not None:
            await self._sdk.delete(task_id, context)
            return
        remove = getattr(self._inner, "delete", None)
        if remove is not None:
            await maybe_await(remove, task_id)

    async def abandon(self, task_ids: Sequence[str]) -> None:
        """Mark tasks whose run the server stopped as ``failed`` (none stays ``working``)."""
        context = ServerCallContext()
        for task_id in task_ids:
            try:
                task = await self.get(task_id, context)
                if task is None or task.status.state not in _UNDER_WAY:
                    continue
                stopped = Task()
                stopped.CopyFrom(task)
                stopped.status.CopyFrom(
                    TaskStatus(
                        state=TaskState.TASK_STATE_FAILED,
                        message=Message(
                            role=Role.ROLE_AGENT,
                            message_id=str(uuid.uuid4()),
                            task_id=task.id,
                            context_id=task.context_id,
                            parts=[Part(text=STOPPED)],
                        ),
                    )
                )
                stopped.status.timestamp.GetCurrentTime()
                await self.save(stopped, context)
            except Exception:
                logger.warning("A2A task %s: could not record that the server stopped it", task_id)

    async def context_of(self, task_id: str, context: ServerCallContext) -> str | None:
        """The ``contextId`` of a stored task (``None`` when there is no such task)."""
        found = await self.get(task_id, context)
        return found.context_id if found is not None and found.context_id else None


def _dict_of(task: Task) -> JSONObject:
    return MessageToDict(task)


def _task_of(data: JSONObject) -> Task:
    return ParseDict(data, Task(), ignore_unknown_fields=True)

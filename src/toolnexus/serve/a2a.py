"""A toolkit as an Agent2Agent (A2A 1.0) agent, on ``a2a-sdk``'s own server classes.

``a2a_routes`` builds the agent card (from the toolkit's skills), the SDK's request handler
around ``ToolkitExecutor``, and a Starlette app answering ``GET
/.well-known/agent-card.json`` and JSON-RPC at ``POST /``. The SDK speaks the wire
(``A2A-Version`` checks, ``SendMessage``/``GetTask``/``CancelTask``/``ListTasks``, JSON-RPC
errors); tasks are kept through ``ObservedStore``, which also reports final states to
``on_task``. With auth, every task belongs to its caller (the identity the listener's gate
put in the request): it is recorded beside the task in the store, and another caller's task
is "not found" (``-32001``) whether it is read, listed, cancelled or continued. Only this
module and ``a2a_executor`` import ``a2a``, and only when A2A is served.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf.json_format import MessageToDict, ParseDict
from starlette.applications import Starlette
from starlette.requests import Request

from .._callbacks import call_quietly, maybe_await
from .._redact import redact
from ..types import JSONObject, RunResult
from .a2a_executor import CALLER, INTERNAL, ContextBuilder, ToolkitExecutor
from .a2a_front import jsonrpc_front
from .a2a_profile import A2aProfile
from .a2a_store import TaskBounds, open_task_store
from .http import CALLER_KEY, Route

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

BEARER_SCHEME = "bearer"
"""Name of the security scheme the card declares (and requires) when the agent has auth."""
OWNER = "owner"
"""Key beside a stored task's fields holding its caller's identity (never a raw token)."""

OnTask = Callable[[JSONObject], Any]
"""Called with ``{"id", "task", "result", "state"}`` when a task reaches a reported state."""


def state_name(state: int) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` → ``"input-required"`` (the library's vocabulary)."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def build_card(
    toolkit: Toolkit, profile: A2aProfile, base_url: str, *, bearer: bool = False
) -> AgentCard:
    """The 1.0 agent card: the profile's fields and the toolkit's skills, in toolkit order.

    With ``bearer`` the card declares the bearer scheme and requires it, so ``a2a-sdk``'s
    clients send their token (they attach credentials only for required schemes).

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
    if bearer:
        card.security_schemes[BEARER_SCHEME].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", description="Authorization: Bearer <token>"
                )
            )
        )
        card.security_requirements.append(
            SecurityRequirement(schemes={BEARER_SCHEME: StringList()})
        )
    return card


def a2a_routes(
    toolkit: Toolkit,
    client: Client,
    profile: A2aProfile,
    on_task: OnTask | None,
    base_url: str,
    *,
    owned: bool = False,
    bounds: TaskBounds | None = None,
    private_errors: bool = False,
) -> list[Route]:
    """``/.well-known/agent-card.json`` (public) and ``/``, served by one SDK-built app.

    ``owned`` (the server has auth): the card requires the bearer scheme and each task
    belongs to its caller. ``bounds`` limit the memory task store. ``private_errors``: a
    failed run reaches the caller as ``"the agent failed (error <id>)"``, the detail logged.
    """
    card = build_card(toolkit, profile, base_url, bearer=owned)
    results: dict[str, RunResult | None] = {}
    store = ObservedStore(open_task_store(profile.store, bounds), on_task, results, owned=owned)
    executor = ToolkitExecutor(toolkit, client, results, private_errors=private_errors)
    handler = DefaultRequestHandler(
        agent_executor=executor,
        task_store=store,
        agent_card=card,
        request_context_builder=ContextBuilder(store.context_of),
    )
    app: Any = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/", context_builder=CallerContextBuilder()),
        ]
    )

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        try:
            yield
        finally:
            unfinished = executor.running()
            await handler.aclose()
            await store.abandon(unfinished)

    return [
        Route(AGENT_CARD_WELL_KNOWN_PATH, app, public=True),
        Route("/", jsonrpc_front(app, dict(TaskState.items())), running),
    ]


class _Caller(User):
    """The authenticated caller, as ``a2a-sdk`` sees it (an SDK task store scopes by it)."""

    def __init__(self, identity: str) -> None:
        self._identity = identity

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._identity


class CallerContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, carrying the caller the listener's gate authenticated."""

    def build(self, request: Request) -> ServerCallContext:
        """The default context, with ``state[CALLER]`` and ``user`` set from the request."""
        context = super().build(request)
        caller = request.scope.get(CALLER_KEY)
        headers = context.state.get("headers")
        if isinstance(headers, dict):  # the bearer token stays out of task contexts
            headers.pop("authorization", None)
        context.state[CALLER] = caller
        if isinstance(caller, str):
            context.user = _Caller(caller)
        return context


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
        *,
        owned: bool = False,
    ) -> None:
        self._sdk: TaskStore | None = inner if isinstance(inner, TaskStore) else None
        self._inner: Any = inner
        self._on_task = on_task
        self._results = results
        self._owned = owned

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The stored task, as the SDK's ``Task`` (``None`` when it is another caller's)."""
        if self._sdk is not None:
            return await self._sdk.get(task_id, context)
        found = await self._stored(task_id)
        if found is None or not self._visible(found, context):
            return None
        return _task_of(found)

    async def _stored(self, task_id: str) -> JSONObject | None:
        found = await maybe_await(self._inner.get, task_id)
        return found if isinstance(found, dict) else None

    def _visible(self, stored: JSONObject, context: ServerCallContext) -> bool:
        if not self._owned or context.state.get(INTERNAL):
            return True
        caller = context.state.get(CALLER)
        return isinstance(caller, str) and stored.get(OWNER) == caller

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
            saved = _dict_of(task)
            if self._owned:
                stored = await self._stored(task.id)
                owner = stored.get(OWNER) if stored is not None else context.state.get(CALLER)
                if isinstance(owner, str):
                    saved[OWNER] = owner
            await maybe_await(self._inner.save, saved)
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
            if self._visible(found, context):
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
        context = ServerCallContext(state={INTERNAL: True})
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

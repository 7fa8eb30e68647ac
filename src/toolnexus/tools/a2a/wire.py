"""The A2A wire, through ``a2a-sdk``: card resolution, ``SendMessage``, ``GetTask``, ``CancelTask``.

The only module that imports the SDK (inside functions, so importing toolnexus never loads it).
What it hands back is plain data (``TaskView``), so the rest of the package knows nothing of
protobuf messages. Every SDK failure is translated here into ``WireError``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..._env import expand_headers, unset_variables
from ...errors import ConfigError
from .config import RemoteAgent

logger = logging.getLogger("toolnexus")

if TYPE_CHECKING:
    import httpx
    from a2a.client import Client
    from a2a.types import Message, Task

__all__ = ["AgentLink", "AgentSkillInfo", "TaskView", "WireError", "open_link", "state_name"]

PROTOCOL_VERSION = "1.0"
_JSONRPC = "JSONRPC"


class WireError(Exception):
    """A call to the agent failed (transport, JSON-RPC error, or an answer that makes no sense)."""


@dataclass(frozen=True, slots=True)
class AgentSkillInfo:
    """One skill of the card."""

    id: str
    name: str
    description: str


@dataclass(slots=True)
class TaskView:
    """What the library needs of a task (or of a direct message answer)."""

    id: str
    context_id: str
    state: str
    """In the library's vocabulary: ``working``, ``completed``, ``input-required``, ..."""
    status_text: str = ""
    """The text parts of the status message, joined with ``"\\n"``."""
    artifact_texts: list[str] = field(default_factory=list)
    """The text parts of every artifact, in order."""
    last_agent_text: str = ""
    """The text of the last agent message in the history."""
    direct: bool = False
    """The agent answered with a message instead of a task (``status_text`` is its text)."""


def state_name(wire_state: str) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``."""
    return wire_state.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _sdk() -> Any:
    try:
        import a2a.client
    except ImportError:
        raise ConfigError(
            "A2A agents need the a2a-sdk package: pip install 'toolnexus[a2a]'"
        ) from None
    return a2a.client


class AgentLink:
    """One resolved agent: its card, the SDK client and the HTTP client behind it."""

    def __init__(
        self, spec: RemoteAgent, http: httpx.AsyncClient, client: Client, card_name: str
    ) -> None:
        self.spec = spec
        self.card_name = card_name
        self.skills: list[AgentSkillInfo] = []
        self._http = http
        self._client = client

    async def send(self, text: str, *, task_id: str = "", context_id: str = "") -> TaskView:
        """``SendMessage`` (``returnImmediately``): the new or continued task, or the reply."""
        from a2a.types import (
            Message,
            Part,
            Role,
            SendMessageConfiguration,
            SendMessageRequest,
        )

        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(text=text)],
            task_id=task_id,
            context_id=context_id,
        )
        request = SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=True)
        )
        view: TaskView | None = None
        try:
            async for event in self._client.send_message(request):
                if event.HasField("task"):
                    view = _task_view(event.task)
                elif event.HasField("message"):
                    view = _message_view(event.message)
                if view is not None:
                    break
        except (WireError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise WireError(f"SendMessage failed: {_describe(exc)}") from None
        if view is None:
            raise WireError("SendMessage returned neither a task nor a message")
        if not view.direct and not view.id:
            raise WireError("SendMessage returned a task without an id")
        return view

    async def get(self, task_id: str) -> TaskView:
        """``GetTask {id}``."""
        from a2a.types import GetTaskRequest

        try:
            task = await self._client.get_task(GetTaskRequest(id=task_id))
            view = _task_view(task)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise WireError(f"GetTask failed: {_describe(exc)}") from None
        if view.id and view.id != task_id:
            raise WireError(f"GetTask {task_id} returned task {view.id}")
        view.id = task_id
        return view

    async def cancel(self, task_id: str) -> TaskView:
        """``CancelTask {id}``: the task as the agent reports it afterwards."""
        from a2a.types import CancelTaskRequest

        try:
            view = _task_view(await self._client.cancel_task(CancelTaskRequest(id=task_id)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise WireError(f"CancelTask failed: {_describe(exc)}") from None
        view.id = task_id
        return view

    async def close(self) -> None:
        """Close the SDK client and the HTTP client."""
        try:
            await self._client.close()
        finally:
            await self._http.aclose()


async def open_link(spec: RemoteAgent) -> AgentLink:
    """Fetch and read the agent card (bounded by ``spec.timeout``) and make a client for it.

    Raises ``WireError`` when the card cannot be fetched or is not a usable A2A 1.0 card, and
    ``ConfigError`` when the SDK is not installed.
    """
    sdk = _sdk()
    import httpx
    from a2a.types import AgentCard

    for header, raw in spec.headers.items():
        for name in unset_variables([raw]):
            logger.warning(
                'A2A agent "%s": header %s uses ${%s}, which is not set; it is sent as an '
                "empty string",
                spec.label,
                header,
                name,
            )
    headers = expand_headers(spec.headers)
    headers.setdefault("A2A-Version", PROTOCOL_VERSION)
    http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(spec.timeout))
    try:
        parts = urlsplit(spec.card_url)
        base = f"{parts.scheme}://{parts.netloc}"
        resolver = sdk.A2ACardResolver(http, base, agent_card_path=spec.card_url[len(base) :])
        try:
            async with asyncio.timeout(spec.timeout):
                card: AgentCard = await resolver.get_agent_card()
        except TimeoutError:
            raise WireError(
                f"the card did not arrive within {round(spec.timeout * 1000)}ms"
            ) from None
        except Exception as exc:
            raise WireError(f"the card could not be read: {_describe(exc)}") from None
        if not card.name:
            raise WireError("the card has no name")
        if not any(i.protocol_binding == _JSONRPC and i.url for i in card.supported_interfaces):
            raise WireError("the card lists no JSONRPC interface in supportedInterfaces")
        config = sdk.ClientConfig(
            streaming=False, polling=True, httpx_client=http, supported_protocol_bindings=[_JSONRPC]
        )
        try:
            client = sdk.ClientFactory(config).create(card)
        except Exception as exc:
            raise WireError(f"no client for the card: {_describe(exc)}") from None
        link = AgentLink(spec, http, client, card.name)
        link.skills = [
            AgentSkillInfo(s.id, s.name, s.description) for s in card.skills if s.id or s.name
        ]
        return link
    except BaseException:
        await http.aclose()
        raise


def _task_view(task: Task) -> TaskView:
    from a2a.types import Role, TaskState

    state = state_name(TaskState.Name(task.status.state))
    agent_texts = [_text(m) for m in task.history if m.role == Role.ROLE_AGENT]
    agent_texts = [t for t in agent_texts if t]
    return TaskView(
        id=task.id,
        context_id=task.context_id,
        state=state,
        status_text=_text(task.status.message) if task.status.HasField("message") else "",
        artifact_texts=[p.text for a in task.artifacts for p in a.parts if p.HasField("text")],
        last_agent_text=agent_texts[-1] if agent_texts else "",
    )


def _message_view(message: Message) -> TaskView:
    return TaskView(
        id=message.task_id,
        context_id=message.context_id,
        state="completed",
        status_text=_text(message),
        direct=True,
    )


def _text(message: Message) -> str:
    return "\n".join(p.text for p in message.parts if p.HasField("text"))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

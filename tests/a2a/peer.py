"""A remote agent built only from ``a2a-sdk``'s own server classes, served on 127.0.0.1.

Its request handler, task store, card routes and JSON-RPC routes are the SDK's; only the agent
executor is ours, and it acts on the words of the task it receives:

- ``fail``, ``reject``, ``give up`` (the agent cancels its own task), ``need auth``: that state,
  with a status message;
- ``ask``: ``input-required`` with the prompt ``Which colour?``; the answer completes the same
  task with ``painted <answer>``;
- ``hang``: works until cancelled (or until the peer stops);
- ``later``: works until the test releases it, then completes with ``done: <text>``;
- ``reply``: answers with a direct message instead of a task;
- ``quiet``: completes with only a status message, no artifact;
- anything else: completes with two artifacts, ``echo: <text>`` and ``bytes: <n>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
)
from starlette.applications import Starlette

CARD_PATH = "/.well-known/agent-card.json"


@dataclass
class Seen:
    """What the peer saw: messages (task id, context id, text), cancels, request headers and
    the JSON body of every request."""

    messages: list[tuple[str, str, str]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a message has arrived."""
    cancelled: list[str] = field(default_factory=list)
    cancel_seen: asyncio.Event = field(default_factory=asyncio.Event)
    headers: list[dict[str, str]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    """JSON-RPC requests in arrival order (method, params, ...)."""
    polled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a ``GetTask`` request has arrived."""
    release: asyncio.Event = field(default_factory=asyncio.Event)


class ScriptedExecutor(AgentExecutor):
    """The agent's logic: one behaviour per keyword of the task text."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task_id, context_id = context.task_id or "", context.context_id or ""
        self.seen.messages.append((task_id, context_id, text))
        self.seen.arrived.set()
        if text.startswith("reply"):
            await event_queue.enqueue_event(
                Message(
                    role=Role.ROLE_AGENT,
                    message_id=f"m-{task_id}",
                    context_id=context_id,
                    parts=[Part(text="a direct answer")],
                )
            )
            return
        updater = TaskUpdater(event_queue, task_id, context_id)
        answering = context.current_task is not None
        if not answering:
            assert context.message is not None
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await updater.start_work()

        def say(words: str) -> Message:
            return updater.new_agent_message([Part(text=words)])

        if answering:
            await updater.add_artifact([Part(text=f"painted {text}")])
            await updater.complete()
        elif text.startswith("ask"):
            await updater.requires_input(say("Which colour?"))
        elif text.startswith("fail"):
            await updater.failed(say("the oven broke"))
        elif text.startswith("reject"):
            await updater.reject(say("not my kind of work"))
        elif text.startswith("give up"):
            await updater.cancel(say("stopped by the agent"))
        elif text.startswith("need auth"):
            await updater.requires_auth(say("sign in first"))
        elif text.startswith("hang"):
            await self.seen.release.wait()
        elif text.startswith("later"):
            await self.seen.release.wait()
            await updater.add_artifact([Part(text=f"done: {text}")])
            await updater.complete()
        elif text.startswith("quiet"):
            await updater.complete(say("all done, nothing to show"))
        else:
            await updater.add_artifact([Part(text=f"echo: {text}")])
            await updater.add_artifact([Part(text=f"bytes: {len(text)}")])
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.seen.cancelled.append(context.task_id or "")
        self.seen.cancel_seen.set()
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


class _RecordHeaders:
    def __init__(self, app: Any, seen: Seen) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.seen.headers.append(
            {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        )
        body = bytearray()

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body", False) and body:
                    with contextlib.suppress(ValueError):
                        call = json.loads(bytes(body))
                        self.seen.calls.append(call)
                        if isinstance(call, dict) and call.get("method") == "GetTask":
                            self.seen.polled.set()
            return message

        await self.app(scope, recording_receive, send)


def make_card(url: str, name: str = "Paint Shop", *, skills: int = 2) -> AgentCard:
    """The peer's card: a JSON-RPC interface at ``url/`` and ``skills`` skills."""
    every = [
        AgentSkill(id="paint", name="Paint", description="Paints things.", tags=["art"]),
        AgentSkill(id="frame.it", name="Frame", description="Frames a painting.", tags=["art"]),
    ]
    return AgentCard(
        name=name,
        description="A small shop that paints and frames.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{url}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=every[:skills],
    )


@dataclass
class Peer:
    """A running peer: its base ``url``, ``card_url`` and what it ``seen``."""

    url: str
    card_url: str
    seen: Seen


def free_socket() -> socket.socket:
    """A listening-ready socket bound to a free port of 127.0.0.1."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class _Server(uvicorn.Server):
    """uvicorn that leaves signals alone and says when it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.listening.set()


@contextlib.asynccontextmanager
async def serve_app(app: Any, sock: socket.socket) -> AsyncIterator[None]:
    """Serve an ASGI app with uvicorn on ``sock`` in this loop until the block ends."""
    server = _Server(uvicorn.Config(app, lifespan="off", log_config=None, access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(5):
            listening = asyncio.ensure_future(server.listening.wait())
            await asyncio.wait({task, listening}, return_when=asyncio.FIRST_COMPLETED)
            listening.cancel()
            if task.done():
                task.result()
        yield
    finally:
        server.should_exit = True
        async with asyncio.timeout(5):
            await task
        sock.close()


@contextlib.asynccontextmanager
async def running_peer(name: str = "Paint Shop", *, skills: int = 2) -> AsyncIterator[Peer]:
    """Start an SDK-built peer on a free port; stop it when the block ends."""
    sock = free_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    seen = Seen()
    card = make_card(url, name, skills=skills)
    handler = DefaultRequestHandler(
        agent_executor=ScriptedExecutor(seen), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    async with serve_app(_RecordHeaders(app, seen), sock):
        try:
            yield Peer(url, url + CARD_PATH, seen)
        finally:
            seen.release.set()


@contextlib.asynccontextmanager
async def running_app(routes: dict[str, Any]) -> AsyncIterator[str]:
    """Serve ``{path: starlette endpoint}`` (GET and POST) on a free port; yields the base URL."""
    from starlette.routing import Route

    sock = free_socket()
    app = Starlette(routes=[Route(p, e, methods=["GET", "POST"]) for p, e in routes.items()])
    async with serve_app(app, sock):
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"

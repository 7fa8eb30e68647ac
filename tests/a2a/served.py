"""Serving a toolkit over A2A in a test, and talking to it with ``a2a-sdk``'s own client."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from a2a.client import Client as A2aClient
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, Task

import toolnexus as tn
from toolnexus.serve import ServeHandle
from toolnexus.testing import StubLLMServer

LIMIT = 20.0
"""Upper bound of every wait in these tests."""


@dataclass
class Served:
    """A served toolkit, the client running its tasks, and what ``on_task`` saw."""

    handle: ServeHandle
    client: tn.Client
    reports: list[dict[str, Any]] = field(default_factory=list)
    reported: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)

    async def next_report(self) -> dict[str, Any]:
        """The next ``on_task`` call (bounded wait)."""
        return await asyncio.wait_for(self.reported.get(), LIMIT)


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(stub: StubLLMServer) -> AsyncIterator[Serve]:
    """``await serve(toolkit, **a2a_profile)``: serve over A2A with a client of ``stub``."""
    started: list[tuple[ServeHandle, tn.Client]] = []

    async def start(tk: tn.Toolkit, *, client: tn.Client | None = None, **profile: Any) -> Served:
        runner = client or tn.create_client(stub.url, model="m", api_key="sk-test-key-123456")
        served: Served

        def on_task(info: dict[str, Any]) -> None:
            served.reports.append(info)
            served.reported.put_nowait(info)

        handle = await tk.serve("127.0.0.1:0", client=runner, a2a=profile, on_task=on_task)
        served = Served(handle, runner)
        started.append((handle, runner))
        return served

    yield start
    for handle, runner in started:
        await handle.aclose()
        await runner.aclose()


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Awaitable[A2aClient]]]:
    """``await connect(url, streaming=False)``: the SDK's client, from the agent card at url."""
    opened: list[A2aClient] = []

    async def open_client(url: str, *, streaming: bool = False) -> A2aClient:
        client = await create_client(url, ClientConfig(streaming=streaming))
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        await client.close()


def message(
    text: str, *, context_id: str | None = None, task_id: str | None = None
) -> SendMessageRequest:
    """A user message as a ``SendMessage`` request."""
    sent = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    if context_id is not None:
        sent.context_id = context_id
    if task_id is not None:
        sent.task_id = task_id
    return SendMessageRequest(message=sent)


async def send(client: A2aClient, request: SendMessageRequest) -> Task:
    """Send and return the task of the last answer (bounded)."""

    async def last() -> Task:
        task: Task | None = None
        async for response in client.send_message(request):
            if response.HasField("task"):
                task = response.task
        assert task is not None, "the agent answered without a task"
        return task

    return await asyncio.wait_for(last(), LIMIT)


def artifact_texts(task: Task) -> list[str]:
    """Every text part of every artifact, in order."""
    return [part.text for a in task.artifacts for part in a.parts if part.text]


def status_text(task: Task) -> str:
    """The text of the task's status message."""
    return "\n".join(part.text for part in task.status.message.parts if part.text)


async def post_raw(url: str, body: bytes, headers: dict[str, str] | None = None) -> Any:
    """POST a raw body to the JSON-RPC endpoint and return the decoded answer."""
    sent = {"Content-Type": "application/json", "A2A-Version": "1.0", **(headers or {})}
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        response = await http.post(url, content=body, headers=sent)
    return response.json()

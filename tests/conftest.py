"""Shared fixtures. Each test area keeps its own fixtures beside its tests.

For loop tests:

- ``stub``: a started ``StubLLMServer`` (script it with ``stub.enqueue(...)``).
- ``style``: ``"openai"`` and ``"anthropic"``; ``mode``: ``"run"``, ``"stream"``, ``"run_sync"``.
- ``make_client(style, **options)``: a client against ``stub`` (``model="test-model"``,
  ``api_key="test-key"`` unless given), closed after the test.
- ``drive(client, prompt, toolkit=None, **run_kwargs)``: runs one prompt in the test's ``mode``
  and returns ``(result, events)``. ``events`` are what ``on_event`` saw (``run``,
  ``run_sync``) or everything ``stream`` yielded (text deltas included). ``run_sync`` runs in a
  worker thread, as it must not be called inside a running event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from toolnexus import Client, DoneEvent, Event, RunResult, Toolkit, create_client
from toolnexus.testing import StubLLMServer

STYLES = ("openai", "anthropic")
MODES = ("run", "stream", "run_sync")
RUN_LIMIT = 10.0
"""Seconds within which one driven run must finish."""

MakeClient = Callable[..., Client]
Drive = Callable[..., Awaitable[tuple[RunResult, list[Event]]]]


@pytest.fixture
def stub() -> Iterator[StubLLMServer]:
    """A scripted LLM endpoint on 127.0.0.1, stopped after the test."""
    with StubLLMServer() as server:
        yield server


@pytest.fixture(params=STYLES)
def style(request: pytest.FixtureRequest) -> str:
    """Each wire style in turn."""
    value: str = request.param
    return value


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """Each way of running the loop in turn."""
    value: str = request.param
    return value


@pytest.fixture
async def make_client(stub: StubLLMServer) -> AsyncIterator[MakeClient]:
    """A factory of clients pointed at ``stub``; every client is closed after the test."""
    clients: list[Client] = []

    def make(style: str, **options: Any) -> Client:
        options.setdefault("model", "test-model")
        options.setdefault("api_key", "test-key")
        client = create_client(options.pop("base_url", stub.url), style, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


async def drive_in_mode(
    mode: str, client: Client, prompt: str, toolkit: Toolkit | None = None, **kwargs: Any
) -> tuple[RunResult, list[Event]]:
    """Run ``prompt`` through ``client`` in ``mode``; the result and the events seen."""
    events: list[Event] = []
    async with asyncio.timeout(RUN_LIMIT):
        if mode == "stream":
            async for event in client.stream(prompt, toolkit, **kwargs):
                events.append(event)
            last = events[-1]
            assert isinstance(last, DoneEvent), f"stream ended with {last!r}"
            return last.result, events
        if mode == "run":
            result = await client.run(prompt, toolkit, on_event=events.append, **kwargs)
        elif mode == "run_sync":

            def blocking() -> RunResult:
                return client.run_sync(prompt, toolkit, on_event=events.append, **kwargs)

            result = await asyncio.to_thread(blocking)
        else:
            raise AssertionError(f"unknown mode {mode!r}")
    return result, events


@pytest.fixture
def drive(mode: str) -> Drive:
    """``drive(client, prompt, toolkit=None, **kwargs) -> (result, events)`` in this ``mode``."""

    async def go(
        client: Client, prompt: str, toolkit: Toolkit | None = None, **kwargs: Any
    ) -> tuple[RunResult, list[Event]]:
        return await drive_in_mode(mode, client, prompt, toolkit, **kwargs)

    return go

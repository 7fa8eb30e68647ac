"""Shared fixtures. Each test area keeps its own fixtures beside its tests.

For loop tests:

- ``stub``: a started ``StubLLMServer`` (script it with ``stub.enqueue(...)``).
- ``style``: ``"openai"`` and ``"anthropic"``; ``mode``: ``"run"``, ``"stream"``, ``"run_sync"``.
- ``make_client(style, **options)``: a client against ``stub`` (``model="test-model"``,
  ``api_key="test-key"`` unless given), closed after the test.

Runs go through ``drive(client, mode, ...)`` of ``tests/running.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from toolnexus import Client, create_client
from toolnexus.testing import StubLLMServer

from .running import MODES, MakeClient

STYLES = ("openai", "anthropic")


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

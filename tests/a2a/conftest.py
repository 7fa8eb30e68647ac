"""Fixtures of the A2A tests: a running ``a2a-sdk`` peer and a toolkit that uses it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from toolnexus import Toolkit, agent, create_toolkit

from .peer import Peer, running_peer
from .served import connect, serve

__all__ = ["connect", "serve"]  # fixtures of the served-agent tests


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    """The SDK-built peer ``Paint Shop`` (skills ``paint`` and ``frame.it``)."""
    async with running_peer() as running:
        yield running


@pytest.fixture
async def shop(peer: Peer) -> AsyncIterator[Toolkit]:
    """A toolkit whose only tools are the peer's (polling every 10 ms)."""
    async with await create_toolkit(
        builtins=False, agents=[agent(peer.card_url, poll_every=0.01, timeout=5)]
    ) as tk:
        yield tk

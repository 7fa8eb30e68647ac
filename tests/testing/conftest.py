"""Fixtures for the test kit's own tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from toolnexus.testing import StubLLMServer


@pytest.fixture
async def stub() -> AsyncIterator[StubLLMServer]:
    async with StubLLMServer() as server:
        yield server


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as client:
        yield client

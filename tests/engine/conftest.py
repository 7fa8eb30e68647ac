"""Fixtures of the engine tests (on top of those in ``tests/conftest.py``).

- ``async_mode``: ``"run"`` and ``"stream"``. A file that does not cover ``run_sync`` narrows
  ``mode`` to it with a ``mode`` fixture of its own that returns ``async_mode``.
- ``weather_kit``: a toolkit holding only ``get_weather``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from toolnexus import Toolkit, create_toolkit

from ..running import ASYNC_MODES
from .support import get_weather


@pytest.fixture(params=ASYNC_MODES)
def async_mode(request: pytest.FixtureRequest) -> str:
    """Each way of running the loop inside an event loop in turn."""
    value: str = request.param
    return value


@pytest.fixture
async def weather_kit() -> AsyncIterator[Toolkit]:
    """A toolkit of ``get_weather`` alone, closed after the test."""
    async with await create_toolkit(extra_tools=[get_weather], builtins=False) as tk:
        yield tk

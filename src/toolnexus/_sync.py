"""The one helper behind every ``*_sync`` twin."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh event loop.

    Raises ``RuntimeError`` when called from a thread that is already running an event loop
    (use the async method there instead).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError(
        "a *_sync method was called inside a running event loop; await the async method instead"
    )

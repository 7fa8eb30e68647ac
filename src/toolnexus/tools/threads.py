"""The threads sync tools run in: the toolkit's own bounded pool, never asyncio's default one.

A thread cannot be killed. When a run is cancelled or times out while a sync tool is running,
the awaiting coroutine stops but the thread goes on until the function returns; it is reported
with a warning naming the tool. So that such abandoned threads never starve later calls, a pool
that has one is retired (it finishes its work and its threads exit) and later calls go to a
fresh pool. The library's stores use asyncio's default executor, which tools never touch.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = [
    "DEFAULT_TOOL_THREADS",
    "ToolThreads",
    "current_threads",
    "reset_tool_threads",
    "run_sync_tool",
    "use_tool_threads",
]

logger = logging.getLogger("toolnexus")

T = TypeVar("T")

DEFAULT_TOOL_THREADS = min(32, (os.cpu_count() or 1) + 4)
"""Sync tool calls a toolkit runs at once; more wait for a free thread."""


class ToolThreads:
    """A bounded pool for sync tool functions, replaced when a cancelled call leaves a thread."""

    def __init__(self, max_workers: int = DEFAULT_TOOL_THREADS) -> None:
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._abandoned: dict[int, str] = {}
        """Calls still running after their caller went away: future id -> tool name."""

    def abandoned(self) -> list[str]:
        """Names of the tools whose cancelled calls are still running in a thread."""
        with self._lock:
            return sorted(self._abandoned.values())

    async def run(self, name: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` in a pool thread; cancelling the caller abandons it if it has started."""
        context = contextvars.copy_context()
        pool = self._current()
        future: Future[T] = pool.submit(context.run, fn)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if not future.cancel():  # already running: the thread cannot be stopped
                self._abandon(name, pool, future)
            raise

    def shutdown(self) -> None:
        """Stop taking work; calls not yet started are dropped, running ones finish."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _current(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_workers, "toolnexus-tool")
            return self._pool

    def _abandon(self, name: str, pool: ThreadPoolExecutor, future: Future[T]) -> None:
        with self._lock:
            self._abandoned[id(future)] = name
            if self._pool is pool:  # its thread is lost for now: new calls get a fresh pool
                self._pool = None
                pool.shutdown(wait=False)
        logger.warning(
            "tool %r was cancelled but its thread is still running (a thread cannot be "
            "killed; a tool that should stop early can poll ctx.cancel)",
            name,
        )
        future.add_done_callback(lambda _: self._finished(id(future), name))

    def _finished(self, key: int, name: str) -> None:
        with self._lock:
            self._abandoned.pop(key, None)
        logger.info("the cancelled call of tool %r has finished in its thread", name)


_DEFAULT = ToolThreads()
_CURRENT: contextvars.ContextVar[ToolThreads | None] = contextvars.ContextVar(
    "toolnexus_tool_threads", default=None
)


def current_threads() -> ToolThreads:
    """The pool of the toolkit executing the current call, else a shared fallback pool."""
    return _CURRENT.get() or _DEFAULT


def use_tool_threads(threads: ToolThreads) -> contextvars.Token[ToolThreads | None]:
    """Make ``threads`` the pool for sync tools called from the current context."""
    return _CURRENT.set(threads)


def reset_tool_threads(token: contextvars.Token[ToolThreads | None]) -> None:
    """Undo ``use_tool_threads``."""
    _CURRENT.reset(token)


async def run_sync_tool(name: str, fn: Callable[[], T]) -> T:
    """Run a sync tool function in the current toolkit's pool."""
    return await current_threads().run(name, fn)

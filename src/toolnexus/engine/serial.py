"""One run at a time per conversation id, within one client, from any thread or event loop."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["KeyedLock"]

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class KeyedLock:
    """A first-come first-served lock per key.

    Unlike ``asyncio.Lock`` it may be shared by tasks of different event loops (``run_sync``
    from several threads on one client): a waiter is woken on its own loop.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._queues: dict[str, deque[_Waiter]] = {}
        """Held keys, each with the waiters behind its holder."""

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Wait until ``key`` is free, then hold it for the ``async with`` block."""
        loop = asyncio.get_running_loop()
        with self._mutex:
            queue = self._queues.get(key)
            if queue is None:
                self._queues[key] = deque()
                waiter = None
            else:
                waiter = (loop, loop.create_future())
                queue.append(waiter)
        if waiter is not None:
            await self._wait(key, waiter)
        try:
            yield
        finally:
            self._release(key)

    async def _wait(self, key: str, waiter: _Waiter) -> None:
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._mutex:
                queue = self._queues.get(key)
                if queue is not None and waiter in queue:
                    queue.remove(waiter)  # still queued: leave quietly
                    raise
            if waiter[1].done() and not waiter[1].cancelled():
                self._release(key)  # handed the key as we were cancelled: pass it on
            raise

    def _release(self, key: str) -> None:
        """Hand ``key`` to the next waiter whose loop still runs, or free it."""
        with self._mutex:
            queue = self._queues[key]
            while queue:
                loop, future = queue.popleft()
                try:
                    loop.call_soon_threadsafe(self._wake, key, future)
                except RuntimeError:  # that loop is closed: its waiter is gone
                    continue
                return
            del self._queues[key]

    def _wake(self, key: str, future: asyncio.Future[None]) -> None:
        if future.cancelled():
            self._release(key)  # the waiter gave up after the key was handed to it
        else:
            future.set_result(None)

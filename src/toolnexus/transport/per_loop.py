"""One resource per event loop (a connection pool, an HTTP session), closed with its loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["PerLoop"]

T = TypeVar("T")


class PerLoop(Generic[T]):
    """Makes one ``T`` per event loop, on first use there.

    A resource belongs to the loop that made it, so a client used from several loops (``run``
    on the main loop, ``run_sync`` in worker threads) keeps one per loop. Each is closed with
    ``close`` on its own loop when that loop shuts down its async generators (as
    ``asyncio.run`` does), or by ``aclose()`` on that loop; those of loops closed some other way
    are given to ``drop`` (nothing can be awaited on a closed loop) the next time one is made.
    Safe to use from many threads at once.
    """

    def __init__(
        self,
        make: Callable[[], T],
        close: Callable[[T], Awaitable[None]],
        drop: Callable[[T], None],
    ) -> None:
        self._make = make
        self._close = close
        self._drop = drop
        self._lock = threading.Lock()
        self._held: dict[asyncio.AbstractEventLoop, _Held[T]] = {}

    async def get(self) -> T:
        """This loop's resource, made now if it has none."""
        loop = asyncio.get_running_loop()
        with self._lock:
            held = self._held.get(loop)
            if held is not None:
                return held.value
            stale = self._forget_closed_loops()
            held = self._held[loop] = _Held(self._make())
        for old in stale:
            self._drop(old.value)
        held.keeper = self._keep(loop, held)
        await anext(held.keeper)  # registers with the loop, which closes it at shutdown
        return held.value

    async def aclose(self) -> None:
        """Close this loop's resource (those of running loops close when those loops shut down)."""
        current = asyncio.get_running_loop()
        with self._lock:
            held = self._held.pop(current, None)
            stale = self._forget_closed_loops()
        for old in stale:
            self._drop(old.value)
        if held is not None:
            if held.keeper is not None:
                await held.keeper.aclose()  # its cleanup closes the resource
            else:
                await self._close(held.value)

    def _forget_closed_loops(self) -> list[_Held[T]]:
        """Remove the resources of loops that closed without shutting them down (lock held)."""
        closed = [loop for loop in self._held if loop.is_closed()]
        return [self._held.pop(loop) for loop in closed]

    async def _keep(self, loop: asyncio.AbstractEventLoop, held: _Held[T]) -> AsyncGenerator[None]:
        """Lives as long as ``held`` on ``loop``; closing it closes the resource, on that loop."""
        try:
            yield
        finally:
            with self._lock:
                if self._held.get(loop) is held:
                    del self._held[loop]
            await self._close(held.value)


class _Held(Generic[T]):
    """One loop's resource, and the async generator that closes it when the loop shuts down."""

    __slots__ = ("keeper", "value")

    def __init__(self, value: T) -> None:
        self.value = value
        self.keeper: AsyncGenerator[None] | None = None

"""The task that owns one MCP connection, and the session it hands out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from .transports import SessionFlags

__all__ = ["Live", "Owner"]


@dataclass(slots=True)
class Live:
    """A usable session and what its transport learnt about it."""

    session: Any
    flags: SessionFlags


@dataclass(eq=False)
class Owner:
    """One owner task and the signals between it and the connection."""

    ready: asyncio.Future[tuple[Live, list[Any]]]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    connected: bool = False
    reported: bool = False
    cancelled: bool = False

    def succeed(self, live: Live, listed: list[Any]) -> None:
        """Hand the connected session to whoever waits for it."""
        self.connected = self.reported = True
        if not self.ready.done():
            self.ready.set_result((live, listed))

    def fail(self, exc: BaseException) -> bool:
        """Report a failure to whoever waits for the connection; ``False`` if already told."""
        if self.reported:
            return False
        self.reported = True
        if not self.ready.done():
            self.ready.set_exception(exc)
        return True

    def shut(self) -> None:
        """Make the owner leave its contexts.

        A connected owner is told to stop; one still connecting is cancelled (once); one that
        has reported a failure is already tearing down and must not be interrupted (a second
        cancellation could cut the SDK's shielded process shutdown short).
        """
        if self.connected:
            self.stop.set()
        elif not self.reported and not self.cancelled and self.task is not None:
            self.cancelled = True
            self.task.cancel()

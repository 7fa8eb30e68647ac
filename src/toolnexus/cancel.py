"""Cooperative cancellation that works from any thread."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

__all__ = ["CancelToken"]

logger = logging.getLogger("toolnexus")


class CancelToken:
    """A flag a host sets to stop a run, a toolkit load or a tool.

    ``cancel()`` may be called from any thread, any number of times. Whoever watches the token
    (the run loop, the MCP loader) is told through a callback registered with ``on_cancel``.
    """

    __slots__ = ("_callbacks", "_cancelled", "_lock")

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []

    @property
    def cancelled(self) -> bool:
        """``True`` once ``cancel()`` has been called."""
        return self._cancelled

    def cancel(self) -> None:
        """Cancel; idempotent and thread-safe. Watchers are notified once.

        Every callback runs, even when an earlier one raises (its exception is logged), so
        each watcher — a run's own deadline scope included — is always told.
        """
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                logger.warning("a CancelToken callback raised; ignored", exc_info=True)

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback`` (on the cancelling thread) when the token fires.

        If the token has already fired, ``callback`` runs at once. Returns a function that
        unregisters the callback.
        """
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._discard(callback)
        callback()
        return lambda: None

    def _discard(self, callback: Callable[[], object]) -> None:
        with self._lock:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self._cancelled})"


def set_on_cancel(token: CancelToken | None, fired: asyncio.Event) -> Callable[[], None]:
    """Set ``fired`` on the running loop when ``token`` fires, from whichever thread cancels.

    Returns the function that stops watching (a no-op without a token). Once the loop is
    closed, a late cancel is ignored.
    """
    if token is None:
        return lambda: None
    loop = asyncio.get_running_loop()

    def on_cancel() -> None:
        try:
            loop.call_soon_threadsafe(fired.set)
        except RuntimeError:  # the loop is closed
            pass

    return token.on_cancel(on_cancel)

"""A run's deadline and cancel token, enforced by cancelling the task that drives the run.

The loop is an async generator driven by whoever iterates it (``run`` drains it, ``stream``
hands it to the caller). While the loop is working, a fired token or a passed deadline cancels
the driving task, which aborts whatever it awaits (an HTTP request, a backoff sleep, tool
tasks, ``wait_for``); the ``CancelledError`` is then turned into ``RunCancelled`` or
``RunTimeout`` and the task's cancellation count restored, as ``asyncio.timeout`` does. While
the caller holds an event, nothing is cancelled: the next step raises instead. Once the final
event (the run's ``DoneEvent``) is handed out the run is over, and nothing raises any more.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

from .._redact import redact_exception
from ..cancel import CancelToken
from ..errors import RunCancelled, RunTimeout, ToolnexusError

__all__ = ["RunScope", "guarded"]

T = TypeVar("T")


class RunScope:
    """The deadline and cancel token of one run."""

    def __init__(self, cancel: CancelToken | None, timeout_ms: float | None) -> None:
        self.cancel = cancel
        self._timeout_ms = timeout_ms
        self._loop: asyncio.AbstractEventLoop | None = None
        self.deadline: float | None = None
        self._task: asyncio.Task[object] | None = None
        self._baseline = 0
        self._cancel_sent = False
        self._reason: ToolnexusError | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        """Arm the deadline and the token (raises ``RunCancelled`` if already cancelled)."""
        if self.cancel is not None and self.cancel.cancelled:
            raise RunCancelled("the run was cancelled before it started")
        self._loop = loop = asyncio.get_running_loop()
        if self._timeout_ms is not None:
            self.deadline = loop.time() + self._timeout_ms / 1000.0
            self._timer = loop.call_at(self.deadline, self._fire, self._timeout_error())
        if self.cancel is not None:
            self._unsubscribe = self.cancel.on_cancel(self._cancel_from_any_thread)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never negative), or ``None`` without one."""
        if self.deadline is None or self._loop is None:
            return None
        return max(0.0, self.deadline - self._loop.time())

    def enter(self) -> None:
        """The run resumes work in the current task; raise at once if it was stopped."""
        if self._reason is None and self.cancel is not None and self.cancel.cancelled:
            # Fired while the caller held an event: the scheduled ``_fire`` may not have run
            # yet, and no new work (a tool, a request) may start after a cancel.
            self._reason = RunCancelled("the run was cancelled")
        if self._reason is not None:
            raise self._reason
        task = asyncio.current_task()
        assert task is not None, "a run must execute inside an asyncio task"
        self._task = task
        self._baseline = task.cancelling()

    def leave(self) -> None:
        self._task = None

    def stopped_by_us(self) -> bool:
        """After a ``CancelledError``: was it ours? If so, undo our cancellation request."""
        if not self._cancel_sent or self._task is None:
            return False
        self._cancel_sent = False
        return self._task.uncancel() <= self._baseline

    @property
    def reason(self) -> ToolnexusError | None:
        return self._reason

    def _cancel_from_any_thread(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._fire, RunCancelled("the run was cancelled"))
        except RuntimeError:  # the loop closed in between
            pass

    def _fire(self, reason: ToolnexusError) -> None:
        if self._reason is not None:
            return
        self._reason = reason
        if self._task is not None and not self._task.done():
            self._cancel_sent = True
            self._task.cancel()

    def _timeout_error(self) -> RunTimeout:
        return RunTimeout(f"the run did not finish within timeout_ms={self._timeout_ms:g}")


async def guarded(
    inner: AsyncGenerator[T, None],
    scope: RunScope,
    on_error: Callable[[BaseException], Awaitable[None]],
    *,
    final: Callable[[T], bool] = lambda _: False,
) -> AsyncGenerator[T, None]:
    """Drive ``inner`` under ``scope``; ``on_error`` sees any exception before it propagates.

    Every exception leaving here is redacted first (message, ``body`` and its chain).
    After an item for which ``final(item)`` is true, the run is finished: the deadline and the
    token are disarmed and iteration ends without entering the scope again. A consumer that
    closes the generator before that (an abandoned stream) is reported to ``on_error`` as the
    ``GeneratorExit`` it is.
    """
    finished = False
    try:
        scope.start()
        while True:
            scope.enter()
            try:
                item = await inner.__anext__()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if scope.stopped_by_us() and scope.reason is not None:
                    raise scope.reason from None
                raise
            finally:
                scope.leave()
            if final(item):
                finished = True
                scope.close()
            yield item
            if finished:
                return
    except (Exception, asyncio.CancelledError, GeneratorExit) as exc:
        if not isinstance(exc, GeneratorExit):
            redact_exception(exc)
        if not finished:
            if isinstance(exc, GeneratorExit):
                await inner.aclose()  # what ``inner`` reports on closing comes first
            await on_error(exc)
        raise
    finally:
        scope.close()
        await inner.aclose()

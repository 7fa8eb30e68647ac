"""What the file tools share: readable OS errors, blocking work off the event loop, capped text."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from ..._checks import finite
from ._common import MAX_OUTPUT_CHARS, ArgError

__all__ = ["FILE_THREADS", "HeadText", "fs_errors", "in_thread", "whole_number"]

T = TypeVar("T")


def _os_message(exc: OSError, shown: str) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {shown}"
    if isinstance(exc, IsADirectoryError):
        return f"is a directory: {shown}"
    if isinstance(exc, NotADirectoryError):
        return f"not a directory: {shown}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {shown}"
    return f"{exc.strerror or type(exc).__name__}: {shown}"


@contextmanager
def fs_errors(shown: str) -> Iterator[None]:
    """Turn an ``OSError`` into an ``ArgError`` naming ``shown`` (the path as the model gave
    it), and text that is not UTF-8 into ``not UTF-8 text: <path>``."""
    try:
        yield
    except UnicodeDecodeError:
        raise ArgError(f"not UTF-8 text: {shown}") from None
    except OSError as exc:
        raise ArgError(_os_message(exc, shown)) from None


FILE_THREADS = 8
"""Worker threads the file tools share (more calls wait for a free one)."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _threads() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(FILE_THREADS, thread_name_prefix="toolnexus-files")
        return _pool


async def in_thread(work: Callable[[threading.Event], T]) -> T:
    """Run ``work(stop)`` in one of the file tools' own worker threads (never asyncio's
    default executor, which other parts of a program, the SQLite store among them, depend
    on); when the caller is cancelled, ``stop`` is set so a long walk ends soon instead of
    running on unobserved."""
    stop = threading.Event()
    future = _threads().submit(work, stop)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        stop.set()
        future.cancel()
        raise


def whole_number(value: float | None, name: str, minimum: int) -> int | None:
    """``value`` as an ``int`` of at least ``minimum`` (``None`` stays ``None``)."""
    if value is None:
        return None
    if not finite(value) or value != int(value) or value < minimum:
        raise ArgError(f"{name} must be a whole number of at least {minimum}")
    return int(value)


class HeadText:
    """Collects text keeping only its first ``limit`` characters, counting the rest, so a huge
    file is never held in memory whole."""

    def __init__(self, limit: int = MAX_OUTPUT_CHARS) -> None:
        self._limit = limit
        self._parts: list[str] = []
        self._kept = 0
        self._dropped = 0

    def add(self, text: str) -> None:
        """Append ``text`` (what goes past the limit is only counted)."""
        room = self._limit - self._kept
        if room >= len(text):
            self._parts.append(text)
            self._kept += len(text)
            return
        if room > 0:
            self._parts.append(text[:room])
            self._kept += room
        self._dropped += len(text) - max(room, 0)

    def result(self) -> tuple[str, bool]:
        """The kept text (with a note saying ``truncated`` when anything was dropped)."""
        text = "".join(self._parts)
        if not self._dropped:
            return text, False
        return text + f"\n[output truncated: {self._dropped} more characters]", True

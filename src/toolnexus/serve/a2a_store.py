"""Where a served agent keeps its A2A tasks, in their wire form (proto-JSON dicts).

A task store is any object with ``async get(id) -> dict | None`` and ``async save(task)``;
``MemoryTaskStore`` and ``FileTaskStore`` are the two built in (``"memory"`` and
``"file:<dir>"``). Both may also list what they hold (``async all()``), which ``ListTasks``
uses. The memory store is bounded (``TaskBounds``: at most ``max_tasks`` tasks, the oldest
finished one evicted first; finished tasks expire after ``task_ttl_s``). No SDK import here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError

__all__ = [
    "DEFAULT_MAX_TASKS",
    "DEFAULT_TASK_TTL_S",
    "FINISHED_STATES",
    "FileTaskStore",
    "MemoryTaskStore",
    "TaskBounds",
    "TaskStore",
    "open_task_store",
]

logger = logging.getLogger("toolnexus")

TaskDict = dict[str, Any]
DEFAULT_MAX_TASKS = 10_000
"""Most tasks the memory store keeps; past it the oldest finished task is evicted."""
DEFAULT_TASK_TTL_S = 86_400.0
"""How long the memory store keeps a finished task (seconds)."""
FINISHED_STATES = frozenset(
    {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
    }
)
"""Wire states after which a task never changes again."""


@dataclass(frozen=True, slots=True)
class TaskBounds:
    """How many tasks a memory store keeps, and how long it keeps a finished one."""

    max_tasks: int = DEFAULT_MAX_TASKS
    task_ttl_s: float = DEFAULT_TASK_TTL_S

    def __post_init__(self) -> None:
        count, ttl = self.max_tasks, self.task_ttl_s
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ConfigError(f"max_tasks must be a positive integer, got {count!r}")
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise ConfigError(f"task_ttl_s must be a positive number of seconds, got {ttl!r}")


_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


@runtime_checkable
class TaskStore(Protocol):
    """Keeps A2A tasks as proto-JSON dicts (``id``, ``contextId``, ``status``, ...)."""

    async def get(self, id: str) -> TaskDict | None:
        """The task saved under ``id``, or ``None``."""

    async def save(self, task: TaskDict) -> None:
        """Save ``task`` under ``task["id"]``, replacing what was there."""


class MemoryTaskStore:
    """Tasks in this process's memory (the default; gone when the process ends).

    Bounded by ``bounds``: a finished task (completed, failed, canceled, rejected) expires
    ``task_ttl_s`` after it finished, and a save that would keep more than ``max_tasks``
    evicts the oldest finished task first (the oldest of all when none has finished).
    ``clock`` gives the time in seconds (``time.monotonic`` by default).
    """

    def __init__(self, bounds: TaskBounds | None = None, *, clock: Any = time.monotonic) -> None:
        self._tasks: dict[str, str] = {}
        self._finished: dict[str, float] = {}
        """Ids of finished tasks, oldest first, with the time they finished."""
        self._bounds = bounds if bounds is not None else TaskBounds()
        self._clock = clock

    async def get(self, id: str) -> TaskDict | None:
        """The task saved under ``id`` (a fresh copy), or ``None``."""
        self._expire()
        found = self._tasks.get(id)
        return _loads(found) if found is not None else None

    async def save(self, task: TaskDict) -> None:
        """Save a copy of ``task``, then evict what the bounds no longer allow."""
        id = str(task["id"])
        state = (
            task.get("status", {}).get("state") if isinstance(task.get("status"), dict) else None
        )
        self._tasks[id] = json.dumps(task)
        if state in FINISHED_STATES:
            self._finished.setdefault(id, self._clock())
        else:
            self._finished.pop(id, None)
        self._expire()
        while len(self._tasks) > self._bounds.max_tasks:
            oldest = next(iter(self._finished), None)
            if oldest is None:
                oldest = next(iter(self._tasks))
                logger.warning("A2A task store full: unfinished task %s evicted", oldest)
            self._drop(oldest)

    async def all(self) -> list[TaskDict]:
        """Every saved task (copies)."""
        self._expire()
        return [_loads(text) for text in list(self._tasks.values())]

    def __len__(self) -> int:
        return len(self._tasks)

    def _expire(self) -> None:
        cutoff = self._clock() - self._bounds.task_ttl_s
        while self._finished:
            oldest, finished_at = next(iter(self._finished.items()))
            if finished_at > cutoff:
                return
            self._drop(oldest)

    def _drop(self, id: str) -> None:
        self._tasks.pop(id, None)
        self._finished.pop(id, None)


class FileTaskStore:
    """One JSON file per task, ``<dir>/<id>.json``; the folder is created when missing.

    Each save writes a temporary file in the same folder, then renames it over the task's
    file, so a reader sees the old task or the new one, never a partial file, and no
    temporary file stays behind.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"task store folder {os.fspath(directory)!r} cannot be created "
                f"({type(exc).__name__})"
            ) from None

    async def get(self, id: str) -> TaskDict | None:
        """The task saved under ``id``, or ``None`` (also for an id that is not a file name)."""
        if not _SAFE_ID.fullmatch(id):
            return None
        return await asyncio.to_thread(self._read, self.directory / f"{id}.json")

    async def save(self, task: TaskDict) -> None:
        """Write ``task`` atomically (temporary file, then rename)."""
        id = str(task.get("id", ""))
        if not _SAFE_ID.fullmatch(id):
            raise ValueError(f"task id {id!r} cannot name a file")
        await asyncio.to_thread(self._write, id, json.dumps(task, ensure_ascii=False))

    async def all(self) -> list[TaskDict]:
        """Every task in the folder."""

        def read_all() -> list[TaskDict]:
            found = (self._read(path) for path in sorted(self.directory.glob("*.json")))
            return [task for task in found if task is not None]

        return await asyncio.to_thread(read_all)

    def _read(self, path: Path) -> TaskDict | None:
        try:
            return _loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def _write(self, id: str, text: str) -> None:
        fd, temp = tempfile.mkstemp(dir=self.directory, prefix=f".{id}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.directory / f"{id}.json")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise


def open_task_store(spec: object, bounds: TaskBounds | None = None) -> object:
    """``"memory"`` → ``MemoryTaskStore`` (within ``bounds``), ``"file:<dir>"`` →
    ``FileTaskStore``; an object is returned unchanged."""
    if spec == "memory":
        return MemoryTaskStore(bounds)
    if isinstance(spec, str) and spec.startswith("file:"):
        return FileTaskStore(os.path.expanduser(spec[len("file:") :]))
    return spec


def _loads(text: str) -> TaskDict:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("a stored task must be a JSON object")
    return value

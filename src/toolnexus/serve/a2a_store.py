"""Where a served agent keeps its A2A tasks, in their wire form (proto-JSON dicts).

A task store is any object with ``async get(id) -> dict | None`` and ``async save(task)``;
``MemoryTaskStore`` and ``FileTaskStore`` are the two built in (``"memory"`` and
``"file:<dir>"``). Both may also list what they hold (``async all()``), which ``ListTasks``
uses. No SDK import here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError

__all__ = ["FileTaskStore", "MemoryTaskStore", "TaskStore", "open_task_store"]

TaskDict = dict[str, Any]
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


@runtime_checkable
class TaskStore(Protocol):
    """Keeps A2A tasks as proto-JSON dicts (``id``, ``contextId``, ``status``, ...)."""

    async def get(self, id: str) -> TaskDict | None:
        """The task saved under ``id``, or ``None``."""

    async def save(self, task: TaskDict) -> None:
        """Save ``task`` under ``task["id"]``, replacing what was there."""


class MemoryTaskStore:
    """Tasks in this process's memory (the default; gone when the process ends)."""

    def __init__(self) -> None:
        self._tasks: dict[str, str] = {}

    async def get(self, id: str) -> TaskDict | None:
        """The task saved under ``id`` (a fresh copy), or ``None``."""
        found = self._tasks.get(id)
        return _loads(found) if found is not None else None

    async def save(self, task: TaskDict) -> None:
        """Save a copy of ``task``."""
        self._tasks[str(task["id"])] = json.dumps(task)

    async def all(self) -> list[TaskDict]:
        """Every saved task (copies)."""
        return [_loads(text) for text in list(self._tasks.values())]


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


def open_task_store(spec: object) -> object:
    """``"memory"`` → ``MemoryTaskStore``, ``"file:<dir>"`` → ``FileTaskStore``; an object
    is returned unchanged."""
    if spec == "memory":
        return MemoryTaskStore()
    if isinstance(spec, str) and spec.startswith("file:"):
        return FileTaskStore(os.path.expanduser(spec[len("file:") :]))
    return spec


def _loads(text: str) -> TaskDict:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("a stored task must be a JSON object")
    return value

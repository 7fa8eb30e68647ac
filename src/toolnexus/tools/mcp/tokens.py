"""Where OAuth tokens for remote MCP servers are kept: a small key-value protocol.

Each server's record (its tokens and its client registration) is one JSON object under a key
naming the server and its URL. ``MemoryTokenStore`` is the default; ``FileTokenStore`` keeps
records in a JSON file readable only by its owner; any object with ``get``/``set`` works.
Records are secrets: nothing here logs them.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

from ...types import JSONObject

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore", "token_key"]


@runtime_checkable
class TokenStore(Protocol):
    """Keeps one JSON record per MCP server (tokens and client registration)."""

    async def get(self, key: str) -> JSONObject | None:
        """The record saved under ``key``, or ``None``."""
        ...

    async def set(self, key: str, record: JSONObject) -> None:
        """Replace the record saved under ``key``."""
        ...


def token_key(server: str, url: str) -> str:
    """The key of a server's record: its name and URL."""
    return f"{server} {url}"


class MemoryTokenStore:
    """Records in this process only (the default): a restart means authorizing again."""

    def __init__(self) -> None:
        self._records: dict[str, JSONObject] = {}

    async def get(self, key: str) -> JSONObject | None:
        """A copy of the record saved under ``key``, or ``None``."""
        record = self._records.get(key)
        return json.loads(json.dumps(record)) if record is not None else None

    async def set(self, key: str, record: JSONObject) -> None:
        """Save a copy of ``record`` under ``key``."""
        self._records[key] = json.loads(json.dumps(record))

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._records)} servers)"


class FileTokenStore:
    """Records in one JSON file (mode 0600), replaced atomically on every change; a leading
    ``~`` in the path is the user's home folder.

    File access runs in a worker thread, so the event loop never blocks on the disk.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = asyncio.Lock()

    async def get(self, key: str) -> JSONObject | None:
        """The record saved under ``key`` in the file, or ``None``."""
        records = await asyncio.to_thread(self._read)
        record = records.get(key)
        return record if isinstance(record, dict) else None

    async def set(self, key: str, record: JSONObject) -> None:
        """Save ``record`` under ``key``, rewriting the file atomically."""
        async with self._lock:
            await asyncio.to_thread(self._update, key, record)

    def _read(self) -> JSONObject:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}

    def _update(self, key: str, record: JSONObject) -> None:
        records = self._read()
        records[key] = record
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(records, out)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __repr__(self) -> str:
        return f"FileTokenStore({os.fspath(self.path)!r})"

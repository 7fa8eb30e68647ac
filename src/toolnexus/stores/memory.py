"""The in-memory conversation store, the default of every client."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence

from ..messages import Message
from ..suspension import Request

__all__ = ["InMemoryConversationStore"]


class InMemoryConversationStore:
    """Transcripts in a dict, for the life of the process.

    ``save`` and ``get`` copy deeply, so neither the list a caller saved nor the list a caller
    got back can change what is stored. It also keeps the request a conversation waits for
    (``get_pending``/``save_pending``/``claim_pending``), under a lock, so of two concurrent
    resumes of one request exactly one runs.
    """

    __slots__ = ("_conversations", "_lock", "_pending")

    def __init__(self) -> None:
        self._conversations: dict[str, list[Message]] = {}
        self._pending: dict[str, Request] = {}
        self._lock = threading.Lock()

    async def get(self, id: str) -> list[Message] | None:
        """A copy of the transcript saved under ``id``, or ``None`` when the id is unknown."""
        messages = self._conversations.get(id)
        return None if messages is None else copy.deepcopy(messages)

    async def save(self, id: str, messages: Sequence[Message]) -> None:
        """Replace the transcript stored under ``id`` with a copy of ``messages``."""
        self._conversations[id] = copy.deepcopy(list(messages))

    async def delete(self, id: str) -> None:
        """Forget the transcript (and pending request) of ``id``; an unknown id is not an error."""
        with self._lock:
            self._conversations.pop(id, None)
            self._pending.pop(id, None)

    async def get_pending(self, id: str) -> Request | None:
        """The request conversation ``id`` waits for, or ``None``."""
        with self._lock:
            request = self._pending.get(id)
        return None if request is None else _copy(request)

    async def save_pending(self, id: str, request: Request | None) -> None:
        """Record the request conversation ``id`` waits for; ``None`` clears it."""
        with self._lock:
            if request is None:
                self._pending.pop(id, None)
            else:
                self._pending[id] = _copy(request)

    async def claim_pending(self, id: str, request_id: str) -> Request | None:
        """Atomically take (and clear) the pending request of ``id`` if its id is
        ``request_id``; ``None`` when it waits for nothing or for another request."""
        with self._lock:
            request = self._pending.get(id)
            if request is None or request.id != request_id:
                return None
            del self._pending[id]
        return request

    def __repr__(self) -> str:
        return f"InMemoryConversationStore({len(self._conversations)} conversations)"


def _copy(request: Request) -> Request:
    return Request.from_dict(copy.deepcopy(request.to_dict()))

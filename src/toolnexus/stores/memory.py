"""The in-memory conversation store, the default of every client."""

from __future__ import annotations

import copy

from ..types import JSONObject

__all__ = ["InMemoryConversationStore"]


class InMemoryConversationStore:
    """Transcripts in a dict, for the life of the process.

    ``save`` and ``get`` copy deeply, so neither the list a caller saved nor the list a caller
    got back can change what is stored.
    """

    __slots__ = ("_conversations",)

    def __init__(self) -> None:
        self._conversations: dict[str, list[JSONObject]] = {}

    async def get(self, id: str) -> list[JSONObject] | None:
        """A copy of the transcript saved under ``id``, or ``None`` when the id is unknown."""
        messages = self._conversations.get(id)
        return None if messages is None else copy.deepcopy(messages)

    async def save(self, id: str, messages: list[JSONObject]) -> None:
        """Replace the transcript stored under ``id`` with a copy of ``messages``."""
        self._conversations[id] = copy.deepcopy(list(messages))

    async def delete(self, id: str) -> None:
        """Forget the transcript stored under ``id``; an unknown id is not an error."""
        self._conversations.pop(id, None)

    def __repr__(self) -> str:
        return f"InMemoryConversationStore({len(self._conversations)} conversations)"

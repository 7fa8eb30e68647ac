"""Conversation stores: where transcripts live between runs, keyed by an opaque id.

``InMemoryConversationStore`` is the per-client default; ``SqliteConversationStore`` keeps
transcripts in one SQLite file that several processes may share. Both implement the
``toolnexus.ConversationStore`` protocol and also offer ``delete``. Stores other than the
in-memory one load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .memory import InMemoryConversationStore

if TYPE_CHECKING:
    from .sqlite import SqliteConversationStore

__all__ = ["InMemoryConversationStore", "SqliteConversationStore"]


def __getattr__(name: str) -> Any:
    if name == "SqliteConversationStore":
        from .sqlite import SqliteConversationStore

        return SqliteConversationStore
    raise AttributeError(f"module 'toolnexus.stores' has no attribute {name!r}")

"""Conversation stores: where transcripts live between runs, keyed by an opaque id.

``InMemoryConversationStore`` is the per-client default; ``SqliteConversationStore`` keeps
transcripts in one SQLite file that several processes may share; ``RedisConversationStore``
and ``PostgresConversationStore`` (optional extras) serve many workers on many machines. All
implement the ``toolnexus.ConversationStore`` protocol and also offer ``delete``. Stores other
than the in-memory one load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .memory import InMemoryConversationStore

if TYPE_CHECKING:
    from .postgres import PostgresConversationStore
    from .redis import RedisConversationStore
    from .sqlite import SqliteConversationStore

__all__ = [
    "InMemoryConversationStore",
    "PostgresConversationStore",
    "RedisConversationStore",
    "SqliteConversationStore",
]


def __getattr__(name: str) -> Any:
    if name == "SqliteConversationStore":
        from .sqlite import SqliteConversationStore

        return SqliteConversationStore
    if name == "RedisConversationStore":
        from .redis import RedisConversationStore

        return RedisConversationStore
    if name == "PostgresConversationStore":
        from .postgres import PostgresConversationStore

        return PostgresConversationStore
    raise AttributeError(f"module 'toolnexus.stores' has no attribute {name!r}")

"""Conversations that wait for an answer: the pending request kept beside the transcript.

A store keeps pending requests when it has ``get_pending(id)`` and ``save_pending(id, request
or None)``; ``claim_pending(id, request_id)`` (optional) takes the request atomically, so that of
two concurrent resumes exactly one runs. Stores without these methods still work for
everything else.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..suspension import Request
from ..types import ConversationStore

__all__ = [
    "check_not_waiting",
    "claim_pending",
    "keeps_pending",
    "load_pending",
    "require_pending_store",
    "save_pending",
]


def keeps_pending(store: ConversationStore) -> bool:
    """Whether ``store`` has ``get_pending`` and ``save_pending``."""
    return callable(getattr(store, "get_pending", None)) and callable(
        getattr(store, "save_pending", None)
    )


def require_pending_store(store: ConversationStore) -> Any:
    """``store`` itself, or ``ConfigError`` when it does not keep pending requests."""
    if not keeps_pending(store):
        raise ConfigError(
            f"{type(store).__name__} does not keep pending requests (it has no get_pending/"
            f"save_pending methods); resume with ask_with_answer(request, answer, id=...) or "
            f"use a store that keeps them (every store toolnexus ships does)"
        )
    return store


async def load_pending(store: ConversationStore, id: str) -> Request | None:
    """The request conversation ``id`` waits for; ``None`` when the store keeps none."""
    if not keeps_pending(store):
        return None
    found = await store.get_pending(id)  # type: ignore[attr-defined]
    return _as_request(found)


async def save_pending(store: ConversationStore, id: str, request: Request | None) -> None:
    """Record (or clear, with ``None``) what conversation ``id`` waits for, when the store can."""
    if keeps_pending(store):
        await store.save_pending(id, request)  # type: ignore[attr-defined]


async def check_not_waiting(store: ConversationStore, id: str) -> None:
    """``ConfigError`` when conversation ``id`` waits for an answer (a new prompt would orphan
    the request: the transcript could no longer be resumed)."""
    request = await load_pending(store, id)
    if request is not None:
        raise ConfigError(
            f"conversation {id!r} is waiting for an answer to request {request.id!r} "
            f"({request.prompt!r}); answer it with client.resume({id!r}, Answer({request.id!r}, "
            f"ok=...), toolkit) before sending a new prompt"
        )


async def claim_pending(store: ConversationStore, id: str, request_id: str) -> Request:
    """Take the pending request ``request_id`` of conversation ``id``: it is cleared in the
    store, and returned. ``ConfigError`` when the conversation does not wait for it (never
    halted with this id, already answered, or being answered by a concurrent resume)."""
    require_pending_store(store)
    claim = getattr(store, "claim_pending", None)
    if callable(claim):
        taken = _as_request(await claim(id, request_id))
    else:  # not atomic across processes: a store that can should offer claim_pending
        taken = await load_pending(store, id)
        if taken is not None and taken.id == request_id:
            await save_pending(store, id, None)
        else:
            taken = None
    if taken is None:
        raise ConfigError(
            f"conversation {id!r} is not waiting for request {request_id!r}: nothing to "
            f"resume (it was answered already, is being answered right now, or the run that "
            f"asked was not given this conversation id)"
        )
    return taken


def _as_request(value: object) -> Request | None:
    if value is None or isinstance(value, Request):
        return value
    if isinstance(value, dict):
        return Request.from_dict(value)
    raise TypeError(f"a store's pending request must be a Request, not {type(value).__name__}")

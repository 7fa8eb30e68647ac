"""Calling host callbacks that may be plain functions or coroutine functions, and what they get.

Callbacks get snapshots; what they return is what counts. Whatever the engine hands a host
callback (hook payloads, the body for ``body_transform``, events, the request for
``wait_for``, the transcript a store saves) goes through ``snapshot`` first, so a callback that
edits what it was given, now or later, changes nothing of the run's own state.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["call_quietly", "maybe_await", "snapshot"]

T = TypeVar("T")

logger = logging.getLogger("toolnexus")


async def maybe_await(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` and await its result when it is awaitable."""
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


async def call_quietly(fn: Callable[..., Any] | None, *args: Any, what: str) -> None:
    """Call an observer callback; its exceptions are logged and ignored."""
    if fn is None:
        return
    try:
        await maybe_await(fn, *args)
    except Exception as exc:
        logger.warning("%s callback raised %s; ignored", what, type(exc).__name__, exc_info=True)


def snapshot(value: T) -> T:
    """A copy of ``value`` sharing nothing mutable with it.

    Dicts, lists and tuples are copied all the way down, dataclass instances (events, results,
    requests) are rebuilt from copies of their fields; anything else (strings, numbers, other
    objects) is shared as is.
    """
    return _copy(value)  # type: ignore[no-any-return]


_SHARED = frozenset({str, int, float, bool, type(None)})
"""Immutable JSON leaves: returned as they are, before any slower check."""


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if kind is tuple:
        return tuple(_copy(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _copy(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
        return dataclasses.replace(value, **changes)
    return value

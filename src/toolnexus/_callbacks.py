"""Calling host callbacks that may be plain functions or coroutine functions."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["call_quietly", "maybe_await"]

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

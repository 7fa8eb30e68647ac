"""Which failed LLM attempts are retried, and how long to wait before the next one."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .._callbacks import maybe_await

__all__ = [
    "RETRYABLE_STATUSES",
    "ErrorInfo",
    "RetryPolicy",
    "is_retryable",
    "parse_retry_after",
]

RETRYABLE_STATUSES = frozenset({408, 409, 429, *range(500, 600)})
"""Request timeout, conflict, rate limit and every server error (Anthropic's 529 included),
as the providers' own SDKs retry them."""
DEFAULT_MAX_RETRY_AFTER_S = 60.0
_MAX_RETRY_AFTER = 2_147_483_647
_JITTER_MS = 100.0

ErrorDecision = Literal["retry", "fail"]


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """A failed LLM attempt, as shown to an ``on_error`` classifier."""

    attempt: int
    """0-based: the first failed attempt is 0."""
    retryable: bool
    """What the default policy would decide (retryable status or network error)."""
    status: int | None = None
    error: BaseException | None = None


def is_retryable(status: int | None) -> bool:
    """Whether the default policy retries a failure with this status (``None``: network)."""
    return status is None or status in RETRYABLE_STATUSES


def parse_retry_after(value: str | None) -> int | None:
    """Seconds to wait from a ``Retry-After`` value, or ``None`` to use the backoff delay.

    Only a plain run of ASCII digits (surrounding spaces and tabs ignored) up to 2147483647 is
    honoured; signs, fractions, HTTP-dates and anything else fall back to backoff.
    """
    if value is None:
        return None
    text = value.strip(" \t")
    if not text or not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(_MAX_RETRY_AFTER)):  # out of range; also spares int() huge input
        return None
    seconds = int(digits)
    return seconds if seconds <= _MAX_RETRY_AFTER else None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most ``retries + 1`` attempts; exponential backoff with jitter between them."""

    retries: int = 2
    base_ms: float = 500.0
    on_error: Callable[[ErrorInfo], Any] | None = None
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S
    """A ``Retry-After`` longer than this is ignored in favour of the backoff delay."""

    async def delay(
        self,
        attempt: int,
        *,
        status: int | None,
        error: BaseException,
        retry_after: str | None = None,
        retry_delay: float | None = None,
    ) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or ``None`` to give up.

        ``retry_after`` is the ``Retry-After`` header; ``retry_delay`` the seconds the error
        body asked for (used when there is no usable header). Either is honoured only up to
        ``max_retry_after_s``; beyond, the backoff delay applies.
        """
        retryable = is_retryable(status)
        decision: object = "retry" if retryable else "fail"
        if self.on_error is not None:
            info = ErrorInfo(attempt=attempt, retryable=retryable, status=status, error=error)
            decision = await maybe_await(self.on_error, info)
        if decision != "retry" or attempt >= self.retries:
            return None
        if status is not None:
            honoured = parse_retry_after(retry_after)
            if honoured is not None and honoured <= self.max_retry_after_s:
                return float(honoured)
            if honoured is None and retry_delay is not None:
                if 0 <= retry_delay <= self.max_retry_after_s:
                    return float(retry_delay)
        backoff_ms: float = self.base_ms * 2**attempt + random.uniform(0.0, _JITTER_MS)
        return backoff_ms / 1000.0

"""How MCP failures are named: which server, which phase, why; and what counts as session loss.

Every reason is one line that never contains an expanded header value or client secret.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from .transports import HttpStatusError, SessionFlags

__all__ = [
    "PhaseError",
    "PhaseTimeout",
    "SessionLost",
    "is_session_loss",
    "leaf",
    "phase",
    "reason_of",
]

_GONE_MESSAGES = frozenset({"Session terminated", "Session not found"})


class SessionLost(Exception):
    """The server's session is gone (process exited, connection closed, session terminated)."""


class PhaseTimeout(Exception):
    """A phase (connect, initialize, list, call) ran out of its budget."""


class PhaseError(Exception):
    """A phase failed; ``cause`` says why."""

    def __init__(self, name: str, cause: BaseException) -> None:
        super().__init__(name)
        self.phase = name
        self.cause = cause


@contextlib.asynccontextmanager
async def phase(name: str, budget_ms: int) -> AsyncIterator[None]:
    """Give one phase a fresh budget; failures come out as ``PhaseTimeout``/``PhaseError``."""
    try:
        async with asyncio.timeout(budget_ms / 1000):
            yield
    except TimeoutError:
        raise PhaseTimeout(f"{name} timed out after {budget_ms} ms") from None
    except (PhaseTimeout, PhaseError):
        raise
    except Exception as exc:
        raise PhaseError(name, exc) from exc


def leaf(exc: BaseException) -> BaseException:
    """The first meaningful exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def reason_of(exc: BaseException, mask: Callable[[str], str]) -> str:
    """A one-line description of ``exc`` (``phase: message (HTTP status)``), masked."""
    exc = leaf(exc)
    if isinstance(exc, PhaseError):
        return f"{exc.phase}: {reason_of(exc.cause, mask)}"
    if isinstance(exc, HttpStatusError):
        return f"{reason_of(exc.cause, mask)} (HTTP {exc.status})"
    text = str(exc).strip() or type(exc).__name__
    return " ".join(mask(text).split())


def is_session_loss(exc: BaseException, flags: SessionFlags | None) -> bool:
    """Whether a failed request means the session itself is gone.

    A closed connection, a 404 to a request carrying the session id, and a 400 whose body
    talks about the session (what servers that restarted answer to a stale id) all count.
    """
    import anyio
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    exc = leaf(exc)
    if isinstance(exc, PhaseError):
        return is_session_loss(exc.cause, flags)
    if isinstance(exc, MCPError):
        if flags is not None and (flags.gone or flags.stale):
            return True
        return exc.code == CONNECTION_CLOSED or exc.message in _GONE_MESSAGES
    return isinstance(
        exc, SessionLost | ConnectionError | anyio.ClosedResourceError | anyio.BrokenResourceError
    )


def is_closed(exc: BaseException) -> bool:
    """Whether the failure is the connection closing (a stdio server may have died)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    exc = leaf(exc)
    if isinstance(exc, PhaseError):
        return is_closed(exc.cause)
    return (isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED) or isinstance(
        exc, SessionLost | ConnectionError
    )

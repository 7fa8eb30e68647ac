"""One ``tools/call`` under its budget, and what a failure message must never show.

The budget is the server's ``timeout`` (capped by the run's remaining time); progress reports
reach the tool context and, with ``resetTimeoutOnProgress``, give the call a fresh budget; the
budget is paused while a person authorizes.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

from ..._env import expand_env
from ...types import JSONObject, ToolContext, ToolResult
from .config import McpServerConfig
from .failures import PhaseError, PhaseTimeout

__all__ = ["Budget", "Parked", "secrets_of", "timed_call"]

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


class Budget:
    """A call's deadline, paused while a person authorizes and restarted on progress."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.timer: asyncio.Timeout | None = None

    def pause(self) -> None:
        if self.timer is not None:
            self.timer.reschedule(None)

    def restart(self) -> None:
        if self.timer is not None:
            self.timer.reschedule(asyncio.get_running_loop().time() + self.limit)


class Parked(Exception):
    """A call waits for a person to authorize; ``result`` is the suspension to return."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__("authorization required")
        self.result = result


async def timed_call(
    session: Any,
    tool: str,
    args: JSONObject,
    ctx: ToolContext | None,
    budget: Budget,
    resets: bool,
) -> Any:
    """``session.call_tool`` under ``budget``, with a progress token; errors name the phase."""
    report = ctx.progress if ctx is not None else None

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        if report is not None:
            report(done, total, message)
        if resets:
            budget.restart()

    try:
        async with asyncio.timeout(budget.limit) as budget.timer:
            return await session.call_tool(tool, args, progress_callback=on_progress)
    except TimeoutError:
        raise PhaseTimeout(f"call timed out after {round(budget.limit * 1000)} ms") from None
    except Exception as exc:
        raise PhaseError("call", exc) from exc


def secrets_of(config: McpServerConfig) -> list[str]:
    """Values to mask in messages, longest first: every expanded header value that used a
    variable, the variables it used, and the OAuth client secrets, private key and ID token."""
    found: set[str] = set()
    for raw in config.headers.values():
        names = _VAR.findall(raw)
        if names:
            found.add(expand_env(raw))
            found.update(os.environ.get(name, "") for name in names)
    oauth = config.oauth
    if oauth is not None:
        for value in (
            oauth.client_secret,
            oauth.private_key,
            oauth.idp_client_secret,
            oauth.id_token,
        ):
            if value:
                found.add(expand_env(value))
                found.update(os.environ.get(name, "") for name in _VAR.findall(value))
    return sorted((s for s in found if s), key=len, reverse=True)

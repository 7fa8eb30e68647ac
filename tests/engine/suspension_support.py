"""A deploy tool that suspends, and the hosts that answer it, for the suspension tests.

- ``run_deploy(client, mode, toolkit, log=None, **options)``: one "Deploy it." run through
  ``drive``; every event but text goes to ``log``.
- ``Gate``: a tool that suspends until it runs with an answer; ``Host``: a logging ``wait_for``;
  ``approve(data)``: an answer function approving every request; ``results_in``: the
  ``(call id, content)`` of every tool result in a transcript.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from toolnexus import (
    Answer,
    Client,
    Event,
    Request,
    RunResult,
    TextEvent,
    ToolCallDeltaEvent,
    ToolContext,
    Toolkit,
    ToolResult,
    pending,
)

from ..running import drive
from .support import Message, results_of

PROMPT = "Approve the deploy?"


async def run_deploy(
    client: Client,
    mode: str,
    toolkit: Toolkit | None,
    log: list[object] | None = None,
    **options: Any,
) -> tuple[RunResult, list[object]]:
    """Run one prompt through ``run`` or ``stream``; events (but text and the streamed pieces
    of call arguments) go to ``log``."""
    log = [] if log is None else log

    def keep(event: Event) -> None:
        if not isinstance(event, TextEvent | ToolCallDeltaEvent):
            log.append(event)

    result, _ = await drive(client, mode, toolkit, prompt="Deploy it.", on_event=keep, **options)
    return result, log


class Gate:
    """A tool that suspends on a fresh request until it runs with an answer.

    With ``again=True`` it suspends even when answered. ``before`` is awaited before it
    suspends (to control which call finishes first); ``done`` is set when it returns.
    """

    def __init__(
        self,
        prompt: str = PROMPT,
        *,
        again: bool = False,
        before: asyncio.Event | None = None,
        make: Callable[[str], ToolResult] | None = None,
    ) -> None:
        self.prompt = prompt
        self.again = again
        self.before = before
        self.make = make or (lambda p: pending(Request.new("approval", p, data={"env": "prod"})))
        self.contexts: list[ToolContext | None] = []
        self.requests: list[Request] = []
        self.done = asyncio.Event()

    async def __call__(self, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        self.contexts.append(ctx)
        try:
            if ctx is not None and ctx.answer is not None and not self.again:
                return ToolResult(f"approved: {json.dumps(ctx.answer.data)}")
            if self.before is not None:
                await self.before.wait()
            result = self.make(self.prompt)
            request = result.metadata["pending"] if result.metadata else None
            assert isinstance(request, Request)
            self.requests.append(request)
            return result
        finally:
            self.done.set()

    @property
    def runs(self) -> int:
        return len(self.contexts)


class Host:
    """A ``wait_for`` that logs each call into ``log`` and answers with ``answer(request)``."""

    def __init__(self, log: list[object], answer: Callable[[Request], Answer | None]) -> None:
        self.log = log
        self.answer = answer
        self.requests: list[Request] = []

    async def __call__(self, request: Request) -> Answer | None:
        self.requests.append(request)
        self.log.append(("wait_for", request.id))
        return self.answer(request)


def approve(data: dict[str, Any] | None = None) -> Callable[[Request], Answer]:
    return lambda request: Answer(request.id, ok=True, data=data)


def results_in(messages: list[Message], style: str) -> list[tuple[str, str]]:
    return [(i, c) for m in messages for i, c, _ in results_of(m, style)]

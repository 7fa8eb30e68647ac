"""Running one prompt through a client in a chosen mode: the one ``drive`` helper of the suite.

``drive(client, mode, toolkit=None, *, prompt="hi", on_event=None, **options)`` runs ``prompt``
through ``client.run``, ``client.stream`` or ``client.run_sync`` (``mode``) and returns
``(result, events)``. ``events`` are what ``on_event`` saw (``run``, ``run_sync``: no text
deltas) or everything ``stream`` yielded (text deltas included). ``on_event``, if given, also
sees each event as it comes. ``options`` go to ``run``/``stream``/``run_sync``. ``run_sync``
runs in a worker thread, as it must not be called inside a running event loop. The stream is
closed however the run ends, and every run is bounded by ``RUN_LIMIT`` seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

from toolnexus import Client, DoneEvent, Event, RunResult, Toolkit

MODES = ("run", "stream", "run_sync")
"""Every way of running the loop."""
ASYNC_MODES = ("run", "stream")
"""The ways of running the loop inside an event loop (``run_sync`` left out)."""
RUN_LIMIT = 10.0
"""Seconds within which one driven run must finish."""

MakeClient = Callable[..., Client]
Drive = Callable[..., Awaitable[tuple[RunResult, list[Event]]]]


async def drive(
    client: Client,
    mode: str,
    toolkit: Toolkit | None = None,
    *,
    prompt: str = "hi",
    on_event: Callable[[Event], None] | None = None,
    **options: Any,
) -> tuple[RunResult, list[Event]]:
    """Run ``prompt`` once through ``client`` as ``mode`` says; the result and the events seen."""
    assert mode in MODES, f"unknown mode {mode!r}"
    events: list[Event] = []

    def seen(event: Event) -> None:
        events.append(event)
        if on_event is not None:
            on_event(event)

    async with asyncio.timeout(RUN_LIMIT):
        if mode == "run":
            return await client.run(prompt, toolkit, on_event=seen, **options), events
        if mode == "run_sync":

            def blocking() -> RunResult:
                return client.run_sync(prompt, toolkit, on_event=seen, **options)

            return await asyncio.to_thread(blocking), events
        async with aclosing(client.stream(prompt, toolkit, **options)) as stream:
            async for event in stream:
                seen(event)
    last = events[-1]
    assert isinstance(last, DoneEvent), f"stream ended with {last!r}"
    return last.result, events

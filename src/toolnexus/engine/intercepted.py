"""The loop's side of the interceptor seam: model calls through the chain, and run edges.

Only used when a client has interceptors; without them the loop calls the model directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing

from ..dialects import Dialect, StreamItem, Turn
from ..events import DoneEvent, Event
from ..types import JSONObject, RunResult
from .interceptors import Interceptor, ModelCall, RunInfo, chain, finish_run
from .llm import ModelCaller

__all__ = ["intercepted_call", "observed"]

_END = object()


async def intercepted_call(
    caller: ModelCaller,
    dialect: Dialect,
    interceptors: Sequence[Interceptor],
    info: RunInfo,
    body: JSONObject,
    headers: Mapping[str, str],
    turn: int,
) -> AsyncGenerator[StreamItem | Turn, None]:
    """One model call through every ``around_llm``: text deltas and argument pieces
    (streaming), then the turn.

    In streaming mode the chain runs in a task of its own, so that the deltas the real call
    receives reach the caller while the interceptors still hold the call open. When the chain
    answers without the real call having streamed anything (a replayed reply), the reply's
    text is given as one delta.
    """
    call = ModelCall(info, turn, body, dialect)
    if not info.stream:

        async def answer(current: ModelCall) -> JSONObject:
            return current.remember(await caller.call(current.body, headers, turn=turn))

        reply = await chain(interceptors, "around_llm", answer)(call)
        yield call.parse(reply)
        return

    deltas: asyncio.Queue[object] = asyncio.Queue()
    streamed = False

    async def stream(current: ModelCall) -> JSONObject:
        nonlocal streamed
        result: Turn | None = None
        async with aclosing(caller.stream(current.body, headers, turn=turn)) as items:
            async for item in items:
                if isinstance(item, Turn):
                    result = item
                else:
                    streamed = streamed or isinstance(item, str)
                    deltas.put_nowait(item)
        assert result is not None, "a model stream ended without its turn"
        return current.remember(result)

    task = asyncio.ensure_future(chain(interceptors, "around_llm", stream)(call))
    task.add_done_callback(lambda _: deltas.put_nowait(_END))
    try:
        while (item := await deltas.get()) is not _END:
            assert not isinstance(item, Turn)
            yield item  # type: ignore[misc]
        parsed = call.parse(task.result())
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait([task])
    if not streamed and parsed.text:
        yield parsed.text
    yield parsed


async def observed(
    events: AsyncGenerator[Event, None], interceptors: Sequence[Interceptor], info: RunInfo
) -> AsyncGenerator[Event, None]:
    """``events`` with ``run_started``/``run_finished`` called on each interceptor."""
    for interceptor in interceptors:
        interceptor.run_started(info)
    result: RunResult | None = None
    finished = False
    try:
        async with aclosing(events):
            async for event in events:
                if isinstance(event, DoneEvent):
                    result = event.result
                    finished = True
                    finish_run(interceptors, info, result, None)
                try:
                    yield event
                except GeneratorExit:
                    info.abandoned = not finished  # before the work in flight is cancelled
                    raise
    except GeneratorExit:
        raise
    except BaseException as exc:
        if not finished:
            finished = True
            finish_run(interceptors, info, None, exc)
        raise
    finally:
        if not finished:
            finish_run(interceptors, info, None, None)

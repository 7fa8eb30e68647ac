"""A run's deadline and cancel token, and concurrent tool calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from types import AsyncGeneratorType
from typing import TypeVar

import pytest

from toolnexus import CancelToken, RunCancelled, RunTimeout
from toolnexus.engine.scope import RunScope, guarded
from toolnexus.engine.tool_calls import gather_in_order

T = TypeVar("T")

FOREVER = 3600.0
PROMPT = 1.0
"""Seconds within which a fired token or a passed deadline must have stopped the run."""


class Inner:
    """An inner event generator that records how far it got and whether it was closed."""

    def __init__(self, token: CancelToken | None = None, *, fire_from_thread: bool = False) -> None:
        self.token = token
        self.fire_from_thread = fire_from_thread
        self.started = False
        self.resumed_after_first = False
        self.closed = False
        self.waiting = asyncio.Event()
        self.thread: threading.Thread | None = None

    async def events(self) -> AsyncGenerator[str, None]:
        """Yields ``"first"``, then waits for an hour before its second event."""
        self.started = True
        try:
            yield "first"
            self.resumed_after_first = True
            if self.fire_from_thread:
                assert self.token is not None
                self.thread = threading.Thread(target=self.token.cancel)
                self.thread.start()
            self.waiting.set()
            await asyncio.sleep(FOREVER)
            yield "second"
        finally:
            self.closed = True


class Errors:
    """An ``on_error`` callback that records what it saw."""

    def __init__(self) -> None:
        self.seen: list[BaseException] = []

    async def __call__(self, exc: BaseException) -> None:
        self.seen.append(exc)


def guard(
    inner: AsyncGenerator[T, None],
    scope: RunScope,
    on_error: Callable[[BaseException], Awaitable[None]],
) -> AsyncGenerator[T, None]:
    """``guarded`` as the async generator it is, so ``aclosing`` can close it."""
    events = guarded(inner, scope, on_error)
    assert isinstance(events, AsyncGenerator)
    return events


def assert_task_not_left_cancelled() -> None:
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0


# --- RunScope + guarded ---------------------------------------------------------------------------


async def test_a_pre_cancelled_token_raises_before_the_inner_generator_runs() -> None:
    token = CancelToken()
    token.cancel()
    inner, errors = Inner(token), Errors()
    generator = inner.events()
    async with aclosing(guard(generator, RunScope(token, None), errors)) as events:
        with pytest.raises(RunCancelled):
            await anext(events)
    assert inner.started is False
    assert isinstance(generator, AsyncGeneratorType)
    assert generator.ag_frame is None  # closed without ever running
    assert len(errors.seen) == 1
    assert isinstance(errors.seen[0], RunCancelled)


async def test_a_token_fired_from_another_thread_stops_a_long_await_promptly() -> None:
    token = CancelToken()
    inner, errors = Inner(token, fire_from_thread=True), Errors()
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(5):
        async with aclosing(guard(inner.events(), RunScope(token, None), errors)) as events:
            assert await anext(events) == "first"
            started = loop.time()
            with pytest.raises(RunCancelled):
                await anext(events)
            assert loop.time() - started < PROMPT
    assert inner.thread is not None
    inner.thread.join(5)
    assert inner.closed is True
    assert [type(exc) for exc in errors.seen] == [RunCancelled]
    assert_task_not_left_cancelled()
    await asyncio.sleep(0)  # the driving task can still await: no cancellation is left over
    assert_task_not_left_cancelled()


async def test_the_deadline_raises_run_timeout_which_is_a_timeout_error() -> None:
    inner, errors = Inner(), Errors()
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with asyncio.timeout(5):
        async with aclosing(guard(inner.events(), RunScope(None, 50), errors)) as events:
            assert await anext(events) == "first"
            with pytest.raises(RunTimeout) as caught:
                await anext(events)
    assert isinstance(caught.value, TimeoutError)
    assert "timeout_ms=50" in str(caught.value)
    assert 0.04 <= loop.time() - started < PROMPT
    assert inner.closed is True
    assert errors.seen == [caught.value]
    assert_task_not_left_cancelled()
    await asyncio.sleep(0)


async def test_remaining_counts_down_to_the_deadline() -> None:
    scope = RunScope(None, 10_000)
    assert scope.remaining() is None  # not armed yet
    scope.start()
    try:
        remaining = scope.remaining()
        assert remaining is not None
        assert 9.0 < remaining <= 10.0
    finally:
        scope.close()
    assert RunScope(None, None).remaining() is None


async def test_a_token_fired_while_the_consumer_holds_an_event_stops_the_next_step() -> None:
    token = CancelToken()
    inner, errors = Inner(token), Errors()
    loop = asyncio.get_running_loop()
    fired = asyncio.Event()

    def cancel_then_signal() -> None:
        token.cancel()
        loop.call_soon_threadsafe(fired.set)  # queued after the token's own callback

    async with asyncio.timeout(5):
        async with aclosing(guard(inner.events(), RunScope(token, None), errors)) as events:
            assert await anext(events) == "first"
            thread = threading.Thread(target=cancel_then_signal)
            thread.start()
            await fired.wait()  # the consumer's own await is not cancelled
            with pytest.raises(RunCancelled):
                await anext(events)
    thread.join(5)
    assert inner.resumed_after_first is False
    assert inner.closed is True
    assert [type(exc) for exc in errors.seen] == [RunCancelled]
    assert_task_not_left_cancelled()


async def test_a_deadline_passing_while_the_consumer_holds_an_event_stops_the_next_step() -> None:
    inner, errors = Inner(), Errors()
    scope = RunScope(None, 20)
    async with asyncio.timeout(5):
        async with aclosing(guard(inner.events(), scope, errors)) as events:
            assert await anext(events) == "first"
            while scope.reason is None:  # the consumer keeps working past the deadline
                await asyncio.sleep(0.005)
            with pytest.raises(RunTimeout):
                await anext(events)
    assert inner.resumed_after_first is False
    assert inner.closed is True
    assert_task_not_left_cancelled()


async def test_an_external_cancel_of_the_consumer_stays_a_plain_cancelled_error() -> None:
    token = CancelToken()
    inner, errors = Inner(token), Errors()

    async def consume() -> None:
        async with aclosing(guard(inner.events(), RunScope(token, 60_000), errors)) as events:
            async for _ in events:
                pass

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        await inner.waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert task.cancelled()
    assert inner.closed is True
    assert [type(exc) for exc in errors.seen] == [asyncio.CancelledError]
    assert not isinstance(errors.seen[0], RunCancelled)


async def test_an_external_cancel_wins_over_a_token_fired_at_the_same_moment() -> None:
    token = CancelToken()
    inner, errors = Inner(token), Errors()

    async def consume() -> None:
        async with aclosing(guard(inner.events(), RunScope(token, None), errors)) as events:
            async for _ in events:
                pass

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        await inner.waiting.wait()
        token.cancel()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert task.cancelled()
    assert inner.closed is True


async def test_on_error_sees_an_exception_of_the_inner_generator() -> None:
    errors = Errors()
    closed = False
    boom = ValueError("boom")

    async def failing() -> AsyncGenerator[int, None]:
        nonlocal closed
        try:
            yield 1
            raise boom
        finally:
            closed = True

    async with aclosing(guard(failing(), RunScope(CancelToken(), 60_000), errors)) as events:
        assert await anext(events) == 1
        with pytest.raises(ValueError, match="boom") as caught:
            await anext(events)
    assert caught.value is boom
    assert errors.seen == [boom]
    assert closed is True


async def test_a_completed_run_closes_the_inner_generator_and_calls_no_on_error() -> None:
    token = CancelToken()
    errors = Errors()
    closed = False

    async def two() -> AsyncGenerator[int, None]:
        nonlocal closed
        try:
            yield 1
            yield 2
        finally:
            closed = True

    scope = RunScope(token, 60_000)
    async with aclosing(guard(two(), scope, errors)) as events:
        assert [item async for item in events] == [1, 2]
    assert closed is True
    assert errors.seen == []
    # The finished run no longer listens to its token.
    token.cancel()
    drained = asyncio.Event()
    asyncio.get_running_loop().call_soon(drained.set)
    await drained.wait()
    assert scope.reason is None
    assert_task_not_left_cancelled()


async def test_a_consumer_that_stops_early_closes_the_inner_generator_then_reports_it() -> None:
    inner, errors = Inner(CancelToken()), Errors()
    async with aclosing(guard(inner.events(), RunScope(inner.token, 60_000), errors)) as events:
        assert await anext(events) == "first"
    assert inner.closed is True
    assert [type(e) for e in errors.seen] == [GeneratorExit]


async def test_a_consumer_that_stops_after_the_final_item_is_not_reported() -> None:
    inner, errors = Inner(CancelToken()), Errors()
    scope = RunScope(inner.token, 60_000)
    guarded_events = guarded(inner.events(), scope, errors, final=lambda item: item == "first")
    async with aclosing(guarded_events) as events:
        assert await anext(events) == "first"
        inner.token.cancel()  # lands after the final item: nothing raises
        with pytest.raises(StopAsyncIteration):
            await anext(events)
    assert inner.closed is True
    assert errors.seen == []


# --- gather_in_order ------------------------------------------------------------------------------


async def test_gather_returns_results_in_call_order_when_the_second_finishes_first() -> None:
    finished: list[str] = []
    second_done = asyncio.Event()

    async def first() -> str:
        await second_done.wait()
        finished.append("first")
        return "one"

    async def second() -> str:
        finished.append("second")
        second_done.set()
        return "two"

    async with asyncio.timeout(5):
        assert await gather_in_order([first(), second()]) == ["one", "two"]
    assert finished == ["second", "first"]


async def test_gather_of_one_coroutine_returns_its_result() -> None:
    async def only() -> int:
        return 42

    assert await gather_in_order([only()]) == [42]


async def test_the_first_exception_cancels_the_others_and_is_raised_as_itself() -> None:
    boom = KeyError("boom")
    cleaned: list[str] = []

    async def slow(name: str) -> str:
        try:
            await asyncio.sleep(FOREVER)
            return name
        finally:
            cleaned.append(name)

    async def failing() -> str:
        raise boom

    async with asyncio.timeout(5):
        with pytest.raises(KeyError) as caught:
            await gather_in_order([slow("a"), failing(), slow("c")])
    assert caught.value is boom
    assert sorted(cleaned) == ["a", "c"]
    assert_task_not_left_cancelled()


async def test_cancelling_the_caller_cancels_every_child() -> None:
    cancelled: list[str] = []
    started: list[str] = []
    both_started = asyncio.Event()

    async def child(name: str) -> None:
        started.append(name)
        if len(started) == 2:
            both_started.set()
        try:
            await asyncio.sleep(FOREVER)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    caller = asyncio.create_task(gather_in_order([child("a"), child("b")]))
    async with asyncio.timeout(5):
        await both_started.wait()
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
    assert sorted(cancelled) == ["a", "b"]

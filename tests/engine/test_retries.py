"""Retries, backoff, ``Retry-After`` and ``on_error`` against the real stub.

Every scenario runs in both wire styles and through ``run`` and ``stream``.
"""

from __future__ import annotations

import json
import socket
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx
import pytest

from toolnexus import Client, ErrorInfo, Event, LLMError, TextEvent, create_client
from toolnexus.testing import RecordedRequest, Reply, StubLLMServer, reply

from ..running import drive
from .support import client_for

SCHEDULING_SLACK = 0.3
"""Seconds allowed above a documented upper bound for the request to travel and the loop to wake
(a shared, loaded machine can be late by this much)."""


@pytest.fixture
def mode(async_mode: str) -> str:
    """``run`` and ``stream``: this file does not cover ``run_sync``."""
    return async_mode


def timed(stub: StubLLMServer, *replies: Reply) -> list[float]:
    """Answer with ``replies`` in order; returns the list the arrival times are appended to."""
    arrivals: list[float] = []
    queue = deque(replies)

    def handler(_: RecordedRequest) -> Reply:
        arrivals.append(time.perf_counter())
        return queue.popleft()

    stub.handler = handler
    return arrivals


class ErrorSpy:
    """An ``on_error`` classifier that records what it is shown and answers ``decision``."""

    def __init__(self, decision: object = "retry") -> None:
        self.decision = decision
        self.seen: list[ErrorInfo] = []

    def __call__(self, info: ErrorInfo) -> object:
        self.seen.append(info)
        return self.decision


# --- retry then succeed; exhaust ------------------------------------------------------------------


async def test_two_503s_then_success_is_retried_to_done(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.error(503), reply.error(503), reply.text("fine now", usage=(3, 2)))
    async with client_for(stub, style, retries=2) as client:
        result, _ = await drive(client, mode)
    assert result.status == "done"
    assert result.text == "fine now"
    assert result.turns == 1
    assert len(stub.requests) == 3
    assert all(r.json == stub.requests[0].json for r in stub.requests), "attempts differ"


async def test_three_503s_exhaust_two_retries_with_llm_error(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(*[reply.error(503, "overloaded")] * 3, reply.text("never sent"))
    async with client_for(stub, style, retries=2) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert caught.value.status == 503
    assert caught.value.body == "overloaded"
    assert len(stub.requests) == 3


async def test_retries_zero_makes_exactly_one_attempt(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.error(503), reply.text("never sent"))
    async with client_for(stub, style, retries=0) as client:
        with pytest.raises(LLMError):
            await drive(client, mode)
    assert len(stub.requests) == 1


async def test_a_retried_call_emits_one_llm_metric_event(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    stub.enqueue(reply.error(503), reply.error(429), reply.text("ok", usage=(10, 6)))
    async with client_for(stub, style, retries=2, on_metric=metrics.append) as client:
        await drive(client, mode)
    llm = [m for m in metrics if m["event"] == "llm"]
    assert len(llm) == 1
    assert llm[0]["status"] == "ok"
    assert (llm[0]["prompt_tokens"], llm[0]["completion_tokens"]) == (10, 6)


async def test_an_exhausted_call_emits_one_llm_error_event_and_a_run_error(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    stub.enqueue(*[reply.error(500)] * 3)
    async with client_for(stub, style, retries=2, on_metric=metrics.append) as client:
        with pytest.raises(LLMError):
            await drive(client, mode)
    llm = [m for m in metrics if m["event"] == "llm"]
    assert [(m["status"], m["prompt_tokens"], m["completion_tokens"]) for m in llm] == [
        ("error", 0, 0)
    ]
    runs = [m for m in metrics if m["event"] == "run"]
    assert len(runs) == 1
    assert "status" not in runs[0]
    assert "500" in runs[0]["error"]


# --- what is retried ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
async def test_retryable_status_is_retried(
    stub: StubLLMServer, style: str, mode: str, status: int
) -> None:
    stub.enqueue(reply.error(status), reply.text("recovered"))
    async with client_for(stub, style, retries=1) as client:
        result, _ = await drive(client, mode)
    assert result.text == "recovered"
    assert len(stub.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_other_status_is_final(
    stub: StubLLMServer, style: str, mode: str, status: int
) -> None:
    stub.enqueue(reply.error(status, {"error": "nope"}), reply.text("never sent"))
    async with client_for(stub, style, retries=2) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert caught.value.status == status
    assert caught.value.body == '{"error":"nope"}'
    assert len(stub.requests) == 1


async def test_dropped_connection_is_retried(stub: StubLLMServer, style: str, mode: str) -> None:
    stub.enqueue(reply.drop(), reply.text("after the drop"))
    async with client_for(stub, style, retries=1) as client:
        result, _ = await drive(client, mode)
    assert result.text == "after the drop"
    assert len(stub.requests) == 2


async def test_dropped_connections_exhaust_into_llm_error_without_status(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.drop(), reply.drop())
    async with client_for(stub, style, retries=1) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert caught.value.status is None
    assert caught.value.__cause__ is not None
    assert len(stub.requests) == 2


async def test_refused_connection_is_retried_then_raised_with_cause(style: str, mode: str) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spy = ErrorSpy()
    client = create_client(
        f"http://127.0.0.1:{port}",
        style,
        model="test-model",
        api_key="test-key",
        retries=2,
        retry_base_ms=0,
        on_error=spy,
    )
    async with client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert caught.value.status is None
    assert caught.value.__cause__ is not None
    assert [(i.attempt, i.retryable, i.status) for i in spy.seen] == [
        (0, True, None),
        (1, True, None),
        (2, True, None),
    ]
    assert all(i.error is not None for i in spy.seen)


@pytest.fixture
async def httpx_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_injected_httpx_client_retries_drops_and_statuses_alike(
    stub: StubLLMServer, style: str, mode: str, httpx_client: httpx.AsyncClient
) -> None:
    stub.enqueue(reply.drop(), reply.error(503), reply.text("via httpx"))
    async with client_for(stub, style, retries=2, http_client=httpx_client) as client:
        result, _ = await drive(client, mode)
    assert result.text == "via httpx"
    assert len(stub.requests) == 3
    assert not httpx_client.is_closed, "the caller keeps ownership of its client"


async def test_injected_httpx_client_does_not_retry_a_final_status(
    stub: StubLLMServer, style: str, mode: str, httpx_client: httpx.AsyncClient
) -> None:
    stub.enqueue(reply.error(401, "bad key"), reply.text("never sent"))
    async with client_for(stub, style, retries=2, http_client=httpx_client) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert (caught.value.status, caught.value.body) == (401, "bad key")
    assert len(stub.requests) == 1


# --- exponential backoff --------------------------------------------------------------------------


async def test_backoff_gaps_double_from_retry_base_ms(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    arrivals = timed(stub, reply.error(503), reply.error(503), reply.text("ok"))
    async with client_for(stub, style, retries=2, retry_base_ms=100) as client:
        await drive(client, mode)
    assert len(arrivals) == 3
    first, second = arrivals[1] - arrivals[0], arrivals[2] - arrivals[1]
    # base * 2**attempt plus jitter in [0, 100) ms: [100, 200) then [200, 300).
    assert 0.100 <= first < 0.200 + SCHEDULING_SLACK, first
    assert 0.200 <= second < 0.300 + SCHEDULING_SLACK, second


# --- Retry-After ----------------------------------------------------------------------------------


async def test_retry_after_one_second_delays_the_retry_by_at_least_a_second(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    metrics: list[dict[str, Any]] = []
    arrivals = timed(stub, reply.error(429, headers={"Retry-After": "1"}), reply.text("ok"))
    client = client_for(stub, style, retries=1, retry_base_ms=10, on_metric=metrics.append)
    async with client:
        result, _ = await drive(client, mode)
    assert result.text == "ok"
    assert arrivals[1] - arrivals[0] >= 1.0
    (llm,) = [m for m in metrics if m["event"] == "llm"]
    assert llm["ms"] >= 1000.0, "the llm event's ms spans every attempt and wait"


@pytest.mark.parametrize("header", ["Retry-After", "retry-after", "RETRY-AFTER"])
async def test_retry_after_zero_retries_at_once_without_backoff(
    stub: StubLLMServer, style: str, mode: str, header: str
) -> None:
    # With retry_base_ms=1000 the backoff would be >= 1 s, so a fast retry proves the header won.
    arrivals = timed(stub, reply.error(503, headers={header: "0"}), reply.text("ok"))
    async with client_for(stub, style, retries=1, retry_base_ms=1000) as client:
        result, _ = await drive(client, mode)
    assert result.text == "ok"
    assert arrivals[1] - arrivals[0] < 0.5  # the backoff alone would be >= 1 s


@pytest.mark.parametrize("value", ["1.5", "+1", "-1", "", "Wed, 21 Oct 2015 07:28:00 GMT"])
async def test_unusable_retry_after_falls_back_to_backoff(
    stub: StubLLMServer, style: str, mode: str, value: str
) -> None:
    arrivals = timed(stub, reply.error(503, headers={"Retry-After": value}), reply.text("ok"))
    async with client_for(stub, style, retries=1, retry_base_ms=10) as client:
        result, _ = await drive(client, mode)
    assert result.text == "ok"
    assert 0.010 <= arrivals[1] - arrivals[0] < 1.0


async def test_retry_after_is_ignored_on_a_status_that_is_not_retried(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(reply.error(400, headers={"Retry-After": "0"}), reply.text("never sent"))
    async with client_for(stub, style, retries=2) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert caught.value.status == 400
    assert len(stub.requests) == 1


# --- on_error -------------------------------------------------------------------------------------


async def test_on_error_fail_stops_a_retryable_503_after_one_attempt(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    spy = ErrorSpy("fail")
    stub.enqueue(reply.error(503), reply.text("never sent"))
    async with client_for(stub, style, retries=2, on_error=spy) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert caught.value.status == 503
    assert len(stub.requests) == 1
    assert [(i.attempt, i.retryable, i.status) for i in spy.seen] == [(0, True, 503)]
    assert spy.seen[0].error is caught.value


async def test_on_error_retry_on_a_400_makes_retries_plus_one_attempts(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    spy = ErrorSpy("retry")
    stub.enqueue(*[reply.error(400)] * 3, reply.text("never sent"))
    async with client_for(stub, style, retries=2, on_error=spy) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, mode)
    assert caught.value.status == 400
    assert len(stub.requests) == 3
    assert [(i.attempt, i.retryable, i.status) for i in spy.seen] == [
        (0, False, 400),
        (1, False, 400),
        (2, False, 400),
    ]


async def test_on_error_is_called_once_per_failed_attempt_only(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    spy = ErrorSpy("retry")
    stub.enqueue(reply.error(502), reply.drop(), reply.text("ok"))
    async with client_for(stub, style, retries=5, on_error=spy) as client:
        result, _ = await drive(client, mode)
    assert result.text == "ok"
    assert [(i.attempt, i.retryable, i.status) for i in spy.seen] == [
        (0, True, 502),
        (1, True, None),
    ]


@pytest.mark.parametrize("decision", [None, "RETRY", "maybe", True])
async def test_on_error_answer_other_than_retry_counts_as_fail(
    stub: StubLLMServer, style: str, mode: str, decision: object
) -> None:
    stub.enqueue(reply.error(503), reply.text("never sent"))
    async with client_for(stub, style, retries=2, on_error=ErrorSpy(decision)) as client:
        with pytest.raises(LLMError):
            await drive(client, mode)
    assert len(stub.requests) == 1


async def test_async_on_error_is_awaited(stub: StubLLMServer, style: str, mode: str) -> None:
    seen: list[int] = []

    async def on_error(info: ErrorInfo) -> str:
        seen.append(info.attempt)
        return "fail"

    stub.enqueue(reply.error(503), reply.text("never sent"))
    async with client_for(stub, style, retries=2, on_error=on_error) as client:
        with pytest.raises(LLMError):
            await drive(client, mode)
    assert seen == [0]
    assert len(stub.requests) == 1


# --- streams --------------------------------------------------------------------------------------

FIRST_TEXT_EVENT = {"openai": 1, "anthropic": 3}
"""SSE events up to and including the first text delta (anthropic: start, block start, delta)."""


async def test_stream_broken_after_its_first_event_raises_without_retry(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(reply.text("Hello there friend").break_after(1), reply.text("never sent"))
    async with client_for(stub, style, retries=2) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, "stream")
    assert caught.value.status is None
    assert len(stub.requests) == 1


async def test_stream_broken_after_a_text_delta_was_yielded_is_not_retried(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(
        reply.text("Hello there friend").break_after(FIRST_TEXT_EVENT[style]),
        reply.text("never sent"),
    )
    events: list[Event] = []

    async def consume(client: Client) -> None:
        async with aclosing(client.stream("hi")) as stream:
            async for event in stream:
                events.append(event)

    async with client_for(stub, style, retries=2) as client:
        with pytest.raises(LLMError):
            await consume(client)
    assert events == [TextEvent("Hello ")]
    assert len(stub.requests) == 1


async def test_503_before_the_stream_starts_is_retried(stub: StubLLMServer, style: str) -> None:
    stub.enqueue(reply.error(503), reply.text("Hello there"))
    async with client_for(stub, style, retries=1) as client:
        result, events = await drive(client, "stream")
    assert [e.delta for e in events if isinstance(e, TextEvent)] == ["Hello ", "there"]
    assert result.text == "Hello there"
    assert [r.stream for r in stub.requests] == [True, True]


async def test_a_broken_json_body_is_a_network_failure_and_retried(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(reply.text("cut short").break_after(0), reply.text("whole"))
    async with client_for(stub, style, retries=1) as client:
        result, _ = await drive(client, "run")
    assert result.text == "whole"
    assert len(stub.requests) == 2


async def test_stream_that_closes_before_its_first_event_is_retried(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(reply.text("lost").break_after(0), reply.text("second try"))
    async with client_for(stub, style, retries=1) as client:
        result, _ = await drive(client, "stream")
    assert result.text == "second try"
    assert len(stub.requests) == 2


async def test_anthropic_stream_error_event_raises_without_retry(stub: StubLLMServer) -> None:
    event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stub.enqueue(reply.raw_sse([event]), reply.text("never sent"))
    async with client_for(stub, "anthropic", retries=2) as client:
        with pytest.raises(LLMError) as caught:
            await drive(client, "stream")
    assert caught.value.status is None
    assert caught.value.body is not None
    assert json.loads(caught.value.body) == event
    assert len(stub.requests) == 1


async def test_injected_httpx_client_stream_broken_after_its_first_event_is_not_retried(
    stub: StubLLMServer, style: str, httpx_client: httpx.AsyncClient
) -> None:
    stub.enqueue(reply.text("Hello there friend").break_after(1), reply.text("never sent"))
    async with client_for(stub, style, retries=2, http_client=httpx_client) as client:
        with pytest.raises(LLMError):
            await drive(client, "stream")
    assert len(stub.requests) == 1

"""Retry policy: which failures are retried and after how long."""

from __future__ import annotations

import pytest

from toolnexus import ErrorInfo, LLMError, parse_retry_after
from toolnexus.engine.retry import RETRYABLE_STATUSES, RetryPolicy

SAMPLES = 400
ERROR = LLMError("HTTP failure", status=503)


# --- Retry-After ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("2", 2),
        ("0", 0),
        (" 007 ", 7),
        ("\t5\t", 5),
        (" \t 12\t ", 12),
        ("2147483647", 2147483647),
        ("0002147483647", 2147483647),
        ("0" * 5000 + "7", 7),
    ],
)
def test_retry_after_honours_plain_ascii_delay_seconds(value: str, seconds: int) -> None:
    assert parse_retry_after(value) == seconds


@pytest.mark.parametrize(
    "value",
    [
        "+5",
        "-1",
        "1.5",
        "",
        " ",
        None,
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "2147483648",
        "99999999999999999999",
        "\u0663",  # arabic-indic digit three
        "\uff13",  # fullwidth digit three
        "²",
        "1e3",
        "0x10",
        "5 5",
        "5s",
        "\n5",
        "5\r\n",
        "1" * 5000,
    ],
)
def test_retry_after_falls_back_to_backoff_for_anything_else(value: str | None) -> None:
    assert parse_retry_after(value) is None


# --- which failures are retried -------------------------------------------------------------------


def test_retryable_statuses_are_408_409_429_and_every_5xx() -> None:
    assert frozenset({408, 409, 429, *range(500, 600)}) == RETRYABLE_STATUSES
    assert 529 in RETRYABLE_STATUSES  # Anthropic's "overloaded"


async def test_only_the_retryable_statuses_and_network_errors_are_retried() -> None:
    policy = RetryPolicy(retries=2, base_ms=0)
    retried = {
        status
        for status in range(400, 600)
        if await policy.delay(0, status=status, error=ERROR) is not None
    }
    assert retried == {408, 409, 429, *range(500, 600)}
    assert await policy.delay(0, status=None, error=ConnectionResetError()) is not None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_final_statuses_are_not_retried(status: int) -> None:
    assert await RetryPolicy().delay(0, status=status, error=ERROR) is None


async def test_attempts_are_bounded_by_retries() -> None:
    policy = RetryPolicy(retries=2, base_ms=1)
    assert await policy.delay(0, status=503, error=ERROR) is not None
    assert await policy.delay(1, status=503, error=ERROR) is not None
    assert await policy.delay(2, status=503, error=ERROR) is None
    assert await RetryPolicy(retries=0).delay(0, status=None, error=OSError()) is None


# --- how long to wait -----------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt", "low_ms"), [(0, 100), (1, 200), (2, 400), (3, 800)])
async def test_backoff_is_base_times_two_to_the_attempt_plus_under_100ms_jitter(
    attempt: int, low_ms: int
) -> None:
    policy = RetryPolicy(retries=5, base_ms=100)
    delays = []
    for _ in range(SAMPLES):
        delay = await policy.delay(attempt, status=503, error=ERROR)
        assert delay is not None
        delays.append(delay * 1000)
    assert all(low_ms <= d < low_ms + 100 for d in delays), (min(delays), max(delays))
    # The jitter is spread over the window, not a constant.
    assert min(delays) < low_ms + 20
    assert max(delays) > low_ms + 80


async def test_backoff_jitter_applies_to_network_errors_too() -> None:
    policy = RetryPolicy(retries=1, base_ms=10)
    delays = [await policy.delay(0, status=None, error=OSError()) for _ in range(SAMPLES)]
    assert all(d is not None and 0.010 <= d < 0.110 for d in delays)


@pytest.mark.parametrize(("header", "seconds"), [("3", 3.0), ("0", 0.0), (" 1 ", 1.0)])
async def test_retry_after_is_honoured_exactly_without_jitter(header: str, seconds: float) -> None:
    policy = RetryPolicy(retries=2, base_ms=500)
    for attempt in (0, 1):
        for _ in range(20):
            assert await policy.delay(attempt, status=429, error=ERROR, retry_after=header) == (
                seconds
            )


@pytest.mark.parametrize("header", ["1.5", "-1", "soon", "", None, "Wed, 21 Oct 2015 07:28:00 GMT"])
async def test_an_unusable_retry_after_uses_the_backoff_window(header: str | None) -> None:
    policy = RetryPolicy(retries=2, base_ms=100)
    for _ in range(50):
        delay = await policy.delay(1, status=503, error=ERROR, retry_after=header)
        assert delay is not None
        assert 0.2 <= delay < 0.3


async def test_retry_after_is_ignored_for_network_errors() -> None:
    policy = RetryPolicy(retries=2, base_ms=10)
    for _ in range(50):
        delay = await policy.delay(0, status=None, error=OSError(), retry_after="30")
        assert delay is not None
        assert 0.01 <= delay < 0.11


async def test_retry_after_never_extends_the_number_of_attempts() -> None:
    policy = RetryPolicy(retries=1, base_ms=10)
    assert await policy.delay(1, status=503, error=ERROR, retry_after="1") is None


async def test_retry_after_on_a_final_status_does_not_make_it_retryable() -> None:
    assert await RetryPolicy().delay(0, status=400, error=ERROR, retry_after="1") is None


# --- on_error -------------------------------------------------------------------------------------


async def test_on_error_receives_attempt_retryable_status_and_error() -> None:
    seen: list[ErrorInfo] = []

    def classify(info: ErrorInfo) -> str:
        seen.append(info)
        return "retry"

    policy = RetryPolicy(retries=2, base_ms=0, on_error=classify)
    network = ConnectionResetError("reset")
    final = LLMError("bad request", status=400)
    await policy.delay(0, status=503, error=ERROR)
    await policy.delay(1, status=None, error=network)
    await policy.delay(2, status=400, error=final)
    assert seen == [
        ErrorInfo(attempt=0, retryable=True, status=503, error=ERROR),
        ErrorInfo(attempt=1, retryable=True, status=None, error=network),
        ErrorInfo(attempt=2, retryable=False, status=400, error=final),
    ]
    assert seen[1].error is network


async def test_on_error_fail_stops_a_retryable_failure() -> None:
    calls: list[int] = []

    def fail(info: ErrorInfo) -> str:
        calls.append(info.attempt)
        return "fail"

    policy = RetryPolicy(retries=2, on_error=fail)
    assert await policy.delay(0, status=503, error=ERROR) is None
    assert calls == [0]


async def test_on_error_retry_retries_a_400_but_never_beyond_retries() -> None:
    policy = RetryPolicy(retries=2, base_ms=10, on_error=lambda info: "retry")
    bad_request = LLMError("bad", status=400)
    first = await policy.delay(0, status=400, error=bad_request)
    second = await policy.delay(1, status=400, error=bad_request)
    assert first is not None
    assert 0.01 <= first < 0.11
    assert second is not None
    assert 0.02 <= second < 0.12
    assert await policy.delay(2, status=400, error=bad_request) is None


async def test_on_error_is_called_even_for_the_last_permitted_attempt() -> None:
    attempts: list[int] = []

    def record(info: ErrorInfo) -> str:
        attempts.append(info.attempt)
        return "retry"

    policy = RetryPolicy(retries=1, base_ms=0, on_error=record)
    assert await policy.delay(0, status=503, error=ERROR) is not None
    assert await policy.delay(1, status=503, error=ERROR) is None
    assert attempts == [0, 1]


@pytest.mark.parametrize("answer", [None, "RETRY", "Retry", True, 1, "yes", ""])
async def test_any_other_on_error_answer_counts_as_fail(answer: object) -> None:
    policy = RetryPolicy(retries=3, on_error=lambda info: answer)
    assert await policy.delay(0, status=503, error=ERROR) is None
    assert await policy.delay(0, status=None, error=OSError()) is None


async def test_async_on_error_is_awaited() -> None:
    seen: list[ErrorInfo] = []

    async def classify(info: ErrorInfo) -> str:
        seen.append(info)
        return "retry" if info.status == 400 else "fail"

    policy = RetryPolicy(retries=2, base_ms=0, on_error=classify)
    assert await policy.delay(0, status=400, error=ERROR) is not None
    assert await policy.delay(0, status=503, error=ERROR) is None
    assert [info.status for info in seen] == [400, 503]


async def test_on_error_retry_honours_retry_after_of_the_failed_response() -> None:
    policy = RetryPolicy(retries=2, base_ms=500, on_error=lambda info: "retry")
    assert await policy.delay(0, status=400, error=ERROR, retry_after="2") == 2.0


def test_error_info_defaults_status_and_error_to_none() -> None:
    info = ErrorInfo(attempt=0, retryable=True)
    assert (info.attempt, info.retryable, info.status, info.error) == (0, True, None, None)


async def test_a_retry_after_above_the_cap_falls_back_to_the_backoff_delay() -> None:
    policy = RetryPolicy(retries=2, base_ms=1000, max_retry_after_s=60)
    delay = await policy.delay(0, status=429, error=ERROR, retry_after="86400")
    assert delay is not None
    assert 1.0 <= delay < 1.2  # the backoff of attempt 0, not a day


async def test_a_retry_after_up_to_the_cap_is_honoured() -> None:
    policy = RetryPolicy(retries=2, base_ms=1000, max_retry_after_s=60)
    assert await policy.delay(0, status=503, error=ERROR, retry_after="60") == 60.0
    assert await RetryPolicy().delay(0, status=503, error=ERROR, retry_after="61") != 61.0

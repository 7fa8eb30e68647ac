"""Which provider answers are retried end to end, and how long a ``Retry-After`` may park a run."""

from __future__ import annotations

import asyncio

import pytest

from toolnexus import ConfigError, LLMError, create_client
from toolnexus.testing import StubLLMServer, reply

from ..running import MakeClient, drive
from .support import client_for


@pytest.fixture
def mode(async_mode: str) -> str:
    """``run`` and ``stream``."""
    return async_mode


@pytest.mark.parametrize("status", [408, 409, 529, 599])
async def test_timeout_conflict_overloaded_and_every_server_status_are_retried(
    stub: StubLLMServer, style: str, mode: str, status: int
) -> None:
    stub.enqueue(reply.error(status, {"error": "busy"}), reply.text("Recovered."))
    async with client_for(stub, style, retries=1) as client:
        result, _ = await drive(client, mode)
    assert result.text == "Recovered."
    stub.assert_consumed()


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_other_than_408_409_429_are_not_retried(
    stub: StubLLMServer, style: str, mode: str, status: int
) -> None:
    stub.enqueue(reply.error(status, {"error": "no"}))
    async with client_for(stub, style, retries=2) as client:
        with pytest.raises(LLMError) as info:
            await drive(client, mode)
    assert info.value.status == status
    assert len(stub.requests) == 1


async def test_a_retry_after_of_a_day_falls_back_to_the_backoff_delay(
    stub: StubLLMServer, style: str, mode: str
) -> None:
    stub.enqueue(
        reply.error(429, {"error": "slow down"}, headers={"Retry-After": "86400"}),
        reply.text("Done."),
    )
    async with asyncio.timeout(5), client_for(stub, style, retries=1) as client:
        result, _ = await drive(client, mode)
    assert result.text == "Done."


@pytest.mark.parametrize("bad", [-1, "60", True, None])
def test_max_retry_after_s_must_be_a_non_negative_number(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_retry_after_s"):
        create_client("http://127.0.0.1:9", model="m", api_key="k", max_retry_after_s=bad)  # type: ignore[arg-type]


async def test_max_retry_after_s_is_a_create_client_option(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.error(503, "busy", headers={"Retry-After": "2"}),
        reply.text("Done."),
    )
    client = make_client(style, retries=1, retry_base_ms=0, max_retry_after_s=1)
    async with asyncio.timeout(5):
        result = await client.run("hi")  # 2 s is above the cap: no waiting for it
    assert result.text == "Done."

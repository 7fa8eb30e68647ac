"""A failed model call raises the ``LLMError`` subclass that says why, keeping ``status``."""

from __future__ import annotations

import pytest

from toolnexus import (
    AuthenticationError,
    LLMError,
    RateLimitError,
    ServerError,
    StreamError,
)
from toolnexus.testing import StubLLMServer, reply

from ..running import drive
from .support import client_for


@pytest.fixture
def mode(async_mode: str) -> str:
    """``run`` and ``stream``."""
    return async_mode


@pytest.mark.parametrize(
    ("status", "cls"),
    [(429, RateLimitError), (401, AuthenticationError), (529, ServerError), (500, ServerError)],
)
async def test_a_final_status_raises_its_subclass_with_the_status(
    stub: StubLLMServer, style: str, mode: str, status: int, cls: type[LLMError]
) -> None:
    stub.enqueue(reply.error(status, {"error": "no"}))
    async with client_for(stub, style, retries=0) as client:
        with pytest.raises(cls) as info:
            await drive(client, mode)
    assert info.value.status == status
    assert info.value.body == '{"error":"no"}'


async def test_an_error_event_inside_a_stream_raises_stream_error(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(reply.raw_sse([{"type": "error", "error": {"type": "overloaded_error"}}]))
    async with client_for(stub, style, retries=0) as client:
        with pytest.raises(StreamError) as info:
            await drive(client, "stream")
    assert "overloaded_error" in (info.value.body or "")

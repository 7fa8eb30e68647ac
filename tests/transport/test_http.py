"""The HTTP transports across event loops and threads, decoded streams, and client validation."""

from __future__ import annotations

import asyncio
import gc
import gzip
import json
import threading
import weakref
from collections.abc import Iterator

import aiohttp
import httpx
import pytest

from toolnexus import ConfigError, TextEvent, create_client, http_tool
from toolnexus.testing import Reply, StubLLMServer, reply

THREADS = 8
RUNS_PER_THREAD = 20


@pytest.fixture
def answering() -> Iterator[StubLLMServer]:
    """A stub that answers every request with the same short text."""
    with StubLLMServer(handler=lambda _: reply.text("ok")) as server:
        yield server


def test_run_sync_from_many_threads_on_one_client_never_fails(answering: StubLLMServer) -> None:
    client = create_client(answering.url, model="m", api_key="k")
    failures: list[BaseException] = []
    texts: list[str] = []

    def worker() -> None:
        for _ in range(RUNS_PER_THREAD):
            try:
                texts.append(client.run_sync("hi").text)
            except BaseException as exc:
                failures.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert texts == ["ok"] * (THREADS * RUNS_PER_THREAD)


def test_a_client_reused_across_asyncio_run_keeps_no_session_or_loop_of_a_finished_run(
    answering: StubLLMServer,
) -> None:
    client = create_client(answering.url, model="m", api_key="k")
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def one_run() -> str:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return (await client.run("hi")).text

    for _ in range(3):
        assert asyncio.run(one_run()) == "ok"  # an unclosed session would warn (an error here)
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]
    assert answering.in_flight == 0


def test_an_injected_client_used_from_another_loop_is_a_clear_config_error(
    answering: StubLLMServer,
) -> None:
    async def first() -> tuple[object, httpx.AsyncClient]:
        # No kept-alive connection: nothing is left bound to this loop when it closes.
        http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
        client = create_client(answering.url, model="m", api_key="k", http_client=http)
        assert (await client.run("hi")).text == "ok"
        return client, http

    client, http = asyncio.run(first())

    async def second() -> None:
        with pytest.raises(ConfigError, match=r"http_client.*another"):
            await client.run("hi")  # type: ignore[attr-defined]

    asyncio.run(second())
    assert len(answering.requests) == 1
    asyncio.run(http.aclose())


def gzipped_stream() -> Reply:
    events = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "compressed "}}]},
        {"choices": [{"index": 0, "delta": {"content": "reply"}, "finish_reason": "stop"}]},
    ]
    raw = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    body = gzip.compress(raw.encode())
    made = reply.raw_bytes(body, content_type="text/event-stream")
    return made.with_headers({"Content-Encoding": "gzip"})


async def test_a_gzip_encoded_stream_is_decoded_by_an_injected_httpx_client() -> None:
    with StubLLMServer([gzipped_stream()]) as stub:
        async with httpx.AsyncClient() as http:
            client = create_client(stub.url, model="m", api_key="k", http_client=http)
            texts = [e.delta async for e in client.stream("hi") if isinstance(e, TextEvent)]
    assert "".join(texts) == "compressed reply"


async def test_a_gzip_encoded_stream_is_decoded_by_the_default_transport() -> None:
    with StubLLMServer([gzipped_stream()]) as stub:
        async with create_client(stub.url, model="m", api_key="k") as client:
            texts = [e.delta async for e in client.stream("hi") if isinstance(e, TextEvent)]
    assert "".join(texts) == "compressed reply"


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("http://proxy", "builtins.str"),
        (object(), "builtins.object"),
        (httpx.Client(), "httpx.Client"),
    ],
    ids=["str", "object", "sync-httpx"],
)
def test_http_client_of_the_wrong_kind_is_a_config_error_naming_it(
    value: object, named: str
) -> None:
    with pytest.raises(ConfigError, match=rf"http_client.*{named}"):
        create_client("http://127.0.0.1:9", model="m", api_key="k", http_client=value)
    with pytest.raises(ConfigError, match=rf"http_client.*{named}"):
        http_tool(
            name="t",
            description="d",
            url="http://127.0.0.1:9",
            input_schema={"type": "object"},
            http_client=value,
        )
    if isinstance(value, httpx.Client):
        value.close()


async def test_a_closed_http_client_is_a_config_error() -> None:
    session = aiohttp.ClientSession()
    await session.close()
    with pytest.raises(ConfigError, match=r"http_client.*closed"):
        create_client("http://127.0.0.1:9", model="m", api_key="k", http_client=session)

"""Runs of one conversation id within one client never overlap, so no turn is lost."""

from __future__ import annotations

import asyncio
import threading

from toolnexus import create_client
from toolnexus.testing import RecordedRequest, Reply, StubLLMServer, reply

from ..running import MakeClient


def echo_turn_count(request: RecordedRequest) -> Reply:
    messages = (request.json or {}).get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    return reply.text(f"seen {len(users)} user turns").with_delay(0.05)


async def test_concurrent_asks_on_one_id_keep_every_turn(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.handler = echo_turn_count
    client = make_client(style)
    async with asyncio.timeout(10):
        await asyncio.gather(*(client.ask(f"turn {i}", id="shared") for i in range(4)))
    saved = await client.conversation_store.get("shared")
    assert saved is not None
    users = [m["content"] for m in saved if m["role"] == "user"]
    assert sorted(users) == [f"turn {i}" for i in range(4)]
    assert stub.max_in_flight == 1  # one run of the conversation at a time


async def test_runs_of_different_ids_still_run_side_by_side(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.handler = echo_turn_count
    client = make_client(style)
    async with asyncio.timeout(10):
        await asyncio.gather(*(client.ask("hi", id=f"user-{i}") for i in range(4)))
    assert stub.max_in_flight > 1


def test_run_sync_from_several_threads_on_one_id_keeps_every_turn(stub: StubLLMServer) -> None:
    stub.handler = echo_turn_count
    client = create_client(stub.url, model="m", api_key="k")
    threads = [
        threading.Thread(
            target=client.run_sync, args=(f"turn {i}",), kwargs={"conversation_id": "c"}
        )
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    saved = asyncio.run(client.conversation_store.get("c"))
    assert saved is not None
    assert sorted(m["content"] for m in saved if m["role"] == "user") == [
        f"turn {i}" for i in range(4)
    ]

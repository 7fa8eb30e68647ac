"""Many runs against a stub answering a seeded random mix of faults.

Every run must end in ``done`` or raise ``LLMError``; none may hang, leave a task behind or keep
a connection checked out of the pool.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import aiohttp

from toolnexus import (
    Client,
    LLMError,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
)
from toolnexus.testing import RecordedRequest, Reply, StubLLMServer, reply

from ..running import drive

SEED = 20240611
RUNS = 100
POOL = 8
"""Connections the injected pool may open, and runs in flight at once."""
STYLES = ("openai", "anthropic")
MODES = ("run", "stream")


def faulty_reply(rng: random.Random, first_turn: bool) -> Reply:
    """One answer from the mix: successes, retryable statuses, delays, drops, broken bodies."""
    roll = rng.random()
    if roll < 0.22:
        return reply.text("all good", usage=(5, 2))
    if roll < 0.36:
        if first_turn:
            return reply.tool_calls(reply.call("lookup", {"q": "answer"}), usage=(5, 1))
        return reply.text("looked it up")
    if roll < 0.44:
        return reply.error(429, {"error": "slow down"})
    if roll < 0.52:
        return reply.error(429, headers={"Retry-After": "0"})
    if roll < 0.60:
        return reply.error(500, "internal")
    if roll < 0.68:
        return reply.error(503, "overloaded")
    if roll < 0.78:
        return reply.text("eventually").with_delay(rng.uniform(0.001, 0.03))
    if roll < 0.88:
        return reply.drop()
    return reply.text("a longer answer in words").break_after(rng.randint(0, 3))


class FaultyModel:
    """A stub handler: the reply for attempt ``n`` of run ``k`` comes from ``Random((SEED, k,
    n))``, so each run sees the same faults whatever order the runs arrive in."""

    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json["messages"]
        run = messages[0]["content"]
        attempt = self.attempts[run]
        self.attempts[run] += 1
        rng = random.Random(f"{SEED}/{run}/{attempt}")
        return faulty_reply(rng, first_turn=len(messages) == 1)


async def lookup(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    return ToolResult("42")


async def one_run(client: Client, mode: str, prompt: str, toolkit: Toolkit) -> str:
    """``"done"`` or ``"LLMError <status>"``; anything else raised fails the test."""
    try:
        result, _ = await drive(client, mode, toolkit, prompt=prompt)
    except LLMError as exc:
        return f"LLMError {exc.status}"
    assert result.status == "done", f"{prompt}: status {result.status!r}"
    return "done"


async def probe_pool(stub: StubLLMServer, session: aiohttp.ClientSession) -> None:
    """Hold ``POOL`` requests open at once through ``session``: possible only if no connection
    is still checked out of its pool (the stub answers none until all have arrived)."""
    already = len(stub.requests)

    async def barrier(_: RecordedRequest) -> Reply:
        await stub.until_requests(already + POOL, timeout=5)
        return reply.text("probe")

    async def one() -> int:
        body = {"model": "probe", "messages": [{"role": "user", "content": "probe"}]}
        async with session.post(f"{stub.url}/chat/completions", json=body) as resp:
            await resp.read()
            return resp.status

    stub.handler = barrier
    async with asyncio.timeout(10):
        statuses = await asyncio.gather(*(one() for _ in range(POOL)))
    assert statuses == [200] * POOL, "a connection stayed checked out of the pool"


async def test_runs_under_random_faults_end_done_or_llm_error_and_leak_nothing(
    stub: StubLLMServer,
) -> None:
    stub.handler = FaultyModel()
    toolkit = await create_toolkit(
        extra_tools=[Tool("lookup", "Look it up.", {"type": "object"}, "native", lookup)],
        builtins=False,
    )
    connector = aiohttp.TCPConnector(limit=POOL)
    session = aiohttp.ClientSession(connector=connector)
    clients = {
        style: create_client(
            stub.url,
            style,
            model="test-model",
            api_key="test-key",
            retries=2,
            retry_base_ms=5,
            http_client=session,
        )
        for style in STYLES
    }
    gate = asyncio.Semaphore(POOL)
    outcomes: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()

    async def limited(i: int) -> None:
        style, mode = STYLES[i % 2], MODES[(i // 2) % 2]
        async with gate:
            outcome = await one_run(clients[style], mode, f"run {i}", toolkit)
        outcomes[outcome] += 1
        by_kind[f"{style}/{mode}: {outcome}"] += 1

    try:
        async with asyncio.timeout(90), asyncio.TaskGroup() as group:
            for i in range(RUNS):
                group.create_task(limited(i))
        for client in clients.values():
            await client.aclose()
        assert not session.closed, "aclose() closed an injected http_client"
        await probe_pool(stub, session)
    finally:
        for client in clients.values():
            await client.aclose()
        await session.close()
    assert connector.closed

    print(f"\n{RUNS} runs, {len(stub.requests)} requests:", dict(sorted(outcomes.items())))
    print("by style/mode:", dict(sorted(by_kind.items())))
    assert sum(outcomes.values()) == RUNS
    assert outcomes["done"] > 0
    assert len(outcomes) > 1, "the mix should make some runs fail"
    assert stub.max_in_flight <= POOL
    assert asyncio.all_tasks() == {asyncio.current_task()}

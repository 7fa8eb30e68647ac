"""A seeded storm: many runs against a model answering random faults, garbage and cut bodies.

Both styles, ``run`` and ``stream``, with memory in a SQLite store. Every run must either end
``done`` with one of the complete answers the model can give (never a cut-off one) or raise
``LLMError``; nothing hangs and every ``done`` run's transcript is stored.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path
from typing import Any

from toolnexus import LLMError, Tool, ToolContext, Toolkit, ToolResult, create_client
from toolnexus.stores.sqlite import SqliteConversationStore
from toolnexus.testing import RecordedRequest, Reply, StubLLMServer, reply

from ..running import drive

SEED = 1500
RUNS = 80
AT_ONCE = 8
ANSWERS = ("all good", "looked it up", "a longer answer in several words")


def storm_reply(rng: random.Random, first_turn: bool) -> Reply:
    roll = rng.random()
    if roll < 0.25:
        return reply.text(ANSWERS[0], usage=(5, 2))
    if roll < 0.40:
        if first_turn:
            return reply.tool_calls(reply.call("lookup", {"q": "x"}))
        return reply.text(ANSWERS[1])
    if roll < 0.50:
        return reply.error(rng.choice([429, 500, 502, 503]), "busy")
    if roll < 0.58:
        return reply.drop()
    if roll < 0.70:
        return reply.text(ANSWERS[2]).break_after(rng.randint(0, 4))
    if roll < 0.80:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
        kind = rng.choice(["application/json", "text/event-stream", "text/plain"])
        return reply.raw_bytes(junk, content_type=kind)
    if roll < 0.88:
        return reply.raw_bytes(
            b'{"choices": [{"message": {"content": "cut', content_type="application/json"
        )
    if roll < 0.94:
        return reply.raw_sse([{"type": "error", "error": {"message": "overloaded"}}])
    return reply.text(ANSWERS[0]).with_delay(rng.uniform(0.001, 0.02))


class Storm:
    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json["messages"]
        run = next(m["content"] for m in messages if m["role"] == "user")
        attempt = self.attempts[run]
        self.attempts[run] += 1
        first_turn = messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], str)
        return storm_reply(random.Random(f"{SEED}/{run}/{attempt}"), first_turn)


async def lookup(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    return ToolResult("42")


async def storm(tmp_path: Path) -> tuple[Counter[str], list[str]]:
    """Run the storm; the outcomes, and the runs that ended ``done`` with a cut answer."""
    store = SqliteConversationStore(tmp_path / "storm.db")
    toolkit = Toolkit([Tool("lookup", "Look up.", {"type": "object"}, "native", lookup)])
    outcomes: Counter[str] = Counter()
    cut: list[str] = []
    gate = asyncio.Semaphore(AT_ONCE)
    with StubLLMServer(handler=Storm()) as stub:
        clients = {
            style: create_client(
                stub.url, style, model="m", api_key="k", store=store, retries=2, retry_base_ms=1
            )
            for style in ("openai", "anthropic")
        }

        async def one(i: int) -> None:
            style, mode = ("openai", "anthropic")[i % 2], ("run", "stream")[(i // 2) % 2]
            async with gate:
                try:
                    result, _ = await drive(
                        clients[style], mode, toolkit, prompt=f"run {i}", conversation_id=f"c{i}"
                    )
                except LLMError:
                    outcomes["LLMError"] += 1
                    return
            assert result.status == "done"
            assert await store.get(f"c{i}") == result.messages
            if result.text not in ANSWERS:
                cut.append(f"run {i} ({style}/{mode}): {result.text!r}")
            outcomes["done"] += 1

        try:
            async with asyncio.timeout(120), asyncio.TaskGroup() as group:
                for i in range(RUNS):
                    group.create_task(one(i))
        finally:
            for client in clients.values():
                await client.aclose()
            await store.aclose()
    print(f"\nstorm of {RUNS} runs:", dict(outcomes), f"{len(cut)} cut")
    return outcomes, cut


async def test_a_storm_of_faults_ends_every_run_done_and_stored_or_as_llm_error(
    tmp_path: Path,
) -> None:
    outcomes, _ = await storm(tmp_path)
    assert outcomes["done"] > 0
    assert outcomes["LLMError"] > 0
    assert sum(outcomes.values()) == RUNS
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_no_run_in_a_storm_ends_done_with_a_cut_answer(tmp_path: Path) -> None:
    _, cut = await storm(tmp_path)
    assert cut == []

"""Save and get latency of the conversation stores against the real servers on this machine.

Each store keeps ``--conversations`` transcripts (default 200) of ``--messages`` messages
(default 20: a user turn, then alternating assistant tool calls and tool results of a few
hundred characters, and a final answer; about 5 KB of JSON). For each conversation we time one
``save`` and then one ``get`` of the same id, one operation at a time, and print the median and
95th percentile of each, plus of their sum, in milliseconds. A first save and get per store are
left out (connection set-up, table creation).

Stores: in-memory, SQLite (a file in a temporary directory), Redis and PostgreSQL. The servers
come from ``TOOLNEXUS_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``) and
``TOOLNEXUS_TEST_POSTGRES_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``); an
unreachable one is reported and skipped. Everything written goes under a fresh key prefix or
table, removed at the end.

Usage: ``python benchmarks/store_latency.py [--conversations 200] [--messages 20]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from toolnexus.stores import InMemoryConversationStore
from toolnexus.types import JSONObject

REDIS_URL = os.environ.get("TOOLNEXUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_DSN = os.environ.get(
    "TOOLNEXUS_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)


def transcript(n: int, seed: int) -> list[JSONObject]:
    """A chat-completions transcript of ``n`` messages with tool calls, unique per ``seed``."""
    words = "the order ships from the north warehouse once payment clears and stock is counted"
    messages: list[JSONObject] = [
        {"role": "user", "content": f"Conversation {seed}: where is order {seed}? " + words}
    ]
    turn = 0
    while len(messages) < n - 1:
        call_id = f"call_{seed}_{turn}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "lookup_order",
                            "arguments": json.dumps({"order": seed, "step": turn}),
                        },
                    }
                ],
            }
        )
        if len(messages) < n - 1:
            result = {"order": seed, "step": turn, "status": "in transit", "note": words * 3}
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}
            )
        turn += 1
    messages.append({"role": "assistant", "content": f"Order {seed} is on its way. " + words})
    return messages


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(store: Any, prefix: str, conversations: int, messages: int) -> dict[str, Any]:
    data = [transcript(messages, i) for i in range(conversations)]
    await store.save(f"{prefix}warm", data[0])
    await store.get(f"{prefix}warm")
    saves: list[float] = []
    gets: list[float] = []
    for i, convo in enumerate(data):
        key = f"{prefix}{i}"
        started = time.perf_counter()
        await store.save(key, convo)
        saved = time.perf_counter()
        back = await store.get(key)
        got = time.perf_counter()
        assert back == convo, f"conversation {i} did not round-trip"
        saves.append(saved - started)
        gets.append(got - saved)
    both = [s + g for s, g in zip(saves, gets, strict=True)]
    return {
        "bytes": statistics.mean(len(json.dumps(c)) for c in data),
        "save": (statistics.median(saves), percentile(saves, 0.95)),
        "get": (statistics.median(gets), percentile(gets, 0.95)),
        "both": (statistics.median(both), percentile(both, 0.95)),
    }


async def in_memory(n: int, m: int, _: str) -> dict[str, Any]:
    return await measure(InMemoryConversationStore(), "", n, m)


async def sqlite(n: int, m: int, _: str) -> dict[str, Any]:
    from toolnexus.stores import SqliteConversationStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteConversationStore(Path(tmp) / "chats.db")
        try:
            return await measure(store, "", n, m)
        finally:
            await store.aclose()


async def redis(n: int, m: int, tag: str) -> dict[str, Any]:
    from toolnexus.stores import RedisConversationStore

    prefix = f"toolnexus:bench:{tag}:"
    store = RedisConversationStore(REDIS_URL, prefix=prefix)
    try:
        return await measure(store, "", n, m)
    finally:
        for i in range(n):
            await store.delete(str(i))
        await store.delete("warm")
        await store.aclose()


async def postgres(n: int, m: int, tag: str) -> dict[str, Any]:
    import psycopg
    from psycopg import sql

    from toolnexus.stores import PostgresConversationStore

    table = f"toolnexus_bench_{tag}"
    store = PostgresConversationStore(POSTGRES_DSN, table=table)
    try:
        return await measure(store, "", n, m)
    finally:
        await store.aclose()
        async with await psycopg.AsyncConnection.connect(POSTGRES_DSN, autocommit=True) as conn:
            for made in (table, f"{table}_pending"):
                drop = sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(made))
                await conn.execute(drop)


async def main(conversations: int, messages: int) -> None:
    tag = secrets.token_hex(4)
    print(f"{conversations} conversations of {messages} messages; milliseconds, p50 / p95")
    print(f"{'store':<11} {'save':>15} {'get':>15} {'save+get':>15}")
    for name, run in (
        ("in-memory", in_memory),
        ("sqlite", sqlite),
        ("redis", redis),
        ("postgres", postgres),
    ):
        try:
            figures = await run(conversations, messages, tag)
        except Exception as exc:  # an unreachable server: say so and go on
            print(f"{name:<11} skipped: {type(exc).__name__}: {exc}")
            continue
        cells = [
            f"{figures[k][0] * 1e3:6.3f} / {figures[k][1] * 1e3:6.3f}"
            for k in ("save", "get", "both")
        ]
        print(f"{name:<11} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15}")
    print(f"(a transcript is about {figures['bytes'] / 1024:.1f} KB of JSON)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--messages", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.conversations, args.messages))

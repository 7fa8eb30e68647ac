"""A worker process for the store concurrency tests: saves ``count`` ids into one store.

Usage: ``python save_worker.py redis|postgres <url-or-dsn> <prefix-or-table> <worker> <count>``.
Prints ``saved <count>`` when done.
"""

from __future__ import annotations

import asyncio
import sys


async def main(kind: str, target: str, namespace: str, worker: int, count: int) -> None:
    from toolnexus.stores import PostgresConversationStore, RedisConversationStore

    store: RedisConversationStore | PostgresConversationStore
    if kind == "redis":
        store = RedisConversationStore(target, prefix=namespace)
    else:
        store = PostgresConversationStore(target, table=namespace, max_size=4)
    try:
        for start in range(0, count, 25):
            await asyncio.gather(
                *(
                    store.save(f"w{worker}-{n}", [{"role": "user", "content": f"{worker}/{n}"}])
                    for n in range(start, min(start + 25, count))
                )
            )
            await store.save("shared", [{"role": "user", "content": f"worker {worker}"}])
    finally:
        await store.aclose()
    print(f"saved {count}", flush=True)


if __name__ == "__main__":
    kind, target, namespace, worker, count = sys.argv[1:6]
    asyncio.run(main(kind, target, namespace, int(worker), int(count)))

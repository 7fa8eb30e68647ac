"""Answer a conversation's pending approval in a process of its own, given only its id.

Usage::

    python approval_worker.py <db> <stub_url> <style> <conversation_id> <answer_json> [--wait]

Opens the ``SqliteConversationStore`` at ``<db>``, builds the same toolkit as
``resume_worker.py`` and calls ``client.resume(conversation_id, answer, toolkit)``. With
``--wait`` it first prints ``ready`` and waits for a line on stdin, so a test can start two
workers and release them together. Prints ``{"status", "text"}``, or ``{"error", "message"}``
when the resume raises a ``ToolnexusError``; exits 0 either way.
"""

from __future__ import annotations

import asyncio
import json
import sys

from resume_worker import build_toolkit

from toolnexus import Answer, SqliteConversationStore, ToolnexusError, create_client


async def main(argv: list[str]) -> int:
    if len(argv) not in (5, 6) or (len(argv) == 6 and argv[5] != "--wait"):
        print(__doc__, file=sys.stderr)
        return 2
    db, url, style, conversation, answer_json = argv[:5]
    answer = Answer.from_dict(json.loads(answer_json))
    toolkit = await build_toolkit(db)
    store = SqliteConversationStore(db)
    async with create_client(
        url, style, model="test-model", api_key="test-key", store=store
    ) as client:
        if len(argv) == 6:
            print("ready", flush=True)
            await asyncio.to_thread(sys.stdin.readline)
        try:
            result = await client.resume(conversation, answer, toolkit)
        except ToolnexusError as exc:
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
            return 0
        print(json.dumps({"status": result.status, "text": result.text}))
    await store.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))

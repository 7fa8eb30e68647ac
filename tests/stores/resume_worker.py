"""A process that answers a conversation's pending approval through a shared store.

Usage::

    python resume_worker.py halt|resume redis|postgres <url-or-dsn> <prefix-or-table> <calls>

Both build the same in-process model and ``deploy`` tool (each execution with an answer appends
``deploy answered`` to the file ``<calls>``). ``halt`` runs the prompt in conversation
``CONVERSATION`` until ``deploy`` asks for approval and prints the pending request's id.
``resume`` prints ``ready``, waits for a line on stdin (so a test can release several workers
together), calls ``client.resume(CONVERSATION, Answer(<that id>, ok=True), toolkit)`` with the
id read from ``client.pending`` and prints ``{"status", "text"}``, or ``{"error"}`` when the
resume raises a ``ToolnexusError``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from toolnexus import (
    Answer,
    ConversationStore,
    Request,
    ToolContext,
    Toolkit,
    ToolnexusError,
    ToolResult,
    create_in_process_client,
    define_tool,
    pending,
)

CONVERSATION = "deploy \u0000 42"


def make_store(kind: str, target: str, namespace: str) -> Any:
    from toolnexus.stores import PostgresConversationStore, RedisConversationStore

    if kind == "redis":
        return RedisConversationStore(target, prefix=namespace)
    return PostgresConversationStore(target, table=namespace, max_size=2)


def toolkit(calls: Path) -> Toolkit:
    async def deploy(env: str, ctx: ToolContext | None = None) -> ToolResult:
        """Deploy after approval."""
        if ctx is not None and ctx.answer is not None:
            with calls.open("a", encoding="utf-8") as log:
                log.write("deploy answered\n")
            return ToolResult(f"deployed {env}")
        return pending(Request.new("approval", f"deploy {env}? \u0000\ud83d"))

    return Toolkit([define_tool(deploy)])


def generate(request: dict[str, Any]) -> dict[str, Any]:
    last = request["messages"][-1]
    if last["role"] == "user":
        return {"tool_calls": [{"name": "deploy", "arguments": {"env": "prod"}}]}
    return {"content": f"done: {last['content']}"}


def client(store: ConversationStore) -> Any:
    return create_in_process_client(model="local", generate=generate, store=store)


async def main(action: str, kind: str, target: str, namespace: str, calls: str) -> None:
    store = make_store(kind, target, namespace)
    kit = toolkit(Path(calls))
    try:
        async with client(store) as tn:
            if action == "halt":
                result = await tn.run("ship it", kit, conversation_id=CONVERSATION)
                assert result.pending is not None, result
                print(result.pending.id, flush=True)
                return
            request = await tn.pending(CONVERSATION)
            print("ready", flush=True)
            await asyncio.to_thread(sys.stdin.readline)
            assert request is not None
            try:
                done = await tn.resume(CONVERSATION, Answer(request.id, ok=True), kit)
            except ToolnexusError as exc:
                print(json.dumps({"error": type(exc).__name__, "message": str(exc)}), flush=True)
                return
            print(json.dumps({"status": done.status, "text": done.text}), flush=True)
    finally:
        await store.aclose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))

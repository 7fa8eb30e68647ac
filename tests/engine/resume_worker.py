"""Halt or resume a run in a process of its own, for the cross-process resume test.

Usage::

    python resume_worker.py halt   <db> <stub_url> <style>
    python resume_worker.py resume <db> <stub_url> <style> <pending_request_json>

``halt`` runs ``PROMPT`` in the conversation ``CONVERSATION`` of a ``SqliteConversationStore``
at ``<db>`` until a tool suspends, then prints the pending request as JSON. ``resume`` loads the
conversation from the same file, approves the request and prints ``{"status", "text"}``.

Tools: ``record`` completes at once; ``deploy`` suspends until it runs with an answer. Each
execution appends a line to ``<db>.calls`` (``record``, ``deploy`` or ``deploy answered``), so
the test can count executions across both processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from toolnexus import (
    Answer,
    Request,
    SqliteConversationStore,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
    pending,
)

CONVERSATION = "deploy-42"
PROMPT = "Record the release, then deploy it."
APPROVAL = "Approve the production deploy?"


def calls_file(db: str) -> Path:
    """The file each tool execution appends a line to."""
    return Path(f"{db}.calls")


async def build_toolkit(db: str) -> Toolkit:
    log = calls_file(db)

    def note(line: str) -> None:
        with log.open("a", encoding="utf-8") as f:
            f.write(line + "\n")

    async def record(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        note("record")
        return ToolResult("recorded")

    async def deploy(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        if ctx is not None and ctx.answer is not None:
            note("deploy answered")
            by = (ctx.answer.data or {}).get("by")
            return ToolResult(f"deployed to {args.get('env')} (approved by {by})")
        note("deploy")
        return pending(Request.new("approval", APPROVAL, data={"env": args.get("env")}))

    schema = {"type": "object", "properties": {"env": {"type": "string"}}}
    tools = [
        Tool("record", "Record the release.", {"type": "object"}, "native", record),
        Tool("deploy", "Deploy after approval.", schema, "native", deploy),
    ]
    return await create_toolkit(extra_tools=tools, builtins=False)


async def main(argv: list[str]) -> int:
    if (
        len(argv) < 4
        or argv[0] not in ("halt", "resume")
        or (argv[0] == "resume") != (len(argv) == 5)
    ):
        print(__doc__, file=sys.stderr)
        return 2
    command, db, url, style = argv[:4]
    store = SqliteConversationStore(db)
    toolkit = await build_toolkit(db)
    async with create_client(
        url, style, model="test-model", api_key="test-key", store=store
    ) as client:
        if command == "halt":
            result = await client.run(PROMPT, toolkit, conversation_id=CONVERSATION)
            if result.pending is None:
                print(f"expected a pending run, got status {result.status!r}", file=sys.stderr)
                return 1
            print(json.dumps(result.pending.to_dict()))
            return 0
        request = Request.from_dict(json.loads(argv[4]))
        answer = Answer(request.id, ok=True, data={"by": "release-manager"})
        result = await client.ask_with_answer(request, answer, toolkit, id=CONVERSATION)
        print(json.dumps({"status": result.status, "text": result.text}))
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))

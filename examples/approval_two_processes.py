"""An approval that one process asks for and another answers, given only the conversation id.

Process 1 (this script) runs the agent: the ``deploy`` tool needs a human's approval, so the
run halts with ``status == "pending"``; the request is kept in the SQLite store with the
conversation. Process 2 (this script again, ``answer`` mode) opens the same file, looks at
what the conversation waits for with ``client.pending(id)`` and answers with
``client.resume(id, answer, tk)``; the tool then runs with ``ctx.answer`` and the model
finishes. A second ``resume`` of the same request is refused.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from toolnexus import (
    Answer,
    ConfigError,
    Request,
    SqliteConversationStore,
    ToolContext,
    Toolkit,
    create_client,
    pending,
    tool,
)
from toolnexus.testing import StubLLMServer, reply

CONVERSATION = "release-42"


@tool
def deploy(env: str, ctx: ToolContext | None = None) -> object:
    """Deploy the release to an environment (needs approval)."""
    if ctx is None or ctx.answer is None:
        return pending(Request.new("approval", f"Deploy release 42 to {env}?"))
    return f"deployed to {env}, approved by {(ctx.answer.data or {}).get('by')}"


async def ask(url: str, db: str) -> None:
    """Process 1: run the agent until it waits for the approval."""
    store = SqliteConversationStore(db)
    async with create_client(url, model="test-model", api_key="test-key", store=store) as client:
        result = await client.ask("Ship release 42 to prod.", Toolkit([deploy]), id=CONVERSATION)
    await store.aclose()
    assert result.status == "pending"
    assert result.pending is not None
    print(f"waiting: {result.pending.prompt}", file=sys.stderr)


async def answer(url: str, db: str) -> None:
    """Process 2: answer the approval, knowing only the conversation id."""
    store = SqliteConversationStore(db)
    async with create_client(url, model="test-model", api_key="test-key", store=store) as client:
        request = await client.pending(CONVERSATION)
        assert request is not None
        approval = Answer(request.id, ok=True, data={"by": "maya"})
        result = await client.resume(CONVERSATION, approval, Toolkit([deploy]))
        try:
            await client.resume(CONVERSATION, approval, Toolkit([deploy]))
            refused = False
        except ConfigError:  # answered already: nothing to resume
            refused = True
    await store.aclose()
    print(json.dumps({"status": result.status, "text": result.text, "refused": refused}))


async def main() -> None:
    script = [
        reply.tool_calls(reply.call("deploy", {"env": "prod"})),
        reply.text("Release 42 is live in prod."),
    ]
    with tempfile.TemporaryDirectory() as tmp, StubLLMServer(script) as stub:
        db = str(Path(tmp) / "agent.db")
        await ask(stub.url, db)
        second = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, __file__, "answer", stub.url, db],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        deploy_result = stub.requests[-1].json["messages"][-1]["content"]
    outcome = json.loads(second.stdout)
    assert outcome == {"status": "done", "text": "Release 42 is live in prod.", "refused": True}
    assert deploy_result == "deployed to prod, approved by maya"
    print("ok:", outcome["text"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["answer"]:
        asyncio.run(answer(*sys.argv[2:4]))
    else:
        asyncio.run(main())

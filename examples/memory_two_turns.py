"""Two turns that remember each other through ``conversation_id``.

The client's store (in memory by default, one per client) loads the id's transcript before a
run and saves the finished messages after it. Without the id, the second run would start from
an empty transcript and the model would not know what "there" means.
"""

from __future__ import annotations

import asyncio

from toolnexus import create_client, create_toolkit
from toolnexus.testing import StubLLMServer, reply


async def main() -> None:
    script = [
        reply.text("Got it: staging-eu."),
        reply.text("Deploying the current branch to staging-eu."),
    ]
    with StubLLMServer(script) as stub:
        async with (
            await create_toolkit(builtins=False) as tk,
            create_client(stub.url, "openai", model="test-model", api_key="test-key") as client,
        ):
            await client.run("My deploy target is staging-eu.", tk, conversation_id="ops-session-1")
            r = await client.run(
                "Deploy the current branch there.", tk, conversation_id="ops-session-1"
            )
            stored = await client.conversation_store.get("ops-session-1")
        second_request = stub.requests[1].json["messages"]

    # Turn 2 carried turn 1's messages: that is what memory is.
    assert [m["content"] for m in second_request] == [
        "My deploy target is staging-eu.",
        "Got it: staging-eu.",
        "Deploy the current branch there.",
    ], second_request
    assert stored == r.messages
    print(f"ok: {r.text}")


if __name__ == "__main__":
    asyncio.run(main())

"""One conversation per user in a request handler.

The id is an opaque string: namespace it the way the application already does. With the
default in-memory store every live conversation sits in the process heap, which suits a CLI
or a short-lived worker; pass ``store=`` (e.g. ``SqliteConversationStore``) to keep them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from toolnexus import Client, Toolkit, create_client, create_toolkit, tool
from toolnexus.testing import RecordedRequest, StubLLMServer, reply


@tool
def lookup_order(order_id: str) -> str:
    """Where an order is."""
    return f"order {order_id} ships tomorrow"


def model(request: RecordedRequest) -> reply.Reply:
    """A stand-in model: looks up an order when asked, and says how much it remembers."""
    messages = request.json["messages"]
    prompts = [m["content"] for m in messages if m["role"] == "user"]
    if messages[-1]["role"] == "user" and "order" in prompts[-1]:
        return reply.tool_calls(reply.call("lookup_order", {"order_id": prompts[-1].split()[-1]}))
    return reply.text(f"I remember {len(prompts)} message(s) from you.", usage=(10, 5))


async def handle_message(llm: Client, toolkit: Toolkit, user_id: str, text: str) -> dict[str, Any]:
    """One HTTP request, one turn of that user's conversation."""
    r = await llm.run(text, toolkit, conversation_id=f"user:{user_id}")
    return {
        "reply": r.text,
        "tools": [c.name for c in r.tool_calls],
        "tokens": r.usage.total_tokens,
    }


async def main() -> None:
    with StubLLMServer(handler=model) as stub:
        async with (
            await create_toolkit(extra_tools=[lookup_order], builtins=False) as tk,
            create_client(stub.url, "openai", model="test-model", api_key="test-key") as llm,
        ):
            ana_1 = await handle_message(llm, tk, "ana", "Hi, I am Ana.")
            bo_1 = await handle_message(llm, tk, "bo", "Where is my order 42")
            ana_2 = await handle_message(llm, tk, "ana", "Do you remember me?")

    assert ana_1 == {"reply": "I remember 1 message(s) from you.", "tools": [], "tokens": 15}
    assert bo_1["tools"] == ["lookup_order"], bo_1
    assert bo_1["reply"] == "I remember 1 message(s) from you.", bo_1
    assert ana_2["reply"] == "I remember 2 message(s) from you.", ana_2
    print(f"ok: ana={ana_2['reply']!r} bo={bo_1['reply']!r}")


if __name__ == "__main__":
    asyncio.run(main())

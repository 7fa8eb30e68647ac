"""A chat that streams its replies and remembers across restarts (SQLite).

Each turn is ``client.ask(prompt, tk, id=user, on_text=...)``: the reply streams to
``on_text`` as it arrives, and the transcript is saved under ``id`` in a SQLite file. Every
turn here uses a fresh client and store, as a restarted program would, and still continues
the same conversation. For a real terminal chat, read prompts with ``input()`` in a loop,
print each delta with ``on_text=lambda d: print(d, end="", flush=True)``, and point the client
at a provider.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from toolnexus import SqliteConversationStore, Toolkit, create_client, tool
from toolnexus.testing import StubLLMServer, reply


@tool
def remember_city(city: str) -> str:
    """Note the user's home city."""
    return f"noted: {city}"


async def turn(url: str, db: Path, prompt: str) -> str:
    """One chat turn, in a fresh client and store."""
    store = SqliteConversationStore(db)
    streamed: list[str] = []
    async with create_client(url, model="test-model", api_key="test-key", store=store) as client:
        result = await client.ask(
            prompt, Toolkit([remember_city]), id="user-7", on_text=streamed.append
        )
    await store.aclose()
    sys.stderr.write(f"> {prompt}\n{''.join(streamed)}\n")
    assert "".join(streamed) == result.text  # the reply arrived as deltas
    return result.text


async def main() -> None:
    script = [
        reply.tool_calls(reply.call("remember_city", {"city": "Lisbon"})),
        reply.text("Got it, Lisbon."),
        reply.text("You live in Lisbon."),
    ]
    with tempfile.TemporaryDirectory() as tmp, StubLLMServer(script) as stub:
        db = Path(tmp) / "chats.db"
        first = await turn(stub.url, db, "I live in Lisbon.")
        second = await turn(stub.url, db, "Where do I live?")
        sent = stub.requests[-1].json["messages"]

    assert first == "Got it, Lisbon."
    assert second == "You live in Lisbon."
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    print("ok:", second)


if __name__ == "__main__":
    asyncio.run(main())

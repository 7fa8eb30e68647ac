"""A long chat kept under a token limit by the compactor.

``compactor(...)`` is a ``before_llm`` hook: once the transcript measures over ``max_tokens`` it
asks ``summarize`` for a summary of the older part and keeps the recent part verbatim, starting
at a user message so that no tool result is ever cut off from its call. The compacted
transcript is what the conversation store keeps, so the chat stays small however long it gets.
"""

from __future__ import annotations

import asyncio

import toolnexus as tn
from toolnexus.compaction import estimate_tokens
from toolnexus.testing import StubLLMServer, reply

LIMIT = 120


def summarize(older: list[dict[str, object]]) -> str:
    """A real host would ask a model; here, a line naming the days is enough."""
    days = [str(m["content"]).split(":")[0] for m in older if m["role"] == "user"]
    days = [d for d in days if d.startswith("Day")]
    return f"Watering log up to {days[-1] if days else 'the start'}."


async def main() -> None:
    sizes: list[int] = []
    with StubLLMServer() as stub:
        client = tn.create_client(
            stub.url,
            "openai",
            model="stub",
            api_key="test-key",
            hooks={"before_llm": tn.compactor(max_tokens=LIMIT, summarize=summarize)},
        )
        async with client:
            for day in range(1, 13):
                stub.enqueue(reply.text(f"Noted for day {day}."))
                await client.ask(f"Day {day}: I watered the tomatoes.", id="garden")
                sizes.append(estimate_tokens(stub.requests[-1].json["messages"]))
        kept = await client.conversation_store.get("garden") or []

    assert max(sizes) <= LIMIT, sizes
    assert any(str(m["content"]).startswith(tn.SUMMARY_HEADER) for m in kept), kept
    assert kept[-1]["content"] == "Noted for day 12.", kept[-1]
    print(f"ok: 12 days of chat, every request at most {max(sizes)} of {LIMIT} tokens")


if __name__ == "__main__":
    asyncio.run(main())

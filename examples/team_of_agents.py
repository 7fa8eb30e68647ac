"""A lead agent with a team of two sub-agents (a researcher and a writer) on a scripted model.

The lead hands work out with the ``task`` tool; each teammate runs on a fresh transcript with
its own soul and budget, and only its final text comes back to the lead. The model here is the
test kit's ``StubLLMServer`` answering by whose system prompt it sees, so the example runs
anywhere; point ``llm`` at a real endpoint to use a real model.
"""

from __future__ import annotations

import asyncio

from toolnexus.agents import Budget, agent
from toolnexus.testing import StubLLMServer, reply


def model(request: object) -> object:
    """Plays every role: the lead delegates twice, the teammates answer at once."""
    messages = request.json["messages"]  # type: ignore[attr-defined]
    soul = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if soul.startswith("You research"):
        return reply.text("Tides follow the moon's pull; two highs a day.", usage=(40, 12))
    if soul.startswith("You write"):
        return reply.text("The sea breathes twice a day, led by the moon.", usage=(30, 10))
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return reply.tool_calls(
            reply.call("task", {"agent": "researcher", "prompt": "Why are there tides?"}),
            usage=(50, 8),
        )
    if len(results) == 1:
        return reply.tool_calls(
            reply.call("task", {"agent": "writer", "prompt": f"One line from: {results[0]}"}),
            usage=(60, 8),
        )
    return reply.text(results[-1], usage=(70, 9))


async def main() -> None:
    researcher = agent("researcher", does="finds facts", soul="You research carefully.")
    writer = agent("writer", does="writes one vivid line", soul="You write vividly.")
    lead = agent(
        "lead",
        does="plans and delegates",
        soul="You lead a small team. Delegate with the task tool.",
        team=[researcher, writer],
        budget=Budget(max_turns=5, max_children=4, max_concurrent=2),
    )
    with StubLLMServer(handler=model) as stub:
        llm = {"base_url": stub.url, "style": "openai", "model": "stub", "api_key": "test-key"}
        result = await lead.run("Explain tides in one line.", llm=llm)

    assert result.status == "done", result
    assert result.text == "The sea breathes twice a day, led by the moon.", result.text
    assert result.turns == 3, result.turns
    assert result.total_tokens == (58 + 68 + 79) + 52 + 40, result.total_tokens
    print(f"ok: {result.text} ({result.turns} turns, {result.total_tokens} tokens in all)")


if __name__ == "__main__":
    asyncio.run(main())

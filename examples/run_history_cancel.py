"""Continuing a transcript with ``history=``, and passing a ``CancelToken``.

``history=first.messages`` continues the same conversation (what ``conversation()`` and
``conversation_id=`` build on). A ``CancelToken`` lets another thread stop the run with
``token.cancel()``; ``cancel=None`` behaves exactly like leaving it out.
"""

from __future__ import annotations

import asyncio

from toolnexus import CancelToken, create_client, create_toolkit
from toolnexus.testing import StubLLMServer, reply


async def main() -> None:
    script = [
        reply.text("First answer.", usage=(5, 3)),
        reply.text("Second answer, remembering the first.", usage=(5, 3)),
    ]
    with StubLLMServer(script) as stub:
        async with (
            await create_toolkit(builtins=False) as tk,
            create_client(
                stub.url, "openai", model="test-model", api_key="test-key", max_turns=5
            ) as client,
        ):
            first = await client.run("What's 2+2?", tk)
            assert first.text == "First answer.", first.text

            # Unused here: a real caller would call cancel.cancel() from another thread.
            cancel = CancelToken()
            second = await client.run("And double it?", tk, history=first.messages, cancel=cancel)
        hits = len(stub.requests)

    assert second.text == "Second answer, remembering the first.", second.text
    assert len(second.messages) > len(first.messages), "history should grow"
    assert second.model == "test-model", second.model
    assert hits == 2, hits
    print(f"ok: {first.text} | {second.text}")


if __name__ == "__main__":
    asyncio.run(main())

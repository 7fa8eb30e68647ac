"""The smallest useful run: one prompt, no tools.

A local ``StubLLMServer`` stands in for an OpenAI-style endpoint, so this runs without a
network or a real key. Against a real provider, pass its base URL and leave ``api_key`` out
(it is then read from ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import asyncio

from toolnexus import create_client, create_toolkit
from toolnexus.testing import StubLLMServer, reply


async def main() -> None:
    script = [reply.text("Chennai is warm today.", usage=(10, 6))]
    with StubLLMServer(script) as stub:
        async with (
            await create_toolkit(builtins=False) as tk,
            create_client(stub.url, "openai", model="test-model", api_key="test-key") as client,
        ):
            res = await client.run("What's the weather in Chennai?", tk)

    assert res.status == "done", res.status
    assert res.text == "Chennai is warm today.", res.text
    assert res.turns == 1, res.turns
    assert res.usage.total_tokens == 16, res.usage
    print(f"ok: {res.text}")


if __name__ == "__main__":
    asyncio.run(main())

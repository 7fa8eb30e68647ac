"""One agent, four wire formats: openai, anthropic, responses and gemini.

The same toolkit and the same scripted replies run through a client of each style; the stub
answers each in its own format (chat completions, messages, the Responses API, Gemini's
``generateContent``). The run streams, so the tool call's arguments show up piece by piece as
``ToolCallDeltaEvent``s before the call runs. The transcript is in each API's own shape.
"""

from __future__ import annotations

import asyncio
import json

import toolnexus as tn
from toolnexus.testing import StubLLMServer, reply

STYLES = ("openai", "anthropic", "responses", "gemini")


@tn.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


async def one_style(stub: StubLLMServer, style: str) -> str:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}), usage=(10, 6)),
        reply.text("It is sunny in Chennai.", usage=(20, 5)),
    )
    pieces: list[str] = []
    async with tn.create_client(stub.url, style, model="test-model", api_key="test-key") as client:
        async for event in client.stream("Weather in Chennai?", tn.Toolkit([get_weather])):
            if isinstance(event, tn.ToolCallDeltaEvent):
                pieces.append(event.delta)
            elif isinstance(event, tn.ToolCallEvent):
                assert json.loads("".join(pieces)) == event.args, (pieces, event.args)
            elif isinstance(event, tn.DoneEvent):
                result = event.result
    assert result.text == "It is sunny in Chennai.", result.text
    assert result.usage.total_tokens == 41, result.usage
    shape = sorted(result.messages[1])  # the model's first reply, in the style's own format
    return f"{style}: {len(pieces)} argument pieces, reply keys {shape}"


async def main() -> None:
    with StubLLMServer() as stub:
        lines = [await one_style(stub, style) for style in STYLES]
        paths = sorted({r.path for r in stub.requests})
    print(f"ok: one agent over {len(STYLES)} wire styles ({', '.join(paths)})")
    for line in lines:
        print(" ", line)


if __name__ == "__main__":
    asyncio.run(main())

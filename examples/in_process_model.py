"""A model running in this process, streaming token by token and calling a tool.

``create_in_process_client`` takes a ``generate`` function instead of an endpoint. Here it is
a tiny rule-based "model" written as an async generator: on a question about a city it asks for
the weather tool; once the tool result is in the transcript it streams its answer word by word,
the way llama.cpp bindings or an ONNX model would hand out tokens. The loop, hooks, memory and
metrics are the same as with a hosted model.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from toolnexus import DoneEvent, TextEvent, ToolCallEvent, create_in_process_client, create_toolkit
from toolnexus import tool as as_tool


@as_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny and 31 degrees in {city}"


async def generate(request: dict[str, Any]) -> AsyncIterator[Any]:
    """Ask for the weather once, then stream an answer built from the tool's result."""
    last = request["messages"][-1]
    if last["role"] == "user":
        city = last["content"].rstrip("?").split()[-1]
        yield {"tool_calls": [{"name": "get_weather", "arguments": {"city": city}}]}
        return
    report = last["content"]
    for word in f"It is {report}.".split(" "):
        await asyncio.sleep(0)  # a real model computes here
        yield word + " "
    yield {"usage": {"prompt_tokens": len(json.dumps(request["messages"])), "completion_tokens": 7}}


async def main() -> None:
    client = create_in_process_client(model="tiny-local", generate=generate)
    deltas: list[str] = []
    calls: list[str] = []
    async with await create_toolkit(extra_tools=[get_weather], builtins=False) as tk:
        async for event in client.stream("What is the weather in Chennai?", tk):
            if isinstance(event, TextEvent):
                deltas.append(event.delta)
            elif isinstance(event, ToolCallEvent):
                calls.append(f"{event.name}({json.dumps(event.args)})")
            elif isinstance(event, DoneEvent):
                result = event.result

    assert calls == ['get_weather({"city": "Chennai"})'], calls
    assert len(deltas) == 8, deltas
    assert result.text == "It is sunny and 31 degrees in Chennai. ", result.text
    assert result.turns == 2, result.turns
    print(f"ok: {calls[0]} -> streamed {len(deltas)} deltas -> {result.text.strip()}")


if __name__ == "__main__":
    asyncio.run(main())

"""A tool call in the loop: the model asks for a tool, the loop runs it and feeds the result
back, and a second round trip produces the answer. ``RunResult.tool_calls`` records it all."""

from __future__ import annotations

import asyncio

from toolnexus import create_client, create_toolkit, define_tool
from toolnexus.testing import StubLLMServer, reply


def current_weather(city: str) -> str:
    return f"sunny in {city}"


weather = define_tool(
    current_weather,
    name="get_weather",
    description="Current weather for a city",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


async def main() -> None:
    script = [
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"})),
        reply.text("It is sunny in Chennai."),
    ]
    with StubLLMServer(script) as stub:
        async with (
            await create_toolkit(extra_tools=[weather], builtins=False) as tk,
            create_client(stub.url, "openai", model="test-model", api_key="test-key") as client,
        ):
            res = await client.run("What's the weather in Chennai?", tk)

    assert res.tool_call_count == 1, res.tool_call_count
    call = res.tool_calls[0]
    assert call.name == "get_weather", call.name
    assert call.args == {"city": "Chennai"}, call.args
    assert call.output == "sunny in Chennai", call.output
    assert res.turns == 2, res.turns
    assert res.text == "It is sunny in Chennai.", res.text
    print(f"ok: {call.name} -> {call.output} -> {res.text}")
    print(res.status, "in", res.turns, "turns")
    for c in res.tool_calls:
        print("  ", c.name, "->", "ERROR" if c.is_error else "ok")


if __name__ == "__main__":
    asyncio.run(main())

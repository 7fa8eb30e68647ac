"""Quickstart: a Python tool and an HTTP tool in one toolkit, and a client that uses them.

To talk to a real provider instead of the local stub, replace the client line with e.g.
``create_client("https://api.openai.com/v1", model="gpt-4.1")`` (the key is read from
``OPENAI_API_KEY``) and point ``http_tool`` at a real endpoint.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from toolnexus import create_client, create_toolkit, http_tool, tool
from toolnexus.testing import StubLLMServer, reply


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def start_time_service() -> web.AppRunner:
    """A tiny local HTTP endpoint standing in for a real API: GET /time/{city}."""

    async def local_time(request: web.Request) -> web.Response:
        return web.Response(text=f"It is 09:30 in {request.match_info['city']}.")

    app = web.Application()
    app.router.add_get("/time/{city}", local_time)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def main() -> None:
    service = await start_time_service()
    port = service.addresses[0][1]
    city_time = http_tool(
        name="city_time",
        description="Local time in a city",
        url=f"http://127.0.0.1:{port}/time/{{city}}",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    script = [
        reply.tool_calls(
            reply.call("add", {"a": 2, "b": 3}), reply.call("city_time", {"city": "Chennai"})
        ),
        reply.text("2 + 3 = 5, and it is 09:30 in Chennai."),
    ]
    try:
        with StubLLMServer(script) as stub:
            async with (
                await create_toolkit(extra_tools=[add, city_time], builtins=False) as tk,
                create_client(stub.url, model="test-model", api_key="test-key") as client,
            ):
                result = await client.run("What is 2 + 3, and what time is it in Chennai?", tk)
                print("ok:", result.text)
                print(tk.to_openai())
    finally:
        await service.cleanup()

    assert [c.output for c in result.tool_calls] == ["5", "It is 09:30 in Chennai."]


if __name__ == "__main__":
    asyncio.run(main())

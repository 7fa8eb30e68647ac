"""Watching a run as it happens with ``on_event``.

``run`` reports every event except text deltas (use ``stream`` for those): ``usage`` after each
round trip, ``tool_call`` before a call runs, ``tool_result`` after it, ``pending`` when a tool
waits on the host, and ``done`` last with the same ``RunResult`` that ``run`` returns.
"""

from __future__ import annotations

import asyncio

from toolnexus import (
    DoneEvent,
    Event,
    PendingEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
    create_client,
    create_toolkit,
    tool,
)
from toolnexus.testing import StubLLMServer, reply


@tool
def run_build(target: str) -> str:
    """Build a target and report the outcome."""
    if target == "web":
        raise RuntimeError("2 tests failed")
    return f"{target} built"


async def main() -> None:
    script = [
        reply.tool_calls(reply.call("run_build", {"target": "web"}), usage=(40, 12)),
        reply.tool_calls(reply.call("run_build", {"target": "api"}), usage=(60, 10)),
        reply.text("web fails two tests; api builds.", usage=(80, 9)),
    ]
    lines: list[str] = []
    kinds: list[str] = []

    def on_event(ev: Event) -> None:
        kinds.append(ev.type)
        match ev:
            case ToolCallEvent():
                lines.append(f"-> {ev.name} {ev.args}")
            case ToolResultEvent():
                lines.append(f"<- {ev.name} {'ERROR' if ev.is_error else 'ok'}")
            case PendingEvent():
                lines.append(f"!! waiting on {ev.request.prompt}")
            case UsageEvent() | TextEvent():
                pass
            case DoneEvent():
                lines.append(f"== {ev.result.status}")

    with StubLLMServer(script) as stub:
        async with (
            await create_toolkit(extra_tools=[run_build], builtins=False) as tk,
            create_client(stub.url, "openai", model="test-model", api_key="test-key") as client,
        ):
            res = await client.run("Check the build and fix it", tk, on_event=on_event)

    assert kinds == ["usage", "tool_call", "tool_result"] * 2 + ["usage", "done"], kinds
    assert lines == [
        "-> run_build {'target': 'web'}",
        "<- run_build ERROR",
        "-> run_build {'target': 'api'}",
        "<- run_build ok",
        "== done",
    ], lines
    assert res.usage.total_tokens == 211, res.usage
    print(f"ok: {len(kinds)} events, {res.tool_call_count} tool calls")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())

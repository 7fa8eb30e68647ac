"""Hooks: observe and change each model call and tool call.

- ``before_llm`` sees the messages and tools before each model call (here it hides a tool
  on later turns by returning a replacement ``tools`` list);
- ``after_llm`` sees each raw response (here: a token tally);
- ``before_tool`` may rewrite a call's arguments (``{"args": ...}``), or skip the tool by
  returning ``{"result": ToolResult(...)}`` (here: refuse ``delete_file`` outside ``/tmp``);
- ``after_tool`` may replace a result with ``{"result": ...}`` (here: mask an e-mail address).
Hooks may be plain functions or coroutines.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from toolnexus import Hooks, Toolkit, ToolResult, create_client, tool
from toolnexus.testing import StubLLMServer, reply

seen_turns: list[int] = []


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def lookup_user(name: str) -> str:
    """Look up a user's contact details."""
    return f"{name}: maya@example.com"


def before_llm(ctx: dict[str, Any]) -> dict[str, Any] | None:
    seen_turns.append(ctx["turn"])
    if ctx["turn"] > 0:  # after the first turn, no more deletions are offered
        tools = [t for t in ctx["tools"] if "delete_file" not in str(t)]
        return {"tools": tools}
    return None


def before_tool(ctx: dict[str, Any]) -> dict[str, Any] | None:
    if ctx["name"] == "delete_file" and not str(ctx["args"].get("path", "")).startswith("/tmp/"):
        refused = ToolResult("refused: only files under /tmp/ may be deleted", is_error=True)
        return {"result": refused}
    return None


async def after_tool(ctx: dict[str, Any]) -> dict[str, Any] | None:
    result: ToolResult = ctx["result"]
    masked = re.sub(r"[\w.]+@[\w.]+", "<email>", result.output)
    if masked == result.output:
        return None
    return {"result": ToolResult(masked, result.is_error, result.metadata)}


async def main() -> None:
    script = [
        reply.tool_calls(
            reply.call("delete_file", {"path": "/etc/passwd"}),
            reply.call("lookup_user", {"name": "maya"}),
        ),
        reply.text("I could not delete that file; Maya's address is on record."),
    ]
    hooks = Hooks(before_llm=before_llm, before_tool=before_tool, after_tool=after_tool)
    with StubLLMServer(script) as stub:
        async with create_client(
            stub.url, model="test-model", api_key="test-key", hooks=hooks
        ) as client:
            result = await client.run(
                "Clean up and find Maya.", Toolkit([delete_file, lookup_user])
            )
        second_tools = [t["function"]["name"] for t in stub.requests[1].json.get("tools", [])]

    outputs = [(c.name, c.output, c.is_error) for c in result.tool_calls]
    assert outputs == [
        ("delete_file", "refused: only files under /tmp/ may be deleted", True),
        ("lookup_user", "maya: <email>", False),
    ]
    assert seen_turns == [0, 1]
    assert second_tools == ["lookup_user"]
    print("ok:", result.text)


if __name__ == "__main__":
    asyncio.run(main())

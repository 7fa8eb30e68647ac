"""The full call shape: an explicit history, a turn limit, and a pending outcome.

``deploy`` needs a login, so it returns ``pending(...)``. With no ``wait_for`` configured the
run stops cleanly with ``status="pending"`` and the request in ``res.pending``; the transcript
holds every call up to and including the one that parked. Usage is summed over the turns.
"""

from __future__ import annotations

import asyncio

from toolnexus import Request, ToolResult, create_client, create_toolkit, pending, tool
from toolnexus.testing import StubLLMServer, reply


@tool
def current_branch() -> str:
    """The branch checked out in the deploy workspace."""
    return "release/1.4"


@tool
def deploy(env: str) -> ToolResult:
    """Deploy the current branch to an environment."""
    login = Request.new(
        "authorization", f"Log in to deploy to {env}", url="https://auth.test/login"
    )
    return pending(login)


async def main() -> None:
    script = [
        reply.tool_calls(reply.call("current_branch"), usage=(1500, 200)),
        reply.tool_calls(reply.call("deploy", {"env": "staging"}), usage=(1620, 212)),
    ]
    # An explicit history always wins over the client's store.
    history = [
        {"role": "user", "content": "The branch is release/1.4"},
        {"role": "assistant", "content": "Noted."},
    ]
    with StubLLMServer(script) as stub:
        async with (
            await create_toolkit(extra_tools=[current_branch, deploy], builtins=False) as tk,
            create_client(
                stub.url, "anthropic", model="claude-test", api_key="test-key", max_turns=6
            ) as client,
        ):
            res = await client.run("Deploy to staging", tk, history=history)

    match res.status:
        case "done":
            summary = res.text
        case "incomplete":
            summary = f"hit the turn limit: {res.limit}"
        case "pending":
            assert res.pending is not None
            summary = f"parked on: {res.pending.kind} {res.pending.prompt} {res.pending.url}"

    assert res.status == "pending", res.status
    assert res.pending is not None
    assert res.pending.kind == "authorization", res.pending
    assert res.text == "Log in to deploy to staging", res.text
    assert res.messages[:2] == history
    placeholder = res.messages[-1]["content"][0]
    assert placeholder["type"] == "tool_result", placeholder
    assert placeholder["is_error"] is True, placeholder
    usage = res.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3120, 412, 3532)
    print(f"ok: {summary}")
    print(usage)


if __name__ == "__main__":
    asyncio.run(main())

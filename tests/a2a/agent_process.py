"""A toolnexus agent served over A2A in its own process, for the two-process tests.

``python -m tests.a2a.agent_process LLM_URL``: serves a toolkit with the skill ``paint`` and
the suspending tool ``pick_colour`` on a free port, its model at ``LLM_URL``; prints the
server URL on one stdout line, then serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import sys

import toolnexus as tn


def pick_colour_tool() -> tn.Tool:
    @tn.tool
    def pick_colour(ctx: tn.ToolContext) -> tn.ToolResult:
        """Ask which colour to use."""
        if ctx.answer is None:
            return tn.pending(tn.Request.new("input", "Which colour?"))
        return tn.ToolResult(f"colour: {(ctx.answer.data or {}).get('answers')}")

    return pick_colour


async def main(llm_url: str) -> None:
    skills = [tn.SkillDef(name="paint", content="Paint things.", description="Paints things.")]
    client = tn.create_client(llm_url, model="remote-model", api_key="remote-key")
    async with await tn.create_toolkit(
        skills=skills, builtins=False, extra_tools=[pick_colour_tool()]
    ) as tk:
        handle = await tk.serve("127.0.0.1:0", client=client, a2a={"name": "Paint Shop"})
        print(handle.url, flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the test closes our stdin
        await handle.aclose()
    await client.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

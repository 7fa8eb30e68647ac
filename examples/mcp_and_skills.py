"""An agent with an MCP server and a skills folder, loaded strictly.

The MCP config starts the bundled stdio MCP server (tools ``echo``, ``add``, ...) under the
name ``tools``; in an ``mcp.json`` file it would read::

    {"mcpServers": {"tools": {"command": "python",
                              "args": ["-m", "toolnexus.testing.mcp_server"]}}}

The ``examples/skills`` folder holds one skill. The model (here the local stub) loads the skill,
then calls an MCP tool, then answers. Against a real provider, replace the client line with
e.g. ``create_client("https://api.anthropic.com", "anthropic", model="claude-sonnet-4-5")``.

``strict=True`` makes a server that fails to start, or a broken ``SKILL.md``, an error instead
of a warning; ``logging.INFO`` shows each MCP server connecting and ready.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from toolnexus import create_client, create_toolkit
from toolnexus.testing import StubLLMServer, mcp_server_command, reply

HERE = Path(__file__).resolve().parent


async def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    script = [
        reply.tool_calls(reply.call("skill", {"name": "release-notes"})),
        reply.tool_calls(reply.call("tools_add", {"a": 40, "b": 2})),
        reply.text("Release 42 is out."),
    ]
    with StubLLMServer(script) as stub:
        async with (
            await create_toolkit(
                mcp_config={
                    "mcpServers": {"tools": {"command": mcp_server_command(), "timeout": 60_000}}
                },
                skills_dir=HERE / "skills",
                builtins=False,
                strict=True,
            ) as tk,
            create_client(stub.url, "anthropic", model="test-model", api_key="test-key") as client,
        ):
            assert tk.mcp_status() == {"tools": "connected"}
            assert "release-notes" in tk.skills_prompt()  # the system prompt lists the skill
            result = await client.run("Write the notes for release 42.", tk)
            system = stub.requests[0].json["system"]

    skill_output, add_output = (call.output for call in result.tool_calls)
    assert "Group the changes under Features" in skill_output
    assert add_output == "42"
    assert "release-notes" in system
    print("ok:", result.text)


if __name__ == "__main__":
    asyncio.run(main())

"""Ask a person before an MCP tool that says it is destructive runs.

MCP servers describe their tools with annotations: ``readOnlyHint``, ``destructiveHint`` and
others, kept on each ``Tool`` as ``tool.annotations`` (``originalName`` and ``server`` too). A
``before_tool`` hook reads them: a call to a tool annotated ``destructiveHint: true`` is
suspended with a ``Request`` of kind ``approval`` instead of running. The run's ``wait_for``
(here a function standing in for a person) answers; an approved call then runs once, a refused
one gives the model ``declined/expired: ...``. Without ``wait_for`` the run would halt as
``pending`` and could be resumed later (see ``approval_two_processes.py``).

The bundled fixture MCP server plays the server: ``echo`` is read-only, ``delete`` is
destructive. The model (a local stub) echoes, then deletes a draft and the production data.
"""

from __future__ import annotations

import asyncio
from typing import Any

from toolnexus import (
    Answer,
    Hooks,
    Request,
    Toolkit,
    create_client,
    create_toolkit,
    pending,
)
from toolnexus.testing import StubLLMServer, mcp_server_command, reply

asked: list[str] = []


def approval_hook(tk: Toolkit) -> Hooks:
    """A ``before_tool`` hook that suspends calls to tools annotated as destructive."""

    def before_tool(ctx: dict[str, Any]) -> dict[str, Any] | None:
        tool = tk.get(ctx["name"])
        hints = (tool.annotations if tool is not None else None) or {}
        if hints.get("destructiveHint") is not True:
            return None
        request = Request.new(
            "approval",
            f"Allow {hints.get('originalName', ctx['name'])} with {ctx['args']}?",
            data={"tool": ctx["name"], "args": ctx["args"]},
        )
        return {"result": pending(request)}

    return Hooks(before_tool=before_tool)


def person(request: Request) -> Answer:
    """Approve deleting drafts, refuse anything else."""
    asked.append(request.prompt)
    name = str((request.data or {}).get("args", {}).get("name", ""))
    if name.startswith("draft"):
        return Answer(request.id, ok=True, data={"approved_by": "maya"})
    return Answer(request.id, ok=False, reason="declined")


async def main() -> None:
    script = [
        reply.tool_calls(reply.call("files_echo", {"text": "checking"})),
        reply.tool_calls(
            reply.call("files_delete", {"name": "draft-7"}),
            reply.call("files_delete", {"name": "production"}),
        ),
        reply.text("Deleted the draft; deleting production was refused."),
    ]
    config = {"mcpServers": {"files": {"command": mcp_server_command()}}}
    with StubLLMServer(script) as stub:
        async with await create_toolkit(mcp_config=config, builtins=False) as tk:
            delete = tk.get("files_delete")
            assert delete is not None
            assert delete.annotations is not None
            assert delete.annotations["destructiveHint"] is True
            client = create_client(
                stub.url, model="stub", api_key="k", hooks=approval_hook(tk), wait_for=person
            )
            result = await client.run("Tidy up the files.", tk)

    outputs = [(call.name, call.args.get("name"), call.output) for call in result.tool_calls]
    assert outputs == [
        ("files_echo", None, "checking"),
        ("files_delete", "draft-7", "deleted draft-7"),
        ("files_delete", "production", f"declined/expired: {asked[1]}"),
    ], outputs
    assert asked == [
        "Allow delete with {'name': 'draft-7'}?",
        "Allow delete with {'name': 'production'}?",
    ]
    print(f"ok: {len(asked)} approvals asked, 1 granted; {result.text}")


if __name__ == "__main__":
    asyncio.run(main())

"""``list_mcp_tools``, the elicitation bridge and lazy SDK loading."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolnexus import Answer, CancelToken, Request, RunCancelled, create_toolkit
from toolnexus.testing import mcp_server_command
from toolnexus.tools.mcp import McpInventory, ToolInfo, list_mcp_tools

from .helpers import wait_for_file, wait_gone

FORM_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


async def test_list_mcp_tools_reports_unfiltered_tools_and_every_status(tmp_path: Path) -> None:
    pid_file = tmp_path / "a.pid"
    config = {
        "mcpServers": {
            "a b": {
                "command": mcp_server_command("--pid-file", str(pid_file)),
                "tools": {"echo": True},
            },
            "off": {"command": ["x"], "disabled": True},
            "broken": {"command": ["/nonexistent/server"]},
        }
    }
    inventory = await list_mcp_tools(config)
    assert isinstance(inventory, McpInventory)
    assert inventory.status == {"a b": "connected", "off": "disabled", "broken": "failed"}
    assert list(inventory.tools) == ["a b"]
    infos = inventory.tools["a b"]
    assert [i.name for i in infos] == [
        "echo",
        "add",
        "fail",
        "structured",
        "sleep",
        "pid",
        "ask",
        "delete",
    ]
    echo = infos[0]
    assert isinstance(echo, ToolInfo)
    assert echo.description == "Return the text unchanged."
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["required"] == ["text"]
    assert infos[2].input_schema["properties"] == {}
    await wait_gone(int(pid_file.read_text()))


async def test_list_mcp_tools_reads_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"servers": {"s": {"command": mcp_server_command("--pages", "2")}}}))
    inventory = await list_mcp_tools(path)
    assert inventory.status == {"s": "connected"}
    assert len(inventory.tools["s"]) == 8


async def test_list_mcp_tools_honours_a_cancel_token(tmp_path: Path) -> None:
    pid_file = tmp_path / "h.pid"
    config = {"h": {"command": mcp_server_command("--hang", "--pid-file", str(pid_file))}}
    token = CancelToken()
    listing = asyncio.create_task(list_mcp_tools(config, cancel=token))
    pid = int(await wait_for_file(pid_file))
    token.cancel()
    with pytest.raises(RunCancelled):
        await listing
    await wait_gone(pid)


def ask_config() -> dict[str, object]:
    return {"mcpServers": {"s": {"command": mcp_server_command()}}}


async def test_a_form_elicitation_reaches_wait_for_and_an_ok_answer_accepts() -> None:
    seen: list[Request] = []

    def wait_for(request: Request) -> Answer:
        seen.append(request)
        return Answer(request.id, ok=True, data={"name": "Ada"})

    async with await create_toolkit(mcp_config=ask_config(), wait_for=wait_for) as tk:
        result = await tk.execute("s_ask", {})
    assert json.loads(result.output) == {"action": "accept", "content": {"name": "Ada"}}
    (request,) = seen
    assert (request.kind, request.prompt, request.url) == ("input", "What is your name?", None)
    assert request.data == {"schema": FORM_SCHEMA}


@pytest.mark.parametrize(
    ("answer", "action"),
    [
        (Answer("x", ok=False, reason="declined"), "decline"),
        (Answer("x", ok=False, reason="expired"), "cancel"),
        (Answer("x", ok=False), "cancel"),
        (None, "cancel"),
    ],
)
async def test_a_declined_answer_declines_and_anything_else_cancels(
    answer: Answer | None, action: str
) -> None:
    async def wait_for(request: Request) -> Answer | None:
        return answer

    async with await create_toolkit(mcp_config=ask_config(), wait_for=wait_for) as tk:
        result = await tk.execute("s_ask", {})
    assert json.loads(result.output) == {"action": action, "content": None}


async def test_an_ok_answer_without_data_accepts_with_an_empty_object() -> None:
    async with await create_toolkit(
        mcp_config=ask_config(), wait_for=lambda r: Answer(r.id, ok=True)
    ) as tk:
        result = await tk.execute("s_ask", {})
    assert json.loads(result.output) == {"action": "accept", "content": {}}


async def test_a_url_elicitation_becomes_an_authorization_request() -> None:
    seen: list[Request] = []

    def wait_for(request: Request) -> Answer:
        seen.append(request)
        return Answer(request.id, ok=True)

    async with await create_toolkit(mcp_config=ask_config(), wait_for=wait_for) as tk:
        result = await tk.execute("s_ask", {"mode": "url"})
    assert json.loads(result.output) == {"action": "accept", "content": None}
    (request,) = seen
    assert (request.kind, request.prompt, request.url) == (
        "authorization",
        "Please sign in",
        "https://example.test/login",
    )


async def test_without_wait_for_the_elicitation_capability_is_not_advertised() -> None:
    async with await create_toolkit(mcp_config=ask_config()) as tk:
        result = await tk.execute("s_ask", {})
    assert (result.output, result.is_error) == ("elicitation not supported", False)


def test_importing_toolnexus_and_the_mcp_modules_does_not_load_the_sdk() -> None:
    code = (
        "import sys, toolnexus, toolnexus.tools.mcp, toolnexus.tools.mcp.source\n"
        "from toolnexus.testing import mcp_server_command\n"
        "mcp_server_command('--hang')\n"
        "loaded = sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))\n"
        "print(loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_mcp_server_command_runs_the_bundled_fixture_with_this_interpreter() -> None:
    assert mcp_server_command("--pages", "2") == [
        sys.executable,
        "-m",
        "toolnexus.testing.mcp_server",
        "--pages",
        "2",
    ]

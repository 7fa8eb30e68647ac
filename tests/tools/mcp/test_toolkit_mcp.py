"""MCP tools inside a toolkit: order, collisions, ``disable_tools`` and the ``builtins`` key."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from toolnexus import ConfigError, create_toolkit, define_tool
from toolnexus.testing import mcp_server_command


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def my_srv_echo(text: str) -> str:
    """A local tool whose name collides with the MCP echo tool."""
    return "local"


def config() -> dict[str, object]:
    return {"mcpServers": {"my srv": {"command": mcp_server_command(), "tools": {"pid": False}}}}


async def test_mcp_tools_come_before_extra_tools_and_the_first_of_a_name_wins(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    extra = [define_tool(shout), define_tool(my_srv_echo)]
    async with await create_toolkit(mcp_config=config(), extra_tools=extra, builtins=False) as tk:
        names = [t.name for t in tk.tools()]
        assert names == [
            "my_srv_echo",
            "my_srv_add",
            "my_srv_fail",
            "my_srv_structured",
            "my_srv_sleep",
            "my_srv_ask",
            "my_srv_delete",
            "shout",
        ]
        echo = tk.get("my_srv_echo")
        assert echo is not None
        assert echo.source == "mcp"
        assert (await tk.execute("my_srv_echo", {"text": "remote"})).output == "remote"
    assert any("my_srv_echo" in m and "duplicate" in m for m in caplog.messages)


async def test_disable_tools_removes_an_mcp_tool_by_its_final_name() -> None:
    async with await create_toolkit(
        mcp_config=config(), builtins=False, disable_tools=["my_srv_echo", "bash"]
    ) as tk:
        names = [t.name for t in tk.tools()]
        assert "my_srv_echo" not in names
        assert "my_srv_add" in names
        assert "bash" not in names
        assert (
            await tk.execute("my_srv_echo", {"text": "x"})
        ).output == "Unknown tool: my_srv_echo"


async def test_a_config_file_builtins_false_turns_the_builtins_off(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"builtins": False, "mcpServers": {}}))
    async with await create_toolkit(mcp_config=path) as tk:
        assert [t for t in tk.tools() if t.source == "builtin"] == []
        assert tk.mcp_status() == {}


async def test_a_config_file_with_a_malformed_builtins_value_is_a_config_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"builtins": "off", "mcpServers": {}}))
    with pytest.raises(ConfigError, match="builtins"):
        await create_toolkit(mcp_config=path)


async def test_a_failing_server_never_makes_create_toolkit_raise() -> None:
    bad = {"mcpServers": {"x": {"url": "http://127.0.0.1:9/mcp", "timeout": 2000}}}
    async with await create_toolkit(mcp_config=bad, builtins=False) as tk:
        assert tk.mcp_status() == {"x": "failed"}
        assert tk.tools() == []

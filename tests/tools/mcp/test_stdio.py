"""Stdio MCP servers through ``McpSource`` and ``create_toolkit``."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ToolContext, create_toolkit
from toolnexus.testing import mcp_server_command
from toolnexus.tools.mcp import load_mcp_config
from toolnexus.tools.mcp.source import McpSource

from .helpers import alive, python_script, wait_for_file, wait_gone

FIXTURE_TOOLS = ["echo", "add", "fail", "structured", "sleep", "pid", "ask", "delete"]


def servers(**entries: dict[str, Any]) -> dict[str, Any]:
    """An mcp.json of these servers alone (no built-in tools beside theirs)."""
    return {"mcpServers": entries, "builtins": False}


def fixture(*flags: str, **extra: Any) -> dict[str, Any]:
    return {"command": mcp_server_command(*flags), **extra}


async def test_a_stdio_server_yields_prefixed_tools_that_round_trip() -> None:
    async with await create_toolkit(mcp_config=servers(**{"my srv": fixture()})) as tk:
        echo = tk.get("my_srv_echo")
        assert echo is not None
        assert echo.source == "mcp"
        assert echo.description == "Return the text unchanged."
        assert echo.input_schema["type"] == "object"
        assert echo.input_schema["properties"]["text"]["type"] == "string"
        assert echo.input_schema["required"] == ["text"]
        assert [t.name for t in tk.tools()] == [f"my_srv_{n}" for n in FIXTURE_TOOLS]
        result = await tk.execute("my_srv_echo", {"text": "héllo"})
        assert (result.output, result.is_error, result.metadata) == (
            "héllo",
            False,
            {"server": "my srv"},
        )
        assert tk.mcp_status() == {"my srv": "connected"}


async def test_the_listed_schema_reaches_the_tool_unchanged() -> None:
    from toolnexus.tools.mcp import list_mcp_tools

    config = servers(s=fixture())
    inventory = await list_mcp_tools(config)
    listed = {info.name: info.input_schema for info in inventory.tools["s"]}
    async with await create_toolkit(mcp_config=config) as tk:
        for name in FIXTURE_TOOLS:
            tool = tk.get(f"s_{name}")
            assert tool is not None
            assert tool.input_schema == listed[name]
    assert listed["echo"]["title"] == "echoArguments"  # the server's own keys survive


async def test_results_map_errors_structured_content_and_text_with_server_metadata() -> None:
    async with await create_toolkit(mcp_config=servers(fx=fixture())) as tk:
        failed = await tk.execute("fx_fail", {})
        structured = await tk.execute("fx_structured", {})
        added = await tk.execute("fx_add", {"a": 2, "b": 3})
    assert failed.is_error
    assert "the fail tool failed" in failed.output
    assert (structured.output, structured.is_error) == ('{"answer":42,"unit":"none"}', False)
    assert (added.output, added.is_error) == ("5", False)
    for result in (failed, structured, added):
        assert result.metadata == {"server": "fx"}


async def test_disabled_servers_are_never_started(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    spawn = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    config = servers(
        a={"command": spawn, "disabled": True},
        b={"command": spawn, "enabled": False},
        c={"env": {"X": "1"}},
    )
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"a": "disabled", "b": "disabled", "c": "failed"}
        assert tk.tools() == []
    assert not marker.exists()


async def test_a_bad_command_fails_alone_and_the_good_server_still_loads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    config = servers(bad={"command": ["/nonexistent/mcp-server"]}, good=fixture())
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"bad": "failed", "good": "connected"}
        assert [t.name for t in tk.tools()] == [f"good_{n}" for n in FIXTURE_TOOLS]
    messages = [r.getMessage() for r in caplog.records if r.name == "toolnexus"]
    assert any(m.startswith('MCP server "bad" failed: ') for m in messages)
    assert not any('"good"' in m for m in messages)


async def test_a_server_that_never_answers_initialize_fails_within_its_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    started = time.monotonic()
    tk = await create_toolkit(mcp_config=servers(hung=fixture("--hang", timeout=500)))
    elapsed = time.monotonic() - started
    await tk.aclose()
    assert tk.mcp_status() == {"hung": "failed"}
    assert elapsed < 5.0  # bounded by the budget, not by the server
    assert 'MCP server "hung" failed: initialize timed out after 500 ms' in caplog.messages


STUBBORN = """
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
time.sleep(120)  # never reads stdin, never answers
"""


async def test_a_hung_server_that_ignores_its_stdin_does_not_hold_up_the_build(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "stubborn.pid"
    command = [*python_script(tmp_path / "stubborn.py", STUBBORN), str(pid_file)]
    started = time.monotonic()
    tk = await create_toolkit(mcp_config=servers(s={"command": command, "timeout": 500}))
    elapsed = time.monotonic() - started
    assert tk.mcp_status() == {"s": "failed"}
    assert elapsed < 5.0  # bounded by the budget, not by the server
    pid = int(await wait_for_file(pid_file))
    await tk.aclose()
    await wait_gone(pid)


async def test_a_server_that_dies_after_initialize_fails_while_listing() -> None:
    async with await create_toolkit(
        mcp_config=servers(dies=fixture("--die-after-initialize"), ok=fixture())
    ) as tk:
        assert tk.mcp_status() == {"dies": "failed", "ok": "connected"}


async def test_tools_spread_over_three_pages_are_all_listed() -> None:
    async with await create_toolkit(mcp_config=servers(p=fixture("--pages", "3"))) as tk:
        assert [t.name for t in tk.tools()] == [f"p_{n}" for n in FIXTURE_TOOLS]


async def test_a_repeated_cursor_fails_the_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    async with await create_toolkit(
        mcp_config=servers(loop=fixture("--pages", "3", "--repeat-cursor"))
    ) as tk:
        assert tk.mcp_status() == {"loop": "failed"}
        assert tk.tools() == []
    assert any("repeated the cursor" in m for m in caplog.messages)


@pytest.mark.parametrize(
    ("toggles", "expected"),
    [
        ({"echo": True}, ["echo"]),
        ({"echo": False}, [n for n in FIXTURE_TOOLS if n != "echo"]),
    ],
)
async def test_the_per_server_tools_filter_selects_by_original_name(
    toggles: dict[str, bool], expected: list[str]
) -> None:
    config = servers(f=fixture(tools=toggles))
    async with await create_toolkit(mcp_config=config) as tk:
        assert [t.name for t in tk.tools()] == [f"f_{n}" for n in expected]


async def test_close_leaves_no_child_process_and_a_second_close_is_harmless() -> None:
    tk = await create_toolkit(mcp_config=servers(a=fixture(), b=fixture()))
    pids = [int((await tk.execute(f"{s}_pid", {})).output) for s in ("a", "b")]
    assert all(alive(pid) for pid in pids)
    await tk.aclose()
    for pid in pids:
        await wait_gone(pid)
    await tk.aclose()


async def test_the_source_closes_servers_that_failed_to_load(tmp_path: Path) -> None:
    pid_file = tmp_path / "hung.pid"
    source = await McpSource.connect(
        load_mcp_config(servers(h=fixture("--hang", "--pid-file", str(pid_file), timeout=300)))
    )
    pid = int(await wait_for_file(pid_file))
    await source.close()
    await wait_gone(pid)
    assert source.status() == {"h": "failed"}


async def test_calls_over_one_session_run_concurrently() -> None:
    async with await create_toolkit(mcp_config=servers(c=fixture())) as tk:
        started = time.monotonic()
        results = await asyncio.gather(
            *(tk.execute("c_sleep", {"seconds": 1.0}) for _ in range(5)),
            *(tk.execute("c_echo", {"text": str(i)}) for i in range(5)),
        )
        elapsed = time.monotonic() - started
    assert [r.output for r in results] == ["slept"] * 5 + ["0", "1", "2", "3", "4"]
    assert elapsed < 4.0  # one after another would take 5 s


async def test_a_call_is_bounded_by_the_server_timeout() -> None:
    # The budget also covers the server's start-up (importing the SDK can take many seconds on
    # a loaded machine), so it is generous; the call must still end long before its sleep.
    async with await create_toolkit(mcp_config=servers(t=fixture(timeout=15000))) as tk:
        assert tk.mcp_status() == {"t": "connected"}
        started = time.monotonic()
        slow = await tk.execute("t_sleep", {"seconds": 120})
        assert time.monotonic() - started < 60
        assert slow.is_error
        assert slow.output == 'MCP server "t": call timed out after 15000 ms'
        assert slow.metadata == {"server": "t"}
        assert (await tk.execute("t_echo", {"text": "still here"})).output == "still here"


async def test_a_call_is_bounded_by_the_context_timeout_when_it_is_shorter() -> None:
    async with await create_toolkit(mcp_config=servers(t=fixture())) as tk:
        started = time.monotonic()
        slow = await tk.execute("t_sleep", {"seconds": 30}, ToolContext(timeout=0.3))
        assert time.monotonic() - started < 3
        assert slow.is_error
        assert slow.output


async def test_with_inherit_env_the_host_environment_and_env_reach_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_INHERITED", "from-parent")
    script = tmp_path / "env_check.py"
    script.write_text(
        "import os, runpy, sys\n"
        "with open('seen.txt', 'w') as f:\n"
        "    f.write(os.environ['MCP_TEST_INHERITED'] + ',' + os.environ['MCP_TEST_EXTRA'])\n"
        "sys.argv = ['mcp_server']\n"
        "runpy.run_module('toolnexus.testing.mcp_server', run_name='__main__')\n"
    )
    config = servers(
        e={
            "command": [sys.executable, str(script)],
            "cwd": str(tmp_path),
            "env": {"MCP_TEST_EXTRA": "x"},
            "inheritEnv": True,
        }
    )
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"e": "connected"}
    assert (tmp_path / "seen.txt").read_text() == "from-parent,x"


SLOW_START = """
import json, sys, time
time.sleep(1.0)  # a slow start-up, the part that connecting concurrently overlaps
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "slow", "version": "1"},
        }
    else:
        result = {"tools": [{"name": "noop", "inputSchema": {"type": "object"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


async def test_five_servers_load_concurrently(tmp_path: Path) -> None:
    command = python_script(tmp_path / "slow.py", SLOW_START)
    started = time.monotonic()
    tk = await create_toolkit(mcp_config=servers(one={"command": command}), builtins=False)
    single = time.monotonic() - started
    await tk.aclose()
    config = servers(**{f"s{i}": {"command": command} for i in range(5)})
    started = time.monotonic()
    tk = await create_toolkit(mcp_config=config, builtins=False)
    five = time.monotonic() - started
    await tk.aclose()
    assert list(tk.mcp_status().values()) == ["connected"] * 5
    assert [t.name for t in tk.tools()] == [f"s{i}_noop" for i in range(5)]
    assert single >= 1.0
    assert five < 3 * single  # one after another would take five times as long


async def test_five_fixture_servers_load_together() -> None:
    config = servers(**{f"s{i}": fixture() for i in range(5)})
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        assert list(tk.mcp_status().values()) == ["connected"] * 5
        assert [t.name for t in tk.tools()][:: len(FIXTURE_TOOLS)] == [
            f"s{i}_echo" for i in range(5)
        ]

"""Cancellation during load, closing mid-call, and reconnecting after a lost session."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Answer, CancelToken, Request, RunCancelled, create_toolkit
from toolnexus.testing import mcp_server_command

from .helpers import python_script, wait_for_file, wait_gone


def hung_servers(tmp_path: Path, count: int) -> tuple[dict[str, Any], list[Path]]:
    """Servers that start (writing their pid) but never finish ``initialize``."""
    pid_files = [tmp_path / f"hung{i}.pid" for i in range(count)]
    config = {
        "mcpServers": {
            f"hung{i}": {
                "command": mcp_server_command("--hang", "--pid-file", str(path)),
                "timeout": 60_000,
            }
            for i, path in enumerate(pid_files)
        }
    }
    return config, pid_files


def no_scope_errors(caplog: pytest.LogCaptureFixture) -> None:
    """No error was logged anywhere, and nothing mentions an anyio cancel scope."""
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not [r for r in caplog.records if "cancel scope" in r.getMessage()]


async def test_a_cancel_token_fired_from_another_thread_aborts_the_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config, pid_files = hung_servers(tmp_path, 2)
    config["mcpServers"]["good"] = {"command": mcp_server_command()}
    token = CancelToken()
    load = asyncio.create_task(create_toolkit(mcp_config=config, builtins=False, cancel=token))
    pids = [int(await wait_for_file(path)) for path in pid_files]
    threading.Thread(target=token.cancel).start()
    async with asyncio.timeout(10):
        with pytest.raises(RunCancelled):
            await load
    for pid in pids:
        await wait_gone(pid)
    no_scope_errors(caplog)


async def test_an_already_cancelled_token_starts_nothing(tmp_path: Path) -> None:
    config, pid_files = hung_servers(tmp_path, 1)
    token = CancelToken()
    token.cancel()
    with pytest.raises(RunCancelled):
        await create_toolkit(mcp_config=config, builtins=False, cancel=token)
    assert not pid_files[0].exists()


async def test_cancelling_the_loading_task_closes_every_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config, pid_files = hung_servers(tmp_path, 2)
    load = asyncio.create_task(create_toolkit(mcp_config=config, builtins=False))
    pids = [int(await wait_for_file(path)) for path in pid_files]
    load.cancel()
    async with asyncio.timeout(10):
        with pytest.raises(asyncio.CancelledError):
            await load
    for pid in pids:
        await wait_gone(pid)
    no_scope_errors(caplog)


async def test_closing_from_another_task_ends_an_in_flight_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked = asyncio.Event()

    async def wait_for(request: Request) -> Answer:
        asked.set()
        await asyncio.Event().wait()  # never answers: the call stays in flight
        raise AssertionError("unreachable")

    config = {"mcpServers": {"s": {"command": mcp_server_command()}}}
    tk = await create_toolkit(mcp_config=config, builtins=False, wait_for=wait_for)
    pid = int((await tk.execute("s_pid", {})).output)
    call = asyncio.create_task(tk.execute("s_ask", {}))
    async with asyncio.timeout(10):
        await asked.wait()
        await asyncio.create_task(tk.aclose())
        result = await call
    assert result.is_error
    assert result.metadata == {"server": "s"}
    assert "closed" in result.output
    await wait_gone(pid)
    no_scope_errors(caplog)


async def test_a_killed_stdio_server_is_restarted_by_the_next_call() -> None:
    config = {"mcpServers": {"s": {"command": mcp_server_command()}}}
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        first = int((await tk.execute("s_pid", {})).output)
        os.kill(first, signal.SIGKILL)
        await wait_gone(first)
        echoed = await tk.execute("s_echo", {"text": "back"})
        assert (echoed.output, echoed.is_error) == ("back", False)
        second = int((await tk.execute("s_pid", {})).output)
        assert second != first
        assert tk.mcp_status() == {"s": "connected"}
    await wait_gone(second)


ONCE = """
import os, sys
marker = sys.argv[1]
if os.path.exists(marker):
    sys.exit(1)
open(marker, "w").close()
os.execv(sys.executable, [sys.executable, "-m", "toolnexus.testing.mcp_server"])
"""


async def test_a_server_that_cannot_be_restarted_fails_with_an_error_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    command = [*python_script(tmp_path / "once.py", ONCE), str(tmp_path / "started")]
    config = {"mcpServers": {"once": {"command": command, "timeout": 10_000}}}
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        pid = int((await tk.execute("once_pid", {})).output)
        os.kill(pid, signal.SIGKILL)
        await wait_gone(pid)
        result = await tk.execute("once_echo", {"text": "x"})
        assert result.is_error
        assert 'MCP server "once"' in result.output
        assert result.metadata == {"server": "once"}
        assert tk.mcp_status() == {"once": "failed"}
    assert any(m.startswith('MCP server "once" failed: ') for m in caplog.messages)


async def test_concurrent_calls_after_a_crash_share_one_restart() -> None:
    config = {"mcpServers": {"s": {"command": mcp_server_command()}}}
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        first = int((await tk.execute("s_pid", {})).output)
        os.kill(first, signal.SIGKILL)
        await wait_gone(first)
        results = await asyncio.gather(*(tk.execute("s_pid", {}) for _ in range(4)))
        pids = {int(r.output) for r in results}
        assert len(pids) == 1
        assert first not in pids


async def test_a_tool_call_cancelled_by_its_caller_propagates_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    asked = asyncio.Event()

    async def wait_for(request: Request) -> Answer:
        asked.set()
        await asyncio.Event().wait()  # the call stays in flight until it is cancelled
        raise AssertionError("unreachable")

    config = {"mcpServers": {"s": {"command": mcp_server_command()}}}
    async with await create_toolkit(mcp_config=config, builtins=False, wait_for=wait_for) as tk:
        call = asyncio.create_task(tk.execute("s_ask", {}))
        async with asyncio.timeout(10):
            await asked.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        assert (await tk.execute("s_echo", {"text": "ok"})).output == "ok"
        assert tk.mcp_status() == {"s": "connected"}
    no_scope_errors(caplog)

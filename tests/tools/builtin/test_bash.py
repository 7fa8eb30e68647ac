"""The ``bash`` built-in: results, exit codes, the time limit, the output cap, and that nothing
a call starts outlives it (timeout, cancellation, toolkit close, or a plain exit)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from toolnexus import (
    CancelToken,
    RunCancelled,
    Tool,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.tools.builtin import BuiltinScope, builtin_tools

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and process groups")

BOUND = 10.0
"""Seconds within which every call here must come back (the commands themselves sleep longer)."""


def bash(scope: BuiltinScope | None = None) -> Tool:
    return next(t for t in builtin_tools(scope) if t.name == "bash")


async def call(args: dict[str, Any], ctx: ToolContext | None = None, **scope: Any) -> ToolResult:
    async with asyncio.timeout(BOUND):
        return await bash(BuiltinScope(**scope)).execute(args, ctx)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped counts as dead)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.is_dir():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def gone(pid: int) -> bool:
    """Whether ``pid`` is dead, allowing a few seconds for the kill to land."""
    async with asyncio.timeout(5):
        while alive(pid):
            await asyncio.sleep(0.02)
    return True


async def pid_in(path: Path) -> int:
    """The pid a command wrote to ``path``, once it is there."""
    async with asyncio.timeout(BOUND):
        while not path.exists() or not path.read_text().strip():
            await asyncio.sleep(0.01)
    return int(path.read_text())


def background_sleeper(pidfile: Path) -> str:
    """A command whose background child records its pid and sleeps far past any test bound."""
    return f"sh -c 'echo $$ > {pidfile}; exec sleep 300' & wait"


# --- results --------------------------------------------------------------------------------------


async def test_a_successful_command_returns_its_output_and_exit_code_zero() -> None:
    result = await call({"command": "echo hi"})

    assert (result.output, result.is_error) == ("hi\n", False)
    assert result.metadata == {"exitCode": 0}


async def test_a_failing_command_is_an_error_naming_its_exit_code() -> None:
    result = await call({"command": "echo oops; exit 3"})

    assert result.is_error
    assert result.output == "oops\n\nbash: command exited with code 3"
    assert result.metadata == {"exitCode": 3}


async def test_stdout_and_stderr_are_interleaved_in_order() -> None:
    result = await call({"command": "echo one; echo two >&2; echo three"})

    assert result.output == "one\ntwo\nthree\n"


async def test_a_command_past_its_timeout_is_killed_and_reported() -> None:
    result = await call({"command": "echo started; sleep 30", "timeout": 200})

    assert result.is_error
    assert result.output.startswith("bash: command timed out after 200ms")
    assert "started" in result.output
    assert result.metadata is not None
    assert result.metadata["timedOut"] is True


async def test_standard_input_is_closed_so_a_reading_command_returns_at_once() -> None:
    result = await call({"command": "cat; read line || echo no input"})

    assert (result.output, result.is_error) == ("no input\n", False)


async def test_long_output_keeps_its_tail_and_says_truncated() -> None:
    result = await call({"command": "seq 1 200000"})

    assert not result.is_error
    assert result.metadata == {"exitCode": 0, "truncated": True}
    assert "truncated" in result.output.splitlines()[0]
    assert result.output.endswith("\n199999\n200000\n")
    assert "\n1000\n" not in result.output
    assert len(result.output) < 100_100


async def test_a_runaway_command_is_cut_off_with_a_bounded_output() -> None:
    result = await call({"command": "yes flood", "timeout": 300})

    assert result.output.startswith("bash: command timed out after 300ms\n[output truncated: ")
    assert set(result.output.splitlines()[3:-1]) == {"flood"}  # the tail, whole lines
    assert len(result.output) < 100_200
    assert result.metadata is not None
    assert result.metadata["truncated"] is True


async def test_output_within_the_cap_is_returned_whole() -> None:
    result = await call({"command": "head -c 100000 /dev/zero | tr '\\0' a"})

    assert result.output == "a" * 100_000
    assert result.metadata == {"exitCode": 0}


async def test_invalid_utf8_output_is_replaced_not_fatal() -> None:
    result = await call({"command": "printf 'caf\\303\\251 \\377\\n'"})

    assert result.output == "café \ufffd\n"


# --- arguments and folders ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "bash: command is required"),
        ({"command": "true", "timeout": "soon"}, "bash: timeout must be a number"),
        ({"command": "true", "timeout": 0}, "bash: timeout must be a positive number"),
        ({"command": "true", "workdir": 7}, "bash: workdir must be a string"),
    ],
)
async def test_bad_arguments_are_error_results(args: dict[str, Any], message: str) -> None:
    result = await call(args)

    assert result.is_error
    assert result.output.startswith(message)


async def test_workdir_sets_the_folder_the_command_runs_in(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()

    result = await call({"command": "pwd", "workdir": str(tmp_path / "sub")})

    assert result.output == f"{(tmp_path / 'sub').resolve()}\n"


async def test_a_missing_workdir_is_an_error_naming_it(tmp_path: Path) -> None:
    result = await call({"command": "pwd", "workdir": str(tmp_path / "nope")})

    assert result.is_error
    assert result.output == f"bash: workdir is not an existing folder: {tmp_path / 'nope'}"


async def test_with_a_root_commands_start_in_it_and_workdir_is_relative_to_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()

    at_root = await call({"command": "pwd"}, root=tmp_path)
    in_sub = await call({"command": "pwd", "workdir": "sub"}, root=tmp_path)

    assert at_root.output == f"{tmp_path.resolve()}\n"
    assert in_sub.output == f"{(tmp_path / 'sub').resolve()}\n"


# --- nothing outlives the call --------------------------------------------------------------------


async def test_a_timed_out_command_leaves_no_process_behind(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"

    result = await call({"command": background_sleeper(pidfile), "timeout": 300})

    assert result.output.startswith("bash: command timed out")
    assert await gone(await pid_in(pidfile))


async def test_a_background_child_of_a_finished_command_is_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    command = f"sh -c 'echo $$ > {pidfile}; exec sleep 300' & while [ ! -s {pidfile} ]; do :; done"

    result = await call({"command": command})

    assert (result.is_error, result.metadata) == (False, {"exitCode": 0})
    assert await gone(await pid_in(pidfile))


async def test_cancelling_the_token_kills_the_command_and_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    token = CancelToken()
    running = asyncio.create_task(
        call({"command": background_sleeper(pidfile)}, ToolContext(cancel=token))
    )
    pid = await pid_in(pidfile)

    token.cancel()
    result = await running

    assert result.is_error
    assert result.output.endswith("bash: command stopped: the run was cancelled")
    assert await gone(pid)


async def test_cancelling_the_task_kills_the_command_and_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    running = asyncio.create_task(call({"command": background_sleeper(pidfile)}))
    pid = await pid_in(pidfile)

    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    assert await gone(pid)


async def test_a_token_cancelled_before_the_call_starts_nothing(tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel()

    result = await call({"command": f"touch {tmp_path / 'ran'}"}, ToolContext(cancel=token))

    assert result.is_error
    assert "cancelled" in result.output
    assert not (tmp_path / "ran").exists()


async def test_closing_the_toolkit_kills_running_commands(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    toolkit = await create_toolkit()
    running = asyncio.create_task(toolkit.execute("bash", {"command": background_sleeper(pidfile)}))
    pid = await pid_in(pidfile)

    async with asyncio.timeout(BOUND):
        await toolkit.aclose()
        result = await running

    assert result.is_error
    assert result.output.endswith("bash: command stopped: the toolkit was closed")
    assert await gone(pid)
    after = await toolkit.execute("bash", {"command": "echo hi"})
    assert (after.output, after.is_error) == ("bash: the toolkit is closed", True)


async def test_a_process_that_leaves_the_group_does_not_hold_the_call(tmp_path: Path) -> None:
    pidfile = tmp_path / "escaped.pid"
    command = (
        f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & "
        f"while [ ! -s {pidfile} ]; do :; done; echo done"
    )
    try:
        result = await call({"command": command})
    finally:
        if pidfile.exists():  # outside the group by its own choice: ours to clean up here
            os.kill(int(pidfile.read_text()), 9)

    assert (result.output, result.is_error) == ("done\n", False)


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_a_cancelled_run_leaves_no_process_of_its_bash_call(
    tmp_path: Path, style: str
) -> None:
    pidfile = tmp_path / "child.pid"
    token = CancelToken()
    with StubLLMServer() as stub:
        stub.enqueue(
            reply.tool_calls(reply.call("bash", {"command": background_sleeper(pidfile)})),
            reply.text("never reached"),
        )
        async with (
            await create_toolkit() as toolkit,
            create_client(stub.url, style, model="test-model", api_key="test-key") as client,
        ):
            run = asyncio.create_task(client.run("Run it.", toolkit, cancel=token))
            pid = await pid_in(pidfile)
            token.cancel()
            async with asyncio.timeout(BOUND):
                with pytest.raises(RunCancelled):
                    await run
    assert await gone(pid)

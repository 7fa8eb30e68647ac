"""``bash``: run a shell command, bounded in time, output and lifetime.

Each call runs ``/bin/sh -c command`` in a new session (its own process group) with standard
input closed, standard output and error in one pipe. The whole group is killed with
``SIGKILL`` when the command times out, when the run is cancelled (the task, or the run's
``CancelToken``), when the toolkit closes, and when the shell itself exits (so a background
child such as ``sleep 300 &`` never outlives the call). Output is read as it comes and only
its last 100,000 characters are kept.
"""

from __future__ import annotations

import asyncio
import codecs
import collections
import contextlib
import os
import signal
import threading
from pathlib import Path

from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import (
    MAX_OUTPUT_CHARS,
    ArgError,
    BuiltinScope,
    builtin,
    fail,
    opt_number,
    opt_str,
    require_str,
)

__all__ = ["DEFAULT_TIMEOUT_MS", "tools"]

DEFAULT_TIMEOUT_MS = 60_000
"""How long a command may run when the call gives no ``timeout``."""
_DRAIN_S = 2.0
"""How long output is still read once the group is dead (a process that left the group with
``setsid`` may hold the pipe open; it is not waited for beyond this)."""
_REAP_S = 5.0
"""Bound on waiting for a killed shell to be reaped."""

_DESCRIPTION = (
    "Run a shell command and return its combined standard output and error. Standard input "
    "is closed. timeout is in milliseconds (default 60000). Processes the command starts in "
    "the background are stopped when the command ends. Long output keeps its last 100000 "
    "characters."
)


def tools(scope: BuiltinScope) -> list[Tool]:
    """The ``bash`` tool; its running commands are killed when ``scope`` closes."""
    shell = _Shell(scope)
    scope.on_close(shell.close)
    properties: JSONObject = {
        "command": {"type": "string", "description": "The command line to run."},
        "workdir": {"type": "string", "description": "Folder to run it in."},
        "timeout": {"type": "number", "description": "Time limit in milliseconds."},
        "description": {"type": "string", "description": "What the command does, in a few words."},
    }
    return [builtin("bash", _DESCRIPTION, properties, ["command"], shell.run)]


class _Tail:
    """The last ``limit`` characters of a byte stream, decoded as UTF-8 as it arrives."""

    def __init__(self, limit: int = MAX_OUTPUT_CHARS) -> None:
        self.limit = limit
        self.total = 0
        self._parts: collections.deque[str] = collections.deque()
        self._size = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        self._parts.append(text)
        self._size += len(text)
        self.total += len(text)
        while self._size - len(self._parts[0]) >= self.limit:
            self._size -= len(self._parts.popleft())

    def text(self) -> tuple[str, bool]:
        """The kept text, with a note saying ``truncated`` when earlier output was dropped."""
        self.feed(b"", final=True)
        kept = "".join(self._parts)[-self.limit :]
        if self.total <= self.limit:
            return kept, False
        return f"[output truncated: {self.total - self.limit} earlier characters]\n{kept}", True


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.tail = _Tail()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        self.tail.feed(bytes(data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class _Call:
    """One running command: its process group and why it was stopped, if it was."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol) -> None:
        self.transport = transport
        self.protocol = protocol
        self.loop = asyncio.get_running_loop()
        self.stopped: str | None = None
        self.done: asyncio.Future[None] = self.loop.create_future()

    def stop(self, reason: str) -> None:
        """Kill the group, remembering why (the first reason wins). Any thread may call it."""
        if self.stopped is None:
            self.stopped = reason
        self.kill_group()

    def kill_group(self) -> None:
        _kill_group(self.transport)


class _Shell:
    """The commands of one toolkit's ``bash``, so that closing the toolkit can kill them."""

    def __init__(self, scope: BuiltinScope) -> None:
        self._scope = scope
        self._lock = threading.Lock()
        self._running: set[_Call] = set()
        self._closed = False

    async def run(self, args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        command = require_str(args, "command")
        cwd = self._workdir(opt_str(args, "workdir"))
        timeout_ms = opt_number(args, "timeout", DEFAULT_TIMEOUT_MS)
        assert timeout_ms is not None
        if timeout_ms <= 0:
            raise ArgError("timeout must be a positive number of milliseconds")
        opt_str(args, "description")
        if self._closed:
            return fail("bash", "the toolkit is closed")
        if ctx is not None and ctx.cancel is not None and ctx.cancel.cancelled:
            return fail("bash", "the run was cancelled; the command was not started")

        call = await _spawn(command, cwd)
        with self._lock:
            self._running.add(call)
            closed = self._closed
        if closed:
            call.stop("the toolkit was closed")
        unhook = None
        if ctx is not None and ctx.cancel is not None:
            unhook = ctx.cancel.on_cancel(lambda: call.stop("the run was cancelled"))
        try:
            code = await self._wait(call, timeout_ms / 1000)
        finally:
            call.kill_group()  # background children die with the call, however it ends
            call.transport.close()
            if unhook is not None:
                unhook()
            with self._lock:
                self._running.discard(call)
            call.done.set_result(None)
        return _result(call, code, timeout_ms)

    async def _wait(self, call: _Call, timeout_s: float) -> int | None:
        """Wait for the shell (killing the group on timeout), then for the rest of its output."""
        protocol = call.protocol
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.shield(protocol.exited)  # a cancel must not cancel the future
        except TimeoutError:
            call.stop("timeout")
        except asyncio.CancelledError:
            call.stop("the run was cancelled")
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                async with asyncio.timeout(_REAP_S):
                    await asyncio.shield(protocol.exited)
            raise
        call.kill_group()
        await asyncio.wait({protocol.exited}, timeout=_REAP_S)
        await asyncio.wait({protocol.closed}, timeout=_DRAIN_S)
        return call.transport.get_returncode()

    def _workdir(self, workdir: str | None) -> Path | None:
        root = self._scope.root
        if workdir is None:
            return root
        folder = (root / workdir) if root is not None else Path(workdir)
        if not folder.is_dir():
            raise ArgError(f"workdir is not an existing folder: {workdir}")
        return folder.resolve()

    async def close(self) -> None:
        """Kill every running command's group and wait (bounded) for those calls to end."""
        with self._lock:
            self._closed = True
            running = list(self._running)
        for call in running:
            call.stop("the toolkit was closed")
        loop = asyncio.get_running_loop()
        mine = {call.done for call in running if call.loop is loop}
        if mine:
            await asyncio.wait(mine, timeout=_REAP_S + _DRAIN_S)


async def _spawn(command: str, cwd: Path | None) -> _Call:
    """Start ``command`` in a new session. A cancel that arrives while the process is being
    set up still kills its whole group (the shell may have started children already)."""
    loop = asyncio.get_running_loop()
    spawn = asyncio.ensure_future(
        loop.subprocess_shell(
            lambda: _Protocol(loop),
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    )
    try:
        transport, protocol = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        await _abandon(spawn)
        raise
    return _Call(transport, protocol)


_Spawn = asyncio.Future[tuple[asyncio.SubprocessTransport, _Protocol]]


async def _abandon(spawn: _Spawn) -> None:
    """Kill the group of a process whose call was cancelled while it was being set up, and
    wait (bounded) for the shell to be reaped."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait({spawn}, timeout=_REAP_S)
    if not spawn.done():
        spawn.add_done_callback(_kill_spawned)
        return
    if spawn.cancelled() or spawn.exception() is not None:
        return
    transport, protocol = spawn.result()
    _kill_group(transport)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({protocol.exited}, timeout=_REAP_S)
    finally:
        transport.close()


def _kill_spawned(spawn: _Spawn) -> None:
    """Kill the group of a process whose setup ended after its call was cancelled and gone."""
    if not spawn.cancelled() and spawn.exception() is None:
        transport = spawn.result()[0]
        _kill_group(transport)
        transport.close()


def _kill_group(transport: asyncio.SubprocessTransport) -> None:
    """``SIGKILL`` to the process group the shell leads (where there are no process groups,
    to the shell alone). Any thread may call it; a group already gone is fine."""
    killpg = getattr(os, "killpg", None)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if killpg is not None:
            killpg(transport.get_pid(), signal.SIGKILL)
        else:
            transport.kill()


def _result(call: _Call, code: int | None, timeout_ms: float) -> ToolResult:
    out, truncated = call.protocol.tail.text()
    metadata: JSONObject = {"exitCode": code}
    if truncated:
        metadata["truncated"] = True
    if call.stopped == "timeout":
        ms = int(timeout_ms) if timeout_ms.is_integer() else timeout_ms
        metadata["timedOut"] = True
        text = f"bash: command timed out after {ms}ms" + (f"\n{out}" if out else "")
        return ToolResult(text, is_error=True, metadata=metadata)
    if call.stopped is not None:
        metadata["stopped"] = True
        text = (f"{out}\n" if out else "") + f"bash: command stopped: {call.stopped}"
        return ToolResult(text, is_error=True, metadata=metadata)
    if code != 0:
        return ToolResult(f"{out}\nbash: command exited with code {code}", True, metadata)
    return ToolResult(out, metadata=metadata)

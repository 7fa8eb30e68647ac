"""What a stdio MCP server leaves behind when it dies: its exit code and last stderr lines.

The server's stderr goes through a pipe we read (the lines are passed on to our own stderr,
as before, and the last few kept). On POSIX the server runs under a tiny ``sh`` that waits for
it and writes its exit status to that pipe, since the SDK keeps the process object to itself.
The environment is the SDK's safe default set plus the config's ``env`` (or the whole host
environment with ``inheritEnv``); ``${NAME}`` in an ``env`` value expands from the host
environment, as in headers. The server's stderr lines go to the ``toolnexus.mcp.<server>``
logger (INFO), never straight to the terminal.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
from collections import deque

from ..._env import expand_env
from .config import McpServerConfig

__all__ = ["StderrTail", "child_command", "child_env", "server_logger"]

_MARK = "\x1etoolnexus-mcp-exit:"
_KEEP_LINES = 20
_MAX_LINE = 500
_WRAPPER = '"$@"; s=$?; printf "\\n%s%d\\n" "' + _MARK + '" "$s" >&2; exit $s'


def child_env(config: McpServerConfig) -> dict[str, str]:
    """The variables a stdio server starts with, beyond what the SDK always passes.

    The SDK merges this over its safe default set (``HOME``, ``PATH``, ``USER``…); with
    ``inherit_env`` the whole host environment comes first. ``${NAME}`` in a value is
    replaced by the host's variable (an unset one by ``""``; ``ServerConnection`` warns).
    """
    base = dict(os.environ) if config.inherit_env else {}
    return {**base, **{name: expand_env(value) for name, value in config.env.items()}}


def child_command(config: McpServerConfig, env: dict[str, str]) -> list[str]:
    """The argv to spawn: the configured command, wrapped to report its exit status.

    Raises ``FileNotFoundError`` when the program cannot be found, before anything starts.
    """
    program, *args = config.command
    if "/" in program or os.sep in program:
        where = os.path.join(config.cwd or os.getcwd(), program)
        if not os.path.exists(where):
            raise FileNotFoundError(f"command not found: {program}")
    else:
        search = env.get("PATH", os.environ.get("PATH", os.defpath))
        if shutil.which(program, path=search) is None:
            raise FileNotFoundError(f"command not found: {program} (not on PATH)")
    if sys.platform == "win32" or not os.path.exists("/bin/sh"):
        return [program, *args]
    return ["/bin/sh", "-c", _WRAPPER, "mcp-server", program, *args]


def server_logger(server: str) -> logging.Logger:
    """The logger a stdio server's stderr lines go to: ``toolnexus.mcp.<server>``."""
    return logging.getLogger(f"toolnexus.mcp.{server}")


class StderrTail:
    """The read end of a stdio server's stderr: logs lines and keeps the last ones."""

    def __init__(self, forward: logging.Logger | None) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        """Hand this to the spawn; ``spawned()`` closes our copy afterwards."""
        self._read_fd = read_fd
        self._forward = forward
        self._lines: deque[str] = deque(maxlen=_KEEP_LINES)
        self._partial = ""
        self.exit_code: int | None = None
        self._eof = asyncio.Event()
        self._transport: asyncio.ReadTransport | None = None

    async def start(self) -> None:
        """Begin reading the pipe on the running loop."""
        loop = asyncio.get_running_loop()
        reader = os.fdopen(self._read_fd, "rb", buffering=0)
        self._transport, _ = await loop.connect_read_pipe(lambda: _Reader(self), reader)

    def spawned(self) -> None:
        """Close our copy of the write end, so the pipe ends when the server's copy does."""
        if not self.writer.closed:
            self.writer.close()

    def close(self) -> None:
        """Stop reading (idempotent)."""
        self.spawned()
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        self._eof.set()

    async def settle(self, within: float = 0.5) -> None:
        """Wait (briefly) until the server's stderr has ended."""
        try:
            async with asyncio.timeout(within):
                await self._eof.wait()
        except TimeoutError:
            pass

    def describe(self) -> str:
        """``exited with code N; stderr: …`` (each part only when known), or ``""``."""
        parts = []
        if self.exit_code is not None:
            parts.append(f"exited with code {self.exit_code}")
        if self._lines:
            parts.append("stderr: " + " | ".join(self._lines))
        return "; ".join(parts)

    def _feed(self, data: bytes) -> None:
        text = self._partial + data.decode("utf-8", "replace")
        *lines, self._partial = text.split("\n")
        if len(self._partial) > 4 * _MAX_LINE:
            lines.append(self._partial)
            self._partial = ""
        for line in lines:
            self._line(line)

    def _line(self, line: str) -> None:
        if line.startswith(_MARK):
            try:
                self.exit_code = int(line[len(_MARK) :])
            except ValueError:
                pass
            return
        if not line.strip():
            return
        if self._forward is not None:
            self._forward.info("%s", line)
        self._lines.append(line.strip()[:_MAX_LINE])

    def _ended(self) -> None:
        if self._partial:
            self._line(self._partial)
            self._partial = ""
        self._eof.set()


class _Reader(asyncio.Protocol):
    def __init__(self, tail: StderrTail) -> None:
        self._tail = tail

    def data_received(self, data: bytes) -> None:
        self._tail._feed(data)

    def eof_received(self) -> bool:
        self._tail._ended()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._tail._ended()

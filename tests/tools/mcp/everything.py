"""The reference ``server-everything`` (npm), run over stdio or streamable HTTP for tests."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.npm_packages import npm_bin


@dataclass(frozen=True)
class Everything:
    """How to start ``server-everything`` with the locally installed Node 22."""

    node: Path
    script: Path

    def stdio_entry(self) -> dict[str, object]:
        return {"command": [str(self.node), str(self.script), "stdio"], "timeout": 60_000}

    async def start_http(self, port: int | None = None) -> tuple[subprocess.Popen[str], int]:
        """Start it over streamable HTTP on ``port`` (a free one when ``None``)."""
        port = port or free_port()
        proc = subprocess.Popen(
            [str(self.node), str(self.script), "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        stderr = proc.stderr
        async with asyncio.timeout(60):
            while "listening on port" not in (line := await asyncio.to_thread(stderr.readline)):
                assert line, f"server-everything exited with {proc.wait()}"
        return proc, port


def everything_or_skip() -> Everything:
    folder, why = npm_bin()
    if folder is None:
        pytest.skip(why)
    package = folder.parent / "@modelcontextprotocol" / "server-everything"
    return Everything(node=folder / "node", script=package / "dist" / "index.js")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()

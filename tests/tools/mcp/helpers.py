"""Process and file helpers shared by the MCP tests."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether a process with this id exists (a reaped child no longer does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_gone(pid: int, within: float = 5.0) -> None:
    """Poll until ``pid`` has exited, failing after ``within`` seconds."""
    async with asyncio.timeout(within):
        while alive(pid):
            await asyncio.sleep(0.02)


async def wait_for_file(path: Path, within: float = 10.0) -> str:
    """Poll until ``path`` exists with content; return the content."""
    async with asyncio.timeout(within):
        while not path.exists() or not path.read_text():
            await asyncio.sleep(0.02)
    return path.read_text()


def python_script(path: Path, source: str) -> list[str]:
    """Write a Python script and return the command running it with this interpreter."""
    path.write_text(source, encoding="utf-8")
    return [sys.executable, str(path)]

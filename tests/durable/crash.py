"""Starting, killing and recovering worker processes of the durable crash tests."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import toolnexus
from toolnexus.testing import StubLLMServer, reply

ROOT = Path(__file__).resolve().parents[2]
PATH = os.pathsep.join([str(ROOT), str(Path(toolnexus.__file__).resolve().parents[1])])
"""The workers' import path: the repository root, then the toolnexus these tests import."""
LIMIT = 60.0
"""Seconds within which a worker must finish (DBOS launch included)."""


def script() -> list[reply.Reply]:
    """One tool per turn, then the answer; the second reply hangs so a kill lands inside it."""
    turn = [
        reply.tool_calls(reply.call(name, {"step": i}))
        for i, name in enumerate(("one", "two", "three"))
    ]
    return [turn[0], turn[1].with_delay(LIMIT), turn[1], turn[2], reply.text("all done")]


async def start(*args: str, module: str = "tests.durable.worker") -> asyncio.subprocess.Process:
    """A worker process (``module`` run with ``args``), its output piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": PATH},
    )


async def kill(process: asyncio.subprocess.Process) -> None:
    process.send_signal(signal.SIGKILL)
    async with asyncio.timeout(LIMIT):
        await process.wait()


async def result_of(process: asyncio.subprocess.Process) -> dict[str, Any]:
    async with asyncio.timeout(LIMIT):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()[-3000:]
    data: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return data


def marks(mark_dir: Path) -> dict[str, list[str]]:
    """Each tool's recorded side effects."""
    return {
        name: (mark_dir / name).read_text().split() if (mark_dir / name).exists() else []
        for name in ("one", "two", "three")
    }


async def until_requests(stub: StubLLMServer, n: int) -> None:
    await stub.until_requests(n, LIMIT)

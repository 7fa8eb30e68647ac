"""Driving the installed ``toolnexus`` console script in a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolnexus.testing import mcp_server_command

TIMEOUT = 90.0
"""Seconds one command may take (MCP servers start slowly on a busy machine)."""


def script() -> str:
    """The ``toolnexus`` console script installed beside this interpreter."""
    beside = Path(sys.executable).parent / "toolnexus"
    if beside.exists():
        return str(beside)
    found = shutil.which("toolnexus")
    assert found is not None, "the toolnexus console script is not installed"
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any TOOLNEXUS_* or provider key variables, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLNEXUS_")
        and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")
    }
    env.update(extra)
    return env


def toolnexus(
    *args: str, input: str | None = "", env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``toolnexus ARGS`` to completion (stdin piped from ``input``)."""
    return subprocess.run(
        [script(), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env if env is not None else clean_env(),
        cwd=cwd,
        check=False,
    )


@contextmanager
def started(
    *args: str, stdin: int | None = None, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """``toolnexus ARGS`` running in the background, stdout and stderr piped (clean environment
    unless ``env`` is given).

    On leaving the block a process still running is killed, and its pipes are closed.
    """
    proc = subprocess.Popen(
        [script(), *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else clean_env(),
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


async def first_line(proc: subprocess.Popen[str]) -> str:
    """The first line a started ``toolnexus`` writes to stderr (a server: where it listens)."""
    assert proc.stderr is not None
    return await asyncio.wait_for(asyncio.to_thread(proc.stderr.readline), TIMEOUT)


async def stop(proc: subprocess.Popen[str]) -> int:
    """Send SIGTERM to a started ``toolnexus`` and return its exit code."""
    proc.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(asyncio.to_thread(proc.wait), TIMEOUT)


def write_skill(root: Path, name: str, description: str, body: str = "Do it well.") -> Path:
    """A ``SKILL.md`` folder under ``root``."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n", encoding="utf-8"
    )
    return folder


def write_mcp_config(path: Path, *flags: str, extra: dict[str, Any] | None = None) -> Path:
    """An ``mcp.json`` with the bundled fixture server as ``fixture`` (and ``extra`` servers)."""
    program, *args = mcp_server_command(*flags)
    servers: dict[str, Any] = {"fixture": {"command": program, "args": args}}
    servers.update(extra or {})
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def messages_text(request_json: dict[str, Any]) -> str:
    """Every message of a recorded request, as one JSON text (for containment checks)."""
    return json.dumps(request_json.get("messages", []), ensure_ascii=False)


def with_imports_listed(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``toolnexus ARGS`` (stdin, stdout and stderr piped) with Python reporting every
    import on stderr: the process, those reports taken out of its stderr, and the names of the
    modules it imported."""
    done = toolnexus(*args, env=clean_env(PYTHONPROFILEIMPORTTIME="1"))
    modules: set[str] = set()
    rest: list[str] = []
    for line in done.stderr.splitlines(keepends=True):
        if line.startswith("import time:"):
            modules.add(line.rsplit("|", 1)[-1].strip())
        else:
            rest.append(line)
    assert "toolnexus.cli" in modules, "the interpreter did not report its imports"
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout, "".join(rest)
    ), modules

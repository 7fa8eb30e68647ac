"""Fixtures for the MCP source: fixture servers as real subprocesses, and process checks."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import pytest

from toolnexus.testing import mcp_server_command


@pytest.fixture(autouse=True)
def _warm_sdk_import() -> None:
    """Import the SDK once up front, so timing assertions measure connections only."""
    import mcp.client.session
    import mcp.client.sse
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


@pytest.fixture
def http_server() -> Iterator[Callable[..., str]]:
    """Start a fixture server over HTTP (``--transport http|sse ...``); returns its URL.

    Every server started is killed when the test ends.
    """
    started: list[subprocess.Popen[str]] = []

    def start(*flags: str) -> str:
        proc = subprocess.Popen(
            mcp_server_command(*flags), stdout=subprocess.PIPE, text=True, encoding="utf-8"
        )
        started.append(proc)
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()  # printed once the port is listening
        assert url.startswith("http://127.0.0.1:"), f"fixture server printed {url!r}"
        return url

    yield start
    for proc in started:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()

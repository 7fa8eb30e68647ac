"""``toolnexus run`` in a pseudo-terminal, and interrupted with Ctrl-C (SIGINT)."""

from __future__ import annotations

import http.client
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus.testing import StubLLMServer, mcp_server_command, reply

from .support import TIMEOUT, clean_env, messages_text, script, started, write_mcp_config

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX terminal")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """A process whose stdin, stdout and stderr are one pseudo-terminal."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self._master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.seen = ""

    def expect(self, needle: str, timeout: float = TIMEOUT, *, count: int = 1) -> str:
        """Read until ``needle`` shows up (``count`` times) in the plain text (escape codes
        removed)."""
        deadline = time.monotonic() + timeout
        while _ANSI.sub("", self.seen).count(needle) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"{needle!r} never appeared; the terminal showed {self.seen!r}"
                )
            ready, _, _ = select.select([self._master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self._master, 4096)
                except OSError:  # the process closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{needle!r} never appeared before the end: {self.seen!r}")
                self.seen += chunk.decode("utf-8", "replace")
        return _ANSI.sub("", self.seen)

    def type(self, line: str) -> None:
        os.write(self._master, line.encode() + b"\n")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        os.close(self._master)


@pytest.fixture
def stub() -> Iterator[StubLLMServer]:
    with StubLLMServer() as server:
        yield server


def test_terminal_repl_shows_a_spinner_colours_and_answers_a_suspension_at_the_prompt(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    config = write_mcp_config(tmp_path / "mcp.json")
    stub.enqueue(
        reply.tool_calls(reply.call("fixture_ask", {})).with_delay(1.0),
        reply.text("Nice to meet you, Maya."),
    )
    argv = [script(), "run", "--base-url", stub.url, "--model", "m", "--api-key", "test-key"]
    term = Terminal([*argv, "--no-builtins", "--config", str(config)], clean_env())
    try:
        term.expect("> ")
        term.type("hello")
        term.expect("thinking")
        shown = term.expect("answer (empty to decline): ")
        assert "pending input: What is your name?" in shown
        term.type("Maya")
        term.expect("Nice to meet you, Maya.")
        term.type("exit")
        assert term.proc.wait(timeout=TIMEOUT) == 0
    finally:
        term.close()

    raw = term.seen
    assert "\x1b[" in raw  # coloured tool lines
    plain = _ANSI.sub("", raw)
    assert "-> fixture_ask {}" in plain
    assert "<- fixture_ask ok" in plain
    assert '"answers":["Maya"]' in messages_text(stub.requests[1].json).replace("\\", "")


def test_ctrl_c_mid_run_exits_130_and_leaves_no_mcp_server_process(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    pid_file = tmp_path / "server.pid"
    config = write_mcp_config(tmp_path / "mcp.json", "--pid-file", str(pid_file))
    stub.enqueue(reply.tool_calls(reply.call("fixture_sleep", {"seconds": 120})))
    with started(
        "run", "--base-url", stub.url, "--model", "m", "--api-key", "test-key",
        "--no-builtins", "--config", str(config), "--once", "sleep please",
        stdin=subprocess.DEVNULL,
    ) as proc:  # fmt: skip
        assert proc.stderr is not None
        line = ""
        deadline = time.monotonic() + TIMEOUT
        while not line.startswith("-> fixture_sleep"):
            assert time.monotonic() < deadline, "the tool call never started"
            line = proc.stderr.readline()
            assert line, "toolnexus ended before calling the tool"
        server_pid = int(pid_file.read_text())
        assert _alive(server_pid)

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=TIMEOUT) == 130
    assert not _alive(server_pid)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_ctrl_c_received_by_another_thread_of_the_process_still_exits_130(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    # The kernel hands a process-directed SIGINT to any thread that does not block it (here
    # the thread waiting for the MCP server process): ``kill`` with that thread's id makes
    # the unlucky case of the flaky Ctrl-C test happen every time.
    program, *args = mcp_server_command()
    config = tmp_path / "mcp.json"  # a call budget far past TIMEOUT: nothing else wakes the loop
    fixture = {"command": program, "args": args, "timeout": 600_000}
    config.write_text(json.dumps({"mcpServers": {"fixture": fixture}}), encoding="utf-8")
    stub.enqueue(reply.tool_calls(reply.call("fixture_sleep", {"seconds": 120})))
    with started(
        "run", "--base-url", stub.url, "--model", "m", "--api-key", "test-key",
        "--no-builtins", "--config", str(config), "--once", "sleep please",
        stdin=subprocess.DEVNULL,
    ) as proc:  # fmt: skip
        assert proc.stderr is not None
        line = ""
        while not line.startswith("-> fixture_sleep"):
            line = proc.stderr.readline()
            assert line, "toolnexus ended before calling the tool"
        others = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        assert others, "toolnexus runs no other thread"

        os.kill(others[0], signal.SIGINT)
        assert proc.wait(timeout=TIMEOUT) == 130


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def test_a_sign_in_at_the_terminal_takes_the_address_the_browser_ended_on(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    server = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "oauth_server.py"
    oauth = subprocess.Popen([sys.executable, str(server)], stdout=subprocess.PIPE, text=True)
    try:
        assert oauth.stdout is not None
        url = oauth.stdout.readline().strip()
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"secure": {"url": url, "oauth": True}}}))
        stub.enqueue(
            reply.tool_calls(reply.call("secure_echo", {"text": "signed in"})),
            reply.text("All set."),
        )
        argv = [script(), "run", "--base-url", stub.url, "--model", "m", "--api-key", "k"]
        term = Terminal([*argv, "--no-builtins", "--config", str(config)], clean_env())
        try:
            shown = term.expect("address the browser ended on (empty to decline): ")
            found = re.search(r"pending authorization: .*\((http://\S+)\)", shown)
            assert found is not None, shown
            term.type(_follow(found.group(1)))  # what a browser's address bar shows after
            term.expect("> ")
            term.type("echo")
            term.expect("All set.")
            term.type("exit")
            assert term.proc.wait(timeout=TIMEOUT) == 0
        finally:
            term.close()
    finally:
        oauth.kill()
        oauth.wait(timeout=TIMEOUT)
        if oauth.stdout is not None:
            oauth.stdout.close()

    assert "<- secure_echo ok" in _ANSI.sub("", term.seen)
    assert "signed in" in messages_text(stub.requests[1].json)


def _follow(url: str) -> str:
    """Open ``url`` without following its redirect; the address it redirects to."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=TIMEOUT)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        assert response.status in (302, 303, 307), response.status
        return str(response.getheader("Location"))
    finally:
        connection.close()

"""The README's command-line walkthrough, on the files in ``examples/``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from toolnexus.testing import StubLLMServer, reply

from .support import clean_env, messages_text, toolnexus

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    # examples/mcp.json starts the fixture with `python`: the interpreter of this environment.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return clean_env(PATH=path)


def test_tools_on_the_examples_shows_the_fixture_server_and_the_skill_tool() -> None:
    done = toolnexus(
        "tools", "--config", "examples/mcp.json", "--skills", "examples/skills", "--no-builtins",
        env=_env(), cwd=ROOT,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "# mcp fixture: connected"
    assert "fixture_echo\t(mcp)" in lines
    assert lines[-1] == "skill\t(skill)"


def test_run_once_on_the_examples_uses_a_skill_and_an_mcp_tool() -> None:
    script = [
        reply.tool_calls(
            reply.call("skill", {"name": "commit-message"}),
            reply.call("fixture_echo", {"text": "fix: parser"}),
        ),
        reply.text("fix(parser): accept empty sections"),
    ]
    with StubLLMServer(script) as stub:
        done = toolnexus(
            "run", "--base-url", stub.url, "--model", "m", "--api-key", "test-key",
            "--config", "examples/mcp.json", "--skills", "examples/skills", "--no-builtins",
            "--once", "write a commit message",
            env=_env(), cwd=ROOT,
        )  # fmt: skip
        second = messages_text(stub.requests[1].json)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "fix(parser): accept empty sections\n"
    assert "<- skill ok" in done.stderr
    assert "<- fixture_echo ok" in done.stderr
    assert "imperative mood" in second
    assert "incident-summary" in messages_text(stub.requests[0].json)

"""``toolnexus run`` asks before the built-ins that change things run (``bash``, ``write``,
``edit``, ``apply_patch``): in a terminal ``[y/N/a]``; without one they are refused unless
``--yes`` or ``TOOLNEXUS_YES=1``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus.testing import StubLLMServer, reply

from .support import clean_env, script, toolnexus
from .test_terminal import Terminal


@pytest.fixture
def stub() -> Iterator[StubLLMServer]:
    with StubLLMServer() as server:
        yield server


def endpoint(stub: StubLLMServer) -> list[str]:
    return ["--base-url", stub.url, "--model", "test-model", "--api-key", "test-key"]


def write_call(path: Path, content: str = "changed") -> reply.Reply:
    return reply.tool_calls(reply.call("write", {"path": str(path), "content": content}))


def tool_results(request_json: dict[str, object]) -> list[str]:
    messages = request_json["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m.get("role") == "tool"]


def test_without_a_terminal_a_changing_built_in_is_refused_and_the_model_told_why(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    target = tmp_path / "notes.txt"
    stub.enqueue(
        write_call(target),
        reply.tool_calls(reply.call("bash", {"command": f"touch {tmp_path / 'ran'}"})),
        reply.text("I could not."),
    )

    done = toolnexus("run", *endpoint(stub), "--once", "write it")

    assert done.returncode == 0, done.stderr
    assert not target.exists()
    assert not (tmp_path / "ran").exists()
    assert "<- write error" in done.stderr
    [refused] = tool_results(stub.requests[1].json)
    assert refused.startswith("the user did not allow write")
    assert "--yes" in refused
    assert tool_results(stub.requests[2].json)[-1].startswith("the user did not allow bash")


@pytest.mark.parametrize(
    ("flags", "env"),
    [(["--yes"], {}), ([], {"TOOLNEXUS_YES": "1"})],
    ids=["flag", "environment"],
)
def test_yes_lets_the_changing_built_ins_run_without_asking(
    stub: StubLLMServer, tmp_path: Path, flags: list[str], env: dict[str, str]
) -> None:
    target = tmp_path / "notes.txt"
    stub.enqueue(write_call(target, "hello"), reply.text("Written."))

    done = toolnexus("run", *endpoint(stub), *flags, "--once", "write it", env=clean_env(**env))

    assert done.returncode == 0, done.stderr
    assert target.read_text() == "hello"
    assert "<- write ok" in done.stderr
    assert "allow write" not in done.stderr


def test_reading_built_ins_run_without_asking(stub: StubLLMServer, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("content")
    stub.enqueue(reply.tool_calls(reply.call("read", {"path": str(tmp_path / "a.txt")})))
    stub.enqueue(reply.text("Read."))

    done = toolnexus("run", *endpoint(stub), "--once", "read it")

    assert done.returncode == 0, done.stderr
    assert "<- read ok" in done.stderr


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a POSIX terminal")
def test_in_a_terminal_each_call_asks_and_a_allows_the_tool_for_the_session(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    first, second, third = tmp_path / "1.txt", tmp_path / "2.txt", tmp_path / "3.txt"
    stub.enqueue(
        write_call(first),
        reply.text("Refused."),
        write_call(second),
        reply.text("Done."),
        write_call(third),
        reply.text("Done again."),
    )
    term = Terminal([script(), "run", *endpoint(stub)], clean_env())
    try:
        term.expect("> ")
        term.type("write one")
        shown = term.expect("? [y/N/a] ")
        assert f'allow write {{"path":"{first}","content":"changed"}}? [y/N/a]' in shown
        term.type("n")
        term.expect("Refused.")
        term.type("write two")
        term.expect("[y/N/a]", count=2)
        term.type("a")
        term.expect("Done.")
        term.type("write three")  # allowed for the rest of the session: not asked again
        term.expect("Done again.")
        term.type("exit")
        assert term.proc.wait(timeout=60) == 0
        assert term.expect("").count("[y/N/a]") == 2
    finally:
        term.close()
    assert not first.exists()
    assert second.read_text() == "changed"
    assert third.read_text() == "changed"
    assert "the user did not allow this write call" in tool_results(stub.requests[1].json)

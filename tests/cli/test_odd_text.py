"""``toolnexus run`` given input that is not UTF-8: the bytes reach the model as ``\\xNN``
escapes, a note says so, and the conversation is saved and continued like any other."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus.testing import StubLLMServer, reply

from .support import TIMEOUT, clean_env, messages_text, script


@pytest.fixture
def stub() -> Iterator[StubLLMServer]:
    with StubLLMServer() as server:
        yield server


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_binary_input_at_the_prompt_is_escaped_noted_and_saved(
    stub: StubLLMServer, tmp_path: Path, locale: str
) -> None:
    stub.enqueue(reply.text("got it"), reply.text("still here"))
    db = tmp_path / "chats.db"
    args = [script(), "run", "--base-url", stub.url, "--model", "m", "--api-key", "k"]
    args += ["--no-builtins", "--id", "odd", "--db", str(db)]

    done = subprocess.run(
        args,
        input=b"caf\xe9 \xff\xfe bytes\nand then?\n",
        capture_output=True,
        timeout=TIMEOUT,
        env=clean_env(LC_ALL=locale, PYTHONIOENCODING=""),
        check=False,
    )

    stderr = done.stderr.decode("utf-8")
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "note: the input had 3 bytes that are not UTF-8, sent as \\xNN escapes" in stderr
    assert done.stdout.decode("utf-8") == "got it\nstill here\n"
    assert len(stub.requests) == 2
    first = stub.requests[0].json["messages"]
    assert first[-1] == {"role": "user", "content": "caf\\xe9 \\xff\\xfe bytes"}
    # the second prompt carries the first turn on: it was saved in the SQLite store
    assert "caf\\\\xe9" in messages_text(stub.requests[1].json)
    assert db.exists()

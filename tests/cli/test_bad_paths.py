"""``--config`` and ``--db`` naming something that is not a usable file: a clear error and
exit code, never a hang or a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolnexus.testing import StubLLMServer

from .support import toolnexus


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.fifo"
    os.mkfifo(path)  # nobody ever writes to it: reading it would wait forever
    return path


def huge(tmp_path: Path) -> Path:
    path = tmp_path / "huge.json"
    with path.open("wb") as file:
        file.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of zeros, no disk used
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (fifo, "not a regular file (a FIFO)"),
        (lambda _: Path("/dev/zero"), "not a regular file (a device)"),
        (lambda tmp: tmp, "not a regular file (a folder)"),
        (huge, "67108864 bytes, more than an MCP config may have"),
    ],
    ids=["fifo", "dev-zero", "folder", "huge"],
)
@pytest.mark.parametrize("command", ["tools", "run"])
def test_a_config_that_is_not_a_small_regular_file_is_a_clear_error(
    tmp_path: Path, make: object, needle: str, command: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with StubLLMServer() as stub:
        flags = ["--base-url", stub.url, "--model", "m", "--api-key", "k", "--once", "hi"]
        done = toolnexus(command, "--config", str(path), *(flags if command == "run" else []))

        assert done.returncode == 1
        assert f"{path}: {needle}" in done.stderr
        assert "Traceback" not in done.stderr
        assert stub.requests == []


@pytest.mark.parametrize(
    ("db", "needle"),
    [
        ("file.txt/chats.db", "cannot make its folder"),
        ("file.txt/deeper/chats.db", "cannot make its folder"),
        (".", "is a folder, not a database file"),
    ],
)
def test_a_db_under_a_file_or_naming_a_folder_is_a_clear_error(
    tmp_path: Path, db: str, needle: str
) -> None:
    (tmp_path / "file.txt").write_text("not a folder")
    with StubLLMServer() as stub:
        done = toolnexus(
            "run", "--base-url", stub.url, "--model", "m", "--api-key", "k",
            "--no-builtins", "--id", "c1", "--db", str(tmp_path / db), "--once", "hi",
        )  # fmt: skip

        assert done.returncode == 1
        assert "--db " in done.stderr
        assert needle in done.stderr
        assert "Traceback" not in done.stderr
        assert stub.requests == []

"""Every script in ``examples/`` runs as its own process and reports ``ok``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .stores.services import POSTGRES_DSN, need

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def test_the_seed_examples_and_the_quickstart_are_all_present() -> None:
    names = {p.stem for p in SCRIPTS}
    assert {
        "quickstart",
        "run_basic",
        "run_with_tool",
        "run_history_cancel",
        "run_events",
        "run_full_shape",
        "memory_two_turns",
        "memory_per_user",
        "memory_own_transcript",
        "mcp_and_skills",
        "streaming_chat_sqlite",
        "approval_two_processes",
        "hooks",
    } <= names


def test_the_examples_readme_lists_every_script() -> None:
    listed = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in SCRIPTS if f"`{p.name}`" not in listed] == []


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_example_runs_and_prints_ok(script: Path) -> None:
    args: list[str] = []
    if script.stem == "durable_workers":  # its workers share a PostgreSQL system database
        pytest.importorskip("dbos")
        need(POSTGRES_DSN, 5432, "PostgreSQL")
        args.append(POSTGRES_DSN)
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok"), done.stdout
    assert "Traceback" not in done.stderr, done.stderr

"""The benchmark suite's smoke mode runs every case end to end and gets the scenario right.

Only completion and answers are checked here; the figures of a smoke run mean nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "suite.py"
ANSWER = "echo said hi; add said 5."


def test_the_smoke_run_completes_every_case_with_the_right_answers(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SUITE), "--smoke", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    for case in ("scenario_mcp", "scenario_python", "streaming", "concurrency"):
        assert results[case]["answers"] == [ANSWER], case
    for style in ("openai", "anthropic", "responses", "gemini"):
        assert results["styles"][style]["answers"] == [ANSWER], style
    assert results["mcp_startup"]["ours"] > 0
    assert results["mcp_startup"]["sdk"] > 0
    assert set(results["growth"]["history"]) == set(results["growth"]["tools"]) == {"10", "100"}
    assert results["import"]["seconds"] > 0
    # Nothing of ours caps the requests in flight: every run's first request is held at once.
    for key, level in results["concurrency"].items():
        if "C=" in key:
            wanted = int(key.split("C=")[1])
            assert level["ours"]["first_in_flight"] == wanted, key
    table = (tmp_path / "results.md").read_text()
    assert "| target | measured | limit | met |" in table
    assert (tmp_path / "results.png").read_bytes().startswith(b"\x89PNG")

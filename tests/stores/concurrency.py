"""Many processes saving into one shared store at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("save_worker.py")


def save_from_processes(kind: str, target: str, namespace: str, processes: int, ids: int) -> None:
    """Run ``processes`` workers at once, each saving ``ids`` distinct ids; all must succeed.

    Every worker is waited for (or killed) before this returns, even when one of them fails,
    so a failure never leaves processes or pipes behind for a later test to trip over.
    """
    running = [
        subprocess.Popen(
            [sys.executable, str(WORKER), kind, target, namespace, str(worker), str(ids)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(processes)
    ]
    results: list[tuple[int | None, str, str]] = []
    try:
        for process in running:
            out, err = process.communicate(timeout=120)
            results.append((process.returncode, out, err))
    finally:
        for process in running:
            if process.poll() is None:
                process.kill()
            process.communicate()
    for returncode, out, err in results:
        assert returncode == 0, err
        assert out.strip() == f"saved {ids}", out


RESUMER = Path(__file__).with_name("resume_worker.py")


def resume_from_processes(
    kind: str, target: str, namespace: str, calls: Path, processes: int
) -> list[dict[str, str]]:
    """Halt a run on an approval, then let ``processes`` workers resume it at the same moment.

    Returns each worker's outcome (``{"status", "text"}`` or ``{"error", "message"}``); every
    worker is waited for (or killed) before this returns.
    """

    def start(action: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, str(RESUMER), action, kind, target, namespace, str(calls)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    halt = start("halt")
    out, err = halt.communicate(timeout=60)
    assert halt.returncode == 0, err
    assert out.strip(), err
    running = [start("resume") for _ in range(processes)]
    outcomes: list[dict[str, str]] = []
    try:
        for process in running:  # every worker holds the request's id before any resumes
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line == "ready\n", (line, process.stderr.read() if process.stderr else "")
        for process in running:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        for process in running:
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            outcomes.append(json.loads(out))
    finally:
        for process in running:
            if process.poll() is None:
                process.kill()
            process.communicate()
    return outcomes

"""Many processes saving into one shared store at once."""

from __future__ import annotations

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

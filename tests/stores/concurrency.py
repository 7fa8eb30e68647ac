"""Many processes saving into one shared store at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("save_worker.py")


def save_from_processes(kind: str, target: str, namespace: str, processes: int, ids: int) -> None:
    """Run ``processes`` workers at once, each saving ``ids`` distinct ids; all must succeed."""
    running = [
        subprocess.Popen(
            [sys.executable, str(WORKER), kind, target, namespace, str(worker), str(ids)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(processes)
    ]
    for process in running:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert out.strip() == f"saved {ids}", out

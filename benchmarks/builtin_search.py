"""How long ``grep`` and ``glob`` take over a real tree: the running interpreter's standard
library source folder (thousands of files).

Run: ``python benchmarks/builtin_search.py [--rounds N] [--path DIR]``. Median wall time over
the rounds of each call through the tool (argument checks, walk, matching, output):

- ``glob **/*.py``: the default limit of 100, so the walk stops after 100 matches, and with
  no effective limit, so the whole tree is walked;
- ``grep <rare word>``: a word found in no file, so every file is walked and read;
- ``grep def limit 1000``: stops once 1,000 lines are found;
- ``grep <regex> include *.py``: a regular expression (no literal fast path), limit 100;
- ``grep <rare regex> include *.py``: a regular expression matching nothing, so every line of
  every ``.py`` file is searched.

Beside them, the floor: a bare Python walk (``os.walk``) reading every file and searching it
with ``in``, run the same way, and the ratio of ``grep <rare word>`` to it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sysconfig
import time
from collections.abc import Awaitable, Callable
from typing import Any

from toolnexus import ToolResult
from toolnexus.tools.builtin import BuiltinScope, builtin_tools

RARE = "zqxjvkwpfr"


def floor(path: str) -> int:
    """Walk and read every file, searching for the rare word: what any grep must at least do."""
    found = 0
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d not in ("node_modules", ".git")]
        for name in files:
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as text:
                    found += RARE in text.read()
            except (OSError, UnicodeDecodeError):
                continue
    return found


async def median(rounds: int, work: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    """Median wall and CPU seconds (CPU of every thread of this process) of ``work``."""
    walls, cpus, last = [], [], None
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        last = await work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), last


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--path", default=sysconfig.get_paths()["stdlib"])
    options = parser.parse_args()
    path, rounds = options.path, options.rounds
    tools = {t.name: t for t in builtin_tools(BuiltinScope())}

    def call(name: str, **args: Any) -> Callable[[], Awaitable[ToolResult]]:
        return lambda: tools[name].execute({"path": path, **args}, None)

    files = sum(len(f) for _, _, f in os.walk(path))
    print(f"tree: {path} ({files} files)")
    await call("grep", pattern=RARE)()  # warm the file-system cache
    cases = [
        ("glob **/*.py (limit 100)", call("glob", pattern="**/*.py")),
        ("glob **/*.py (every match)", call("glob", pattern="**/*.py", limit=10**7)),
        (f"grep {RARE} (rare, whole tree)", call("grep", pattern=RARE)),
        ("grep def (limit 1000)", call("grep", pattern="def ", limit=1000)),
        (
            r"grep ^class \w+Error include *.py",
            call("grep", pattern=r"^class \w+Error", include="*.py"),
        ),
        (
            r"grep zqx\w+vk include *.py (every line)",
            call("grep", pattern=r"zqx\w+vk", include="*.py"),
        ),
    ]
    print(f"{'':44s} {'wall':>8s}    {'CPU':>8s}")
    rare = (0.0, 0.0)
    for label, work in cases:
        wall, cpu, result = await median(rounds, work)
        count = (result.metadata or {}).get("count")
        print(f"{label:44s} {wall * 1000:8.1f} ms {cpu * 1000:8.1f} ms  ({count} results)")
        if label.startswith(f"grep {RARE}"):
            rare = (wall, cpu)
    wall, cpu, _ = await median(rounds, lambda: asyncio.to_thread(floor, path))
    print(f"{'floor: os.walk + read + in':44s} {wall * 1000:8.1f} ms {cpu * 1000:8.1f} ms")
    print(f"grep rare word / floor: {rare[0] / wall:.2f}x wall, {rare[1] / cpu:.2f}x CPU")


if __name__ == "__main__":
    asyncio.run(main())

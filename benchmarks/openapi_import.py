"""How long ``http_tools_from_openapi`` takes on a real document and on a large one.

Times (median of ``--rounds`` imports each, after one warm-up import):

- ``petstore yaml``: the published Swagger Petstore 3 document (19 operations) from its YAML
  file, as shipped in ``tests/fixtures/openapi``;
- ``generated dict``: a generated CRUD API of ``--operations`` operations (five per resource,
  parameters and bodies by reference, nested and recursive schemas) passed as a dict, which
  is the reference resolution and tool building alone;
- ``generated yaml`` and ``generated json``: the same document read from a file, which adds
  parsing (PyYAML's C loader when it is installed).

Usage: ``python benchmarks/openapi_import.py [--rounds 7] [--operations 600]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.tools.openapi_specs import OPS_PER_RESOURCE, PETSTORE, generated_spec

from toolnexus import Tool, http_tools_from_openapi


async def median_seconds(
    make: Callable[[], Awaitable[list[Tool]]], rounds: int
) -> tuple[float, int]:
    count = len(await make())  # warm-up: imports, the YAML loader class
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await make()
        times.append(time.perf_counter() - started)
    return statistics.median(times), count


async def main(rounds: int, operations: int) -> None:
    spec = generated_spec(max(1, operations // OPS_PER_RESOURCE))
    with tempfile.TemporaryDirectory() as folder:
        as_yaml = Path(folder) / "generated.yaml"
        as_yaml.write_text(yaml.safe_dump(spec, sort_keys=False))
        as_json = Path(folder) / "generated.json"
        as_json.write_text(json.dumps(spec))
        cases: list[tuple[str, Callable[[], Awaitable[list[Tool]]], int]] = [
            (
                "petstore yaml",
                lambda: http_tools_from_openapi(PETSTORE, base_url="http://127.0.0.1:9/v3"),
                PETSTORE.stat().st_size,
            ),
            ("generated dict", lambda: http_tools_from_openapi(spec), 0),
            ("generated yaml", lambda: http_tools_from_openapi(as_yaml), as_yaml.stat().st_size),
            ("generated json", lambda: http_tools_from_openapi(as_json), as_json.stat().st_size),
        ]
        loader = "C" if hasattr(yaml, "CSafeLoader") else "pure-Python"
        print(f"median of {rounds} rounds; PyYAML {loader} loader")
        print(f"{'case':<16} {'tools':>6} {'bytes':>9} {'ms':>9} {'us/tool':>9}")
        for label, make, size in cases:
            seconds, count = await median_seconds(make, rounds)
            shown = f"{size:>9}" if size else f"{'-':>9}"
            per_tool = seconds / count * 1e6
            print(f"{label:<16} {count:>6} {shown} {seconds * 1e3:>9.1f} {per_tool:>9.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--operations", type=int, default=600)
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.operations))

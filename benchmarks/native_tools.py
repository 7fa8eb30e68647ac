"""What argument validation costs a native tool call, and what defining a tool costs.

Times, in the same run:

- ``define_tool``: building a tool (schema inference through pydantic) for a function with five
  parameters (an int, a float with a default, a list of strings, a ``Literal`` and a nested
  dataclass), after pydantic has been imported once;
- ``execute (validated)``: ``tool.execute(args)`` for an async function: validation and
  coercion, the call, the result mapping;
- ``execute (explicit schema)``: the same function defined with ``input_schema=``, so the
  arguments are passed as received (no validation): the baseline.

Usage: ``python benchmarks/native_tools.py [--calls 20000]``
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
from typing import Literal

from toolnexus import define_tool


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


async def plot(
    count: int,
    scale: float = 1.0,
    tags: list[str] | None = None,
    mode: Literal["a", "b"] = "a",
    at: Point | None = None,
) -> str:
    """Plot something."""
    return f"{count} {scale} {tags} {mode} {at}"


ARGS = {"count": "3", "scale": 2, "tags": ["x", "y"], "mode": "b", "at": {"x": 1}}


async def per_call(tool_execute: object, calls: int) -> float:
    execute = tool_execute  # keep the attribute lookup out of the loop
    started = time.perf_counter()
    for _ in range(calls):
        await execute(ARGS, None)  # type: ignore[operator]
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    calls = parser.parse_args().calls

    define_tool(plot)  # imports pydantic once
    started = time.perf_counter()
    for _ in range(200):
        validated = define_tool(plot)
    define_us = (time.perf_counter() - started) / 200 * 1e6
    explicit = define_tool(plot, input_schema=validated.input_schema)

    checked = asyncio.run(per_call(validated.execute, calls))
    raw = asyncio.run(per_call(explicit.execute, calls))
    print(f"define_tool               {define_us:8.1f} us per tool")
    print(f"execute (validated)       {checked:8.1f} us per call")
    print(f"execute (explicit schema) {raw:8.1f} us per call")
    print(f"validation adds           {checked - raw:8.1f} us per call")


if __name__ == "__main__":
    main()

"""A small toolkit served in tests, in process or as ``python -m tests.serve.kit [profile]``."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field

import toolnexus as tn


@dataclass
class Probe:
    """What the ``wait`` tool saw: calls started, calls cancelled."""

    started: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    cancelled: asyncio.Queue[str] = field(default_factory=asyncio.Queue)


def make_tools(probe: Probe | None = None) -> list[tn.Tool]:
    """``echo``, ``boom`` (always raises) and ``wait(tag, seconds)``, in that order."""
    seen = probe if probe is not None else Probe()

    @tn.tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @tn.tool
    def boom() -> str:
        """Always raise."""
        raise RuntimeError("boom went the tool")

    @tn.tool
    async def wait(tag: str, seconds: float) -> str:
        """Wait, then answer the tag."""
        seen.started.put_nowait(tag)
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            seen.cancelled.put_nowait(tag)
            raise
        return tag

    return [echo, boom, wait]


async def _main(profile: dict[str, object]) -> None:
    async with tn.Toolkit(make_tools()) as tk:
        await tk.serve_stdio(mcp=profile)


if __name__ == "__main__":
    asyncio.run(_main(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}))

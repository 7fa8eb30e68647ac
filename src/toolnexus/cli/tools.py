"""``toolnexus tools``: what the model would see, with no model at all."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import ConfigError
from .sources import load_toolkit

__all__ = ["tools_command"]


async def tools_command(args: argparse.Namespace) -> int:
    """Print ``# mcp {server}: {status}`` lines then ``{name}\\t({source})`` per tool
    (or, with ``--json``, a JSON list of ``{name, source, description}``)."""
    try:
        toolkit = await load_toolkit(args)
    except ConfigError as exc:
        print(f"toolnexus: {exc}", file=sys.stderr)
        return 1
    async with toolkit:
        tools = toolkit.tools()
        if args.json:
            listing = [
                {"name": t.name, "source": t.source, "description": t.description} for t in tools
            ]
            print(json.dumps(listing, indent=2, ensure_ascii=False))
            return 0
        lines = [f"# mcp {name}: {status}" for name, status in sorted(toolkit.mcp_status().items())]
        lines += [f"{t.name}\t({t.source})" for t in tools]
        if lines:
            print("\n".join(lines))
    return 0

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
    (or, with ``--json``, a JSON list of ``{name, source, description}``).

    When a configured MCP server failed, a summary line on stderr names it; the exit code is
    then 1 with ``--strict`` (0 without, the listing being still what the model would see)."""
    try:
        toolkit = await load_toolkit(args)
    except ConfigError as exc:
        print(f"toolnexus: {exc}", file=sys.stderr)
        return 1
    async with toolkit:
        tools = toolkit.tools()
        status = toolkit.mcp_status()
        if args.json:
            listing = [
                {"name": t.name, "source": t.source, "description": t.description} for t in tools
            ]
            print(json.dumps(listing, indent=2, ensure_ascii=False))
        else:
            lines = [f"# mcp {name}: {state}" for name, state in sorted(status.items())]
            lines += [f"{t.name}\t({t.source})" for t in tools]
            if lines:
                print("\n".join(lines))
    failed = sorted(name for name, state in status.items() if state == "failed")
    if not failed:
        return 0
    outcome = "exit code 1 (--strict)" if args.strict else "exit code 0 (1 with --strict)"
    print(
        f"toolnexus: {len(failed)} of {len(status)} MCP servers failed ({', '.join(failed)}); "
        f"{outcome}",
        file=sys.stderr,
    )
    return 1 if args.strict else 0

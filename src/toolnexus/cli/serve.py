"""``toolnexus serve --mcp``: the toolkit as an MCP server (HTTP, or stdio with ``--stdio``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any

from ..errors import ConfigError
from .sources import load_toolkit

__all__ = ["serve_command"]


async def serve_command(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM (HTTP) or until stdin closes (``--stdio``)."""
    if not args.mcp:
        print("toolnexus serve: say which protocol to serve (--mcp)", file=sys.stderr)
        return 2
    profile: dict[str, Any] = {}
    if args.name:
        profile["name"] = args.name
    if args.tool:
        profile["tools"] = list(args.tool)
    try:
        toolkit = await load_toolkit(args)
    except ConfigError as exc:
        print(f"toolnexus: {exc}", file=sys.stderr)
        return 1
    async with toolkit:
        stop = asyncio.Event()
        with _on_sigterm(stop.set):
            if args.stdio:
                serving = asyncio.ensure_future(toolkit.serve_stdio(mcp=profile))
                stopped = asyncio.ensure_future(stop.wait())
                await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
                for task in (serving, stopped):
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await serving
                return 0
            try:
                handle = await toolkit.serve(args.addr, mcp=profile)
            except (ConfigError, OSError) as exc:
                print(f"toolnexus: cannot serve on {args.addr}: {exc}", file=sys.stderr)
                return 1
            print(f"serving MCP at {handle.url}/mcp", file=sys.stderr, flush=True)
            try:
                await stop.wait()
            finally:
                await handle.stop()
    return 0


@contextlib.contextmanager
def _on_sigterm(callback: Any) -> Any:
    """Call ``callback`` on SIGTERM while inside (where the platform allows it)."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGTERM, callback)
    except (NotImplementedError, RuntimeError):  # not on this platform / thread
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)

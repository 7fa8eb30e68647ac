"""The ``toolnexus`` command line: ``run``, ``tools`` and ``serve`` (see ``toolnexus --help``).

Exit codes: 0 done, 1 error, 2 usage (bad flags, no base URL or model), 3 incomplete (turn
limit), 4 pending (a tool needs a human and stdin is not a terminal), 130 interrupted (Ctrl-C).
The toolkit and every MCP server process it started are closed on every exit.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from .parser import build_parser

__all__ = ["main"]

EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    _log_warnings_to_stderr()
    try:
        return asyncio.run(_interruptible(_dispatch(args)))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``toolnexus tools | head``): point stdout at /dev/null so the
        # interpreter's final flush does not fail again, and end quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


async def _interruptible(work: Coroutine[Any, Any, int]) -> int:
    """Await ``work``; Ctrl-C (SIGINT) cancels it, so every ``finally`` and ``async with`` on
    the way out runs (closing the toolkit and its MCP server processes), and gives 130.

    The signal goes through the event loop's wake-up descriptor (``add_signal_handler``), not
    a plain Python handler: the kernel may deliver SIGINT to any thread of the process (the
    one waiting for an MCP server process, a stdin reader), and on some Python versions a
    plain handler then never runs while the loop sleeps, so the interrupt was lost.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):  # no such support here
        return await work
    try:
        return await work
    except asyncio.CancelledError:
        if interrupted:
            return EXIT_INTERRUPTED
        raise
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        from .run import run_command

        return await run_command(args)
    if args.command == "tools":
        from .tools import tools_command

        return await tools_command(args)
    from .serve import serve_command

    return await serve_command(args)


def _log_warnings_to_stderr() -> None:
    logger = logging.getLogger("toolnexus")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("toolnexus: %(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)

"""The toolkit every command builds from the shared flags (``--config``, ``--skills``,
``--no-builtins``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..toolkit import Toolkit, create_toolkit

__all__ = ["load_toolkit"]


async def load_toolkit(
    args: argparse.Namespace, *, wait_for: Callable[..., Any] | None = None
) -> Toolkit:
    """Load MCP servers, skills and (unless ``--no-builtins``) the built-in tools."""
    return await create_toolkit(
        mcp_config=args.config,
        skills_dir=list(args.skills) if args.skills else None,
        builtins=False if args.no_builtins else None,
        wait_for=wait_for,
    )

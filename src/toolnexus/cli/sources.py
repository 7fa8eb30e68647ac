"""The toolkit every command builds from the shared flags (``--config``, ``--skills``,
``--no-builtins``, ``--tokens``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..toolkit import Toolkit, create_toolkit

__all__ = ["load_toolkit"]


async def load_toolkit(
    args: argparse.Namespace, *, wait_for: Callable[..., Any] | None = None
) -> Toolkit:
    """Load MCP servers, skills and (unless ``--no-builtins``) the built-in tools; OAuth tokens
    go to the ``--tokens`` file when one is given."""
    from ..tools.mcp.tokens import FileTokenStore

    return await create_toolkit(
        mcp_config=args.config,
        skills_dir=list(args.skills) if args.skills else None,
        builtins=False if args.no_builtins else None,
        wait_for=wait_for,
        token_store=FileTokenStore(args.tokens) if args.tokens else None,
    )

"""MCP servers as a tool source.

``load_mcp_config`` parses an ``mcp.json``; ``McpSource`` (in ``.source``) connects its servers
and exposes their tools; ``list_mcp_tools`` reports what each server offers. The MCP SDK is
imported only when a server is actually contacted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...cancel import CancelToken
from .config import McpConfig, McpServerConfig, load_mcp_config
from .conversion import ToolInfo
from .tokens import FileTokenStore, MemoryTokenStore, TokenStore

if TYPE_CHECKING:
    from .session import WaitFor

__all__ = [
    "FileTokenStore",
    "McpConfig",
    "McpInventory",
    "McpServerConfig",
    "MemoryTokenStore",
    "TokenStore",
    "ToolInfo",
    "list_mcp_tools",
    "load_mcp_config",
]


@dataclass(slots=True)
class McpInventory:
    """What ``list_mcp_tools`` found: each connected server's tools, and every server's status."""

    tools: dict[str, list[ToolInfo]] = field(default_factory=dict)
    """Server name → its tools in listing order, original names, ``tools`` filter ignored."""
    status: dict[str, str] = field(default_factory=dict)
    """Server name → ``connected``, ``failed`` or ``disabled``, for every configured server."""


async def list_mcp_tools(
    config: str | os.PathLike[str] | Mapping[str, Any],
    *,
    cancel: CancelToken | None = None,
    token_store: TokenStore | None = None,
    wait_for: WaitFor | None = None,
) -> McpInventory:
    """Connect every enabled server, list its tools and close every connection again.

    Same isolation rules as a toolkit load: a failing server is only reported in ``status``.
    ``cancel`` aborts with ``RunCancelled`` after closing what was connected. Servers that
    need OAuth use the tokens in ``token_store`` (a toolkit's store, say) and ask ``wait_for``
    for a sign-in, as ``create_toolkit`` does.
    """
    from .source import McpSource

    source = await McpSource.connect(
        load_mcp_config(config), cancel=cancel, token_store=token_store, wait_for=wait_for
    )
    try:
        return McpInventory(tools=source.inventory(), status=source.status())
    finally:
        await source.close()

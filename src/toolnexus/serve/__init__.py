"""Serving a toolkit to other programs: MCP over streamable HTTP (``/mcp``) or stdio.

``Toolkit.serve`` and ``Toolkit.serve_stdio`` are the entry points; this package holds the
listener (``http``), the profile rules (``profile``) and the MCP adapter (``mcp_server``, the
only module here that imports the ``mcp`` SDK). Nothing here is imported by ``import toolnexus``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .http import Route, ServeHandle, parse_addr, start_http
from .profile import McpProfile, mcp_profile

if TYPE_CHECKING:
    from ..toolkit import Toolkit
    from .mcp_server import OnCall

__all__ = ["McpProfile", "ServeHandle", "mcp_profile", "serve_toolkit", "serve_toolkit_stdio"]


async def serve_toolkit(
    toolkit: Toolkit,
    addr: str,
    *,
    mcp: Mapping[str, Any] | McpProfile | None = None,
    on_call: OnCall | None = None,
    client: object | None = None,
    a2a: Mapping[str, Any] | None = None,
    on_task: object | None = None,
) -> ServeHandle:
    """Listen on ``addr`` and serve ``toolkit`` on each configured protocol (``Toolkit.serve``)."""
    host, _ = parse_addr(addr)
    if a2a is not None:
        raise ConfigError("serving over A2A is not available in this release")
    routes: list[Route] = []
    profile = _profile(toolkit, mcp)
    if profile is not None:
        from .mcp_server import build_mcp_server, mcp_route

        routes.append(mcp_route(build_mcp_server(toolkit.tools, profile, on_call), host))
    return await start_http(addr, routes)


async def serve_toolkit_stdio(
    toolkit: Toolkit,
    *,
    mcp: Mapping[str, Any] | McpProfile | None = None,
    on_call: OnCall | None = None,
) -> None:
    """Speak MCP on stdin/stdout until stdin closes (see ``Toolkit.serve_stdio``)."""
    from .mcp_server import build_mcp_server, run_stdio

    profile = _profile(toolkit, mcp) or McpProfile()
    await run_stdio(build_mcp_server(toolkit.tools, profile, on_call))


def _profile(toolkit: Toolkit, given: Mapping[str, Any] | McpProfile | None) -> McpProfile | None:
    if given is not None:
        return mcp_profile(given, where="mcp")
    block = toolkit.config.mcp_server if toolkit.config is not None else None
    return mcp_profile(block, where='config "mcpServer"') if block is not None else None

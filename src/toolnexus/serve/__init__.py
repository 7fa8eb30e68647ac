"""Serving a toolkit to other programs: MCP over streamable HTTP (``/mcp``) or stdio, A2A
(an agent card at ``/.well-known/agent-card.json``, JSON-RPC at ``/``), and the chat UI
(``ui``: AG-UI at ``/agui``, the AI SDK stream at ``/api/chat``, the page at ``/``).

``Toolkit.serve`` and ``Toolkit.serve_stdio`` are the entry points; this package holds the
listener (``http``), the profile rules (``profile``, ``a2a_profile``), the A2A task stores
(``a2a_store``), the MCP adapter (``mcp_server``, the only module here that imports the ``mcp``
SDK) and the A2A adapter (``a2a`` and ``a2a_executor``, the only ones that import ``a2a``).
Nothing here is imported by ``import toolnexus``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .a2a_profile import A2aProfile, a2a_profile
from .a2a_store import FileTaskStore, MemoryTaskStore, TaskStore
from .http import Route, ServeHandle, parse_addr, start_http
from .profile import McpProfile, mcp_profile

if TYPE_CHECKING:
    from ..client import Client
    from ..toolkit import Toolkit
    from .mcp_server import OnCall

__all__ = [
    "A2aProfile",
    "FileTaskStore",
    "McpProfile",
    "MemoryTaskStore",
    "ServeHandle",
    "TaskStore",
    "a2a_profile",
    "mcp_profile",
    "serve_toolkit",
    "serve_toolkit_stdio",
]

_INSTALL_A2A = "serving over A2A needs the a2a-sdk package: pip install 'toolnexus[a2a]'"


async def serve_toolkit(
    toolkit: Toolkit,
    addr: str,
    *,
    mcp: Mapping[str, Any] | McpProfile | None = None,
    on_call: OnCall | None = None,
    client: object | None = None,
    a2a: Mapping[str, Any] | A2aProfile | None = None,
    on_task: object | None = None,
    ui: Mapping[str, Any] | None = None,
) -> ServeHandle:
    """Listen on ``addr`` and serve ``toolkit`` on each configured protocol (``Toolkit.serve``)."""
    host, _ = parse_addr(addr)
    routes: list[Route] = []
    if ui is not None:
        from .ui import ui_profile, ui_routes

        routes.extend(ui_routes(toolkit, client, ui_profile(ui), host))
    profile = _profile(toolkit, mcp)
    if profile is not None:
        from .mcp_server import build_mcp_server, mcp_route

        routes.append(mcp_route(build_mcp_server(toolkit.tools, profile, on_call), host))
    agent = _a2a_profile(toolkit, a2a)
    if agent is None:
        return await start_http(addr, routes)
    served_by = _a2a_client(client)
    if on_task is not None and not callable(on_task):
        raise ConfigError(f"on_task must be callable, not {type(on_task).__name__}")
    try:
        from .a2a import a2a_routes
    except ImportError:
        raise ConfigError(_INSTALL_A2A) from None

    def with_a2a(url: str) -> list[Route]:
        return [*routes, *a2a_routes(toolkit, served_by, agent, on_task, url, host)]

    return await start_http(addr, with_a2a)


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


def _a2a_profile(
    toolkit: Toolkit, given: Mapping[str, Any] | A2aProfile | None
) -> A2aProfile | None:
    if given is not None:
        return a2a_profile(given, where="a2a")
    block = toolkit.config.a2a if toolkit.config is not None else None
    return a2a_profile(block, where='config "a2a"') if block is not None else None


def _a2a_client(client: object) -> Client:
    from ..client import Client

    if client is None:
        raise ConfigError("serving over A2A needs client=: the client that runs each task")
    if not isinstance(client, Client):
        raise ConfigError(
            f"client must be a toolnexus Client (create_client(...)), not {type(client).__name__}"
        )
    return client

"""Serving a toolkit to other programs: MCP over streamable HTTP (``/mcp``) or stdio, A2A
(an agent card at ``/.well-known/agent-card.json``, JSON-RPC at ``/``), and the chat UI
(``ui``: AG-UI at ``/agui``, the AI SDK stream at ``/api/chat``, the page at ``/``).

``Toolkit.serve`` and ``Toolkit.serve_stdio`` are the entry points; this package holds the
listener and the gate every route sits behind (``http``: Host/Origin allow-list, bearer auth,
body and connection limits), who may connect (``access``), the profile rules (``profile``,
``a2a_profile``), the A2A task stores (``a2a_store``), the MCP adapter (``mcp_server``, the
only module here that imports the ``mcp`` SDK) and the A2A adapter (``a2a`` and
``a2a_executor``, the only ones that import ``a2a``). Nothing here is imported by
``import toolnexus``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from .a2a_profile import A2aProfile, a2a_profile
from .a2a_store import (
    DEFAULT_MAX_TASKS,
    DEFAULT_TASK_TTL_S,
    FileTaskStore,
    MemoryTaskStore,
    TaskBounds,
    TaskStore,
)
from .access import AuthOption, HostRules, bearer_auth, is_loopback
from .http import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_READ_TIMEOUT_S,
    Access,
    Route,
    ServeHandle,
    ServeLimits,
    parse_addr,
    start_http,
)
from .profile import McpProfile, mcp_profile

if TYPE_CHECKING:
    from ..client import Client
    from ..toolkit import Toolkit
    from .mcp_server import OnCall

__all__ = [
    "A2aProfile",
    "AuthOption",
    "FileTaskStore",
    "McpProfile",
    "MemoryTaskStore",
    "ServeHandle",
    "ServeLimits",
    "TaskStore",
    "a2a_profile",
    "mcp_profile",
    "serve_toolkit",
    "serve_toolkit_stdio",
]

logger = logging.getLogger("toolnexus")

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
    auth: AuthOption = None,
    allow_unauthenticated: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_tasks: int = DEFAULT_MAX_TASKS,
    task_ttl_s: float = DEFAULT_TASK_TTL_S,
) -> ServeHandle:
    """Listen on ``addr`` and serve ``toolkit`` on each configured protocol (``Toolkit.serve``)."""
    host, _ = parse_addr(addr)
    authenticator = bearer_auth(auth)
    if not isinstance(allow_unauthenticated, bool):
        raise ConfigError("allow_unauthenticated must be True or False")
    limits = ServeLimits(max_request_bytes, read_timeout_s, max_connections)
    bounds = TaskBounds(max_tasks, task_ttl_s)
    profile = _profile(toolkit, mcp)
    agent = _a2a_profile(toolkit, a2a)
    public = urlsplit(agent.url).hostname if agent is not None and agent.url else None
    if isinstance(allowed_hosts, str) or isinstance(allowed_origins, str):
        raise ConfigError("allowed_hosts and allowed_origins must be lists of strings")
    announced = [public] if public else []
    hosts = HostRules.build(host, [*(allowed_hosts or ()), *announced], allowed_origins)
    loopback = is_loopback(host)
    if authenticator is None and not loopback:
        if not allow_unauthenticated:
            raise ConfigError(
                f"refusing to serve on {addr} without auth: it is not a loopback address, so "
                "anyone who can reach it could use the tools. Pass auth=[token] (toolnexus "
                "serve --token), or allow_unauthenticated=True (--insecure) to serve anyway"
            )
        logger.warning(
            "serving on %s without authentication: anyone who can reach it can use the tools",
            addr,
        )
    routes: list[Route] = []
    if ui is not None:
        from .ui import ui_profile, ui_routes

        routes.extend(ui_routes(toolkit, client, ui_profile(ui)))
    if profile is not None:
        from .mcp_server import build_mcp_server, mcp_route

        if authenticator is None and any(
            t.name == "bash" for t in profile.exposed(toolkit.tools())
        ):
            logger.warning(
                "serving the bash tool over MCP on %s without auth: any client can run commands",
                addr,
            )
        routes.append(mcp_route(build_mcp_server(toolkit, profile, on_call)))
    access = Access(authenticator, hosts)
    if agent is None:
        return await start_http(addr, routes, access=access, limits=limits)
    served_by = _a2a_client(client)
    if on_task is not None and not callable(on_task):
        raise ConfigError(f"on_task must be callable, not {type(on_task).__name__}")
    try:
        from .a2a import a2a_routes
    except ImportError:
        raise ConfigError(_INSTALL_A2A) from None
    if authenticator is None and toolkit.get("bash") is not None:
        logger.warning(
            "serving an agent with the bash tool over A2A on %s without auth: any caller can "
            "have the model run commands",
            addr,
        )
    private_errors = authenticator is not None or not loopback

    def with_a2a(url: str) -> list[Route]:
        agent_routes = a2a_routes(
            toolkit,
            served_by,
            agent,
            on_task,
            url,
            owned=authenticator is not None,
            bounds=bounds,
            private_errors=private_errors,
        )
        return [*routes, *agent_routes]

    return await start_http(addr, with_a2a, access=access, limits=limits)


async def serve_toolkit_stdio(
    toolkit: Toolkit,
    *,
    mcp: Mapping[str, Any] | McpProfile | None = None,
    on_call: OnCall | None = None,
) -> None:
    """Speak MCP on stdin/stdout until stdin closes (see ``Toolkit.serve_stdio``)."""
    from .mcp_server import build_mcp_server, run_stdio

    profile = _profile(toolkit, mcp) or McpProfile()
    await run_stdio(build_mcp_server(toolkit, profile, on_call))


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

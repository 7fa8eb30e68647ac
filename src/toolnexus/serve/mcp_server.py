"""A toolkit as an MCP server, on the official SDK's low-level ``Server``.

The only module of the serving side that imports ``mcp``. ``tools/list`` answers the exposed
tools in toolkit order; ``tools/call`` runs one through ``Tool.execute`` and answers exactly one
text item. A name that is not exposed is a JSON-RPC ``-32602`` error, never a result.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._callbacks import call_quietly
from ..cancel import CancelToken
from ..types import JSONObject, OnCall, Tool, ToolContext, ToolResult
from .http import Route
from .profile import McpProfile

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

__all__ = ["OnCall", "build_mcp_server", "execute", "mcp_route", "run_stdio"]

logger = logging.getLogger("toolnexus")

ToolsOf = Callable[[], list[Tool]]


def build_mcp_server(tools_of: ToolsOf, profile: McpProfile, on_call: OnCall | None) -> Server[Any]:
    """The SDK server answering ``tools/list`` and ``tools/call`` from ``tools_of()``.

    ``tools_of`` is read at every request, so tools registered later are served too.
    """
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    def exposed() -> list[Tool]:
        return profile.exposed(tools_of())

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name, description=t.description, input_schema=dict(t.input_schema)
                )
                for t in exposed()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        found = next((t for t in exposed() if t.name == params.name), None)
        if found is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        result = await execute(found, dict(params.arguments or {}), on_call)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.output)],
            is_error=result.is_error,
        )

    def input_schema(name: str) -> dict[str, Any] | None:
        found = next((t for t in exposed() if t.name == name), None)
        return dict(found.input_schema) if found is not None else None

    return Server(
        profile.name,
        version=profile.version,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


async def execute(tool: Tool, args: JSONObject, on_call: OnCall | None) -> ToolResult:
    """Run one served call: an exception is an error result; cancellation reaches the tool.

    The call gets its own ``CancelToken``, cancelled when the request is (the client went
    away or sent ``notifications/cancelled``), so a tool that polls ``ctx.cancel`` stops too.
    """
    token = CancelToken()
    started = time.perf_counter()
    try:
        result = await tool.execute(args, ToolContext(cancel=token))
    except asyncio.CancelledError:
        token.cancel()
        raise
    except Exception as exc:
        result = ToolResult(str(exc) or type(exc).__name__, is_error=True)
    if not isinstance(result, ToolResult):  # a hand-built Tool returning something else
        result = ToolResult(str(result))
    ms = (time.perf_counter() - started) * 1000.0
    info: JSONObject = {
        "name": tool.name,
        "source": tool.source,
        "ms": ms,
        "is_error": result.is_error,
    }
    await call_quietly(on_call, info, what="on_call")
    return result


async def run_stdio(server: Server[Any]) -> None:
    """Speak MCP over this process's stdin/stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def mcp_route(server: Server[Any], host: str) -> Route:
    """``/mcp``: stateless streamable HTTP with JSON responses (a fresh session per request).

    On a loopback host the SDK's DNS-rebinding protection is on (only loopback ``Host`` and
    ``Origin`` values are accepted); on another bind address every host is accepted.
    """
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from mcp.server.transport_security import TransportSecuritySettings

    security = None
    if host in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(
        app=server, json_response=True, stateless=True, security_settings=security
    )
    return Route("/mcp", StreamableHTTPASGIApp(manager), manager.run)

"""A toolkit as an MCP server, on the official SDK's low-level ``Server``.

The only module of the serving side that imports ``mcp``. ``tools/list`` answers the exposed
tools in toolkit order; ``tools/call`` runs one through ``Toolkit.execute`` (validation,
secret masking, ``max_output_chars``, exactly as in a local run) and answers exactly one text
item. A name that is not exposed is a JSON-RPC ``-32602`` error, never a result.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._callbacks import call_quietly
from ..cancel import CancelToken
from ..types import JSONObject, Tool, ToolContext, ToolResult
from .http import Route, Scope
from .profile import McpProfile

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from ..toolkit import Toolkit

__all__ = ["OnCall", "build_mcp_server", "execute", "mcp_route", "run_stdio"]

logger = logging.getLogger("toolnexus")

OnCall = Callable[[JSONObject], Any]
"""Called with ``{"name", "source", "ms", "is_error"}`` after each executed call."""


def build_mcp_server(toolkit: Toolkit, profile: McpProfile, on_call: OnCall | None) -> Server[Any]:
    """The SDK server answering ``tools/list`` and ``tools/call`` from ``toolkit``.

    The toolkit's tools are read at every request, so tools registered later are served too.
    """
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    def exposed() -> list[Tool]:
        return profile.exposed(toolkit.tools())

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
        result = await execute(toolkit, found, dict(params.arguments or {}), on_call)
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


async def execute(
    toolkit: Toolkit, tool: Tool, args: JSONObject, on_call: OnCall | None
) -> ToolResult:
    """Run one served call through ``toolkit.execute``: cancellation reaches the tool.

    The call gets its own ``CancelToken``, cancelled when the request is (the client went
    away or sent ``notifications/cancelled``), so a tool that polls ``ctx.cancel`` stops too.
    """
    token = CancelToken()
    started = time.perf_counter()
    try:
        result = await toolkit.execute(tool.name, args, ToolContext(cancel=token))
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


def mcp_route(server: Server[Any]) -> Route:
    """``/mcp``: stateless streamable HTTP with JSON responses (a fresh session per request).

    Host, Origin and auth are the listener's gate's (``http``). A stateless server has no
    stream to open and no session to end: ``GET`` and ``DELETE`` are answered 405.
    """
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )

    manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)
    sdk_app = StreamableHTTPASGIApp(manager)

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("method") in ("GET", "DELETE"):
            text = b"this MCP endpoint is stateless: POST JSON-RPC requests to it"
            await send(
                {
                    "type": "http.response.start",
                    "status": 405,
                    "headers": [
                        (b"allow", b"POST"),
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(text)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": text})
            return
        await sdk_app(scope, receive, send)

    return Route("/mcp", app, manager.run)

"""MCP servers as a tool source: connect them all, expose their tools, close them.

The MCP SDK is only imported lazily (by ``session.py``, inside functions), so importing this
module stays cheap and ``import toolnexus`` never loads the SDK.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...cancel import CancelToken, set_on_cancel
from ...errors import RunCancelled
from ...types import JSONObject, Tool, ToolContext, ToolResult
from .config import McpConfig
from .conversion import (
    ToolInfo,
    fill_schema,
    requires_task,
    select_tools,
    tool_annotations,
    tool_info,
    tool_names,
)
from .session import ServerConnection, WaitFor
from .tokens import TokenStore

__all__ = ["McpSource"]

logger = logging.getLogger("toolnexus")


class McpSource:
    """The servers of one MCP config, connected concurrently; build one with ``connect``.

    A server that cannot be reached is ``failed`` (with a warning on the ``toolnexus`` logger)
    and contributes no tools; the others are unaffected. ``close()`` ends every session and
    stops every stdio child process.
    """

    def __init__(
        self,
        config: McpConfig,
        *,
        wait_for: WaitFor | None = None,
        token_store: TokenStore | None = None,
    ) -> None:
        self._servers = [
            ServerConnection(s, wait_for=wait_for, token_store=token_store) for s in config.servers
        ]
        self._tools: list[Tool] | None = None
        self._closed = False

    @classmethod
    async def connect(
        cls,
        config: McpConfig,
        *,
        cancel: CancelToken | None = None,
        wait_for: WaitFor | None = None,
        token_store: TokenStore | None = None,
    ) -> McpSource:
        """Connect every enabled server concurrently and list its tools.

        Never raises because of a server. ``wait_for`` answers elicitations and the sign-in
        of servers that need OAuth; ``token_store`` keeps their tokens (in memory by default).
        ``cancel`` aborts the whole load: whatever was
        connected is closed and ``RunCancelled`` is raised. Cancelling the awaiting task
        closes everything too before ``asyncio.CancelledError`` propagates.
        """
        if cancel is not None and cancel.cancelled:
            raise RunCancelled("MCP load cancelled")
        source = cls(config, wait_for=wait_for, token_store=token_store)
        starts = [
            asyncio.create_task(server.start(), name=f"mcp-start:{server.name}")
            for server in source._servers
            if server.config.enabled
        ]
        if not starts:
            return source
        fired = asyncio.Event()
        unregister = set_on_cancel(cancel, fired)
        watcher = asyncio.create_task(fired.wait())
        all_started = asyncio.create_task(asyncio.wait(starts))
        try:
            await asyncio.wait([all_started, watcher], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await source._abort(starts)
            raise
        finally:
            unregister()
            watcher.cancel()
            all_started.cancel()
        if fired.is_set():
            await source._abort(starts)
            raise RunCancelled("MCP load cancelled")
        return source

    def tools(self) -> list[Tool]:
        """Every exposed tool: servers in config order, each in its listing order."""
        if self._tools is None:
            self._tools = [tool for server in self._servers for tool in _server_tools(server)]
        return list(self._tools)

    def inventory(self) -> dict[str, list[ToolInfo]]:
        """Each connected server's tools, unfiltered, under their original names."""
        return {
            server.name: [tool_info(server.name, definition) for definition in server.listed]
            for server in self._servers
            if server.status == "connected"
        }

    def status(self) -> dict[str, str]:
        """``{server: "connected" | "failed" | "disabled"}`` for every configured server."""
        return {server.name: server.status for server in self._servers}

    def failures(self) -> dict[str, str]:
        """``{server: reason}`` for every enabled server that is ``failed``."""
        return {
            server.name: server.last_failure
            for server in self._servers
            if server.config.enabled and server.status == "failed"
        }

    async def close(self) -> None:
        """End every session and stop every stdio child; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(server.close() for server in self._servers))

    async def _abort(self, starts: list[asyncio.Task[None]]) -> None:
        """Cancel unfinished connections and close the finished ones."""
        for task in starts:
            task.cancel()
        await asyncio.wait(starts)
        await self.close()

    def __repr__(self) -> str:
        return f"McpSource({self.status()})"


def _server_tools(server: ServerConnection) -> list[Tool]:
    if server.status != "connected":
        return []
    names = [str(definition.name) for definition in server.listed]
    keep = select_tools(server.name, names, server.config.tools)
    offered = []
    for definition in server.listed:
        if str(definition.name) not in keep:
            continue
        if requires_task(definition):
            logger.info(
                'MCP server "%s": tool "%s" is left out: it can only run as an MCP task',
                server.name,
                definition.name,
            )
            continue
        offered.append(definition)
    final = tool_names(server.name, [str(d.name) for d in offered])
    return [_make_tool(server, d, final[str(d.name)]) for d in offered]


def _make_tool(server: ServerConnection, definition: Any, name: str) -> Tool:
    original = str(definition.name)

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        return await server.call(original, dict(args or {}), ctx)

    return Tool(
        name=name,
        description=definition.description or "",
        input_schema=fill_schema(definition.input_schema),
        source="mcp",
        execute=execute,
        annotations=tool_annotations(server.name, definition),
    )

"""One MCP server's lifecycle: connect, list, call, reconnect once, close.

Each connection lives in its own asyncio task (the *owner*) that enters the transport and the
``ClientSession`` contexts and exits them again, because the SDK's anyio cancel scopes must be
entered and left by the same task. Tool calls from any task go through the session the owner
holds open. The MCP SDK is imported lazily, inside functions, so ``import toolnexus`` never
loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..._env import expand_env, unsendable
from ..._redact import redact
from ...suspension import Answer, Request
from ...types import JSONObject, ToolContext, ToolResult
from . import transports
from .config import McpServerConfig
from .conversion import error_result, to_tool_result
from .elicitation import elicitation_callback
from .transports import HttpStatusError, SessionFlags

__all__ = ["ServerConnection", "WaitFor"]

logger = logging.getLogger("toolnexus")

WaitFor = Callable[[Request], "Answer | Awaitable[Answer | None] | None"]
"""The host's ``wait_for`` callback, used to answer elicitation requests."""

_MAX_PAGES = 1000
_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
_GONE_MESSAGES = frozenset({"Session terminated", "Session not found"})


class _SessionLost(Exception):
    """The server's session is gone (process exited, connection closed, session terminated)."""


class _PhaseTimeout(Exception):
    """A connection phase ran out of its budget."""


class _ConnectFailed(Exception):
    """Neither streamable HTTP nor the SSE fallback worked."""


@dataclass(slots=True)
class _Live:
    """A usable session and what its transport learnt about it."""

    session: Any
    flags: SessionFlags


@dataclass(eq=False)
class _Owner:
    """One owner task and the signals between it and the connection."""

    ready: asyncio.Future[tuple[_Live, list[Any]]]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    connected: bool = False
    reported: bool = False
    cancelled: bool = False

    def succeed(self, live: _Live, listed: list[Any]) -> None:
        """Hand the connected session to whoever waits for it."""
        self.connected = self.reported = True
        if not self.ready.done():
            self.ready.set_result((live, listed))

    def fail(self, exc: BaseException) -> bool:
        """Report a failure to whoever waits for the connection; ``False`` if already told."""
        if self.reported:
            return False
        self.reported = True
        if not self.ready.done():
            self.ready.set_exception(exc)
        return True

    def shut(self) -> None:
        """Make the owner leave its contexts.

        A connected owner is told to stop; one still connecting is cancelled (once); one that
        has reported a failure is already tearing down and must not be interrupted (a second
        cancellation could cut the SDK's shielded process shutdown short).
        """
        if self.connected:
            self.stop.set()
        elif not self.reported and not self.cancelled and self.task is not None:
            self.cancelled = True
            self.task.cancel()


class ServerConnection:
    """A configured MCP server: its session, its listed tools and its status."""

    def __init__(self, config: McpServerConfig, *, wait_for: WaitFor | None = None) -> None:
        self.config = config
        self.name = config.name
        self.status = "disabled" if not config.enabled else "failed"
        self.listed: list[Any] = []
        """The server's tool definitions (SDK objects), in listing order."""
        self._wait_for = wait_for
        self._live: _Live | None = None
        self._owners: list[_Owner] = []
        self._lock = asyncio.Lock()
        self._generation = 0
        self._closed = False
        self._last_failure = "not connected"

    @property
    def timeout(self) -> float:
        """The server's budget in seconds (per connection phase and per call)."""
        return self.config.timeout_ms / 1000

    async def start(self) -> None:
        """Connect, initialize and list the tools; sets ``status``. Never raises for the server.

        ``asyncio.CancelledError`` propagates after the server has been torn down.
        """
        if self.config.problem is not None:
            self._report(self.config.problem)
            return
        try:
            self.listed = await self._open(list_tools=True)
        except Exception as exc:
            self._report(self._reason(exc))
            return
        self.status = "connected"

    async def call(self, tool: str, args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        """Call ``tool``; on a lost session reconnect once and retry once. Never raises."""
        limit = self.timeout
        if ctx is not None and ctx.timeout is not None:
            limit = min(limit, ctx.timeout)
        generation, live = self._generation, self._live
        try:
            result = await self._call_on(live, tool, args, limit)
        except Exception as exc:
            if self._closed:
                return error_result(f'MCP server "{self.name}" is closed', self.name)
            if not _is_session_loss(exc, live):
                return error_result(self._reason(exc), self.name)
            return await self._retry(tool, args, limit, generation)
        return to_tool_result(result, self.name)

    async def close(self) -> None:
        """End the session and wait until every owner task has left its contexts."""
        self._closed = True
        self._live = None
        owners, self._owners = self._owners, []
        for owner in owners:
            owner.shut()
        tasks = [owner.task for owner in owners if owner.task is not None]
        if tasks:
            await asyncio.wait(tasks)

    # -- calls ---------------------------------------------------------------------------

    async def _call_on(self, live: _Live | None, tool: str, args: JSONObject, limit: float) -> Any:
        if live is None:
            raise _SessionLost(f'MCP server "{self.name}" is not connected')
        return await live.session.call_tool(tool, args, read_timeout_seconds=limit)

    async def _retry(self, tool: str, args: JSONObject, limit: float, seen: int) -> ToolResult:
        async with self._lock:
            if self._closed:
                return error_result(f'MCP server "{self.name}" is closed', self.name)
            if self._generation == seen:
                await self._reconnect()
        live = self._live
        if live is None:
            message = f'MCP server "{self.name}" is unavailable: {self._last_failure}'
            return error_result(message, self.name)
        try:
            result = await self._call_on(live, tool, args, limit)
        except Exception as exc:
            if _is_session_loss(exc, live) and not self._closed and self._live is live:
                self._live = None
                self._report(self._reason(exc))
            return error_result(f'MCP server "{self.name}": {self._reason(exc)}', self.name)
        return to_tool_result(result, self.name)

    async def _reconnect(self) -> None:
        """Replace a lost session with a fresh one (no re-listing); sets ``status``.

        The generation moves on only when the attempt is over, so calls that noticed the loss
        while it was running retry on its outcome instead of reconnecting again.
        """
        self._live = None
        self._owners = [owner for owner in self._owners if not owner.task or not owner.task.done()]
        for owner in self._owners:
            owner.shut()  # its teardown runs on; close() still waits for it
        try:
            await self._open(list_tools=False)
        except Exception as exc:
            self._report(self._reason(exc))
            return
        finally:
            self._generation += 1
        self.status = "connected"

    # -- connection ----------------------------------------------------------------------

    async def _open(self, *, list_tools: bool) -> list[Any]:
        """Start an owner task and wait until it is connected (or has failed)."""
        owner = _Owner(ready=asyncio.get_running_loop().create_future())
        owner.task = asyncio.create_task(self._own(owner, list_tools), name=f"mcp:{self.name}")
        self._owners.append(owner)
        try:
            live, listed = await owner.ready
        except asyncio.CancelledError:
            owner.shut()
            await asyncio.wait([owner.task])
            raise
        if self._closed:
            owner.shut()
            raise _SessionLost(f'MCP server "{self.name}" was closed while connecting')
        self._live = live
        return listed

    async def _own(self, owner: _Owner, list_tools: bool) -> None:
        """The owner task: hold the transport and session open until told to stop.

        Errors and cancellations travel through the contexts (whose anyio task groups need to
        see them). A plain failure is reported through ``owner.ready`` before that teardown,
        so a load never waits for a broken server to exit; ``close()`` waits for it instead.
        """
        try:
            async with contextlib.AsyncExitStack() as stack:
                live = await self._connect(stack, owner)
                listed = await self._list_tools(live.session, owner) if list_tools else []
                owner.succeed(live, listed)
                await owner.stop.wait()
        except asyncio.CancelledError:
            owner.fail(_SessionLost(f'MCP server "{self.name}" was closed'))
        except Exception as exc:
            if not owner.fail(exc):
                logger.debug('MCP server "%s" ended with %s', self.name, type(_leaf(exc)).__name__)

    async def _connect(self, stack: contextlib.AsyncExitStack, owner: _Owner) -> _Live:
        """Open the transport and ``initialize``: stdio, or streamable HTTP then SSE."""
        config = self.config
        if config.type == "local":
            return await self._attempt(stack, lambda flags: transports.stdio(config), owner)
        assert config.url is not None
        url, headers = config.url, self._headers()
        try:
            return await self._attempt(
                stack, lambda flags: transports.streamable_http(url, headers, flags), None
            )
        except Exception as first:
            logger.debug('MCP server "%s": streamable HTTP failed, trying SSE', self.name)
            prefix = f"streamable HTTP: {self._reason(first)}; SSE: "
            try:
                return await self._attempt(
                    stack, lambda flags: transports.sse(url, headers, self.timeout), owner, prefix
                )
            except Exception as second:
                raise _ConnectFailed(prefix + self._reason(second)) from None

    async def _attempt(
        self,
        stack: contextlib.AsyncExitStack,
        transport: Callable[[SessionFlags], transports.Streams],
        owner: _Owner | None,
        prefix: str = "",
    ) -> _Live:
        """Connect over one transport; on success its contexts move to ``stack``.

        With an ``owner`` (the last attempt), a failure is reported before the teardown.
        """
        from mcp.client.session import ClientSession

        flags = SessionFlags()
        callback = elicitation_callback(self.name, self._wait_for)
        async with contextlib.AsyncExitStack() as attempt:
            try:
                async with self._phase("connect"):
                    read, write = await attempt.enter_async_context(transport(flags))
                    session = await attempt.enter_async_context(
                        ClientSession(read, write, elicitation_callback=callback)
                    )
                async with self._phase("initialize"):
                    await session.initialize()
            except Exception as exc:
                if owner is not None:
                    owner.fail(_ConnectFailed(prefix + self._reason(exc)) if prefix else exc)
                raise
            stack.push_async_exit(attempt.pop_all())
        return _Live(session, flags)

    async def _list_tools(self, session: Any, owner: _Owner) -> list[Any]:
        """Every tool over all pages; a failure is reported to ``owner`` before the teardown."""
        try:
            return await self._all_pages(session)
        except Exception as exc:
            owner.fail(exc)
            raise

    async def _all_pages(self, session: Any) -> list[Any]:
        """Follow ``nextCursor``; a repeated cursor or too many pages is an error."""
        from mcp.types import PaginatedRequestParams

        tools: list[Any] = []
        seen: set[str] = set()
        cursor: str | None = None
        async with self._phase("tools/list"):
            for _ in range(_MAX_PAGES):
                params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
                page = await session.list_tools(params=params)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return tools
                if cursor in seen:
                    raise RuntimeError(f"tools/list repeated the cursor {cursor!r}")
                seen.add(cursor)
        raise RuntimeError(f"tools/list returned more than {_MAX_PAGES} pages")

    @contextlib.asynccontextmanager
    async def _phase(self, phase: str) -> AsyncIterator[None]:
        """Give one phase a fresh ``timeout`` budget."""
        try:
            async with asyncio.timeout(self.timeout):
                yield
        except TimeoutError:
            raise _PhaseTimeout(f"{phase} timed out after {self.config.timeout_ms} ms") from None

    def _headers(self) -> dict[str, str]:
        """The expanded headers; one that cannot be sent fails the connection, unsent."""
        headers = {name: expand_env(value) for name, value in self.config.headers.items()}
        for name, value in headers.items():
            if unsendable(value):
                raise ValueError(
                    f'header "{name}" contains a line break or another control character '
                    "(after ${...} expansion); it was not sent"
                )
        return headers

    def _secrets(self) -> list[str]:
        """Every expanded header value and every variable it used, longest first."""
        found: set[str] = set()
        for raw in self.config.headers.values():
            names = _VAR.findall(raw)
            if names:
                found.add(expand_env(raw))
                found.update(os.environ.get(name, "") for name in names)
        return sorted((s for s in found if s), key=len, reverse=True)

    # -- reporting -----------------------------------------------------------------------

    def _report(self, reason: str) -> None:
        self.status = "failed"
        self._last_failure = reason
        logger.warning('MCP server "%s" failed: %s', self.name, reason)

    def _reason(self, exc: BaseException) -> str:
        """A one-line description of ``exc`` with every expanded header value masked."""
        leaf = _leaf(exc)
        if isinstance(leaf, HttpStatusError):
            return f"{self._reason(leaf.cause)} (HTTP {leaf.status})"
        text = str(leaf).strip() or type(leaf).__name__
        for secret in self._secrets():
            text = text.replace(secret, "***")
        return redact(" ".join(redact(text).split()))


def _leaf(exc: BaseException) -> BaseException:
    """The first meaningful exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _is_session_loss(exc: BaseException, live: _Live | None) -> bool:
    """Whether a failed call means the session itself is gone."""
    import anyio
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    exc = _leaf(exc)
    if isinstance(exc, MCPError):
        if live is not None and live.flags.gone:
            return True
        return exc.code == CONNECTION_CLOSED or exc.message in _GONE_MESSAGES
    return isinstance(
        exc, _SessionLost | ConnectionError | anyio.ClosedResourceError | anyio.BrokenResourceError
    )

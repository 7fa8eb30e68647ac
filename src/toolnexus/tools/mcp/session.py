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
import time
from collections.abc import Callable
from typing import Any

from ..._env import expand_header, unsendable, unset_variables
from ..._redact import redact
from ...cancel import set_on_cancel
from ...suspension import Answer, pending
from ...types import JSONObject, ToolContext, ToolResult, WaitFor
from . import transports
from .calls import Budget, Parked, secrets_of, timed_call
from .config import McpServerConfig
from .conversion import error_result, to_tool_result
from .elicitation import elicitation_callback
from .failures import (
    PhaseError,
    SessionLost,
    is_closed,
    is_session_loss,
    leaf,
    phase,
    reason_of,
)
from .oauth import AuthorizationFailed, Authorizer, create_auth
from .owner import Live, Owner
from .stdio_child import StderrTail, server_logger
from .tokens import TokenStore
from .transports import HttpStatusError, SessionFlags

__all__ = ["ServerConnection", "WaitFor"]

logger = logging.getLogger("toolnexus")


_MAX_PAGES = 1000


class CallCancelled(Exception):
    """The call's cancel token fired; the server was sent ``notifications/cancelled``."""


async def _abandon(task: asyncio.Future[Any]) -> None:
    """Cancel an in-flight ``tools/call`` and wait (briefly) until the SDK has let it go.

    Cancelling the call's task makes the SDK send ``notifications/cancelled`` for the request.
    Whatever the task ends with is retrieved here, so nothing is left unobserved.
    """
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=_ABANDON_S)
    for finished in done:
        if not finished.cancelled():
            finished.exception()


_ABANDON_S = 2.0


class _ConnectFailed(Exception):
    """Neither streamable HTTP nor the SSE fallback worked."""


def _is_authorization_failure(exc: BaseException) -> bool:
    """Whether connecting failed in the OAuth flow (a declined or broken sign-in)."""
    from mcp.client.auth import OAuthFlowError

    cause = leaf(exc)
    while isinstance(cause, PhaseError | HttpStatusError):
        cause = leaf(cause.cause)
    return isinstance(cause, AuthorizationFailed | OAuthFlowError)


class ServerConnection:
    """A configured MCP server: its session, its listed tools and its status."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        wait_for: WaitFor | None = None,
        token_store: TokenStore | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.status = "disabled" if not config.enabled else "failed"
        self.listed: list[Any] = []
        """The server's tool definitions (SDK objects), in listing order."""
        self._wait_for = wait_for
        self._token_store = token_store
        self._authorizer = Authorizer(config.name, wait_for)
        self._auth: Any = None
        self._tail: StderrTail | None = None
        self._live: Live | None = None
        self._owners: list[Owner] = []
        self._parked: dict[str, tuple[asyncio.Task[Any], Budget]] = {}
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
        self._warn_unset_variables()
        started = time.perf_counter()
        logger.info('MCP server "%s": connecting (%s)', self.name, self._transport_name())
        try:
            self.listed = await self._open(list_tools=True)
        except Exception as exc:
            self._report(await self._failure(exc))
            return
        finally:
            self._authorizer.mode = "call"
        self.status = "connected"
        logger.info(
            'MCP server "%s": ready, %d tools in %.0f ms',
            self.name,
            len(self.listed),
            (time.perf_counter() - started) * 1000,
        )

    @property
    def last_failure(self) -> str:
        """Why the server last failed (or ``"not connected"``)."""
        return self._last_failure

    def _transport_name(self) -> str:
        if self.config.type == "local":
            return f"stdio: {os.path.basename(self.config.command[0])}"
        return "streamable HTTP, SSE as fallback"

    def _warn_unset_variables(self) -> None:
        """A warning per ``${NAME}`` in a header or ``env`` value that is not set (→ "")."""
        for where, values in (("header", self.config.headers), ("env", self.config.env)):
            for key, raw in values.items():
                for name in unset_variables([raw]):
                    logger.warning(
                        'MCP server "%s": %s %s uses ${%s}, which is not set; it is sent '
                        "as an empty string",
                        self.name,
                        where,
                        key,
                        name,
                    )

    async def call(self, tool: str, args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        """Call ``tool``; on a lost session reconnect once and retry once. Never raises.

        When the server needs a person to authorize first, the result is a suspension; the
        same call executed again with the answer continues the waiting flow.
        """
        answer = ctx.answer if ctx is not None else None
        if answer is not None and self._authorizer.waiting_for(answer):
            return await self._resume_parked(answer)
        generation, live = self._generation, self._live
        try:
            result = await self._call_on(live, tool, args, ctx)
        except Parked as parked:
            return parked.result
        except CallCancelled:
            return self._error("call cancelled; the server was told to stop")
        except Exception as exc:
            if self._closed:
                return error_result(f'MCP server "{self.name}" is closed', self.name)
            if not is_session_loss(exc, live.flags if live else None):
                return self._error(await self._failure(exc))
            return await self._retry(tool, args, ctx, generation)
        return to_tool_result(result, self.name)

    async def close(self) -> None:
        """End the session and wait until every owner task has left its contexts."""
        self._closed = True
        self._live = None
        self._authorizer.abandon()  # a sign-in nobody answered must not hold the close up
        for task, _ in self._parked.values():
            task.cancel()
        self._parked.clear()
        owners, self._owners = self._owners, []
        for owner in owners:
            owner.shut()
        tasks = [owner.task for owner in owners if owner.task is not None]
        if tasks:
            await asyncio.wait(tasks)
        if self._tail is not None:
            self._tail.close()

    # -- calls ---------------------------------------------------------------------------

    async def _call_on(
        self, live: Live | None, tool: str, args: JSONObject, ctx: ToolContext | None
    ) -> Any:
        """One ``tools/call``; parked (``Parked``) when a person must authorize first."""
        if live is None:
            raise SessionLost("not connected")
        budget = Budget(
            self.timeout if ctx is None or ctx.timeout is None else min(self.timeout, ctx.timeout)
        )
        task = asyncio.ensure_future(
            timed_call(live.session, tool, args, ctx, budget, self.config.reset_timeout_on_progress)
        )
        requested = asyncio.ensure_future(self._authorizer.requested.wait())
        fired = asyncio.Event()
        unwatch = set_on_cancel(ctx.cancel if ctx is not None else None, fired)
        cancelled = asyncio.ensure_future(fired.wait())
        try:
            await asyncio.wait({task, requested, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await _abandon(task)  # the SDK tells the server (notifications/cancelled)
            raise
        finally:
            unwatch()
            requested.cancel()
            cancelled.cancel()
        if fired.is_set() and not task.done():
            await _abandon(task)
            raise CallCancelled("call cancelled")
        request = self._authorizer.request
        if task.done() or request is None:
            return await task
        budget.pause()
        self._parked[request.id] = (task, budget)
        raise Parked(pending(request))

    async def _resume_parked(self, answer: Answer) -> ToolResult:
        """Give the answer to the flow a parked call waits in, then finish that call."""
        request = self._authorizer.request
        parked = self._parked.pop(request.id, None) if request is not None else None
        self._authorizer.deliver(answer)
        if parked is None:
            return self._error("call: the authorization it waited for is gone")
        task, budget = parked
        budget.restart()
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            await _abandon(task)
            raise
        except Exception as exc:
            return self._error(await self._failure(exc))
        return to_tool_result(result, self.name)

    async def _retry(
        self, tool: str, args: JSONObject, ctx: ToolContext | None, seen: int
    ) -> ToolResult:
        async with self._lock:
            if self._closed:
                return error_result(f'MCP server "{self.name}" is closed', self.name)
            if self._generation == seen:
                await self._reconnect()
        live = self._live
        if live is None:
            return self._error(f"unavailable: {self._last_failure}")
        try:
            result = await self._call_on(live, tool, args, ctx)
        except Parked as parked:
            return parked.result
        except CallCancelled:
            return self._error("call cancelled; the server was told to stop")
        except Exception as exc:
            reason = await self._failure(exc)
            if is_session_loss(exc, live.flags) and not self._closed and self._live is live:
                self._live = None
                self._report(reason)
            return self._error(reason)
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
            self._report(await self._failure(exc))
            return
        finally:
            self._generation += 1
        self.status = "connected"

    # -- connection ----------------------------------------------------------------------

    async def _open(self, *, list_tools: bool) -> list[Any]:
        """Start an owner task and wait until it is connected (or has failed)."""
        owner = Owner(ready=asyncio.get_running_loop().create_future())
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
            raise SessionLost("closed while connecting")
        self._live = live
        return listed

    async def _own(self, owner: Owner, list_tools: bool) -> None:
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
            owner.fail(SessionLost("closed"))
        except Exception as exc:
            if not owner.fail(exc):
                logger.debug('MCP server "%s" ended with %s', self.name, type(leaf(exc)).__name__)

    async def _connect(self, stack: contextlib.AsyncExitStack, owner: Owner) -> Live:
        """Open the transport and ``initialize``: stdio, or streamable HTTP then SSE."""
        config = self.config
        if config.type == "local":
            if self._tail is not None:
                self._tail.close()
            tail = self._tail = StderrTail(server_logger(self.name))
            return await self._attempt(stack, lambda flags: transports.stdio(config, tail), owner)
        assert config.url is not None
        url, headers = config.url, self._headers()
        auth = await self._oauth(url)
        seen = SessionFlags()

        def streamable(flags: SessionFlags) -> transports.Streams:
            nonlocal seen
            seen = flags
            return transports.streamable_http(url, headers, flags, auth)

        try:
            return await self._attempt(stack, streamable, None)
        except Exception as first:
            if _is_authorization_failure(first):  # SSE would only ask the person again
                if isinstance(leaf(first), PhaseError):
                    raise
                raise _ConnectFailed(f"connect: {self._reason(first)}") from None
            if seen.offers_oauth and config.oauth is None:  # SSE would be refused the same way
                raise _ConnectFailed(
                    f"connect: {self._reason(first)}; the server asks for an OAuth sign-in: "
                    'set "oauth": true in its entry of the MCP config'
                ) from None
            logger.debug('MCP server "%s": streamable HTTP failed, trying SSE', self.name)
            prefix = f"streamable HTTP: {self._reason(first)}; SSE: "
            try:
                return await self._attempt(
                    stack,
                    lambda flags: transports.sse(url, headers, self.timeout, auth),
                    owner,
                    prefix,
                )
            except Exception as second:
                raise _ConnectFailed(prefix + self._reason(second)) from None

    async def _oauth(self, url: str) -> Any:
        """The server's OAuth provider (made once), or ``None`` when OAuth is off."""
        config = self.config.oauth
        if config is None or any(h.lower() == "authorization" for h in self.config.headers):
            return None
        if self._auth is None:
            self._auth = await create_auth(
                self.name, url, config, self._token_store, self._authorizer
            )
        return self._auth

    async def _attempt(
        self,
        stack: contextlib.AsyncExitStack,
        transport: Callable[[SessionFlags], transports.Streams],
        owner: Owner | None,
        prefix: str = "",
    ) -> Live:
        """Connect over one transport; on success its contexts move to ``stack``.

        With an ``owner`` (the last attempt), a failure is reported before the teardown.
        """
        from mcp.client.session import ClientSession
        from mcp.types import Implementation

        from ... import __version__

        flags = SessionFlags()
        callback = elicitation_callback(self.name, self._wait_for)
        identity = Implementation(name="toolnexus", version=__version__)
        budget = self.config.timeout_ms
        async with contextlib.AsyncExitStack() as attempt:
            try:
                async with phase("connect", budget):
                    read, write = await attempt.enter_async_context(transport(flags))
                    session = await attempt.enter_async_context(
                        ClientSession(
                            read, write, elicitation_callback=callback, client_info=identity
                        )
                    )
                async with phase("initialize", budget):
                    await session.initialize()
            except Exception as exc:
                if owner is not None:
                    owner.fail(_ConnectFailed(prefix + self._reason(exc)) if prefix else exc)
                raise
            stack.push_async_exit(attempt.pop_all())
        return Live(session, flags)

    async def _list_tools(self, session: Any, owner: Owner) -> list[Any]:
        """Every tool over all pages; a failure is reported to ``owner`` before the teardown."""
        try:
            async with phase("list", self.config.timeout_ms):
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

    def _headers(self) -> dict[str, str]:
        """The expanded headers; one that cannot be sent fails the connection, unsent."""
        headers = {name: expand_header(value) for name, value in self.config.headers.items()}
        for name, value in headers.items():
            if unsendable(value):
                raise ValueError(
                    f'header "{name}" contains a line break or another control character '
                    "(after ${...} expansion); it was not sent"
                )
        return headers

    # -- reporting -----------------------------------------------------------------------

    def _report(self, reason: str) -> None:
        self.status = "failed"
        self._last_failure = reason
        logger.warning('MCP server "%s" failed: %s', self.name, reason)

    def _error(self, reason: str) -> ToolResult:
        return error_result(f'MCP server "{self.name}": {reason}', self.name)

    async def _failure(self, exc: BaseException) -> str:
        """The reason for a failure; for a stdio server that closed, with its exit and stderr."""
        reason = self._reason(exc)
        if self._tail is not None and is_closed(exc):
            await self._tail.settle()
            died = self._tail.describe()
            if died:
                reason = f"{reason}; {died}"
        if isinstance(leaf(exc), TimeoutError) and "timed out" not in reason:
            reason = f"timed out after {self.config.timeout_ms} ms"
        return reason

    def _reason(self, exc: BaseException) -> str:
        """A one-line description of ``exc`` with every secret masked."""
        secrets = secrets_of(self.config)

        def mask(text: str) -> str:
            for secret in secrets:
                text = text.replace(secret, "***")
            return text

        return redact(reason_of(exc, mask))

"""A toolkit as an MCP server, on the official SDK's low-level ``Server``.

The only module of the serving side that imports ``mcp``. ``tools/list`` answers the exposed
tools in toolkit order; ``tools/call`` runs one through ``Toolkit.execute`` (validation,
secret masking, ``max_output_chars``, exactly as in a local run) and answers exactly one text
item. A name that is not exposed is a JSON-RPC ``-32602`` error, never a result.

A tool that suspends (``pending``) asks the client through elicitation when it can: on a
2026-07-28 connection (the stateless HTTP endpoint included) as an ``input_required`` result
whose ``requestState`` is a key to the call kept on this server (the arguments and the
request are never taken back from the client), on an older connection that can carry
server requests (stdio) as an ``elicitation/create`` request. The answer runs the tool again
with ``ctx.answer``; a decline gives ``declined/expired: <prompt>``. A client that cannot
answer gets an error result naming the request. ``ctx.progress`` reports become MCP progress
notifications when the call carried a ``progressToken``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._callbacks import call_quietly
from ..cancel import CancelToken
from ..suspension import Answer, Request, pending_of
from ..types import JSONObject, OnCall, ProgressFn, Tool, ToolContext, ToolResult
from .http import Route, Scope
from .profile import McpProfile

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from ..toolkit import Toolkit

__all__ = ["OnCall", "WaitingCalls", "build_mcp_server", "execute", "mcp_route", "run_stdio"]

logger = logging.getLogger("toolnexus")

_MAX_ASKS = 8
"""Most times one call may suspend and be answered before it is an error."""


@dataclass(frozen=True, slots=True)
class _Waiting:
    name: str
    args: JSONObject
    request: Request
    since: float


class WaitingCalls:
    """Calls suspended on an ``input_required`` result, kept here until the client retries.

    The client gets only an unguessable key (``requestState``); the tool, its arguments and
    the request stay on the server. At most ``limit`` are kept (the oldest dropped first),
    each for ``ttl_s`` seconds.
    """

    def __init__(self, limit: int = 1000, ttl_s: float = 600.0) -> None:
        self._calls: OrderedDict[str, _Waiting] = OrderedDict()
        self._limit = limit
        self._ttl_s = ttl_s

    def park(self, name: str, args: JSONObject, request: Request) -> str:
        """Keep a suspended call; returns its key."""
        key = secrets.token_urlsafe(24)
        self._calls[key] = _Waiting(name, args, request, time.monotonic())
        while len(self._calls) > self._limit:
            self._calls.popitem(last=False)
        return key

    def take(self, key: str) -> _Waiting | None:
        """The call parked under ``key`` (once), or ``None`` when unknown or expired."""
        found = self._calls.pop(key, None)
        if found is None or time.monotonic() - found.since > self._ttl_s:
            return None
        return found


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

    waiting = WaitingCalls()

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        found = next((t for t in exposed() if t.name == params.name), None)
        if found is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        args = dict(params.arguments or {})
        answer: Answer | None = None
        asked: Request | None = None
        if params.request_state is not None:
            parked = waiting.take(params.request_state)
            if parked is None or parked.name != found.name:
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message="requestState is unknown or expired: call the tool again",
                )
            args, asked = parked.args, parked.request
            answer = _answer(asked, (params.input_responses or {}).get(asked.id))
        progress = _Progress(ctx)
        result: ToolResult | None = None
        for _ in range(_MAX_ASKS):
            if asked is not None and answer is not None and not answer.ok:
                result = ToolResult(f"declined/expired: {asked.prompt}", is_error=True)
                break
            result = await execute(toolkit, found, args, on_call, answer, progress.report)
            await progress.flush()
            asked = pending_of(result)
            if asked is None:
                break
            how = _ask_mode(ctx)
            if how == "embedded":
                return types.InputRequiredResult(
                    input_requests={asked.id: _elicit_request(asked)},
                    request_state=waiting.park(found.name, args, asked),
                )
            if how != "request":
                result = _unanswerable(found.name, asked)
                break
            elicited = await ctx.session.elicit_form(
                _message(asked), _schema(asked), related_request_id=ctx.request_id
            )
            answer = _answer(asked, elicited)
        else:
            result = ToolResult(f"{found.name} asked too many times", is_error=True)
        assert result is not None
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
    toolkit: Toolkit,
    tool: Tool,
    args: JSONObject,
    on_call: OnCall | None,
    answer: Answer | None = None,
    progress: ProgressFn | None = None,
) -> ToolResult:
    """Run one served call through ``toolkit.execute``: cancellation reaches the tool.

    The call gets its own ``CancelToken``, cancelled when the request is (the client went
    away or sent ``notifications/cancelled``), so a tool that polls ``ctx.cancel`` stops too.
    """
    token = CancelToken()
    started = time.perf_counter()
    try:
        ctx = ToolContext(cancel=token, answer=answer, progress=progress)
        result = await toolkit.execute(tool.name, args, ctx)
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


class _Progress:
    """``ctx.progress`` for a served call: each report becomes an MCP progress notification
    (a no-op unless the call carried a ``progressToken``), all sent before the result."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self._session = ctx.session
        self._loop = asyncio.get_running_loop()
        self._sent: list[asyncio.Task[None]] = []

    def report(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Called by the tool, on the event loop or (a sync tool) from its thread."""

        def send() -> None:
            self._sent.append(
                self._loop.create_task(self._session.report_progress(done, total, message))
            )

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            send()
        else:  # queued before the thread's result reaches the loop, so flushed with it
            self._loop.call_soon_threadsafe(send)

    async def flush(self) -> None:
        sent, self._sent = self._sent, []
        for outcome in await asyncio.gather(*sent, return_exceptions=True):
            if isinstance(outcome, Exception):
                logger.debug("a progress notification could not be sent: %s", outcome)


def _ask_mode(ctx: ServerRequestContext[Any]) -> str | None:
    """How this client can be asked: ``"embedded"`` (an ``input_required`` result),
    ``"request"`` (an ``elicitation/create`` request) or ``None`` (it cannot)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    session = ctx.session
    capabilities = session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return None
    if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return "embedded"
    return "request" if session.can_send_request else None


def _questions(request: Request) -> list[JSONObject]:
    found = (request.data or {}).get("questions")
    if isinstance(found, list) and all(isinstance(q, dict) and "question" in q for q in found):
        return found
    return []


def _message(request: Request) -> str:
    return request.prompt + (f"\n{request.url}" if request.url else "")


def _schema(request: Request) -> JSONObject:
    """The elicitation form: one text field per question (a choice when it has options), one
    ``answer`` field for ``input``, none (accept or decline) for any other kind."""
    properties: JSONObject = {}
    questions = _questions(request)
    for i, q in enumerate(questions):
        field: JSONObject = {"type": "string", "title": str(q.get("header") or q["question"])}
        field["description"] = str(q["question"])
        options = q.get("options")
        if isinstance(options, list) and options and not q.get("multiple"):
            field["enum"] = [str(o) for o in options]
        properties[f"answer{i + 1}"] = field
    if not questions and request.kind == "input":
        properties["answer"] = {"type": "string", "description": request.prompt}
    return {"type": "object", "properties": properties, "required": list(properties)}


def _elicit_request(request: Request) -> Any:
    import mcp_types as types

    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=_message(request), requested_schema=_schema(request)
        )
    )


def _answer(request: Request, elicited: object) -> Answer:
    """The client's elicitation result (a model or its dict) as the tool's ``Answer``."""
    if elicited is not None and not isinstance(elicited, dict):
        dump = getattr(elicited, "model_dump", None)
        elicited = dump() if callable(dump) else None
    action = elicited.get("action") if isinstance(elicited, dict) else None
    content = elicited.get("content") if isinstance(elicited, dict) else None
    if action != "accept":
        return Answer(
            request.id, ok=False, reason="cancelled" if action == "cancel" else "declined"
        )
    values = content if isinstance(content, dict) else {}
    questions = _questions(request)
    if questions:
        answers = [values.get(f"answer{i + 1}", "") for i in range(len(questions))]
        return Answer(request.id, ok=True, data={"answers": answers})
    if "answer" in values:
        return Answer(request.id, ok=True, data={"answers": [values["answer"]]})
    return Answer(request.id, ok=True, data=dict(values))


def _unanswerable(name: str, request: Request) -> ToolResult:
    return ToolResult(
        f"{name} needs an answer this MCP client cannot give (it does not support "
        f"elicitation): {request.kind} request {request.id}: {_message(request)}",
        is_error=True,
    )


async def run_stdio(server: Server[Any]) -> None:
    """Speak MCP over this process's stdin/stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def mcp_route(server: Server[Any]) -> Route:
    """``/mcp``: stateless streamable HTTP with JSON responses (a fresh session per request).

    Host, Origin and auth are the listener's gate's (``http``). A stateless server has no
    stream to open and no session to end: ``GET`` and ``DELETE`` are answered 405. A request
    that carries a ``progressToken`` (and accepts ``text/event-stream``) is answered as an
    event stream instead, so its progress notifications can go before the result.
    """
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )

    plain = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)
    streaming = StreamableHTTPSessionManager(app=server, json_response=False, stateless=True)
    plain_app, streaming_app = StreamableHTTPASGIApp(plain), StreamableHTTPASGIApp(streaming)

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
        first = await receive()
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        accept = next((v for k, v in scope.get("headers", []) if k.lower() == b"accept"), b"")
        body = first.get("body", b"")
        wants_progress = b"progressToken" in body and b"text/event-stream" in accept
        if wants_progress and _progress_token(body):
            await streaming_app(scope, replay, send)
        else:
            await plain_app(scope, replay, send)

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with plain.run(), streaming.run():
            yield

    return Route("/mcp", app, running)


def _progress_token(body: bytes) -> bool:
    """Whether a JSON-RPC request body carries ``params._meta.progressToken``."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get("progressToken") is not None

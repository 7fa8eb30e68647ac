"""A small MCP server for tests: ``python -m toolnexus.testing.mcp_server [flags]``.

Tools, listed in this order:

- ``echo(text)`` returns ``text``;
- ``add(a, b)`` returns the sum;
- ``fail()`` always fails (the result has ``isError``);
- ``structured()`` returns structured content ``{"answer": 42, "unit": "none"}``;
- ``sleep(seconds)`` waits, then returns ``"slept"``;
- ``pid()`` returns the server's process id;
- ``ask(mode="form")`` elicits from the client and returns what it got as compact JSON
  ``{"action": ..., "content": ...}``, or the text ``elicitation not supported`` when the
  client did not advertise the capability. ``mode="url"`` asks with a URL instead;
- ``delete(name)`` returns ``"deleted <name>"``; annotated ``destructiveHint: true`` (nothing
  is deleted: it is there so a host can practise gating destructive tools).

``echo`` and ``add`` are annotated ``readOnlyHint: true``.

Flags:

``--transport stdio|http|sse``
    ``stdio`` (default) speaks over stdin/stdout. ``http`` serves streamable HTTP at
    ``/mcp``; ``sse`` serves only the older SSE transport at ``/sse``. Both HTTP modes print
    the endpoint URL on one line to stdout once the port is listening.
``--host HOST`` / ``--port N``
    Where the HTTP modes listen (default ``127.0.0.1``, port ``0`` = any free port).
``--name NAME``
    The server name announced in ``initialize``.
``--pages N``
    Spread the tools over ``N`` pages of ``tools/list`` (cursors ``"1"``, ``"2"``, …).
``--repeat-cursor``
    Every page answers ``nextCursor: "1"``, so a client that follows cursors loops.
``--require-header NAME=VALUE``
    HTTP modes only: answer 401 to any request without that header value.
``--die-after-initialize``
    Exit as soon as the client completes the handshake.
``--hang``
    Never answer ``initialize`` (stdio: read stdin until it closes, then exit).
``--cancel-log PATH``
    When a ``sleep`` call is cancelled (the client sent ``notifications/cancelled``), append
    ``cancelled <seconds>`` as a line to ``PATH``, so a test can see the server stopped it.
``--pid-file PATH``
    Write the process id to ``PATH`` at startup (before anything else), so a test can check
    that the process is gone even when it never finished a handshake.

``mcp_server_command(*flags)`` returns the argv for an ``mcp.json`` ``command``.
"""

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["main", "mcp_server_command"]

_FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


def mcp_server_command(*flags: str) -> list[str]:
    """The argv that starts this server with ``flags``, using the running interpreter."""
    return [sys.executable, "-m", "toolnexus.testing.mcp_server", *flags]


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m toolnexus.testing.mcp_server", description="A fixture MCP server."
    )
    parser.add_argument("--transport", choices=("stdio", "http", "sse"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--name", default="toolnexus-fixture")
    parser.add_argument("--pages", type=int, default=1)
    parser.add_argument("--repeat-cursor", action="store_true")
    parser.add_argument("--require-header", metavar="NAME=VALUE")
    parser.add_argument("--die-after-initialize", action="store_true")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--pid-file", metavar="PATH")
    parser.add_argument("--cancel-log", metavar="PATH")
    args = parser.parse_args(argv)
    if args.pages < 1:
        parser.error("--pages must be at least 1")
    if args.require_header is not None and "=" not in args.require_header:
        parser.error("--require-header takes NAME=VALUE")
    return args


def _build_server(args: argparse.Namespace) -> "MCPServer[Any]":
    """The ``MCPServer`` with every fixture tool and the behaviour flags as middleware."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name=args.name, log_level="WARNING")
    _add_tools(server, args.cancel_log)
    server.middleware.append(_behaviour(args))
    return server


def _add_tools(server: "MCPServer[Any]", cancel_log: str | None = None) -> None:
    import anyio
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    reads = ToolAnnotations(read_only_hint=True)

    @server.tool(structured_output=False, annotations=reads)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool(structured_output=False, annotations=reads)
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        total = a + b
        return int(total) if total.is_integer() else total

    @server.tool(structured_output=False)
    def fail() -> str:
        """Always fail."""
        raise ToolError("the fail tool failed")

    @server.tool(structured_output=True)
    def structured() -> dict[str, Any]:
        """Return structured content."""
        return {"answer": 42, "unit": "none"}

    @server.tool(structured_output=False)
    async def sleep(seconds: float) -> str:
        """Wait for the given number of seconds."""
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            if cancel_log is not None:
                _append(cancel_log, f"cancelled {seconds:g}\n")
            raise
        return "slept"

    @server.tool(structured_output=False)
    def pid() -> int:
        """Return this server's process id."""
        return os.getpid()

    @server.tool(structured_output=False)
    async def ask(ctx: Context, mode: str = "form") -> str:
        """Ask the client for input (form mode) or send it to a URL (url mode)."""
        return await _ask(ctx, mode)

    @server.tool(
        structured_output=False,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    def delete(name: str) -> str:
        """Delete the named item."""
        return f"deleted {name}"


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as log:
        log.write(line)


def _behaviour(args: argparse.Namespace) -> Any:
    """Middleware for ``--hang``, ``--die-after-initialize`` and the paging flags."""
    import anyio

    pages = max(args.pages, 2) if args.repeat_cursor else args.pages

    async def behaviour(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "initialize" and args.hang:
            await anyio.sleep_forever()
        if ctx.method == "notifications/initialized" and args.die_after_initialize:
            os._exit(3)
        result = await call_next(ctx)
        if ctx.method != "tools/list" or pages == 1 or not isinstance(result, dict):
            return result
        return _page(result, (ctx.params or {}).get("cursor"), pages, args.repeat_cursor)

    return behaviour


async def _ask(ctx: Any, mode: str) -> str:
    from toolnexus._json import compact_json

    session = ctx.request_context.session
    capabilities = session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return "elicitation not supported"
    if mode == "url":
        result = await session.elicit_url(
            message="Please sign in",
            url="https://example.test/login",
            elicitation_id="fixture-login",
            related_request_id=ctx.request_id,
        )
    else:
        result = await session.elicit_form(
            message="What is your name?",
            requested_schema=_FORM_SCHEMA,
            related_request_id=ctx.request_id,
        )
    return compact_json({"action": result.action, "content": result.content})


def _page(
    result: dict[str, Any], cursor: object, pages: int, repeat_cursor: bool
) -> dict[str, Any]:
    """One page of a full ``tools/list`` wire result: page ``cursor`` (absent = 0) of ``pages``."""
    tools = list(result["tools"])
    size = -(-len(tools) // pages)
    index = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
    chunk = tools[index * size : (index + 1) * size]
    if repeat_cursor:
        following: str | None = "1"
    else:
        following = str(index + 1) if index + 1 < pages else None
    page = {**result, "tools": chunk}
    page.pop("nextCursor", None)
    if following is not None:
        page["nextCursor"] = following
    return page


def _hang_on_stdio() -> None:
    """Read (and ignore) stdin until the client closes it."""
    for _ in sys.stdin.buffer:
        pass


class _RequireHeader:
    """ASGI wrapper answering 401 to HTTP requests that lack one header value."""

    def __init__(self, app: Any, name: str, value: str) -> None:
        self.app = app
        self.name = name.lower().encode("latin-1")
        self.value = value.encode("latin-1")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (self.name, self.value) not in scope["headers"]:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing or wrong header"})
            return
        await self.app(scope, receive, send)


async def _serve_http(server: "MCPServer[Any]", args: argparse.Namespace) -> None:
    import socket

    import uvicorn

    app: Any
    if args.transport == "http":
        app, path = server.streamable_http_app(host=args.host), "/mcp"
    else:
        app, path = server.sse_app(host=args.host), "/sse"
    if args.require_header is not None:
        name, _, value = args.require_header.partition("=")
        app = _RequireHeader(app, name, value)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    print(f"http://{args.host}:{port}{path}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def main(argv: Sequence[str] | None = None) -> None:
    """Run the fixture server until its client goes away (stdio) or it is killed (HTTP)."""
    args = _parse_args(argv)
    if args.pid_file is not None:
        with open(args.pid_file, "w", encoding="ascii") as f:
            f.write(str(os.getpid()))
    if args.hang and args.transport == "stdio":
        _hang_on_stdio()
        return
    import anyio

    server = _build_server(args)
    if args.transport == "stdio":
        anyio.run(server.run_stdio_async)
    else:
        anyio.run(_serve_http, server, args)


if __name__ == "__main__":
    main()

"""``toolnexus serve``: the toolkit as an MCP server (HTTP, or stdio with ``--stdio``) and/or
an agent served over A2A (``--a2a``: a model runs each task with the tools) and/or as a chat
page (``--ui``: the same agent in a browser, with AG-UI and the AI SDK stream beside it).

Safe by default: the built-in tools are served only with ``--builtins``; ``--token`` (or
``TOOLNEXUS_SERVE_TOKEN``) turns bearer auth on; an address that is not loopback needs a
token unless ``--insecure``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from ..client import Client, create_client
from ..errors import ConfigError
from .console import create_console
from .run import endpoint
from .sources import load_toolkit

__all__ = ["TOKEN_ENV", "serve_command"]

TOKEN_ENV = "TOOLNEXUS_SERVE_TOKEN"
"""Environment variable holding the bearer token when no ``--token`` is given."""


async def serve_command(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM (HTTP) or until stdin closes (``--stdio``)."""
    if not args.mcp and not args.a2a and not args.ui:
        print("toolnexus serve: say what to serve (--mcp, --a2a, --ui)", file=sys.stderr)
        return 2
    if args.stdio and (args.a2a or args.ui):
        print(
            "toolnexus serve: --stdio speaks MCP only; serve --a2a/--ui over HTTP", file=sys.stderr
        )
        return 2
    if args.builtins and args.no_builtins:
        print("toolnexus serve: --builtins and --no-builtins contradict", file=sys.stderr)
        return 2
    args.no_builtins = not args.builtins
    tokens = list(args.token or ()) or (
        [os.environ[TOKEN_ENV]] if os.environ.get(TOKEN_ENV) else []
    )
    profile: dict[str, Any] = {}
    if args.name:
        profile["name"] = args.name
    if args.tool:
        profile["tools"] = list(args.tool)
    async with contextlib.AsyncExitStack() as stack:
        client = None
        if args.a2a or args.ui:
            client = _agent_client(args)
            if client is None:
                return 2
            stack.push_async_callback(client.aclose)
            close_store = getattr(client.conversation_store, "aclose", None)
            if args.db and close_store is not None:
                stack.push_async_callback(close_store)
        try:
            toolkit = await load_toolkit(args)
        except ConfigError as exc:
            print(f"toolnexus: {exc}", file=sys.stderr)
            return 1
        await stack.enter_async_context(toolkit)
        stop = asyncio.Event()
        with _on_sigterm(stop.set):
            if args.stdio:
                serving = asyncio.ensure_future(toolkit.serve_stdio(mcp=profile))
                stopped = asyncio.ensure_future(stop.wait())
                await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
                for task in (serving, stopped):
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await serving
                return 0
            try:
                handle = await toolkit.serve(
                    args.addr,
                    mcp=profile if args.mcp else None,
                    client=client,
                    a2a=_agent_profile(args) if args.a2a else None,
                    ui=_ui_profile(args) if args.ui else None,
                    auth=tokens or None,
                    allow_unauthenticated=args.insecure,
                    allowed_hosts=args.allow_host,
                )
            except (ConfigError, OSError) as exc:
                print(f"toolnexus: cannot serve on {args.addr}: {exc}", file=sys.stderr)
                return 1
            if args.mcp:
                print(f"serving MCP at {handle.url}/mcp", file=sys.stderr, flush=True)
            if args.a2a:
                card = f"{handle.url}/.well-known/agent-card.json"
                print(f"serving A2A at {handle.url}/ (card {card})", file=sys.stderr, flush=True)
            if tokens:
                print("bearer auth on: send Authorization: Bearer <token>", file=sys.stderr)
            if args.ui:
                print(f"serving the chat page at {handle.url}/", file=sys.stderr, flush=True)
            try:
                await stop.wait()
            finally:
                await handle.aclose()
    return 0


def _agent_client(args: argparse.Namespace) -> Client | None:
    """The client that runs each A2A task or chat turn, from the model flags (``None``: usage
    error)."""
    found = endpoint(args, create_console(sys.stdout, sys.stderr))
    if found is None:
        return None
    base_url, model, style = found
    store = None
    if args.db:
        from ..stores.sqlite import SqliteConversationStore

        path = Path(args.db).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        store = SqliteConversationStore(path)
    try:
        return create_client(
            base_url,
            style,  # type: ignore[arg-type]  # from the command line; create_client checks it
            model=model,
            api_key=args.api_key,
            system_prompt=args.system,
            store=store,
        )
    except ConfigError as exc:
        print(f"toolnexus: {exc}", file=sys.stderr)
        return None


def _ui_profile(args: argparse.Namespace) -> dict[str, Any]:
    return {"title": args.name} if args.name else {}


def _agent_profile(args: argparse.Namespace) -> dict[str, Any]:
    agent: dict[str, Any] = {}
    if args.name:
        agent["name"] = args.name
    if args.description:
        agent["description"] = args.description
    if args.tasks:
        agent["store"] = f"file:{args.tasks}"
    return agent


@contextlib.contextmanager
def _on_sigterm(callback: Any) -> Any:
    """Call ``callback`` on SIGTERM while inside (where the platform allows it)."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGTERM, callback)
    except (NotImplementedError, RuntimeError):  # not on this platform / thread
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)

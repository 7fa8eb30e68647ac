"""``toolnexus run``: one prompt (``--once``) or a REPL, streaming the answer to stdout."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..client import Client, create_client
from ..errors import ConfigError
from ..events import Event, ToolCallEvent, ToolResultEvent
from ..suspension import Answer, Request
from ..types import RunResult
from .console import Console, create_console
from .lines import LineReader
from .parser import DEFAULT_DB
from .sources import load_toolkit

if TYPE_CHECKING:
    from ..stores.sqlite import SqliteConversationStore
    from ..toolkit import Toolkit

__all__ = ["endpoint", "run_command"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_PENDING = 0, 1, 2, 3, 4


async def run_command(args: argparse.Namespace) -> int:
    """Run the ``run`` command; returns the exit code."""
    console = create_console(sys.stdout, sys.stderr)
    found = endpoint(args, console)
    if found is None:
        return EXIT_USAGE
    base_url, model, style = found
    reader = LineReader(sys.stdin, note=lambda text: console.line(text, "yellow"))
    wait_for = _terminal_wait_for(console, reader) if _is_terminal(sys.stdin) else None
    store = _sqlite_store(args) if args.id is not None else None
    try:
        client = create_client(
            base_url,
            style,  # type: ignore[arg-type]  # from the command line; create_client checks it
            model=model,
            api_key=args.api_key,
            system_prompt=args.system,
            max_turns=args.max_turns if args.max_turns is not None else 10,
            store=store,
            wait_for=wait_for,
        )
    except ConfigError as exc:
        console.error(str(exc))
        return EXIT_USAGE
    try:
        async with client:
            try:
                toolkit = await load_toolkit(args, wait_for=wait_for)
            except ConfigError as exc:
                console.error(str(exc))
                return EXIT_ERROR
            async with toolkit:
                if args.once is not None:
                    return await _once(client, toolkit, args.once, args.id, console)
                return await _repl(client, toolkit, args.id, console, reader)
    finally:
        if store is not None:
            await store.aclose()


def endpoint(args: argparse.Namespace, console: Console) -> tuple[str, str, str] | None:
    """``(base_url, model, style)`` from the flags, else the environment; ``None`` (with a
    message on stderr) when the base URL or the model is missing."""
    base_url = args.base_url or os.environ.get("TOOLNEXUS_BASE_URL")
    model = args.model or os.environ.get("TOOLNEXUS_MODEL")
    style = args.style or os.environ.get("TOOLNEXUS_STYLE") or "openai"
    if not base_url:
        console.error("no base URL: pass --base-url or set TOOLNEXUS_BASE_URL")
        return None
    if not model:
        console.error("no model: pass --model or set TOOLNEXUS_MODEL")
        return None
    return base_url, model, style


def _sqlite_store(args: argparse.Namespace) -> SqliteConversationStore:
    from ..stores.sqlite import SqliteConversationStore

    path = Path(args.db or os.environ.get("TOOLNEXUS_DB") or DEFAULT_DB).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteConversationStore(path)


async def _once(
    client: Client, toolkit: Toolkit, prompt: str, id: str | None, console: Console
) -> int:
    try:
        result = await _ask(client, toolkit, prompt, id, console)
    except Exception as exc:
        console.error(_describe(exc))
        return EXIT_ERROR
    _report(result, console)
    if result.status == "pending":
        return EXIT_PENDING
    return EXIT_INCOMPLETE if result.status == "incomplete" else EXIT_OK


async def _repl(
    client: Client, toolkit: Toolkit, id: str | None, console: Console, reader: LineReader
) -> int:
    conversation = id if id is not None else f"session-{uuid.uuid4().hex}"
    while True:
        console.prompt("> ")
        line = await reader.readline()
        if line is None:
            return EXIT_OK
        prompt = line.strip()
        if not prompt:
            continue
        if prompt in ("exit", "quit"):
            return EXIT_OK
        try:
            result = await _ask(client, toolkit, prompt, conversation, console)
        except Exception as exc:
            console.error(_describe(exc))
            continue
        _report(result, console)


async def _ask(
    client: Client, toolkit: Toolkit, prompt: str, id: str | None, console: Console
) -> RunResult:
    def on_event(event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            console.tool_call(event.name, event.args)
        elif isinstance(event, ToolResultEvent):
            console.tool_result(event.name, event.is_error)
            console.thinking()

    console.thinking()
    try:
        return await client.ask(prompt, toolkit, id=id, on_text=console.text, on_event=on_event)
    finally:
        console.end_answer()


def _report(result: RunResult, console: Console) -> None:
    if result.status == "pending" and result.pending is not None:
        console.line(_request_line(result.pending), "yellow")
    elif result.status == "incomplete":
        console.line(f"incomplete: stopped at the {result.limit or 'turn'} limit", "yellow")


def _terminal_wait_for(
    console: Console, reader: LineReader
) -> Callable[[Request], Awaitable[Answer]]:
    async def wait_for(request: Request) -> Answer:
        console.line(_request_line(request), "bold yellow")
        signing_in = request.kind == "authorization"
        if signing_in:  # the browser ends on the redirect address, which carries the code
            console.prompt("address the browser ended on (empty to decline): ")
        else:
            console.prompt("answer (empty to decline): ")
        line = await reader.readline()
        console.thinking()
        if not line:
            return Answer(request.id, ok=False, reason="declined")
        if signing_in:
            return Answer(request.id, ok=True, data={"url": line.strip()})
        return Answer(request.id, ok=True, data={"answers": [line]})

    return wait_for


def _request_line(request: Request) -> str:
    text = f"pending {request.kind}: {request.prompt}"
    return f"{text} ({request.url})" if request.url else text


def _describe(exc: Exception) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False

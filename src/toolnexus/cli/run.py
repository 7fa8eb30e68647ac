"""``toolnexus run``: one prompt (``--once``) or a REPL, streaming the answer to stdout."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .._credentials import key_variables
from ..client import Client, create_client
from ..engine.hooks import Hooks
from ..errors import ConfigError
from ..events import Event, ToolCallEvent, ToolResultEvent
from ..suspension import Answer, Request
from ..types import RunResult
from .approval import Approval
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
    reply = _reply_flag(args, console)
    if reply is False:
        return EXIT_USAGE
    if args.api_key is None and not _key_in_environment(style, base_url, console):
        return EXIT_ERROR
    reader = LineReader(sys.stdin, note=lambda text: console.line(text, "yellow"))
    terminal = _is_terminal(sys.stdin)
    wait_for = _terminal_wait_for(console, reader) if terminal else None
    approval = Approval(
        console, reader if terminal else None, allow_all=args.yes or _yes_from_environment()
    )
    try:
        store = _sqlite_store(args) if args.id is not None else None
    except ConfigError as exc:
        console.error(str(exc))
        return EXIT_ERROR
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
            hooks=Hooks(before_tool=approval),
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
            approval.toolkit = toolkit
            async with toolkit:
                session = _Session(client, toolkit, console)
                if isinstance(reply, _Reply):
                    assert args.id is not None
                    return await session.reply(args.id, reply)
                if args.once is not None:
                    return await session.once(args.once, args.id)
                return await session.repl(args.id, reader)
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


def _key_in_environment(style: str, base_url: str, console: Console) -> bool:
    """Whether a variable whose key may go to ``base_url`` is set; else say which flag or
    variables would give one (the library's own message speaks of ``api_key=``)."""
    names = key_variables(style, base_url)
    if any(os.environ.get(name) for name in names):
        return True
    console.error(f"no API key: pass --api-key or set {' or '.join(names)} in the environment")
    return False


def _sqlite_store(args: argparse.Namespace) -> SqliteConversationStore:
    """The store at ``--db``; ``ConfigError`` when its folder cannot be made or the path is not
    a file (``--db`` under a file, or naming a folder)."""
    from ..stores.sqlite import SqliteConversationStore

    path = Path(args.db or os.environ.get("TOOLNEXUS_DB") or DEFAULT_DB).expanduser()
    if path.is_dir():
        raise ConfigError(f"--db {path}: is a folder, not a database file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"--db {path}: cannot make its folder {path.parent} "
            f"({exc.strerror or type(exc).__name__}; is a part of the path a file?)"
        ) from None
    return SqliteConversationStore(path)


class _Reply:
    """What ``--answer TEXT`` / ``--decline [REASON]`` (or ``/answer``, ``/decline``) said."""

    def __init__(self, ok: bool, text: str | None) -> None:
        self.ok = ok
        self.text = text

    def answer(self, request: Request) -> Answer:
        if not self.ok:
            return Answer(request.id, ok=False, reason=self.text or "declined")
        text = self.text or ""
        if request.kind == "authorization":  # the address the browser ended on
            return Answer(request.id, ok=True, data={"url": text.strip()})
        return Answer(request.id, ok=True, data={"answers": [text]})


class _Session:
    """Prompts and replies to pending requests, on one client and toolkit."""

    def __init__(self, client: Client, toolkit: Toolkit, console: Console) -> None:
        self.client = client
        self.toolkit = toolkit
        self.console = console
        self.repl_mode = False

    async def once(self, prompt: str, id: str | None) -> int:
        try:
            if id is not None and await self._still_waiting(id):
                return EXIT_PENDING
            result = await self._ask(prompt, id)
        except Exception as exc:
            self.console.error(_describe(exc))
            return EXIT_ERROR
        return self._report(result, id)

    async def reply(self, id: str, reply: _Reply) -> int:
        """Answer (or decline) what conversation ``id`` waits for and continue its run."""
        try:
            request = await self.client.pending(id)
            if request is None:
                self.console.error(f"conversation {id!r} is not waiting for an answer")
                return EXIT_ERROR
            self.console.thinking()
            try:
                result = await self.client.resume(
                    id, reply.answer(request), self.toolkit, on_event=self._on_event
                )
            finally:
                self.console.idle()
        except Exception as exc:
            self.console.error(_describe(exc))
            return EXIT_ERROR
        if result.status != "pending" and result.text:
            self.console.text(result.text)
        self.console.end_answer()
        return self._report(result, id)

    async def repl(self, id: str | None, reader: LineReader) -> int:
        self.repl_mode = True
        conversation = id if id is not None else f"session-{uuid.uuid4().hex}"
        while True:
            self.console.prompt("> ")
            line = await reader.readline()
            if line is None:
                return EXIT_OK
            prompt = line.strip()
            if not prompt:
                continue
            if prompt in ("exit", "quit"):
                return EXIT_OK
            command = _repl_reply(prompt)
            if command is not None:
                await self.reply(conversation, command)
                continue
            try:
                if await self._still_waiting(conversation):
                    continue
                result = await self._ask(prompt, conversation)
            except Exception as exc:
                self.console.error(_describe(exc))
                continue
            self._report(result, conversation)

    async def _still_waiting(self, id: str) -> bool:
        """Say so (and how to answer) when conversation ``id`` waits for an answer."""
        request = await self.client.pending(id)
        if request is None:
            return False
        self.console.error(f"conversation {id!r} waits for an answer to a request:")
        self.console.line(_request_line(request), "yellow")
        self.console.line(self._how_to_answer(id), "yellow")
        return True

    async def _ask(self, prompt: str, id: str | None) -> RunResult:
        self.console.thinking()
        try:
            return await self.client.ask(
                prompt, self.toolkit, id=id, on_text=self.console.text, on_event=self._on_event
            )
        finally:
            self.console.end_answer()

    def _on_event(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            self.console.tool_call(event.name, event.args)
        elif isinstance(event, ToolResultEvent):
            self.console.tool_result(event.name, event.is_error)
            self.console.thinking()

    def _report(self, result: RunResult, id: str | None) -> int:
        if result.status == "pending" and result.pending is not None:
            self.console.line(_request_line(result.pending), "yellow")
            self.console.line(self._how_to_answer(id), "yellow")
            return EXIT_PENDING
        if result.status == "incomplete":
            self.console.line(
                f"incomplete: stopped at the {result.limit or 'turn'} limit", "yellow"
            )
            return EXIT_INCOMPLETE
        return EXIT_OK

    def _how_to_answer(self, id: str | None) -> str:
        if self.repl_mode:
            return "answer it with /answer TEXT, or drop it with /decline [REASON]"
        if id is None:
            return (
                "this run kept no conversation (no --id), so it cannot be answered later; "
                "run the prompt again with --id ID to answer with --answer"
            )
        return (
            f"answer it with: toolnexus run --id {shlex.quote(id)} --answer TEXT "
            "(or --decline [REASON]), with the same --db"
        )


def _repl_reply(line: str) -> _Reply | None:
    """``/answer TEXT`` or ``/decline [REASON]`` typed at the REPL, else ``None``."""
    word, _, rest = line.partition(" ")
    if word == "/answer":
        return _Reply(True, rest.strip())
    if word == "/decline":
        return _Reply(False, rest.strip() or None)
    return None


def _reply_flag(args: argparse.Namespace, console: Console) -> _Reply | bool | None:
    """``--answer``/``--decline`` as a reply; ``None`` when neither was given; ``False`` (with
    a message) when the flags do not go together."""
    if args.answer is None and args.decline is None:
        return None
    flag = "--answer" if args.answer is not None else "--decline"
    if args.id is None:
        console.error(f"{flag} answers the pending request of a conversation: give its --id")
        return False
    if args.once is not None:
        console.error(f"{flag} and --once do not go together: answer first, then prompt")
        return False
    if args.answer is not None:
        return _Reply(True, args.answer)
    return _Reply(False, args.decline or None)


def _yes_from_environment() -> bool:
    return os.environ.get("TOOLNEXUS_YES", "").strip().lower() in ("1", "true", "yes", "on")


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

"""The chat UI's routes: ``POST /agui`` (AG-UI over SSE), ``POST /api/chat`` (the AI SDK's UI
message stream), ``GET /api/threads/{id}`` (a stored thread as AG-UI messages, with the request
it waits for) and ``GET /`` with ``/static/...`` (the chat page shipped in
``toolnexus/ui/static``: plain files, no CDN, no build step).

Each run goes through the same ``Client.stream`` (or ``stream_resume``) and ``Toolkit.execute``
a local run does. The page and its files are public routes; on a loopback bind every route
answers only loopback ``Host`` (and ``Origin``) values.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from html import escape
from importlib import resources
from typing import TYPE_CHECKING, Any

from .._json import JSONDepthError, compact_json, loads
from ..errors import ConfigError
from .http import Receive, Route, Scope, Send

if TYPE_CHECKING:
    from ..client import Client
    from ..toolkit import Toolkit

__all__ = ["UiProfile", "ui_profile", "ui_routes"]

logger = logging.getLogger("toolnexus")

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
_PAGE_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-cache"),
    (b"referrer-policy", b"no-referrer"),
]
_THREADS = "/api/threads/"
DEFAULT_TITLE = "toolnexus chat"
_STATIC = "/static/"


@dataclass(frozen=True, slots=True)
class UiProfile:
    """What ``ui={...}`` configures: the page's ``title``."""

    title: str = DEFAULT_TITLE


def ui_profile(given: Mapping[str, Any] | UiProfile, *, where: str = "ui") -> UiProfile:
    """``given`` checked (``ConfigError`` naming an unknown key or a bad value)."""
    if isinstance(given, UiProfile):
        return given
    if not isinstance(given, Mapping):
        raise ConfigError(f"{where} must be a mapping such as {{}}, not {type(given).__name__}")
    unknown = sorted(set(given) - {"title"})
    if unknown:
        raise ConfigError(
            f"{where}: unknown option(s) {', '.join(map(repr, unknown))}; known: title"
        )
    title = given.get("title", DEFAULT_TITLE)
    if not isinstance(title, str) or not title.strip():
        raise ConfigError(f"{where}.title must be a non-empty string")
    return UiProfile(title=title)


def ui_routes(toolkit: Toolkit, client: object, profile: UiProfile) -> list[Route]:
    """The UI's routes for ``toolkit``, each run by ``client`` (a ``Client``; ``ConfigError``
    when it is missing or when ``ag_ui`` is not installed). The listener's gate checks Host,
    Origin and the token; the page and its files are public routes."""
    from ..ui.agui import require_agui

    ui = _ChatUi(toolkit, _chat_client(client), profile)
    require_agui()

    post, get = frozenset({"POST"}), frozenset({"GET", "HEAD"})
    return [
        Route("/agui", ui.agui, methods=post),
        Route("/api/chat", ui.chat, methods=post),
        Route(_THREADS, ui.thread, prefix=True, methods=get),
        Route("/", ui.index, public=True, methods=get),
        Route(_STATIC, ui.static, public=True, prefix=True, methods=get),
    ]


class _ChatUi:
    """The ASGI apps behind the UI's routes, sharing one client, toolkit and page."""

    def __init__(self, toolkit: Toolkit, client: Client, profile: UiProfile) -> None:
        self._toolkit = toolkit
        self._client = client
        self._files = _static_files()
        title = escape(profile.title).encode()
        self._page = self._files["index.html"].replace(b"{{title}}", title)
        self._warming: asyncio.Future[None] | None = None

    async def agui(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /agui``: a ``RunAgentInput`` in, AG-UI events out over SSE."""
        from ..ui.agui import AGUI_CONTENT_TYPE, agui_events, encode_agui

        body = await _json_body(scope, receive, send)
        if body is None:
            return
        try:
            events = agui_events(self._client, self._toolkit, body)
        except ConfigError as exc:
            await _plain(send, 400, str(exc))
            return

        async def frames() -> AsyncIterator[str]:
            async for event in events:
                yield encode_agui(event)

        headers = {"content-type": AGUI_CONTENT_TYPE, "cache-control": "no-cache"}
        await _stream(send, headers, frames())

    async def chat(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /api/chat``: a ``useChat`` body in, the AI SDK UI message stream out."""
        from ..ui.ai_sdk import AI_SDK_HEADERS, ai_sdk_stream

        body = await _json_body(scope, receive, send)
        if body is None:
            return
        try:
            frames = ai_sdk_stream(self._client, self._toolkit, body)
        except ConfigError as exc:
            await _plain(send, 400, str(exc))
            return
        await _stream(send, AI_SDK_HEADERS, frames)

    async def thread(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET /api/threads/{id}``: the stored transcript as AG-UI messages, and what the
        thread waits for (``pending``, when it does)."""
        from ..engine.waiting import load_pending
        from ..ui.messages import transcript_to_agui

        thread_id = scope["path"][len(_THREADS) :]
        if not thread_id or "/" in thread_id:
            await _plain(send, 404, "not found")
            return
        store = self._client.conversation_store
        messages = await store.get(thread_id)
        pending = await load_pending(store, thread_id)
        view: dict[str, Any] = {
            "threadId": thread_id,
            "messages": transcript_to_agui(messages or []),
        }
        if pending is not None:
            view["pending"] = pending.to_dict()
        json_type = [(b"content-type", b"application/json")]
        await _send(send, 200, json_type, compact_json(view).encode())

    async def index(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET /``: the page (and, the first time, ``ag_ui`` loading while a person types:
        it takes about a second to import)."""
        if self._warming is None:
            from ..ui.agui import preload_agui

            self._warming = asyncio.get_running_loop().run_in_executor(None, preload_agui)
        headers = [(b"content-type", _TYPES[".html"].encode()), *_PAGE_HEADERS]
        await _send(send, 200, headers, self._page)

    async def static(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET /static/<name>``: one of the page's own files (only those names)."""
        name = scope["path"][len(_STATIC) :]
        content = self._files.get(name) if name != "index.html" else None
        if content is None:
            await _plain(send, 404, "not found")
            return
        kind = _TYPES[name[name.rfind(".") :]].encode()
        await _send(send, 200, [(b"content-type", kind), *_PAGE_HEADERS], content)


def _chat_client(client: object) -> Client:
    from ..client import Client

    if client is None:
        raise ConfigError("serving the chat UI needs client=: the client that runs each turn")
    if not isinstance(client, Client):
        raise ConfigError(
            f"client must be a toolnexus Client (create_client(...)), not {type(client).__name__}"
        )
    return client


def _static_files() -> dict[str, bytes]:
    """Every file of the page, by name, read once (only these names are ever served)."""
    folder = resources.files("toolnexus.ui") / "static"
    return {
        item.name: item.read_bytes()
        for item in folder.iterdir()
        if item.is_file() and item.name[item.name.rfind(".") :] in _TYPES
    }


async def _json_body(scope: Scope, receive: Receive, send: Send) -> Any:
    """The request's JSON body, or ``None`` once an error answer was sent."""
    headers = dict(scope.get("headers", []))
    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if kind != b"application/json":
        await _plain(send, 415, "the body must be application/json")
        return None
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    try:
        body = loads(b"".join(chunks))
    except (json.JSONDecodeError, JSONDepthError, UnicodeDecodeError) as exc:
        await _plain(send, 400, f"the body is not valid JSON: {exc}")
        return None
    if not isinstance(body, dict):
        await _plain(send, 400, "the body must be a JSON object")
        return None
    return body


async def _stream(send: Send, headers: Mapping[str, str], frames: AsyncIterator[str]) -> None:
    """An SSE response: each frame written (and flushed) as it comes."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        }
    )
    async for frame in frames:
        await send({"type": "http.response.body", "body": frame.encode(), "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _plain(send: Send, status: int, text: str) -> None:
    await _send(send, status, [(b"content-type", b"text/plain; charset=utf-8")], text.encode())


async def _send(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})

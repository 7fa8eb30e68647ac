"""``RecordedRequest``: one request as ``StubLLMServer`` received it, and how it is read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

__all__ = ["RecordedRequest", "read_request"]


@dataclass
class RecordedRequest:
    """One request as the stub received it."""

    index: int
    """Position in ``StubLLMServer.requests`` (0-based, restarts after ``reset``)."""
    method: str
    path: str
    headers: Mapping[str, str]
    """Case-insensitive."""
    body: bytes
    json: Any
    """The parsed body, or ``None`` when it is empty or not JSON."""
    style: Literal["openai", "anthropic", "responses", "gemini"] | None
    """From the path: ``/chat/completions`` -> openai, ``/messages`` -> anthropic,
    ``/responses`` -> responses, ``:generateContent`` or ``:streamGenerateContent`` -> gemini,
    else None."""
    stream: bool
    """``"stream": true`` in the JSON body (gemini: the ``:streamGenerateContent`` method)."""
    disconnected: bool = False
    """The client went away before the reply was complete."""


async def read_request(request: web.Request) -> RecordedRequest:
    """``request`` read whole and recorded; its ``index`` is set by the server (to 0 here)."""
    body = await request.read()
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    path = request.path
    style: Literal["openai", "anthropic", "responses", "gemini"] | None = None
    stream = isinstance(parsed, dict) and parsed.get("stream") is True
    if path.endswith("/chat/completions"):
        style = "openai"
    elif path.endswith("/messages"):
        style = "anthropic"
    elif path.endswith("/responses"):
        style = "responses"
    elif path.endswith(":generateContent"):
        style, stream = "gemini", False
    elif path.endswith(":streamGenerateContent"):
        style, stream = "gemini", True
    return RecordedRequest(
        index=0,
        method=request.method,
        path=path,
        headers=CIMultiDictProxy(CIMultiDict(request.headers)),
        body=body,
        json=parsed,
        style=style,
        stream=stream,
    )
